"""Deviations third-party ACP clients showed, each checked through the real ACP SDK client:

- `/undo` and `/restore N` are no sessions of their own in `session/list`, and loading the
  session replays no restore as a user message: a restore stays inside its session;
- a session from `session/new` loads before its first prompt, in this agent or a new one;
- a restore that changes nothing answers `restoreId: null` (the daemon's restore too);
- SIGTERM right after stdin's end: both servers exit with their own code, never by the signal,
  never with a traceback.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, text_block

from support.acp_support import (
    RecordingClient,
    StartAgent,
    agent_command,
    call,
    replay_env,
    write_script,
)
from support.daemon_support import RawDaemon, daemon_command, daemon_env, frame

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def ours(response: Any) -> dict[str, Any]:
    return dict((response.field_meta or {}).get("cleveragents") or {})


def writing_script(tmp_path: Path) -> str:
    return write_script(
        tmp_path / "script.json",
        {"tool_calls": [call("write_file", "c1", path="notes.txt", content="changed\n")]},
        {"text": "Done."},
    )


@needs_git
async def test_restores_stay_inside_their_session(
    tmp_path: Path, sandbox: Path, start_agent: StartAgent
) -> None:
    (sandbox / "notes.txt").write_text("before\n")
    env = replay_env(tmp_path, writing_script(tmp_path), CLEVERAGENTS_PROFILE="full-auto")
    async with start_agent(env) as agent:
        await agent.conn.initialize(protocol_version=PROTOCOL_VERSION)
        sid = (await agent.conn.new_session(cwd=str(sandbox), mcp_servers=[])).session_id

        async def prompt(text: str) -> Any:
            return await agent.conn.prompt(session_id=sid, prompt=[text_block(text)])

        ran = await prompt("Change the notes.")
        undone = await prompt("/undo")
        assert ours(undone)["restoreId"] is not None
        assert (sandbox / "notes.txt").read_text() == "before\n"
        # Before step 1 is where the /undo left the files: nothing to do, nothing recorded.
        again = await prompt(f"/restore 1 {ours(ran)['runId']}")
        assert ours(again)["error"] is None and ours(again)["changedFiles"] == []
        assert ours(again)["restoreId"] is None
        listed = await agent.conn.list_sessions(cwd=str(sandbox))
        assert [s.session_id for s in listed.sessions] == [sid]

    client = RecordingClient()
    async with start_agent(env, client=client) as agent:
        await agent.conn.initialize(protocol_version=PROTOCOL_VERSION)
        await agent.conn.load_session(cwd=str(sandbox), session_id=sid, mcp_servers=[])
        said = [
            u.content.text
            for u in client.session_updates(sid)
            if u.session_update == "user_message_chunk"
        ]
        assert said == ["Change the notes."]


async def test_a_new_session_loads_before_its_first_prompt(
    tmp_path: Path, sandbox: Path, start_agent: StartAgent
) -> None:
    script = write_script(tmp_path / "script.json", {"text": "Hello."})
    env = replay_env(tmp_path, script)
    async with start_agent(env) as agent:
        await agent.conn.initialize(protocol_version=PROTOCOL_VERSION)
        sid = (await agent.conn.new_session(cwd=str(sandbox), mcp_servers=[])).session_id
        await agent.conn.load_session(cwd=str(sandbox), session_id=sid, mcp_servers=[])
    # A client that starts the agent anew for each command (acpx) loads it in another one.
    async with start_agent(env) as agent:
        await agent.conn.initialize(protocol_version=PROTOCOL_VERSION)
        loaded = await agent.conn.load_session(cwd=str(sandbox), session_id=sid, mcp_servers=[])
        assert loaded.modes is not None
        answer = await agent.conn.prompt(session_id=sid, prompt=[text_block("Hi.")])
        assert ours(answer)["runId"] == sid  # the first prompt's run carries the session's id
        listed = await agent.conn.list_sessions(cwd=str(sandbox))
        assert [s.session_id for s in listed.sessions] == [sid]


@needs_git
async def test_the_daemon_answers_a_restore_that_changes_nothing_with_null(
    tmp_path: Path, sandbox: Path
) -> None:
    (sandbox / "notes.txt").write_text("before\n")
    daemon = await RawDaemon.start(tmp_path)
    try:
        await daemon.initialize({"provider": "replay", "replayScript": writing_script(tmp_path)})
        run = await daemon.request(
            "cleveragents/run",
            {"prompt": "go", "sandboxRoot": str(sandbox), "automationProfile": "full-auto"},
        )
        run_id = run["result"]["runId"]
        first = await daemon.request("cleveragents/restore", {"runId": run_id})
        assert first["result"]["restoreId"] is not None
        second = await daemon.request("cleveragents/restore", {"runId": run_id})
        assert second["result"]["restoreId"] is None and second["result"]["changedFiles"] == []
        runs = await daemon.request("cleveragents/runs", {})
        assert [r["kind"] for r in runs["result"]["runs"]] == ["restore", "run"]
    finally:
        daemon.kill()
        await daemon.process.wait()


# -- SIGTERM right after stdin's end ---------------------------------------------------------
# The pause between the two: an editor that quits sends SIGTERM a few milliseconds after it
# closed our stdin; each pause lands the signal in another phase of the shutdown.
PAUSES_S = (0.0, 0.005, 0.02, 0.05)


def _terminate_after_eof(
    command: list[str], env: dict[str, str], hello: bytes, pause: float
) -> tuple[int, str]:
    """Start a server, let it answer its first request, close its stdin, pause, SIGTERM."""
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(hello)
    process.stdin.flush()
    process.stdout.read(1)  # the server answers: it is up, its signal handlers with it
    process.stdin.close()
    time.sleep(pause)  # where the signal lands (an input of the test, never asserted on)
    process.send_signal(signal.SIGTERM)
    process.stdin = None
    _, err = process.communicate(timeout=60)
    return process.returncode, err.decode(errors="replace")


def test_sigterm_right_after_stdin_ends_never_kills_acp_mode(tmp_path: Path) -> None:
    hello = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
    ).encode()
    command = agent_command(tmp_path / "h.sqlite3")
    for pause in PAUSES_S:
        code, err = _terminate_after_eof(command, replay_env(tmp_path, ""), hello + b"\n", pause)
        # The first reason to stop sets the code: stdin's end (0) or the signal (143).
        assert code in (0, 128 + signal.SIGTERM), (pause, code, err)
        assert "Traceback" not in err, err


def test_sigterm_right_after_stdin_ends_never_kills_the_stdio_daemon(tmp_path: Path) -> None:
    hello = frame(
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"processId": None, "capabilities": {}},
            }
        )
    )
    command = daemon_command(tmp_path / "h.sqlite3")
    for pause in PAUSES_S:
        code, err = _terminate_after_eof(command, daemon_env(tmp_path), hello, pause)
        # The first reason to stop sets the code: stdin's end without `shutdown` (1) or the
        # signal (143), as protocol/README.md documents.
        assert code in (1, 128 + signal.SIGTERM), (pause, code, err)
        assert "Traceback" not in err, err
