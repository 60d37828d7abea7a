"""What the checkpoint store hands back and raises: checkpoints, what they left out, restores."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from ...tool.serialization import register_shape, to_data
from ..changes import ChangedFile

CheckpointKind = Literal["iteration", "end", "restore"]
SkipReason = Literal["too_large", "unreadable", "in_the_way", "heavy_folder", "over_bounds"]


class CheckpointError(Exception):
    """A checkpoint could not be taken, read or restored; the message says why."""


class CheckpointsUnavailable(CheckpointError):
    """Checkpoints cannot work on this machine (git is missing or broken)."""


class RestoreFailed(CheckpointError):
    """A restore stopped part way: `undo` holds the folder as it was before it began."""

    def __init__(self, message: str, undo: Checkpoint) -> None:
        super().__init__(message)
        self.undo = undo


@dataclass(frozen=True, slots=True)
class SkippedFile:
    """A file a snapshot or restore left alone, and why."""

    path: str
    size: int
    reason: SkipReason


@dataclass(frozen=True, slots=True)
class Coverage:
    """What a checkpoint holds beyond git's view of the folder.

    `extras` is a commit (the parent of the checkpoint's own commit) whose tree holds the
    ignored files kept within the bounds and the files the run's file tools changed
    (`pinned`, kept whatever the ignore rules say); its message holds the permission bits
    git does not keep and the empty folders. `ignored_held`: every ignored file outside the
    skipped heavy folders was kept, so a restore may delete ignored files the checkpoint
    does not hold (else it deletes none). Checkpoints taken before these existed have no
    `extras` and hold no ignored file.
    """

    extras: str | None = None
    ignored_held: bool = False
    pinned: tuple[str, ...] = ()

    def to_json(self) -> str:
        """The catalog's `coverage` column (`from_json` reads it back)."""
        return json.dumps(to_data(self), ensure_ascii=True)

    @staticmethod
    def from_json(text: str | None) -> Coverage:
        data = json.loads(text) if text else {}
        return Coverage(
            data.get("extras"), bool(data.get("ignored_held")), tuple(data.get("pinned", ()))
        )


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """One recorded state of a sandbox folder.

    `kind` is "iteration" (taken before `iteration` of `run_id` changed anything), "end"
    (the state a run left) or "restore" (the state just before a restore, so the restore can
    be undone; `restored_to` names the checkpoint restored and `run_id` the restore).
    """

    id: str
    run_id: str
    kind: CheckpointKind
    iteration: int | None
    sandbox_root: str
    commit: str
    tree: str
    created_at: float
    skipped: tuple[SkippedFile, ...] = ()
    restored_to: str | None = None
    warnings: tuple[str, ...] = ()
    coverage: Coverage = Coverage()
    # Files the snapshot holds (known when it was just taken; None when read back).
    files: int | None = field(default=None, compare=False)

    @property
    def note(self) -> str | None:
        """A sentence about what this checkpoint does not hold, or None if it holds all."""
        return skipped_note(self.skipped)


# A checkpoint as data: its coverage flattened to what a reader acts on (whether ignored files
# were held, the pinned files; not the extras commit, an internal of the store), the computed
# note, and not `files` (known only when just taken).
register_shape(
    Checkpoint,
    omit=("coverage", "files"),
    extra={
        "note": lambda checkpoint: checkpoint.note,
        "ignored_held": lambda checkpoint: checkpoint.coverage.ignored_held,
        "pinned": lambda checkpoint: checkpoint.coverage.pinned,
    },
)


@dataclass(frozen=True, slots=True)
class RestoreResult:
    """What a restore changed (or, with `dry_run`, would change).

    `undo` is the checkpoint of the folder as it was just before the restore (None for a dry
    run): restoring it undoes the restore. `kept` lists files the checkpoint holds that were
    not written because a file no checkpoint covers (ignored, too large) is in the way.
    """

    target: Checkpoint
    changed_files: list[ChangedFile]
    undo: Checkpoint | None
    kept: list[SkippedFile] = field(default_factory=list)
    dry_run: bool = False


@dataclass(frozen=True, slots=True)
class PruneResult:
    removed_checkpoints: int
    removed_repositories: int
    bytes_before: int
    bytes_after: int


@dataclass(frozen=True, slots=True)
class DiskUsage:
    """Bytes the checkpoint store takes: in all, and per sandbox folder."""

    total_bytes: int
    by_sandbox: dict[str, int]


def skipped_note(skipped: Sequence[SkippedFile]) -> str | None:
    if not skipped:
        return None
    large = [s for s in skipped if s.reason == "too_large"]
    unreadable = [s for s in skipped if s.reason == "unreadable"]
    heavy = [s for s in skipped if s.reason == "heavy_folder"]
    over = [s for s in skipped if s.reason == "over_bounds"]
    parts: list[str] = []
    if large:
        listed = ", ".join(f"{s.path} ({s.size / 1048576:.1f} MiB)" for s in large[:20])
        more = f" and {len(large) - 20} more" if len(large) > 20 else ""
        parts.append(f"{len(large)} file(s) too large to keep: {listed}{more}")
    if unreadable:
        parts.append(
            f"{len(unreadable)} unreadable file(s): " + ", ".join(s.path for s in unreadable)
        )
    if heavy:
        parts.append("ignored folder(s) never copied: " + ", ".join(s.path for s in heavy))
    for s in over:
        if s.path.endswith("/"):
            parts.append(f"the ignored folder {s.path} (too many files to go through)")
        else:
            parts.append(
                f"{s.path} ({s.size / 1048576:.1f} MiB) beyond the bounds on ignored files "
                "(the largest are left out first)"
            )
    return "not in this checkpoint (a restore leaves them as they are): " + "; ".join(parts)
