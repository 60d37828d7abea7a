"""Tokens and cost through the real daemon: `cleveragents/usage` after each model call, usage and
cost in runFinished, RunResult, the run list and getRun (against the schema); the token and
command settings at every level, bad values refused naming the field; attached files reaching
the model through the real Anthropic SDK; the note of an approval request."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cleveragents.protocol import wire
from cleveragents.tool import Usage
from cleveragents.tool.models import ModelPrice, price_for
from support.daemon_lsp import lsp_session
from support.daemon_support import RawDaemon, call, check_against_schema, replay_options
from support.fake_anthropic import API_KEY, FakeAnthropic, StreamReply, Text, ToolUse

SONNET = "claude-sonnet-4-5"
FIRST = {"input_tokens": 12_000, "output_tokens": 100, "cache_write_tokens": 10_000}
SECOND = {"input_tokens": 12_500, "output_tokens": 50, "cache_read_tokens": 10_000}


def script(path: Path, model: str | None = SONNET) -> str:
    data: dict[str, Any] = {
        "responses": [
            {
                "text": "Pausing.",
                "tool_calls": [call("pause", "c1", seconds=0.01, label="x")],
                "usage": FIRST,
            },
            {"text": "Done.", "usage": SECOND},
        ]
    }
    if model is not None:
        data["model"] = model
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def wire_usage(usage: Usage, cost: float | None) -> dict[str, Any]:
    return {
        "inputTokens": usage.input_tokens,
        "outputTokens": usage.output_tokens,
        "cacheReadTokens": usage.cache_read_tokens,
        "cacheWriteTokens": usage.cache_write_tokens,
        "costUsd": cost,
    }


def approx_usage(data: dict[str, Any]) -> dict[str, Any]:
    cost = data["costUsd"]
    return {**data, "costUsd": None if cost is None else pytest.approx(cost)}


async def run(raw: RawDaemon, params: dict[str, Any]) -> dict[str, Any]:
    answer = await raw.request("cleveragents/run", params)
    assert "result" in answer, answer
    result: dict[str, Any] = answer["result"]
    return result


def sonnet() -> ModelPrice:
    price = price_for(SONNET)
    assert price is not None
    return price


async def test_usage_follows_each_model_call_and_shows_in_every_result(
    raw: RawDaemon, tmp_path: Path, sandbox: Path
) -> None:
    await raw.initialize(replay_options(script(tmp_path / "s.json")))
    result = await run(raw, {"prompt": "go", "sandboxRoot": str(sandbox), "runId": "r1"})
    first, second = Usage(**FIRST), Usage(**SECOND)
    total = Usage(**FIRST)
    total.add(second)
    price = sonnet()
    cost = price.cost(first) + price.cost(second)
    expected_total = wire_usage(total, cost)
    assert approx_usage(expected_total) == result["usage"]
    check_against_schema("cleveragents/run", result, "result")

    notes = [m for m in raw.received if m.get("method", "").startswith("cleveragents/")]
    assert [n["params"]["seq"] for n in notes] == list(range(1, len(notes) + 1))
    methods = [n["method"].removeprefix("cleveragents/") for n in notes]
    # After the model's text and before the tools it asked for; the last one before the end.
    assert methods[:6] == [
        "runStarted",
        "iterationStarted",
        "textDelta",
        "usage",
        "toolCallStarted",
        "toolCall",
    ]
    assert methods[-2:] == ["usage", "runFinished"]
    usages = [n["params"] for n in notes if n["method"] == "cleveragents/usage"]
    for note in notes:
        check_against_schema(note["method"], note["params"])
    assert [u["iteration"] for u in usages] == [1, 2]
    assert usages[0]["usage"] == approx_usage(wire_usage(first, price.cost(first)))
    assert usages[0]["total"] == usages[0]["usage"]
    assert usages[1]["usage"] == approx_usage(wire_usage(second, price.cost(second)))
    assert usages[1]["total"] == approx_usage(expected_total)
    finished = notes[-1]["params"]
    assert finished["usage"] == approx_usage(expected_total)

    listed = (await raw.request("cleveragents/runs", {}))["result"]
    check_against_schema("cleveragents/runs", listed, "result")
    assert listed["runs"][0]["usage"] == approx_usage(expected_total)
    detail = (await raw.request("cleveragents/getRun", {"runId": "r1"}))["result"]
    check_against_schema("cleveragents/getRun", detail, "result")
    assert detail["usage"] == approx_usage(expected_total)
    assert detail["iterationUsage"] == [
        {"iteration": 1, "usage": usages[0]["usage"]},
        {"iteration": 2, "usage": usages[1]["usage"]},
    ]
    assert await raw.close() == 1


async def test_an_unknown_models_cost_is_null_until_a_price_is_set(
    tmp_path: Path, sandbox: Path
) -> None:
    steps = script(tmp_path / "s.json", model="my-local-model")
    raw = await RawDaemon.start(tmp_path)
    try:
        await raw.initialize(replay_options(steps))
        result = await run(raw, {"prompt": "go", "sandboxRoot": str(sandbox)})
        assert result["usage"]["costUsd"] is None and result["usage"]["inputTokens"] == 24_500
        usages = raw.notifications("cleveragents/usage")
        assert [(u["usage"]["costUsd"], u["total"]["costUsd"]) for u in usages] == [
            (None, None)
        ] * 2
        (summary,) = (await raw.request("cleveragents/runs", {}))["result"]["runs"]
        assert summary["usage"]["costUsd"] is None
    finally:
        raw.kill()
        await raw.process.wait()
    # A price from the environment, and one from initializationOptions over it.
    env_prices = {
        "my-local-model": {"input": 100, "output": 100},
        "other": {"input": 1, "output": 1},
    }
    raw = await RawDaemon.start(tmp_path, env={"CLEVERAGENTS_PRICES": json.dumps(env_prices)})
    try:
        options = replay_options(
            steps, prices={"my-local-model": {"input": 1, "output": 2, "cacheRead": 0.1}}
        )
        await raw.initialize(options)
        result = await run(raw, {"prompt": "go", "sandboxRoot": str(sandbox)})
    finally:
        raw.kill()
        await raw.process.wait()
    price = ModelPrice(input=1, output=2, cache_write=1, cache_read=0.1)
    expected = price.cost(Usage(**FIRST)) + price.cost(Usage(**SECOND))
    assert result["usage"]["costUsd"] == pytest.approx(expected)


async def test_bad_settings_are_refused_naming_each_field(tmp_path: Path, sandbox: Path) -> None:
    steps = script(tmp_path / "s.json")
    raw = await RawDaemon.start(tmp_path, env={"CLEVERAGENTS_CONTEXT_WINDOW": "lots"})
    try:
        answer = await raw.request(
            "initialize",
            {
                "processId": None,
                "capabilities": {},
                "initializationOptions": replay_options(
                    steps,
                    toolResultBudget=5,
                    promptCaching="yes",
                    prices={"m": {"input": -1, "output": 1}},
                    commandLimits={"processes": 0, "memoryBytes": "lots"},
                    commandEnv=["A=B"],
                    commandReadPaths=["relative/path"],
                ),
            },
        )
        problems = answer["error"]["data"]["problems"]
        assert answer["error"]["code"] == wire.INVALID_PARAMS
        assert [p.split(":")[0] for p in problems] == [
            "initializationOptions.promptCaching",
            "initializationOptions.toolResultBudget",
            "$CLEVERAGENTS_CONTEXT_WINDOW",
            "initializationOptions.prices",
            "initializationOptions.commandReadPaths[0]",
            "initializationOptions.commandEnv[0]",
            "initializationOptions.commandLimits.processes",
            "initializationOptions.commandLimits.memoryBytes",
        ]
        assert problems[3] == (
            "initializationOptions.prices: price for 'm': price input must be a finite "
            "number >= 0, got -1.0"
        )
    finally:
        raw.kill()
        await raw.process.wait()

    raw = await RawDaemon.start(tmp_path)
    try:
        await raw.initialize(replay_options(steps))
        outside = tmp_path / "outside.txt"
        outside.write_text("secret")
        answer = await raw.request(
            "cleveragents/run",
            {
                "prompt": "go",
                "sandboxRoot": str(sandbox),
                "toolResultBudget": "big",
                "contextWindow": 5,
                "resources": [{"path": str(outside)}, {"path": "a.txt", "startLine": 0}],
                "commandLimits": {"cpuSeconds": -3},
            },
        )
        error = answer["error"]
        assert error["code"] == wire.INVALID_PARAMS
        assert [p.split(":")[0] for p in error["data"]["problems"]] == [
            "params.toolResultBudget",
            "params.contextWindow",
            "params.resources[0].path",
            "params.resources[1].startLine",
            "params.commandLimits.cpuSeconds",
        ]
        assert "secret" not in json.dumps(error)
        # A file that is not there is refused when it is read, before the run starts.
        answer = await raw.request(
            "cleveragents/run",
            {"prompt": "go", "sandboxRoot": str(sandbox), "resources": [{"path": "nope.txt"}]},
        )
        assert answer["error"]["code"] == wire.INVALID_PARAMS
        assert answer["error"]["data"]["problems"][0].startswith("params.resources[0].path:")
        assert raw.notifications("cleveragents/runStarted") == []
        (listed,) = [(await raw.request("cleveragents/runs", {}))["result"]["runs"]]
        assert listed == []
    finally:
        raw.kill()
        await raw.process.wait()


async def test_attached_files_budget_and_window_reach_the_model_through_the_real_sdk(
    tmp_path: Path, sandbox: Path
) -> None:
    (sandbox / "app.py").write_text("".join(f"line {n}\n" for n in range(1, 21)))
    (sandbox / "big.txt").write_text("b" * 30_000 + "\n")
    with FakeAnthropic() as fake:
        fake.push(
            StreamReply(
                [ToolUse("tu_1", "read_file", ['{"path": "big.txt"}'])],
                stop_reason="tool_use",
                input_tokens=1_000,
                cache_read_input_tokens=0,
                output_tokens=20,
            ),
            StreamReply(
                [Text(["Read it."])],
                input_tokens=2_000,
                cache_read_input_tokens=0,
                output_tokens=10,
            ),
        )
        env = {"ANTHROPIC_API_KEY": API_KEY, "ANTHROPIC_BASE_URL": fake.base_url}
        raw = await RawDaemon.start(tmp_path, env=env)
        try:
            await raw.initialize(
                {
                    "provider": "anthropic",
                    "model": SONNET,
                    "automationProfile": "full-auto",
                    "pluginTools": False,
                    "toolResultBudget": 5_000,
                }
            )
            result = await run(
                raw,
                {
                    "prompt": "What is on line 3?",
                    "sandboxRoot": str(sandbox),
                    "runId": "r1",
                    "toolResultBudget": 2_000,
                    "promptCaching": False,
                    "resources": [
                        {"path": "app.py", "startLine": 3, "endLine": 4},
                        {"path": "draft.md", "text": "unsaved words"},
                    ],
                },
            )
            first_message = fake.requests[0].body["messages"][0]
            second_request = fake.requests[1].body
            # The window: a run whose prompt cannot fit sends nothing and says why.
            big = "x " * 20_000
            limited = await run(
                raw,
                {
                    "prompt": "go",
                    "sandboxRoot": str(sandbox),
                    "contextWindow": 4_096,
                    "resources": [{"path": "notes.md", "text": big}],
                },
            )
            finished = raw.notifications("cleveragents/runFinished")[-1]
            detail = (await raw.request("cleveragents/getRun", {"runId": "r1"}))["result"]
        finally:
            raw.kill()
            await raw.process.wait()
        assert len(fake.requests) == 2
    text = json.dumps(first_message)
    assert "`app.py`, lines 3-4 of 20:\\n```\\nline 3\\nline 4\\n```" in text
    assert "`draft.md`, as the editor has it" in text and "unsaved words" in text
    assert text.rstrip('"}]').endswith("What is on line 3?")
    # The run's budget (2,000) over the session's (5,000): the model saw a cut result ...
    (tool_result,) = [
        block
        for message in second_request["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]
    shown = json.dumps(tool_result["content"])
    assert len(shown) < 3_000 and "left out" in shown
    # ... while the record keeps it whole.
    assert len(result["toolCallHistory"][0]["output"]["content"]) == 30_001
    price = sonnet()
    assert result["usage"] == approx_usage(
        {
            "inputTokens": 3_000,
            "outputTokens": 30,
            "cacheReadTokens": 0,
            "cacheWriteTokens": 0,
            "costUsd": price.cost(Usage(1_000, 20)) + price.cost(Usage(2_000, 10)),
        }
    )
    # The run turned prompt caching off: no request marks a cache breakpoint.
    assert "cache_control" not in json.dumps(first_message) + json.dumps(second_request)
    assert [r["path"] for r in detail["resources"]] == ["app.py", "draft.md"]
    assert detail["messages"][0]["text"].endswith("What is on line 3?")
    assert limited["stopReason"] == "context_exhausted" and limited["iterations"] == 0
    assert finished["stopReason"] == "context_exhausted"
    assert "4,096 tokens" in limited["content"]


async def test_command_settings_per_run_and_the_note_of_an_approval(
    tmp_path: Path, sandbox: Path
) -> None:
    steps = tmp_path / "s.json"
    steps.write_text(
        json.dumps(
            {
                "responses": [
                    {"tool_calls": [call("run_command", "c1", command="echo [$MY_SETTING]")]},
                    {"text": "Done."},
                ]
            }
        )
    )
    options = replay_options(str(steps), builtinTools=True, approvals=True)
    # A machine without bubblewrap (the real setting), so the command would run unconfined.
    env = {"CLEVERAGENTS_COMMAND_BWRAP": "none", "MY_SETTING": "from-the-daemon"}
    async with lsp_session(tmp_path, options, env=env) as session:
        session.decide = lambda params: {"decision": "allow"}
        asked = await session.request(
            "cleveragents/run", {"prompt": "echo", "sandboxRoot": str(sandbox)}
        )
        (request,) = session.approval_requests
        check_against_schema("cleveragents/approveToolCall", request)
        assert request["toolName"] == "run_command"
        assert "run_command would run unconfined" in request["note"]
        assert "CLEVERAGENTS_ALLOW_UNCONFINED_COMMANDS" in request["note"]
        # The variable is not passed by default ...
        assert asked["toolCallHistory"][0]["output"]["stdout"] == "[]\n"
        # ... a run's own settings pass it, and allow the unconfined command under full-auto.
        allowed = await session.request(
            "cleveragents/run",
            {
                "prompt": "echo",
                "sandboxRoot": str(sandbox),
                "automationProfile": "full-auto",
                "commandEnv": ["MY_*"],
                "allowUnconfinedCommands": True,
            },
        )
        assert len(session.approval_requests) == 1
        record = allowed["toolCallHistory"][0]
        assert record["output"]["stdout"] == "[from-the-daemon]\n"
        assert record["output"]["confined"] is False
        # The session's settings are untouched by that run: full-auto asks again.
        session.decide = lambda params: {"decision": "deny"}
        again = await session.request(
            "cleveragents/run",
            {"prompt": "echo", "sandboxRoot": str(sandbox), "automationProfile": "full-auto"},
        )
        assert again["toolCallHistory"][0]["errorKind"] == "denied"
        assert len(session.approval_requests) == 2
