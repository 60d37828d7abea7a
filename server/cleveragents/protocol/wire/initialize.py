"""`initialize`'s types: the client's options and capability, the daemon's capability.

The only wire types the first request needs: the others load when first named (`__init__`).
"""

from __future__ import annotations

from typing import Any

import attrs

from ...settings_table import (
    ENV_ALLOW_UNCONFINED,
    ENV_CONTEXT_WINDOW,
    ENV_MAX_ITERATIONS,
    ENV_MODEL,
    ENV_PASS_VARIABLES,
    ENV_PREFIX,
    ENV_PRICES,
    ENV_PROFILE,
    ENV_PROJECT_INSTRUCTIONS,
    ENV_PROMPT_CACHING,
    ENV_PROVIDER,
    ENV_READ_PATHS,
    ENV_TOOL_RESULT_BUDGET,
    ENV_TRUST_WORKSPACE,
)
from .common import PROTOCOL_VERSION, AutomationProfile, doc


@attrs.frozen(kw_only=True)
class ModelPrice:
    """A model's price in US dollars per million tokens."""

    input: float = attrs.field(metadata=doc("Uncached input."))
    output: float = attrs.field(metadata=doc("Output."))
    cache_write: float | None = attrs.field(
        default=None, metadata=doc("Input written to the prompt cache. Default: `input`.")
    )
    cache_read: float | None = attrs.field(
        default=None, metadata=doc("Input read from the prompt cache. Default: `input`.")
    )


@attrs.frozen(kw_only=True)
class CommandLimits:
    """Ceilings on each `run_command`: a positive integer, or a string such as `"8G"`
    (sizes take K, M, G, T, powers of 1024) or `"unlimited"`. Unset ones keep theirs."""

    processes: int | str | None = attrs.field(
        default=None, metadata=doc("Processes and threads. Default 4096.")
    )
    file_size_bytes: int | str | None = attrs.field(
        default=None, metadata=doc("Largest file a command may write. Default 4 GiB.")
    )
    address_space_bytes: int | str | None = attrs.field(
        default=None, metadata=doc("Address space per process. Default 32 GiB.")
    )
    cpu_seconds: int | str | None = attrs.field(
        default=None, metadata=doc("CPU time per process. Default 600 s per core.")
    )
    memory_bytes: int | str | None = attrs.field(
        default=None,
        metadata=doc("Memory of all the command's processes (a cgroup). Default 3/4 of RAM."),
    )
    tmp_size_bytes: int | str | None = attrs.field(
        default=None, metadata=doc("Size of the private /tmp and home. Default 2 GiB.")
    )
    min_free_disk_bytes: int | str | None = attrs.field(
        default=None,
        metadata=doc("A command stops when the sandbox's disk has less free. Default 2 GiB."),
    )


@attrs.frozen(kw_only=True)
class InitializationOptions:
    """`initializationOptions` of `initialize`: the daemon's defaults for every run.

    API keys are never accepted here; they come only from the daemon's environment.
    """

    provider: str | None = attrs.field(
        default=None,
        metadata=doc(
            "LLM provider: offline, replay, anthropic or openai. Default: "
            f"${ENV_PROVIDER}, else offline."
        ),
    )
    model: str | None = attrs.field(
        default=None, metadata=doc(f"Model name. Default: ${ENV_MODEL}, else the provider's.")
    )
    automation_profile: AutomationProfile | None = attrs.field(
        default=None,
        metadata=doc(f"Default automation profile. Default: ${ENV_PROFILE}, else ask."),
    )
    max_iterations: int | None = attrs.field(
        default=None,
        metadata=doc(f"Default LLM-call limit per run. Default: ${ENV_MAX_ITERATIONS}, else 25."),
    )
    system_prompt: str | None = attrs.field(
        default=None, metadata=doc("Replaces the built-in system prompt.")
    )
    base_url: str | None = attrs.field(
        default=None, metadata=doc("Provider base URL (OpenAI-compatible servers, proxies).")
    )
    replay_script: str | None = attrs.field(
        default=None, metadata=doc("Path of the replay provider's JSON script.")
    )
    max_tokens: int | None = attrs.field(
        default=None, metadata=doc("Completion token limit per LLM call (anthropic).")
    )
    tool_modules: list[str] | None = attrs.field(
        default=None,
        metadata=doc("Python modules whose @tool functions are added to the built-in tools."),
    )
    builtin_tools: bool | None = attrs.field(
        default=None, metadata=doc("Offer the built-in workspace tools. Default: true.")
    )
    plugin_tools: bool | None = attrs.field(
        default=None,
        metadata=doc("Offer tools of installed `cleveragents.tools` entry points. Default: true."),
    )
    approvals: bool | None = attrs.field(
        default=None,
        metadata=doc(
            "The client answers `cleveragents/approveToolCall`. Without it (here or in "
            "`capabilities.experimental.cleveragents.approvals`), calls that need approval "
            "are denied."
        ),
    )
    approval_timeout_seconds: float | None = attrs.field(
        default=None,
        metadata=doc(
            "A call whose approval (or a workspace-trust question) takes longer is denied. "
            "Default: 600."
        ),
    )
    trust_workspace: bool | None = attrs.field(
        default=None,
        metadata=doc(
            "Start every workspace's `.mcp.json` servers without asking (for automation). "
            f"Default: ${ENV_TRUST_WORKSPACE}, else false."
        ),
    )
    tool_result_budget: int | None = attrs.field(
        default=None,
        metadata=doc(
            "Characters of one tool result the model is shown (1,000 to 10,000,000); the "
            f"record keeps it whole. Default: ${ENV_TOOL_RESULT_BUDGET}, else 32,000."
        ),
    )
    context_window: int | None = attrs.field(
        default=None,
        metadata=doc(
            "The model's context window in tokens, for models the built-in table does not "
            f"know (a local model). Default: ${ENV_CONTEXT_WINDOW}, else the table's, "
            "else 128,000."
        ),
    )
    prompt_caching: bool | None = attrs.field(
        default=None,
        metadata=doc(
            "Mark prompt-cache breakpoints (Anthropic). Default: "
            f"${ENV_PROMPT_CACHING} (0 or 1), else true."
        ),
    )
    project_instructions: bool | None = attrs.field(
        default=None,
        metadata=doc(
            "Send the workspace's AGENTS.md files (CLAUDE.md where there is none) and the "
            "user's own to the model (docs/agents.md). Default: "
            f"${ENV_PROJECT_INSTRUCTIONS} (0 or 1), else true."
        ),
    )
    prices: dict[str, ModelPrice] | None = attrs.field(
        default=None,
        metadata=doc(
            f"Prices by model name, over ${ENV_PRICES} (the same JSON) and the "
            'built-in table, e.g. `{"my-model": {"input": 0.5, "output": 1.5}}`.'
        ),
    )
    command_read_paths: list[str] | None = attrs.field(
        default=None,
        metadata=doc(
            "Folders `run_command` may also read (absolute, or starting with `~`), added to "
            f"${ENV_READ_PATHS}. Credential folders stay hidden."
        ),
    )
    command_env: list[str] | None = attrs.field(
        default=None,
        metadata=doc(
            "Variables (names or patterns such as `NODE_*`) `run_command` also gets, added to "
            f"${ENV_PASS_VARIABLES}."
        ),
    )
    command_limits: CommandLimits | None = attrs.field(
        default=None,
        metadata=doc(f"`run_command`'s limits, over ${ENV_PREFIX}COMMAND_MAX_* ones."),
    )
    allow_unconfined_commands: bool | None = attrs.field(
        default=None,
        metadata=doc(
            "Where bubblewrap is missing, run commands unconfined under `full-auto` without "
            f"asking. Default: ${ENV_ALLOW_UNCONFINED}, else false."
        ),
    )
    token: str | None = attrs.field(
        default=None,
        metadata=doc(
            "The access token of a daemon started with `--tcp` (required there: read it "
            "from the file the daemon names on stderr). Ignored over stdio and `--socket`."
        ),
    )


@attrs.frozen(kw_only=True)
class ClientToolDeclaration:
    """A tool the client serves (`capabilities.experimental.cleveragents.tools`): offered to
    the model beside the daemon's own; each call is a `cleveragents/callClientTool` request."""

    name: str = attrs.field(
        metadata=doc(
            "1 to 64 letters, digits, `_` or `-`; not the name of one of the daemon's tools "
            "(`initialize` fails naming it)."
        )
    )
    description: str = attrs.field(metadata=doc("What it does, for the model. Not empty."))
    input_schema: dict[str, Any] = attrs.field(
        metadata=doc("JSON Schema of its arguments: an object schema (`type: object`).")
    )
    read_only: bool | None = attrs.field(
        default=None,
        metadata=doc(
            "It changes nothing: runs without approval under `ask` and `auto-edit`, and under "
            "`read-only`. Default false: asked about as a tool that may change things."
        ),
    )
    timeout_seconds: float | None = attrs.field(
        default=None,
        metadata=doc(
            "How long a call may wait for the answer (more than 0, at most 600; default 30). "
            "Then the request is withdrawn (`$/cancelRequest`) and the call fails as a timeout."
        ),
    )


@attrs.frozen(kw_only=True)
class ClientCapability:
    """`capabilities.experimental.cleveragents` of `initialize` (all optional)."""

    approvals: bool | None = attrs.field(
        default=None, metadata=doc("The client answers `cleveragents/approveToolCall`.")
    )
    trust: bool | None = attrs.field(
        default=None,
        metadata=doc(
            "The client answers `cleveragents/trustWorkspace`. Without it, a workspace's "
            "`.mcp.json` servers start only once trusted some other way."
        ),
    )
    tools: list[ClientToolDeclaration] | None = attrs.field(
        default=None,
        metadata=doc(
            "Tools the client serves (protocol 1.3): offered to every run of the session, "
            "whatever `tools` subset the run names; the client answers "
            "`cleveragents/callClientTool`."
        ),
    )


@attrs.frozen(kw_only=True)
class ServerCapability:
    """`capabilities.experimental.cleveragents` of the `initialize` result."""

    protocol_version: str = attrs.field(
        metadata=doc(f"This protocol's version ({PROTOCOL_VERSION}).")
    )
    server_version: str = attrs.field(metadata=doc("The cleveragents package version."))
    providers: list[str] = attrs.field(metadata=doc("Provider names this daemon knows."))
    automation_profiles: list[str] = attrs.field(metadata=doc("Valid `automationProfile` values."))
    approvals: bool = attrs.field(
        metadata=doc("Whether this daemon will ask this client to approve tool calls.")
    )
    trust: bool = attrs.field(
        metadata=doc("Whether this daemon will ask this client to trust workspaces.")
    )
    client_tools: list[str] = attrs.field(
        metadata=doc("The names of the client's tools this daemon offers to runs (1.3).")
    )
