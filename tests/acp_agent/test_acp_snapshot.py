"""ACP shows a workspace checkpoint as a step of its own (a `tool_call` of kind `other`), not
hidden inside the write's time: through the real agent, a real sandbox and git."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from acp import PROTOCOL_VERSION, text_block

from support.acp_support import RecordingClient, StartAgent, call, replay_env, write_script

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


async def test_a_snapshot_is_its_own_step_before_the_write(
    tmp_path: Path, sandbox: Path, start_agent: StartAgent
) -> None:
    for index in range(5):
        (sandbox / f"f{index}.txt").write_text(f"{index}\n")
    script = write_script(
        tmp_path / "script.json",
        {"tool_calls": [call("write_file", "w1", path="notes.txt", content="new\n")]},
        {"text": "Written."},
    )
    client = RecordingClient()
    env = replay_env(tmp_path, script, CLEVERAGENTS_PROFILE="full-auto")
    async with start_agent(env, client=client) as agent:
        await agent.conn.initialize(protocol_version=PROTOCOL_VERSION)
        session = await agent.conn.new_session(cwd=str(sandbox), mcp_servers=[])
        sid = session.session_id
        ran = await agent.conn.prompt(session_id=sid, prompt=[text_block("Write it.")])
        assert ran.stop_reason == "end_turn"
    updates = client.session_updates(sid)
    steps = [
        (index, u)
        for index, u in enumerate(updates)
        if u.session_update in ("tool_call", "tool_call_update")
        and str(u.tool_call_id).startswith("snapshot-")
    ]
    assert steps, "no snapshot step was shown"
    first_index, first = steps[0]
    assert first.session_update == "tool_call" and first.kind == "other"
    last = steps[-1][1]
    assert last.status == "completed"
    match = re.fullmatch(r"Snapshot: (\d+) files, (\d+) ms", last.title)
    assert match, last.title
    meta = last.field_meta["cleveragents"]
    assert meta["snapshot"] is True and meta["iteration"] == 1
    # The five files seen before the write; the time is the snapshot's own, not the write's.
    assert int(match.group(1)) == meta["files"] >= 5
    assert meta["durationMs"] >= 0
    write_done = next(
        index
        for index, u in enumerate(updates)
        if u.session_update == "tool_call_update" and u.tool_call_id == "w1" and u.status
    )
    assert first_index < write_done
    assert (sandbox / "notes.txt").read_text() == "new\n"
