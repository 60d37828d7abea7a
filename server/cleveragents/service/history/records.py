"""What the history hands back: runs, checkpoints, restores, conversations, batch tasks."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ...tool.images import ImageAttachment
from ...tool.messages import Message
from ...tool.records import ToolCallRecord, Usage
from ...tool.resources import Resource
from ..changes import ChangedFile
from ..run_status import RunKind, RunStatus

StoredCheckpointKind = Literal["iteration", "end", "restore"]


@dataclass(slots=True, frozen=True)
class RunSummary:
    """One row of the run list. Times are Unix epoch seconds."""

    run_id: str
    prompt: str
    status: RunStatus
    started_at: float
    finished_at: float | None
    iterations: int
    tool_call_count: int
    sandbox_root: str | None
    plan_id: str
    automation_profile: str
    continued_from: str | None
    # "restore" for a restore of a folder (see `record_restore`); it names what it restored.
    kind: RunKind
    restored_run_id: str | None
    restored_iteration: int | None
    # Tokens and estimated USD so far (None: the model's price is unknown, or an old run).
    usage: Usage
    cost_usd: float | None
    # The batch, task and configuration a `cleveragents batch` run belongs to (else None).
    batch: BatchLabel | None


@dataclass(slots=True, frozen=True)
class BatchLabel:
    """Which batch, task and configuration a run was started for."""

    batch_id: str
    task_id: str
    config: str


@dataclass(slots=True, frozen=True)
class BatchTaskRecord:
    """A batch task's last finished outcome: `outcome` is the batch's own JSON report row."""

    batch_id: str
    task_id: str
    config: str
    fingerprint: str
    run_id: str | None
    passed: bool
    outcome: dict[str, Any]
    finished_at: float


@dataclass(slots=True, frozen=True)
class IterationUsage:
    """One model call's tokens and estimated USD (None when the price is unknown)."""

    iteration: int
    usage: Usage
    cost_usd: float | None


@dataclass(slots=True, frozen=True)
class StoredCheckpoint:
    """A checkpoint a run took, as the history lists it (the snapshot is in the store).

    `kind`: "iteration" (the folder before `iteration` changed it), "end" (the state the run
    left) or "restore" (the folder just before a restore: restoring it undoes the restore).
    """

    checkpoint_id: str
    kind: StoredCheckpointKind
    iteration: int | None
    created_at: float
    note: str | None = None


@dataclass(slots=True, frozen=True)
class RestoreRecord:
    """A restore of a folder, stored as a history entry of kind "restore"."""

    restore_id: str
    sandbox_root: str
    description: str
    restored_run_id: str
    restored_iteration: int | None
    started_at: float
    finished_at: float
    status: RunStatus
    content: str
    changed_files: Sequence[ChangedFile]
    error: str | None
    # The folder as it was just before the restore (None when the restore wrote nothing).
    checkpoint: StoredCheckpoint | None


@dataclass(slots=True, frozen=True)
class StoredRun(RunSummary):
    """A whole stored run.

    `records` are in request order (as in `ToolCallRunResult.tool_call_history`), and
    `messages` is this run's own conversation: its prompt onwards, without the runs it
    continued (`RunHistory.conversation` has those too).
    """

    max_iterations: int
    content: str | None
    stop_reason: str | None
    error: str | None
    error_type: str | None
    records: list[ToolCallRecord] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    # Undo: the checkpoints, oldest first; the files it changed (None while unknown: the run
    # is going, or ended without its end checkpoint); why it cannot be wholly undone.
    checkpoints: list[StoredCheckpoint] = field(default_factory=list)
    changed_files: list[ChangedFile] | None = None
    checkpoint_warning: str | None = None
    resources: list[Resource] = field(default_factory=list)
    iteration_usage: list[IterationUsage] = field(default_factory=list)
    # The prompt's images, with their bytes while the image store has them.
    images: list[ImageAttachment] = field(default_factory=list)


@dataclass(slots=True, frozen=True)
class ConversationSummary:
    """One conversation: a first run (its root) and every run continuing it, at any depth.

    `latest_run_id` is the newest of them (by start): continuing the conversation continues
    that run. `title` is the root's prompt, cut to `TITLE_CHARS`; `updated_at` is when the
    latest run finished (or started, while it runs), Unix epoch seconds. `position` orders
    conversations by their latest activity (higher is newer) and pages through them.
    """

    root_run_id: str
    latest_run_id: str
    sandbox_root: str | None
    title: str
    run_count: int
    latest_status: RunStatus
    updated_at: float
    position: int


TITLE_CHARS = 200
