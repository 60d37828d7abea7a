"""Bad input from a model or a tool: a clear failed record every time, never a crash."""

from __future__ import annotations

import asyncio
import enum
import json
import threading
import time
from typing import Any

from cleveragents.tool import ToolCallRequest, ToolError, ToolRegistry, ToolRunner
from cleveragents.tool.router import ToolCallRouter
from cleveragents.tool.runner import ThreadBudget, ToolFailure, normalise_output


def registry_with_echo() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool
    def echo(text: str) -> str:
        """Echo the text."""
        return text

    return registry


async def run(
    registry: ToolRegistry, name: str, arguments: Any, parse_error: str | None = None
) -> Any:
    return await ToolRunner(registry).run(ToolCallRequest("c1", name, arguments, parse_error))


async def test_arguments_that_are_not_an_object() -> None:
    registry = registry_with_echo()
    for arguments in (["text"], "text", 7, True):
        record = await run(registry, "echo", arguments)
        assert record.success is False and record.error_kind == "invalid_arguments"
        assert "must be a JSON object" in (record.error or "")
        assert record.inputs == {"_raw": arguments}


async def test_arguments_that_are_not_valid_json() -> None:
    request = ToolCallRouter.from_openai_tool_call(
        {"id": "c9", "function": {"name": "echo", "arguments": '{"text": "unterminated'}}
    )
    assert request.parse_error is not None
    record = await ToolRunner(registry_with_echo()).run(request)
    assert record.error_kind == "invalid_arguments"
    assert "not valid JSON" in (record.error or "")
    assert record.call_id == "c9"


async def test_missing_arguments_mean_an_empty_object() -> None:
    record = await run(registry_with_echo(), "echo", None)
    assert record.error_kind == "validation_error"
    assert "missing required argument 'text'" in (record.error or "")


async def test_output_that_is_not_json_serialisable() -> None:
    registry = ToolRegistry()

    @registry.tool
    def weird() -> Any:
        """Returns an object JSON cannot hold."""
        return {"when": object()}

    @registry.tool
    def nan() -> float:
        """NaN is not JSON either."""
        return float("nan")

    for name in ("weird", "nan"):
        record = await run(registry, name, {})
        assert record.success is False and record.error_kind == "invalid_output"
        assert "not JSON-serialisable" in (record.error or "")


async def test_async_handler_that_hangs_past_its_timeout() -> None:
    registry = ToolRegistry()

    @registry.tool(timeout_s=0.05)
    async def hang() -> None:
        """Never finishes."""
        await asyncio.Event().wait()

    record = await run(registry, "hang", {})
    assert record.success is False and record.error_kind == "timeout"
    assert "did not finish within 0.05 s" in (record.error or "")


async def test_sync_handler_that_hangs_past_its_timeout() -> None:
    registry = ToolRegistry()
    release = threading.Event()

    @registry.tool(timeout_s=0.05)
    def block() -> None:
        """Blocks its worker thread until released."""
        release.wait(30)

    record = await run(registry, "block", {})
    release.set()
    assert record.error_kind == "timeout"


async def test_a_sync_call_that_waits_for_a_thread_past_its_timeout_times_out() -> None:
    registry = ToolRegistry()
    release = threading.Event()

    @registry.tool(timeout_s=0.1)
    def block() -> None:
        """Blocks its worker thread until released."""
        release.wait(30)

    runner = ToolRunner(registry)
    budget = ThreadBudget(1)
    try:
        first = await runner.run(ToolCallRequest("c1", "block", {}), budget=budget)
        # The run's only thread is still held by the abandoned first call.
        second = await runner.run(ToolCallRequest("c2", "block", {}), budget=budget)
    finally:
        release.set()
        runner.shutdown()
    assert [first.error_kind, second.error_kind] == ["timeout", "timeout"]
    assert first.error == (
        "block did not finish within 0.1 s (it may still be running in its worker thread)"
    )


async def test_tool_error_kinds_pass_through() -> None:
    registry = ToolRegistry()

    @registry.tool
    def picky(name: str) -> None:
        """Fails with a chosen kind."""
        raise ToolError(f"no such thing: {name}", kind="sandbox_violation")

    record = await run(registry, "picky", {"name": "x"})
    assert record.error_kind == "sandbox_violation" and record.error == "no such thing: x"


async def test_other_values_are_wrapped_and_none_is_empty() -> None:
    registry = ToolRegistry()

    @registry.tool
    def listing() -> list[int]:
        """A list."""
        return [1, 2]

    @registry.tool
    def nothing() -> None:
        """Nothing."""

    assert (await run(registry, "listing", {})).output == {"result": [1, 2]}
    assert (await run(registry, "nothing", {})).output == {}


async def test_duration_is_measured_around_the_call() -> None:
    registry = ToolRegistry()

    @registry.tool
    def nap() -> None:
        """Sleeps 20 ms."""
        time.sleep(0.02)

    record = await run(registry, "nap", {})
    # Behaviour, not speed: the measured duration covers the handler's own sleep.
    assert record.duration_ms >= 20.0


async def test_a_tools_own_timeout_error_is_not_reported_as_ours() -> None:
    registry = ToolRegistry()

    @registry.tool
    def connect() -> None:
        """Fails like a socket that timed out."""
        raise TimeoutError("connect timed out")

    record = await run(registry, "connect", {})
    assert record.error_kind == "execution_error"
    assert record.error == "connect raised TimeoutError: connect timed out"


async def test_a_tool_calling_sys_exit_is_a_failed_record_not_the_end_of_the_loop() -> None:
    registry = ToolRegistry()

    @registry.tool
    def quits() -> None:
        """Like an argparse error inside a tool."""
        raise SystemExit(2)

    record = await run(registry, "quits", {})
    assert record.error_kind == "execution_error" and record.error == "quits called sys.exit(2)"


async def test_an_approver_that_raises_denies_the_call() -> None:
    from cleveragents.tool.policy import Authorizer

    registry = ToolRegistry()
    ran: list[int] = []

    @registry.tool(mutating=True)
    def change() -> None:
        """Changes something."""
        ran.append(1)

    async def broken(request: Any) -> Any:
        raise EOFError("terminal closed")

    authorizer = Authorizer("ask", broken, "run_1")
    record = await ToolRunner(registry).run(
        ToolCallRequest("c1", "change", {}), None, 1, authorizer
    )
    assert record.error_kind == "denied" and "EOFError" in (record.error or "")
    assert ran == []


async def test_nan_and_infinity_arguments_are_not_json() -> None:
    for raw in ('{"x": NaN}', '{"x": Infinity}', '{"x": -Infinity}'):
        request = ToolCallRouter.from_openai_tool_call(
            {"id": "c1", "function": {"name": "echo", "arguments": raw}}
        )
        record = await ToolRunner(registry_with_echo()).run(request)
        assert record.error_kind == "invalid_arguments", raw


class Level(enum.IntEnum):
    HIGH = 2


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return value


def circular() -> list[Any]:
    loop: list[Any] = []
    loop.append(loop)
    return loop


OUTPUTS: list[Any] = [
    {"n": 1, "s": "x", "f": 1.5, "b": True, "z": None, "l": [1, (2, 3)], "d": {"k": []}},
    {"big": 10**700},
    {"huge": 10**5000},
    {"nan": [1.0, float("nan")]},
    {"inf": {"x": float("-inf")}},
    {1: "int key", None: "null key", 2.5: "float key"},
    {(1, 2): "tuple key"},
    {"level": Level.HIGH, "text": type("Text", (str,), {})("sub")},
    {"set": {1, 2}},
    {"bytes": b"x"},
    {"many": list(range(1000))},
    {"deep": nested(300)},
    {"loop": circular()},
]


def test_tool_output_is_accepted_exactly_when_json_or_pydantics_json_mode_can_hold_it() -> None:
    """What json takes is kept as it is; what json has no type for (a set, bytes, a tuple
    key) gets Pydantic's JSON-mode form; anything else fails with json's own words."""
    from pydantic_core import to_jsonable_python

    converted_some = False
    for value in OUTPUTS:
        converted: Any = value
        try:
            json.dumps(value, allow_nan=False)
            expected: str | None = None
        except TypeError as exc:
            expected = str(exc)
            try:
                converted = to_jsonable_python(value, bytes_mode="base64")
                json.dumps(converted, allow_nan=False)
                expected = None
            except (TypeError, ValueError):
                pass
        except ValueError as exc:
            expected = str(exc)
        try:
            output = normalise_output("t", value)
            got: str | None = None
        except ToolFailure as failure:
            assert failure.kind == "invalid_output"
            got = failure.message
        assert got == (
            None
            if expected is None
            else f"t returned a value that is not JSON-serialisable: {expected}"
        ), value
        if got is None:
            if converted is value:
                assert output is value
            else:
                converted_some = True
                assert output == converted and json.loads(json.dumps(output)) == output
    assert converted_some


async def test_sync_calls_with_different_timeouts_each_time_out_at_their_own() -> None:
    """One timer per loop watches every sync call's deadline: a short deadline that comes
    after a long one still fires first, and calls that finish are never expired."""
    registry = ToolRegistry()
    release = threading.Event()

    @registry.tool(timeout_s=5)
    def slow() -> str:
        """Blocks until released."""
        release.wait(30)
        return "done"

    @registry.tool(timeout_s=0.05)
    def stuck() -> None:
        """Blocks its worker thread until released."""
        release.wait(30)

    @registry.tool(timeout_s=0.05)
    def quick(n: int) -> int:
        """Answers at once."""
        return n

    runner = ToolRunner(registry)
    try:
        long_call = asyncio.ensure_future(runner.run(ToolCallRequest("c1", "slow", {})))
        await asyncio.sleep(0.01)
        short = await runner.run(ToolCallRequest("c2", "stuck", {}))
        quick_ones = [
            await runner.run(ToolCallRequest(f"q{n}", "quick", {"n": n})) for n in range(50)
        ]
        # Had the short call waited for the long one's timer, that one would have expired too.
        assert not long_call.done()
        release.set()
        finished = await long_call
    finally:
        release.set()
        runner.shutdown()
    assert short.error_kind == "timeout"
    assert all(r.success and r.output == {"result": n} for n, r in enumerate(quick_ones))
    assert finished.success and finished.output == {"result": "done"}


def test_a_runner_keeps_no_finished_loop_alive() -> None:
    import gc
    import weakref

    registry = registry_with_echo()
    runner = ToolRunner(registry)
    loops: list[weakref.ref[asyncio.AbstractEventLoop]] = []

    async def once() -> None:
        loops.append(weakref.ref(asyncio.get_running_loop()))
        record = await runner.run(ToolCallRequest("c1", "echo", {"text": "hi"}))
        assert record.success

    try:
        for _ in range(3):
            asyncio.run(once())
        gc.collect()
    finally:
        runner.shutdown()
    assert all(loop() is None for loop in loops)
