"""The daemon's own requests to the client (`approveToolCall` here), sent and settled through
pygls (`send_request`, `_handle_response`), through the real daemon over stdio.

Every way a client can answer: in time, late after the run was cancelled, with an error, with
an error of another shape, with a result of another shape, never, or by cancelling our request
itself. Each answer settles the approval once (allowed, denied or withdrawn), the daemon
logs no traceback and goes on serving.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from support.daemon_support import RawDaemon, call, only_record, replay_options, write_script

APPROVE = "cleveragents/approveToolCall"
ASKING = {"experimental": {"cleveragents": {"approvals": True}}}


async def ask(raw: RawDaemon, tmp_path: Path, sandbox: Path, run_id: str) -> tuple[Any, Any]:
    """Start a run whose model writes a file, which needs approval: (the run's request id,
    the approval request the daemon sent)."""
    script = write_script(
        tmp_path / f"{run_id}.json",
        {"text": "", "tool_calls": [call("write_note", "n1", name="f", text="x")]},
        {"text": "Done."},
    )
    await raw.initialize(replay_options(script), ASKING)
    run_request = raw.send_request(
        "cleveragents/run", {"prompt": "go", "sandboxRoot": str(sandbox), "runId": run_id}
    )
    asked = await raw.wait_for(lambda m: m.get("method") == APPROVE)
    assert isinstance(asked["id"], str) and asked["params"]["toolName"] == "write_note"
    return run_request, asked


async def record_of(raw: RawDaemon, run_request: Any) -> dict[str, Any]:
    return await only_record(raw, run_request, "n1")


async def closed_log(raw: RawDaemon) -> str:
    """The daemon's stderr once it has ended, after checking it still answers requests."""
    assert "result" in await raw.request("cleveragents/tools", {})
    assert await raw.close() == 1  # stdin closed without `shutdown`
    log = raw.stderr.decode()
    assert "Traceback" not in log, log
    assert "InvalidStateError" not in log, log
    return log


async def denied_after(raw: RawDaemon, tmp_path: Path, sandbox: Path, reply: dict[str, Any]) -> str:
    """Answer the approval with `reply` (its `result` or `error`): the call must be denied,
    nothing written; the daemon's log once it ended."""
    run_request, asked = await ask(raw, tmp_path, sandbox, "denied")
    raw.send({"jsonrpc": "2.0", "id": asked["id"], **reply})
    record = await record_of(raw, run_request)
    assert record["errorKind"] == "denied", record
    assert not (sandbox / "f").exists()
    return await closed_log(raw)


async def test_an_approval_answered_in_time_lets_the_call_run(
    raw: RawDaemon, tmp_path: Path, sandbox: Path
) -> None:
    run_request, asked = await ask(raw, tmp_path, sandbox, "allowed")
    raw.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"decision": "allow"}})
    record = await record_of(raw, run_request)
    assert record["success"] is True, record
    assert (sandbox / "f").read_text() == "x"
    log = await closed_log(raw)
    assert "WARNING" not in log, log


async def test_a_late_answer_after_the_run_was_cancelled_is_ignored_quietly(
    raw: RawDaemon, tmp_path: Path, sandbox: Path
) -> None:
    run_request, asked = await ask(raw, tmp_path, sandbox, "late")
    assert (await raw.request("cleveragents/cancel", {"runId": "late"}))["result"] == {
        "cancelled": True
    }
    await raw.wait_for(
        lambda m: m.get("method") == "$/cancelRequest" and m["params"] == {"id": asked["id"]}
    )
    assert (await raw.response(run_request))["result"]["stopReason"] == "cancelled"
    # LSP clients answer a withdrawn request all the same: normal, not worth a word.
    raw.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"decision": "allow"}})
    raw.send({"jsonrpc": "2.0", "id": asked["id"], "error": {"code": -32800, "message": "x"}})
    log = await closed_log(raw)
    assert not (sandbox / "f").exists()
    # The only warning is for the second answer: a request answered twice is a client's bug.
    warnings = [line for line in log.splitlines() if " WARNING " in line]
    assert len(warnings) == 1, log
    assert f'Received response to unknown message id "{asked["id"]}"' in warnings[0]


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        ({"code": -32601, "message": "no approvals here"}, "no approvals here (-32601)"),
        (
            {"code": 7, "message": "the user closed the dialog", "data": [1]},
            "the user closed the dialog (7)",
        ),
        ("boom", "boom (-32603)"),  # not an object
        ({"code": "x", "message": "bad code"}, "bad code (-32603)"),
        ({"code": 2**40, "message": "too big"}, "too big (-32603)"),  # beyond JSON-RPC's int
        ({"message": None}, "{'message': None} (-32603)"),
    ],
)
async def test_an_error_answer_denies_the_call_with_the_reason(
    error: Any, reason: str, raw: RawDaemon, tmp_path: Path, sandbox: Path
) -> None:
    log = await denied_after(raw, tmp_path, sandbox, {"error": error})
    assert f"approval request for write_note failed: {reason}; denied" in log, log


@pytest.mark.parametrize("result", [{"decision": "maybe"}, None, ["allow"], "allow"])
async def test_a_malformed_result_denies_the_call(
    result: Any, raw: RawDaemon, tmp_path: Path, sandbox: Path
) -> None:
    log = await denied_after(raw, tmp_path, sandbox, {"result": result})
    assert "malformed approval answer" in log and "denied" in log, log


async def test_an_approval_never_answered_is_withdrawn_when_the_run_is_cancelled(
    raw: RawDaemon, tmp_path: Path, sandbox: Path
) -> None:
    run_request, asked = await ask(raw, tmp_path, sandbox, "unanswered")
    mark = len(raw.received)
    await raw.request("cleveragents/cancel", {"runId": "unanswered"})
    record = await record_of(raw, run_request)
    assert record["errorKind"] == "cancelled", record
    withdrawn = [m for m in raw.received[mark:] if m.get("method") == "$/cancelRequest"]
    assert [m["params"] for m in withdrawn] == [{"id": asked["id"]}]
    assert "id" not in withdrawn[0]  # a notification
    stored = await raw.request("cleveragents/getRun", {"runId": "unanswered"})
    assert stored["result"]["status"] == "cancelled"
    log = await closed_log(raw)
    assert "WARNING" not in log, log


async def test_a_client_cancelling_our_request_denies_the_call_and_the_run_goes_on(
    raw: RawDaemon, tmp_path: Path, sandbox: Path
) -> None:
    """`$/cancelRequest` is the requester's to send, but a client that sends it for our
    request settles it (pygls cancels the future): the approval fails, it does not hang."""
    run_request, asked = await ask(raw, tmp_path, sandbox, "taken_back")
    raw.notify("$/cancelRequest", {"id": asked["id"]})
    record = await record_of(raw, run_request)
    assert record["errorKind"] == "denied", record
    reply = await raw.response(run_request)
    assert reply["result"]["stopReason"] != "cancelled"
    log = await closed_log(raw)
    assert "was cancelled before the client answered" in log, log
