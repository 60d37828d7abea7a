"""The history's methods: `runs`, `getRun` and `restore`."""

from __future__ import annotations

from typing import Any, Literal

import attrs

from .common import RunKind, RunStatus, doc
from .shapes import (
    ChangedFile,
    Checkpoint,
    IterationUsage,
    PlanStep,
    RunResource,
    StoredImage,
    ToolCallRecord,
    Usage,
)


@attrs.frozen(kw_only=True)
class RunsParams:
    """List past and running runs from the history, newest first."""

    limit: int = attrs.field(default=50, metadata=doc("At most this many runs (1 to 1000)."))
    offset: int = attrs.field(default=0, metadata=doc("Skip this many of the newest runs."))
    batch_id: str | None = attrs.field(
        default=None,
        metadata=doc("Only the runs of this batch (`cleveragents batch`; the suite's name)."),
    )


@attrs.frozen(kw_only=True)
class RunBatch:
    """The batch task a run was started for (`cleveragents batch`)."""

    batch_id: str = attrs.field(metadata=doc("The batch: the suite's name."))
    task_id: str = attrs.field(metadata=doc("The task's id in the suite."))
    config: str = attrs.field(metadata=doc("The matrix configuration it ran under."))


@attrs.frozen(kw_only=True)
class RunSummary:
    """One run as the history lists it. Times are Unix epoch seconds."""

    run_id: str = attrs.field(metadata=doc("The run's id."))
    prompt: str = attrs.field(metadata=doc("Its prompt."))
    status: RunStatus = attrs.field(
        metadata=doc(
            "running, finished, cancelled, limit (maxIterations reached), failed, or "
            "interrupted (the daemon running it died)."
        )
    )
    started_at: float = attrs.field(metadata=doc("When it started (Unix epoch seconds)."))
    finished_at: float | None = attrs.field(metadata=doc("When it ended; null while running."))
    iterations: int = attrs.field(metadata=doc("LLM calls made (so far)."))
    tool_call_count: int = attrs.field(metadata=doc("Tool calls recorded (so far)."))
    sandbox_root: str | None = attrs.field(metadata=doc("Its sandbox root."))
    automation_profile: str = attrs.field(
        metadata=doc("Its automation profile (empty for a restore).")
    )
    continued_from: str | None = attrs.field(metadata=doc("The run it continued, if any."))
    usage: Usage = attrs.field(
        metadata=doc(
            "Tokens used (so far) and their cost; `costUsd` is null for an unknown price "
            "and for runs stored before costs were."
        )
    )
    kind: RunKind = attrs.field(
        metadata=doc(
            "`run`, or `restore`: a `cleveragents/restore` of a folder, whose `prompt` says "
            "what it restored; restoring it undoes it."
        )
    )
    restored_run_id: str | None = attrs.field(
        metadata=doc("For a restore: the run (or restore) it went back on.")
    )
    restored_iteration: int | None = attrs.field(
        metadata=doc("For a restore: the iteration it went back to before; null for a whole run.")
    )
    batch: RunBatch | None = attrs.field(
        metadata=doc("For a batch run: its batch, task and configuration; else null.")
    )


@attrs.frozen(kw_only=True)
class RunsResult:
    runs: list[RunSummary] = attrs.field(metadata=doc("Newest first."))


@attrs.frozen(kw_only=True)
class GetRunParams:
    run_id: str = attrs.field(metadata=doc("The run to read back."))


@attrs.frozen(kw_only=True)
class RequestedToolCall:
    """A tool call as the model asked for it, inside an assistant message."""

    call_id: str = attrs.field(metadata=doc("The call's id."))
    tool_name: str = attrs.field(metadata=doc("The tool asked for."))
    arguments: Any = attrs.field(metadata=doc("The arguments as sent (any JSON)."))
    parse_error: str | None = attrs.field(
        metadata=doc("Set when the model's argument text was not valid JSON.")
    )


@attrs.frozen(kw_only=True)
class ToolResultContent:
    """A tool's result as fed back to the model, inside a tool message."""

    call_id: str = attrs.field(metadata=doc("The call it answers."))
    tool_name: str = attrs.field(metadata=doc("The tool."))
    content: dict[str, Any] = attrs.field(metadata=doc("The output, or the error."))
    is_error: bool = attrs.field(metadata=doc("Whether the call failed."))


@attrs.frozen(kw_only=True)
class ConversationMessage:
    """One message of a run's conversation, provider-neutral."""

    role: Literal["user", "assistant", "tool"] = attrs.field(metadata=doc("Who speaks."))
    text: str | None = attrs.field(metadata=doc("user and assistant: the text; tool: null."))
    tool_calls: list[RequestedToolCall] | None = attrs.field(
        metadata=doc("assistant: the calls it asked for; otherwise null.")
    )
    results: list[ToolResultContent] | None = attrs.field(
        metadata=doc("tool: the results sent back; otherwise null.")
    )


@attrs.frozen(kw_only=True)
class RunDetail(RunSummary):
    """A run read back from the history: its summary fields plus answer, records, messages."""

    max_iterations: int = attrs.field(metadata=doc("Its LLM-call limit."))
    content: str | None = attrs.field(metadata=doc("Its final answer, once finished."))
    stop_reason: str | None = attrs.field(metadata=doc("As in `RunResult`, once finished."))
    error: str | None = attrs.field(metadata=doc("For a failed or interrupted run, why."))
    error_type: str | None = attrs.field(metadata=doc("For a failed run, the exception type."))
    iteration_usage: list[IterationUsage] = attrs.field(
        metadata=doc("Each model call's tokens and cost, in order.")
    )
    resources: list[RunResource] = attrs.field(
        metadata=doc("The files attached to its prompt, with the text the model was shown.")
    )
    images: list[StoredImage] = attrs.field(
        metadata=doc("The images attached to its prompt (1.3).")
    )
    tool_call_history: list[ToolCallRecord] = attrs.field(
        metadata=doc("Every record stored, in the order the model asked for them.")
    )
    messages: list[ConversationMessage] = attrs.field(
        metadata=doc("This run's own conversation, from its prompt on.")
    )
    checkpoints: list[Checkpoint] = attrs.field(
        metadata=doc(
            "Its checkpoints, oldest first: one per iteration that changed the folder (for a "
            "restore, the one that undoes it). Empty once pruned."
        )
    )
    changed_files: list[ChangedFile] = attrs.field(
        metadata=doc(
            "The files it changed; empty while it runs, when it changed nothing, or when it "
            "took no checkpoints."
        )
    )
    checkpoint_warning: str | None = attrs.field(
        metadata=doc("Why it cannot be wholly undone, if it cannot.")
    )
    plan: list[PlanStep] | None = attrs.field(
        metadata=doc(
            "The plan as its last `update_plan` call left it (the call's record holds it); "
            "null when it set none."
        )
    )


@attrs.frozen(kw_only=True)
class RestoreParams:
    """Put a run's folder back as it was before one of its iterations, or before the run.

    Refused (-32002) while any run is active in that folder (or a folder inside it or around
    it). The folder as it was is snapshotted first, so the restore is itself undoable.
    """

    run_id: str = attrs.field(
        metadata=doc("The run, or a restore (restoring a restore undoes it).")
    )
    iteration: int | None = attrs.field(
        default=None,
        metadata=doc(
            "Go back to the state before this iteration of the run (its later changes are "
            "undone, earlier ones kept). null: undo the whole run."
        ),
    )
    dry_run: bool = attrs.field(
        default=False,
        metadata=doc("Only report what would change; nothing is written or recorded."),
    )


@attrs.frozen(kw_only=True)
class RestoreResult:
    restore_id: str | None = attrs.field(
        metadata=doc(
            "The restore's entry in the history (`kind: restore`); pass it as `runId` to undo "
            "the restore. null for a dry run, or when nothing needed restoring."
        )
    )
    sandbox_root: str = attrs.field(metadata=doc("The folder restored."))
    changed_files: list[ChangedFile] = attrs.field(
        metadata=doc("The files the restore changed (or would change, with `dryRun`).")
    )
    kept: list[str] = attrs.field(
        metadata=doc(
            "Files the checkpoint holds that were left as they are, because an ignored or "
            "too-large file stands where they would go."
        )
    )
    dry_run: bool = attrs.field(metadata=doc("Whether this was a dry run."))
