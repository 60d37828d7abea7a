"""Undo in ACP mode: the `/undo` and `/restore N` slash commands, through the real agent."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, text_block

from cleveragents.service.history import RunHistory
from support.acp_support import (
    TO_CLIENT,
    RecordingClient,
    StartAgent,
    call,
    replay_env,
    write_script,
)

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def ours(response: Any) -> dict[str, Any]:
    return dict((response.field_meta or {}).get("cleveragents") or {})


async def test_undo_and_restore_commands_put_the_files_back(
    tmp_path: Path, sandbox: Path, start_agent: StartAgent
) -> None:
    (sandbox / "notes.txt").write_text("before\n")
    script = write_script(
        tmp_path / "script.json",
        {"tool_calls": [call("write_file", "c1", path="notes.txt", content="step one\n")]},
        {"tool_calls": [call("write_file", "c2", path="new.txt", content="step two\n")]},
        {"text": "Both done."},
    )
    client = RecordingClient()
    env = replay_env(tmp_path, script, CLEVERAGENTS_PROFILE="full-auto")
    async with start_agent(env, client=client) as agent:
        await agent.conn.initialize(protocol_version=PROTOCOL_VERSION)
        session = await agent.conn.new_session(cwd=str(sandbox), mcp_servers=[])
        sid = session.session_id
        advertised = await client.wait_for_update(
            lambda u: u.session_update == "available_commands_update"
        )
        assert [c.name for c in advertised.available_commands] == ["undo", "restore"]
        assert advertised.available_commands[1].input.root.hint == "N [RUN_ID]"
        # Sent after the session/new response: the client knows the session by then.
        to_client = [m for d, m in agent.messages() if d == TO_CLIENT]
        answered = next(i for i, m in enumerate(to_client) if "sessionId" in m.get("result", {}))
        listed = next(i for i, m in enumerate(to_client) if m.get("method") == "session/update")
        assert answered < listed

        async def prompt(text: str) -> Any:
            return await agent.conn.prompt(session_id=sid, prompt=[text_block(text)])

        nothing = await prompt("/undo")
        assert ours(nothing)["error"]["code"] == -32602
        ran = await prompt("Write the notes.")
        run_id = ours(ran)["runId"]
        assert (sandbox / "notes.txt").read_text() == "step one\n"
        assert (sandbox / "new.txt").read_text() == "step two\n"

        undone = await prompt("/undo")
        assert undone.stop_reason == "end_turn"
        assert ours(undone)["runId"] == run_id
        assert {(c["path"], c["change"]) for c in ours(undone)["changedFiles"]} == {
            ("notes.txt", "modified"),
            ("new.txt", "deleted"),
        }
        assert (sandbox / "notes.txt").read_text() == "before\n"
        assert not (sandbox / "new.txt").exists()
        assert "Restored 2 file(s)" in client.text(sid) and "Type /undo" in client.text(sid)

        redone = await prompt("/undo")  # undoes the restore
        assert ours(redone)["runId"] == ours(undone)["restoreId"]
        assert (sandbox / "new.txt").read_text() == "step two\n"

        back = await prompt("/restore 2")  # before step 2 of the last prompt: step 1 stays
        assert [(c["path"], c["change"]) for c in ours(back)["changedFiles"]] == [
            ("new.txt", "deleted")
        ]
        assert (sandbox / "notes.txt").read_text() == "step one\n"
        assert not (sandbox / "new.txt").exists()

        wrong = await prompt("/restore two")
        assert ours(wrong)["error"]["code"] == -32602 and ours(wrong)["restoreId"] is None
        assert "Not restored: use /restore N" in client.text(sid)
        far = await prompt(f"/restore 9 {run_id}")
        assert "params.iteration" in ours(far)["error"]["message"]

    with RunHistory(tmp_path / "history.sqlite3") as history:
        kinds = [(r.kind, r.restored_run_id) for r in history.list_runs()]
        assert kinds == [
            ("restore", run_id),
            ("restore", ours(undone)["restoreId"]),
            ("restore", run_id),
            ("run", None),
        ]
