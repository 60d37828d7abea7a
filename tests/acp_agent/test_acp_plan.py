"""The plan and the project instructions over ACP, through the real agent process: `plan`
session updates (each message checked against the ACP schema by `start_agent`), the
instructions named at the top of the turn, and the plan replayed by `session/load`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, text_block
from acp.schema import ClientCapabilities, Implementation

from support.acp_support import RecordingClient, StartAgent, call, replay_env, write_script

STEPS = ["Read the notes", "Write the summary"]


def plan(*statuses: str) -> list[dict[str, str]]:
    return [{"text": text, "status": status} for text, status in zip(STEPS, statuses, strict=True)]


def entries(update: Any) -> list[tuple[str, str, str]]:
    return [(e.content, e.status, e.priority) for e in update.entries]


async def initialize(conn: Any) -> None:
    await conn.initialize(
        protocol_version=PROTOCOL_VERSION,
        client_capabilities=ClientCapabilities(),
        client_info=Implementation(name="acp-tests", version="1"),
    )


async def test_each_plan_is_a_plan_update_and_load_replays_it(
    tmp_path: Path, sandbox: Path, start_agent: StartAgent
) -> None:
    (sandbox / "AGENTS.md").write_text("Keep summaries short.\n")
    (sandbox / "notes.md").write_text("- one\n")
    script = write_script(
        tmp_path / "script.json",
        {
            "text": "Planning.",
            "tool_calls": [call("update_plan", "p1", steps=plan("in_progress", "pending"))],
        },
        {
            "tool_calls": [
                call("read_file", "r1", path="notes.md"),
                call("update_plan", "p2", steps=plan("done", "in_progress")),
            ]
        },
        {"tool_calls": [call("update_plan", "p3", steps=plan("done", "done"))]},
        {"text": "Summary: one."},
    )
    env = replay_env(tmp_path, script)
    client = RecordingClient()
    async with start_agent(env, client=client) as agent:
        await initialize(agent.conn)
        sid = (await agent.conn.new_session(cwd=str(sandbox), mcp_servers=[])).session_id
        response = await agent.conn.prompt(session_id=sid, prompt=[text_block("Summarise.")])
        assert response.stop_reason == "end_turn"
        updates = [
            u
            for u in client.session_updates(sid)
            if u.session_update != "available_commands_update"
        ]

    kinds = [u.session_update for u in updates]
    # The instructions are named first, as a thought, with the files under our _meta.
    assert kinds[0] == "agent_thought_chunk"
    assert updates[0].content.text == "using AGENTS.md, 1 file: AGENTS.md\n"
    (file,) = updates[0].field_meta["cleveragents"]["instructions"]
    assert (file["path"], file["scope"], file["truncated"]) == ("AGENTS.md", "project", False)
    plans = [u for u in updates if u.session_update == "plan"]
    assert [entries(p) for p in plans] == [
        [("Read the notes", "in_progress", "medium"), ("Write the summary", "pending", "medium")],
        [("Read the notes", "completed", "medium"), ("Write the summary", "in_progress", "medium")],
        [("Read the notes", "completed", "medium"), ("Write the summary", "completed", "medium")],
    ]
    # Each plan follows its call's final update; update_plan ran without asking (ask mode).
    for call_id in ("p1", "p2", "p3"):
        finished = next(
            i
            for i, u in enumerate(updates)
            if u.session_update == "tool_call_update"
            and u.tool_call_id == call_id
            and u.status == "completed"
        )
        assert updates[finished + 1].session_update == "plan"
        assert updates[finished + 1].field_meta["cleveragents"]["callId"] == call_id
    starts = [u for u in updates if u.session_update == "tool_call" and u.tool_call_id == "p1"]
    assert starts[0].status == "in_progress" and starts[0].kind == "think"

    replayed_client = RecordingClient()
    async with start_agent(env, client=replayed_client) as again:
        await initialize(again.conn)
        await again.conn.load_session(cwd=str(sandbox), session_id=sid, mcp_servers=[])
        replayed = [
            u
            for u in replayed_client.session_updates(sid)
            if u.session_update != "available_commands_update"
        ]
    replayed_plans = [u for u in replayed if u.session_update == "plan"]
    assert [entries(p) for p in replayed_plans] == [entries(p) for p in plans]
    assert replayed[-1].session_update == "agent_message_chunk"
    assert replayed[-2].session_update == "plan"


async def test_a_session_can_leave_the_instructions_out(
    tmp_path: Path, sandbox: Path, start_agent: StartAgent
) -> None:
    (sandbox / "AGENTS.md").write_text("Keep summaries short.\n")
    script = write_script(tmp_path / "script.json", {"text": "Hi."}, {"text": "Hi again."})
    client = RecordingClient()
    async with start_agent(replay_env(tmp_path, script), client=client) as agent:
        await initialize(agent.conn)
        off = await agent.conn.new_session(
            cwd=str(sandbox), mcp_servers=[], cleveragents={"projectInstructions": False}
        )
        await agent.conn.prompt(session_id=off.session_id, prompt=[text_block("Hello.")])
        on = await agent.conn.new_session(cwd=str(sandbox), mcp_servers=[])
        await agent.conn.prompt(session_id=on.session_id, prompt=[text_block("Hello.")])
    thoughts = [
        [u for u in client.session_updates(sid) if u.session_update == "agent_thought_chunk"]
        for sid in (off.session_id, on.session_id)
    ]
    assert thoughts[0] == []
    assert [t.content.text for t in thoughts[1]] == ["using AGENTS.md, 1 file: AGENTS.md\n"]
