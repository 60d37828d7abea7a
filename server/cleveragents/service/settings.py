"""Settings: run defaults from a client's options and the environment, as plain dataclasses.

Precedence, for each setting: a run's params, then the client's options (the daemon's
`initializationOptions`), then the environment, then the built-in default. Each row of the
settings table (`settings_table.py`) is resolved by the same code (`resolve_rows`, and
`run_settings` for a run's params): read by the row's name from the options, parsed from its
variable, checked by its type, choices and bounds (`check_setting`); what no level sets is
the `RunDefaults` default. The command policy's rows layer (lists add up) through
`command_policy`. API keys are read by the providers from the environment only; no request
can carry one.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..assembly import SYSTEM_PROMPT
from ..paths import default_history_path
from ..settings_table import BY_ENV, ENV_HISTORY, SETTINGS, Level, Setting, rows_for
from ..tool.context_policy import ContextPolicy
from ..tool.defaults import DEFAULT_MAX_ITERATIONS
from ..tool.models import ModelPrice, normalise_prices
from ..tool.result_budget import DEFAULT_RESULT_BUDGET_CHARS
from ..workspace.command_policy import (
    CommandPolicy,
    parse_limit,
)
from .errors import ParamsError

if TYPE_CHECKING:  # opened by `open_history`: loading SQLite is the first use's cost
    from .history import RunHistory

log = logging.getLogger(__name__)

DEFAULT_PROFILE = "ask"
DEFAULT_APPROVAL_TIMEOUT_S = 600.0
MAX_APPROVAL_TIMEOUT_S = 86_400.0


# The command limits a client may set, by their option names, and the CommandPolicy limit
# each sets (with whether it is a size in bytes, which also takes K/M/G/T suffixes).
COMMAND_LIMITS: dict[str, tuple[str, bool]] = {
    "processes": ("max_processes", False),
    "file_size_bytes": ("max_file_size", True),
    "address_space_bytes": ("max_address_space", True),
    "cpu_seconds": ("max_cpu_seconds", False),
    "memory_bytes": ("max_memory", True),
    "tmp_size_bytes": ("tmp_size", True),
    "min_free_disk_bytes": ("min_free_disk", True),
}
_VARIABLE_PATTERN = re.compile(r"^[A-Za-z_*?\[][A-Za-z0-9_*?\[\]!-]*$")
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
    # What the model is shown of one tool result, in characters.
    result_budget_chars: int = DEFAULT_RESULT_BUDGET_CHARS
    # The model's window in tokens; None: the caller's, the model table's, or the default.
    context_window: int | None = None
    prompt_caching: bool = True
    # When old tool results are cleared before the window requires it, and how much.
    context_policy: ContextPolicy = field(default_factory=ContextPolicy)
    compaction_summary: bool = False
    # Read AGENTS.md (and CLAUDE.md) into the prompt (workspace/instructions.py).
    project_instructions: bool = True
    # Price overrides by model (tool/models.py's table covers the rest).
    prices: Mapping[str, ModelPrice] = field(default_factory=dict)
    # What run_command may reach; None: the environment's (CommandPolicy.from_environment).
    command_policy: CommandPolicy | None = None
    # Start every workspace's `.mcp.json` servers without asking (automation; see trust.py).
    trust_workspace: bool = False
    # The openai provider's model takes images (images.md).
    openai_vision: bool = False

    def provider_options(self) -> dict[str, Any]:
        """What the provider is created with, beside its name and model (unset ones left out)."""
        options = {
            "base_url": self.base_url,
            "script": self.replay_script,
            "max_tokens": self.max_tokens,
            "cache": self.prompt_caching,
            # Only when on: off is the provider's own default, read from the same variable.
            "vision": True if self.openai_vision else None,
        }
        return {k: v for k, v in options.items() if v is not None}

    def runtime_options(self) -> dict[str, Any]:
        """The runtime's token settings (`build_runtime` keyword arguments)."""
        return {
            "result_budget_chars": self.result_budget_chars,
            "context_window": self.context_window,
            "prices": self.prices,
            "cache": self.prompt_caching,
            "context_policy": self.context_policy,
            "compaction_summary": self.compaction_summary,
            "project_instructions": self.project_instructions,
        }


@dataclass(frozen=True, slots=True)
class CommandSettings:
    """A layer of run_command settings (a client's options, a run's params, CLI flags).

    Lists add to the layers below; limits and the switch replace theirs. `limits` is keyed by
    the names of COMMAND_LIMITS; a value is a positive integer, or a string such as "4G" or
    "unlimited".
    """

    read_paths: tuple[str, ...] = ()
    env: tuple[str, ...] = ()
    limits: Mapping[str, int | str] = field(default_factory=dict)
    allow_unconfined: bool | None = None
    # Protected paths (workspace/protected.py): the explicit opt-in, and more patterns.
    allow_protected_writes: bool | None = None
    protected_paths: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(
            self.read_paths
            or self.env
            or self.limits
            or self.allow_unconfined is not None
            or self.allow_protected_writes is not None
            or self.protected_paths
        )


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
    """What a client set for its whole session; None leaves a setting to the environment.
    A settings-table row's field has the row's name (`resolve_rows` reads it so)."""

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
    tool_result_budget: int | None = None
    context_window: int | None = None
    prompt_caching: bool | None = None
    # The context policy's parameters in tokens (trigger 0: clear only at the window's limit).
    context_clear_trigger: int | None = None
    context_keep_tool_uses: int | None = None
    context_clear_at_least: int | None = None
    compaction_summary: bool | None = None
    project_instructions: bool | None = None
    # {model: {input, output, cacheWrite?, cacheRead?}} in USD per million tokens.
    prices: Mapping[str, Mapping[str, Any]] | None = None
    command: CommandSettings = field(default_factory=CommandSettings)
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
    resolved = resolve_rows(options, env, options_name, problems)
    timeout = options.approval_timeout_seconds
    # Finite and bounded: an approval that could wait forever is the hang the protocol rules out.
    if timeout is not None and not (0 < timeout <= MAX_APPROVAL_TIMEOUT_S):
        problems.append(
            f"{options_name}.approvalTimeoutSeconds: must be more than 0 and at most "
            f"{MAX_APPROVAL_TIMEOUT_S:g}"
        )
    policy = _command_policy(problems, options.command, env, options_name)
    if problems:
        raise ParamsError(problems)
    defaults = RunDefaults(
        **{path: value for path, value in resolved.items() if "." not in path},
        context_policy=_context_policy(
            {
                path.partition(".")[2]: value
                for path, value in resolved.items()
                if path.startswith("context_policy.")
            }
        ),
        approval_timeout_s=timeout if timeout is not None else DEFAULT_APPROVAL_TIMEOUT_S,
        command_policy=policy,
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


def run_settings(defaults: RunDefaults, run: Any) -> RunDefaults:
    """`defaults` with what a run's request (`RunRequest`) sets: the table's run level, over
    the session's. Each run row is the request's field of the row's name (None: unset); the
    values were checked (`RunManager.plan`); the command layer is `command_policy`'s."""
    values: dict[str, Any] = {}
    for row in rows_for(Level.RUN):
        path = row.resolved.removeprefix("defaults.")
        value = getattr(run, row.name, None)
        if path != row.resolved and value is not None:
            values[path] = value
    return replace(defaults, **values)


def resolve_rows(
    options: ClientOptions, env: Mapping[str, str], options_name: str, problems: list[str]
) -> dict[str, Any]:
    """Every row the run defaults hold (`resolved` under `defaults.`), resolved by its levels:
    the options (a field named as the row), then its variable; a row no level sets is left
    out (the `RunDefaults` default decides). Keyed by the path under `defaults.`; each bad
    value is a problem naming its option or variable."""
    resolved: dict[str, Any] = {}
    for row in SETTINGS:
        path = row.resolved.removeprefix("defaults.")
        if path == row.resolved:
            continue  # the command policy's rows (layered), the history file, the keys
        layers: list[tuple[str, Any, bool]] = []  # (where, value, is text), highest first
        option = getattr(options, row.name, None)
        if option is not None:
            layers.append((f"{options_name}.{row.option or _camel(row.name)}", option, False))
        text = env.get(row.env) if row.env else None
        if text:  # an empty variable is an unset one
            layers.append((f"${row.env}", text, True))
        values: list[Any] = []
        for where, raw, is_text in layers:
            value, problem = _typed(row, raw, is_text)
            if problem is None and value is not None:
                problem = check_setting(row, value)
            if problem:
                problems.append(f"{where}: {problem}")
            else:
                values.append(value)
            if row.value_type != "JSON":
                break  # the first level that sets it wins (even with a bad value)
        if not values:
            continue
        if row.value_type == "JSON":  # a price table: merged model by model, the top last
            merged: dict[str, Any] = {}
            for value in reversed(values):
                merged.update(value)
            resolved[path] = merged
        else:
            resolved[path] = values[0]
    return resolved


def _typed(row: Setting, raw: Any, is_text: bool) -> tuple[Any, str | None]:
    """A level's value as the row's type (a variable's text parsed; an option's value is
    typed by its front), or the problem with it."""
    kind = row.value_type
    if is_text:
        raw, problem = parse_setting_text(row, raw)
        if problem:
            return None, problem
    if kind == "JSON":  # the only JSON row is the price table
        try:
            return parse_prices(raw), None
        except (TypeError, ValueError) as exc:
            return None, str(exc)
    return raw, None


def parse_setting_text(row: Setting, text: str) -> tuple[Any, str | None]:
    """A variable's (or a flag's) text as the row's type, or the problem with it."""
    kind = row.value_type
    if kind == "integer":
        try:
            return int(text.strip().replace("_", "")), None
        except ValueError:
            return None, f"expected a whole number, got {text!r}"
    if kind == "yes/no":
        word = text.strip().lower()
        if word in _TRUE:
            return True, None
        if word in _FALSE:
            return False, None
        return None, f"expected 1 or 0 (true or false), got {text!r}"
    if kind == "JSON":
        try:
            return json.loads(text), None
        except json.JSONDecodeError as exc:
            return None, f"not valid JSON ({exc})"
    return text, None


def check_setting(row: Setting, value: Any) -> str | None:
    """The row's check of a typed value: one of its choices, within its bounds (with a unit
    the message names both bounds); None when it holds."""
    if row.choices and value not in row.choices:
        return f"unknown {row.label} {value!r}; choose one of {', '.join(row.choices)}"
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    low, high = row.minimum, row.maximum
    if row.unit and low is not None and high is not None:
        if not low <= value <= high:
            return f"must be between {low:,} and {high:,} {row.unit}, got {value}"
        return None
    if low is not None and value < low:
        return f"must be at least {low}, got {value}"
    if high is not None and value > high:
        return f"must be at most {high}, got {value}"
    return None


def _context_policy(values: dict[str, Any]) -> ContextPolicy:
    """The cache-priced policy with the values its rows set; a trigger of 0 clears only at
    the window's limit."""
    if values.get("trigger_tokens") == 0:
        values["trigger_tokens"] = None
    return replace(ContextPolicy(), **values)


def parse_prices(data: Any) -> dict[str, ModelPrice]:
    """{model: {input, output, cacheWrite?, cacheRead?}} (USD per million tokens), checked;
    TypeError or ValueError naming the model and the field."""
    if not isinstance(data, Mapping):
        raise TypeError(
            "expected an object of model names to prices, e.g. "
            '{"my-model": {"input": 0.5, "output": 1.5}}'
        )
    return normalise_prices(data)


def _command_policy(
    problems: list[str], option: CommandSettings, env: Mapping[str, str], options_name: str
) -> CommandPolicy | None:
    """The environment's command policy with the client's layer on top; None when neither
    says anything (run_command then reads the environment itself, as it always did)."""
    try:
        base = CommandPolicy.from_environment(env)
    except ValueError as exc:  # names the variable
        problems.append(f"${exc}")
        return None
    if not option:
        return base
    layered, more = command_policy(base, option, options_name)
    problems.extend(more)
    return layered


def command_policy(
    base: CommandPolicy, layer: CommandSettings, where: str
) -> tuple[CommandPolicy, list[str]]:
    """`base` with `layer` on top, and the problems with the layer's values (`where` names
    the options, e.g. `params`: `params.commandLimits.processes: ...`)."""
    problems: list[str] = []
    for index, path in enumerate(layer.read_paths):
        expanded = os.path.expanduser(path) if path.startswith("~") else path
        if "\0" in path or not os.path.isabs(expanded):
            problems.append(
                f"{where}.commandReadPaths[{index}]: must be an absolute path or start with ~, "
                f"got {path!r}"
            )
    for index, pattern in enumerate(layer.protected_paths):
        parts = pattern.replace("\\", "/").strip("/").split("/")
        if "\0" in pattern or not pattern.strip("/ ") or ".." in parts:
            problems.append(
                f"{where}.protectedPaths[{index}]: must be a path pattern inside the workspace "
                f"(such as Makefile, /scripts or .github/workflows), got {pattern!r}"
            )
    for index, name in enumerate(layer.env):
        problem = check_variable_pattern(name)
        if problem:
            problems.append(f"{where}.commandEnv[{index}]: {problem}")
    limits: dict[str, int | None] = {}
    for name, value in layer.limits.items():
        label = f"{where}.commandLimits.{_camel(name)}"
        if name not in COMMAND_LIMITS:
            problems.append(f"{label}: unknown limit; use {', '.join(map(_camel, COMMAND_LIMITS))}")
            continue
        field_name, is_size = COMMAND_LIMITS[name]
        if isinstance(value, bool) or not isinstance(value, int | str):
            problems.append(f"{label}: expected a number or a string such as 4G or unlimited")
            continue
        try:
            limits[field_name] = parse_limit(str(value), size=is_size, name=label)
        except ValueError as exc:
            problems.append(str(exc))
    if problems:
        return base, problems
    return (
        base.with_settings(
            extra_read_paths=layer.read_paths,
            env_allow=layer.env,
            limits=limits,
            allow_unconfined=layer.allow_unconfined,
            allow_protected_writes=layer.allow_protected_writes,
            protected_paths=layer.protected_paths,
        ),
        [],
    )


def check_variable_pattern(name: str) -> str | None:
    if not _VARIABLE_PATTERN.match(name):
        return f"not a variable name or pattern (such as NODE_ENV or CARGO_*): {name!r}"
    return None


def env_flag(env: Mapping[str, str], name: str) -> tuple[bool, str | None]:
    """A yes/no row's variable (unset or empty: no); a problem naming it otherwise."""
    text = env.get(name, "")
    if not text:
        return False, None
    value, problem = parse_setting_text(BY_ENV[name], text)
    if problem:
        return False, f"${name}: {problem}"
    return value is True, None


def history_path(argument: str | None, env: Mapping[str, str] | None = None) -> Path:
    """`--history`, else the history variable, else the user data folder's file."""
    env = os.environ if env is None else env
    chosen = argument or env.get(ENV_HISTORY)
    return Path(chosen).expanduser() if chosen else default_history_path()


def history_argument(used: Path | None, env: Mapping[str, str]) -> str | None:
    """The history file a server uses, as the `--history` argument it must have been given
    when it is not the file the variable or the default names (None when it is)."""
    if used is None or used == history_path(None, env):
        return None
    return str(used)


def open_history(path_argument: str | None) -> RunHistory | None:
    """The run history, or None when its file cannot be used: a server still serves then.

    Runs a dead process left "running" are marked interrupted: they can never finish.
    """
    import sqlite3

    from .history import RunHistory

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


@dataclass(frozen=True, slots=True)
class SettingValue:
    """One row of the settings table as resolved: its value (as text, a secret's masked) and
    the level it came from (`default`, `env`, or the options' level such as `flag`)."""

    name: str
    env: str | None
    value: str
    source: str


def settings_report(
    options: ClientOptions,
    env: Mapping[str, str] | None = None,
    *,
    history: str | None = None,
    options_name: str = "initializationOptions",
    options_level: str = "option",
    history_level: str | None = None,
    run: Any = None,
    run_level: str = "run",
) -> list[SettingValue]:
    """Every row of the settings table, resolved as a run would resolve it, with where its
    value came from; ParamsError naming every bad value (as `session_settings`). `history` is
    the front's own history argument (`--history`, reported as `history_level`, else as the
    options' level); `run` a checked run request
    (`RunManager.plan` passed it), whose values are the top level."""
    env = os.environ if env is None else env
    defaults = session_settings(options, env, options_name=options_name).defaults
    if run is not None:
        policy = defaults.command_policy
        if run.command:
            base = policy or CommandPolicy.from_environment(env)
            policy = command_policy(base, run.command, "params")[0]
        defaults = replace(run_settings(defaults, run), command_policy=policy)
    resolved = ResolvedSettings.of(defaults, env, history)
    report: list[SettingValue] = []
    for row in SETTINGS:
        if run is not None and Level.RUN in row.levels and _option_is_set(run, row):
            source = run_level
        elif row.name == "history" and history:
            source = history_level or options_level
        elif _option_is_set(options, row):
            source = options_level
        elif row.env and env.get(row.env, "").strip():
            source = "env"
        else:
            source = "default"
        value = resolved.value(row.resolved)
        report.append(SettingValue(row.name, row.env, shown_setting(row, value), source))
    return report


@dataclass(frozen=True, slots=True)
class ResolvedSettings:
    """What a row's `resolved` path starts from (settings_table.Setting.resolved): the run
    defaults, the command policy they make, the history file and the environment."""

    defaults: RunDefaults
    policy: CommandPolicy
    history: Path
    env: Mapping[str, str]

    @classmethod
    def of(
        cls, defaults: RunDefaults, env: Mapping[str, str], history: str | None = None
    ) -> ResolvedSettings:
        policy = defaults.command_policy or CommandPolicy.from_environment(env)
        return cls(defaults, policy, history_path(history, env), env)

    def value(self, path: str) -> Any:
        head, _, rest = path.partition(".")
        if head == "env":
            return self.env.get(rest) or None
        value: Any = getattr(self, head)
        for part in rest.split(".") if rest else ():
            value = getattr(value, part)
        return value


def _option_is_set(options: Any, row: Setting) -> bool:
    """Whether the options (a client's, the CLI's flags, or a run's request: fields named as
    the rows, and a `command` layer) set this row."""
    if row.resolved.startswith("policy."):
        command = options.command
        if row.resolved.startswith("policy.limits."):
            return any(
                COMMAND_LIMITS[name][0] == row.name[len("command_limit_") :]
                for name in command.limits
            )
        layer_field = {
            "command_read_paths": "read_paths",
            "command_env": "env",
            "allow_unconfined_commands": "allow_unconfined",
            "allow_protected_writes": "allow_protected_writes",
            "protected_paths": "protected_paths",
        }.get(row.name)
        return layer_field is not None and getattr(command, layer_field) not in (None, ())
    return getattr(options, row.name, None) is not None


def shown_setting(row: Setting, value: Any) -> str:
    """A row's resolved value as `doctor --settings` prints it: a secret masked, a URL
    without its credentials."""
    if row.secret:
        return _masked(value)
    if row.kind == "URL" and isinstance(value, str):
        return _without_credentials(value)
    return shown_value(value)


def shown_value(value: Any) -> str:
    """A resolved value as `doctor --settings` prints it."""
    if value is None:
        return "(unset)"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, tuple | list):
        return ", ".join(map(str, value)) or "(none)"
    if isinstance(value, Mapping):
        return ", ".join(sorted(map(str, value))) or "(none)"
    if isinstance(value, str) and "\n" in value:
        first = value.strip().splitlines()[0] if value.strip() else ""
        return f"{first[:60]}... ({len(value):,} characters)"
    return str(value)


def _without_credentials(url: str) -> str:
    """A URL with any `user:password@` replaced (a proxy's URL may carry them)."""
    return re.sub(r"^([a-zA-Z][a-zA-Z0-9+.-]*://)[^/@]*@", r"\1***@", url)


def _masked(value: Any) -> str:
    """A secret as whether it is set and its length, never any of its characters."""
    return f"set ({len(str(value))} characters)" if value else "(unset)"
