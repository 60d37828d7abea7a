"""Undo in the core, in-process: the RunManager's checkpoints, restores, history and pruning.

Real files, real git, a real history database; the model is a scripted function.
"""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from cleveragents.service.errors import (
    CHECKPOINTS_UNAVAILABLE,
    NO_CHECKPOINT,
    RUN_ACTIVE,
    ServiceError,
)
from cleveragents.service.history import SCHEMA_VERSION, RunHistory
from cleveragents.service.history.schema import MIGRATIONS as _MIGRATIONS
from cleveragents.service.runs import RunManager, RunOutcome, RunRequest
from cleveragents.service.settings import RunDefaults
from cleveragents.service.undo import Undo
from cleveragents.tool import LLMRequest, LLMResponse, ToolCallRequest, ToolRegistry
from cleveragents.tool.llm import FunctionLLMCaller
from support.sinks import Sink

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def tools(gate: asyncio.Event | None = None) -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(mutating=True)
    def put(name: str, text: str, sandbox_root: str) -> dict[str, str]:
        """Write a file."""
        (Path(sandbox_root) / name).write_text(text)
        return {"put": name}

    @registry.tool
    async def hold() -> dict[str, str]:
        """Wait for the test."""
        assert gate is not None
        await gate.wait()
        return {"held": "done"}

    return registry


def script(*steps: list[ToolCallRequest]) -> Any:
    """An llm_factory playing one response per iteration, then a final answer."""

    def complete(request: LLMRequest) -> LLMResponse:
        if request.iteration <= len(steps):
            return LLMResponse(text="step", tool_calls=steps[request.iteration - 1])
        return LLMResponse(text="Done.")

    return lambda provider, model, **options: FunctionLLMCaller(complete)


def put(name: str, text: str, call_id: str = "") -> ToolCallRequest:
    return ToolCallRequest(call_id or f"put-{name}", "put", {"name": name, "text": text})


def request(sandbox: Path, run_id: str) -> RunRequest:
    return RunRequest(
        prompt="go", sandbox_root=str(sandbox), run_id=run_id, automation_profile="full-auto"
    )


async def test_a_cancelled_run_still_records_what_it_changed_and_can_be_undone(
    sandbox: Path, tmp_path: Path
) -> None:
    gate = asyncio.Event()
    with RunHistory(tmp_path / "h.sqlite3") as history:
        manager = RunManager(
            tools(gate),
            RunDefaults(),
            history,
            llm_factory=script([put("a.txt", "a")], [ToolCallRequest("h", "hold", {})]),
        )
        running = asyncio.ensure_future(manager.run(request(sandbox, "r"), Sink()))
        while not (sandbox / "a.txt").exists():
            await asyncio.sleep(0.01)
        manager.cancel("r")
        outcome = await running
        assert isinstance(outcome, RunOutcome)
        assert outcome.result.stop_reason == "cancelled"
        assert [(c.path, c.change) for c in outcome.changed_files] == [("a.txt", "added")]
        stored = history.get_run("r")
        assert stored is not None and stored.status == "cancelled"
        assert [(c.kind, c.iteration) for c in stored.checkpoints] == [
            ("iteration", 1),
            ("end", None),
        ]
        restored = await manager.restore("r")
        assert [(c.path, c.change) for c in restored.changed_files] == [("a.txt", "deleted")]
        assert list(sandbox.iterdir()) == []
        await manager.aclose()


async def test_a_run_in_a_folder_around_or_inside_blocks_a_restore(
    sandbox: Path, tmp_path: Path
) -> None:
    inner = sandbox / "inner"
    inner.mkdir()
    (tmp_path / "elsewhere").mkdir()
    with RunHistory(tmp_path / "h.sqlite3") as history:
        manager = RunManager(tools(), RunDefaults(), history, llm_factory=script([put("f", "1")]))
        await manager.run(request(sandbox, "outer"), Sink())
        undo = manager.undo
        for busy in (str(sandbox), str(inner), str(tmp_path)):
            with pytest.raises(ServiceError) as raised:
                await undo.in_thread(lambda b=busy: undo.restore("outer", active={"live": b}))
            assert raised.value.kind is RUN_ACTIVE
            assert raised.value.data == {"sandbox_root": str(sandbox), "active_run_ids": ["live"]}
        assert (sandbox / "f").read_text() == "1"
        elsewhere = {"live": str(tmp_path / "elsewhere")}
        done = await undo.in_thread(lambda: undo.restore("outer", active=elsewhere))
        assert [c.path for c in done.changed_files] == ["f"] and not (sandbox / "f").exists()
        await manager.aclose()


async def test_runs_from_before_checkpoints_existed_are_read_and_refused_clearly(
    sandbox: Path, tmp_path: Path
) -> None:
    path = tmp_path / "old.sqlite3"
    with sqlite3.connect(path) as raw:  # a history written by the previous version
        for statement in _MIGRATIONS[0]:
            raw.execute(statement)
        raw.execute("PRAGMA user_version = 1")
        raw.execute(
            "INSERT INTO runs (run_id, prompt, plan_id, sandbox_root, automation_profile, "
            "max_iterations, status, started_at, iterations, owner_host, owner_pid, "
            "owner_token) VALUES ('old', 'p', '', ?, 'ask', 5, 'finished', 1.0, 2, 'h', 1, 't')",
            (str(sandbox),),
        )
    with RunHistory(path) as history:
        with sqlite3.connect(path) as raw:
            assert raw.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        stored = history.get_run("old")
        assert stored is not None and stored.kind == "run" and stored.checkpoints == []
        assert stored.changed_files is None and stored.restored_run_id is None
        undo = Undo(history)
        with pytest.raises(ServiceError) as raised:
            undo.restore("old")
        assert raised.value.kind is NO_CHECKPOINT
        assert "before checkpoints were kept" in raised.value.message
        undo.close()


async def test_pruning_follows_the_history_and_reports_the_disk(
    sandbox: Path, tmp_path: Path
) -> None:
    with RunHistory(tmp_path / "h.sqlite3") as history:
        manager = RunManager(tools(), RunDefaults(), history, llm_factory=script([put("a", "1")]))
        await manager.run(request(sandbox, "kept"), Sink())
        await manager.run(request(sandbox, "dropped"), Sink())
        undo = manager.undo
        assert undo.disk_usage().by_sandbox[str(sandbox.resolve())] > 0
        # A run the history no longer holds (deleted by hand here) loses its checkpoints.
        with sqlite3.connect(history.path) as raw:
            raw.execute("PRAGMA foreign_keys = ON")
            raw.execute("DELETE FROM runs WHERE run_id = 'dropped'")
        pruned = await undo.in_thread(undo.prune)
        assert pruned.removed_checkpoints == 2  # its "iteration" and "end" checkpoints
        assert pruned.bytes_after <= pruned.bytes_before
        assert not undo.housekeeping_due()  # pruning counts as the day's housekeeping
        restored = await manager.restore("kept")
        assert [c.path for c in restored.changed_files] == ["a"]
        # By age: every checkpoint older than now goes, and the run says why.
        pruned = await undo.in_thread(lambda: undo.prune(time.time() + 1))
        assert pruned.removed_checkpoints >= 2
        stored = history.get_run("kept")
        assert stored is not None and stored.checkpoints == []
        assert "pruned" in (stored.checkpoint_warning or "")
        with pytest.raises(ServiceError) as raised:
            await manager.restore("kept")
        assert raised.value.kind is NO_CHECKPOINT and "pruned" in raised.value.message
        await manager.aclose()


async def test_without_a_history_runs_work_and_say_they_cannot_be_undone(sandbox: Path) -> None:
    manager = RunManager(tools(), RunDefaults(), None, llm_factory=script([put("a", "1")]))
    outcome = await manager.run(request(sandbox, "r"), Sink())
    assert (sandbox / "a").read_text() == "1" and outcome.changed_files == []
    assert "history is unavailable" in (outcome.checkpoint_warning or "")
    with pytest.raises(ServiceError) as raised:
        await manager.restore("r")
    assert raised.value.kind is CHECKPOINTS_UNAVAILABLE
    await manager.aclose()


async def test_housekeeping_runs_once_a_day_and_prunes_what_the_history_dropped(
    sandbox: Path, tmp_path: Path
) -> None:
    with RunHistory(tmp_path / "h.sqlite3") as history:
        manager = RunManager(tools(), RunDefaults(), history, llm_factory=script([put("a", "1")]))
        await manager.run(request(sandbox, "gone"), Sink())
        await manager.run(request(sandbox, "stays"), Sink())
        undo = manager.undo
        stamp = tmp_path / "checkpoints" / "last-housekeeping"
        assert undo.housekeeping_due()  # never tidied yet
        with sqlite3.connect(history.path) as raw:
            raw.execute("PRAGMA foreign_keys = ON")
            raw.execute("DELETE FROM runs WHERE run_id = 'gone'")
        done = undo.schedule_housekeeping()
        assert done is not None
        await asyncio.wrap_future(done)
        assert stamp.exists() and not undo.housekeeping_due()
        assert undo.schedule_housekeeping() is None  # not again the same day
        store = undo.store()
        assert store is not None
        assert store.checkpoints("gone") == [] and store.checkpoints("stays") != []
        await manager.aclose()
