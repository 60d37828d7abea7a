"""RunManager in-process: the run logic without a process or a wire in between."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from cleveragents.daemon import runs
from cleveragents.protocol import wire
from cleveragents.service.client_tools import ClientTool
from cleveragents.service.errors import ErrorKind, ServiceError
from cleveragents.service.history import RunHistory
from cleveragents.service.runs import RunManager
from cleveragents.service.settings import RunDefaults
from cleveragents.tool import LLMRequest, LLMResponse, ToolCallRequest, ToolRegistry
from cleveragents.tool.llm import FunctionLLMCaller


class RecordingClient:
    """Stands in for the editor: keeps notifications, answers requests with `answer`."""

    def __init__(self, approvals: bool = False, answer: Any = None) -> None:
        self.approvals = approvals
        self.trust = False
        self.client_tools: tuple[ClientTool, ...] = ()
        self.answer = answer
        self.sent: list[tuple[str, Any]] = []
        self.asked: list[tuple[str, Any]] = []

    def notify(self, method: str, params: Any) -> None:
        self.sent.append((method, params))

    async def request(self, method: str, params: Any) -> Any:
        self.asked.append((method, params))
        if isinstance(self.answer, asyncio.Future):
            return await self.answer
        return self.answer


def scripted(*responses: LLMResponse) -> Any:
    """An llm_factory whose callers play `responses`, one per iteration."""

    def complete(request: LLMRequest) -> LLMResponse:
        return responses[request.iteration - 1]

    def factory(provider: str, model: str | None, **options: Any) -> FunctionLLMCaller:
        factory.calls.append((provider, model, options))  # type: ignore[attr-defined]
        return FunctionLLMCaller(complete)

    factory.calls = []  # type: ignore[attr-defined]
    return factory


def registry() -> ToolRegistry:
    tools = ToolRegistry()

    @tools.tool
    def echo(text: str) -> dict[str, str]:
        """Say it back."""
        return {"text": text}

    @tools.tool(mutating=True)
    def touch(name: str, sandbox_root: str) -> dict[str, str]:
        """Create an empty file."""
        (Path(sandbox_root) / name).write_text("")
        return {"touched": name}

    return tools


def two_steps(tool: str = "echo", **arguments: Any) -> Any:
    return scripted(
        LLMResponse(text="Calling.", tool_calls=[ToolCallRequest("c1", tool, arguments)]),
        LLMResponse(text="Done."),
    )


def params(sandbox: Path, **extra: Any) -> wire.RunParams:
    return wire.RunParams(prompt="go", sandbox_root=str(sandbox), **extra)


async def test_a_run_streams_numbered_notifications_and_returns_the_result(
    sandbox: Path, tmp_path: Path
) -> None:
    with RunHistory(tmp_path / "h.sqlite3") as history:
        manager = RunManager(registry(), RunDefaults(), history, llm_factory=two_steps(text="hi"))
        client = RecordingClient()
        result = await runs.run(manager, params(sandbox, run_id="r1"), client)
        assert (result.run_id, result.content, result.stop_reason) == (
            "r1",
            "Done.",
            "final_answer",
        )
        assert [r.output for r in result.tool_call_history] == [{"text": "hi"}]
        assert [p["seq"] for _, p in client.sent] == list(range(1, len(client.sent) + 1))
        assert client.sent[0][0] == "cleveragents/runStarted"
        assert client.sent[-1][0] == "cleveragents/runFinished"
        # The history is written on a thread of its own; a read waits for what is queued.
        stored = await manager.get_run("r1")
        assert [r.call_id for r in stored.records] == ["c1"]
        await manager.aclose()


async def test_settings_resolve_params_then_defaults(sandbox: Path) -> None:
    factory = two_steps(text="x")
    defaults = RunDefaults(
        provider="replay",
        model="m-default",
        base_url="http://default",
        replay_script="/default.json",
        max_iterations=7,
    )
    manager = RunManager(registry(), defaults, None, llm_factory=factory)
    client = RecordingClient()
    await runs.run(manager, params(sandbox), client)
    await runs.run(
        manager,
        params(
            sandbox,
            provider="openai",
            model="m-run",
            base_url="http://run",
            max_tokens=99,
            prompt_caching=False,
        ),
        client,
    )
    assert factory.calls == [
        (
            "replay",
            "m-default",
            {"base_url": "http://default", "script": "/default.json", "cache": True},
        ),
        (
            "openai",
            "m-run",
            {"base_url": "http://run", "script": "/default.json", "max_tokens": 99, "cache": False},
        ),
    ]
    started = [p for m, p in client.sent if m == "cleveragents/runStarted"]
    assert [s["maxIterations"] for s in started] == [7, 7]
    await manager.aclose()


async def test_a_file_uri_sandbox_root_is_accepted(sandbox: Path) -> None:
    manager = RunManager(registry(), RunDefaults(), None, llm_factory=two_steps(text="x"))
    uri = sandbox.resolve().as_uri()
    result = await runs.run(
        manager, wire.RunParams(prompt="go", sandbox_root=uri), RecordingClient()
    )
    assert result.stop_reason == "final_answer"
    await manager.aclose()


async def test_an_unanswered_approval_times_out_as_a_denial(sandbox: Path) -> None:
    never: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    manager = RunManager(
        registry(),
        RunDefaults(approval_timeout_s=0.05),
        None,
        llm_factory=two_steps("touch", name="f"),
    )
    client = RecordingClient(approvals=True, answer=never)
    result = await runs.run(manager, params(sandbox), client)
    assert [m for m, _ in client.asked] == ["cleveragents/approveToolCall"]
    assert result.tool_call_history[0].error_kind == "denied"
    assert not (sandbox / "f").exists()
    await manager.aclose()


async def test_cancel_stops_only_the_named_run(sandbox: Path) -> None:
    gate = asyncio.Event()

    async def slow(request: LLMRequest) -> LLMResponse:
        await gate.wait()
        return LLMResponse(text="late")

    def factory(provider: str, model: str | None, **options: Any) -> FunctionLLMCaller:
        return FunctionLLMCaller(slow)

    manager = RunManager(registry(), RunDefaults(), None, llm_factory=factory)
    client = RecordingClient()
    first = asyncio.ensure_future(runs.run(manager, params(sandbox, run_id="a"), client))
    second = asyncio.ensure_future(runs.run(manager, params(sandbox, run_id="b"), client))
    while sorted(manager.active_run_ids) != ["a", "b"]:
        await asyncio.sleep(0)
    assert manager.cancel("a") is True
    assert (await first).stop_reason == "cancelled"
    assert manager.active_run_ids == ["b"] and not second.done()
    assert manager.cancel("nope") is False
    gate.set()
    assert (await second).content == "late"
    assert await manager.wait_idle(5)
    await manager.aclose()


async def test_validation_collects_every_problem(sandbox: Path) -> None:
    manager = RunManager(registry(), RunDefaults(), None, llm_factory=two_steps(text="x"))
    with pytest.raises(ServiceError) as raised:
        runs.plan(
            manager,
            wire.RunParams(
                prompt=" ",
                sandbox_root="relative",
                max_iterations=0,
                tools=["echo", "ghost"],
                run_id="bad id!",
            ),
        )
    assert raised.value.kind is ErrorKind.INVALID_PARAMS
    assert [p.split(":")[0] for p in raised.value.data["problems"]] == [
        "params.prompt",
        "params.sandboxRoot",
        "params.maxIterations",
        "params.runId",
        "params.tools[1]",
    ]
    await manager.aclose()


async def test_without_a_history_runs_still_work_and_reads_are_empty(sandbox: Path) -> None:
    manager = RunManager(registry(), RunDefaults(), None, llm_factory=two_steps(text="x"))
    await runs.run(manager, params(sandbox, run_id="r"), RecordingClient())
    assert (await runs.list_runs(manager, wire.RunsParams())).runs == []
    with pytest.raises(ServiceError) as raised:
        await runs.get_run(manager, wire.GetRunParams(run_id="r"))
    assert raised.value.kind is ErrorKind.RUN_NOT_FOUND
    with pytest.raises(ServiceError) as continued:
        await runs.run(manager, params(sandbox, continue_from="r"), RecordingClient())
    assert continued.value.kind is ErrorKind.RUN_NOT_FOUND
    await manager.aclose()


async def test_a_tool_subset_is_all_the_model_is_offered(sandbox: Path) -> None:
    offered: list[list[str]] = []

    def complete(request: LLMRequest) -> LLMResponse:
        offered.append([t.name for t in request.tools])
        return LLMResponse(text="ok")

    def factory(provider: str, model: str | None, **options: Any) -> FunctionLLMCaller:
        return FunctionLLMCaller(complete)

    manager = RunManager(registry(), RunDefaults(), None, llm_factory=factory)
    await runs.run(manager, params(sandbox, tools=["touch"]), RecordingClient())
    await runs.run(manager, params(sandbox), RecordingClient())
    assert offered == [["touch"], ["echo", "touch"]]
    await manager.aclose()
