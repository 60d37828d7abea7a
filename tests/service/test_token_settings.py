"""The token and command settings at every level: a run's params over the client's options over
the environment over the defaults (service/settings.py), and what a run then gets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cleveragents.service.errors import ParamsError, ServiceError
from cleveragents.service.runs import RunManager, RunRequest
from cleveragents.service.settings import (
    ClientOptions,
    CommandSettings,
    RunDefaults,
    session_settings,
)
from cleveragents.tool import (
    ContextPolicy,
    FunctionLLMCaller,
    LLMRequest,
    LLMResponse,
    ModelPrice,
    ToolCallRequest,
    ToolRegistry,
)
from cleveragents.toolsets import build_registry
from cleveragents.workspace.command_policy import GIB, CommandPolicy
from support.sinks import Sink


def test_defaults_with_nothing_set() -> None:
    defaults = session_settings(ClientOptions(), {}).defaults
    assert defaults.runtime_options() == {
        "result_budget_chars": 32_000,
        "context_window": None,
        "prices": {},
        "cache": True,
        "context_policy": ContextPolicy(100_000, 3, 20_000),
        "compaction_summary": False,
        "project_instructions": True,
    }
    assert defaults.provider_options() == {"cache": True}
    assert defaults.command_policy == CommandPolicy.from_environment({})


def test_the_environment_then_the_options_over_it() -> None:
    env = {
        "CLEVERAGENTS_TOOL_RESULT_BUDGET": "8_000",
        "CLEVERAGENTS_CONTEXT_WINDOW": "32768",
        "CLEVERAGENTS_PROMPT_CACHING": "0",
        "CLEVERAGENTS_PRICES": (
            '{"local": {"input": 1, "output": 2}, "b": {"input": 3, "output": 4}}'
        ),
        "CLEVERAGENTS_COMMAND_ENV": "FROM_ENV",
        "CLEVERAGENTS_COMMAND_MAX_PROCESSES": "100",
    }
    from_env = session_settings(ClientOptions(), env).defaults
    assert from_env.runtime_options() == {
        "result_budget_chars": 8_000,
        "context_window": 32_768,
        "prices": {
            "local": ModelPrice(1, 2, 1, 1),
            "b": ModelPrice(3, 4, 3, 3),
        },
        "cache": False,
        "context_policy": ContextPolicy(100_000, 3, 20_000),
        "compaction_summary": False,
        "project_instructions": True,
    }
    options = ClientOptions(
        tool_result_budget=2_000,
        context_window=8_192,
        prompt_caching=True,
        prices={"local": {"input": 0.5, "output": 1.5, "cacheRead": 0.05}},
        command=CommandSettings(
            read_paths=("~/.cargo",), env=("FROM_OPTIONS",), limits={"memory_bytes": "8G"}
        ),
    )
    chosen = session_settings(options, env).defaults
    assert chosen.result_budget_chars == 2_000 and chosen.context_window == 8_192
    assert chosen.prompt_caching is True and chosen.provider_options()["cache"] is True
    assert chosen.prices["local"] == ModelPrice(0.5, 1.5, 0.5, 0.05)
    assert chosen.prices["b"] == ModelPrice(3, 4, 3, 3)  # the environment's other models stay
    policy = chosen.command_policy
    assert policy is not None
    # Lists add up across the layers; a limit set by a layer replaces the one below.
    assert policy.env_allow == ("FROM_ENV", "FROM_OPTIONS")
    assert policy.extra_read_paths == ("~/.cargo",)
    assert policy.limits.max_processes == 100 and policy.limits.max_memory == 8 * GIB


def test_the_context_policy_from_the_environment_and_the_options() -> None:
    env = {
        "CLEVERAGENTS_CONTEXT_CLEAR_TRIGGER": "60_000",
        "CLEVERAGENTS_CONTEXT_KEEP_TOOL_USES": "5",
        "CLEVERAGENTS_COMPACTION_SUMMARY": "1",
    }
    from_env = session_settings(ClientOptions(), env).defaults
    assert from_env.context_policy == ContextPolicy(60_000, 5, 20_000)
    assert from_env.compaction_summary is True
    assert (
        session_settings(ClientOptions(compaction_summary=False), env).defaults.runtime_options()[
            "compaction_summary"
        ]
        is False
    )
    options = ClientOptions(context_clear_trigger=0, context_clear_at_least=1_000)
    chosen = session_settings(options, env).defaults.context_policy
    # A trigger of 0: clear only when the window requires it (the policy before caching).
    assert chosen == ContextPolicy(None, 5, 1_000)
    with pytest.raises(ParamsError) as caught:
        session_settings(
            ClientOptions(context_keep_tool_uses=-1),
            {"CLEVERAGENTS_CONTEXT_CLEAR_AT_LEAST": "some"},
        )
    assert [p.split(":")[0] for p in caught.value.problems] == [
        "initializationOptions.contextKeepToolUses",
        "$CLEVERAGENTS_CONTEXT_CLEAR_AT_LEAST",
    ]


def test_bad_values_name_their_option_or_variable() -> None:
    env = {
        "CLEVERAGENTS_TOOL_RESULT_BUDGET": "lots",
        "CLEVERAGENTS_PROMPT_CACHING": "maybe",
        "CLEVERAGENTS_PRICES": "{not json",
        "CLEVERAGENTS_COMMAND_MAX_MEMORY": "huge",
    }
    with pytest.raises(ParamsError) as caught:
        session_settings(ClientOptions(context_window=10), env)
    assert [p.split(":")[0] for p in caught.value.problems] == [
        "$CLEVERAGENTS_TOOL_RESULT_BUDGET",
        "initializationOptions.contextWindow",
        "$CLEVERAGENTS_PROMPT_CACHING",
        "$CLEVERAGENTS_PRICES",
        "$CLEVERAGENTS_COMMAND_MAX_MEMORY",
    ]
    with pytest.raises(ParamsError) as caught:
        session_settings(
            ClientOptions(
                command=CommandSettings(
                    limits={"processes": "unlimited", "cpu_seconds": "5G", "nope": 1},
                    allow_unconfined=True,
                )
            ),
            {},
        )
    assert caught.value.problems == [
        "initializationOptions.commandLimits.cpuSeconds: '5G' is not a valid limit (use a "
        "whole number or unlimited)",
        "initializationOptions.commandLimits.nope: unknown limit; use processes, "
        "fileSizeBytes, addressSpaceBytes, cpuSeconds, memoryBytes, tmpSizeBytes, "
        "minFreeDiskBytes",
    ]


async def test_a_runs_params_win_and_reach_the_runtime_and_the_provider(tmp_path: Path) -> None:
    seen: list[LLMRequest] = []
    made: list[dict[str, Any]] = []

    def model(request: LLMRequest) -> LLMResponse:
        seen.append(request)
        if request.iteration == 1:
            return LLMResponse("", [ToolCallRequest("c1", "shout", {"times": 5_000})])
        return LLMResponse("done")

    def factory(provider: str, model_name: str | None, **options: Any) -> FunctionLLMCaller:
        made.append(options)
        return FunctionLLMCaller(model)

    tools = ToolRegistry()

    @tools.tool
    def shout(times: int) -> dict[str, str]:
        """Say it loudly."""
        return {"text": "A" * times}

    defaults = RunDefaults(result_budget_chars=20_000, prompt_caching=True, context_window=9_000)
    manager = RunManager(tools, defaults, None, llm_factory=factory)
    request = RunRequest("go", str(tmp_path))
    await manager.run(request, Sink())
    await manager.run(
        RunRequest("go", str(tmp_path), tool_result_budget=1_000, prompt_caching=False), Sink()
    )
    await manager.aclose()
    assert [m["cache"] for m in made] == [True, False]
    assert [r.cache for r in seen] == [True, True, False, False]
    # The result the model saw: whole (5,000 characters) under 20,000, cut under 1,000.
    whole, cut = (len(str(seen[i].messages[-1].results[0].content)) for i in (1, 3))  # type: ignore[union-attr]
    assert whole > 5_000 and cut < 1_500
    # A window too small for even the first request ends the run before any call.
    tiny = RunManager(tools, RunDefaults(), None, llm_factory=factory)
    outcome = await tiny.run(RunRequest("x " * 5_000, str(tmp_path), context_window=1_024), Sink())
    result = outcome.result
    await tiny.aclose()
    assert (result.stop_reason, result.iterations, len(seen)) == ("context_exhausted", 0, 4)


async def test_a_runs_command_settings_change_only_that_run(tmp_path: Path) -> None:
    registry = build_registry(plugins=False, command_policy=CommandPolicy())
    manager = RunManager(registry, RunDefaults(command_policy=CommandPolicy()), None)
    plan = manager.plan(
        RunRequest(
            "go",
            str(tmp_path),
            command=CommandSettings(env=("NODE_*",), limits={"processes": 10}),
        )
    )
    assert plan.command_policy is not None
    assert plan.command_policy.env_allow == ("NODE_*",)
    assert plan.command_policy.limits.max_processes == 10
    assert manager.plan(RunRequest("go", str(tmp_path))).command_policy is None
    with pytest.raises(ServiceError) as caught:
        manager.plan(RunRequest("go", str(tmp_path), command=CommandSettings(read_paths=("rel",))))
    assert caught.value.data == {
        "problems": [
            "params.commandReadPaths[0]: must be an absolute path or start with ~, got 'rel'"
        ]
    }
    await manager.aclose()
