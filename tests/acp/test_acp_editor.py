"""The editor's side of the files: `fs/read_text_file` and `fs/write_text_file`.

The client here is an editor with an unsaved buffer that differs from the disk: the model must
see the buffer, its writes must land in the editor, and a path outside the sandbox must be
refused before the editor is asked anything.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, text_block
from acp.schema import ClientCapabilities, FileSystemCapabilities, Implementation
from acp_support import RecordingClient, StartAgent, call, replay_env, write_script


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
