"""The editor's side: its files (`fs/read_text_file`, `fs/write_text_file`) and terminals.

The client here is an editor with an unsaved buffer that differs from the disk: the model must
see the buffer, its writes must land in the editor, and a path outside the sandbox must be
refused before the editor is asked anything. Its terminals run real processes: run_command
shows its output there, while the command still runs under our sandbox wall.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, text_block
from acp.schema import ClientCapabilities, FileSystemCapabilities, Implementation

from cleveragents.workspace import bubblewrap_status
from support.acp_support import WAIT_S, RecordingClient, StartAgent, call, replay_env, write_script


async def open_session(conn: Any, cwd: Path, capabilities: ClientCapabilities) -> str:
    await conn.initialize(
        protocol_version=PROTOCOL_VERSION,
        client_capabilities=capabilities,
        client_info=Implementation(name="acp-tests", version="1"),
    )
    return str((await conn.new_session(cwd=str(cwd), mcp_servers=[])).session_id)


def final(client: RecordingClient, sid: str, call_id: str) -> Any:
    return client.tool_updates(sid, call_id)[-1]


async def test_file_tools_read_and_write_through_the_editor_inside_the_wall(
    tmp_path: Path, sandbox: Path, start_agent: StartAgent
) -> None:
    notes = sandbox / "notes.txt"
    notes.write_text("saved on disk\n")
    (tmp_path / "outside.txt").write_text("not yours\n")
    script = write_script(
        tmp_path / "script.json",
        {
            "tool_calls": [
                call("read_file", "c_read", path="notes.txt"),
                call("read_file", "c_out", path="../outside.txt"),
                call("write_file", "c_escape", path=str(tmp_path / "x.txt"), content="x"),
            ]
        },
        {
            "tool_calls": [
                call("write_file", "c_write", path="docs/new.md", content="# New\n"),
                call(
                    "edit_file", "c_edit", path="notes.txt", old_text="unsaved", new_text="edited"
                ),
                call("list_dir", "c_list", path="."),
            ]
        },
        {"text": "Done."},
    )
    client = RecordingClient()
    client.buffers[str(notes)] = "unsaved in the editor\n"
    fs = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True, write_text_file=True))
    env = replay_env(tmp_path, script, CLEVERAGENTS_PROFILE="full-auto")
    async with start_agent(env, client=client) as agent:
        sid = await open_session(agent.conn, sandbox, fs)
        answer = await agent.conn.prompt(session_id=sid, prompt=[text_block("Work.")])
        assert answer.stop_reason == "end_turn"

        # The model was told the buffer's text, not the disk's.
        read = final(client, sid, "c_read")
        assert read.status == "completed"
        told = json.dumps(read.raw_output)
        assert "unsaved in the editor" in told and "saved on disk" not in told

        # Outside the sandbox: refused by the wall, and the editor was never asked.
        for call_id in ("c_out", "c_escape"):
            refused = final(client, sid, call_id)
            assert refused.status == "failed"
            assert refused.field_meta["cleveragents"]["errorKind"] == "sandbox_violation"
        assert all(path.startswith(str(sandbox) + "/") for _, path in client.fs_calls)

        # Writes and edits went to the editor; the disk holds what the editor has saved.
        assert final(client, sid, "c_write").status == "completed"
        assert client.buffers[str(sandbox / "docs" / "new.md")] == "# New\n"
        assert not (sandbox / "docs" / "new.md").exists()
        assert final(client, sid, "c_edit").status == "completed"
        assert client.buffers[str(notes)] == "edited in the editor\n"
        assert notes.read_text() == "saved on disk\n"
        # Listing has no fs/ method: it reads the disk, as before.
        assert final(client, sid, "c_list").status == "completed"

        assert client.fs_calls == [
            ("fs/read_text_file", str(notes)),
            ("fs/write_text_file", str(sandbox / "docs" / "new.md")),
            ("fs/read_text_file", str(notes)),
            ("fs/write_text_file", str(notes)),
        ]
        assert not (tmp_path / "x.txt").exists()


async def test_a_client_that_offers_reading_only_gets_no_writes(
    tmp_path: Path, sandbox: Path, start_agent: StartAgent
) -> None:
    notes = sandbox / "notes.txt"
    notes.write_text("disk\n")
    script = write_script(
        tmp_path / "script.json",
        {
            "tool_calls": [
                call("edit_file", "c_edit", path="notes.txt", old_text="buf", new_text="b")
            ]
        },
        {"text": "Done."},
    )
    client = RecordingClient()
    client.buffers[str(notes)] = "buffer\n"
    reads = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True))
    env = replay_env(tmp_path, script, CLEVERAGENTS_PROFILE="full-auto")
    async with start_agent(env, client=client) as agent:
        sid = await open_session(agent.conn, sandbox, reads)
        await agent.conn.prompt(session_id=sid, prompt=[text_block("Edit.")])
        assert final(client, sid, "c_edit").status == "completed"
    # Read from the editor's buffer, written to the disk (the client cannot take writes).
    assert notes.read_text() == "bfer\n"
    assert client.fs_calls == [("fs/read_text_file", str(notes))]


# -- terminals -------------------------------------------------------------------------------

RUNNER = "cleveragents.workspace.terminal_runner"


def processes_running(token: str) -> list[int]:
    """Processes whose command line holds `token` (this test's own command lines aside)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{entry}/stat", "rb") as handle:
                state = handle.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if token in cmdline and state != b"Z":
            found.append(int(entry))
    return found


async def until(condition: Any) -> None:
    """Poll until `condition()` holds (a ceiling against hangs, never a timing assertion)."""
    for _ in range(int(WAIT_S / 0.05)):
        if condition():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the condition never held")


async def test_run_command_shows_its_output_in_an_editor_terminal_under_our_wall(
    tmp_path: Path, sandbox: Path, start_agent: StartAgent
) -> None:
    outside = tmp_path / "written-from-inside.txt"
    script = write_script(
        tmp_path / "script.json",
        {"tool_calls": [call("run_command", "c_cmd", command="echo out; echo err >&2; exit 3")]},
        {"tool_calls": [call("run_command", "c_wall", command=f"echo x > {outside}")]},
        {"tool_calls": [call("run_command", "c_up", command="ls", cwd="..")]},
        {"text": "Done."},
    )
    client = RecordingClient()
    terminals = ClientCapabilities(terminal=True)
    env = replay_env(tmp_path, script, CLEVERAGENTS_PROFILE="full-auto")
    async with start_agent(env, client=client) as agent:
        sid = await open_session(agent.conn, sandbox, terminals)
        answer = await agent.conn.prompt(session_id=sid, prompt=[text_block("Run it.")])
        assert answer.stop_reason == "end_turn"

        # The editor ran our runner, in the sandbox, with the model's command at the end.
        first = client.terminals["term_1"]
        assert first.command == sys.executable and first.args[:2] == ["-m", RUNNER]
        assert first.args[-1] == "echo out; echo err >&2; exit 3" and first.cwd == str(sandbox)
        shown = first.output.decode()
        assert "out" in shown and "err" in shown
        assert first.released

        # The call shows the terminal as it runs and keeps it when done; the model gets the
        # usual result, stdout and stderr apart.
        updates = client.tool_updates(sid, "c_cmd")
        assert [(u.session_update, u.status) for u in updates] == [
            ("tool_call", "in_progress"),
            ("tool_call_update", None),
            ("tool_call_update", "completed"),
        ]
        embedded = updates[1].content[0]
        assert (embedded.type, embedded.terminal_id) == ("terminal", "term_1")
        assert updates[2].content is None
        result = updates[2].raw_output
        assert (result["exit_code"], result["stdout"], result["stderr"]) == (3, "out\n", "err\n")
        assert result["confined"] is bubblewrap_status().available

        # Still inside the wall: a confined command writes nothing outside the sandbox (here
        # the write lands in its private /tmp and vanishes with it).
        assert client.tool_updates(sid, "c_wall")[-1].status == "completed"
        if bubblewrap_status().available:
            assert not outside.exists()
        # A folder outside the sandbox is refused before the editor is asked for a terminal.
        up = client.tool_updates(sid, "c_up")[-1]
        assert up.status == "failed"
        assert up.field_meta["cleveragents"]["errorKind"] == "sandbox_violation"
        assert sorted(client.terminals) == ["term_1", "term_2"]
        assert client.terminal_calls == [
            (method, terminal)
            for terminal in ("term_1", "term_2")
            for method in ("terminal/create", "terminal/wait_for_exit", "terminal/release")
        ]
        # On the wire: each terminal is embedded in its call before it is released.
        wire = [m for _, m in agent.messages()]
        embedded_at = next(
            i
            for i, m in enumerate(wire)
            if m.get("method") == "session/update"
            and m["params"]["update"].get("content")
            == [{"type": "terminal", "terminalId": "term_1"}]
        )
        released_at = next(
            i
            for i, m in enumerate(wire)
            if m.get("method") == "terminal/release" and m["params"]["terminalId"] == "term_1"
        )
        assert embedded_at < released_at


async def test_cancelling_a_command_in_a_terminal_stops_every_process_it_began(
    tmp_path: Path, sandbox: Path, start_agent: StartAgent
) -> None:
    token = f"{os.getpid()}.{len(str(tmp_path))}"
    command = f"sleep 3{token} & sleep 3{token}; wait"
    script = write_script(
        tmp_path / "script.json",
        {"tool_calls": [call("run_command", "c_long", command=command)]},
        {"text": "Should not get here."},
    )
    client = RecordingClient()
    env = replay_env(tmp_path, script, CLEVERAGENTS_PROFILE="full-auto")
    async with start_agent(env, client=client) as agent:
        sid = await open_session(agent.conn, sandbox, ClientCapabilities(terminal=True))
        prompt = asyncio.ensure_future(
            agent.conn.prompt(session_id=sid, prompt=[text_block("Run long.")])
        )
        await client.wait_for_update(
            lambda u: u.session_update == "tool_call_update" and u.content is not None
        )
        await until(lambda: len(processes_running(f"sleep 3{token}")) >= 2)
        await agent.conn.cancel(session_id=sid)
        response = await asyncio.wait_for(prompt, WAIT_S)
        assert response.stop_reason == "cancelled"
        last = client.tool_updates(sid, "c_long")[-1]
        assert last.status == "failed"
        assert last.field_meta["cleveragents"]["errorKind"] == "cancelled"
        # The editor was told to kill it, then to let go; nothing it started is left.
        assert client.terminal_calls[-2:] == [
            ("terminal/kill", "term_1"),
            ("terminal/release", "term_1"),
        ]
        await until(lambda: not processes_running(f"sleep 3{token}"))
