"""ToolCallingRuntime: the tool-calling loop.

One iteration is one LLM call plus the tool calls that response asked for. At most
`max_iterations` LLM calls are made; when the last allowed response still asks for tools,
they run and are recorded and the result comes back with `terminated_by_limit=True`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from .cancel import CancelToken as CancelToken  # its home before cancel.py
from .checkpoint import BeforeMutation, CheckpointingAuthorizer
from .compaction import MAX_TRANSCRIPT_CHARS, SUMMARY_SYSTEM, transcript
from .context import ToolActorContext
from .context_guard import CHARS_PER_TOKEN, ContextGuard, ContextLimits, tools_chars
from .context_policy import ContextPolicy
from .defaults import DEFAULT_MAX_ITERATIONS as DEFAULT_MAX_ITERATIONS
from .errors import ContextLengthExceeded
from .events import (
    IterationStarted,
    PlanUpdated,
    ResponseReceived,
    RunFailed,
    RunFinished,
    RunObserver,
    RunStarted,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    publish,
)
from .images import ImageAttachment
from .instructions import FolderNote, InstructionsSource, RunInstructions, with_note
from .llm import LLMCaller, as_llm_caller
from .messages import (
    AssistantMessage,
    LLMRequest,
    Message,
    ToolCallRequest,
    ToolResult,
    ToolResultsMessage,
    UserMessage,
)
from .models import (
    DEFAULT_CONTEXT_WINDOW,
    ModelPrice,
    context_window_for,
    normalise_prices,
    price_for,
)
from .plan import plan_from_record
from .policy import Approver, Authorizer, check_profile
from .records import ToolCallRecord, ToolCallRunResult, Usage
from .registry import ToolRegistry
from .repeats import same_call
from .resources import Resource, prompt_with_resources
from .result_budget import DEFAULT_RESULT_BUDGET_CHARS, MIN_RESULT_BUDGET_CHARS
from .router import ToolCallRouter, sized_result_from_record
from .runner import ThreadBudget, ToolRunner

log = logging.getLogger(__name__)

DEFAULT_MAX_REPEATED_CALLS = 3
# Worker threads one run's sync tools may hold at once (abandoned ones included), so a run
# whose tools hang cannot take every thread of a shared runner.
DEFAULT_MAX_THREADS_PER_RUN = 8


def new_run_id() -> str:
    # os.urandom rather than uuid: uuid's import (platform, ...) shows in start-up time.
    return f"run_{os.urandom(8).hex()}"


def close_dangling_calls(messages: Sequence[Message]) -> list[Message]:
    """Give every tool call without a result a cancelled one, so the history stays valid.

    Providers reject a conversation in which a tool call has no result; a run interrupted
    mid-call (crash, cancel) leaves exactly that behind.
    """
    repaired: list[Message] = []
    pending: list[ToolCallRequest] = []
    for message in messages:
        if isinstance(message, ToolResultsMessage):
            answered = {r.call_id for r in message.results}
            missing = [c for c in pending if c.call_id not in answered]
            results = tuple(message.results) + tuple(_cancelled_result(c) for c in missing)
            repaired.append(ToolResultsMessage(results))
            pending = []
            continue
        if pending:
            repaired.append(ToolResultsMessage(tuple(_cancelled_result(c) for c in pending)))
            pending = []
        repaired.append(message)
        if isinstance(message, AssistantMessage):
            pending = list(message.tool_calls)
    if pending:
        repaired.append(ToolResultsMessage(tuple(_cancelled_result(c) for c in pending)))
    return repaired


def _cancelled_result(call: ToolCallRequest) -> ToolResult:
    return ToolResult(
        call.call_id,
        call.tool_name,
        {"error": "the call was interrupted before it finished", "error_kind": "cancelled"},
        is_error=True,
    )


class _Run:
    """The state of one run; lives only while `arun_tool_loop` does."""

    def __init__(
        self,
        runtime: ToolCallingRuntime,
        run_id: str,
        context: ToolActorContext,
        observers: Sequence[RunObserver],
        authorizer: Authorizer,
        result_budget: int | None,
        context_window: int | None,
        cancel: CancelToken,
        instructions: RunInstructions | None = None,
    ) -> None:
        self.runtime = runtime
        self.instructions = instructions
        # Folder instructions found for a call, by call id, until its result is built.
        self.notes: dict[str, FolderNote] = {}
        self.run_id = run_id
        self.cancel = cancel
        self.context = context
        self.observers = observers
        self.authorizer = authorizer
        self.result_budget = result_budget
        self.records: list[ToolCallRecord] = []
        # The whole conversation, results at their budget and never elided: a continued
        # run starts from it and its own guard elides again only if its model needs it.
        self.messages: list[Message] = []
        self.texts: list[str] = []
        self.iterations = 0
        self.usage = Usage()
        self.iteration_usage: list[Usage] = []
        llm = runtime.llm_caller
        model = getattr(llm, "model", None)
        self.model = model if isinstance(model, str) else None
        self.price = price_for(self.model, runtime.prices)
        self.limits = ContextLimits.for_window(
            _window(context_window, runtime.context_window, llm, self.model),
            _positive_int(getattr(llm, "max_tokens", None)),
        )
        self.guard: ContextGuard | None = None
        self.threads = ThreadBudget(runtime.max_threads_per_run)
        self._streak: ToolCallRequest | None = None  # the first of the latest identical calls
        self._repeats = 0

    def emit(self, event: Any) -> None:
        publish(self.observers, event)

    def result(self, content: str, stop_reason: Any, limit: bool = False) -> ToolCallRunResult:
        return ToolCallRunResult(
            content=content,
            tool_call_history=list(self.records),
            iterations=self.iterations,
            terminated_by_limit=limit,
            stop_reason=stop_reason,
            run_id=self.run_id,
            usage=self.usage,
            cost_usd=self.cost_of(self.usage),
            iteration_usage=list(self.iteration_usage),
            messages=list(self.messages),
        )

    def cost_of(self, usage: Usage) -> float | None:
        """The price of `usage` (a call's, or the run's total); None for an unknown price."""
        return self.price.cost(usage) if self.price is not None else None

    def stop_if_cancelled(self) -> None:
        """At a step boundary: a cancelled run takes no further step.

        The token's callback cancels the run's task at once when the cancel comes from the
        event loop's thread; this check covers a cancel from another thread, whose callback
        waits for the next loop turn.
        """
        if self.cancel.cancelled:
            raise asyncio.CancelledError

    def partial_content(self) -> str:
        return "\n\n".join(t for t in self.texts if t)

    def finish(self, record: ToolCallRecord) -> None:
        self.context.tool_call_history.append(record)
        if self.observers:  # an event nobody receives is not built
            self.emit(ToolCallFinished(self.run_id, record))
            steps = plan_from_record(record)
            if steps is not None:
                explanation = record.inputs.get("explanation")
                self.emit(
                    PlanUpdated(
                        self.run_id,
                        record.iteration,
                        record.call_id,
                        steps,
                        explanation if isinstance(explanation, str) else None,
                    )
                )

    def is_repeat(self, call: ToolCallRequest) -> bool:
        """True when this call repeats the previous N identical calls in a row."""
        if self._streak is not None and same_call(self._streak, call):
            self._repeats += 1
        else:
            self._streak, self._repeats = call, 1
        return self._repeats > self.runtime.max_repeated_calls

    async def call_tools(self, calls: Sequence[ToolCallRequest], iteration: int) -> None:
        """Run one response's calls: concurrently when none changes the workspace, else in
        request order. Records and results keep request order either way."""
        slots: list[ToolCallRecord | None] = [None] * len(calls)
        repeats = [self.is_repeat(call) for call in calls]

        async def one(index: int, call: ToolCallRequest) -> None:
            self.stop_if_cancelled()  # never announce a call of a stopped run
            started = time.perf_counter()
            if self.observers:
                self.emit(
                    ToolCallStarted(
                        self.run_id, iteration, call.call_id, call.tool_name, call.arguments
                    )
                )
            if repeats[index]:
                record = ToolRunner.record(call, None, started, iteration)
                record.success = False
                record.error_kind = "repeated_call"
                record.error = (
                    f"{call.tool_name} was called with these exact arguments "
                    f"{self.runtime.max_repeated_calls} times in a row; it was not run again. "
                    "Use the earlier result or change the arguments."
                )
            else:
                try:
                    record = await self.runtime.router.route(
                        call, self.context, iteration, self.authorizer, self.threads
                    )
                except asyncio.CancelledError:
                    record = ToolRunner.record(call, None, started, iteration)
                    record.success, record.error_kind = False, "cancelled"
                    record.error = (
                        "the run was cancelled while this call waited for approval; it did not run"
                        if call.call_id in self.authorizer.cancelled_questions
                        else "the run was cancelled while this call was running"
                    )
                    slots[index] = record
                    self.finish(record)
                    raise
            slots[index] = record
            self.finish(record)
            instructions = self.instructions
            if instructions is not None and instructions.concerns(call.tool_name):
                # Reading a folder's AGENTS.md is file I/O: off the event loop.
                note = await asyncio.to_thread(instructions.for_call, call.tool_name, record.inputs)
                if note is not None:
                    self.notes[record.call_id] = note

        registry = self.runtime.registry
        writes = any(
            (spec := registry.get(call.tool_name)) is not None and spec.mutating for call in calls
        )
        if len(calls) == 1 or writes:
            # One call needs no task; calls that change the workspace run in request order,
            # since a later one may depend on an earlier one's effect (write, then edit).
            try:
                for index, call in enumerate(calls):
                    await one(index, call)
            except asyncio.CancelledError:
                self._record_unstarted(calls, slots, iteration)
                raise
            finally:
                self._append_results(slots)
            return
        tasks = [asyncio.ensure_future(one(i, c)) for i, c in enumerate(calls)]
        try:
            await asyncio.gather(*tasks)
        except asyncio.CancelledError:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self._record_unstarted(calls, slots, iteration)
            self._append_results(slots)
            raise
        self._append_results(slots)

    def _record_unstarted(
        self,
        calls: Sequence[ToolCallRequest],
        slots: list[ToolCallRecord | None],
        iteration: int,
    ) -> None:
        for index, call in enumerate(calls):
            if slots[index] is None:
                record = ToolRunner.record(call, None, time.perf_counter(), iteration)
                record.success, record.error_kind = False, "cancelled"
                record.error = "the run was cancelled before this call started"
                slots[index] = record
                self.finish(record)

    def _append_results(self, slots: Sequence[ToolCallRecord | None]) -> None:
        # Observers and the context saw records in completion order; the result and the
        # model see them in request order.
        ordered = [r for r in slots if r is not None]
        self.records.extend(ordered)
        results: list[ToolResult] = []
        sizes: list[int] = []
        for record in ordered:
            result, size = sized_result_from_record(record, self.result_budget)
            note = self.notes.pop(record.call_id, None)
            if note is not None:  # a folder's AGENTS.md rides with the first result there
                result, added = with_note(result, note)
                size += added
            results.append(result)
            sizes.append(size)
        message = ToolResultsMessage(tuple(results))
        self.messages.append(message)
        if self.guard is not None:
            self.guard.append(message, sizes)

    def exhausted(self, detail: str) -> ToolCallRunResult:
        """The run ends because the next request cannot fit the model's window."""
        limits = self.limits
        message = (
            "The run stopped: the conversation no longer fits the model's context window. "
            f"{detail} The model{f' {self.model}' if self.model else ''} has a window of "
            f"{limits.window:,} tokens, of which {limits.max_output:,} are kept for its answer "
            f"and {limits.margin:,} as a margin. Start a new run with a narrower task (what this "
            "run did is kept), or use a model with a larger context window."
        )
        partial = self.partial_content()
        content = f"{partial}\n\n{message}" if partial else message
        return self.result(content, "context_exhausted", limit=True)

    def not_fitting(self, guard: ContextGuard) -> str:
        return (
            f"The next request needs about {guard.estimate():,} tokens even with every older "
            "tool result and message elided and the oldest turns compacted, and "
            f"{self.limits.input_limit:,} are available."
        )

    async def summarise(self, guard: ContextGuard, iteration: int) -> Usage | None:
        """Ask the model for a summary of the turns compaction just dropped, for the note
        (`compaction_summary`); its usage, or None when it failed (the factual note stands)."""
        dropped, guard.dropped_since_summary = guard.dropped_since_summary, []
        room = int(self.limits.input_limit * CHARS_PER_TOKEN / guard.factor / 2)
        request = LLMRequest(
            messages=[
                UserMessage(transcript(dropped, guard.summary, min(room, MAX_TRANSCRIPT_CHARS)))
            ],
            tools=[],
            system=SUMMARY_SYSTEM,
            automation_profile=self.authorizer.profile,
            iteration=iteration,
            cache=self.runtime.cache,
        )
        try:
            response = await self.runtime.llm_caller.complete(request, None)
        except Exception as exc:  # a failed summary must not end the run
            log.warning("run %s: the compaction summary failed: %s", self.run_id, exc)
            return None
        guard.set_summary(response.text)
        return response.usage

    async def loop(
        self, prompt: str, resources: Sequence[Resource], images: Sequence[ImageAttachment]
    ) -> ToolCallRunResult:
        runtime = self.runtime
        tools = [spec.to_schema() for spec in runtime.registry.specs()]
        self.messages.append(UserMessage(prompt_with_resources(prompt, resources), tuple(images)))
        system = runtime.system_prompt
        if self.instructions is not None:
            system = self.instructions.system_prompt(system)
        guard = self.guard = ContextGuard(
            self.limits,
            len(system or "") + tools_chars(tools),
            runtime.context_policy,
            frozenset(t.name for t in tools if t.mutating),
        )
        for message in self.messages:
            guard.append(message)
        guard.pin(self.messages[-1])  # the prompt: compaction never drops it
        guard.keep_dropped = runtime.compaction_summary
        for iteration in range(1, runtime.max_iterations + 1):
            self.stop_if_cancelled()  # no model request once the run is stopping
            compactions = guard.compactions
            if not guard.fit():
                return self.exhausted(self.not_fitting(guard))
            summary_usage = None
            if guard.compactions != compactions and runtime.compaction_summary:
                summary_usage = await self.summarise(guard, iteration)
                self.stop_if_cancelled()  # a cancel during the summary stops here too
            self.iterations = iteration
            if self.observers:
                self.emit(IterationStarted(self.run_id, iteration))

            def on_text(delta: str, iteration: int = iteration) -> None:
                # A stream being aborted by a cancel may still hand over what it had read.
                if delta and not self.cancel.cancelled:
                    self.emit(TextDelta(self.run_id, iteration, delta))

            retried = False
            while True:
                request = LLMRequest(
                    messages=list(guard.view),
                    tools=tools,
                    system=system,
                    automation_profile=self.authorizer.profile,
                    iteration=iteration,
                    cache=runtime.cache,
                )
                sent_chars = guard.chars
                try:
                    response = await runtime.llm_caller.complete(request, on_text)
                    break
                except ContextLengthExceeded as exc:
                    # The estimate was wrong: learn from the refusal, shrink, try once more.
                    said = f"The model's service refused the request as too long ({exc})."
                    if retried:
                        return self.exhausted(said + " It refused the shrunk request too.")
                    retried = True
                    guard.rejected(sent_chars)
                    if not guard.fit():
                        return self.exhausted(f"{said} {self.not_fitting(guard)}")
            usage = response.usage  # never changed by the runtime, so kept as it came
            if usage.input_tokens:
                guard.calibrate(sent_chars, usage.input_tokens)
            if summary_usage is not None:  # the iteration's bill includes its summary call
                usage = Usage(
                    usage.input_tokens,
                    usage.output_tokens,
                    usage.cache_read_tokens,
                    usage.cache_write_tokens,
                )
                usage.add(summary_usage)
            self.usage.add(usage)
            self.iteration_usage.append(usage)
            calls = [
                c
                if c.call_id
                else ToolCallRequest(
                    f"call_{os.urandom(6).hex()}", c.tool_name, c.arguments, c.parse_error
                )
                for c in response.tool_calls
            ]
            self.texts.append(response.text)
            message = AssistantMessage(response.text, tuple(calls), response.provider_data)
            self.messages.append(message)
            guard.append(message)
            self.emit(
                ResponseReceived(
                    self.run_id,
                    iteration,
                    message,
                    usage,
                    self.cost_of(usage),
                    self.usage.copy(),
                    self.cost_of(self.usage),
                )
            )
            if not calls:
                return self.result(response.text, "final_answer")
            await self.call_tools(calls, iteration)
        return self.result(self.partial_content(), "max_iterations", limit=True)


def _positive_int(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def _window(run: int | None, runtime: int | None, llm: Any, model: str | None) -> int:
    """The window a run works to: the run's setting, the runtime's, the caller's own
    `context_window`, the model table, then `DEFAULT_CONTEXT_WINDOW`."""
    for value in (run, runtime, _positive_int(getattr(llm, "context_window", None))):
        if value is not None:
            return value
    return context_window_for(model) or DEFAULT_CONTEXT_WINDOW


def _check_budget(value: int | None) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"result_budget_chars must be an int or None, not {type(value).__name__}")
    if value < MIN_RESULT_BUDGET_CHARS:
        raise ValueError(
            f"result_budget_chars must be at least {MIN_RESULT_BUDGET_CHARS}, got {value}"
        )
    return value


def _check_window(value: int | None) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"context_window must be an int or None, not {type(value).__name__}")
    if value < 1:
        raise ValueError(f"context_window must be a positive number of tokens, got {value}")
    return value


class _Unset:
    """Marks an argument left out (None is a meaningful value: no budget)."""


_UNSET = _Unset()


class ToolCallingRuntime:
    """Sends a prompt and tool schemas to an LLM, runs the tools it asks for, and loops."""

    def __init__(
        self,
        registry: ToolRegistry,
        runner: ToolRunner,
        llm_caller: LLMCaller | Any,
        max_iterations: int = DEFAULT_MAX_ITERATIONS,
        *,
        router: ToolCallRouter | None = None,
        system_prompt: str | None = None,
        approver: Approver | None = None,
        observers: Sequence[RunObserver] = (),
        max_repeated_calls: int = DEFAULT_MAX_REPEATED_CALLS,
        max_threads_per_run: int = DEFAULT_MAX_THREADS_PER_RUN,
        result_budget_chars: int | None = DEFAULT_RESULT_BUDGET_CHARS,
        context_window: int | None = None,
        prices: Mapping[str, ModelPrice | Mapping[str, Any]] | None = None,
        cache: bool = True,
        context_policy: ContextPolicy | None = None,
        compaction_summary: bool = False,
        instructions: InstructionsSource | None = None,
    ) -> None:
        if not isinstance(registry, ToolRegistry):
            raise TypeError(f"registry must be a ToolRegistry, not {type(registry).__name__}")
        if not isinstance(runner, ToolRunner):
            raise TypeError(f"runner must be a ToolRunner, not {type(runner).__name__}")
        if isinstance(max_iterations, bool) or not isinstance(max_iterations, int):
            raise TypeError(f"max_iterations must be an int, not {type(max_iterations).__name__}")
        if max_iterations < 1:
            raise ValueError(f"max_iterations must be at least 1, got {max_iterations}")
        if max_threads_per_run < 1:
            raise ValueError(f"max_threads_per_run must be at least 1, got {max_threads_per_run}")
        if max_repeated_calls < 1:
            raise ValueError(f"max_repeated_calls must be at least 1, got {max_repeated_calls}")
        if runner.registry is not registry:
            raise ValueError("runner must run the same ToolRegistry the runtime offers")
        if router is not None and not isinstance(router, ToolCallRouter):
            raise TypeError(f"router must be a ToolCallRouter, not {type(router).__name__}")
        self.registry = registry
        self.runner = runner
        self.router = router or ToolCallRouter(runner)
        self.llm_caller = as_llm_caller(llm_caller)
        self.max_iterations = max_iterations
        self.system_prompt = system_prompt
        self.approver = approver
        self.observers = tuple(observers)
        self.max_repeated_calls = max_repeated_calls
        self.max_threads_per_run = max_threads_per_run
        # The model sees at most this many characters of one tool result (None: no limit).
        self.result_budget_chars = _check_budget(result_budget_chars)
        # Tokens the model reads at most; None: the caller's, the model table's, or 128k.
        self.context_window = _check_window(context_window)
        self.prices = normalise_prices(prices)
        self.cache = bool(cache)
        # When old tool results are cleared before the window requires it (context_guard.py).
        if context_policy is not None and not isinstance(context_policy, ContextPolicy):
            raise TypeError(
                f"context_policy must be a ContextPolicy, not {type(context_policy).__name__}"
            )
        self.context_policy = context_policy if context_policy is not None else ContextPolicy()
        # After a compaction, ask the model to summarise the dropped turns for the note.
        self.compaction_summary = bool(compaction_summary)
        # Where each run's project instructions (AGENTS.md) come from; None: none are read.
        self.instructions = instructions

    async def arun_tool_loop(
        self,
        prompt: str,
        context: ToolActorContext | None = None,
        *,
        history: Sequence[Message] = (),
        observers: Sequence[RunObserver] = (),
        approver: Approver | None = None,
        cancel: CancelToken | None = None,
        run_id: str | None = None,
        before_mutation: BeforeMutation | None = None,
        context_window: int | None = None,
        result_budget_chars: int | _Unset | None = _UNSET,
        resources: Sequence[Resource] = (),
        images: Sequence[ImageAttachment] = (),
    ) -> ToolCallRunResult:
        """Run the loop. `history` continues an earlier conversation; `cancel` stops it early.

        Cancelling the task that awaits this also stops the run: in-flight calls are recorded
        as cancelled and observers get `RunFinished` before the CancelledError propagates.
        `before_mutation(iteration)` is awaited before the first call of an iteration that may
        change the workspace (see `checkpoint.py`). `context_window` and `result_budget_chars`
        override the runtime's settings for this run. `resources` (attached files, see
        `resources.py`) go in the first message, before the prompt; `images` (`images.py`)
        with it, for a caller with vision (the caller of the run checks that).
        """
        if not isinstance(prompt, str):
            raise TypeError(f"prompt must be a string, not {type(prompt).__name__}")
        if not prompt.strip() and not images:  # images alone are a prompt
            raise ValueError("prompt must not be empty (unless images are attached)")
        context = context if context is not None else ToolActorContext()
        if not isinstance(context, ToolActorContext):
            raise TypeError(f"context must be a ToolActorContext, not {type(context).__name__}")
        run_id = run_id or new_run_id()
        budget = (
            self.result_budget_chars
            if isinstance(result_budget_chars, _Unset)
            else _check_budget(result_budget_chars)
        )
        window = _check_window(context_window)
        profile = check_profile(context.automation_profile)
        chosen_approver = approver if approver is not None else self.approver
        # Always a token: an approver's `cancel` answer stops the run through it.
        token = cancel if cancel is not None else CancelToken()
        authorizer = (
            Authorizer(profile, chosen_approver, run_id, token)
            if before_mutation is None
            else CheckpointingAuthorizer(profile, chosen_approver, run_id, before_mutation, token)
        )
        instructions: RunInstructions | None = None
        cancelled_early = False
        if self.instructions is not None:
            try:  # file I/O: off the event loop
                instructions = await asyncio.to_thread(
                    self.instructions.for_run, context.sandbox_root
                )
            except asyncio.CancelledError:
                cancelled_early = True  # the run still starts and ends, as cancelled
        run = _Run(
            self,
            run_id,
            context,
            (*self.observers, *observers),
            authorizer,
            budget,
            window,
            token,
            instructions,
        )
        if isinstance(authorizer, CheckpointingAuthorizer) and run.observers:
            authorizer.emit = run.emit  # snapshots are steps of their own (checkpoint.py)
        run.messages.extend(close_dangling_calls(history))
        run.emit(
            RunStarted(
                run_id,
                prompt,
                context.plan_id,
                context.sandbox_root,
                authorizer.profile,
                self.max_iterations,
                tuple(resources),
                instructions.files if instructions is not None else (),
                tuple(images),
            )
        )
        if cancelled_early:
            run.emit(RunFinished(run_id, run.result("", "cancelled")))
            raise asyncio.CancelledError
        body = asyncio.ensure_future(run.loop(prompt, resources, images))
        # The cancel stops the body where it is, inside `cancel()` when that runs on this
        # loop: an open approval is withdrawn, a model stream aborted, a running tool stopped.
        stop_body = token.on_cancel(body.cancel)
        try:
            await asyncio.wait([body])
        except asyncio.CancelledError:
            await _stop(body)
            run.emit(RunFinished(run_id, run.result(run.partial_content(), "cancelled")))
            raise
        finally:
            stop_body()
        try:
            result = body.result()
        except asyncio.CancelledError:
            result = run.result(run.partial_content(), "cancelled")
        except Exception as exc:
            run.emit(RunFailed(run_id, str(exc), type(exc).__name__))
            raise
        run.emit(RunFinished(run_id, result))
        return result

    def run_tool_loop(
        self,
        prompt: str,
        context: ToolActorContext | None = None,
        **kwargs: Any,
    ) -> ToolCallRunResult:
        """Synchronous wrapper around `arun_tool_loop`.

        Inside a running event loop (a notebook, an async app) the loop runs on a helper
        thread so this call still blocks and returns the result.
        """
        outcome: dict[str, Any] = {}

        async def main() -> None:
            # The result is handed over beside the task, not as its result: on Python 3.11
            # asyncio.run formats the main task's repr (result included) when it checks the
            # SIGINT handler, and a run's records can hold hundreds of MiB.
            outcome["result"] = await self.arun_tool_loop(prompt, context, **kwargs)

        def target() -> None:
            try:
                asyncio.run(main())
            except BaseException as exc:
                outcome["error"] = exc

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            asyncio.run(main())
        else:
            thread = threading.Thread(target=target, name="cleveragents-run")
            thread.start()
            thread.join()
            if "error" in outcome:
                raise outcome["error"]
        result: ToolCallRunResult = outcome["result"]
        return result


async def _stop(task: asyncio.Future[Any]) -> bool:
    """Cancel `task` and wait until it has wound down; True when our caller was cancelled.

    asyncio.wait, not await: the task's outcome no longer matters. A cancellation aimed at our
    caller meanwhile (a cancel token and a task cancel arriving together) does not cut the wait
    short: the task is still recording its calls as cancelled, and the run's end is recorded
    after that. The caller re-raises it once the run's end is recorded.
    """
    task.cancel()
    interrupted = False
    while not task.done():
        try:
            await asyncio.wait([task])
        except asyncio.CancelledError:
            interrupted = True
    return interrupted
