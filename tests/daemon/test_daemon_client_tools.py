"""Tools a client serves, through the real daemon over stdio, driven by a raw client.

The client declares tools at `initialize` (`capabilities.experimental.cleveragents.tools`);
the replay model calls them; each call reaches the client as `cleveragents/callClientTool`,
and its answer (or its silence, or the run's stop) ends up in the call's record.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from support.daemon_support import (
    RawDaemon,
    call,
    check_against_schema,
    check_type,
    only_record,
    replay_options,
    write_script,
)

CALL = "cleveragents/callClientTool"
DIAGNOSTICS = {
    "name": "get_diagnostics",
    "description": "The editor's problems for a file.",
    "inputSchema": {
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
    },
    "readOnly": True,
}


def declaring(*tools: dict[str, Any], **flags: Any) -> dict[str, Any]:
    return {"experimental": {"cleveragents": {"tools": list(tools), **flags}}}


def calls_diagnostics(tmp_path: Path) -> str:
    return write_script(
        tmp_path / "script.json",
        {"text": "Checking.", "tool_calls": [call("get_diagnostics", "c1", path="a.py")]},
        {"text": "Done."},
    )


async def start_run(raw: RawDaemon, sandbox: Path, run_id: str, **params: Any) -> Any:
    return raw.send_request(
        "cleveragents/run",
        {"prompt": "check a.py", "sandboxRoot": str(sandbox), "runId": run_id, **params},
    )


async def asked(raw: RawDaemon) -> dict[str, Any]:
    return await raw.wait_for(lambda m: m.get("method") == CALL)


def answer(raw: RawDaemon, question: dict[str, Any], result: Any) -> None:
    raw.send({"jsonrpc": "2.0", "id": question["id"], "result": result})


async def record_of(raw: RawDaemon, run_request: int) -> dict[str, Any]:
    return await only_record(raw, run_request, "c1")


async def test_a_declared_tool_is_offered_called_and_its_answer_recorded(
    raw: RawDaemon, tmp_path: Path, sandbox: Path
) -> None:
    reply = await raw.initialize(
        replay_options(calls_diagnostics(tmp_path)), declaring(DIAGNOSTICS)
    )
    capability = reply["result"]["capabilities"]["experimental"]["cleveragents"]
    check_type("ServerCapability", capability)
    assert capability["clientTools"] == ["get_diagnostics"]
    listed = await raw.request("cleveragents/tools", {})
    offered = {t["name"]: t for t in listed["result"]["tools"]}
    assert offered["get_diagnostics"]["inputSchema"]["required"] == ["path"]
    assert "write_note" in offered  # beside the daemon's own

    run_request = await start_run(raw, sandbox, "diag_ok")
    question = await asked(raw)
    check_against_schema(CALL, question["params"])
    assert question["params"] == {
        "runId": "diag_ok",
        "callId": "c1",
        "name": "get_diagnostics",
        "arguments": {"path": "a.py"},
        "iteration": 1,
    }
    result = {"content": [{"type": "text", "text": "a.py:3:5 error: x is not defined"}]}
    check_against_schema(CALL, result, "result")
    answer(raw, question, result)
    record = await record_of(raw, run_request)
    assert record["success"] is True
    assert record["output"] == {"text": "a.py:3:5 error: x is not defined"}
    stored = await raw.request("cleveragents/getRun", {"runId": "diag_ok"})
    assert stored["result"]["toolCallHistory"][0]["output"] == record["output"]


async def test_an_is_error_answer_fails_the_call_with_the_clients_message(
    raw: RawDaemon, tmp_path: Path, sandbox: Path
) -> None:
    await raw.initialize(replay_options(calls_diagnostics(tmp_path)), declaring(DIAGNOSTICS))
    run_request = await start_run(raw, sandbox, "diag_error")
    question = await asked(raw)
    answer(
        raw,
        question,
        {"content": [{"type": "text", "text": "no such file: a.py"}], "isError": True},
    )
    record = await record_of(raw, run_request)
    assert record["success"] is False
    assert record["errorKind"] == "execution_error"
    assert "get_diagnostics failed in the client: no such file: a.py" in record["error"]


async def test_an_error_or_a_malformed_answer_fails_the_call_and_the_daemon_goes_on(
    raw: RawDaemon, tmp_path: Path, sandbox: Path
) -> None:
    await raw.initialize(replay_options(calls_diagnostics(tmp_path)), declaring(DIAGNOSTICS))
    run_request = await start_run(raw, sandbox, "diag_jsonrpc_error")
    question = await asked(raw)
    raw.send({"jsonrpc": "2.0", "id": question["id"], "error": {"code": -32601, "message": "nope"}})
    record = await record_of(raw, run_request)
    assert record["success"] is False and "could not run get_diagnostics: nope" in record["error"]

    start = len(raw.received)
    run_request = await start_run(raw, sandbox, "diag_malformed")
    question = await raw.wait_for(lambda m: m.get("method") == CALL, start)
    answer(raw, question, {"content": "not a list"})
    record = await record_of(raw, run_request)
    assert record["success"] is False
    assert "is not a tool result" in record["error"] and "result.content" in record["error"]


async def test_a_client_that_never_answers_times_out_and_the_request_is_withdrawn(
    raw: RawDaemon, tmp_path: Path, sandbox: Path
) -> None:
    slow = {**DIAGNOSTICS, "timeoutSeconds": 0.5}
    await raw.initialize(replay_options(calls_diagnostics(tmp_path)), declaring(slow))
    run_request = await start_run(raw, sandbox, "diag_silent")
    question = await asked(raw)
    record = await record_of(raw, run_request)  # never answered
    assert record["success"] is False and record["errorKind"] == "timeout"
    assert "get_diagnostics did not finish within 0.5 s" in record["error"]
    withdrawn = raw.notifications("$/cancelRequest")
    assert {"id": question["id"]} in withdrawn
    # The run went on to its end, and the daemon still answers.
    assert (await raw.response(run_request))["result"]["stopReason"] == "final_answer"
    assert "result" in await raw.request("cleveragents/runs", {})


async def test_stopping_the_run_during_a_call_withdraws_the_request(
    raw: RawDaemon, tmp_path: Path, sandbox: Path
) -> None:
    await raw.initialize(replay_options(calls_diagnostics(tmp_path)), declaring(DIAGNOSTICS))
    run_request = await start_run(raw, sandbox, "diag_stopped")
    question = await asked(raw)
    cancelled = await raw.request("cleveragents/cancel", {"runId": "diag_stopped"})
    assert cancelled["result"] == {"cancelled": True}
    reply = await raw.response(run_request)
    assert reply["result"]["stopReason"] == "cancelled"
    record = reply["result"]["toolCallHistory"][0]
    assert (record["callId"], record["errorKind"]) == ("c1", "cancelled")
    await raw.wait_for(
        lambda m: m.get("method") == "$/cancelRequest" and m["params"] == {"id": question["id"]}
    )
    answer(raw, question, {"content": [{"type": "text", "text": "too late"}]})  # ignored
    stored = await raw.request("cleveragents/getRun", {"runId": "diag_stopped"})
    assert stored["result"]["status"] == "cancelled"


async def test_a_tool_not_declared_read_only_is_asked_about_first(
    raw: RawDaemon, tmp_path: Path, sandbox: Path
) -> None:
    script = write_script(
        tmp_path / "script.json",
        {"tool_calls": [call("format_file", "c1", path="a.py")]},
        {"text": "Done."},
    )
    formatter = {
        "name": "format_file",
        "description": "Format a file in the editor.",
        "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
    await raw.initialize(
        replay_options(script, automationProfile="auto-edit"),
        declaring(formatter, approvals=True),
    )
    run_request = await start_run(raw, sandbox, "format_denied")
    approval = await raw.wait_for(lambda m: m.get("method") == "cleveragents/approveToolCall")
    assert approval["params"]["toolName"] == "format_file"
    assert approval["params"]["executesCode"] is True
    answer(raw, approval, {"decision": "deny"})
    record = await record_of(raw, run_request)
    assert record["errorKind"] == "denied"
    assert raw.notifications(CALL) == []  # a denied call never reaches the client


async def test_bad_declarations_fail_initialize_naming_each_tool_and_a_good_one_follows(
    raw: RawDaemon, tmp_path: Path
) -> None:
    bad: list[dict[str, Any]] = [
        {**DIAGNOSTICS, "name": "get diagnostics"},
        {**DIAGNOSTICS, "name": "write_note"},  # one of the daemon's own tools
        {**DIAGNOSTICS, "inputSchema": {"type": "object", "properties": {"x": {"type": "nah"}}}},
        {**DIAGNOSTICS, "name": "twice"},
        {**DIAGNOSTICS, "name": "twice"},
        {**DIAGNOSTICS, "name": "slow", "timeoutSeconds": 0},
        {"name": "no_schema", "description": "x"},
    ]
    msg_id = raw.send_request(
        "initialize",
        {
            "processId": None,
            "capabilities": declaring(*bad),
            "initializationOptions": replay_options(calls_diagnostics(tmp_path)),
        },
    )
    error = (await raw.response(msg_id))["error"]
    assert error["code"] == -32602
    problems = error["data"]["problems"]
    where = "capabilities.experimental.cleveragents.tools"
    assert problems == [f"{where}[6].inputSchema: required field missing"], (
        problems
    )  # the shape first

    msg_id = raw.send_request(
        "initialize",
        {
            "processId": None,
            "capabilities": declaring(*bad[:6]),
            "initializationOptions": replay_options(calls_diagnostics(tmp_path)),
        },
    )
    error = (await raw.response(msg_id))["error"]
    problems = error["data"]["problems"]
    assert len(problems) == 5, problems
    assert problems[0].startswith(f"{where}[0] ('get diagnostics'): invalid tool name")
    assert problems[1].startswith(f"{where}[1] ('write_note'): the daemon already has a tool")
    assert problems[2].startswith(f"{where}[2] ('get_diagnostics'): tool get_diagnostics:")
    assert "input_schema is not valid JSON Schema" in problems[2]
    assert problems[3] == f"{where}[4] ('twice'): declared twice"
    assert problems[4].startswith(f"{where}[5] ('slow'): timeout must be more than 0")
    for problem in problems:
        assert problem in error["message"]

    # The daemon is alive and takes a corrected initialize.
    reply = await raw.initialize(
        replay_options(calls_diagnostics(tmp_path)), declaring(DIAGNOSTICS)
    )
    capability = reply["result"]["capabilities"]["experimental"]["cleveragents"]
    assert capability["clientTools"] == ["get_diagnostics"]
