"""Undo for every front: checkpoints around each run, what it changed, and restores.

A front runs the tool loop with one `RunCheckpoints` per run:

    checkpoints = undo.track(run_id, sandbox_root)
    try:
        result = await runtime.arun_tool_loop(..., before_mutation=checkpoints.before_mutation)
    finally:
        await checkpoints.finish()          # the state the run left, and what it changed
    checkpoints.changed_files, checkpoints.warning

Snapshots are taken on worker threads, never on the event loop, and a run never fails for
want of one: when git is missing, the history is unavailable or a snapshot fails, the run goes
on and `warning` says what cannot be undone (logged once per `Undo` when undo is off).
Checkpoint ids and iterations go to the run history with the run, and so do the files it
changed; `restore` puts a folder back as it was before any iteration of a run (or before the
whole run) and records itself in the history as an entry of kind "restore", which can in turn
be undone. The snapshots themselves are kept by `CheckpointStore` (checkpoints.py), next to
the history file.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from ..tool.checkpoint import SnapshotReport
from .changes import ChangedFile
from .checkpoints import (
    Checkpoint,
    CheckpointError,
    CheckpointStore,
    DiskUsage,
    PruneResult,
    RestoreFailed,
    SkippedFile,
)
from .errors import (
    CHECKPOINTS_UNAVAILABLE,
    NO_CHECKPOINT,
    RESTORE_FAILED,
    RUN_ACTIVE,
    RUN_NOT_FOUND,
    ServiceError,
    invalid_params,
)
from .history import RestoreRecord, RunHistory, StoredCheckpoint, StoredRun
from .history_queue import QueuedHistory
from .threads import DaemonThreadPool

log = logging.getLogger(__name__)

T = TypeVar("T")

# Housekeeping (checkpoints of runs the history no longer has, then `git gc`) runs at most
# this often, when a daemon starts or a CLI run ends.
HOUSEKEEPING_INTERVAL_S = 24 * 3600.0
_HOUSEKEEPING_STAMP = "last-housekeeping"
# Said after "this run cannot be undone: " or "nothing can be restored: ", so it does not
# repeat either.
_NO_HISTORY = "the run history is unavailable, so checkpoints cannot be kept"


@dataclass(frozen=True, slots=True)
class RestoreOutcome:
    """What a restore changed (with `dry_run`, would change).

    `restore_id` names the history entry of the restore (None for a dry run, or when there
    was nothing to restore); restoring it undoes the restore. `kept` lists files the
    checkpoint holds that were not written because a file no checkpoint covers (ignored, too
    large) stands in the way.
    """

    restore_id: str | None
    run_id: str
    iteration: int | None
    sandbox_root: str
    changed_files: list[ChangedFile]
    kept: list[SkippedFile] = field(default_factory=list)
    dry_run: bool = False


class Undo:
    """The checkpoints of one process's runs, kept next to its run history."""

    def __init__(
        self,
        history: RunHistory | None,
        data_dir: str | os.PathLike[str] | None = None,
        *,
        queue: QueuedHistory | None = None,
    ):
        self.history = history
        # The history's write queue, when the runs' events go through one: a run's
        # checkpoints are recorded behind its own events, never waiting for the lock.
        self.queue = queue
        self.data_dir = (
            Path(data_dir).resolve()
            if data_dir is not None
            else history.path.resolve().parent
            if history
            else None
        )
        # Snapshots wait for git; daemon threads, so a stuck one never holds the process open.
        self.executor = DaemonThreadPool(4, "cleveragents-checkpoint")
        self._lock = threading.Lock()
        self._store: CheckpointStore | None = None
        self._unavailable: str | None = None if history is not None else _NO_HISTORY
        self._warned = False

    # -- the store ---------------------------------------------------------------------------
    def store(self) -> CheckpointStore | None:
        """The checkpoint store, opened on first use (on a worker thread); None when off."""
        with self._lock:
            if self._store is None and self._unavailable is None and self.data_dir is not None:
                try:
                    self._store = CheckpointStore(self.data_dir)
                except (CheckpointError, OSError, sqlite3.Error) as exc:
                    self._unavailable = str(exc)
            if self._store is None and not self._warned:
                self._warned = True
                log.warning("checkpoints are off: %s", self._unavailable)
            return self._store

    @property
    def unavailable(self) -> str | None:
        """Why there are no checkpoints (once `store()` found out), else None."""
        return self._unavailable

    def _require(self) -> tuple[RunHistory, CheckpointStore]:
        store = self.store()
        if self.history is None or store is None:
            raise ServiceError(
                CHECKPOINTS_UNAVAILABLE,
                f"nothing can be restored: {self._unavailable}",
                {"reason": self._unavailable},
            )
        return self.history, store

    async def in_thread(self, work: Callable[..., T], *args: object) -> T:
        """Run `work(*args)` on a checkpoint thread, off the event loop."""
        return await asyncio.wrap_future(self.executor.submit(work, *args))

    def record(self, write: Callable[[RunHistory], object]) -> None:
        """A write about a run: queued behind the run's own events (see `queue`), else now."""
        if self.queue is not None:
            self.queue.submit(write)
        elif self.history is not None:
            write(self.history)

    def track(self, run_id: str, sandbox_root: str) -> RunCheckpoints:
        return RunCheckpoints(self, run_id, sandbox_root)

    def close(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)

    # -- restore -----------------------------------------------------------------------------
    def restore(
        self,
        run_id: str,
        iteration: int | None = None,
        *,
        dry_run: bool = False,
        active: Mapping[str, str] | None = None,
    ) -> RestoreOutcome:
        """Put the run's folder back as it was before `iteration` (None: before the run).

        For an entry of kind "restore", put the folder back as it was before that restore.
        `active` maps this process's live runs to their folders; runs of other processes are
        found in the history. Blocking (git): call it off the event loop. ServiceError: no
        such run (RUN_NOT_FOUND), a bad iteration (INVALID_PARAMS), a run active in the folder
        (RUN_ACTIVE), checkpoints off (CHECKPOINTS_UNAVAILABLE), no checkpoint to restore
        (NO_CHECKPOINT), git failed (RESTORE_FAILED).
        """
        history, store = self._require()
        stored = history.get_run(run_id)
        if stored is None:
            raise ServiceError(
                RUN_NOT_FOUND, f"no run {run_id!r} in the history", {"run_id": run_id}
            )
        _check_iteration(stored, iteration)
        sandbox_root = stored.sandbox_root
        if sandbox_root is None:
            raise ServiceError(
                NO_CHECKPOINT, f"run {run_id!r} had no folder to restore", {"run_id": run_id}
            )
        busy = _active_in(sandbox_root, {**history.running_runs(), **(active or {})})
        if busy:
            raise ServiceError(
                RUN_ACTIVE,
                f"a run is active in {sandbox_root} ({', '.join(busy)}): restore once it has "
                "finished, or cancel it first",
                {"sandbox_root": sandbox_root, "active_run_ids": busy},
            )
        target = _target(store, stored, iteration)
        if target is None:
            return RestoreOutcome(None, run_id, iteration, sandbox_root, [], dry_run=dry_run)
        restore_id = None if dry_run else f"restore_{os.urandom(8).hex()}"
        started = time.time()
        try:
            result = store.restore(
                target.sandbox_root, target, restore_id=restore_id, dry_run=dry_run
            )
        except RestoreFailed as exc:
            assert restore_id is not None  # a dry run writes nothing, so cannot fail part way
            self._record(stored, iteration, restore_id, started, [], exc.undo, error=str(exc))
            raise ServiceError(
                RESTORE_FAILED,
                f"the restore failed: {exc}",
                {"restore_id": restore_id, "sandbox_root": sandbox_root},
            ) from exc
        except CheckpointError as exc:
            raise ServiceError(
                RESTORE_FAILED,
                f"nothing was restored: {exc}",
                {"run_id": run_id, "sandbox_root": sandbox_root},
            ) from exc
        if not result.changed_files:
            # Nothing changed: no restore to record, and none to undo (README: null).
            restore_id = None
        if restore_id is not None and result.undo is not None:
            self._record(
                stored,
                iteration,
                restore_id,
                started,
                result.changed_files,
                result.undo,
                kept=result.kept,
            )
        return RestoreOutcome(
            restore_id,
            run_id,
            iteration,
            target.sandbox_root,
            result.changed_files,
            result.kept,
            dry_run,
        )

    def _record(
        self,
        restored: StoredRun,
        iteration: int | None,
        restore_id: str,
        started: float,
        changed: list[ChangedFile],
        undo: Checkpoint,
        *,
        kept: list[SkippedFile] | None = None,
        error: str | None = None,
    ) -> None:
        assert self.history is not None
        self.history.record_restore(
            RestoreRecord(
                restore_id=restore_id,
                sandbox_root=undo.sandbox_root,
                description=describe_restore(restored, iteration),
                restored_run_id=restored.run_id,
                restored_iteration=iteration,
                started_at=started,
                finished_at=time.time(),
                status="failed" if error else "finished",
                content=error or summarize_changes(changed, kept or []),
                changed_files=changed,
                error=error,
                checkpoint=stored_checkpoint(undo),
            )
        )

    # -- housekeeping ------------------------------------------------------------------------
    def prune(self, older_than: float | None = None) -> PruneResult:
        """Drop the checkpoints of runs the history no longer holds, and (with `older_than`,
        a Unix time) of runs whose newest checkpoint is older; then `git gc` what is left.
        Blocking: call it off the event loop."""
        history, store = self._require()
        doomed = history.runs_with_checkpoints_before(older_than) if older_than else []
        keep = history.run_ids() - set(doomed)
        result = store.prune(keep_run_ids=keep)
        when = time.strftime("%Y-%m-%d", time.localtime())
        history.forget_checkpoints(doomed, f"its checkpoints were pruned on {when}")
        self._stamp_housekeeping()
        return result

    def disk_usage(self) -> DiskUsage:
        _history, store = self._require()
        return store.disk_usage()

    def housekeeping_due(self) -> bool:
        stamp = self._stamp_path()
        if stamp is None or not (stamp.parent / "catalog.sqlite3").exists():
            return False  # no checkpoints yet: nothing to tidy
        try:
            return time.time() - stamp.stat().st_mtime >= HOUSEKEEPING_INTERVAL_S
        except FileNotFoundError:
            return True

    def schedule_housekeeping(self) -> Future[None] | None:
        """Prune orphaned checkpoints and gc on a worker thread, if a day has passed."""
        if self.history is None or not self.housekeeping_due():
            return None
        return self.executor.submit(self._housekeeping)

    def _housekeeping(self) -> None:
        try:
            result = self.prune()
        except Exception as exc:  # housekeeping must never disturb a run or a client
            log.warning("checkpoint housekeeping failed: %s: %s", type(exc).__name__, exc)
            return
        log.info(
            "checkpoint housekeeping: %d removed, %d bytes -> %d bytes",
            result.removed_checkpoints,
            result.bytes_before,
            result.bytes_after,
        )

    def _stamp_path(self) -> Path | None:
        return (
            None if self.data_dir is None else self.data_dir / "checkpoints" / _HOUSEKEEPING_STAMP
        )

    def _stamp_housekeeping(self) -> None:
        stamp = self._stamp_path()
        if stamp is not None:
            stamp.parent.mkdir(parents=True, exist_ok=True)
            stamp.touch()
            os.utime(stamp)


class RunCheckpoints:
    """One run's checkpoints: the hook the runtime awaits, and the end of the run."""

    def __init__(self, undo: Undo, run_id: str, sandbox_root: str) -> None:
        self.undo = undo
        self.run_id = run_id
        self.sandbox_root = sandbox_root
        # Why the run cannot be (wholly) undone; the first reason only.
        self.warning: str | None = None
        # What the run changed, once `finish` has run.
        self.changed_files: list[ChangedFile] = []
        # The checkpoints it took, oldest first, as the history stores them: the run's result
        # carries them, so a client needs no read-back of the run to offer its undo.
        self.checkpoints: list[StoredCheckpoint] = []
        self._pending: list[Future[None]] = []
        self._mutated = False
        self._files: int | None = None  # files the last snapshot holds
        # The runtime's hook (`before_mutation=checkpoints.before_mutation`): awaited before
        # an iteration first changes the folder, and before each file tool's change.
        self.before_mutation = CheckpointHook(self)

    async def snapshot_before(self, iteration: int) -> SnapshotReport:
        """Snapshot the folder before `iteration` changes it.

        Never raises for a checkpoint that cannot be taken (the run goes on, and `warning`
        says so). Cancelling the await leaves the snapshot to finish on its thread.
        """
        self._mutated = True
        future = self.undo.executor.submit(self._snapshot, iteration)
        self._pending.append(future)
        await asyncio.wrap_future(future)
        return SnapshotReport(self._files)

    async def keep_files(self, paths: Sequence[str]) -> None:
        """Keep the previous content of the files a file tool is about to change, whatever
        .gitignore says (see `CheckpointStore.pin`). Never raises; `warning` says what could
        not be kept."""
        relative = self._relative(paths)
        if not relative:
            return
        future = self.undo.executor.submit(self._pin, relative)
        self._pending.append(future)
        await asyncio.wrap_future(future)

    def _relative(self, paths: Sequence[str]) -> list[str]:
        """The paths as the file tools resolve them, relative to the folder; a path the
        tools refuse is left out (the call fails, changing nothing)."""
        from ..workspace.sandbox import Sandbox

        try:
            sandbox = Sandbox(self.sandbox_root)
        except Exception:  # the tool refuses the same folder, changing nothing
            return []
        found: list[str] = []
        for path in paths:
            try:
                relative = sandbox.resolve(path).relative
            except Exception:
                continue
            if relative != ".":
                found.append(relative)
        return found

    async def finish(self) -> None:
        """Snapshot the state the run left and work out what it changed (never raises).

        Runs to its end even if the awaiting task is cancelled meanwhile.
        """
        pending = [asyncio.wrap_future(f) for f in self._pending]
        done = asyncio.ensure_future(self._finish_after(pending))
        try:
            await asyncio.shield(done)
        except asyncio.CancelledError:
            await asyncio.wait([done])
            raise

    async def _finish_after(self, pending: list[asyncio.Future[None]]) -> None:
        await asyncio.gather(*pending, return_exceptions=True)
        await self.undo.in_thread(self._finish)

    # -- on checkpoint threads ---------------------------------------------------------------
    def _warn(self, message: str, *, logged: bool = False) -> None:
        """Keep the run's first warning; log it unless it was logged already."""
        if self.warning is None:
            self.warning = message
            if not logged:
                log.warning("run %s: %s", self.run_id, message)

    def _snapshot(self, iteration: int) -> None:
        history = self.undo.history
        store = self.undo.store()
        if history is None or store is None:
            # `store()` logged why, once for the process.
            self._warn(f"this run cannot be undone: {self.undo.unavailable}", logged=True)
            return
        try:
            checkpoint = store.snapshot(self.sandbox_root, self.run_id, iteration)
            self._files = checkpoint.files
            stored = stored_checkpoint(checkpoint)
            self.undo.record(lambda history: history.add_checkpoint(self.run_id, stored))
            self.checkpoints.append(stored)
            beyond = [s for s in checkpoint.skipped if s.reason in ("heavy_folder", "over_bounds")]
            if beyond and self.warning is None:
                # What a command changes there cannot be undone: the run's warning says so
                # (the checkpoint's note has the whole list). Not logged: it is no failure.
                self._warn(
                    "a command's changes to these cannot be undone, as checkpoints do not "
                    "copy them: " + ", ".join(s.path for s in beyond),
                    logged=True,
                )
        except Exception as exc:  # CheckpointError, sqlite3.Error, OSError: never the run's end
            self._warn(
                f"no checkpoint before iteration {iteration} ({exc}): the changes from "
                "that iteration on cannot be undone"
            )

    def _pin(self, paths: list[str]) -> None:
        store = self.undo.store()
        if self.undo.history is None or store is None:
            return  # the snapshot said why already
        try:
            problems = store.pin(self.sandbox_root, self.run_id, paths)
        except Exception as exc:  # CheckpointError, sqlite3.Error, OSError: never the run's end
            self._warn(
                f"the previous content of {', '.join(paths)} was not kept ({exc}): that "
                "change cannot be undone"
            )
            return
        for problem in problems:
            self._warn(problem)

    def _finish(self) -> None:
        history = self.undo.history
        store = self.undo.store() if self._mutated else None
        if history is None:
            return
        changed: list[ChangedFile] | None = [] if not self._mutated else None
        try:
            if store is not None:
                end = store.finish_run(self.sandbox_root, self.run_id)
                if end is not None:
                    last = stored_checkpoint(end)
                    self.undo.record(lambda history: history.add_checkpoint(self.run_id, last))
                    self.checkpoints.append(last)
                    changed = store.changed_files(self.run_id)
                elif self.warning is None:
                    changed = []  # every call that might have changed something was refused
            self.changed_files = changed or []
            warning = self.warning
            self.undo.record(lambda history: history.set_changes(self.run_id, changed, warning))
        except Exception as exc:
            self._warn(f"the state this run left was not recorded ({exc})")
            warning = self.warning
            try:
                self.undo.record(lambda history: history.set_changes(self.run_id, None, warning))
            except sqlite3.Error:
                log.warning("run %s: its checkpoint warning was not stored", self.run_id)


class CheckpointHook:
    """What a run hands the runtime as `before_mutation` (a `tool.checkpoint.FileChangeHook`):
    a snapshot before an iteration changes the folder, and the previous content of each file
    a file tool is about to change."""

    def __init__(self, checkpoints: RunCheckpoints) -> None:
        self.checkpoints = checkpoints

    async def __call__(self, iteration: int) -> SnapshotReport:
        return await self.checkpoints.snapshot_before(iteration)

    async def before_file_change(self, iteration: int, paths: Sequence[str]) -> None:
        await self.checkpoints.keep_files(paths)


# -- helpers -------------------------------------------------------------------------------


def stored_checkpoint(checkpoint: Checkpoint) -> StoredCheckpoint:
    return StoredCheckpoint(
        checkpoint.id, checkpoint.kind, checkpoint.iteration, checkpoint.created_at, checkpoint.note
    )


def describe_restore(restored: StoredRun, iteration: int | None) -> str:
    if restored.kind == "restore":
        return f"undo restore {restored.run_id}"
    if iteration is None:
        return f"undo run {restored.run_id}"
    return f"restore to before iteration {iteration} of run {restored.run_id}"


def summarize_changes(changed: list[ChangedFile], kept: list[SkippedFile]) -> str:
    if not changed:
        text = "no file needed changing"
    else:
        counts = {
            kind: sum(c.change == kind for c in changed)
            for kind in ("added", "modified", "deleted")
        }
        parts = [f"{n} {kind}" for kind, n in counts.items() if n]
        text = f"{len(changed)} file(s) restored: " + ", ".join(parts)
    if kept:
        text += (
            f"; {len(kept)} file(s) kept as they are, because an ignored or untracked file is "
            "in the way: " + ", ".join(k.path for k in kept)
        )
    return text


def _check_iteration(stored: StoredRun, iteration: int | None) -> None:
    if iteration is None:
        return
    if stored.kind == "restore":
        raise invalid_params(
            [f"iteration: {stored.run_id} is a restore, undone as a whole; leave it out"]
        )
    if iteration < 1:
        raise invalid_params([f"iteration: must be at least 1, got {iteration}"])
    if iteration > max(stored.iterations, 1):
        raise invalid_params(
            [
                f"iteration: run {stored.run_id} had {stored.iterations} iteration(s), "
                f"got {iteration}"
            ]
        )


def _target(store: CheckpointStore, stored: StoredRun, iteration: int | None) -> Checkpoint | None:
    """The checkpoint to restore; None when there is nothing to restore.

    ServiceError (NO_CHECKPOINT) when there should be one and is not: pruned, never taken.
    """
    catalog = store.checkpoints(stored.run_id)
    if stored.kind == "restore":
        target = next((c for c in catalog if c.kind == "restore"), None)
    else:
        target = store.checkpoint_before(stored.run_id, iteration)
    if target is not None or catalog:
        return target  # None here: the run changed nothing from that iteration on
    if stored.checkpoints:
        reason = "its checkpoints were pruned"
    elif stored.checkpoint_warning:
        reason = stored.checkpoint_warning
    elif stored.changed_files == []:
        return None  # it changed nothing
    else:
        reason = "it has no checkpoints (it ran before checkpoints were kept, or without them)"
    raise ServiceError(
        NO_CHECKPOINT,
        f"run {stored.run_id} cannot be restored: {reason}",
        {"run_id": stored.run_id},
    )


def _active_in(sandbox_root: str, active: Mapping[str, str]) -> list[str]:
    """The runs in `active` (id -> folder) whose folder is, holds or is inside this one."""
    mine = os.path.normcase(os.path.realpath(sandbox_root))
    busy = []
    for run_id, root in active.items():
        theirs = os.path.normcase(os.path.realpath(root))
        if mine == theirs or _inside(mine, theirs) or _inside(theirs, mine):
            busy.append(run_id)
    return sorted(busy)


def _inside(path: str, folder: str) -> bool:
    return path.startswith(folder.rstrip(os.sep) + os.sep)
