"""The daemon over real stdio, driven by hand-written framing: malformed input of every kind,
the lifecycle, stdout hygiene, and what happens when the client goes away."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from cleveragents.protocol import wire
from support.daemon_support import (
    MISSING,
    RawDaemon,
    call,
    check_against_schema,
    frame,
    replay_options,
    write_script,
)


def simple_script(tmp_path: Path) -> str:
    return write_script(
        tmp_path / "script.json",
        {"text": "Pausing.", "tool_calls": [call("pause", seconds=0.01, label="x")]},
        {"text": "Done."},
    )


async def run_ok(raw: RawDaemon, sandbox: Path, prompt: str = "go") -> dict[str, Any]:
    answer = await raw.request("cleveragents/run", {"prompt": prompt, "sandboxRoot": str(sandbox)})
    assert "result" in answer, answer
    result: dict[str, Any] = answer["result"]
    assert result["stopReason"] == "final_answer"
    assert result["content"] == "Done."
    assert [r["toolName"] for r in result["toolCallHistory"]] == ["pause"]
    return result


# -- malformed input -----------------------------------------------------------------------

BAD_FRAMES: list[tuple[str, bytes]] = [
    ("garbage line", b"hello there\r\n\r\n"),
    ("a body without headers", b'{"jsonrpc":"2.0","id":1,"method":"cleveragents/tools"}'),
    ("non-numeric Content-Length", b"Content-Length: twelve\r\n\r\n{}"),
    ("headers without Content-Length", b"Content-Type: application/json\r\n\r\n{}"),
    # Announced, never sent: reading resumes at the next header, not 100 MB later.
    ("a frame announced over the 64 MiB limit", b"Content-Length: 100000000\r\n\r\n"),
    ("a body that is not JSON", frame(b"{not json")),
    ("a body that is not UTF-8", frame(b'{"a": "\xff\xfe"}')),
    ("JSON nested too deep", frame(b"[" * 100_000 + b"]" * 100_000)),
]


@pytest.mark.parametrize(("label", "data"), BAD_FRAMES, ids=[label for label, _ in BAD_FRAMES])
async def test_a_bad_frame_is_answered_with_a_parse_error_and_reading_goes_on(
    raw: RawDaemon, tmp_path: Path, sandbox: Path, label: str, data: bytes
) -> None:
    await raw.initialize(replay_options(simple_script(tmp_path)))
    start = len(raw.received)
    raw.write(data)
    error = await raw.error(None, start)
    assert error["code"] == wire.PARSE_ERROR
    assert error["message"].startswith("parse error")
    await run_ok(raw, sandbox)
    assert await raw.close() == 1  # stdin closed without shutdown


ENVELOPES: list[tuple[str, Any, Any, int, str]] = [
    (
        "a batch",
        [{"jsonrpc": "2.0", "id": 1, "method": "cleveragents/tools"}],
        None,
        wire.INVALID_REQUEST,
        "batches",
    ),
    ("a bare string", "hello", None, wire.INVALID_REQUEST, "JSON object"),
    (
        "jsonrpc 1.0",
        {"jsonrpc": "1.0", "id": 7, "method": "cleveragents/tools"},
        7,
        wire.INVALID_REQUEST,
        '"jsonrpc"',
    ),
    ("no jsonrpc", {"id": 8, "method": "cleveragents/tools"}, 8, wire.INVALID_REQUEST, '"jsonrpc"'),
    (
        "a boolean id",
        {"jsonrpc": "2.0", "id": True, "method": "cleveragents/tools"},
        None,
        wire.INVALID_REQUEST,
        '"id"',
    ),
    (
        "an object id",
        {"jsonrpc": "2.0", "id": {"a": 1}, "method": "cleveragents/tools"},
        None,
        wire.INVALID_REQUEST,
        '"id"',
    ),
    (
        "a numeric method",
        {"jsonrpc": "2.0", "id": 9, "method": 12},
        9,
        wire.INVALID_REQUEST,
        '"method"',
    ),
    (
        "string params",
        {"jsonrpc": "2.0", "id": 10, "method": "cleveragents/tools", "params": "x"},
        10,
        wire.INVALID_REQUEST,
        '"params"',
    ),
    (
        "neither request nor response",
        {"jsonrpc": "2.0", "id": 11},
        11,
        wire.INVALID_REQUEST,
        "method",
    ),
    (
        "an unknown method",
        {"jsonrpc": "2.0", "id": 12, "method": "cleveragents/fly"},
        12,
        wire.METHOD_NOT_FOUND,
        "cleveragents/fly",
    ),
    (
        "an LSP method we do not serve",
        {
            "jsonrpc": "2.0",
            "id": 13,
            "method": "textDocument/hover",
            "params": {
                "textDocument": {"uri": "file:///x"},
                "position": {"line": 0, "character": 0},
            },
        },
        13,
        wire.METHOD_NOT_FOUND,
        "textDocument/hover",
    ),
    (
        "a server-to-client method",
        {"jsonrpc": "2.0", "id": 14, "method": "cleveragents/approveToolCall", "params": {}},
        14,
        wire.METHOD_NOT_FOUND,
        "sent by the server",
    ),
    (
        "a second initialize",
        {
            "jsonrpc": "2.0",
            "id": 15,
            "method": "initialize",
            "params": {"processId": None, "capabilities": {}},
        },
        15,
        wire.INVALID_REQUEST,
        "already initialized",
    ),
]


@pytest.mark.parametrize(
    ("label", "message", "reply_id", "code", "mentions"), ENVELOPES, ids=[e[0] for e in ENVELOPES]
)
async def test_an_invalid_envelope_is_answered_and_the_session_goes_on(
    raw: RawDaemon,
    tmp_path: Path,
    sandbox: Path,
    label: str,
    message: Any,
    reply_id: Any,
    code: int,
    mentions: str,
) -> None:
    await raw.initialize(replay_options(simple_script(tmp_path)))
    start = len(raw.received)
    raw.send(message)
    error = await raw.error(reply_id, start)
    assert error["code"] == code
    assert mentions in error["message"]
    await run_ok(raw, sandbox)


WRONG_PARAMS: list[tuple[str, str, Any, str]] = [
    (
        "prompt is a number",
        "cleveragents/run",
        {"prompt": 7, "sandboxRoot": "/"},
        "params.prompt: expected a string, got a number",
    ),
    (
        "prompt is a list",
        "cleveragents/run",
        {"prompt": ["a"], "sandboxRoot": "/"},
        "params.prompt: expected a string, got an array",
    ),
    (
        "prompt is an object with a jsonrpc key",
        "cleveragents/run",
        {"prompt": {"jsonrpc": "2.0", "id": 3, "method": "x"}, "sandboxRoot": "/"},
        "params.prompt: expected a string, got an object",
    ),
    (
        "prompt is missing",
        "cleveragents/run",
        {"sandboxRoot": "/"},
        "params.prompt: required field missing",
    ),
    (
        "prompt is empty",
        "cleveragents/run",
        {"prompt": "  ", "sandboxRoot": "/"},
        "params.prompt: must not be empty",
    ),
    (
        "sandboxRoot is missing",
        "cleveragents/run",
        {"prompt": "go"},
        "params.sandboxRoot: required field missing",
    ),
    (
        "sandboxRoot is relative",
        "cleveragents/run",
        {"prompt": "go", "sandboxRoot": "rel"},
        "params.sandboxRoot: must be an absolute path",
    ),
    (
        "sandboxRoot does not exist",
        "cleveragents/run",
        {"prompt": "go", "sandboxRoot": "/no/such/folder"},
        "params.sandboxRoot: no such folder",
    ),
    (
        "sandboxRoot is the filesystem's root",
        "cleveragents/run",
        {"prompt": "go", "sandboxRoot": "/"},
        "params.sandboxRoot: '/' is the root of the filesystem",
    ),
    (
        "maxIterations is a string",
        "cleveragents/run",
        {"prompt": "go", "sandboxRoot": "/", "maxIterations": "7"},
        "params.maxIterations: expected an integer, got a string",
    ),
    (
        "maxIterations is zero",
        "cleveragents/run",
        {"prompt": "go", "sandboxRoot": "/", "maxIterations": 0},
        "params.maxIterations: must be at least 1",
    ),
    (
        "an unknown profile",
        "cleveragents/run",
        {"prompt": "go", "sandboxRoot": "/", "automationProfile": "yolo"},
        "params.automationProfile: must be one of",
    ),
    (
        "a snake_case field",
        "cleveragents/run",
        {"prompt": "go", "sandbox_root": "/"},
        "unknown field 'sandbox_root'",
    ),
    (
        "an unknown provider",
        "cleveragents/run",
        {"prompt": "go", "sandboxRoot": "/", "provider": "skynet"},
        "params.provider: unknown provider 'skynet'",
    ),
    (
        "an unknown tool",
        "cleveragents/run",
        {"prompt": "go", "sandboxRoot": "/", "tools": ["pause", "teleport"]},
        "params.tools[1]: unknown tool 'teleport'",
    ),
    (
        "a bad run id",
        "cleveragents/run",
        {"prompt": "go", "sandboxRoot": "/", "runId": "a b"},
        "params.runId",
    ),
    ("params missing", "cleveragents/run", MISSING, "params: required"),
    ("params an array", "cleveragents/run", ["go", "/"], "params: expected an object"),
    ("cancel without runId", "cleveragents/cancel", {}, "params.runId: required field missing"),
    (
        "runs with a string limit",
        "cleveragents/runs",
        {"limit": "5"},
        "params.limit: expected an integer, got a string",
    ),
    ("runs with limit zero", "cleveragents/runs", {"limit": 0}, "params.limit: must be between"),
    (
        "getRun with a numeric id",
        "cleveragents/getRun",
        {"runId": 5},
        "params.runId: expected a string, got a number",
    ),
    ("$/cancelRequest as a request", "$/cancelRequest", {"id": "x"}, ""),
]


@pytest.mark.parametrize(
    ("label", "method", "params", "mentions"), WRONG_PARAMS, ids=[w[0] for w in WRONG_PARAMS]
)
async def test_wrong_params_name_the_field_and_are_never_coerced(
    raw: RawDaemon,
    tmp_path: Path,
    sandbox: Path,
    label: str,
    method: str,
    params: Any,
    mentions: str,
) -> None:
    await raw.initialize(replay_options(simple_script(tmp_path)))
    start = len(raw.received)
    msg_id = raw.send_request(method, params)
    error = await raw.error(msg_id, start)
    if method == "$/cancelRequest":  # a notification method sent with an id: no such request
        assert error["code"] == wire.METHOD_NOT_FOUND
    else:
        assert error["code"] == wire.INVALID_PARAMS, error
        assert mentions in error["message"], error
        assert error["data"]["problems"], error
    await run_ok(raw, sandbox)


async def test_lenient_framing_lowercase_headers_lf_line_ends_and_extra_headers(
    raw: RawDaemon, tmp_path: Path, sandbox: Path
) -> None:
    await raw.initialize(replay_options(simple_script(tmp_path)))
    bodies = {
        21: b"content-length: %d\n\n",
        22: b"CONTENT-LENGTH:%d\r\n\r\n",
        23: b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: %d\n\n",
        24: b"\r\n\r\nContent-Length: %d\r\n\r\n",
    }
    for msg_id, header in bodies.items():
        body = json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": "cleveragents/tools"})
        raw.write(header % len(body) + body.encode())
    for msg_id in bodies:
        answer = await raw.response(msg_id)
        assert "pause" in [t["name"] for t in answer["result"]["tools"]]
    await run_ok(raw, sandbox)


async def test_a_frame_split_into_single_bytes_still_arrives(
    raw: RawDaemon, tmp_path: Path, sandbox: Path
) -> None:
    await raw.initialize(replay_options(simple_script(tmp_path)))
    data = frame(json.dumps({"jsonrpc": "2.0", "id": 31, "method": "cleveragents/tools"}))
    stdin = raw.process.stdin
    assert stdin is not None
    for index in range(len(data)):
        raw.write(data[index : index + 1])
        await stdin.drain()
    assert "result" in await raw.response(31)


async def test_notifications_that_cannot_be_answered_are_ignored(
    raw: RawDaemon, tmp_path: Path, sandbox: Path
) -> None:
    await raw.initialize(replay_options(simple_script(tmp_path)))
    start = len(raw.received)
    raw.notify("cleveragents/nothing", {"a": 1})
    raw.notify("$/someExtension")
    raw.notify("$/cancelRequest", {"id": 424242})
    raw.notify("$/cancelRequest", {"nope": True})
    raw.notify("cleveragents/run", {"prompt": "go", "sandboxRoot": str(sandbox)})
    raw.send({"jsonrpc": "2.0", "id": "nobody-asked", "result": {"x": 1}})
    await run_ok(raw, sandbox)
    answered = [m for m in raw.received[start:] if "id" in m]
    assert len(answered) == 1  # only the run's own response


async def test_requests_before_initialize_get_server_not_initialized(
    raw: RawDaemon, tmp_path: Path, sandbox: Path
) -> None:
    answer = await raw.request("cleveragents/tools")
    assert answer["error"]["code"] == wire.SERVER_NOT_INITIALIZED
    raw.notify("cleveragents/run", {"prompt": "go", "sandboxRoot": str(sandbox)})
    await raw.initialize(replay_options(simple_script(tmp_path)))
    await run_ok(raw, sandbox)


async def test_invalid_initialization_options_name_the_field_and_initialize_can_be_retried(
    raw: RawDaemon, tmp_path: Path, sandbox: Path
) -> None:
    cases = [
        ({"maxIterations": "many"}, "initializationOptions.maxIterations"),
        ({"provider": "skynet"}, "initializationOptions.provider: unknown provider"),
        ({"apiKey": "sk-123"}, "initializationOptions.apiKey: API keys are read only"),
        ({"toolModules": ["no_such_module_here"]}, "initializationOptions.toolModules"),
        ({"automationProfile": "yolo"}, "initializationOptions.automationProfile"),
        ({"typo": 1}, "unknown field 'typo'"),
    ]
    for options, mentions in cases:
        answer = await raw.request(
            "initialize", {"processId": None, "capabilities": {}, "initializationOptions": options}
        )
        assert answer["error"]["code"] == wire.INVALID_PARAMS, answer
        assert mentions in answer["error"]["message"], answer
    await raw.initialize(replay_options(simple_script(tmp_path)))
    await run_ok(raw, sandbox)


async def test_initialize_advertises_the_protocol_version_and_nothing_it_does_not_serve(
    raw: RawDaemon, tmp_path: Path
) -> None:
    answer = await raw.initialize(replay_options(simple_script(tmp_path)))
    capabilities = answer["result"]["capabilities"]
    ours = capabilities["experimental"]["cleveragents"]
    assert ours["protocolVersion"] == wire.PROTOCOL_VERSION
    assert ours["approvals"] is False
    assert "replay" in ours["providers"]
    assert "textDocumentSync" not in capabilities
    assert answer["result"]["serverInfo"]["name"] == "cleveragents"


# -- lifecycle -------------------------------------------------------------------------------


async def test_shutdown_then_exit_exits_0_and_requests_in_between_are_refused(
    raw: RawDaemon, tmp_path: Path
) -> None:
    await raw.initialize(replay_options(simple_script(tmp_path)))
    answer = await raw.request("shutdown")
    assert answer["result"] is None
    refused = await raw.request("cleveragents/tools")
    assert refused["error"]["code"] == wire.INVALID_REQUEST
    raw.notify("exit")
    assert await asyncio.wait_for(raw.process.wait(), 60) == 0


async def test_exit_without_shutdown_exits_1(raw: RawDaemon, tmp_path: Path) -> None:
    await raw.initialize(replay_options(simple_script(tmp_path)))
    raw.notify("exit")
    assert await asyncio.wait_for(raw.process.wait(), 60) == 1


async def test_nothing_is_ever_toasted_at_the_user(
    raw: RawDaemon, tmp_path: Path, sandbox: Path
) -> None:
    await raw.initialize(replay_options(simple_script(tmp_path)))
    for _, data in BAD_FRAMES:
        raw.write(data)
    for _, message, *_ in ENVELOPES:
        raw.send(message)
    for _, method, params, _ in WRONG_PARAMS:
        raw.send_request(method, params)
    await run_ok(raw, sandbox)
    methods = {m.get("method") for m in raw.received}
    assert "window/showMessage" not in methods
    assert "window/showMessageRequest" not in methods
    assert raw.process.returncode is None


async def test_stray_prints_of_tools_go_to_stderr_not_into_the_protocol(
    raw: RawDaemon, tmp_path: Path, sandbox: Path
) -> None:
    script = write_script(
        tmp_path / "s.json", {"text": "", "tool_calls": [call("chatty")]}, {"text": "Done."}
    )
    await raw.initialize(replay_options(script))
    answer = await raw.request("cleveragents/run", {"prompt": "go", "sandboxRoot": str(sandbox)})
    assert answer["result"]["toolCallHistory"][0]["success"] is True
    await raw.close()
    assert b"this line must not corrupt the protocol stream" in raw.stderr
    assert b"nor this one" in raw.stderr


# -- the client going away -------------------------------------------------------------------


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][:1] != "Z"
    except OSError:
        return False


async def test_closing_stdin_mid_run_stops_the_daemon_and_what_it_started(
    raw: RawDaemon, tmp_path: Path, sandbox: Path
) -> None:
    script = write_script(
        tmp_path / "s.json",
        {"text": "", "tool_calls": [call("start_sleeper")]},
        {"text": "", "tool_calls": [call("wait_for_file", name="never")]},
        {"text": "Done."},
    )
    await raw.initialize(replay_options(script))
    raw.send_request(
        "cleveragents/run", {"prompt": "go", "sandboxRoot": str(sandbox), "runId": "leaving"}
    )
    await raw.wait_for(
        lambda m: (
            m.get("method") == "cleveragents/toolCallStarted"
            and m["params"]["toolName"] == "wait_for_file"
        )
    )
    pid = int((sandbox / "sleeper.pid").read_text())
    assert _alive(pid)
    assert await raw.close() == 1
    assert not _alive(pid)
    # The run was stopped, not abandoned: its end is in the history.
    with sqlite3.connect(tmp_path / "history.sqlite3") as db:
        status, stop_reason = db.execute(
            "SELECT status, stop_reason FROM runs WHERE run_id = 'leaving'"
        ).fetchone()
    assert (status, stop_reason) == ("cancelled", "cancelled")


async def test_kill_9_mid_run_keeps_every_record_completed_before_it(
    tmp_path: Path, sandbox: Path
) -> None:
    calls = [call("pause", f"quick_{i}", seconds=0, label=str(i)) for i in range(5)]
    script = write_script(
        tmp_path / "s.json",
        {"text": "Quick ones.", "tool_calls": calls},
        {"text": "Now wait.", "tool_calls": [call("wait_for_file", "slow", name="never")]},
        {"text": "Done."},
    )
    raw = await RawDaemon.start(tmp_path)
    try:
        await raw.initialize(replay_options(script))
        raw.send_request(
            "cleveragents/run", {"prompt": "go", "sandboxRoot": str(sandbox), "runId": "doomed"}
        )
        await raw.wait_for(
            lambda m: (
                m.get("method") == "cleveragents/toolCallStarted"
                and m["params"]["callId"] == "slow"
            )
        )
        seen = [n["record"]["callId"] for n in raw.notifications("cleveragents/toolCall")]
        assert sorted(seen) == [f"quick_{i}" for i in range(5)]
        # Killed at once: a record the client was sent is already stored.
    finally:
        raw.kill()
        await raw.process.wait()
    assert raw.process.returncode == -9

    from cleveragents.service.history import RunHistory

    with RunHistory(tmp_path / "history.sqlite3") as history:
        stored = history.get_run("doomed")
        assert stored is not None
        # Nothing wrote it down since the crash, yet every reader names it dead at once.
        assert stored.status == "interrupted" and stored.finished_at is None
        assert [r.call_id for r in stored.records] == [f"quick_{i}" for i in range(5)]
        assert all(r.success for r in stored.records)

    # The next daemon marks the run interrupted and still serves its records.
    again = await RawDaemon.start(tmp_path)
    try:
        await again.initialize(replay_options(script))
        detail = (await again.request("cleveragents/getRun", {"runId": "doomed"}))["result"]
        check_against_schema("cleveragents/getRun", detail, "result")
        assert detail["status"] == "interrupted"
        assert [r["callId"] for r in detail["toolCallHistory"]] == [f"quick_{i}" for i in range(5)]
    finally:
        await again.close()


async def test_a_run_streams_over_real_stdio_while_the_request_is_open(
    raw: RawDaemon, tmp_path: Path, sandbox: Path
) -> None:
    script = write_script(
        tmp_path / "s.json",
        {"text": "Waiting for go.", "tool_calls": [call("wait_for_file", "w", name="go")]},
        {"text": "Done."},
    )
    await raw.initialize(replay_options(script))
    msg_id = raw.send_request("cleveragents/run", {"prompt": "go", "sandboxRoot": str(sandbox)})
    started = await raw.wait_for(lambda m: m.get("method") == "cleveragents/toolCallStarted")
    assert not any(m.get("id") == msg_id for m in raw.received)  # the request is still open
    check_against_schema("cleveragents/toolCallStarted", started["params"])
    (sandbox / "go").write_text("")
    answer = await raw.response(msg_id)
    check_against_schema("cleveragents/run", answer["result"], "result")
    assert answer["result"]["content"] == "Done."


async def test_cancelling_the_work_done_progress_cancels_the_run(
    raw: RawDaemon, tmp_path: Path, sandbox: Path
) -> None:
    script = write_script(
        tmp_path / "s.json",
        {"text": "", "tool_calls": [call("wait_for_file", name="never")]},
        {"text": "Done."},
    )
    await raw.initialize(replay_options(script))
    msg_id = raw.send_request(
        "cleveragents/run", {"prompt": "go", "sandboxRoot": str(sandbox), "workDoneToken": 77}
    )
    begin = await raw.wait_for(lambda m: m.get("method") == "$/progress")
    assert begin["params"]["token"] == 77 and begin["params"]["value"]["kind"] == "begin"
    await raw.wait_for(lambda m: m.get("method") == "cleveragents/toolCallStarted")
    raw.notify("window/workDoneProgress/cancel", {"token": 77})
    answer = await raw.response(msg_id)
    assert answer["result"]["stopReason"] == "cancelled"
    kinds = [p["value"]["kind"] for p in raw.notifications("$/progress")]
    assert kinds[0] == "begin" and kinds[-1] == "end"


async def test_a_tool_thread_stuck_for_good_does_not_keep_the_daemon_alive(
    raw: RawDaemon, tmp_path: Path, sandbox: Path
) -> None:
    script = write_script(
        tmp_path / "s.json",
        {"text": "", "tool_calls": [call("block_until_file", name="never")]},
        {"text": "Done."},
    )
    await raw.initialize(replay_options(script))
    raw.send_request(
        "cleveragents/run", {"prompt": "go", "sandboxRoot": str(sandbox), "runId": "stuck"}
    )
    await raw.wait_for(lambda m: m.get("method") == "cleveragents/toolCallStarted")
    assert await raw.close() == 1
    finished = raw.notifications("cleveragents/runFinished")
    assert [f["stopReason"] for f in finished] == ["cancelled"]


async def test_non_utf8_file_names_and_surrogates_lose_no_notification(
    raw: RawDaemon, tmp_path: Path, sandbox: Path
) -> None:
    # A file name that is not UTF-8 reaches Python as a lone surrogate ("caf\udce9.txt").
    os.close(os.open(os.path.join(os.fsencode(sandbox), b"caf\xe9.txt"), os.O_CREAT | os.O_WRONLY))
    script = write_script(
        tmp_path / "script.json",
        {"tool_calls": [call("list_dir", "c1")]},
        {"text": "Done \ud800."},
    )
    await raw.initialize(replay_options(script, builtinTools=True))
    answer = await raw.request(
        "cleveragents/run", {"prompt": "look \ud800", "sandboxRoot": str(sandbox), "runId": "r1"}
    )
    assert answer["result"]["toolCallHistory"][0]["success"]
    seqs = [m["params"]["seq"] for m in raw.received if m.get("params", {}).get("runId") == "r1"]
    assert seqs == list(range(1, len(seqs) + 1))
    assert len(raw.notifications("cleveragents/toolCall")) == 1
    stored = await raw.request("cleveragents/getRun", {"runId": "r1"})
    assert len(stored["result"]["toolCallHistory"]) == 1


async def test_a_nul_in_the_sandbox_root_is_invalid_params(raw: RawDaemon, tmp_path: Path) -> None:
    await raw.initialize(replay_options(simple_script(tmp_path)))
    for root in ("/tmp/a\u0000b", "file:///tmp/%00"):
        answer = await raw.request("cleveragents/run", {"prompt": "x", "sandboxRoot": root})
        assert answer["error"]["code"] == wire.INVALID_PARAMS, answer


async def test_one_invalid_params_error_names_bad_types_and_bad_values_together(
    raw: RawDaemon, tmp_path: Path, sandbox: Path
) -> None:
    await raw.initialize(replay_options(simple_script(tmp_path)))
    start = len(raw.received)
    msg_id = raw.send_request(
        "cleveragents/run",
        {
            "prompt": " ",  # a bad value
            "sandboxRoot": str(sandbox),
            "maxIterations": "5",  # the wrong type
            "maxTokens": 0,  # a bad value
            "runId": "bad id!",  # a bad value
        },
    )
    error = await raw.error(msg_id, start)
    assert error["code"] == wire.INVALID_PARAMS
    assert [p.split(":")[0] for p in error["data"]["problems"]] == [
        "params.maxIterations",
        "params.prompt",
        "params.maxTokens",
        "params.runId",
    ], error
    assert "expected an integer" in error["data"]["problems"][0]
    assert error["message"] == "invalid params: " + "; ".join(error["data"]["problems"])
    await run_ok(raw, sandbox)


async def test_a_late_answer_to_a_withdrawn_approval_is_no_warning(
    raw: RawDaemon, tmp_path: Path, sandbox: Path
) -> None:
    script = write_script(
        tmp_path / "s.json",
        {"text": "", "tool_calls": [call("write_note", "n1", name="f", text="x")]},
        {"text": "Done."},
    )
    await raw.initialize(
        replay_options(script), capabilities={"experimental": {"cleveragents": {"approvals": True}}}
    )
    run_id = raw.send_request(
        "cleveragents/run", {"prompt": "go", "sandboxRoot": str(sandbox), "runId": "late"}
    )
    asked = await raw.wait_for(lambda m: m.get("method") == "cleveragents/approveToolCall")
    await raw.request("cleveragents/cancel", {"runId": "late"})
    await raw.wait_for(
        lambda m: m.get("method") == "$/cancelRequest" and m["params"]["id"] == asked["id"]
    )
    # The client answers anyway, as LSP clients must: normal, not worth a warning.
    raw.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"decision": "allow"}})
    assert (await raw.response(run_id))["result"]["stopReason"] == "cancelled"
    # An answer to a request the daemon never sent still is.
    raw.send({"jsonrpc": "2.0", "id": "never-sent", "result": {}})
    assert "result" in await raw.request("cleveragents/tools", {})
    await raw.close()
    warnings = [line for line in raw.stderr.decode().splitlines() if " WARNING " in line]
    assert any("never-sent" in line for line in warnings), warnings
    assert not any(repr(asked["id"]) in line for line in warnings), warnings
    assert not (sandbox / "f").exists()
