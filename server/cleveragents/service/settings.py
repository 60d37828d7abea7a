"""Settings: run defaults from a client's options and the environment, as plain dataclasses.

Precedence, for each setting: a run's params, then the client's options (the daemon's
`initializationOptions`), then the environment, then the built-in default. API keys are read
by the providers from the environment only; no request can carry one.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..assembly import SYSTEM_PROMPT
from ..providers import PROVIDERS
from ..tool.policy import AUTOMATION_PROFILES
from ..tool.runtime import DEFAULT_MAX_ITERATIONS
from .errors import ParamsError
from .history import RunHistory

log = logging.getLogger(__name__)

DEFAULT_PROFILE = "ask"
DEFAULT_APPROVAL_TIMEOUT_S = 600.0
MAX_APPROVAL_TIMEOUT_S = 86_400.0
MAX_ITERATIONS_CAP = 1000

ENV_PROVIDER = "CLEVERAGENTS_PROVIDER"
ENV_MODEL = "CLEVERAGENTS_MODEL"
ENV_PROFILE = "CLEVERAGENTS_PROFILE"
ENV_MAX_ITERATIONS = "CLEVERAGENTS_MAX_ITERATIONS"
ENV_BASE_URL = "CLEVERAGENTS_BASE_URL"
ENV_REPLAY_SCRIPT = "CLEVERAGENTS_REPLAY_SCRIPT"
ENV_HISTORY = "CLEVERAGENTS_HISTORY"
ENV_TRUST_WORKSPACE = "CLEVERAGENTS_TRUST_WORKSPACE"
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("", "0", "false", "no", "off")


@dataclass(frozen=True, slots=True)
class RunDefaults:
    """What a run uses for every setting its params leave out."""

    provider: str = "offline"
    model: str | None = None
    automation_profile: str = DEFAULT_PROFILE
    max_iterations: int = DEFAULT_MAX_ITERATIONS
    system_prompt: str | None = SYSTEM_PROMPT
    base_url: str | None = None
    replay_script: str | None = None
    max_tokens: int | None = None
    approval_timeout_s: float = DEFAULT_APPROVAL_TIMEOUT_S
    # Start every workspace's `.mcp.json` servers without asking (automation; see trust.py).
    trust_workspace: bool = False

    def provider_options(self) -> dict[str, Any]:
        """What the provider is created with, beside its name and model (unset ones left out)."""
        options = {
            "base_url": self.base_url,
            "script": self.replay_script,
            "max_tokens": self.max_tokens,
        }
        return {k: v for k, v in options.items() if v is not None}


@dataclass(frozen=True, slots=True)
class ToolSettings:
    """Which tools the daemon's registry holds."""

    modules: tuple[str, ...] = ()
    builtins: bool = True
    plugins: bool = True


@dataclass(frozen=True, slots=True)
class SessionSettings:
    """Everything `initialize` decided."""

    defaults: RunDefaults = field(default_factory=RunDefaults)
    tools: ToolSettings = field(default_factory=ToolSettings)
    approvals: bool = False
    # The client answers workspace-trust questions (the daemon's `cleveragents/trustWorkspace`).
    trust_prompts: bool = False


@dataclass(frozen=True, slots=True)
class ClientOptions:
    """What a client set for its whole session; None leaves a setting to the environment."""

    provider: str | None = None
    model: str | None = None
    automation_profile: str | None = None
    max_iterations: int | None = None
    system_prompt: str | None = None
    base_url: str | None = None
    replay_script: str | None = None
    max_tokens: int | None = None
    tool_modules: tuple[str, ...] | None = None
    builtin_tools: bool | None = None
    plugin_tools: bool | None = None
    approvals: bool | None = None
    approval_timeout_seconds: float | None = None
    trust_workspace: bool | None = None


def session_settings(
    options: ClientOptions,
    env: Mapping[str, str] | None = None,
    *,
    client_approvals: bool = False,
    client_trust_prompts: bool = False,
    options_name: str = "initializationOptions",
) -> SessionSettings:
    """Combine options, environment and defaults; ParamsError names every bad value.

    `options_name` is what the client calls its options, for the messages.
    """
    env = os.environ if env is None else env
    problems: list[str] = []

    def pick(name: str, option: Any, env_name: str) -> tuple[Any, str]:
        if option is not None:
            return option, f"{options_name}.{_camel(name)}"
        return env.get(env_name) or None, f"${env_name}"

    provider, where = pick("provider", options.provider, ENV_PROVIDER)
    provider = provider or "offline"
    if provider not in PROVIDERS:
        problems.append(
            f"{where}: unknown provider {provider!r}; choose one of {', '.join(PROVIDERS)}"
        )
    profile, where = pick("automation_profile", options.automation_profile, ENV_PROFILE)
    profile = profile or DEFAULT_PROFILE
    if profile not in AUTOMATION_PROFILES:
        problems.append(
            f"{where}: unknown automation profile {profile!r}; choose one of "
            f"{', '.join(AUTOMATION_PROFILES)}"
        )
    max_iterations_raw, where = pick("max_iterations", options.max_iterations, ENV_MAX_ITERATIONS)
    max_iterations = DEFAULT_MAX_ITERATIONS
    if max_iterations_raw is not None:
        try:
            max_iterations = int(max_iterations_raw)
        except ValueError:
            problems.append(f"{where}: expected an integer, got {max_iterations_raw!r}")
        else:
            problem = check_max_iterations(max_iterations)
            if problem:
                problems.append(f"{where}: {problem}")
    timeout = options.approval_timeout_seconds
    # Finite and bounded: an approval that could wait forever is the hang the protocol rules out.
    if timeout is not None and not (0 < timeout <= MAX_APPROVAL_TIMEOUT_S):
        problems.append(
            f"{options_name}.approvalTimeoutSeconds: must be more than 0 and at most "
            f"{MAX_APPROVAL_TIMEOUT_S:g}"
        )
    if options.max_tokens is not None and options.max_tokens < 1:
        problems.append(f"{options_name}.maxTokens: must be at least 1")
    trust_workspace = options.trust_workspace
    if trust_workspace is None:
        trust_workspace, problem = env_flag(env, ENV_TRUST_WORKSPACE)
        if problem:
            problems.append(problem)
    if problems:
        raise ParamsError(problems)
    defaults = RunDefaults(
        provider=provider,
        model=pick("model", options.model, ENV_MODEL)[0],
        automation_profile=profile,
        max_iterations=max_iterations,
        system_prompt=options.system_prompt if options.system_prompt is not None else SYSTEM_PROMPT,
        base_url=pick("base_url", options.base_url, ENV_BASE_URL)[0],
        replay_script=pick("replay_script", options.replay_script, ENV_REPLAY_SCRIPT)[0],
        max_tokens=options.max_tokens,
        approval_timeout_s=timeout if timeout is not None else DEFAULT_APPROVAL_TIMEOUT_S,
        trust_workspace=trust_workspace,
    )
    tools = ToolSettings(
        modules=tuple(options.tool_modules or ()),
        builtins=options.builtin_tools is not False,
        plugins=options.plugin_tools is not False,
    )
    return SessionSettings(
        defaults=defaults,
        tools=tools,
        approvals=options.approvals is True or client_approvals,
        trust_prompts=client_trust_prompts,
    )


def env_flag(env: Mapping[str, str], name: str) -> tuple[bool, str | None]:
    """A yes/no variable: 1/true/yes/on or 0/false/no/off (unset: no); a problem otherwise."""
    value = env.get(name, "").strip().lower()
    if value in _TRUE:
        return True, None
    if value in _FALSE:
        return False, None
    return False, f"${name}: expected 1 or 0, got {env[name]!r}"


def check_max_iterations(value: int) -> str | None:
    if value < 1:
        return f"must be at least 1, got {value}"
    if value > MAX_ITERATIONS_CAP:
        return f"must be at most {MAX_ITERATIONS_CAP}, got {value}"
    return None


def history_path(argument: str | None, env: Mapping[str, str] | None = None) -> Path:
    """`--history`, else $CLEVERAGENTS_HISTORY, else the user data folder's file."""
    from ..service.history import default_history_path

    env = os.environ if env is None else env
    chosen = argument or env.get(ENV_HISTORY)
    return Path(chosen).expanduser() if chosen else default_history_path()


def open_history(path_argument: str | None) -> RunHistory | None:
    """The run history, or None when its file cannot be used: a server still serves then.

    Runs a dead process left "running" are marked interrupted: they can never finish.
    """
    path = history_path(path_argument)
    try:
        history = RunHistory(path)
    except Exception as exc:  # an unwritable or corrupt file must not stop the server
        log.error("run history %s unavailable, runs will not be stored: %s", path, exc)
        return None
    try:
        interrupted = history.mark_interrupted()
    except sqlite3.Error as exc:  # locked by another process: the next start marks them
        log.warning("run history %s: interrupted runs not marked now: %s", path, exc)
        return history
    if interrupted:
        log.info("marked %d runs interrupted", len(interrupted))
    return history


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)
