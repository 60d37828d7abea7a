"""The queued history: writes off the caller's thread, waiting out another process's lock."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import pytest

from cleveragents.service.history import RunHistory
from cleveragents.service.history_queue import QueuedHistory
from cleveragents.tool import (
    FunctionLLMCaller,
    LLMRequest,
    LLMResponse,
    ToolCallingRuntime,
    ToolCallRequest,
    ToolRegistry,
    ToolRunner,
)
from cleveragents.tool.events import ToolCallFinished
from cleveragents.tool.records import ToolCallRunResult
from support.sqlite_lock import WriteLockHolder


def counting_runtime(calls: int) -> ToolCallingRuntime:
    """A model that asks for `count(n=i)` once per iteration, `calls` times, then answers."""
    registry = ToolRegistry()

    @registry.tool
    def count(n: int) -> dict[str, int]:
        """Say the number back."""
        return {"n": n}

    def llm(request: LLMRequest) -> LLMResponse:
        if request.iteration <= calls:
            call = ToolCallRequest(f"c{request.iteration}", "count", {"n": request.iteration})
            return LLMResponse(text=f"step {request.iteration}", tool_calls=[call])
        return LLMResponse(text="counted")

    return ToolCallingRuntime(registry, ToolRunner(registry), FunctionLLMCaller(llm), calls + 1)


async def run_while_locked(queued: QueuedHistory, run_id: str) -> ToolCallRunResult:
    result = await counting_runtime(4).arun_tool_loop("count", observers=[queued], run_id=run_id)
    assert result.stop_reason == "final_answer" and len(result.tool_call_history) == 4
    # Nothing could be written yet, and a read does not wait for the other process's lock.
    assert queued.pending > 0
    assert not queued.history.has_run(run_id)
    return result


async def test_a_run_finishes_under_another_processs_lock_and_every_record_follows(
    tmp_path: Path,
) -> None:
    path = tmp_path / "h.sqlite3"
    with RunHistory(path) as history:
        queued = QueuedHistory(history, retry_pause_s=0.05)
        with WriteLockHolder(path):
            result = await run_while_locked(queued, "r1")
        stored = await queued.get_run("r1")  # waits for the queued writes, now possible
        assert stored is not None and stored.status == "finished"
        assert [r.call_id for r in stored.records] == ["c1", "c2", "c3", "c4"]
        assert [r.output for r in stored.records] == [r.output for r in result.tool_call_history]
        assert stored.iterations == 5 and stored.content == "counted"
        assert queued.pending == 0
        assert queued.close()


async def test_closing_waits_for_writes_held_up_by_a_lock(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite3"
    with RunHistory(path) as history:
        queued = QueuedHistory(history, retry_pause_s=0.05)
        holder = WriteLockHolder(path)
        try:
            await run_while_locked(queued, "r1")
            closed: list[bool] = []
            closing = threading.Thread(target=lambda: closed.append(queued.close(timeout=60)))
            closing.start()
            # close() waits for the writes (they cannot be done while the lock is held).
            assert not closed
        finally:
            holder.release()
        closing.join(60)
        assert closed == [True]
        stored = history.get_run("r1")
        assert stored is not None and stored.status == "finished" and len(stored.records) == 4


async def test_a_write_that_cannot_succeed_is_skipped_and_later_ones_go_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with RunHistory(tmp_path / "h.sqlite3") as history:
        queued = QueuedHistory(history)

        def broken(history: RunHistory) -> None:
            history._execute("INSERT INTO no_such_table VALUES (1)", ())

        queued.submit(broken)
        caplog.set_level(logging.ERROR, "cleveragents.service.history_queue")
        result = await counting_runtime(1).arun_tool_loop("count", observers=[queued], run_id="r")
        stored = await queued.get_run("r")
        assert stored is not None and [r.call_id for r in stored.records] == ["c1"]
        assert result.content == "counted"
        assert "a write failed and is skipped" in caplog.text
        assert queued.close()


async def test_with_the_database_free_each_record_is_stored_before_the_next_observer_sees_it(
    tmp_path: Path,
) -> None:
    with RunHistory(tmp_path / "h.sqlite3") as history:
        queued = QueuedHistory(history)
        stored_when_seen: list[bool] = []

        def client(event: object) -> None:  # what a front does next: notify its client
            if isinstance(event, ToolCallFinished):
                stored = history.get_run("r")
                stored_when_seen.append(
                    stored is not None
                    and event.record.call_id in [r.call_id for r in stored.records]
                )

        await counting_runtime(3).arun_tool_loop("count", observers=[queued, client], run_id="r")
        assert stored_when_seen == [True, True, True]
        assert queued.pending == 0  # nothing went through the writer thread
        assert queued.close()


async def test_a_lock_taken_just_before_the_run_ends_holds_its_end_back_and_loses_nothing(
    tmp_path: Path,
) -> None:
    path = tmp_path / "h.sqlite3"
    with RunHistory(path) as history:
        queued = QueuedHistory(history, retry_pause_s=0.05)
        holder: list[WriteLockHolder] = []

        def lock_before_the_end(event: object) -> None:
            if isinstance(event, ToolCallFinished) and event.record.call_id == "c2":
                holder.append(WriteLockHolder(path))

        try:
            await counting_runtime(2).arun_tool_loop(
                "count", observers=[lock_before_the_end, queued], run_id="r"
            )
            assert queued.pending > 0  # the last record and the run's end wait in memory
            stored = history.get_run("r")
            assert stored is not None and stored.status == "running"
        finally:
            for held in holder:
                held.release()
        assert queued.close(timeout=60)
        stored = history.get_run("r")
        assert stored is not None and stored.status == "finished"
        assert [r.call_id for r in stored.records] == ["c1", "c2"]
