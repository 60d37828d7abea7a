"""Workspace trust at the terminal: `cleveragents trust`, and asking before a workspace's
`.mcp.json` servers start."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING, Any

from ..settings_table import ENV_TRUST_WORKSPACE
from ..tool.serialization import to_data
from .common import EXIT_OK

if TYPE_CHECKING:
    from rich.console import Console

    from ..display import RunDisplay
    from ..mcp import McpToolset
    from ..service.trust import WorkspaceTrust
    from ..tool.registry import ToolRegistry


def workspace_trust_report(sandbox: str) -> dict[str, Any]:
    """Whether the sandbox's `.mcp.json` would start servers on the next run, and why."""
    from ..mcp import McpConfigError, read_mcp_config
    from ..service.settings import env_flag
    from ..service.trust import TrustStore, trust_request

    try:
        config = read_mcp_config(sandbox)
    except McpConfigError as exc:
        return {"config": None, "servers": [], "status": "error", "error": str(exc)}
    request = trust_request(sandbox, config)
    servers = request.describe()
    if not config.servers:
        status = "none"
    elif env_flag(os.environ, ENV_TRUST_WORKSPACE)[0]:
        status = "pre-trusted"
    else:
        decision = TrustStore().decision(sandbox, request.config_hash)
        status = {True: "trusted", False: "declined", None: "not asked yet"}[decision]
    return {
        "config": config.path,
        "sha256": request.config_hash,
        "servers": servers,
        "status": status,
    }


def render_workspace_trust(mcp: dict[str, Any]) -> str:
    status = mcp["status"]
    if status == "error":
        return f"\nWorkspace MCP servers: {mcp['error']}"
    if status == "none":
        return "\nWorkspace MCP servers: none (no .mcp.json servers here)"
    meaning = {
        "trusted": "trusted: they start with every run (cleveragents trust forget asks again)",
        "declined": "declined: runs go on without them (cleveragents trust forget asks again)",
        "not asked yet": "not trusted yet: the next run asks before starting them",
        "pre-trusted": f"pre-trusted by ${ENV_TRUST_WORKSPACE}: they start unasked",
    }[status]
    lines = [f"\nWorkspace MCP servers ({mcp['config']}, sha256 {mcp['sha256'][:12]}…): {meaning}"]
    lines.extend(f"  {line}" for line in mcp["servers"])
    return "\n".join(lines)


async def add_mcp_tools_once(
    registry: ToolRegistry, sandbox: str, trust: WorkspaceTrust, console: Console
) -> None:
    """Start the sandbox's MCP servers (once trusted) just long enough to list their tools."""
    from ..mcp import add_mcp_tools

    async with await sandbox_mcp(sandbox, trust) as toolset:
        add_mcp_tools(registry, toolset)
        say_not_started(console, toolset)


def mcp_trust(
    args: argparse.Namespace, console: Console, display: RunDisplay | None = None
) -> WorkspaceTrust:
    """The workspace-trust decision for this command: asked at the terminal (no terminal:
    not trusted), unless --trust-workspace or the trust-workspace variable pre-trusts.
    ValueError for a malformed one."""
    from ..display import RunDisplay, TerminalTrustAsker
    from ..service.settings import DEFAULT_APPROVAL_TIMEOUT_S, env_flag
    from ..service.trust import TrustStore, WorkspaceTrust

    from_env, problem = env_flag(os.environ, ENV_TRUST_WORKSPACE)
    if problem:
        raise ValueError(problem)
    interactive = sys.stdin.isatty() and console.is_terminal
    return WorkspaceTrust(
        TrustStore(),
        pre_trusted=args.trust_workspace or from_env,
        timeout_s=DEFAULT_APPROVAL_TIMEOUT_S,
        ask=TerminalTrustAsker(display or RunDisplay(console)) if interactive else None,
        cannot_ask=(
            "no terminal to ask at; run it at a terminal, or pass --trust-workspace "
            f"(or set {ENV_TRUST_WORKSPACE}=1) to trust it"
        ),
    )


async def sandbox_mcp(sandbox: str, trust: WorkspaceTrust) -> McpToolset:
    """The sandbox's MCP toolset, with only what `trust` admits (open it with `async with`)."""
    from ..mcp import McpToolset, read_mcp_config

    config = await trust.admit(sandbox, read_mcp_config(sandbox))
    return McpToolset(sandbox, config=config)


def say_not_started(console: Console, toolset: McpToolset) -> None:
    from rich.markup import escape

    for name, reason in toolset.skipped.items():
        console.print(f"[yellow]MCP server {escape(repr(name))} not started: {escape(reason)}[/]")


def trust_command(args: argparse.Namespace) -> int:
    from datetime import datetime

    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from ..service.trust import TrustStore

    store = TrustStore()
    if args.action == "forget":
        folder = os.path.realpath(args.folder or os.getcwd())
        removed = store.forget(folder)
        print(f"forgot {removed} answer(s) about {folder}; its next run asks again")
        return EXIT_OK
    decisions = store.decisions()
    if args.json:
        print(json.dumps(to_data(decisions), indent=2))
        return EXIT_OK
    table = Table("folder", "answer", "when", "servers", "sha256")
    for decision in decisions:
        when = datetime.fromtimestamp(decision.decided_at).strftime("%Y-%m-%d %H:%M")
        answer = "trusted" if decision.trusted else "declined"
        # Text, not markup: a folder or server name such as `[/]` is shown as written.
        table.add_row(
            Text(decision.sandbox_root),
            answer,
            when,
            Text(", ".join(decision.servers)),
            decision.config_hash[:16],
        )
    Console().print(table)
    print(f"answers are kept in {store.path}")
    return EXIT_OK
