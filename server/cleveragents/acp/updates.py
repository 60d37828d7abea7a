"""Run events as ACP `session/update` payloads: tool calls, their outcomes, assistant text.

A call the model asks for becomes a `tool_call` (status `in_progress` when it runs without
asking, else `pending`); its record becomes a `tool_call_update` (`completed` or `failed`)
with the raw output, a readable text content and, under `_meta.cleveragents`, what ACP has no
field for: `durationMs`, `iteration`, `errorKind` and the `toolName`. A workspace checkpoint
is a step of its own: a `tool_call` of kind `other` titled "Snapshot: F files, T ms" (shown
`in_progress` from its first second while it is still being saved).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from typing import Any

from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    ContentToolCallContent,
    FileEditToolCallContent,
    PlanEntry,
    PlanEntryStatus,
    StopReason,
    TerminalToolCallContent,
    TextContentBlock,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    ToolCallStatus,
    ToolKind,
)

from ..tool.events import SnapshotProgress, SnapshotTaken, TextDelta, ToolCallStarted
from ..tool.instructions import InstructionFile, describe_files
from ..tool.plan import PLAN_TOOL, PlanStep
from ..tool.records import ToolCallRecord, ToolCallRunResult, Usage
from ..tool.registry import ToolSpec
from ..tool.router import result_from_record

META_KEY = "cleveragents"
# The text shown in the editor; the whole output stays in `rawOutput`.
CONTENT_TEXT_LIMIT = 8000
TITLE_ARGUMENT_LIMIT = 80
# The argument that best says what a call works on, in order of preference.
_TITLE_ARGUMENTS = ("path", "pattern", "command", "query", "url", "name")

# Words in a tool's name that say more than its mutating / executes_code flags do.
_KIND_WORDS: tuple[tuple[ToolKind, frozenset[str]], ...] = (
    ("delete", frozenset({"delete", "remove", "rm", "unlink", "del"})),
    ("move", frozenset({"move", "rename", "mv"})),
    ("fetch", frozenset({"fetch", "http", "url", "download", "web", "browse", "curl"})),
    ("search", frozenset({"search", "grep", "glob", "find", "query"})),
)
_WORD_BREAK = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])")


def tool_kind(spec: ToolSpec | None) -> ToolKind:
    """The ACP kind of a tool, for the editor's icon: from its name, else from its flags."""
    if spec is None:
        return "other"
    if spec.name == PLAN_TOOL and spec.source == "builtin":
        return "think"  # planning: no file read or changed
    words = {word.lower() for word in _WORD_BREAK.split(spec.name) if word}
    for kind, names in _KIND_WORDS:
        if words & names:
            return kind
    if spec.executes_code:
        # An MCP tool that did not declare itself read-only is flagged as running code,
        # but nothing says it does: "other" is the honest kind.
        return "other" if spec.source.startswith("mcp:") else "execute"
    return "edit" if spec.mutating else "read"


def tool_title(tool_name: str, inputs: Any) -> str:
    """`read_file: src/app.py`: the tool and what it works on."""
    if isinstance(inputs, dict):
        for key in _TITLE_ARGUMENTS:
            value = inputs.get(key)
            if isinstance(value, str) and value.strip():
                return f"{tool_name}: {one_line(value, TITLE_ARGUMENT_LIMIT)}"
    return tool_name


def one_line(text: str, limit: int) -> str:
    """`text` on one line, cut to `limit` characters with an ellipsis."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def tool_locations(inputs: Any, sandbox_root: str) -> list[ToolCallLocation] | None:
    """The file a call touches, as an absolute path, so editors can follow along."""
    if not isinstance(inputs, dict):
        return None
    path = inputs.get("path")
    if not isinstance(path, str) or not path:
        return None
    return [ToolCallLocation(path=os.path.normpath(os.path.join(sandbox_root, path)))]


def call_started(
    event: ToolCallStarted, spec: ToolSpec | None, sandbox_root: str, status: ToolCallStatus
) -> ToolCallStart:
    return ToolCallStart(
        session_update="tool_call",
        tool_call_id=event.call_id,
        title=tool_title(event.tool_name, event.inputs),
        kind=tool_kind(spec),
        status=status,
        locations=tool_locations(event.inputs, sandbox_root),
        raw_input=event.inputs,
        field_meta={META_KEY: {"toolName": event.tool_name, "iteration": event.iteration}},
    )


def call_running(call_id: str) -> ToolCallProgress:
    """An approved call has started to run."""
    return ToolCallProgress(
        session_update="tool_call_update", tool_call_id=call_id, status="in_progress"
    )


def call_terminal(call_id: str, terminal_id: str) -> ToolCallProgress:
    """A running call's content becomes the terminal that shows its output live."""
    return ToolCallProgress(
        session_update="tool_call_update",
        tool_call_id=call_id,
        content=[TerminalToolCallContent(type="terminal", terminal_id=terminal_id)],
    )


def call_finished(record: ToolCallRecord, *, in_terminal: bool = False) -> ToolCallProgress:
    """A call's record: its status, what the model was told, and our timing and error kind.

    A call shown `in_terminal` keeps the terminal as its content (an update without `content`
    leaves it as it was); its output is in the terminal and in `rawOutput`.
    """
    told = result_from_record(record).content
    if record.success:
        text = json.dumps(record.output, ensure_ascii=False, indent=2, default=str)
    else:
        text = f"{record.error_kind or 'error'}: {record.error or 'the call failed'}"
    if len(text) > CONTENT_TEXT_LIMIT:
        more = len(text) - CONTENT_TEXT_LIMIT
        text = f"{text[:CONTENT_TEXT_LIMIT]}\n… ({more} more characters in rawOutput)"
    return ToolCallProgress(
        session_update="tool_call_update",
        tool_call_id=record.call_id,
        status="completed" if record.success else "failed",
        content=None
        if in_terminal
        else [
            ContentToolCallContent(type="content", content=TextContentBlock(type="text", text=text))
        ],
        raw_output=told,
        field_meta={
            META_KEY: {
                "toolName": record.tool_name,
                "durationMs": record.duration_ms,
                "iteration": record.iteration,
                "errorKind": record.error_kind,
            }
        },
    )


def snapshot_call_id(run_id: str, iteration: int) -> str:
    return f"snapshot-{run_id}-{iteration}"


def _snapshot_meta(run_id: str, iteration: int, **more: Any) -> dict[str, Any]:
    return {META_KEY: {"snapshot": True, "runId": run_id, "iteration": iteration, **more}}


def snapshot_saving(event: SnapshotProgress, *, first: bool) -> ToolCallStart | ToolCallProgress:
    """A checkpoint still being saved after a second or more: its step, in progress."""
    title = f"Snapshot: saving… {event.elapsed_ms / 1000:.0f} s"
    call_id = snapshot_call_id(event.run_id, event.iteration)
    meta = _snapshot_meta(event.run_id, event.iteration, elapsedMs=event.elapsed_ms)
    if first:
        return ToolCallStart(
            session_update="tool_call",
            tool_call_id=call_id,
            title=title,
            kind="other",
            status="in_progress",
            field_meta=meta,
        )
    return ToolCallProgress(
        session_update="tool_call_update", tool_call_id=call_id, title=title, field_meta=meta
    )


def snapshot_taken(event: SnapshotTaken, *, shown: bool) -> ToolCallStart | ToolCallProgress:
    """The checkpoint is saved (or failed): its own step with its file count and time, as a
    new `tool_call`, or as the update of the one `snapshot_saving` already `shown`."""
    files = "" if event.files is None else f"{event.files:,} files, "
    title = f"Snapshot: {files}{event.duration_ms:.0f} ms"
    status: ToolCallStatus = "completed" if event.error is None else "failed"
    content: (
        list[ContentToolCallContent | FileEditToolCallContent | TerminalToolCallContent] | None
    ) = (
        None
        if event.error is None
        else [
            ContentToolCallContent(
                type="content",
                content=TextContentBlock(
                    type="text",
                    text=f"no checkpoint before iteration {event.iteration}: {event.error}",
                ),
            )
        ]
    )
    call_id = snapshot_call_id(event.run_id, event.iteration)
    meta = _snapshot_meta(
        event.run_id,
        event.iteration,
        durationMs=event.duration_ms,
        files=event.files,
        error=event.error,
    )
    if shown:
        return ToolCallProgress(
            session_update="tool_call_update",
            tool_call_id=call_id,
            title=title,
            status=status,
            content=content,
            field_meta=meta,
        )
    return ToolCallStart(
        session_update="tool_call",
        tool_call_id=call_id,
        title=title,
        kind="other",
        status=status,
        content=content,
        field_meta=meta,
    )


# Our plan statuses as ACP's (ACP says `completed` where the model says `done`).
_PLAN_STATUS: dict[str, PlanEntryStatus] = {
    "pending": "pending",
    "in_progress": "in_progress",
    "done": "completed",
}


def plan_update(steps: Sequence[PlanStep], call_id: str | None = None) -> AgentPlanUpdate:
    """The model's whole plan as an ACP `plan` update (the client replaces the one before).

    Steps have no priority of their own: every entry is `medium`.
    """
    return AgentPlanUpdate(
        session_update="plan",
        entries=[
            PlanEntry(content=step.text, priority="medium", status=_PLAN_STATUS[step.status])
            for step in steps
        ],
        field_meta={META_KEY: {"callId": call_id}} if call_id is not None else None,
    )


def instructions_note(run_id: str, files: Sequence[InstructionFile]) -> AgentThoughtChunk:
    """`using AGENTS.md, 2 files: ...` as a thought at the top of the turn, the files under
    `_meta.cleveragents.instructions` (the daemon's `InstructionFile`, camelCase)."""
    return AgentThoughtChunk(
        session_update="agent_thought_chunk",
        content=TextContentBlock(type="text", text=describe_files(files) + "\n"),
        message_id=f"{run_id}-instructions",
        field_meta={
            META_KEY: {
                "instructions": [
                    {
                        "path": file.path,
                        "scope": file.scope,
                        "folder": file.folder,
                        "chars": file.chars,
                        "totalChars": file.total_chars,
                        "truncated": file.truncated,
                    }
                    for file in files
                ]
            }
        },
    )


def message_chunk(event: TextDelta) -> AgentMessageChunk:
    """Streamed assistant text; each model response is one message (`messageId`)."""
    return AgentMessageChunk(
        session_update="agent_message_chunk",
        content=TextContentBlock(type="text", text=event.text),
        message_id=f"{event.run_id}-{event.iteration}",
    )


def usage_meta(usage: Usage, cost_usd: float | None) -> dict[str, Any]:
    """A run's tokens and estimated cost as `_meta.cleveragents.usage` shows them (the
    daemon's `Usage`: `costUsd` null when the model's price is unknown)."""
    return {
        "inputTokens": usage.input_tokens,
        "outputTokens": usage.output_tokens,
        "cacheReadTokens": usage.cache_read_tokens,
        "cacheWriteTokens": usage.cache_write_tokens,
        "costUsd": None if cost_usd is None else round(cost_usd, 10),  # no float noise
    }


def stop_reason(result: ToolCallRunResult) -> StopReason:
    if result.stop_reason == "cancelled":
        return "cancelled"
    if result.stop_reason == "context_exhausted":
        # The conversation no longer fits the model's window: ACP's "ran out of tokens".
        return "max_tokens"
    if result.terminated_by_limit or result.stop_reason == "max_iterations":
        return "max_turn_requests"
    return "end_turn"
