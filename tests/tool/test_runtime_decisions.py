"""product.md's runtime decisions: concurrency, feedback, repeats, reserved keys, events, cancel."""

from __future__ import annotations

import asyncio
import enum
import json
import threading
from typing import Any

import pytest

from cleveragents.tool import (
    CancelToken,
    IterationStarted,
    LLMRequest,
    LLMResponse,
    ResponseReceived,
    RunEvent,
    RunFailed,
    RunFinished,
    RunStarted,
    TextDelta,
    ToolActorContext,
    ToolCallFinished,
    ToolCallingRuntime,
    ToolCallRequest,
    ToolRegistry,
    ToolResultsMessage,
    ToolRunner,
)
from cleveragents.tool.messages import AssistantMessage, Message, UserMessage
from cleveragents.tool.repeats import same_call
from cleveragents.tool.runtime import close_dangling_calls


def runtime_for(registry: ToolRegistry, llm: Any, **kwargs: Any) -> ToolCallingRuntime:
    return ToolCallingRuntime(registry, ToolRunner(registry), llm, **kwargs)


def script(*responses: LLMResponse) -> Any:
    """A model that gives these responses in order, then 'done'; keeps every request."""
    requests: list[LLMRequest] = []

    def llm(request: LLMRequest) -> LLMResponse:
        requests.append(request)
        if request.iteration <= len(responses):
            return responses[request.iteration - 1]
        return LLMResponse(text="done")

    llm.requests = requests  # type: ignore[attr-defined]
    return llm


def calls(*specs: tuple[str, dict[str, Any]]) -> LLMResponse:
    return LLMResponse(
        tool_calls=[ToolCallRequest(f"c{i}", name, args) for i, (name, args) in enumerate(specs)]
    )


async def test_calls_of_one_response_run_concurrently_and_keep_request_order() -> None:
    registry = ToolRegistry()
    first_started = asyncio.Event()
    second_started = asyncio.Event()

    @registry.tool
    async def first() -> str:
        """Waits for the second: deadlocks if calls run one after another."""
        first_started.set()
        await second_started.wait()
        return "first"

    @registry.tool
    async def second() -> str:
        """Waits for the first."""
        second_started.set()
        await first_started.wait()
        return "second"

    llm = script(calls(("first", {}), ("second", {})))
    result = await asyncio.wait_for(runtime_for(registry, llm).arun_tool_loop("both"), timeout=10)
    assert [r.tool_name for r in result.tool_call_history] == ["first", "second"]
    assert all(r.success for r in result.tool_call_history)
    results = llm.requests[1].messages[-1]
    assert isinstance(results, ToolResultsMessage)
    assert [r.call_id for r in results.results] == ["c0", "c1"]


async def test_records_keep_request_order_when_later_calls_finish_first() -> None:
    registry = ToolRegistry()
    release_slow = asyncio.Event()
    finished: list[str] = []

    @registry.tool
    async def slow() -> str:
        """Finishes only after fast did."""
        await release_slow.wait()
        finished.append("slow")
        return "slow"

    @registry.tool
    async def fast() -> str:
        """Finishes at once."""
        finished.append("fast")
        release_slow.set()
        return "fast"

    result = await runtime_for(registry, script(calls(("slow", {}), ("fast", {})))).arun_tool_loop(
        "go"
    )
    assert finished == ["fast", "slow"]
    assert [r.tool_name for r in result.tool_call_history] == ["slow", "fast"]


async def test_a_response_that_changes_the_workspace_runs_in_request_order() -> None:
    registry = ToolRegistry()
    files: dict[str, str] = {}

    @registry.tool(mutating=True)
    async def write(name: str) -> None:
        """Creates a file, slowly: yields to the loop before writing."""
        await asyncio.sleep(0)
        files[name] = "draft"

    @registry.tool(mutating=True)
    def edit(name: str) -> str:
        """Needs the file the earlier call creates."""
        if name not in files:
            raise FileNotFoundError(name)
        files[name] = "edited"
        return files[name]

    @registry.tool
    async def look() -> str:
        """Read-only."""
        return "seen"

    llm = script(calls(("write", {"name": "a"}), ("edit", {"name": "a"}), ("look", {})))
    result = await runtime_for(registry, llm).arun_tool_loop("go")
    assert [(r.tool_name, r.success) for r in result.tool_call_history] == [
        ("write", True),
        ("edit", True),
        ("look", True),
    ]
    assert files == {"a": "edited"}


def test_sync_tools_run_in_worker_threads_async_tools_on_the_loop() -> None:
    registry = ToolRegistry()
    threads: dict[str, str] = {}

    @registry.tool
    def blocking() -> None:
        """Sync tool."""
        threads["sync"] = threading.current_thread().name

    @registry.tool
    async def native() -> None:
        """Async tool."""
        threads["async"] = threading.current_thread().name

    result = runtime_for(registry, script(calls(("blocking", {}), ("native", {})))).run_tool_loop(
        "go"
    )
    assert all(r.success for r in result.tool_call_history)
    assert threads["sync"].startswith("cleveragents-tool")
    assert threads["async"] == threading.main_thread().name


def test_errors_go_back_to_the_model_naming_the_field() -> None:
    registry = ToolRegistry()

    @registry.tool
    def read(path: str, limit: int = 10) -> str:
        """Read."""
        return path

    llm = script(
        calls(("read", {"path": 5}), ("read", {"limit": 2}), ("read", {"path": "a", "x": 1}))
    )
    result = runtime_for(registry, llm).run_tool_loop("go")
    errors = [r.error or "" for r in result.tool_call_history]
    assert all(r.error_kind == "validation_error" for r in result.tool_call_history)
    assert "'path'" in errors[0] and "not of type 'string'" in errors[0]
    assert "missing required argument 'path'" in errors[1]
    assert "unexpected argument 'x'" in errors[2]
    fed_back = llm.requests[1].messages[-1]
    assert isinstance(fed_back, ToolResultsMessage)
    assert all(r.is_error for r in fed_back.results)
    assert fed_back.results[0].content == {"error": errors[0], "error_kind": "validation_error"}


def test_identical_calls_in_a_row_are_stopped_after_three() -> None:
    registry = ToolRegistry()
    runs: list[str] = []

    @registry.tool
    def look(path: str) -> str:
        """Look."""
        runs.append(path)
        return path

    same = calls(("look", {"path": "a"}))
    llm = script(same, same, same, same, calls(("look", {"path": "b"})), same)
    result = runtime_for(registry, llm).run_tool_loop("go")
    kinds = [r.error_kind for r in result.tool_call_history]
    assert kinds == [None, None, None, "repeated_call", None, None]
    assert runs == ["a", "a", "a", "b", "a"]
    assert "3 times in a row" in (result.tool_call_history[3].error or "")
    told = llm.requests[4].messages[-1]
    assert isinstance(told, ToolResultsMessage) and told.results[0].is_error


def test_reserved_keys_come_from_the_context_never_from_the_model() -> None:
    registry = ToolRegistry()
    received: dict[str, Any] = {}

    @registry.tool
    def where(name: str, sandbox_root: str, resource_bindings: dict[str, Any]) -> str:
        """Reports its environment."""
        received.update(sandbox_root=sandbox_root, resource_bindings=resource_bindings, name=name)
        return sandbox_root

    @registry.tool
    def plain(name: str) -> str:
        """Accepts neither reserved key."""
        return name

    schema = registry.get("where").input_schema  # type: ignore[union-attr]
    assert set(schema["properties"]) == {"name"}
    hostile = {"name": "x", "sandbox_root": "/etc", "resource_bindings": {"db": "prod"}}
    llm = script(calls(("where", hostile), ("plain", hostile)))
    context = ToolActorContext(sandbox_root="/srv/box", resource_bindings={"db": "test"})
    result = runtime_for(registry, llm).run_tool_loop("go", context=context)
    assert received == {
        "sandbox_root": "/srv/box",
        "resource_bindings": {"db": "test"},
        "name": "x",
    }
    first, second = result.tool_call_history
    assert first.success and first.inputs["sandbox_root"] == "/srv/box"
    assert second.success and second.inputs == {"name": "x"}


def test_observers_get_the_events_in_order_and_a_failing_observer_is_harmless() -> None:
    registry = ToolRegistry()

    @registry.tool
    def ping() -> str:
        """Ping."""
        return "pong"

    events: list[RunEvent] = []

    def broken(event: RunEvent) -> None:
        raise RuntimeError("observer bug")

    llm = script(LLMResponse(text="calling", tool_calls=[ToolCallRequest("c0", "ping", {})]))
    result = runtime_for(registry, llm, observers=[broken]).run_tool_loop(
        "go", observers=[events.append]
    )
    kinds = [type(e).__name__ for e in events]
    assert kinds == [
        "RunStarted",
        "IterationStarted",
        "TextDelta",
        "ResponseReceived",
        "ToolCallStarted",
        "ToolCallFinished",
        "IterationStarted",
        "TextDelta",
        "ResponseReceived",
        "RunFinished",
    ]
    assert isinstance(events[0], RunStarted) and events[0].run_id == result.run_id
    assert isinstance(events[1], IterationStarted) and events[1].iteration == 1
    assert isinstance(events[2], TextDelta) and events[2].text == "calling"
    assert (
        isinstance(events[3], ResponseReceived)
        and events[3].message.tool_calls[0].tool_name == "ping"
    )
    assert (
        isinstance(events[5], ToolCallFinished) and events[5].record is result.tool_call_history[0]
    )
    assert isinstance(events[-1], RunFinished) and events[-1].result is result


def test_a_failing_llm_emits_run_failed() -> None:
    events: list[RunEvent] = []

    def llm(request: LLMRequest) -> LLMResponse:
        raise RuntimeError("rate limited for good")

    with pytest.raises(RuntimeError):
        runtime_for(ToolRegistry(), llm).run_tool_loop("go", observers=[events.append])
    assert isinstance(events[-1], RunFailed) and "rate limited" in events[-1].error


async def test_cancel_token_returns_partial_history_with_cancelled_calls() -> None:
    registry = ToolRegistry()
    started = asyncio.Event()

    @registry.tool
    async def quick() -> str:
        """Done at once."""
        return "ok"

    @registry.tool
    async def forever() -> str:
        """Never returns."""
        started.set()
        await asyncio.Event().wait()
        return "never"

    cancel = CancelToken()
    llm = script(calls(("quick", {})), calls(("forever", {}), ("quick", {"x": 1})))
    task = asyncio.create_task(runtime_for(registry, llm).arun_tool_loop("go", cancel=cancel))
    await asyncio.wait_for(started.wait(), 10)
    cancel.cancel()
    result = await asyncio.wait_for(task, 10)
    assert result.stop_reason == "cancelled" and not result.terminated_by_limit
    history = result.tool_call_history
    assert [(r.tool_name, r.error_kind) for r in history] == [
        ("quick", None),
        ("forever", "cancelled"),
        ("quick", "validation_error"),
    ]
    # The conversation stays valid: every call of the last response has a result.
    last = result.messages[-1]
    assert isinstance(last, ToolResultsMessage) and len(last.results) == 2


async def test_cancel_token_from_another_thread_stops_a_waiting_llm_call() -> None:
    llm_started = threading.Event()

    async def llm(request: LLMRequest) -> LLMResponse:
        llm_started.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    cancel = CancelToken()

    def cancel_once_the_model_is_asked() -> None:
        llm_started.wait(10)
        cancel.cancel()

    threading.Thread(target=cancel_once_the_model_is_asked).start()
    result = await asyncio.wait_for(
        runtime_for(ToolRegistry(), llm).arun_tool_loop("go", cancel=cancel), 10
    )
    assert result.stop_reason == "cancelled" and result.iterations == 1


async def test_cancelling_the_task_records_cancelled_calls_then_raises() -> None:
    registry = ToolRegistry()
    started = asyncio.Event()

    @registry.tool
    async def forever() -> str:
        """Never returns."""
        started.set()
        await asyncio.Event().wait()
        return "never"

    events: list[RunEvent] = []
    task = asyncio.create_task(
        runtime_for(registry, script(calls(("forever", {})))).arun_tool_loop(
            "go", observers=[events.append]
        )
    )
    await asyncio.wait_for(started.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert [e.record.error_kind for e in finished] == ["cancelled"]
    assert isinstance(events[-1], RunFinished) and events[-1].result.stop_reason == "cancelled"


async def test_a_task_cancel_during_a_cancel_token_wind_down_still_records_the_end() -> None:
    """A client's cancel and a signal arriving together: the run's end is recorded once."""
    registry = ToolRegistry()
    started, winding_down, release = asyncio.Event(), asyncio.Event(), asyncio.Event()

    @registry.tool
    async def slow_to_stop() -> str:
        """Takes a moment to clean up when cancelled."""
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            winding_down.set()
            await release.wait()
            raise
        return "never"

    events: list[RunEvent] = []
    cancel = CancelToken()
    task = asyncio.create_task(
        runtime_for(registry, script(calls(("slow_to_stop", {})))).arun_tool_loop(
            "go", observers=[events.append], cancel=cancel
        )
    )
    await asyncio.wait_for(started.wait(), 10)
    cancel.cancel()
    await asyncio.wait_for(winding_down.wait(), 10)
    task.cancel()
    await asyncio.sleep(0)
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 10)
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert [e.record.error_kind for e in finished] == ["cancelled"]
    ends = [e for e in events if isinstance(e, RunFinished)]
    assert len(ends) == 1 and ends[0].result.stop_reason == "cancelled"
    assert events[-1] is ends[0]


def test_continuing_a_conversation_closes_dangling_tool_calls() -> None:
    earlier: list[Message] = [
        UserMessage("first"),
        AssistantMessage("working", (ToolCallRequest("a1", "slow", {}),)),
    ]
    repaired = close_dangling_calls(earlier)
    assert isinstance(repaired[-1], ToolResultsMessage)
    assert repaired[-1].results[0].call_id == "a1" and repaired[-1].results[0].is_error

    llm = script()
    result = runtime_for(ToolRegistry(), llm).run_tool_loop("follow-up", history=earlier)
    sent = llm.requests[0].messages
    assert [type(m).__name__ for m in sent] == [
        "UserMessage",
        "AssistantMessage",
        "ToolResultsMessage",
        "UserMessage",
    ]
    assert result.messages[:4] == sent


def test_varying_reserved_keys_does_not_get_round_the_repeat_guard() -> None:
    registry = ToolRegistry()
    runs: list[str] = []

    @registry.tool
    def look(path: str) -> str:
        """Look."""
        runs.append(path)
        return path

    llm = script(*(calls(("look", {"path": "a", "sandbox_root": f"/x{n}"})) for n in range(5)))
    result = runtime_for(registry, llm).run_tool_loop("go")
    assert runs == ["a", "a", "a"]
    assert [r.error_kind for r in result.tool_call_history][3:] == ["repeated_call"] * 2


class Level(enum.IntEnum):
    ONE = 1


ARGUMENTS: list[Any] = [
    {"n": 1},
    {"n": 1.0},
    {"n": True},
    {"n": Level.ONE},
    {"n": 0.0},
    {"n": -0.0},
    {"n": float("nan")},
    {"n": [1, 2]},
    {"n": (1, 2)},
    {"n": [1, (2,)]},
    {"n": {"a": 1, "b": [None, "x"]}},
    {"n": {"b": [None, "x"], "a": 1}},
    {"n": {"a": 1}},
    {1: "one"},
    {"1": "one"},
    {"n": 1, "sandbox_root": "/x"},
    {"n": 1, "resource_bindings": {"r": "y"}},
    {"n": 1, "m": 2},
    {"m": 2, "n": 1},
    {"n": {1: "x", "1": "y"}},
    {"n": {"1": "y", 1: "x"}},
    {"n": {1}},
    {},
    "n",
    None,
    ["n"],
]


def test_the_repeat_guard_compares_arguments_as_json() -> None:
    def as_json(arguments: Any) -> str:
        if isinstance(arguments, dict):
            arguments = {
                k: v for k, v in arguments.items() if k not in ("sandbox_root", "resource_bindings")
            }
        try:
            return json.dumps(arguments, sort_keys=True, default=repr)
        except (TypeError, ValueError):
            return repr(arguments)

    for first in ARGUMENTS:
        for second in ARGUMENTS:
            expected = as_json(first) == as_json(second)
            got = same_call(ToolCallRequest("a", "t", first), ToolCallRequest("b", "t", second))
            assert got == expected, (first, second)
    assert not same_call(ToolCallRequest("a", "t", {}), ToolCallRequest("b", "u", {}))


def test_the_runner_must_serve_the_runtimes_registry() -> None:
    with pytest.raises(ValueError, match="same ToolRegistry"):
        ToolCallingRuntime(ToolRegistry(), ToolRunner(ToolRegistry()), script())


async def test_a_runs_abandoned_sync_tools_cannot_take_every_worker_thread() -> None:
    registry = ToolRegistry()
    release = threading.Event()
    blocked = threading.Semaphore(0)

    @registry.tool
    def stuck(n: int) -> None:
        """Blocks its thread until the test releases it."""
        blocked.release()
        release.wait(30)

    @registry.tool
    def quick() -> str:
        """Done at once."""
        return "ok"

    # A shared pool of 4 threads; each run may hold 2 of them.
    runner = ToolRunner(registry, max_workers=4)

    def llm(request: LLMRequest) -> LLMResponse:
        if request.messages[0].text == "hang" and request.iteration == 1:  # type: ignore[union-attr]
            return LLMResponse(
                tool_calls=[ToolCallRequest(f"s{n}", "stuck", {"n": n}) for n in range(6)]
            )
        if request.messages[0].text == "quick" and request.iteration == 1:  # type: ignore[union-attr]
            return LLMResponse(tool_calls=[ToolCallRequest("q", "quick", {})])
        return LLMResponse(text="done")

    runtime = ToolCallingRuntime(registry, runner, llm, max_threads_per_run=2)
    try:
        cancel = CancelToken()
        hung = asyncio.create_task(runtime.arun_tool_loop("hang", cancel=cancel))
        for _ in range(2):  # both of its threads are busy
            await asyncio.to_thread(blocked.acquire, True, 10)
        cancel.cancel()
        first = await asyncio.wait_for(hung, 10)
        assert [r.error_kind for r in first.tool_call_history] == ["cancelled"] * 6
        # Its two threads are still stuck; another run still gets a thread.
        second = await asyncio.wait_for(runtime.arun_tool_loop("quick"), 10)
        assert [r.output for r in second.tool_call_history] == [{"result": "ok"}]
    finally:
        release.set()
        runner.shutdown()
