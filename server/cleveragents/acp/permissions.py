"""Approvals as `session/request_permission`: the options offered and what an answer means.

The options map one to one onto the runtime's decisions: `allow` (allow_once),
`allow_for_run` (allow_always: the session remembers it for its later prompts too) and
`deny` (reject_once). An answer we do not recognise is a denial. The `cancelled` outcome (the
client cancelled the prompt turn while asking) is the runtime's `cancel`: the run stops there,
asks nothing more, and records the call as cancelled, with or without a `session/cancel`.

Workspace trust (`service/trust.py`) asks the same way, about a call of its own (`trust_...`,
kind `execute`) that lists the programs the workspace's `.mcp.json` would start: `trust`
(allow_always) or `distrust` (reject_always); the answer is remembered either way.
"""

from __future__ import annotations

import logging

from acp.schema import (
    AllowedOutcome,
    ContentToolCallContent,
    FileEditToolCallContent,
    PermissionOption,
    RequestPermissionResponse,
    TerminalToolCallContent,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
)

from ..service.trust import TrustRequest
from ..tool.policy import ApprovalDecision, ApprovalRequest
from ..tool.registry import ToolSpec
from ..tool.serialization import to_data
from .updates import META_KEY, one_line, tool_kind, tool_locations, tool_title

log = logging.getLogger(__name__)

NOTE_TITLE_LIMIT = 120

DECISIONS: dict[str, ApprovalDecision] = {
    "allow": "allow",
    "allow_for_run": "allow_for_run",
    "deny": "deny",
}


def permission_options(tool_name: str, protected: bool = False) -> list[PermissionOption]:
    """A protected write (`ApprovalRequest.protected`) is allowed once at a time: no
    "always" is offered for it, and an earlier one does not answer it."""
    always = PermissionOption(
        option_id="allow_for_run",
        name=f"Always allow {tool_name} in this session",
        kind="allow_always",
    )
    return [
        PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
        *([] if protected else [always]),
        PermissionOption(option_id="deny", name="Reject", kind="reject_once"),
    ]


def permission_tool_call(
    request: ApprovalRequest, spec: ToolSpec | None, sandbox_root: str
) -> ToolCallUpdate:
    """The call the user is asked about, as the `tool_call` already sent describes it.

    A note (why it is asked beyond the profile's rule: an unconfined command, say) is shown
    in the title, shortened, and whole in the content.
    """
    title = tool_title(request.tool_name, request.inputs)
    content: list[ContentToolCallContent | FileEditToolCallContent | TerminalToolCallContent] | None
    content = None
    if request.note:
        title = one_line(f"{title} ⚠ {request.note}", NOTE_TITLE_LIMIT)
        content = [
            ContentToolCallContent(
                type="content", content=TextContentBlock(type="text", text=f"⚠ {request.note}")
            )
        ]
    return ToolCallUpdate(
        tool_call_id=request.call_id,
        title=title,
        kind=tool_kind(spec),
        status="pending",
        locations=tool_locations(request.inputs, sandbox_root),
        raw_input=request.inputs,
        content=content,
        field_meta={
            META_KEY: {
                "toolName": request.tool_name,
                "iteration": request.iteration,
                "mutating": request.mutating,
                "executesCode": request.executes_code,
                "automationProfile": request.automation_profile,
                "note": request.note,
                "protected": request.protected,
            }
        },
    )


def turn_cancelled(response: RequestPermissionResponse) -> bool:
    """The `cancelled` outcome: the client cancelled the prompt turn while it was asked."""
    return not isinstance(response.outcome, AllowedOutcome)


def decision_from(response: RequestPermissionResponse) -> ApprovalDecision:
    outcome = response.outcome
    if not isinstance(outcome, AllowedOutcome):
        return "cancel"
    decision = DECISIONS.get(outcome.option_id)
    if decision is None:
        log.warning("unknown permission option %r: denied", outcome.option_id)
        return "deny"
    return decision


# -- workspace trust ---------------------------------------------------------------------------

TRUST = "trust"
DISTRUST = "distrust"


def trust_call_id(request: TrustRequest) -> str:
    return f"trust_{request.config_hash[:16]}"


def trust_options() -> list[PermissionOption]:
    return [
        PermissionOption(
            option_id=TRUST, name="Trust this .mcp.json and start its servers", kind="allow_always"
        ),
        PermissionOption(option_id=DISTRUST, name="Do not start them", kind="reject_always"),
    ]


def _trust_text(request: TrustRequest) -> str:
    lines = [
        f"{request.config_path} would start these programs, with your permissions:",
        *(f"  {line}" for line in request.describe()),
        f"sha256 {request.config_hash}",
    ]
    return "\n".join(lines)


def _trust_input(request: TrustRequest) -> dict[str, object]:
    return {
        "sandboxRoot": request.sandbox_root,
        "configPath": request.config_path,
        "configHash": request.config_hash,
        "servers": to_data(request.servers),
    }


def trust_call(request: TrustRequest) -> ToolCallStart:
    """The question, shown as a pending call before the permission request."""
    return ToolCallStart(
        session_update="tool_call",
        tool_call_id=trust_call_id(request),
        title="Start the MCP servers of this workspace's .mcp.json?",
        kind="execute",
        status="pending",
        content=[
            ContentToolCallContent(
                type="content", content=TextContentBlock(type="text", text=_trust_text(request))
            )
        ],
        raw_input=_trust_input(request),
        field_meta={META_KEY: {"workspaceTrust": True}},
    )


def trust_tool_call(request: TrustRequest) -> ToolCallUpdate:
    """The call the permission request is about (as `trust_call` described it)."""
    return ToolCallUpdate(
        tool_call_id=trust_call_id(request),
        title="Start the MCP servers of this workspace's .mcp.json?",
        kind="execute",
        status="pending",
        raw_input=_trust_input(request),
        field_meta={META_KEY: {"workspaceTrust": True}},
    )


def trust_answered(request: TrustRequest, trusted: bool | None) -> ToolCallProgress:
    """How it ended: completed when trusted, failed otherwise."""
    text = (
        "Trusted: the servers start."
        if trusted
        else "Not trusted: the servers were not started; the run goes on without their tools."
    )
    return ToolCallProgress(
        session_update="tool_call_update",
        tool_call_id=trust_call_id(request),
        status="completed" if trusted else "failed",
        content=[
            ContentToolCallContent(type="content", content=TextContentBlock(type="text", text=text))
        ],
        field_meta={META_KEY: {"workspaceTrust": True, "trusted": bool(trusted)}},
    )


def trusted_from(response: RequestPermissionResponse) -> bool | None:
    """True or False as chosen; None for a cancelled request or an option we do not know."""
    outcome = response.outcome
    if not isinstance(outcome, AllowedOutcome):
        return None
    if outcome.option_id in (TRUST, DISTRUST):
        return outcome.option_id == TRUST
    log.warning("unknown workspace-trust option %r: not trusted", outcome.option_id)
    return None
