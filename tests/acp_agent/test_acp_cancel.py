"""Stop means stop, through `cleveragents serve --acp` and the ACP SDK's client.

Editors stop a turn with a permission request open by sending `session/cancel` and answering
the request `{"outcome": "cancelled"}` back to back (the ACP spec lets them); some answer
`cancelled` alone. In every order, after the cancel the agent sends no `tool_call` and no
`session/request_permission`, runs no tool, answers the prompt `cancelled`, and stores the
run cancelled with the pending call recorded as cancelled. Each order runs 20 prompts in one
session (a race hides in the 1 in 20).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from acp import text_block
from acp.schema import PermissionOption, ToolCallUpdate

from cleveragents.service.history import RunHistory
from mcp_fixtures.marked import starts, write_demo_config
from support.acp_support import (
    TO_AGENT,
    TO_CLIENT,
    AgentProcess,
    RecordingClient,
    StartAgent,
    call,
    open_session,
    ours,
    replay_env,
    write_script,
)

PROMPTS = 20
PERMISSION = "session/request_permission"


def writes(tmp_path: Path) -> str:
    """A model that writes a new file at each step: one extra step would show."""
    return write_script(
        tmp_path / "script.json",
        {"text": "Writing.", "tool_calls": [call("write_file", "c1", path="one.txt", content="1")]},
        {"tool_calls": [call("write_file", "c2", path="two.txt", content="2")]},
        {"text": "Should not get here."},
    )


def send_together(agent: AgentProcess, *messages: dict[str, Any]) -> None:
    """Several messages in one write to the agent's stdin, recorded as sent."""
    lines = [json.dumps({"jsonrpc": "2.0", **m}).encode() + b"\n" for m in messages]
    agent.wire.extend((TO_AGENT, line) for line in lines)
    agent.inject(b"".join(lines))


def sent_after(agent: AgentProcess, mark: int) -> list[dict[str, Any]]:
    return [json.loads(line) for d, line in agent.wire[mark:] if d == TO_CLIENT]


def forbidden(messages: list[dict[str, Any]]) -> list[str]:
    """Anything that would mean the run went on: a new call announced, a new question."""
    found = []
    for message in messages:
        method = message.get("method")
        if method == PERMISSION:
            found.append(PERMISSION)
        elif method == "session/update":
            update = message["params"]["update"]
            if update["sessionUpdate"] == "tool_call":
                found.append(f"tool_call {update['toolCallId']}")
            elif update["sessionUpdate"] == "agent_message_chunk":
                found.append(f"text {update['content'].get('text')!r}")
            elif update.get("toolCallId") != "c1":
                found.append(f"update of {update.get('toolCallId')}")
    return found


@pytest.mark.parametrize(
    "order", ["cancel_then_cancelled", "cancelled_then_cancel", "cancelled_alone"]
)
async def test_a_cancelled_permission_request_stops_the_turn_in_every_order(
    order: str, tmp_path: Path, sandbox: Path, start_agent: StartAgent
) -> None:
    client = RecordingClient()
    marks: list[int] = []
    never = asyncio.Event()  # the SDK's own answer, when we answered past it, never goes out

    async def answer(tool_call: ToolCallUpdate, options: list[PermissionOption]) -> str | None:
        marks.append(len(agent.wire))
        if order == "cancelled_alone":
            return None  # the SDK answers {"outcome": "cancelled"}; no session/cancel
        (request_line,) = [
            line
            for d, line in agent.wire
            if d == TO_CLIENT and json.loads(line).get("method") == PERMISSION
        ][-1:]
        request_id = json.loads(request_line)["id"]
        cancel = {"method": "session/cancel", "params": {"sessionId": sid}}
        cancelled = {"id": request_id, "result": {"outcome": {"outcome": "cancelled"}}}
        if order == "cancel_then_cancelled":
            send_together(agent, cancel, cancelled)
        else:
            send_together(agent, cancelled, cancel)
        await never.wait()
        return None

    client.answer = answer
    run_ids: list[str] = []
    async with start_agent(replay_env(tmp_path, writes(tmp_path)), client=client) as agent:
        sid = await open_session(agent.conn, sandbox)
        for n in range(PROMPTS):
            response = await agent.conn.prompt(session_id=sid, prompt=[text_block("Write.")])
            assert response.stop_reason == "cancelled", n
            assert len(agent.received(PERMISSION)) == n + 1, n  # one question per prompt
            after = sent_after(agent, marks[-1])
            assert forbidden(after) == [], (n, forbidden(after))
            (finished,) = [
                m["params"]["update"]
                for m in after
                if m.get("method") == "session/update"
                and m["params"]["update"].get("toolCallId") == "c1"
            ]
            assert finished["status"] == "failed"
            assert finished["_meta"]["cleveragents"]["errorKind"] == "cancelled"
            assert list(sandbox.iterdir()) == [], n
            run_ids.append(ours(response)["runId"])
    with RunHistory(tmp_path / "history.sqlite3") as history:
        for run_id in run_ids:
            stored = history.get_run(run_id)
            assert stored is not None and stored.status == "cancelled", run_id
            assert [(r.call_id, r.error_kind) for r in stored.records] == [("c1", "cancelled")]


@pytest.mark.parametrize("answered", ["never", "trusted_in_the_same_write"])
async def test_a_cancel_during_the_trust_question_starts_nothing(
    answered: str, tmp_path: Path, sandbox: Path, start_agent: StartAgent
) -> None:
    """session/cancel while the workspace-trust question is open (left open, or answered
    `trust` right behind the cancel): no server starts, nothing is remembered, the model is
    never asked (no tool_call), and the prompt answers `cancelled`."""
    marker = tmp_path / "marker"
    write_demo_config(sandbox, marker)
    script = write_script(
        tmp_path / "script.json",
        {"tool_calls": [call("demo__echo", "c_echo", text="hi")]},
        {"text": "Should not get here."},
    )
    client = RecordingClient()
    marks: list[int] = []
    never = asyncio.Event()

    async def answer(tool_call: ToolCallUpdate, options: list[PermissionOption]) -> str | None:
        assert tool_call.tool_call_id.startswith("trust_")
        marks.append(len(agent.wire))
        cancel = {"method": "session/cancel", "params": {"sessionId": sid}}
        if answered == "never":
            send_together(agent, cancel)
        else:
            request_id = json.loads(
                [ln for d, ln in agent.wire if d == TO_CLIENT and PERMISSION.encode() in ln][-1]
            )["id"]
            trusted = {
                "id": request_id,
                "result": {"outcome": {"outcome": "selected", "optionId": "trust"}},
            }
            send_together(agent, cancel, trusted)
        await never.wait()
        return None

    client.answer = answer
    env = replay_env(tmp_path, script, CLEVERAGENTS_PROFILE="full-auto")
    async with start_agent(env, client=client) as agent:
        sid = await open_session(agent.conn, sandbox)
        for n in range(PROMPTS):
            response = await agent.conn.prompt(session_id=sid, prompt=[text_block("Echo.")])
            assert response.stop_reason == "cancelled", n
            # Not remembered: every prompt asks again, once.
            assert len(agent.received(PERMISSION)) == n + 1, n
            after = sent_after(agent, marks[-1])
            updates = [m["params"]["update"] for m in after if m.get("method") == "session/update"]
            assert [u["sessionUpdate"] for u in updates] == ["tool_call_update"], updates
            assert updates[0]["status"] == "failed"  # the question's own call: not trusted
            assert not any(m.get("method") == PERMISSION for m in after)
            assert starts(marker) == 0, n
