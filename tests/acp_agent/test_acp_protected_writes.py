"""ACP: "always allow" for run_command does not answer a protected-write question.

The real agent (`cleveragents serve --acp`) over stdio with the SDK's client: the first
command is allowed always; the second plants `core.fsmonitor` in a new repository, runs
without being asked (always allowed), and is then asked about what it wrote, with no
"always" on offer. The answer no undoes it.
"""

from __future__ import annotations

from pathlib import Path

from acp import text_block
from acp.schema import PermissionOption, ToolCallUpdate

from support.acp_support import (
    RecordingClient,
    StartAgent,
    call,
    open_session,
    ours,
    replay_env,
    write_script,
)


async def test_always_allow_for_run_command_does_not_answer_a_protected_write(
    tmp_path: Path, sandbox: Path, start_agent: StartAgent
) -> None:
    marker = tmp_path / "pwned"
    plant = f"git init -q . && git config core.fsmonitor 'touch {marker}'"
    script = write_script(
        tmp_path / "script.json",
        {"tool_calls": [call("run_command", "c_first", command="echo first")]},
        {"tool_calls": [call("run_command", "c_plant", command=plant)]},
        {"text": "done"},
    )
    client = RecordingClient()
    offered: dict[str, set[str]] = {}

    async def answer(tool_call: ToolCallUpdate, options: list[PermissionOption]) -> str:
        offered[tool_call.tool_call_id] = {option.kind for option in options}
        # Always allow whenever it is offered; otherwise refuse.
        return "allow_for_run" if "allow_always" in offered[tool_call.tool_call_id] else "deny"

    client.answer = answer
    async with start_agent(replay_env(tmp_path, script), client=client) as agent:
        sid = await open_session(agent.conn, sandbox)
        response = await agent.conn.prompt(session_id=sid, prompt=[text_block("Go.")])
        assert response.stop_reason == "end_turn"

        asked = [
            (tc.tool_call_id, ours(tc).get("protected")) for _, tc, _ in client.permission_requests
        ]
        assert asked == [("c_first", False), ("c_plant", True)]
        assert offered["c_plant"] == {"allow_once", "reject_once"}
        question = client.permission_requests[1][1]
        assert "core.fsmonitor" in (ours(question).get("note") or "")

    config = (sandbox / ".git" / "config").read_text()
    assert "fsmonitor" not in config
    assert not marker.exists()
