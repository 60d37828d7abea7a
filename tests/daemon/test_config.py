"""Settings: initializationOptions over the environment over defaults; keys never accepted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cleveragents.assembly import SYSTEM_PROMPT
from cleveragents.daemon.config import (
    client_declares,
    client_options,
    initialization_settings,
    parse_initialization_options,
)
from cleveragents.protocol import wire
from cleveragents.service.errors import ParamsError
from cleveragents.service.settings import ClientOptions, history_path, session_settings


def test_defaults_without_options_or_environment() -> None:
    settings = session_settings(ClientOptions(), {})
    defaults = settings.defaults
    assert (defaults.provider, defaults.model, defaults.automation_profile) == (
        "offline",
        None,
        "ask",
    )
    assert defaults.max_iterations == 25
    assert defaults.system_prompt == SYSTEM_PROMPT
    assert settings.tools.builtins and settings.tools.plugins and not settings.tools.modules
    assert settings.approvals is False


def test_the_environment_fills_what_the_options_leave_out() -> None:
    env = {
        "CLEVERAGENTS_PROVIDER": "anthropic",
        "CLEVERAGENTS_MODEL": "m-env",
        "CLEVERAGENTS_PROFILE": "read-only",
        "CLEVERAGENTS_MAX_ITERATIONS": "4",
        "CLEVERAGENTS_BASE_URL": "http://env",
        "CLEVERAGENTS_REPLAY_SCRIPT": "/env.json",
    }
    defaults = session_settings(ClientOptions(), env).defaults
    assert (
        defaults.provider,
        defaults.model,
        defaults.automation_profile,
        defaults.max_iterations,
        defaults.base_url,
        defaults.replay_script,
    ) == ("anthropic", "m-env", "read-only", 4, "http://env", "/env.json")


def test_options_win_over_the_environment() -> None:
    env = {"CLEVERAGENTS_PROVIDER": "anthropic", "CLEVERAGENTS_MAX_ITERATIONS": "4"}
    options = parse_initialization_options(
        {
            "provider": "replay",
            "maxIterations": 9,
            "automationProfile": "full-auto",
            "toolModules": ["a.b"],
            "builtinTools": False,
            "approvals": True,
            "systemPrompt": "Be brief.",
            "approvalTimeoutSeconds": 5,
        }
    )
    settings = session_settings(client_options(options), env)
    assert (settings.defaults.provider, settings.defaults.max_iterations) == ("replay", 9)
    assert settings.defaults.system_prompt == "Be brief."
    assert settings.defaults.approval_timeout_s == 5
    assert settings.tools.modules == ("a.b",) and not settings.tools.builtins
    assert settings.approvals is True


@pytest.mark.parametrize(
    ("env", "problem"),
    [
        (
            {"CLEVERAGENTS_MAX_ITERATIONS": "lots"},
            "$CLEVERAGENTS_MAX_ITERATIONS: expected a whole number",
        ),
        ({"CLEVERAGENTS_MAX_ITERATIONS": "0"}, "$CLEVERAGENTS_MAX_ITERATIONS: must be at least 1"),
        ({"CLEVERAGENTS_PROVIDER": "skynet"}, "$CLEVERAGENTS_PROVIDER: unknown provider"),
        ({"CLEVERAGENTS_PROFILE": "yolo"}, "$CLEVERAGENTS_PROFILE: unknown automation profile"),
    ],
)
def test_a_bad_environment_value_is_named(env: dict[str, str], problem: str) -> None:
    with pytest.raises(ParamsError) as raised:
        session_settings(ClientOptions(), env)
    assert any(p.startswith(problem) for p in raised.value.problems), raised.value.problems


def test_one_error_names_bad_types_and_bad_values_together() -> None:
    with pytest.raises(ParamsError) as raised:
        initialization_settings(
            {
                "maxIterations": "9",  # the wrong type
                "provider": "skynet",  # the right type, a bad value
                "maxTokens": 0,
                "approvalTimeoutSeconds": -1,
            },
            {},
        )
    assert [p.split(":")[0] for p in raised.value.problems] == [
        "initializationOptions.maxIterations",
        "initializationOptions.provider",  # the settings table's order
        "initializationOptions.maxTokens",
        "initializationOptions.approvalTimeoutSeconds",
    ], raised.value.problems
    assert "expected an integer" in raised.value.problems[0]


def test_a_field_of_the_wrong_type_is_named_once() -> None:
    with pytest.raises(ParamsError) as raised:
        initialization_settings({"provider": 7, "maxIterations": 0}, {})
    assert [p.split(":")[0] for p in raised.value.problems] == [
        "initializationOptions.provider",
        "initializationOptions.maxIterations",
    ], raised.value.problems


@pytest.mark.parametrize("key", ["apiKey", "api_key", "openaiApiKey"])
def test_api_keys_are_refused_in_initialization_options(key: str) -> None:
    with pytest.raises(ParamsError) as raised:
        parse_initialization_options({key: "sk-secret"})
    assert "environment" in str(raised.value)
    assert "sk-secret" not in str(raised.value)


def test_no_initialization_options_at_all() -> None:
    assert parse_initialization_options(None) == wire.InitializationOptions()
    with pytest.raises(ParamsError):
        parse_initialization_options(["provider", "replay"])


@pytest.mark.parametrize(
    ("experimental", "declared"),
    [
        (None, False),
        ({}, False),
        ({"cleveragents": {"approvals": True}}, True),
        ({"cleveragents": {"approvals": False}}, False),
        ({"cleveragents": {"approvals": "yes"}}, False),
        ({"cleveragents": {"approvals": True, "fromTheFuture": 1}}, True),
        ({"otherTool": {"approvals": True}}, False),
    ],
)
def test_client_capability_for_approvals(experimental: object, declared: bool) -> None:
    assert client_declares(experimental, "approvals") is declared
    # The same rules for the workspace-trust flag, which is separate.
    trust = json.loads(json.dumps(experimental).replace('"approvals"', '"trust"'))
    assert client_declares(trust, "trust") is declared
    assert client_declares(experimental, "trust") is False


@pytest.mark.parametrize(
    ("env", "options", "trusted", "problem"),
    [
        ({}, None, False, None),
        ({"CLEVERAGENTS_TRUST_WORKSPACE": "1"}, None, True, None),
        ({"CLEVERAGENTS_TRUST_WORKSPACE": "yes"}, None, True, None),
        ({"CLEVERAGENTS_TRUST_WORKSPACE": "0"}, None, False, None),
        ({"CLEVERAGENTS_TRUST_WORKSPACE": "1"}, False, False, None),  # the option wins
        ({}, True, True, None),
        ({"CLEVERAGENTS_TRUST_WORKSPACE": "sure"}, None, False, "$CLEVERAGENTS_TRUST_WORKSPACE"),
    ],
)
def test_trust_workspace_from_options_then_environment(
    env: dict[str, str], options: bool | None, trusted: bool, problem: str | None
) -> None:
    raw = None if options is None else {"trustWorkspace": options}
    if problem is not None:
        with pytest.raises(ParamsError) as raised:
            initialization_settings(raw, env)
        assert raised.value.problems[0].startswith(problem)
        return
    assert initialization_settings(raw, env).defaults.trust_workspace is trusted


def test_history_path_precedence(tmp_path: Path) -> None:
    assert history_path("/a/h.db", {"CLEVERAGENTS_HISTORY": "/b/h.db"}) == Path("/a/h.db")
    assert history_path(None, {"CLEVERAGENTS_HISTORY": "/b/h.db"}) == Path("/b/h.db")
    assert history_path(None, {}).name == "history.sqlite3"
