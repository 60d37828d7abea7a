"""`initialize`, translated: wire options and capabilities to the core's settings.

The resolution itself (run params > client options > environment > defaults) is the core's
(`service/settings.py`); this module checks the wire shapes and names every bad field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..protocol import wire
from ..protocol.command_options import command_settings
from ..protocol.converter import structure, structure_partial, unstructure, without_problems_at
from ..service.client_tools import DEFAULT_CLIENT_TOOL_TIMEOUT_S, ClientTool, check_client_tools
from ..service.errors import ParamsError
from ..service.settings import ClientOptions, SessionSettings, session_settings
from ..settings_table import Level, option_attribute, rows_for

# Keys that look like secrets: refused in initializationOptions with a pointer to the env.
# (`token` is not one: it is the `--tcp` daemon's access token, see remote.py.)
_SECRET_KEYS = {"apiKey", "api_key", "anthropicApiKey", "openaiApiKey", "secret"}
WHERE = "initializationOptions"


def parse_initialization_options(raw: Any) -> wire.InitializationOptions:
    """`initializationOptions` as typed options; ParamsError names any bad field."""
    if raw is None:
        return wire.InitializationOptions()
    if isinstance(raw, dict):
        secrets = sorted(k for k in raw if k in _SECRET_KEYS)
        if secrets:
            raise ParamsError(
                [
                    f"{WHERE}.{secrets[0]}: API keys are read only from the "
                    "daemon's environment (ANTHROPIC_API_KEY, OPENAI_API_KEY)"
                ]
            )
    return structure(raw, wire.InitializationOptions, where=WHERE)


def client_options(options: wire.InitializationOptions) -> ClientOptions:
    """The options as the core's: each settings-table row `initializationOptions` may set,
    read by its option name (the wire's attribute is its snake_case), then the daemon's own
    (tools, approvals) and the command layer."""
    settings: dict[str, Any] = {}
    for row in rows_for(Level.DAEMON):
        if row.option is None or not row.resolved.startswith("defaults."):
            continue  # the command rows: `command_settings` below
        value = getattr(options, option_attribute(row.option))
        if row.value_type == "JSON" and value is not None:  # the price table's typed models
            value = {model: unstructure(price) for model, price in value.items()}
        settings[row.name] = value
    return ClientOptions(
        **settings,
        tool_modules=tuple(options.tool_modules) if options.tool_modules is not None else None,
        builtin_tools=options.builtin_tools,
        plugin_tools=options.plugin_tools,
        approvals=options.approvals,
        approval_timeout_seconds=options.approval_timeout_seconds,
        command=command_settings(options),
    )


def initialization_settings(
    raw: Any, env: Mapping[str, str] | None = None, *, capabilities_experimental: Any = None
) -> SessionSettings:
    """The session's settings from raw `initializationOptions` (and what the client declared in
    `capabilities.experimental`); one ParamsError naming every bad field, those of the wrong
    type and those with a bad value alike."""
    approvals = client_declares(capabilities_experimental, "approvals")
    trust = client_declares(capabilities_experimental, "trust")

    def settings(options: wire.InitializationOptions) -> SessionSettings:
        return session_settings(
            client_options(options), env, client_approvals=approvals, client_trust_prompts=trust
        )

    try:
        options = parse_initialization_options(raw)
    except ParamsError as exc:
        # Check the values of the fields that did fit, so one answer names every bad field.
        partial, bad = structure_partial(raw, wire.InitializationOptions, where=WHERE)
        if partial is None:
            raise
        try:
            settings(partial)
        except ParamsError as more:
            raise ParamsError(exc.problems + without_problems_at(more.problems, bad)) from None
        raise
    return settings(options)


def client_declares(capabilities_experimental: Any, flag: str) -> bool:
    """Whether `capabilities.experimental.cleveragents.<flag>` (approvals, trust) is true."""
    if not isinstance(capabilities_experimental, dict):
        return False
    ours = capabilities_experimental.get("cleveragents")
    if not isinstance(ours, dict):
        return False
    try:
        capability = structure(ours, wire.ClientCapability, where="experimental.cleveragents")
    except ParamsError:
        # A newer client may declare more; only the flag we know matters here.
        return ours.get(flag) is True
    return getattr(capability, flag) is True


TOOLS_WHERE = "capabilities.experimental.cleveragents.tools"


def declared_client_tools(capabilities_experimental: Any, taken: list[str]) -> list[ClientTool]:
    """The tools the client declared it serves; ParamsError naming each bad one (its shape, or
    the core's checks: name, schema, a name the daemon's own tools (`taken`) have)."""
    if not isinstance(capabilities_experimental, dict):
        return []
    ours = capabilities_experimental.get("cleveragents")
    if not isinstance(ours, dict) or ours.get("tools") is None:
        return []
    declared = structure(ours["tools"], list[wire.ClientToolDeclaration], where=TOOLS_WHERE)
    tools = [
        ClientTool(
            name=tool.name,
            description=tool.description,
            input_schema=tool.input_schema,
            read_only=tool.read_only is True,
            timeout_s=(
                tool.timeout_seconds
                if tool.timeout_seconds is not None
                else DEFAULT_CLIENT_TOOL_TIMEOUT_S
            ),
        )
        for tool in declared
    ]
    problems = check_client_tools(tools, taken)
    if problems:
        raise ParamsError([f"capabilities.experimental.cleveragents.{p}" for p in problems])
    return tools
