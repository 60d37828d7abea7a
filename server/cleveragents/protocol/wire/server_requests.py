"""The daemon's own requests to the client: approvals, workspace trust, client tools."""

from __future__ import annotations

from typing import Any, Literal

import attrs

from .common import ApprovalDecision, AutomationProfile, doc


@attrs.frozen(kw_only=True)
class ApproveToolCallParams:
    """Sent by the daemon when the profile needs a human to approve a call."""

    run_id: str = attrs.field(metadata=doc("The run asking."))
    call_id: str = attrs.field(metadata=doc("The call waiting (see `toolCallStarted`)."))
    tool_name: str = attrs.field(metadata=doc("The tool."))
    inputs: dict[str, Any] = attrs.field(metadata=doc("The arguments it would run with."))
    mutating: bool = attrs.field(metadata=doc("It changes the workspace."))
    executes_code: bool = attrs.field(metadata=doc("It runs programs."))
    automation_profile: AutomationProfile = attrs.field(metadata=doc("The run's profile."))
    iteration: int = attrs.field(metadata=doc("The iteration asking."))
    note: str | None = attrs.field(
        default=None,
        metadata=doc(
            "Why this call is asked about beyond the profile's rule, to show the user: e.g. "
            "the command would run unconfined (no bubblewrap here), and how to change that."
        ),
    )
    protected: bool = attrs.field(
        default=False,
        metadata=doc(
            "About a protected write (code that could run later, outside the sandbox: a git "
            "hook, `core.fsmonitor`, editor tasks), before a file tool writes it or after a "
            "command wrote it (`note` says what; a no undoes it). Asked every time under every "
            "profile: `allow_for_run` allows it this once only, so offer allow and deny."
        ),
    )


@attrs.frozen(kw_only=True)
class ApproveToolCallResult:
    decision: ApprovalDecision = attrs.field(
        metadata=doc(
            "`allow_for_run`: allow this tool without asking again in this run. `cancel`: stop "
            "the whole run (as `cleveragents/cancel` does); the call is recorded as cancelled."
        )
    )


@attrs.frozen(kw_only=True)
class TrustedVariable:
    """A variable a server would be started with, as the question shows it."""

    name: str = attrs.field(metadata=doc("Its name."))
    value: str | None = attrs.field(
        metadata=doc("Its value as written (`${VAR}` references unexpanded); null when `masked`.")
    )
    length: int = attrs.field(metadata=doc("The length of the value as written."))
    masked: bool = attrs.field(
        metadata=doc(
            "The value looks like a secret and is not sent: show that the variable is set, "
            "and its length."
        )
    )
    changes_what_runs: bool = attrs.field(
        metadata=doc(
            "It changes which program runs or what it loads (`PATH`, `LD_*`, `DYLD_*`, "
            "`NODE_OPTIONS`, `PYTHON*`, `BASH_ENV`, `GIT_*`, ...): never masked; flag it."
        )
    )
    expanded: str | None = attrs.field(
        metadata=doc(
            "For a variable that `changesWhatRuns`, its value after `${VAR}` expansion when "
            "that differs from `value`; else null."
        )
    )


@attrs.frozen(kw_only=True)
class TrustedServer:
    """A program the workspace's `.mcp.json` would start: as written in the file, and what will
    actually run. Show `program` (flagged when `programInWorkspace`) and every `env` entry."""

    name: str = attrs.field(metadata=doc("The server's name in `mcpServers`."))
    command: str = attrs.field(
        metadata=doc("The command as written (`${VAR}` references unexpanded).")
    )
    args: list[str] = attrs.field(metadata=doc("Its arguments as written."))
    env_names: list[str] = attrs.field(metadata=doc("Names of the variables it sets."))
    program: str | None = attrs.field(
        metadata=doc(
            "The absolute path that will be started: `command` resolved with the server's own "
            "`PATH` (else the daemon's) and working folder (the sandbox root), exactly as the "
            "start does (the start runs this path). Null when nothing was found (the start "
            "fails)."
        )
    )
    program_in_workspace: bool = attrs.field(
        metadata=doc(
            "`program` (or the file its links lead to) lies inside the workspace: the "
            "workspace chose the program itself. Flag it."
        )
    )
    env: list[TrustedVariable] = attrs.field(
        metadata=doc("Every variable it sets, in the file's order, with its value.")
    )


@attrs.frozen(kw_only=True)
class TrustWorkspaceParams:
    """Sent before a workspace's `.mcp.json` would start its servers for the first time, and
    whenever the file changes. Only to clients that declared
    `capabilities.experimental.cleveragents.trust`. The answer is remembered for this folder
    and this file's `configHash`."""

    sandbox_root: str = attrs.field(metadata=doc("The folder (resolved)."))
    config_path: str = attrs.field(metadata=doc("The `.mcp.json` file."))
    config_hash: str = attrs.field(
        metadata=doc(
            "SHA-256 (hex) over the file's exact bytes and what this question shows beyond "
            "them (each resolved `program`, the content of one inside the workspace, the "
            "expanded values of variables that change what runs): the answer is kept under it."
        )
    )
    servers: list[TrustedServer] = attrs.field(metadata=doc("Every server it would start."))


@attrs.frozen(kw_only=True)
class TrustWorkspaceResult:
    trusted: bool = attrs.field(
        metadata=doc("Start the servers; false: the run goes on without their tools.")
    )


@attrs.frozen(kw_only=True)
class CallClientToolParams:
    """Sent when the model calls one of the client's tools, after any approval. Withdrawn with
    `$/cancelRequest` when the run is stopped or the tool's timeout passes."""

    run_id: str = attrs.field(metadata=doc("The run calling."))
    call_id: str = attrs.field(metadata=doc("The call (see `toolCallStarted`)."))
    name: str = attrs.field(metadata=doc("The tool, as the client declared it."))
    arguments: dict[str, Any] = attrs.field(
        metadata=doc("The model's arguments, checked against the declared `inputSchema`.")
    )
    iteration: int = attrs.field(metadata=doc("The iteration calling."))


@attrs.frozen(kw_only=True)
class ClientToolContent:
    """A piece of the answer: text, which the model reads."""

    type: Literal["text"] = attrs.field(metadata=doc("Only `text`."))
    text: str = attrs.field(metadata=doc("The text."))


@attrs.frozen(kw_only=True)
class CallClientToolResult:
    """The tool's result (the shape of an MCP tool result's text content). A JSON-RPC error
    answer, or a result of another shape, fails the call with the error in its record."""

    content: list[ClientToolContent] = attrs.field(
        metadata=doc("Its text, in pieces joined with newlines.")
    )
    is_error: bool | None = attrs.field(
        default=None,
        metadata=doc("The tool failed; `content` says why (the record's error)."),
    )
