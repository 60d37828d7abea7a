"""Every setting in one table: its name, type, variable, default, check, levels and doc line.

The bottom of the layers (it imports nothing of ours), so every module that reads a
`CLEVERAGENTS_*` variable takes the name from here, and a test checks no other module of the
package spells one. The core's resolution (`service/settings.py`), the CLI's flags, the
daemon's and ACP's option names, `cleveragents doctor --settings` and docs/settings.md
(`python -m cleveragents.settings_table > docs/settings.md`; `--check` compares) all read it.
A new setting is a row here and the code that uses it.

The first level that sets a setting wins: a run's params, then the client's options (the
daemon's `initializationOptions`, ACP's `_meta.cleveragents`, the CLI's flags), then the
environment, then the default. Lists add up across the levels instead (each entry once).
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
    # How a value is checked (`service/settings.check_setting`): the names it may be, its
    # bounds (with the unit, the message gives both bounds), and the CLI flag's own help when
    # it says more than the doc line.
    choices: tuple[str, ...] = ()
    minimum: int | None = None
    maximum: int | None = None
    unit: str = ""
    flag_help: str = ""

    @property
    def flag_name(self) -> str | None:
        """`--max-iterations` of `--max-iterations N`."""
        return self.flag.split(" ")[0] if self.flag else None

    @property
    def metavar(self) -> str | None:
        """`N` of `--max-iterations N` (None for a switch or a choice)."""
        parts = (self.flag or "").split(" ")
        return parts[1] if len(parts) > 1 else None

    @property
    def value_type(self) -> str:
        """How a value is read: `integer`, `yes/no`, `JSON`, `list` (lists add up across the
        levels), `limit`, or `text` (also paths, URLs, secrets)."""
        if self.kind.startswith("integer"):
            return "integer"
        if self.kind in ("paths", "names", "patterns"):
            return "list"
        if self.kind in ("yes/no", "JSON", "limit"):
            return self.kind
        return "text"


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
# The openai provider's own variables (the OpenAI SDK's names), read only through here too.
ENV_OPENAI_MODEL = "OPENAI_MODEL"
ENV_OPENAI_BASE_URL = "OPENAI_BASE_URL"
ENV_OPENAI_API_KEY = "OPENAI_API_KEY"
ENV_ANTHROPIC_API_KEY = "ANTHROPIC_API_KEY"
# Not a setting: cleveragents gives every command it starts this variable (to find what the
# command left running).
COMMAND_TAG_VARIABLE = "CLEVERAGENTS_COMMAND_ID"
# The prefix every variable above shares (the ACP server's help names it).
ENV_PREFIX = "CLEVERAGENTS_"

MAX_ITERATIONS_CAP = 1000
DEFAULT_MAX_ITERATIONS_TEXT = "25"
PROVIDER_NAMES = ("offline", "replay", "anthropic", "openai")
AUTOMATION_PROFILE_NAMES = ("read-only", "ask", "auto-edit", "full-auto")
TRUST_HELP = (
    f"start the sandbox's .mcp.json servers without asking (also {ENV_TRUST_WORKSPACE}=1); "
    "otherwise they start once you trust the file at the terminal"
)
_YES_NO = "`1`/`0` (also true/false, yes/no, on/off)"
_SIZE = "a whole number, sizes also `K`/`M`/`G`/`T` (powers of 1024), or `unlimited`"


def _limit(name: str, option: str, env: str, label: str, default: str) -> Setting:
    """A command limit's row; `default` is the command wall's (`ResourceLimits`, which a test
    holds it to), said here so the docs and the schema give the value."""
    return Setting(
        name=f"command_limit_{name}",
        label=f"command limit: {label}",
        kind="limit",
        env=env,
        default=default,
        check=_SIZE,
        levels=_ALL_CLIENT,
        doc=f"The {label} each command may use ([security.md](security.md#resource-limits)).",
        resolved=f"policy.limits.{name}",
        option=f"commandLimits.{option}",
        flag=f"--command-limit {option_flag_name(option)}=VALUE",
    )


def _one_of(names: tuple[str, ...]) -> str:
    return ", ".join(names[:-1]) + f" or {names[-1]}"


def option_attribute(option: str) -> str:
    """`maxIterations` -> `max_iterations` (the wire types' attribute of an option)."""
    return "".join("_" + c.lower() if c.isupper() else c for c in option)


def option_flag_name(option: str) -> str:
    """`fileSizeBytes` -> `file-size-bytes` (how the command line spells an option)."""
    return "".join("-" + c.lower() if c.isupper() else c for c in option)


SETTINGS: tuple[Setting, ...] = (
    Setting(
        name="provider",
        label="provider",
        kind="text",
        env=ENV_PROVIDER,
        default="`offline`",
        check=_one_of(PROVIDER_NAMES),
        levels=_ALL_CLIENT,
        doc="The LLM provider.",
        resolved="defaults.provider",
        option="provider",
        flag="--provider",
        choices=PROVIDER_NAMES,
    ),
    Setting(
        name="model",
        label="model",
        kind="text",
        env=ENV_MODEL,
        default="the provider's (`OPENAI_MODEL` for openai)",
        check="",
        levels=_ALL_CLIENT,
        doc="The model name for the provider.",
        resolved="defaults.model",
        option="model",
        flag="--model",
    ),
    Setting(
        name="automation_profile",
        label="automation profile",
        kind="text",
        env=ENV_PROFILE,
        default="`ask`",
        check=_one_of(AUTOMATION_PROFILE_NAMES),
        levels=_ACP_TOO,
        doc="What may run without asking.",
        resolved="defaults.automation_profile",
        option="automationProfile",
        flag="--profile",
        choices=AUTOMATION_PROFILE_NAMES,
    ),
    Setting(
        name="max_iterations",
        label="LLM-call limit",
        kind="integer",
        env=ENV_MAX_ITERATIONS,
        default=DEFAULT_MAX_ITERATIONS_TEXT,
        check=f"1 to {MAX_ITERATIONS_CAP}",
        levels=_ALL_CLIENT,
        doc="Model calls a run may make before it stops.",
        resolved="defaults.max_iterations",
        option="maxIterations",
        flag="--max-iterations N",
        minimum=1,
        maximum=MAX_ITERATIONS_CAP,
    ),
    Setting(
        name="base_url",
        label="base URL",
        kind="URL",
        env=ENV_BASE_URL,
        default="the SDK's",
        check="",
        levels=_ALL_CLIENT,
        doc="The provider's base URL (OpenAI-compatible servers, proxies).",
        resolved="defaults.base_url",
        option="baseUrl",
        flag="--base-url",
    ),
    Setting(
        name="replay_script",
        label="replay script",
        kind="path",
        env=ENV_REPLAY_SCRIPT,
        default="none",
        check="",
        levels=_ALL_CLIENT,
        doc="The replay provider's JSON script.",
        resolved="defaults.replay_script",
        option="replayScript",
        flag="--script FILE",
    ),
    Setting(
        name="max_tokens",
        label="completion tokens per call",
        kind="integer",
        env=None,
        default="the provider's",
        check="at least 1",
        levels=frozenset({Level.RUN, Level.DAEMON}),
        doc="Tokens a model call may answer.",
        resolved="defaults.max_tokens",
        option="maxTokens",
        minimum=1,
    ),
    Setting(
        name="system_prompt",
        label="system prompt",
        kind="text",
        env=None,
        default="built in",
        check="",
        levels=frozenset({Level.RUN, Level.DAEMON}),
        doc="The system prompt.",
        resolved="defaults.system_prompt",
        option="systemPrompt",
    ),
    Setting(
        name="tool_result_budget",
        label="tool result budget",
        kind="integer (characters)",
        env=ENV_TOOL_RESULT_BUDGET,
        default="32,000",
        check="1,000 to 10,000,000",
        levels=_ACP_TOO,
        doc="Characters of one tool result the model is shown.",
        resolved="defaults.result_budget_chars",
        option="toolResultBudget",
        flag="--tool-result-budget CHARS",
        minimum=1_000,
        maximum=10_000_000,
        unit="characters",
    ),
    Setting(
        name="context_window",
        label="context window",
        kind="integer (tokens)",
        env=ENV_CONTEXT_WINDOW,
        default="the model table's, else 128,000",
        check="1,024 to 100,000,000",
        levels=_ACP_TOO,
        doc="The model's context window, for models the table does not know.",
        resolved="defaults.context_window",
        option="contextWindow",
        flag="--context-window TOKENS",
        minimum=1024,
        maximum=100_000_000,
        unit="tokens",
    ),
    Setting(
        name="prompt_caching",
        label="prompt caching",
        kind="yes/no",
        env=ENV_PROMPT_CACHING,
        default="on",
        check=_YES_NO,
        levels=_ACP_TOO,
        doc="Send prompt-cache breakpoints ([tokens.md](tokens.md)).",
        resolved="defaults.prompt_caching",
        option="promptCaching",
        flag="--no-prompt-cache",
        flag_help=f"send no prompt-cache breakpoints (also: {ENV_PROMPT_CACHING}=0)",
    ),
    Setting(
        name="project_instructions",
        label="project instructions (AGENTS.md)",
        kind="yes/no",
        env=ENV_PROJECT_INSTRUCTIONS,
        default="on",
        check=_YES_NO,
        levels=_ACP_TOO,
        doc="Send the workspace's AGENTS.md / CLAUDE.md and the user's own to the model.",
        resolved="defaults.project_instructions",
        option="projectInstructions",
        flag="--no-project-instructions",
        flag_help="do not send the workspace's AGENTS.md / CLAUDE.md files nor the user's own "
        f"to the model (also: {ENV_PROJECT_INSTRUCTIONS}=0)",
    ),
    Setting(
        name="prices",
        label="prices (USD per million tokens)",
        kind="JSON",
        env=ENV_PRICES,
        default="[the price table](tokens.md#prices-and-windows)",
        check='`{"model": {"input", "output", "cacheWrite"?, "cacheRead"?}}`',
        levels=frozenset({Level.DAEMON, Level.CLI, Level.ENV}),
        doc="Prices by model, merged model by model over the table.",
        resolved="defaults.prices",
        option="prices",
        flag="--prices FILE",
        flag_help='a JSON file of prices by model, USD per million tokens: {"my-model": '
        '{"input": 0.5, "output": 1.5, "cacheWrite": 0.6, "cacheRead": 0.05}}'
        f" (also: ${ENV_PRICES})",
    ),
    Setting(
        name="context_clear_trigger",
        label="context clearing trigger (tokens)",
        kind="integer",
        env=ENV_CONTEXT_CLEAR_TRIGGER,
        default="the cache-priced policy's",
        check="at least 0 (0: only at the limit)",
        levels=frozenset({Level.ENV}),
        doc="Clear old tool results once the prompt is this large.",
        resolved="defaults.context_policy.trigger_tokens",
        minimum=0,
    ),
    Setting(
        name="context_keep_tool_uses",
        label="tool uses kept when clearing",
        kind="integer",
        env=ENV_CONTEXT_KEEP_TOOL_USES,
        default="the cache-priced policy's",
        check="at least 0",
        levels=frozenset({Level.ENV}),
        doc="The newest tool results a clearing keeps.",
        resolved="defaults.context_policy.keep_tool_uses",
        minimum=0,
    ),
    Setting(
        name="context_clear_at_least",
        label="tokens a clearing frees",
        kind="integer",
        env=ENV_CONTEXT_CLEAR_AT_LEAST,
        default="the cache-priced policy's",
        check="at least 0",
        levels=frozenset({Level.ENV}),
        doc="The least a clearing frees (so the cache is not broken for less).",
        resolved="defaults.context_policy.clear_at_least_tokens",
        minimum=0,
    ),
    Setting(
        name="compaction_summary",
        label="compaction summary",
        kind="yes/no",
        env=ENV_COMPACTION_SUMMARY,
        default="off",
        check=_YES_NO,
        levels=frozenset({Level.ENV}),
        doc="Ask the model for a summary of what compaction drops (an extra call each time).",
        resolved="defaults.compaction_summary",
    ),
    Setting(
        name="openai_vision",
        label="the openai model sees images",
        kind="yes/no",
        env=ENV_OPENAI_VISION,
        default="off",
        check=_YES_NO,
        levels=frozenset({Level.ENV}),
        doc="The openai provider's model takes images ([images.md](images.md)).",
        resolved="defaults.openai_vision",
    ),
    Setting(
        name="trust_workspace",
        label="trust every workspace",
        kind="yes/no",
        env=ENV_TRUST_WORKSPACE,
        default="off",
        check=_YES_NO,
        levels=frozenset({Level.DAEMON, Level.CLI, Level.ENV}),
        doc="Start every workspace's `.mcp.json` servers without asking "
        "([security.md](security.md#mcp-servers-and-workspace-trust)).",
        resolved="defaults.trust_workspace",
        option="trustWorkspace",
        flag="--trust-workspace",
        flag_help=TRUST_HELP,
    ),
    Setting(
        name="history",
        label="run history",
        kind="path",
        env=ENV_HISTORY,
        default="the user data folder's",
        check="",
        levels=frozenset({Level.CLI, Level.ENV}),
        doc="The run history database (also `serve --history`; `--no-history` stores nothing).",
        resolved="history",
        option=None,
        flag="--history PATH",
    ),
    Setting(
        name="command_read_paths",
        label="folders commands may read",
        kind="paths",
        env=ENV_READ_PATHS,
        default="the system's",
        check="absolute or starting with ~ (the variable: separated by `:`)",
        levels=_ALL_CLIENT,
        doc="Folders run_command may also read (lists add up).",
        resolved="policy.extra_read_paths",
        option="commandReadPaths",
        flag="--command-read-path PATH",
        flag_help="a folder run_command may also read, e.g. ~/.cargo (repeatable)",
    ),
    Setting(
        name="command_env",
        label="variables commands get",
        kind="names",
        env=ENV_PASS_VARIABLES,
        default="the core set",
        check="names or patterns such as NODE_* (the variable: separated by commas)",
        levels=_ALL_CLIENT,
        doc="Variables run_command also passes on (lists add up).",
        resolved="policy.env_allow",
        option="commandEnv",
        flag="--command-env NAME",
        flag_help="a variable (or pattern such as NODE_*) run_command also gets (repeatable)",
    ),
    _limit("max_processes", "processes", ENV_MAX_PROCESSES, "processes", "4096"),
    _limit("max_file_size", "fileSizeBytes", ENV_MAX_FILE_SIZE, "file size", "4G"),
    _limit("max_address_space", "addressSpaceBytes", ENV_MAX_ADDRESS_SPACE, "address space", "32G"),
    _limit("max_cpu_seconds", "cpuSeconds", ENV_MAX_CPU_SECONDS, "CPU seconds", "600 per core"),
    _limit("max_memory", "memoryBytes", ENV_MAX_MEMORY, "memory", "3/4 of RAM"),
    _limit("tmp_size", "tmpSizeBytes", ENV_TMP_SIZE, "/tmp size", "2G"),
    _limit("min_free_disk", "minFreeDiskBytes", ENV_MIN_FREE_DISK, "free disk kept", "2G"),
    Setting(
        name="allow_unconfined_commands",
        label="unconfined commands under full-auto",
        kind="yes/no",
        env=ENV_ALLOW_UNCONFINED,
        default="asked",
        check=_YES_NO,
        levels=_ALL_CLIENT,
        doc="Where bubblewrap is missing, run commands unconfined under full-auto without asking.",
        resolved="policy.allow_unconfined",
        option="allowUnconfinedCommands",
        flag="--allow-unconfined-commands",
        flag_help="where bubblewrap is missing, run commands unconfined under full-auto "
        "without asking",
    ),
    Setting(
        name="command_never_visible",
        label="paths never visible to commands",
        kind="paths",
        env=ENV_NEVER_VISIBLE,
        default="the credential folders",
        check="separated by `:`",
        levels=frozenset({Level.ENV}),
        doc="More paths commands can never see.",
        resolved="policy.never_visible",
    ),
    Setting(
        name="command_bubblewrap",
        label="bubblewrap",
        kind="text",
        env=ENV_BUBBLEWRAP,
        default="`auto`",
        check="`auto`, a path, or `none`",
        levels=frozenset({Level.ENV}),
        doc="The bubblewrap program that confines commands.",
        resolved="policy.bubblewrap",
    ),
    Setting(
        name="command_user",
        label="user commands run as",
        kind="text",
        env=ENV_COMMAND_USER,
        default="`auto`",
        check="`auto` or `daemon`",
        levels=frozenset({Level.ENV}),
        doc="Who a confined command runs as when the daemon is root ([security.md](security.md)).",
        resolved="policy.command_user",
    ),
    Setting(
        name="allow_protected_writes",
        label="write protected paths unasked",
        kind="yes/no",
        env=ENV_ALLOW_PROTECTED_WRITES,
        default="off",
        check=_YES_NO,
        levels=frozenset({Level.ENV}),
        doc="Commands and file tools write protected paths without asking "
        "([security.md](security.md#protected-paths-code-planted-for-later)).",
        resolved="policy.allow_protected_writes",
    ),
    Setting(
        name="protected_paths",
        label="more protected paths",
        kind="patterns",
        env=ENV_PROTECTED_PATHS,
        default="none",
        check="patterns inside the workspace, separated by `:` or commas",
        levels=frozenset({Level.ENV}),
        doc="Paths protected beside the built-in ones.",
        resolved="policy.protected_paths",
    ),
    Setting(
        name="anthropic_api_key",
        label="Anthropic API key",
        kind="secret",
        env=ENV_ANTHROPIC_API_KEY,
        default="none",
        check="",
        levels=frozenset({Level.ENV}),
        doc="The anthropic provider's key: the environment alone sets it.",
        resolved=f"env.{ENV_ANTHROPIC_API_KEY}",
        secret=True,
    ),
    Setting(
        name="openai_model",
        label="the openai provider's default model",
        kind="text",
        env=ENV_OPENAI_MODEL,
        default="none (the openai provider then asks for a model)",
        check="",
        levels=frozenset({Level.ENV}),
        doc="The openai provider's model when no level above names one.",
        resolved=f"env.{ENV_OPENAI_MODEL}",
    ),
    Setting(
        name="openai_base_url",
        label="the openai provider's default base URL",
        kind="URL",
        env=ENV_OPENAI_BASE_URL,
        default="OpenAI's",
        check="",
        levels=frozenset({Level.ENV}),
        doc="The openai provider's base URL when no level above sets one.",
        resolved=f"env.{ENV_OPENAI_BASE_URL}",
    ),
    Setting(
        name="openai_api_key",
        label="OpenAI API key",
        kind="secret",
        env=ENV_OPENAI_API_KEY,
        default="none",
        check="(a local server may need none)",
        levels=frozenset({Level.ENV}),
        doc="The openai provider's key: the environment alone sets it.",
        resolved=f"env.{ENV_OPENAI_API_KEY}",
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
across the levels instead, in the levels' order from the environment up, each entry once (one
a lower level already gave is not repeated), and prices merge model by model. A bad value is
refused naming the field, flag or variable: -32602 from the daemon (for `initialize` or the
run), exit 2 from the CLI and from `serve --acp` at start. `cleveragents doctor --settings`
prints each setting's resolved value and where it came from.
"""

_OUTRO = """
ACP mode (`serve --acp`) also takes `--tools`, `--no-builtins`, `--no-plugins`, `--history`
and `--no-history`; the daemon takes `toolModules`, `builtinTools`, `pluginTools`,
`approvals` and `approvalTimeoutSeconds` (at most 86,400 s, default 600) in
`initializationOptions`, and a run may narrow `tools`. `cleveragents doctor` takes the command
flags too and shows the policy they make. A run's own command settings apply to that run only.
Attached files (`--file PATH[:START-END]`, run param `resources`) and images (`--image PATH`,
`images`, [images.md](images.md)) belong to one prompt. API keys come from the environment
alone (`{anthropic_key}`, `{openai_key}`).

The daemon's `cleveragents/settings` (with a run's params, what that run would use) and ACP's
`session/new` with `_meta.cleveragents.reportSettings: true` answer the same report as
`doctor --settings`, each value with its source.

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
    lines.append(
        _OUTRO.format(
            tag=COMMAND_TAG_VARIABLE,
            anthropic_key=ENV_ANTHROPIC_API_KEY,
            openai_key=ENV_OPENAI_API_KEY,
        )
    )
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
