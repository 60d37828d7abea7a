"""A snapshot's time is its own: a checkpoint is an event of its own, not part of a tool's time.

The real runtime and RunManager, real checkpoints of real files in a temp folder, a scripted
model. No timing asserts: the tests compare intervals measured on one clock (a record's
duration lies within the time after the snapshot ended) and wait for events.
"""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from cleveragents.service.history import RunHistory
from cleveragents.service.runs import RunManager, RunOutcome, RunRequest, RunSink
from cleveragents.service.settings import RunDefaults
from cleveragents.tool import (
    LLMRequest,
    LLMResponse,
    ToolActorContext,
    ToolCallingRuntime,
    ToolCallRequest,
    ToolRegistry,
    ToolRunner,
)
from cleveragents.tool import checkpoint as checkpoint_module
from cleveragents.tool.checkpoint import SnapshotReport
from cleveragents.tool.events import (
    RunEvent,
    RunObserver,
    SnapshotProgress,
    SnapshotTaken,
    ToolCallFinished,
    ToolCallStarted,
)
from cleveragents.tool.llm import FunctionLLMCaller
from cleveragents.tool.policy import ApprovalDecision, ApprovalRequest
from cleveragents.tool.records import ToolCallRunResult
from cleveragents.workspace import register_builtin_tools

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

Seen = list[tuple[float, RunEvent]]


class Sink(RunSink):
    approvals = False

    def __init__(self, seen: Seen) -> None:
        self.seen = seen

    def run_observer(self, plan: Any) -> RunObserver:
        return lambda event: self.seen.append((time.perf_counter(), event))

    async def ask_approval(self, request: ApprovalRequest) -> ApprovalDecision:
        return "deny"

    async def ask_trust(self, request: Any) -> bool | None:
        return None


def write_then_answer(request: LLMRequest) -> LLMResponse:
    if request.iteration == 1:
        call = ToolCallRequest("w", "write_file", {"path": "n.txt", "content": "x"})
        return LLMResponse(tool_calls=[call])
    return LLMResponse(text="Done.")


async def write_run(folder: Path, observe: RunObserver, hook: Any) -> ToolCallRunResult:
    """One write_file through the real runtime, with `hook` as its checkpoint hook."""
    registry = ToolRegistry()
    register_builtin_tools(registry)
    runtime = ToolCallingRuntime(
        registry, ToolRunner(registry), FunctionLLMCaller(write_then_answer)
    )
    context = ToolActorContext(sandbox_root=str(folder), automation_profile="full-auto")
    return await runtime.arun_tool_loop("go", context, observers=[observe], before_mutation=hook)


async def test_a_write_needing_a_first_snapshot_reports_its_own_time_and_a_snapshot_event(
    tmp_path: Path,
) -> None:
    sandbox = tmp_path / "tree"
    for i in range(2000):
        folder = sandbox / f"pkg{i // 100:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"m{i % 100:02d}.py").write_text(f"N = {i}\n")
    registry = ToolRegistry()
    register_builtin_tools(registry)
    seen: Seen = []
    with RunHistory(tmp_path / "h.sqlite3") as history:
        manager = RunManager(
            registry,
            RunDefaults(),
            history,
            llm_factory=lambda provider, model, **options: FunctionLLMCaller(write_then_answer),
        )
        request = RunRequest(
            prompt="go", sandbox_root=str(sandbox), run_id="r", automation_profile="full-auto"
        )
        outcome = await manager.run(request, Sink(seen))
        await manager.aclose()
    assert isinstance(outcome, RunOutcome)
    [record] = outcome.result.tool_call_history
    assert record.success, record
    events = [event for _at, event in seen]
    snapshots = [e for e in events if isinstance(e, SnapshotTaken)]
    # One snapshot, before the write's first change, holding every file then there.
    assert [(s.iteration, s.files, s.error) for s in snapshots] == [(1, 2000, None)]
    started = next(i for i, e in enumerate(events) if isinstance(e, ToolCallStarted))
    taken = events.index(snapshots[0])
    finished = next(i for i, e in enumerate(events) if isinstance(e, ToolCallFinished))
    assert started < taken < finished
    # The write's duration is its own: it fits in the time after the snapshot ended (it
    # would not if the snapshot were counted in it).
    snapshot_at, finished_at = seen[taken][0], seen[finished][0]
    assert record.duration_ms <= (finished_at - snapshot_at) * 1000.0
    assert snapshots[0].duration_ms > 0


async def test_a_snapshot_past_its_first_interval_shows_progress_until_it_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The interval is shortened so the test does not wait a second; the hook waits for the
    # progress event itself, so nothing depends on how fast this machine is.
    monkeypatch.setattr(checkpoint_module, "SNAPSHOT_PROGRESS_INTERVAL_S", 0.01)
    progressed = asyncio.Event()
    events: list[RunEvent] = []

    def observe(event: RunEvent) -> None:
        events.append(event)
        if isinstance(event, SnapshotProgress):
            progressed.set()

    async def slow_snapshot(iteration: int) -> SnapshotReport:
        await progressed.wait()
        return SnapshotReport(files=7)

    result = await write_run(tmp_path, observe, slow_snapshot)
    assert result.tool_call_history[0].success
    kinds = [type(e).__name__ for e in events if isinstance(e, SnapshotProgress | SnapshotTaken)]
    assert kinds[0] == "SnapshotProgress" and kinds[-1] == "SnapshotTaken"
    assert "SnapshotTaken" not in kinds[:-1]
    taken = [e for e in events if isinstance(e, SnapshotTaken)]
    assert [(t.iteration, t.files) for t in taken] == [(1, 7)]
    progress = [e for e in events if isinstance(e, SnapshotProgress)]
    assert all(p.iteration == 1 for p in progress)
    assert (tmp_path / "n.txt").read_text() == "x"


async def test_a_failed_snapshot_is_an_event_with_its_error_and_the_change_is_denied(
    tmp_path: Path,
) -> None:
    events: list[RunEvent] = []

    async def broken(iteration: int) -> None:
        raise OSError("No space left on device")

    result = await write_run(tmp_path, events.append, broken)
    [record] = result.tool_call_history
    assert record.error_kind == "denied" and not (tmp_path / "n.txt").exists()
    [taken] = [e for e in events if isinstance(e, SnapshotTaken)]
    assert taken.error == "OSError: No space left on device" and taken.files is None
