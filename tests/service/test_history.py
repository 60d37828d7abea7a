"""Run history: real runs observed into real SQLite files, read back, crashed and continued."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from cleveragents.service.history import (
    INTERRUPTED_ERROR,
    SCHEMA_VERSION,
    RunHistory,
    default_history_path,
    owner_gone,
    process_start_key,
)
from cleveragents.tool import (
    AssistantMessage,
    CancelToken,
    FunctionLLMCaller,
    LLMRequest,
    LLMResponse,
    Message,
    ToolActorContext,
    ToolCallingRuntime,
    ToolCallRequest,
    ToolError,
    ToolRegistry,
    ToolResultsMessage,
    ToolRunner,
    Usage,
    UserMessage,
)
from cleveragents.tool.runtime import close_dangling_calls
from cleveragents.tool.serialization import to_data


def make_runtime(
    llm: Any, registry: ToolRegistry, history: RunHistory, max_iterations: int = 10
) -> ToolCallingRuntime:
    return ToolCallingRuntime(
        registry,
        ToolRunner(registry),
        FunctionLLMCaller(llm),
        max_iterations,
        observers=[history],
    )


def last_results(request: LLMRequest) -> dict[str, dict[str, Any]]:
    """The tool results the model was just given, by tool name."""
    message = request.messages[-1]
    assert isinstance(message, ToolResultsMessage)
    return {r.tool_name: r.content for r in message.results}


def arithmetic_registry() -> ToolRegistry:
    registry = ToolRegistry()
    gates: dict[str, asyncio.Event] = {}

    def gate(name: str) -> asyncio.Event:
        return gates.setdefault(name, asyncio.Event())

    @registry.tool
    def add(a: int, b: int) -> dict[str, int]:
        """Add two integers."""
        return {"sum": a + b}

    @registry.tool
    async def wait_for(name: str) -> dict[str, str]:
        """Wait until `release` opens the named gate."""
        await gate(name).wait()
        return {"opened": name}

    @registry.tool
    async def release(name: str) -> dict[str, str]:
        """Open the named gate."""
        gate(name).set()
        return {"released": name}

    @registry.tool
    def divide(a: float, b: float) -> float:
        """Divide a by b."""
        if b == 0:
            raise ToolError("cannot divide by zero")
        return a / b

    return registry


def every_call_answered(messages: list[Message]) -> bool:
    pending: set[str] = set()
    for message in messages:
        if isinstance(message, ToolResultsMessage):
            pending -= {r.call_id for r in message.results}
        elif pending:
            return False
        if isinstance(message, AssistantMessage):
            pending = {c.call_id for c in message.tool_calls}
    return not pending


async def test_full_run_is_stored_and_read_back(tmp_path: Path) -> None:
    db = tmp_path / "nested" / "folder" / "history.sqlite3"
    history = RunHistory(db)

    def llm(request: LLMRequest) -> LLMResponse:
        usage = Usage(input_tokens=10 * request.iteration, output_tokens=request.iteration)
        if request.iteration == 1:
            # wait_for finishes after release: completion order differs from request order.
            return LLMResponse(
                text="Working on it.",
                tool_calls=[
                    ToolCallRequest("c1", "wait_for", {"name": "g"}),
                    ToolCallRequest("c2", "release", {"name": "g"}),
                    ToolCallRequest("c3", "add", {"a": 2, "b": 3}),
                    ToolCallRequest("c4", "divide", {"a": 1, "b": 0}),
                ],
                usage=usage,
            )
        total = last_results(request)["add"]["sum"]
        return LLMResponse(text=f"The sum is {total}.", usage=usage)

    runtime = make_runtime(llm, arithmetic_registry(), history)
    context = ToolActorContext(
        plan_id="plan-7", sandbox_root=str(tmp_path), automation_profile="auto-edit"
    )
    result = await runtime.arun_tool_loop("Add 2 and 3.", context)

    # Stored as they completed, read back in request order.
    with sqlite3.connect(db) as raw:
        arrival = [name for (name,) in raw.execute("SELECT tool_name FROM tool_calls ORDER BY seq")]
    assert arrival.index("release") < arrival.index("wait_for")

    history.close()
    reopened = RunHistory(db)
    stored = reopened.get_run(result.run_id)
    assert stored is not None
    assert stored.records == result.tool_call_history
    assert [r.tool_name for r in stored.records] == ["wait_for", "release", "add", "divide"]
    assert stored.records[3].error_kind == "execution_error"
    assert stored.messages == result.messages
    assert reopened.conversation(result.run_id) == result.messages
    assert stored.status == "finished"
    assert stored.content == result.content == "The sum is 5."
    assert stored.stop_reason == "final_answer"
    assert stored.usage == result.usage == Usage(30, 3)
    assert stored.iterations == result.iterations == 2
    assert (stored.plan_id, stored.sandbox_root) == ("plan-7", str(tmp_path))
    assert (stored.automation_profile, stored.max_iterations) == ("auto-edit", 10)
    assert stored.prompt == "Add 2 and 3."
    assert stored.finished_at is not None and stored.finished_at >= stored.started_at
    assert stored.error is None and stored.continued_from is None

    data = json.loads(json.dumps(to_data(stored)))
    assert data["records"] == to_data(result.tool_call_history)
    assert data["status"] == "finished" and data["usage"] == {
        "input_tokens": 30,
        "output_tokens": 3,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
    }
    assert data["tool_call_count"] == 4

    [summary] = reopened.list_runs()
    assert summary.run_id == result.run_id
    assert summary.tool_call_count == 4 and summary.status == "finished"
    assert reopened.get_run("no-such-run") is None
    with pytest.raises(KeyError):
        reopened.conversation("no-such-run")
    reopened.close()


async def test_database_is_wal_and_versioned(tmp_path: Path) -> None:
    db = tmp_path / "h.sqlite3"
    RunHistory(db).close()
    with sqlite3.connect(db) as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert raw.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        raw.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(RuntimeError, match="schema version"):
        RunHistory(db)


async def test_reopening_keeps_runs_and_does_not_migrate_again(tmp_path: Path) -> None:
    db = tmp_path / "h.sqlite3"
    with RunHistory(db) as history:
        runtime = make_runtime(lambda r: LLMResponse(text="hi"), ToolRegistry(), history)
        first = await runtime.arun_tool_loop("hello")
    with RunHistory(db) as history:
        assert [r.run_id for r in history.list_runs()] == [first.run_id]


async def test_cancelled_run_is_stored_as_cancelled(tmp_path: Path) -> None:
    history = RunHistory(tmp_path / "h.sqlite3")
    cancel = CancelToken()
    registry = ToolRegistry()

    @registry.tool
    async def stall() -> dict[str, str]:
        """Ask for the run to be cancelled, then wait forever."""
        cancel.cancel()
        await asyncio.Event().wait()
        return {}

    def llm(request: LLMRequest) -> LLMResponse:
        if request.iteration == 1:
            return LLMResponse(text="one", tool_calls=[ToolCallRequest("a", "stall", {})])
        raise AssertionError("a cancelled run must not call the model again")

    result = await make_runtime(llm, registry, history).arun_tool_loop("stall", cancel=cancel)
    stored = history.get_run(result.run_id)
    assert stored is not None
    assert result.stop_reason == "cancelled"
    assert stored.status == "cancelled" and stored.stop_reason == "cancelled"
    assert stored.records == result.tool_call_history
    assert [r.error_kind for r in stored.records] == ["cancelled"]
    assert stored.messages == result.messages
    assert stored.content == result.content == "one"


async def test_run_stopped_by_the_iteration_limit_is_stored_as_limit(tmp_path: Path) -> None:
    history = RunHistory(tmp_path / "h.sqlite3")

    def llm(request: LLMRequest) -> LLMResponse:
        n = request.iteration
        return LLMResponse(
            text=f"step {n}", tool_calls=[ToolCallRequest(f"c{n}", "add", {"a": n, "b": n})]
        )

    result = await make_runtime(
        llm, arithmetic_registry(), history, max_iterations=3
    ).arun_tool_loop("keep adding")
    stored = history.get_run(result.run_id)
    assert stored is not None and result.terminated_by_limit
    assert stored.status == "limit" and stored.iterations == 3
    assert [r.output for r in stored.records] == [{"sum": 2}, {"sum": 4}, {"sum": 6}]
    assert stored.records == result.tool_call_history
    assert stored.messages == result.messages


async def test_run_whose_model_raises_is_stored_as_failed(tmp_path: Path) -> None:
    history = RunHistory(tmp_path / "h.sqlite3")

    def llm(request: LLMRequest) -> LLMResponse:
        if request.iteration == 1:
            return LLMResponse(tool_calls=[ToolCallRequest("c1", "add", {"a": 1, "b": 1})])
        raise ConnectionError("provider unreachable")

    with pytest.raises(ConnectionError):
        await make_runtime(llm, arithmetic_registry(), history).arun_tool_loop(
            "add", run_id="r-fail"
        )
    stored = history.get_run("r-fail")
    assert stored is not None
    assert stored.status == "failed"
    assert (stored.error, stored.error_type) == ("provider unreachable", "ConnectionError")
    assert stored.iterations == 2 and stored.finished_at is not None
    assert [r.output for r in stored.records] == [{"sum": 2}]


CHILD_SCRIPT = textwrap.dedent(
    """
    import asyncio
    import sys
    from pathlib import Path

    from cleveragents.service.history import RunHistory
    from cleveragents.tool import (
        LLMRequest, LLMResponse, ToolCallingRuntime, ToolCallRequest, ToolRegistry, ToolRunner,
    )

    db, marker = sys.argv[1], Path(sys.argv[2])
    registry = ToolRegistry()

    @registry.tool
    def square(n: int) -> dict:
        return {"n": n, "square": n * n}

    @registry.tool(timeout_s=3600)
    async def hang() -> dict:
        marker.write_text("hanging")
        await asyncio.Event().wait()
        return {}

    def llm(request: LLMRequest) -> LLMResponse:
        n = request.iteration
        if n <= 2:
            call = ToolCallRequest(f"c{n}", "square", {"n": n})
            return LLMResponse(text=f"square {n}", tool_calls=[call])
        if n == 3:
            return LLMResponse(text="square 3 and hang", tool_calls=[
                ToolCallRequest("c3", "square", {"n": 3}),
                ToolCallRequest("c4", "hang", {}),
            ])
        raise AssertionError("the run hangs in iteration 3")

    history = RunHistory(db)
    runtime = ToolCallingRuntime(registry, ToolRunner(registry), llm, observers=[history])
    asyncio.run(runtime.arun_tool_loop("square 1, 2 and 3", run_id="crashed-run"))
    """
)


def wait_until(condition: Any, child: subprocess.Popen[bytes], what: str) -> None:
    # A deadline only so a broken child fails the test instead of hanging it.
    deadline = time.monotonic() + 60
    while not condition():
        if child.poll() is not None:
            raise AssertionError(
                f"child exited early: {child.stderr.read().decode() if child.stderr else ''}"
            )
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


@contextmanager
def hanging_child(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], RunHistory]]:
    """A child process whose run `crashed-run` hangs in its third iteration, and a history
    of our own on the same file that has seen its three records; both ended on leaving."""
    db = tmp_path / "history.sqlite3"
    marker = tmp_path / "hanging"
    script = tmp_path / "child.py"
    script.write_text(CHILD_SCRIPT)
    child = subprocess.Popen(
        [sys.executable, str(script), str(db), str(marker)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    watcher: RunHistory | None = None
    try:
        wait_until(db.exists, child, "the database")
        watcher = RunHistory(db)

        def hanging() -> bool:
            assert watcher is not None
            run = watcher.get_run("crashed-run")
            return run is not None and len(run.records) == 3 and marker.exists()

        wait_until(hanging, child, "three records")
        yield child, watcher
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if child.stderr:
            child.stderr.close()
        if watcher is not None:
            watcher.close()


@pytest.mark.skipif(sys.platform == "win32", reason="uses SIGKILL")
async def test_a_killed_process_loses_no_finished_record(tmp_path: Path) -> None:
    with hanging_child(tmp_path) as (child, watcher):
        # The child is alive: its run is not ours to mark interrupted.
        assert watcher.mark_interrupted() == []
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    assert child.returncode == -signal.SIGKILL

    history = RunHistory(tmp_path / "history.sqlite3")
    crashed = history.get_run("crashed-run")
    assert crashed is not None
    # Read as interrupted at once (its owner is gone), before anything has written it down.
    assert crashed.status == "interrupted" and crashed.finished_at is None
    assert crashed.error == INTERRUPTED_ERROR
    assert [r.status for r in history.list_runs()] == ["interrupted"]
    assert [r.output for r in crashed.records] == [{"n": n, "square": n * n} for n in (1, 2, 3)]
    assert crashed.iterations == 3
    assert history.mark_interrupted() == ["crashed-run"]
    assert history.mark_interrupted() == []
    interrupted = history.get_run("crashed-run")
    assert interrupted is not None and interrupted.status == "interrupted"
    assert interrupted.error and interrupted.finished_at is not None

    conversation = history.conversation("crashed-run")
    assert isinstance(conversation[-1], ToolResultsMessage)
    assert [r.call_id for r in conversation[-1].results] == ["c3"]  # c4 never finished
    assert not every_call_answered(conversation)
    repaired = close_dangling_calls(conversation)
    assert every_call_answered(repaired)
    closed = repaired[-1]
    assert isinstance(closed, ToolResultsMessage)
    assert [(r.call_id, r.is_error) for r in closed.results] == [("c3", False), ("c4", True)]
    assert closed.results[1].content["error_kind"] == "cancelled"

    # The crashed run can be continued; the model sees it with the dangling call closed.
    seen: list[list[Message]] = []

    def llm(request: LLMRequest) -> LLMResponse:
        seen.append(list(request.messages))
        return LLMResponse(text="1, 4 and 9; the hang was interrupted.")

    history.mark_continuation("follow-up", "crashed-run")
    result = await make_runtime(llm, ToolRegistry(), history).arun_tool_loop(
        "what did you get?", history=conversation, run_id="follow-up"
    )
    assert seen[0][: len(repaired)] == repaired
    assert seen[0][len(repaired)] == UserMessage("what did you get?")
    assert history.conversation("follow-up") == result.messages
    assert [r.run_id for r in history.list_runs()] == ["follow-up", "crashed-run"]


async def test_continuation_chains_and_run_list_pages(tmp_path: Path) -> None:
    history = RunHistory(tmp_path / "h.sqlite3")

    def llm(request: LLMRequest) -> LLMResponse:
        prompt = next(m.text for m in reversed(request.messages) if isinstance(m, UserMessage))
        if not isinstance(request.messages[-1], ToolResultsMessage):
            a, b = (int(x) for x in prompt.split("+"))
            return LLMResponse(tool_calls=[ToolCallRequest(f"c-{a}-{b}", "add", {"a": a, "b": b})])
        return LLMResponse(text=str(last_results(request)["add"]["sum"]))

    runtime = make_runtime(llm, arithmetic_registry(), history)
    first = await runtime.arun_tool_loop("1+2", run_id="A")

    history.mark_continuation("B", "A")  # before B starts
    second = await runtime.arun_tool_loop("3+4", history=history.conversation("A"), run_id="B")
    third = await runtime.arun_tool_loop("5+6", history=history.conversation("B"), run_id="C")
    history.mark_continuation("C", "B")  # after C finished works too

    stored_a, stored_b = history.get_run("A"), history.get_run("B")
    assert stored_a is not None and stored_b is not None
    assert stored_b.continued_from == "A"
    assert stored_b.messages[0] == UserMessage("3+4")  # its own part only
    assert history.conversation("B") == second.messages
    assert history.conversation("B")[: len(first.messages)] == stored_a.messages
    assert history.conversation("C") == third.messages
    assert [m.text for m in history.conversation("C") if isinstance(m, UserMessage)] == [
        "1+2",
        "3+4",
        "5+6",
    ]
    assert (first.content, second.content, third.content) == ("3", "7", "11")

    assert [r.run_id for r in history.list_runs()] == ["C", "B", "A"]
    assert [r.run_id for r in history.list_runs(limit=2)] == ["C", "B"]
    assert [r.run_id for r in history.list_runs(limit=2, offset=2)] == ["A"]
    assert history.list_runs(limit=2, offset=3) == []
    assert [r.continued_from for r in history.list_runs()] == ["B", "A", None]
    with pytest.raises(ValueError):
        history.list_runs(limit=-1)

    with pytest.raises(KeyError):
        history.mark_continuation("D", "no-such-run")
    with pytest.raises(ValueError, match="itself"):
        history.mark_continuation("A", "A")
    with pytest.raises(ValueError, match="ancestor"):
        history.mark_continuation("A", "C")
    assert history.conversation("A") == first.messages


async def test_conversations_group_continued_runs_under_their_first(tmp_path: Path) -> None:
    history = RunHistory(tmp_path / "h.sqlite3")
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    runtime = make_runtime(lambda request: LLMResponse(text="ok"), arithmetic_registry(), history)

    async def run(run_id: str, root: Path, after: str | None = None) -> None:
        conversation = history.conversation(after) if after else []
        if after:
            history.mark_continuation(run_id, after)
        await runtime.arun_tool_loop(
            f"prompt {run_id}",
            ToolActorContext(sandbox_root=str(root)),
            history=conversation,
            run_id=run_id,
        )

    await run("A", here)
    await run("X", there)
    await run("B", here, after="A")
    await run("Y", there, after="X")
    await run("C", here, after="B")
    await run("B2", here, after="A")  # a branch: continuing A again, from elsewhere

    assert history.chain("C") == ["A", "B", "C"]
    assert history.chain("A") == ["A"]
    with pytest.raises(KeyError):
        history.chain("nope")

    listed = history.list_conversations()
    assert [(c.root_run_id, c.latest_run_id, c.run_count) for c in listed] == [
        ("A", "B2", 4),  # the newest run of the tree, whichever branch it is on
        ("X", "Y", 2),
    ]
    first = listed[0]
    assert first.title == "prompt A" and first.sandbox_root == str(here)
    assert first.latest_status == "finished" and first.updated_at > 0
    assert [c.root_run_id for c in history.list_conversations(sandbox_root=str(there))] == ["X"]
    assert history.list_conversations(sandbox_root=str(tmp_path)) == []
    page = history.list_conversations(limit=1)
    assert [c.root_run_id for c in page] == ["A"]
    rest = history.list_conversations(before=page[-1].position, limit=1)
    assert [c.root_run_id for c in rest] == ["X"]
    assert history.list_conversations(before=rest[-1].position) == []

    found = history.get_conversation("X")
    assert found is not None and found.latest_run_id == "Y"
    assert history.get_conversation("Y") is None  # not a first run
    assert history.get_conversation("nope") is None


async def test_mark_interrupted_leaves_runs_of_this_live_process(tmp_path: Path) -> None:
    history = RunHistory(tmp_path / "h.sqlite3")
    registry = ToolRegistry()

    @registry.tool
    def restart_check() -> dict[str, list[str]]:
        """What a daemon starting now would mark interrupted."""
        return {"flipped": history.mark_interrupted()}

    def llm(request: LLMRequest) -> LLMResponse:
        if request.iteration == 1:
            return LLMResponse(tool_calls=[ToolCallRequest("c1", "restart_check", {})])
        return LLMResponse(text="done")

    result = await make_runtime(llm, registry, history).arun_tool_loop("check")
    assert result.tool_call_history[0].output == {"flipped": []}
    stored = history.get_run(result.run_id)
    assert stored is not None and stored.status == "finished"


def test_runs_from_many_threads_share_one_history(tmp_path: Path) -> None:
    history = RunHistory(tmp_path / "h.sqlite3")

    def llm(request: LLMRequest) -> LLMResponse:
        if request.iteration <= 3:
            n = request.iteration
            return LLMResponse(tool_calls=[ToolCallRequest(f"c{n}", "add", {"a": n, "b": 1})])
        return LLMResponse(text="done")

    runtime = make_runtime(llm, arithmetic_registry(), history)
    results: dict[str, Any] = {}

    def run(index: int) -> None:
        results[f"t{index}"] = runtime.run_tool_loop(f"run {index}", run_id=f"t{index}")

    threads = [threading.Thread(target=run, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 6
    assert {r.run_id for r in history.list_runs()} == set(results)
    for run_id, result in results.items():
        stored = history.get_run(run_id)
        assert stored is not None and stored.status == "finished"
        assert stored.records == result.tool_call_history
        assert history.conversation(run_id) == result.messages


def test_default_history_path_follows_xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert default_history_path() == tmp_path / "data" / "cleveragents" / "history.sqlite3"
    if sys.platform.startswith("linux"):
        monkeypatch.setenv("XDG_DATA_HOME", "relative/ignored")
        monkeypatch.setenv("HOME", str(tmp_path / "home"))
        assert default_history_path() == (
            tmp_path / "home" / ".local" / "share" / "cleveragents" / "history.sqlite3"
        )
        monkeypatch.delenv("XDG_DATA_HOME")
        assert (
            default_history_path().parent == tmp_path / "home" / ".local" / "share" / "cleveragents"
        )


async def test_a_reused_run_id_does_not_touch_the_stored_run(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    history = RunHistory(tmp_path / "h.sqlite3")

    def llm(request: LLMRequest) -> LLMResponse:
        if request.iteration == 1:
            prompt = request.messages[-1]
            assert isinstance(prompt, UserMessage)
            a = len(prompt.text)
            return LLMResponse(tool_calls=[ToolCallRequest("c1", "add", {"a": a, "b": 0})])
        return LLMResponse(text="ok")

    runtime = make_runtime(llm, arithmetic_registry(), history)
    first = await runtime.arun_tool_loop("abc", run_id="same")
    second = await runtime.arun_tool_loop("abcdef", run_id="same")
    assert second.tool_call_history[0].output == {"sum": 6}
    assert "RunStarted" in caplog.text  # the failed insert is logged by the runtime
    stored = history.get_run("same")
    assert stored is not None
    assert stored.prompt == "abc"
    assert stored.records == first.tool_call_history
    assert stored.messages == first.messages


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="needs Linux's /proc")
def test_a_pid_now_owned_by_another_process_is_not_mistaken_for_the_runs_owner(
    tmp_path: Path,
) -> None:
    """A run is keyed by its owner's pid and start time: when the pid belongs to a process that
    started at another moment (pid reuse, simulated by rewriting the stored start time), the
    run is read as interrupted, while its real owner is read as running."""
    with hanging_child(tmp_path) as (child, history):
        assert history.get_run("crashed-run").status == "running"  # type: ignore[union-attr]
        with sqlite3.connect(history.path) as conn:
            stored = conn.execute(
                "SELECT owner_pid, owner_started FROM runs WHERE run_id = 'crashed-run'"
            ).fetchone()
            assert stored == (child.pid, process_start_key(child.pid)) and stored[1]
            conn.execute("UPDATE runs SET owner_started = 'another-boot:1'")
        assert [r.status for r in history.list_runs()] == ["interrupted"]
        (conversation,) = history.list_conversations()
        assert conversation.latest_status == "interrupted"
        assert history.mark_interrupted() == ["crashed-run"]


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="needs Linux's /proc")
def test_a_killed_owner_not_yet_reaped_is_gone(tmp_path: Path) -> None:
    """A zombie still answers `kill(pid, 0)`: the run is interrupted all the same."""
    with hanging_child(tmp_path) as (child, history):
        os.kill(child.pid, signal.SIGKILL)
        deadline = time.monotonic() + 60  # only so a broken kernel fails instead of hanging
        while (run := history.get_run("crashed-run")) is not None and run.status == "running":
            assert time.monotonic() < deadline, "the child never became a zombie"
            time.sleep(0.05)
        assert child.returncode is None  # not reaped: still a zombie when it was read
        assert run is not None and run.status == "interrupted"
        assert owner_gone(socket.gethostname(), child.pid, "another-process")


def test_owner_gone_keeps_live_owners_and_other_hosts() -> None:
    me = socket.gethostname()
    assert not owner_gone(me, os.getppid(), "x", process_start_key(os.getppid()))
    assert not owner_gone("another-host", 2**22 + 12345, "x", None)
    assert owner_gone(me, 2**22 + 12345, "x", None)  # no such pid (above pid_max)
    assert owner_gone(me, os.getpid(), "an earlier process's token", None)
