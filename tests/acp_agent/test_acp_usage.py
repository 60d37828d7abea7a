"""ACP mode with tokens and cost: usage and cost in the prompt response's `_meta`, a full
context window as `max_tokens`, the token settings from the environment and `session/new`'s
`_meta`, and an approval's note in the permission request. The real agent process, the ACP
SDK's client, every message checked against the ACP schema."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, text_block
from acp.schema import PermissionOption, ToolCallUpdate

from cleveragents import jsonrpc_errors as codes
from cleveragents.tool import Usage
from cleveragents.tool.models import price_for
from support.acp_support import (
    RecordingClient,
    StartAgent,
    agent_env,
    call,
    open_session,
    ours,
    replay_env,
)

SONNET = "claude-sonnet-4-5"
FIRST = {"input_tokens": 12_000, "output_tokens": 100, "cache_write_tokens": 10_000}
SECOND = {"input_tokens": 12_500, "output_tokens": 50, "cache_read_tokens": 10_000}


def script(tmp_path: Path, model: str | None, *responses: dict[str, Any]) -> str:
    path = tmp_path / f"script-{model}.json"
    data: dict[str, Any] = {"responses": list(responses)}
    if model is not None:
        data["model"] = model
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def two_calls(tmp_path: Path, model: str | None) -> str:
    return script(
        tmp_path,
        model,
        {"tool_calls": [call("list_dir", "c1", path=".")], "usage": FIRST},
        {"text": "Done.", "usage": SECOND},
    )


async def test_usage_and_cost_are_in_the_prompt_responses_meta(
    tmp_path: Path, sandbox: Path, start_agent: StartAgent
) -> None:
    env = replay_env(tmp_path, two_calls(tmp_path, SONNET), CLEVERAGENTS_PROFILE="full-auto")
    async with start_agent(env) as agent:
        sid = await open_session(agent.conn, sandbox)
        response = await agent.conn.prompt(session_id=sid, prompt=[text_block("Look.")])
    price = price_for(SONNET)
    assert price is not None
    cost = price.cost(Usage(**FIRST)) + price.cost(Usage(**SECOND))
    assert response.stop_reason == "end_turn"
    assert ours(response)["usage"] == {
        "inputTokens": 24_500,
        "outputTokens": 150,
        "cacheReadTokens": 10_000,
        "cacheWriteTokens": 10_000,
        "costUsd": pytest.approx(cost),
    }
    # A model with no known price: the tokens, and no cost rather than a wrong one.
    env = replay_env(tmp_path, two_calls(tmp_path, "my-model"), CLEVERAGENTS_PROFILE="full-auto")
    async with start_agent(env) as agent:
        sid = await open_session(agent.conn, sandbox)
        response = await agent.conn.prompt(session_id=sid, prompt=[text_block("Look.")])
    assert ours(response)["usage"]["costUsd"] is None
    assert ours(response)["usage"]["inputTokens"] == 24_500


async def test_a_full_context_window_is_max_tokens(
    tmp_path: Path, sandbox: Path, start_agent: StartAgent
) -> None:
    steps = two_calls(tmp_path, SONNET)
    long_prompt = "word " * 20_000
    # From the environment.
    env = replay_env(tmp_path, steps, CLEVERAGENTS_CONTEXT_WINDOW="4096")
    async with start_agent(env) as agent:
        sid = await open_session(agent.conn, sandbox)
        response = await agent.conn.prompt(session_id=sid, prompt=[text_block(long_prompt)])
        assert response.stop_reason == "max_tokens"
        assert ours(response)["iterations"] == 0
    # From session/new's _meta, for that session only.
    env = replay_env(tmp_path, steps, CLEVERAGENTS_PROFILE="full-auto")
    async with start_agent(env) as agent:
        small = await open_session(agent.conn, sandbox, cleveragents={"contextWindow": 4096})
        response = await agent.conn.prompt(session_id=small, prompt=[text_block(long_prompt)])
        assert response.stop_reason == "max_tokens"
        other = await agent.conn.new_session(cwd=str(sandbox), mcp_servers=[])
        response = await agent.conn.prompt(
            session_id=other.session_id, prompt=[text_block(long_prompt)]
        )
        assert response.stop_reason == "end_turn"


async def test_bad_token_settings_are_refused_naming_them(
    tmp_path: Path, sandbox: Path, start_agent: StartAgent
) -> None:
    env = replay_env(tmp_path, two_calls(tmp_path, SONNET))
    async with start_agent(env) as agent:
        await open_session(agent.conn, sandbox)
        for meta, named in (
            ({"toolResultBudget": 5}, "_meta.cleveragents.toolResultBudget: must be between"),
            ({"contextWindow": "big"}, "_meta.cleveragents.contextWindow: expected an integer"),
            ({"promptCaching": "no"}, "_meta.cleveragents.promptCaching: expected true or false"),
            (
                {"projectInstructions": 0},
                "_meta.cleveragents.projectInstructions: expected true or false",
            ),
        ):
            with pytest.raises(RequestError) as refused:
                await agent.conn.new_session(cwd=str(sandbox), mcp_servers=[], cleveragents=meta)
            assert refused.value.code == codes.INVALID_PARAMS
            assert named in str(refused.value.data)
    # A bad variable stops the agent at start, naming it (exit 2).
    done = subprocess.run(
        [sys.executable, "-m", "cleveragents", "serve", "--acp", "--no-history"],
        input="",
        capture_output=True,
        text=True,
        timeout=60,
        env=agent_env(tmp_path, CLEVERAGENTS_TOOL_RESULT_BUDGET="lots"),
    )
    assert done.returncode == 2
    assert "$CLEVERAGENTS_TOOL_RESULT_BUDGET: expected a whole number, got 'lots'" in done.stderr


async def test_the_permission_request_shows_why_a_command_is_asked_about(
    tmp_path: Path, sandbox: Path, start_agent: StartAgent
) -> None:
    steps = script(
        tmp_path,
        None,
        {"tool_calls": [call("run_command", "c_cmd", command="echo hi")]},
        {"text": "Done."},
    )
    client = RecordingClient()
    asked: list[ToolCallUpdate] = []

    async def deny(tool_call: ToolCallUpdate, options: list[PermissionOption]) -> str:
        asked.append(tool_call)
        return "deny"

    client.answer = deny
    # A machine without bubblewrap (the real setting): the command would run unconfined, and
    # full-auto still asks.
    env = replay_env(
        tmp_path, steps, CLEVERAGENTS_PROFILE="full-auto", CLEVERAGENTS_COMMAND_BWRAP="none"
    )
    async with start_agent(env, client=client) as agent:
        sid = await open_session(agent.conn, sandbox)
        await agent.conn.prompt(session_id=sid, prompt=[text_block("Say hi.")])
    (tool_call,) = asked
    assert tool_call.title is not None
    assert tool_call.title.startswith("run_command: echo hi ⚠ run_command would run unconfined")
    assert len(tool_call.title) <= 120
    assert tool_call.content is not None
    shown = tool_call.content[0].content.text
    assert shown.startswith("⚠ run_command would run unconfined")
    assert "CLEVERAGENTS_ALLOW_UNCONFINED_COMMANDS" in shown
    assert (tool_call.field_meta or {})["cleveragents"]["note"] == shown.removeprefix("⚠ ")
