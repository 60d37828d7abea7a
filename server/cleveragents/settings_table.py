"""Every setting in one table: its name, type, variable, default, check, levels and doc line.

The bottom of the layers (it imports nothing of ours), so every module that reads a
`CLEVERAGENTS_*` variable takes the name from here, and a test checks no other module of the
package spells one. The core's resolution (`service/settings.py`), the CLI's flags, the
daemon's and ACP's option names, `cleveragents doctor --settings` and docs/settings.md
(`python -m cleveragents.settings_table > docs/settings.md`; `--check` compares) all read it.
A new setting is a row here and the code that uses it.

The first level that sets a setting wins: a run's params, then the client's options (the
daemon's `initializationOptions`, ACP's `_meta.cleveragents`, the CLI's flags), then the
environment, then the default. Lists add up across the levels instead.
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Iterator
from dataclasses import dataclass


class Level(enum.Enum):
    """Where a setting may be set, with the name docs/settings.md gives the column."""

    RUN = "run params"
    DAEMON = "`initializationOptions`"
    ACP = "ACP `_meta.cleveragents`"
    CLI = "`cleveragents run`"
    ENV = "environment"


@dataclass(frozen=True, slots=True)
class Setting:
    """One row. `option` is the camelCase name in run params, `initializationOptions` and
    ACP's `_meta.cleveragents` (those of `levels`); `flag` the CLI's; `resolved` the
    attribute path of the resolved value under the core's resolution (`defaults.` is
    `RunDefaults`, `policy.` the command policy, `history` the history file)."""

    name: str
    label: str
    kind: str
    env: str | None
    default: str
    check: str
    levels: frozenset[Level]
    doc: str
    resolved: str
    option: str | None = None
    flag: str | None = None
    secret: bool = False


_ALL_CLIENT = frozenset({Level.RUN, Level.DAEMON, Level.CLI, Level.ENV})
_ACP_TOO = _ALL_CLIENT | {Level.ACP}

# The variable names, each spelled once in the package.
ENV_PROVIDER = "CLEVERAGENTS_PROVIDER"
ENV_MODEL = "CLEVERAGENTS_MODEL"
ENV_PROFILE = "CLEVERAGENTS_PROFILE"
ENV_MAX_ITERATIONS = "CLEVERAGENTS_MAX_ITERATIONS"
ENV_BASE_URL = "CLEVERAGENTS_BASE_URL"
ENV_REPLAY_SCRIPT = "CLEVERAGENTS_REPLAY_SCRIPT"
ENV_HISTORY = "CLEVERAGENTS_HISTORY"
ENV_TOOL_RESULT_BUDGET = "CLEVERAGENTS_TOOL_RESULT_BUDGET"
ENV_CONTEXT_WINDOW = "CLEVERAGENTS_CONTEXT_WINDOW"
ENV_PROMPT_CACHING = "CLEVERAGENTS_PROMPT_CACHING"
ENV_PRICES = "CLEVERAGENTS_PRICES"
ENV_CONTEXT_CLEAR_TRIGGER = "CLEVERAGENTS_CONTEXT_CLEAR_TRIGGER"
ENV_CONTEXT_KEEP_TOOL_USES = "CLEVERAGENTS_CONTEXT_KEEP_TOOL_USES"
ENV_CONTEXT_CLEAR_AT_LEAST = "CLEVERAGENTS_CONTEXT_CLEAR_AT_LEAST"
ENV_COMPACTION_SUMMARY = "CLEVERAGENTS_COMPACTION_SUMMARY"
ENV_PROJECT_INSTRUCTIONS = "CLEVERAGENTS_PROJECT_INSTRUCTIONS"
ENV_OPENAI_VISION = "CLEVERAGENTS_OPENAI_VISION"
ENV_TRUST_WORKSPACE = "CLEVERAGENTS_TRUST_WORKSPACE"
ENV_READ_PATHS = "CLEVERAGENTS_COMMAND_READ_PATHS"
ENV_NEVER_VISIBLE = "CLEVERAGENTS_COMMAND_NEVER_VISIBLE"
ENV_PASS_VARIABLES = "CLEVERAGENTS_COMMAND_ENV"
ENV_BUBBLEWRAP = "CLEVERAGENTS_COMMAND_BWRAP"
ENV_ALLOW_UNCONFINED = "CLEVERAGENTS_ALLOW_UNCONFINED_COMMANDS"
ENV_MAX_PROCESSES = "CLEVERAGENTS_COMMAND_MAX_PROCESSES"
ENV_MAX_FILE_SIZE = "CLEVERAGENTS_COMMAND_MAX_FILE_SIZE"
ENV_MAX_ADDRESS_SPACE = "CLEVERAGENTS_COMMAND_MAX_ADDRESS_SPACE"
ENV_MAX_CPU_SECONDS = "CLEVERAGENTS_COMMAND_MAX_CPU_SECONDS"
ENV_MAX_MEMORY = "CLEVERAGENTS_COMMAND_MAX_MEMORY"
ENV_TMP_SIZE = "CLEVERAGENTS_COMMAND_TMP_SIZE"
ENV_MIN_FREE_DISK = "CLEVERAGENTS_COMMAND_MIN_FREE_DISK"
ENV_COMMAND_USER = "CLEVERAGENTS_COMMAND_USER"
ENV_ALLOW_PROTECTED_WRITES = "CLEVERAGENTS_ALLOW_PROTECTED_WRITES"
ENV_PROTECTED_PATHS = "CLEVERAGENTS_PROTECTED_PATHS"
# Not a setting: cleveragents gives every command it starts this variable (to find what the
# command left running).
COMMAND_TAG_VARIABLE = "CLEVERAGENTS_COMMAND_ID"
# The prefix every variable above shares (the ACP server's help names it).
ENV_PREFIX = "CLEVERAGENTS_"

MAX_ITERATIONS_CAP = 1000
DEFAULT_MAX_ITERATIONS_TEXT = "25"
_YES_NO = "`1`/`0` (also true/false, yes/no, on/off)"
_SIZE = "a whole number, sizes also `K`/`M`/`G`/`T` (powers of 1024), or `unlimited`"


def _limit(name: str, option: str, env: str, label: str) -> Setting:
    return Setting(
        name=f"command_limit_{name}",
        label=f"command limit: {label}",
        kind="limit",
        env=env,
        default="see [security.md](security.md#resource-limits)",
        check=_SIZE,
        levels=_ALL_CLIENT,
        doc=f"The {label} each command may use.",
        resolved=f"policy.limits.{name}",
        option=f"commandLimits.{option}",
        flag=f"--command-limit {option_flag_name(option)}=VALUE",
    )


def option_flag_name(option: str) -> str:
    """`fileSizeBytes` -> `file-size-bytes` (how the command line spells an option)."""
    return "".join("-" + c.lower() if c.isupper() else c for c in option)


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "provider",
        "provider",
        "text",
        ENV_PROVIDER,
        "`offline`",
        "offline, replay, anthropic or openai",
        _ALL_CLIENT,
        "The LLM provider.",
        "defaults.provider",
        "provider",
        "--provider",
    ),
    Setting(
        "model",
        "model",
        "text",
        ENV_MODEL,
        "the provider's (`OPENAI_MODEL` for openai)",
        "",
        _ALL_CLIENT,
        "The model name for the provider.",
        "defaults.model",
        "model",
        "--model",
    ),
    Setting(
        "automation_profile",
        "automation profile",
        "text",
        ENV_PROFILE,
        "`ask`",
        "ask, auto-edit or full-auto",
        _ACP_TOO,
        "What may run without asking.",
        "defaults.automation_profile",
        "automationProfile",
        "--profile",
    ),
    Setting(
        "max_iterations",
        "LLM-call limit",
        "integer",
        ENV_MAX_ITERATIONS,
        DEFAULT_MAX_ITERATIONS_TEXT,
        f"1 to {MAX_ITERATIONS_CAP}",
        _ALL_CLIENT,
        "Model calls a run may make before it stops.",
        "defaults.max_iterations",
        "maxIterations",
        "--max-iterations",
    ),
    Setting(
        "base_url",
        "base URL",
        "URL",
        ENV_BASE_URL,
        "the SDK's",
        "",
        _ALL_CLIENT,
        "The provider's base URL (OpenAI-compatible servers, proxies).",
        "defaults.base_url",
        "baseUrl",
        "--base-url",
    ),
    Setting(
        "replay_script",
        "replay script",
        "path",
        ENV_REPLAY_SCRIPT,
        "none",
        "",
        _ALL_CLIENT,
        "The replay provider's JSON script.",
        "defaults.replay_script",
        "replayScript",
        "--script",
    ),
    Setting(
        "max_tokens",
        "completion tokens per call",
        "integer",
        None,
        "the provider's",
        "at least 1",
        frozenset({Level.RUN, Level.DAEMON}),
        "Tokens a model call may answer.",
        "defaults.max_tokens",
        "maxTokens",
    ),
    Setting(
        "system_prompt",
        "system prompt",
        "text",
        None,
        "built in",
        "",
        frozenset({Level.RUN, Level.DAEMON}),
        "The system prompt.",
        "defaults.system_prompt",
        "systemPrompt",
    ),
    Setting(
        "tool_result_budget",
        "tool result budget",
        "integer (characters)",
        ENV_TOOL_RESULT_BUDGET,
        "32,000",
        "1,000 to 10,000,000",
        _ACP_TOO,
        "Characters of one tool result the model is shown.",
        "defaults.result_budget_chars",
        "toolResultBudget",
        "--tool-result-budget",
    ),
    Setting(
        "context_window",
        "context window",
        "integer (tokens)",
        ENV_CONTEXT_WINDOW,
        "the model table's, else 128,000",
        "1,024 to 100,000,000",
        _ACP_TOO,
        "The model's context window, for models the table does not know.",
        "defaults.context_window",
        "contextWindow",
        "--context-window",
    ),
    Setting(
        "prompt_caching",
        "prompt caching",
        "yes/no",
        ENV_PROMPT_CACHING,
        "on",
        _YES_NO,
        _ACP_TOO,
        "Send prompt-cache breakpoints ([tokens.md](tokens.md)).",
        "defaults.prompt_caching",
        "promptCaching",
        "--no-prompt-cache",
    ),
    Setting(
        "project_instructions",
        "project instructions (AGENTS.md)",
        "yes/no",
        ENV_PROJECT_INSTRUCTIONS,
        "on",
        _YES_NO,
        _ACP_TOO,
        "Send the workspace's AGENTS.md / CLAUDE.md and the user's own to the model.",
        "defaults.project_instructions",
        "projectInstructions",
        "--no-project-instructions",
    ),
    Setting(
        "prices",
        "prices (USD per million tokens)",
        "JSON",
        ENV_PRICES,
        "[the price table](tokens.md#prices-and-windows)",
        '`{"model": {"input", "output", "cacheWrite"?, "cacheRead"?}}`',
        frozenset({Level.DAEMON, Level.CLI, Level.ENV}),
        "Prices by model, merged model by model over the table.",
        "defaults.prices",
        "prices",
        "--prices FILE",
    ),
    Setting(
        "context_clear_trigger",
        "context clearing trigger (tokens)",
        "integer",
        ENV_CONTEXT_CLEAR_TRIGGER,
        "the cache-priced policy's",
        "at least 0 (0: only at the limit)",
        frozenset({Level.ENV}),
        "Clear old tool results once the prompt is this large.",
        "defaults.context_policy.trigger_tokens",
    ),
    Setting(
        "context_keep_tool_uses",
        "tool uses kept when clearing",
        "integer",
        ENV_CONTEXT_KEEP_TOOL_USES,
        "the cache-priced policy's",
        "at least 0",
        frozenset({Level.ENV}),
        "The newest tool results a clearing keeps.",
        "defaults.context_policy.keep_tool_uses",
    ),
    Setting(
        "context_clear_at_least",
        "tokens a clearing frees",
        "integer",
        ENV_CONTEXT_CLEAR_AT_LEAST,
        "the cache-priced policy's",
        "at least 0",
        frozenset({Level.ENV}),
        "The least a clearing frees (so the cache is not broken for less).",
        "defaults.context_policy.clear_at_least_tokens",
    ),
    Setting(
        "compaction_summary",
        "compaction summary",
        "yes/no",
        ENV_COMPACTION_SUMMARY,
        "off",
        _YES_NO,
        frozenset({Level.ENV}),
        "Ask the model for a summary of what compaction drops (an extra call each time).",
        "defaults.compaction_summary",
    ),
    Setting(
        "openai_vision",
        "the openai model sees images",
        "yes/no",
        ENV_OPENAI_VISION,
        "off",
        _YES_NO,
        frozenset({Level.ENV}),
        "The openai provider's model takes images ([images.md](images.md)).",
        "defaults.openai_vision",
    ),
    Setting(
        "trust_workspace",
        "trust every workspace",
        "yes/no",
        ENV_TRUST_WORKSPACE,
        "off",
        _YES_NO,
        frozenset({Level.DAEMON, Level.CLI, Level.ENV}),
        "Start every workspace's `.mcp.json` servers without asking "
        "([security.md](security.md#mcp-servers-and-workspace-trust)).",
        "defaults.trust_workspace",
        "trustWorkspace",
        "--trust-workspace",
    ),
    Setting(
        "history",
        "run history",
        "path",
        ENV_HISTORY,
        "the user data folder's",
        "",
        frozenset({Level.CLI, Level.ENV}),
        "The run history database (also `serve --history`; `--no-history` stores nothing).",
        "history",
        None,
        "--history",
    ),
    Setting(
        "command_read_paths",
        "folders commands may read",
        "paths",
        ENV_READ_PATHS,
        "the system's",
        "absolute or starting with ~ (the variable: separated by `:`)",
        _ALL_CLIENT,
        "Folders run_command may also read (lists add up).",
        "policy.extra_read_paths",
        "commandReadPaths",
        "--command-read-path",
    ),
    Setting(
        "command_env",
        "variables commands get",
        "names",
        ENV_PASS_VARIABLES,
        "the core set",
        "names or patterns such as NODE_* (the variable: separated by commas)",
        _ALL_CLIENT,
        "Variables run_command also passes on (lists add up).",
        "policy.env_allow",
        "commandEnv",
        "--command-env",
    ),
    _limit("max_processes", "processes", ENV_MAX_PROCESSES, "processes"),
    _limit("max_file_size", "fileSizeBytes", ENV_MAX_FILE_SIZE, "file size"),
    _limit("max_address_space", "addressSpaceBytes", ENV_MAX_ADDRESS_SPACE, "address space"),
    _limit("max_cpu_seconds", "cpuSeconds", ENV_MAX_CPU_SECONDS, "CPU seconds"),
    _limit("max_memory", "memoryBytes", ENV_MAX_MEMORY, "memory"),
    _limit("tmp_size", "tmpSizeBytes", ENV_TMP_SIZE, "/tmp size"),
    _limit("min_free_disk", "minFreeDiskBytes", ENV_MIN_FREE_DISK, "free disk kept"),
    Setting(
        "allow_unconfined_commands",
        "unconfined commands under full-auto",
        "yes/no",
        ENV_ALLOW_UNCONFINED,
        "asked",
        _YES_NO,
        _ALL_CLIENT,
        "Where bubblewrap is missing, run commands unconfined under full-auto without asking.",
        "policy.allow_unconfined",
        "allowUnconfinedCommands",
        "--allow-unconfined-commands",
    ),
    Setting(
        "command_never_visible",
        "paths never visible to commands",
        "paths",
        ENV_NEVER_VISIBLE,
        "the credential folders",
        "separated by `:`",
        frozenset({Level.ENV}),
        "More paths commands can never see.",
        "policy.never_visible",
    ),
    Setting(
        "command_bubblewrap",
        "bubblewrap",
        "text",
        ENV_BUBBLEWRAP,
        "`auto`",
        "`auto`, a path, or `none`",
        frozenset({Level.ENV}),
        "The bubblewrap program that confines commands.",
        "policy.bubblewrap",
    ),
    Setting(
        "command_user",
        "user commands run as",
        "text",
        ENV_COMMAND_USER,
        "`auto`",
        "`auto` or `daemon`",
        frozenset({Level.ENV}),
        "Who a confined command runs as when the daemon is root ([security.md](security.md)).",
        "policy.command_user",
    ),
    Setting(
        "allow_protected_writes",
        "write protected paths unasked",
        "yes/no",
        ENV_ALLOW_PROTECTED_WRITES,
        "off",
        _YES_NO,
        frozenset({Level.ENV}),
        "Commands and file tools write protected paths without asking "
        "([security.md](security.md#protected-paths-code-planted-for-later)).",
        "policy.allow_protected_writes",
    ),
    Setting(
        "protected_paths",
        "more protected paths",
        "patterns",
        ENV_PROTECTED_PATHS,
        "none",
        "patterns inside the workspace, separated by `:` or commas",
        frozenset({Level.ENV}),
        "Paths protected beside the built-in ones.",
        "policy.protected_paths",
    ),
    Setting(
        "anthropic_api_key",
        "Anthropic API key",
        "secret",
        "ANTHROPIC_API_KEY",
        "none",
        "",
        frozenset({Level.ENV}),
        "The anthropic provider's key: the environment alone sets it.",
        "env.ANTHROPIC_API_KEY",
        secret=True,
    ),
    Setting(
        "openai_api_key",
        "OpenAI API key",
        "secret",
        "OPENAI_API_KEY",
        "none",
        "(a local server may need none)",
        frozenset({Level.ENV}),
        "The openai provider's key: the environment alone sets it.",
        "env.OPENAI_API_KEY",
        secret=True,
    ),
)

BY_NAME: dict[str, Setting] = {row.name: row for row in SETTINGS}
BY_ENV: dict[str, Setting] = {row.env: row for row in SETTINGS if row.env}


def setting(name: str) -> Setting:
    return BY_NAME[name]


def rows_for(level: Level) -> Iterator[Setting]:
    return (row for row in SETTINGS if level in row.levels)


# -- docs/settings.md -------------------------------------------------------------------------
_INTRO = """# Settings

<!-- Generated from server/cleveragents/settings_table.py: python -m cleveragents.settings_table
> docs/settings.md (a test runs --check). Edit the table, not this file. -->

Every setting, at every level, in one place (what the command wall's settings do is in
[security.md](security.md#settings-at-every-level)). The first level that sets it wins: the
daemon's run params, then its `initializationOptions` (ACP's `_meta.cleveragents` in
`session/new`, the terminal's flags), then the environment, then the default
(`service/settings.py` resolves them for every front). Lists (read paths, variables) add up
across the levels instead, and prices merge model by model. A bad value is refused naming the
field, flag or variable: -32602 from the daemon (for `initialize` or the run), exit 2 from the
CLI and from `serve --acp` at start. `cleveragents doctor --settings` prints each setting's
resolved value and where it came from.
"""

_OUTRO = """
ACP mode (`serve --acp`) also takes `--tools`, `--no-builtins`, `--no-plugins`, `--history`
and `--no-history`; the daemon takes `toolModules`, `builtinTools`, `pluginTools`,
`approvals` and `approvalTimeoutSeconds` (at most 86,400 s, default 600) in
`initializationOptions`, and a run may narrow `tools`. `cleveragents doctor` takes the command
flags too and shows the policy they make. A run's own command settings apply to that run only.
Attached files (`--file PATH[:START-END]`, run param `resources`) and images (`--image PATH`,
`images`, [images.md](images.md)) belong to one prompt. API keys come from the environment
alone (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`).

A command's own environment also carries `{tag}`, which cleveragents sets (to find what a
command left running), not one you set.
"""


def _cell(row: Setting, level: Level) -> str:
    if level not in row.levels:
        return ""
    if level is Level.ENV:
        return f"`{row.env}`"
    if level is Level.CLI:
        return f"`{row.flag}`" if row.flag else ""
    return f"`{row.option}`" if row.option else ""


def render_markdown() -> str:
    """docs/settings.md, from the table."""
    columns = (Level.RUN, Level.DAEMON, Level.ACP, Level.CLI, Level.ENV)
    lines = [_INTRO]
    lines.append(
        "| setting | " + " | ".join(c.value for c in columns) + " | default | accepts | what |"
    )
    lines.append("|---" * (len(columns) + 4) + "|")
    for row in SETTINGS:
        cells = [row.label, *(_cell(row, c) for c in columns), row.default, row.check, row.doc]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append(_OUTRO.format(tag=COMMAND_TAG_VARIABLE))
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    """Print docs/settings.md; with `--check PATH`, exit 1 when PATH differs from the table."""
    text = render_markdown()
    if argv[:1] == ["--check"]:
        path = argv[1] if len(argv) > 1 else "docs/settings.md"
        with open(path, encoding="utf-8") as handle:
            if handle.read() != text:
                print(
                    f"{path} is out of date: python -m cleveragents.settings_table > {path}",
                    file=sys.stderr,
                )
                return 1
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
