"""`initialize`'s types: the client's options and capability, the daemon's capability.

The only wire types the first request needs: the others load when first named (`__init__`).
"""

from __future__ import annotations

from typing import Any

import attrs

from ...settings_table import ENV_PREFIX
from .common import PROTOCOL_VERSION, AutomationProfile, doc, setting_doc


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
        default=None, metadata=setting_doc("command_limit_max_processes")
    )
    file_size_bytes: int | str | None = attrs.field(
        default=None, metadata=setting_doc("command_limit_max_file_size")
    )
    address_space_bytes: int | str | None = attrs.field(
        default=None, metadata=setting_doc("command_limit_max_address_space")
    )
    cpu_seconds: int | str | None = attrs.field(
        default=None, metadata=setting_doc("command_limit_max_cpu_seconds")
    )
    memory_bytes: int | str | None = attrs.field(
        default=None,
        metadata=setting_doc("command_limit_max_memory"),
    )
    tmp_size_bytes: int | str | None = attrs.field(
        default=None, metadata=setting_doc("command_limit_tmp_size")
    )
    min_free_disk_bytes: int | str | None = attrs.field(
        default=None,
        metadata=setting_doc("command_limit_min_free_disk"),
    )


@attrs.frozen(kw_only=True)
class InitializationOptions:
    """`initializationOptions` of `initialize`: the daemon's defaults for every run.

    API keys are never accepted here; they come only from the daemon's environment.
    """

    provider: str | None = attrs.field(
        default=None,
        metadata=setting_doc("provider"),
    )
    model: str | None = attrs.field(default=None, metadata=setting_doc("model"))
    automation_profile: AutomationProfile | None = attrs.field(
        default=None,
        metadata=setting_doc("automation_profile"),
    )
    max_iterations: int | None = attrs.field(
        default=None,
        metadata=setting_doc("max_iterations"),
    )
    system_prompt: str | None = attrs.field(default=None, metadata=setting_doc("system_prompt"))
    base_url: str | None = attrs.field(default=None, metadata=setting_doc("base_url"))
    replay_script: str | None = attrs.field(default=None, metadata=setting_doc("replay_script"))
    max_tokens: int | None = attrs.field(default=None, metadata=setting_doc("max_tokens"))
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
        metadata=setting_doc("trust_workspace"),
    )
    tool_result_budget: int | None = attrs.field(
        default=None,
        metadata=setting_doc("tool_result_budget"),
    )
    context_window: int | None = attrs.field(
        default=None,
        metadata=setting_doc("context_window"),
    )
    prompt_caching: bool | None = attrs.field(
        default=None,
        metadata=setting_doc("prompt_caching"),
    )
    project_instructions: bool | None = attrs.field(
        default=None,
        metadata=setting_doc("project_instructions"),
    )
    prices: dict[str, ModelPrice] | None = attrs.field(
        default=None,
        metadata=setting_doc("prices"),
    )
    command_read_paths: list[str] | None = attrs.field(
        default=None,
        metadata=setting_doc("command_read_paths"),
    )
    command_env: list[str] | None = attrs.field(
        default=None,
        metadata=setting_doc("command_env"),
    )
    command_limits: CommandLimits | None = attrs.field(
        default=None,
        metadata=doc(f"`run_command`'s limits, over ${ENV_PREFIX}COMMAND_MAX_* ones."),
    )
    allow_unconfined_commands: bool | None = attrs.field(
        default=None,
        metadata=setting_doc("allow_unconfined_commands"),
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
