"""The daemon's history is written and read off its event loop: a locked database or a large
`getRun` delays no run and no other request, and loses no record."""

from __future__ import annotations

from pathlib import Path

from cleveragents.service.history import RunHistory
from cleveragents.tool.events import (
    IterationStarted,
    ResponseReceived,
    RunFinished,
    RunStarted,
    ToolCallFinished,
)
from cleveragents.tool.messages import AssistantMessage, ToolCallRequest
from cleveragents.tool.records import ToolCallRecord, ToolCallRunResult
from support.daemon_support import RawDaemon, call, replay_options, write_script
from support.sqlite_lock import WriteLockHolder

PING = ("cleveragents/cancel", {"runId": "no-such-run"})


def pause_script(tmp_path: Path, calls: int) -> str:
    return write_script(
        tmp_path / "script.json",
        *({"tool_calls": [call("pause", seconds=0, label=f"p{i}")]} for i in range(calls)),
        {"text": "Paused."},
    )


async def opened_history(raw: RawDaemon) -> None:
    """The daemon opens its history at the first request that needs it (opening takes the
    write lock a moment, as at start before): here, before another process holds the lock."""
    assert "result" in await raw.request("cleveragents/runs", {})


async def test_a_run_finishes_while_another_process_holds_the_lock_and_loses_no_record(
    raw: RawDaemon, tmp_path: Path, sandbox: Path
) -> None:
    history = tmp_path / "history.sqlite3"
    await raw.initialize(replay_options(pause_script(tmp_path, 3)))
    await opened_history(raw)
    with WriteLockHolder(history):
        answer = await raw.request("cleveragents/run", {"prompt": "p", "sandboxRoot": str(sandbox)})
        result = answer["result"]
        assert result["stopReason"] == "final_answer" and len(result["toolCallHistory"]) == 3
        assert (await raw.request(*PING))["result"] == {"cancelled": False}
    detail = (await raw.request("cleveragents/getRun", {"runId": result["runId"]}))["result"]
    assert detail["status"] == "finished" and detail["content"] == "Paused."
    assert [r["inputs"]["label"] for r in detail["toolCallHistory"]] == ["p0", "p1", "p2"]


async def test_records_queued_behind_a_lock_are_written_when_the_daemon_exits(
    raw: RawDaemon, tmp_path: Path, sandbox: Path
) -> None:
    history = tmp_path / "history.sqlite3"
    await raw.initialize(replay_options(pause_script(tmp_path, 2)))
    await opened_history(raw)
    with WriteLockHolder(history):
        answer = await raw.request("cleveragents/run", {"prompt": "p", "sandboxRoot": str(sandbox)})
        assert "result" in await raw.request("shutdown")
        raw.notify("exit")
    assert await raw.process.wait() == 0
    with RunHistory(history) as stored:
        run = stored.get_run(answer["result"]["runId"])
        assert run is not None and run.status == "finished" and len(run.records) == 2


def store_big_run(path: Path, run_id: str, records: int, per_iteration: int = 10) -> None:
    output = {"content": "".join(f"line {n} of a file the run read\n" for n in range(20))}
    with RunHistory(path) as history:
        history(RunStarted(run_id, "read it all", "plan", "/tmp", "full-auto", 1000))
        for iteration in range(1, records // per_iteration + 1):
            history(IterationStarted(run_id, iteration))
            calls = tuple(
                ToolCallRequest(f"c{iteration}.{i}", "read_file", {"path": f"f{i}"})
                for i in range(per_iteration)
            )
            history(ResponseReceived(run_id, iteration, AssistantMessage("", calls)))
            for request in calls:
                record = ToolCallRecord(
                    "read_file", dict(request.arguments), output, 1.0, True,
                    iteration=iteration, call_id=request.call_id,
                )  # fmt: skip
                history(ToolCallFinished(run_id, record))
        history(RunFinished(run_id, ToolCallRunResult("Read.", [], records // per_iteration)))


async def test_a_ping_is_answered_while_a_large_get_run_is_in_flight(tmp_path: Path) -> None:
    store_big_run(tmp_path / "history.sqlite3", "big", 5000)
    raw = await RawDaemon.start(tmp_path)
    try:
        await raw.initialize(replay_options(write_script(tmp_path / "s.json", {"text": "x"})))
        get_run = raw.send_request("cleveragents/getRun", {"runId": "big"})
        ping = raw.send_request(*PING)
        detail = await raw.response(get_run)
        assert len(detail["result"]["toolCallHistory"]) == 5000
        order = [m.get("id") for m in raw.received if "result" in m or "error" in m]
        # The ping, sent after getRun, was answered while the run was being read and encoded.
        assert order.index(ping) < order.index(get_run)
        assert (await raw.response(ping))["result"] == {"cancelled": False}
        assert detail["result"]["status"] == "finished"
    finally:
        raw.kill()
        await raw.process.wait()


async def test_a_record_the_client_was_sent_survives_kill_9(
    raw: RawDaemon, tmp_path: Path, sandbox: Path
) -> None:
    """The promise of the fast path: with the database free, a record is stored before its
    notification goes out, so a daemon killed the moment the client has it loses nothing."""
    history = tmp_path / "history.sqlite3"
    script = write_script(
        tmp_path / "script.json",
        {"tool_calls": [call("pause", seconds=0, label="seen")]},
        {"tool_calls": [call("pause", seconds=600, label="never")]},
        {"text": "Paused."},
    )
    await raw.initialize(replay_options(script))
    run = raw.send_request("cleveragents/run", {"prompt": "p", "sandboxRoot": str(sandbox)})
    seen = await raw.wait_for(lambda m: m.get("method") == "cleveragents/toolCall")
    assert seen["params"]["record"]["inputs"]["label"] == "seen"
    raw.kill()
    await raw.process.wait()
    assert not any(m.get("id") == run for m in raw.received)
    with RunHistory(history) as stored:
        (summary,) = stored.list_runs(10, 0)
        detail = stored.get_run(summary.run_id)
        # Killed mid-run: every reader names the run interrupted, and its record is there.
        assert detail is not None and detail.status == "interrupted"
        assert [r.inputs["label"] for r in detail.records] == ["seen"]
