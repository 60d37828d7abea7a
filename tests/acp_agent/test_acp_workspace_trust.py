"""ACP mode asks with `session/request_permission` before a workspace's `.mcp.json` starts
anything, and remembers the answer for that exact file.

The server is the real demo server, which appends its pid to a marker file as it starts.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from acp import PROTOCOL_VERSION, text_block
from acp.schema import PermissionOption, ToolCallUpdate

from mcp_fixtures.marked import (
    DEMO_ENV_SHOWN,
    DEMO_SERVER,
    SECRET_VALUE,
    starts,
    write_demo_config,
)
from support.acp_support import RecordingClient, StartAgent, call, replay_env, write_script


async def test_the_editor_is_asked_and_nothing_starts_until_it_trusts_the_file(
    tmp_path: Path, sandbox: Path, start_agent: StartAgent
) -> None:
    marker = tmp_path / "marker"
    write_demo_config(sandbox, marker)
    script = write_script(
        tmp_path / "script.json",
        {"tool_calls": [call("demo__echo", "c_echo", text="hi")]},
        {"text": "Done."},
    )
    client = RecordingClient()
    answers = ["distrust", "trust"]
    asked: list[ToolCallUpdate] = []

    async def answer(tool_call: ToolCallUpdate, options: list[PermissionOption]) -> str:
        assert tool_call.tool_call_id.startswith("trust_"), tool_call.title
        assert {o.option_id: o.kind for o in options} == {
            "trust": "allow_always",
            "distrust": "reject_always",
        }
        asked.append(tool_call)
        return answers.pop(0)

    client.answer = answer
    env = replay_env(tmp_path, script, CLEVERAGENTS_PROFILE="full-auto")
    async with start_agent(env, client=client) as agent:
        await agent.conn.initialize(protocol_version=PROTOCOL_VERSION)
        sid = (await agent.conn.new_session(cwd=str(sandbox), mcp_servers=[])).session_id

        declined = await agent.conn.prompt(session_id=sid, prompt=[text_block("Echo.")])
        assert declined.stop_reason == "end_turn"
        assert starts(marker) == 0
        (question,) = asked
        assert question.raw_input is not None
        servers = question.raw_input["servers"]
        assert servers == [
            {
                "name": "demo",
                "command": sys.executable,
                "args": [DEMO_SERVER, "--marker", str(marker)],
                "envNames": ["DEMO_TOKEN"],
                "program": os.path.normpath(sys.executable),
                "programInWorkspace": False,
                "env": DEMO_ENV_SHOWN,
            }
        ]
        shown = client.tool_updates(sid, question.tool_call_id)
        assert [(u.session_update, u.status) for u in shown] == [
            ("tool_call", "pending"),
            ("tool_call_update", "failed"),
        ]
        assert "--marker" in shown[0].content[0].content.text
        assert f"runs {os.path.normpath(sys.executable)}" in shown[0].content[0].content.text
        assert "sets DEMO_TOKEN=<hidden: 12 characters>" in shown[0].content[0].content.text
        assert SECRET_VALUE not in json.dumps([u.model_dump() for u in shown], default=str)
        echo = client.tool_updates(sid, "c_echo")
        assert echo[-1].status == "failed" and "unknown_tool" in json.dumps(echo[-1].field_meta)

        # Remembered: the next prompt does not ask, and still starts nothing.
        await agent.conn.prompt(session_id=sid, prompt=[text_block("Echo again.")])
        assert len(asked) == 1 and starts(marker) == 0

        # The file changes: asked again; trusted, the server starts and its tool answers.
        write_demo_config(sandbox, marker, "main")
        trusted = await agent.conn.prompt(session_id=sid, prompt=[text_block("And now?")])
        assert trusted.stop_reason == "end_turn"
        assert len(asked) == 2 and starts(marker) == 1
        assert "echo: hi" in json.dumps(client.tool_updates(sid, "c_echo")[-1].raw_output)


async def test_read_only_sessions_start_nothing_and_ask_nothing(
    tmp_path: Path, sandbox: Path, start_agent: StartAgent
) -> None:
    marker = tmp_path / "marker"
    write_demo_config(sandbox, marker)
    script = write_script(tmp_path / "script.json", {"text": "Fine."})
    env = replay_env(tmp_path, script, CLEVERAGENTS_TRUST_WORKSPACE="1")
    async with start_agent(env) as agent:  # its client fails the test if it is asked
        await agent.conn.initialize(protocol_version=PROTOCOL_VERSION)
        session = await agent.conn.new_session(
            cwd=str(sandbox), mcp_servers=[], cleveragents={"automationProfile": "read-only"}
        )
        answer = await agent.conn.prompt(session_id=session.session_id, prompt=[text_block("Hi")])
        assert answer.stop_reason == "end_turn"
    assert starts(marker) == 0
