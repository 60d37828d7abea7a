"""ACP sessions kept in the run history: `session/list` pages them, `session/load` replays one.

A session is a conversation of the run history (`RunHistory.list_conversations`): a first run
and every run that continues it (`continuedFrom`, at any depth). The session's id is the id
of that first run. A session opened with `session/new` gets an id of its own, and its first
prompt's run takes that id as its run id; each later prompt's run continues the one before.
So the history holds ACP sessions without a table of their own, and a conversation begun in
the daemon or the CLI lists and loads like any other (its id is its first run's).

Loading continues the conversation's newest run (when runs branched, the newest branch) and
replays the whole chain down to it: per run, the prompt as a `user_message_chunk`, each model
response's text as an `agent_message_chunk` (the same `messageId` as when it streamed), and
each tool call as one `tool_call` carrying its final status (`completed` or `failed`), its
output and our `_meta`, and after each `update_plan` call the `plan` it set. A call whose
run ended before it did is replayed as `failed`.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import json
from collections.abc import Sequence

from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    ImageContentBlock,
    ListSessionsResponse,
    SessionInfo,
    TextContentBlock,
    ToolCallStart,
    UserMessageChunk,
)

from ..service.history import ConversationSummary, RunHistory, StoredRun
from ..tool.messages import AssistantMessage, ToolCallRequest
from ..tool.plan import plan_from_record
from ..tool.records import ToolCallRecord
from ..tool.registry import ToolRegistry
from .updates import (
    META_KEY,
    call_finished,
    plan_update,
    tool_kind,
    tool_locations,
    tool_title,
)

PAGE_SIZE = 50
TITLE_LIMIT = 80

ReplayedUpdate = UserMessageChunk | AgentMessageChunk | ToolCallStart | AgentPlanUpdate


class BadCursor(ValueError):
    """A `session/list` cursor this agent did not hand out."""


def session_page(
    history: RunHistory, sandbox_root: str | None, cursor: str | None
) -> ListSessionsResponse:
    """One page of sessions, latest activity first; `nextCursor` while more are left."""
    before = decode_cursor(cursor) if cursor is not None else None
    found = history.list_conversations(
        sandbox_root=sandbox_root, before=before, limit=PAGE_SIZE + 1
    )
    page = [c for c in found[:PAGE_SIZE] if c.sandbox_root is not None]
    more = len(found) > PAGE_SIZE
    return ListSessionsResponse(
        sessions=[session_info(c) for c in page],
        next_cursor=encode_cursor(found[PAGE_SIZE - 1].position) if more else None,
    )


def session_info(conversation: ConversationSummary) -> SessionInfo:
    assert conversation.sandbox_root is not None
    updated = datetime.datetime.fromtimestamp(conversation.updated_at, datetime.UTC)
    return SessionInfo(
        session_id=conversation.root_run_id,
        cwd=conversation.sandbox_root,
        title=_title(conversation.title),
        updated_at=updated.isoformat().replace("+00:00", "Z"),
        field_meta={
            META_KEY: {
                "runs": conversation.run_count,
                "latestRunId": conversation.latest_run_id,
                "latestStatus": conversation.latest_status,
            }
        },
    )


def _title(prompt: str) -> str:
    line = next((line.strip() for line in prompt.splitlines() if line.strip()), "")
    return line if len(line) <= TITLE_LIMIT else line[: TITLE_LIMIT - 1] + "…"


def encode_cursor(position: int) -> str:
    raw = json.dumps({"before": position}).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> int:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        value = json.loads(base64.urlsafe_b64decode(padded.encode()))
        before = value["before"]
    except (binascii.Error, ValueError, TypeError, KeyError, UnicodeError):
        raise BadCursor(f"cursor: {cursor!r} is not a cursor this agent gave") from None
    if not isinstance(before, int) or isinstance(before, bool):
        raise BadCursor(f"cursor: {cursor!r} is not a cursor this agent gave")
    return before


# -- replay ----------------------------------------------------------------------------------


def replay(
    runs: Sequence[StoredRun], registry: ToolRegistry, sandbox_root: str
) -> list[ReplayedUpdate]:
    """The `session/update`s that redraw these runs (oldest first), as the client saw them."""
    updates: list[ReplayedUpdate] = []
    for run in runs:
        updates.append(
            UserMessageChunk(
                session_update="user_message_chunk",
                content=TextContentBlock(type="text", text=run.prompt),
                message_id=f"{run.run_id}-prompt",
                field_meta={META_KEY: {"runId": run.run_id, "status": run.status}},
            )
        )
        updates.extend(
            UserMessageChunk(
                session_update="user_message_chunk",
                content=ImageContentBlock(
                    type="image", data=image.base64(), mime_type=image.media_type
                ),
                message_id=f"{run.run_id}-prompt",
            )
            for image in run.images
            if image.data is not None  # evicted from the image store: the text stands alone
        )
        records = {(r.iteration, r.call_id): r for r in run.records}
        responses = [m for m in run.messages if isinstance(m, AssistantMessage)]
        for iteration, response in enumerate(responses, start=1):
            if response.text:
                updates.append(
                    AgentMessageChunk(
                        session_update="agent_message_chunk",
                        content=TextContentBlock(type="text", text=response.text),
                        message_id=f"{run.run_id}-{iteration}",
                    )
                )
            for call in response.tool_calls:
                record = records.get((iteration, call.call_id))
                updates.append(_replayed_call(call, record, iteration, registry, sandbox_root))
                steps = plan_from_record(record) if record is not None else None
                if steps is not None:  # the plan as the client saw it after this call
                    updates.append(plan_update(steps, call.call_id))
    return updates


def _replayed_call(
    call: ToolCallRequest,
    record: ToolCallRecord | None,
    iteration: int,
    registry: ToolRegistry,
    sandbox_root: str,
) -> ToolCallStart:
    if record is None:  # the run ended (crashed, was interrupted) before this call did
        record = ToolCallRecord(
            tool_name=call.tool_name,
            inputs=call.arguments if isinstance(call.arguments, dict) else {"_raw": call.arguments},
            output={},
            duration_ms=0.0,
            success=False,
            error="the run ended before this call finished",
            iteration=iteration,
            call_id=call.call_id,
            error_kind="cancelled",
        )
    finished = call_finished(record)
    return ToolCallStart(
        session_update="tool_call",
        tool_call_id=call.call_id,
        title=tool_title(call.tool_name, call.arguments),
        kind=tool_kind(registry.get(call.tool_name)),
        status=finished.status,
        locations=tool_locations(call.arguments, sandbox_root),
        raw_input=call.arguments,
        raw_output=finished.raw_output,
        content=finished.content,
        field_meta=finished.field_meta,
    )
