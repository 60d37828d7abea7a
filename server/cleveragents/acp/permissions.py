"""Approvals as `session/request_permission`: the options offered and what an answer means.

The options map one to one onto the runtime's decisions: `allow` (allow_once),
`allow_for_run` (allow_always: the session remembers it for its later prompts too) and
`deny` (reject_once). An answer we do not recognise, or a cancelled request, is a denial.
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
    ToolCallUpdate,
)

from ..tool.policy import ApprovalDecision, ApprovalRequest
from ..tool.registry import ToolSpec
from .updates import META_KEY, one_line, tool_kind, tool_locations, tool_title

log = logging.getLogger(__name__)

NOTE_TITLE_LIMIT = 120

DECISIONS: dict[str, ApprovalDecision] = {
    "allow": "allow",
    "allow_for_run": "allow_for_run",
    "deny": "deny",
}


def permission_options(tool_name: str) -> list[PermissionOption]:
    return [
        PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
        PermissionOption(
            option_id="allow_for_run",
            name=f"Always allow {tool_name} in this session",
            kind="allow_always",
        ),
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
            }
        },
    )


def turn_cancelled(response: RequestPermissionResponse) -> bool:
    """The `cancelled` outcome: the client cancelled the prompt turn while it was asked."""
    return not isinstance(response.outcome, AllowedOutcome)


def decision_from(response: RequestPermissionResponse) -> ApprovalDecision:
    outcome = response.outcome
    if not isinstance(outcome, AllowedOutcome):
        return "deny"
    decision = DECISIONS.get(outcome.option_id)
    if decision is None:
        log.warning("unknown permission option %r: denied", outcome.option_id)
        return "deny"
    return decision
