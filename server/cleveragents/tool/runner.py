"""ToolRunner: one tool call in four stages (resolve, validate, execute, record).

Every failure becomes a `ToolCallRecord` with `success=False`; nothing a tool or a model
does raises out of `run`, except cancellation of the caller's task.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import heapq
import itertools
import json
import math
import threading
import time
import types
import weakref
from collections.abc import Generator
from concurrent.futures import CancelledError
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from .context import ToolActorContext
from .errors import ToolError
from .messages import ToolCallRequest
from .policy import ask_about_protected_writes, stop_asking_about_protected_writes
from .records import ErrorKind, ToolCallRecord
from .registry import ToolRegistry, ToolSpec
from .reserved import RESERVED_PARAMS
from .validation import format_validation_error as format_validation_error  # its old home
from .workers import WorkerThreads

if TYPE_CHECKING:
    from .policy import Authorizer


class ToolFailure(Exception):
    """Internal: a stage failed; carries the record's error_kind and message."""

    def __init__(self, kind: ErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


class _DeadlinePassed(Exception):
    """Internal: a sync tool's call (its wait for a thread included) outlived its timeout_s."""


class ThreadBudget:
    """How many worker threads one run may hold at once.

    A slot comes back when the thread finishes, not when the call's awaiter gives up: a
    sync tool that a cancel or a timeout abandoned still holds its thread, and without a
    budget one run's stuck tools could take every thread a daemon has.
    """

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"a thread budget needs at least 1 thread, got {limit}")
        self.limit = limit
        self._slots = asyncio.Semaphore(limit)

    async def acquire(self, deadline: float | None = None) -> None:
        """Take a slot, waiting for one at most until `deadline` (loop time), if given."""
        if deadline is None or not self._slots.locked():
            await self._slots.acquire()  # a free slot is taken without waiting
            return
        try:
            async with asyncio.timeout_at(deadline):
                await self._slots.acquire()
        except TimeoutError:
            raise _DeadlinePassed from None

    def release(self) -> None:
        """Give a slot back; on the loop's thread (see `_hand_back` for worker threads)."""
        self._slots.release()


@dataclasses.dataclass(frozen=True, slots=True)
class RunningCall:
    """The call a tool's handler runs for (a client's tool names it in its request)."""

    call_id: str
    iteration: int


_RUNNING_CALL: ContextVar[RunningCall | None] = ContextVar("running_call", default=None)


def running_call() -> RunningCall | None:
    """The call whose handler is running in this task; None outside a runner's call."""
    return _RUNNING_CALL.get()


class ToolRunner:
    """Runs tool calls against a registry with validation, timeouts and records."""

    def __init__(
        self,
        registry: ToolRegistry,
        *,
        executor: WorkerThreads | None = None,
        max_workers: int = 16,
    ) -> None:
        if not isinstance(registry, ToolRegistry):
            raise TypeError(f"registry must be a ToolRegistry, not {type(registry).__name__}")
        self.registry = registry
        # Our own pool: sharing the event loop's default (or pygls's) would let slow tools
        # starve protocol I/O.
        self._executor = executor or WorkerThreads(max_workers, "cleveragents-tool")
        # Sync calls' deadlines, by event loop (a runner may serve several, one per thread).
        self._deadlines_by_loop: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, _Deadlines
        ] = weakref.WeakKeyDictionary()
        self._deadlines_lock = threading.Lock()
        self._last_deadlines: _Deadlines | None = None

    # -- stage 1 ---------------------------------------------------------------------------
    def resolve(self, request: ToolCallRequest) -> ToolSpec:
        spec = self.registry.get(request.tool_name)
        if spec is None:
            known = ", ".join(self.registry.names()) or "none"
            raise ToolFailure(
                "unknown_tool", f"unknown tool {request.tool_name!r}; available tools: {known}"
            )
        return spec

    # -- stage 2 ---------------------------------------------------------------------------
    def validate(
        self, spec: ToolSpec, request: ToolCallRequest, context: ToolActorContext | None
    ) -> dict[str, Any]:
        """Check the model's arguments against the schema; thread the context's reserved keys."""
        return self.checked_arguments(spec, request, context)[0]

    def checked_arguments(
        self, spec: ToolSpec, request: ToolCallRequest, context: ToolActorContext | None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """(inputs as recorded, what the handler is called with), after the checks.

        The two are one dict for a plain tool. A typed tool's handler gets the converted
        values (model instances, dataclasses, Enum members) while the record keeps the JSON
        the model sent.
        """
        if request.parse_error is not None:
            raise ToolFailure(
                "invalid_arguments",
                f"arguments for {spec.name} are not valid JSON: {request.parse_error}",
            )
        arguments = request.arguments
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise ToolFailure(
                "invalid_arguments",
                f"arguments for {spec.name} must be a JSON object, got {type(arguments).__name__}",
            )
        # The model may never choose these: drop whatever it sent, then supply the context's.
        inputs = dict(arguments)
        if not RESERVED_PARAMS.isdisjoint(inputs):
            for key in RESERVED_PARAMS:
                inputs.pop(key, None)
        typed = spec.typed_arguments
        if typed is None:
            detail = spec.validator.problems(inputs)
            call = inputs
        else:
            detail, call = typed.convert(inputs)
        if detail is not None:
            raise ToolFailure("validation_error", f"invalid arguments for {spec.name}: {detail}")
        if context is not None:
            if "sandbox_root" in spec.context_params and context.sandbox_root is not None:
                inputs["sandbox_root"] = call["sandbox_root"] = context.sandbox_root
            if "resource_bindings" in spec.context_params:
                inputs["resource_bindings"] = call["resource_bindings"] = dict(
                    context.resource_bindings
                )
        return inputs, call

    # -- stage 3 ---------------------------------------------------------------------------
    async def execute(
        self, spec: ToolSpec, inputs: dict[str, Any], budget: ThreadBudget | None = None
    ) -> dict[str, Any]:
        deadline: asyncio.Timeout | None = None
        try:
            if spec.is_async:
                # Started by hand: a call that finishes without ever waiting (most async tools
                # that only compute) could not have been stopped by a deadline, which acts only
                # at a wait, so it gets none; one that waits gets the rest of its time.
                started = asyncio.get_running_loop().time()
                steps = _steps_of(spec.handler(**inputs))
                try:
                    waiting_on = steps.send(None)
                except StopIteration as done:
                    value = done.value
                else:
                    deadline = asyncio.timeout_at(started + spec.timeout_s)
                    async with deadline:
                        value = await _resume(steps, waiting_on)
            else:
                value = await self._in_thread(spec, inputs, budget)
        except _DeadlinePassed:
            # A thread cannot be stopped from outside: say so rather than imply it ended.
            raise ToolFailure(
                "timeout",
                f"{spec.name} did not finish within {spec.timeout_s:g} s "
                "(it may still be running in its worker thread)",
            ) from None
        except TimeoutError as exc:
            if deadline is None or not deadline.expired():  # the tool's own (a socket's, say)
                raise ToolFailure(
                    "execution_error", f"{spec.name} raised TimeoutError: {exc}"
                ) from None
            raise ToolFailure(
                "timeout", f"{spec.name} did not finish within {spec.timeout_s:g} s"
            ) from None
        except SystemExit as exc:  # sys.exit or argparse in a tool must not stop the loop
            raise ToolFailure(
                "execution_error", f"{spec.name} called sys.exit({exc.code!r})"
            ) from None
        except ToolError as exc:
            raise ToolFailure(exc.kind, str(exc)) from None
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            raise ToolFailure(
                "execution_error", f"{spec.name} raised {type(exc).__name__}: {exc}"
            ) from None
        return normalise_output(spec.name, value)

    async def _in_thread(
        self, spec: ToolSpec, inputs: dict[str, Any], budget: ThreadBudget | None
    ) -> Any:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + spec.timeout_s
        if budget is not None:
            await budget.acquire(deadline)
        # One hand-back per call settles the awaiter and frees the slot, straight from the
        # worker (`WorkerThreads.start`): no concurrent Future to build, wrap and notify.
        waiter: asyncio.Future[Any] = loop.create_future()
        try:
            job = self._executor.start(
                functools.partial(spec.handler, **inputs),
                functools.partial(_hand_back, loop, waiter, budget),
            )
        except BaseException:
            if budget is not None:
                budget.release()
            raise
        # The deadline expires the waiter rather than asyncio.timeout around the await: nothing
        # to cancel and un-cancel in the task. One timer per loop watches every call's deadline
        # (see `_Deadlines`): a timer of its own per call cost about as much as the rest of the
        # call's bookkeeping.
        self._deadlines(loop).watch(deadline, waiter)
        try:
            return await waiter
        except BaseException:  # cancelled, or the deadline passed
            # One that has not started never will (and gives its slot back now); a running
            # one runs on and gives it back when it ends.
            if self._executor.cancel(job) and budget is not None:
                budget.release()
            raise

    def _deadlines(self, loop: asyncio.AbstractEventLoop) -> _Deadlines:
        last = self._last_deadlines  # one read: another loop's thread may replace it
        if last is not None and last.loop() is loop:
            return last
        with self._deadlines_lock:
            found = self._deadlines_by_loop.get(loop)
            if found is None:
                found = self._deadlines_by_loop[loop] = _Deadlines(loop)
        self._last_deadlines = found
        return found

    # -- stage 4 ---------------------------------------------------------------------------
    @staticmethod
    def record(
        request: ToolCallRequest,
        inputs: dict[str, Any] | None,
        started: float,
        iteration: int,
        output: dict[str, Any] | None = None,
        failure: ToolFailure | None = None,
    ) -> ToolCallRecord:
        if inputs is None:
            args = request.arguments
            inputs = dict(args) if isinstance(args, dict) else {"_raw": args}
        return ToolCallRecord(
            tool_name=request.tool_name,
            inputs=inputs,
            output=output if output is not None else {},
            duration_ms=(time.perf_counter() - started) * 1000.0,
            success=failure is None,
            error=failure.message if failure else None,
            iteration=iteration,
            call_id=request.call_id,
            error_kind=failure.kind if failure else None,
        )

    async def run(
        self,
        request: ToolCallRequest,
        context: ToolActorContext | None = None,
        iteration: int = 0,
        authorizer: Authorizer | None = None,
        budget: ThreadBudget | None = None,
    ) -> ToolCallRecord:
        """All four stages; returns a record whatever happens (cancellation re-raises)."""
        started = time.perf_counter()
        inputs: dict[str, Any] | None = None
        try:
            spec = self.resolve(request)
            try:
                inputs, call = self.checked_arguments(spec, request, context)
            except ToolFailure:
                raise
            except Exception as exc:  # the tool's own schema is broken (an MCP server's, say)
                raise ToolFailure(
                    "validation_error",
                    f"{spec.name} has an input schema that cannot be checked: "
                    f"{type(exc).__name__}: {exc}",
                ) from None
            if authorizer is not None:
                try:
                    denial = await authorizer.check(spec, inputs, request.call_id, iteration)
                except Exception as exc:  # an approver that fails must not let the call run
                    denial = f"asking for approval failed ({type(exc).__name__}: {exc})"
                if denial is not None:
                    raise ToolFailure("denied", denial)
                # The record's duration is the tool's own: not the wait for a human's answer,
                # nor the checkpoint saved before the call (an event of its own).
                started = time.perf_counter()
            asker = (
                None
                if authorizer is None
                else functools.partial(
                    authorizer.ask_after, spec, inputs, request.call_id, iteration
                )
            )
            running = _RUNNING_CALL.set(RunningCall(request.call_id, iteration))
            asking = ask_about_protected_writes(asker)
            try:
                output = await self.execute(spec, call, budget)
            finally:
                stop_asking_about_protected_writes(asking)
                _RUNNING_CALL.reset(running)
        except ToolFailure as failure:
            return self.record(request, inputs, started, iteration, failure=failure)
        return self.record(request, inputs, started, iteration, output=output)

    def shutdown(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)


_OUTPUT_ENCODER = json.JSONEncoder(allow_nan=False)
# Values the encoder always accepts, checked in Python for small outputs, where building the
# encoder's state costs more than the walk; bigger or unusual outputs go to the encoder.
_WALK_BUDGET = 256
# Python refuses to turn ints of more digits than its limit (at least 640) into text.
_ENCODABLE_INT = 10**639


def _hand_back(
    loop: asyncio.AbstractEventLoop,
    waiter: asyncio.Future[Any],
    budget: ThreadBudget | None,
    result: Any,
    error: BaseException | None,
) -> None:
    """In the worker, the tool has returned (or the pool dropped the call): tell the loop."""
    try:
        loop.call_soon_threadsafe(_settle, waiter, budget, result, error)
    except RuntimeError:  # the loop has closed: nobody is waiting any more
        pass


def _expire(waiter: asyncio.Future[Any]) -> None:
    if not waiter.done():
        waiter.set_exception(_DeadlinePassed())


class _Deadlines:
    """The deadlines of the sync calls awaited on one loop, watched by one timer.

    A heap of (deadline, order, waiter); the timer is armed for the earliest deadline only.
    Calls that finished are dropped from the heap's head as new calls come in (nearly every
    call finishes long before its deadline, and deadlines come in order when timeouts are
    alike), so the heap holds little more than the calls still running. The loop and the
    waiters are held weakly: an entry of the runner's table must not keep its loop alive.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = weakref.ref(loop)
        self._heap: list[tuple[float, int, weakref.ref[asyncio.Future[Any]]]] = []
        self._order = itertools.count()
        self._timer: weakref.ref[asyncio.TimerHandle] | None = None  # (a handle holds its loop)
        self._armed_at = math.inf

    def watch(self, deadline: float, waiter: asyncio.Future[Any]) -> None:
        heap = self._heap
        while heap and _finished(heap[0][2]):
            heapq.heappop(heap)
        heapq.heappush(heap, (deadline, next(self._order), weakref.ref(waiter)))
        if deadline < self._armed_at:
            self._arm(deadline)

    def _arm(self, when: float) -> None:
        loop = self.loop()
        if loop is None:
            return
        armed = self._timer() if self._timer is not None else None
        if armed is not None:
            armed.cancel()
        self._timer = weakref.ref(loop.call_at(when, self._fire))
        self._armed_at = when

    def _fire(self) -> None:
        self._timer, self._armed_at = None, math.inf
        loop = self.loop()
        if loop is None:
            return
        heap = self._heap
        # The loop runs a timer up to its clock's resolution early: allow for it.
        now = loop.time() + 1e-6
        while heap and (heap[0][0] <= now or _finished(heap[0][2])):
            waiter = heapq.heappop(heap)[2]()
            if waiter is not None:
                _expire(waiter)
        if heap:
            self._arm(heap[0][0])


def _finished(waiter: weakref.ref[asyncio.Future[Any]]) -> bool:
    future = waiter()
    return future is None or future.done()


def _settle(
    waiter: asyncio.Future[Any],
    budget: ThreadBudget | None,
    result: Any,
    error: BaseException | None,
) -> None:
    """On the loop: the thread is free again, and the awaiter (if still there) gets the
    tool's outcome."""
    if budget is not None:
        budget.release()
    if waiter.done():  # its awaiter gave up (a cancel, a timeout)
        return
    if isinstance(error, CancelledError):  # the pool shut down before the call started
        waiter.cancel()
    elif error is not None:
        waiter.set_exception(error)
    else:
        waiter.set_result(result)


def _steps_of(awaitable: Any) -> Generator[Any, None, Any]:
    """What `await awaitable` iterates over, refused with the message `await` would give."""
    try:
        steps: Generator[Any, None, Any] = awaitable.__await__()
    except AttributeError:
        raise TypeError(
            f"object {type(awaitable).__name__} can't be used in 'await' expression"
        ) from None
    return steps


@types.coroutine
def _resume(steps: Generator[Any, None, Any], waiting_on: Any) -> Generator[Any, None, Any]:
    """Await the rest of an awaitable whose steps already ran up to its first wait.

    `waiting_on` is what it yielded there (a future, or None for a bare yield); the task
    running us waits on it, then the awaitable goes on exactly as if it had been awaited.
    """
    while True:
        try:
            yield waiting_on
        except GeneratorExit:
            steps.close()
            raise
        except BaseException as exc:  # thrown in by the task (a cancellation): pass it on
            try:
                waiting_on = steps.throw(exc)
            except StopIteration as done:
                return done.value
            continue
        return (yield from steps)


def normalise_output(tool_name: str, value: Any) -> dict[str, Any]:
    """Tool output as a JSON object: dicts as they are, anything else under `result`.

    A value the json module has no form for (a Pydantic model, a dataclass, a datetime, a
    Path, bytes, a set...) is given its Pydantic JSON-mode form (`_structured_output`); one
    Pydantic cannot write either, or that holds NaN, is an invalid_output failure.
    """
    output: dict[str, Any]
    if value is None:
        output = {}
    elif isinstance(value, dict):
        output = value
    else:
        output = {"result": value}
    if _plain_json(output, _WALK_BUDGET) >= 0:
        return output
    try:
        _OUTPUT_ENCODER.encode(output)
    except TypeError as exc:
        return _structured_output(tool_name, value, exc)
    except ValueError as exc:
        raise _not_json(tool_name, exc) from None
    return output


def _not_json(tool_name: str, exc: Exception) -> ToolFailure:
    return ToolFailure(
        "invalid_output", f"{tool_name} returned a value that is not JSON-serialisable: {exc}"
    )


def _structured_output(tool_name: str, value: Any, json_error: TypeError) -> dict[str, Any]:
    """The output of a tool that returned structured data, in Pydantic's JSON mode.

    A model or a dataclass instance is an object, so its JSON form is the output itself (as
    a returned dict is); any other value (an Enum, a datetime, a Path, bytes) goes under
    `result`. Pydantic is imported only here, when a tool first returns such a value.
    """
    try:
        from .typed_arguments import structured_to_json
    except ImportError:  # pydantic missing: the json module's verdict stands
        raise _not_json(tool_name, json_error) from None
    try:
        converted = structured_to_json(value)
    except (ValueError, TypeError, RecursionError):
        # Pydantic has no form for it either: say what json said, the more familiar words.
        raise _not_json(tool_name, json_error) from None
    output: dict[str, Any]
    if converted is None:
        output = {}
    elif isinstance(converted, dict) and (
        isinstance(value, dict)
        or hasattr(type(value), "__pydantic_serializer__")
        or dataclasses.is_dataclass(value)
    ):
        output = converted
    else:
        output = {"result": converted}
    try:
        _OUTPUT_ENCODER.encode(output)
    except (TypeError, ValueError) as exc:  # a NaN inside a model, a key JSON cannot take
        raise _not_json(tool_name, exc) from None
    return output


def _plain_json(value: Any, budget: int) -> int:
    """What is left of `budget` after checking that `value` is plain JSON, or -1 when unsure.

    Plain: exact str, bool, None, int, finite float, lists, tuples and dicts with str keys.
    Each container costs one plus its length, which also bounds the depth. -1 (a subclass, a
    non-str key, NaN, a huge int, too big) means only the encoder can say.
    """
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return budget
    if kind is int:
        return budget if -_ENCODABLE_INT < value < _ENCODABLE_INT else -1
    if kind is float:
        return budget if math.isfinite(value) else -1
    if kind is dict:
        budget -= 1 + len(value)
        if budget < 0:
            return -1
        for key, item in value.items():
            if type(key) is not str:
                return -1
            budget = _plain_json(item, budget)
            if budget < 0:
                return -1
        return budget
    if kind is list or kind is tuple:
        budget -= 1 + len(value)
        if budget < 0:
            return -1
        for item in value:
            budget = _plain_json(item, budget)
            if budget < 0:
                return -1
        return budget
    return -1
