"""The checkpoint hook: awaited once per iteration before the first change, on real files."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from cleveragents.tool import (
    LLMRequest,
    LLMResponse,
    ToolActorContext,
    ToolCallingRuntime,
    ToolCallRequest,
    ToolRegistry,
    ToolRunner,
)
from cleveragents.workspace import register_builtin_tools


def scripted(*turns: list[ToolCallRequest]) -> Any:
    def model(request: LLMRequest) -> LLMResponse:
        if request.iteration <= len(turns):
            return LLMResponse(tool_calls=turns[request.iteration - 1])
        return LLMResponse(text="done")

    return model


def call(call_id: str, tool: str, **arguments: Any) -> ToolCallRequest:
    return ToolCallRequest(call_id, tool, arguments)


def runtime(model: Any, registry: ToolRegistry | None = None) -> ToolCallingRuntime:
    if registry is None:
        registry = ToolRegistry()
        register_builtin_tools(registry)
    return ToolCallingRuntime(registry, ToolRunner(registry), model)


async def test_the_hook_runs_once_per_changing_iteration_before_anything_changes(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.txt").write_text("one\n")
    snapshots: list[tuple[int, dict[str, str]]] = []

    async def checkpoint(iteration: int) -> None:
        files = {p.name: p.read_text() for p in sorted(tmp_path.iterdir())}
        snapshots.append((iteration, files))

    model = scripted(
        [call("r1", "read_file", path="a.txt"), call("l1", "list_dir")],  # reads only
        [
            call("w1", "write_file", path="b.txt", content="two\n"),
            call("e1", "edit_file", path="a.txt", old_text="one", new_text="uno"),
        ],
        [call("r2", "read_file", path="b.txt")],
        [call("x1", "run_command", command="echo three > c.txt")],
    )
    context = ToolActorContext(sandbox_root=str(tmp_path))
    result = await runtime(model).arun_tool_loop("go", context, before_mutation=checkpoint)

    assert all(r.success for r in result.tool_call_history), result.tool_call_history
    assert snapshots == [
        (2, {"a.txt": "one\n"}),  # before the write and the edit of iteration 2
        (4, {"a.txt": "uno\n", "b.txt": "two\n"}),  # before the command of iteration 4
    ]
    assert (tmp_path / "c.txt").read_text() == "three\n"


async def test_a_failing_hook_stops_the_changes_of_its_iteration_and_says_why(
    tmp_path: Path,
) -> None:
    attempts: list[int] = []

    async def checkpoint(iteration: int) -> None:
        attempts.append(iteration)
        if iteration == 1:
            raise OSError("No space left on device")

    model = scripted(
        [
            call("w1", "write_file", path="new.txt", content="x"),
            call("x1", "run_command", command="touch other.txt"),
        ],
        [call("w2", "write_file", path="later.txt", content="y")],
    )
    context = ToolActorContext(sandbox_root=str(tmp_path))
    result = await runtime(model).arun_tool_loop("go", context, before_mutation=checkpoint)

    first, second, third = result.tool_call_history
    for record in (first, second):
        assert not record.success and record.error_kind == "denied"
        assert record.error is not None
        assert "saving the checkpoint before this change failed" in record.error
        assert "OSError: No space left on device" in record.error
    assert not (tmp_path / "new.txt").exists() and not (tmp_path / "other.txt").exists()
    assert attempts == [1, 2], "one attempt per iteration, shared by its calls"
    assert third.success and (tmp_path / "later.txt").read_text() == "y"
    assert result.stop_reason == "final_answer"


async def test_denied_calls_and_read_only_runs_take_no_checkpoint(tmp_path: Path) -> None:
    taken: list[int] = []

    async def checkpoint(iteration: int) -> None:
        taken.append(iteration)

    model = scripted([call("w1", "write_file", path="f.txt", content="x")])
    context = ToolActorContext(sandbox_root=str(tmp_path), automation_profile="read-only")
    result = await runtime(model).arun_tool_loop("go", context, before_mutation=checkpoint)
    assert result.tool_call_history[0].error_kind == "denied"
    assert taken == []


async def test_concurrent_code_running_calls_share_one_checkpoint() -> None:
    registry = ToolRegistry()
    started = asyncio.Event()
    running: list[str] = []

    @registry.tool(executes_code=True)
    async def probe(name: str) -> str:
        """Runs code but changes no file (so calls of one response run concurrently)."""
        running.append(name)
        return name

    taken: list[int] = []

    async def checkpoint(iteration: int) -> None:
        taken.append(iteration)
        started.set()
        await asyncio.sleep(0.01)  # the other call waits for this one save
        assert running == [], "no call may start before the checkpoint is saved"

    model = scripted([call("p1", "probe", name="a"), call("p2", "probe", name="b")])
    result = await runtime(model, registry).arun_tool_loop("go", before_mutation=checkpoint)
    assert [r.success for r in result.tool_call_history] == [True, True]
    assert taken == [1] and sorted(running) == ["a", "b"]
