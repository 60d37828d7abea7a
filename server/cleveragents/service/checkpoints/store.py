"""Workspace checkpoints: snapshots of a sandbox folder in a shadow git repository.

A run can be undone because its folder is snapshotted before it changes anything. Each
snapshot is a commit in a git repository of our own under the user data folder
(`<data>/checkpoints/<sha256 of the sandbox path>/git`), with the sandbox as its work tree.
The project's own `.git` is never read from or written to, except to read its
`info/exclude` patterns: a project with its own repository, submodules or worktrees keeps
its index, HEAD and stash as they were.

    store = CheckpointStore(default_data_dir())
    before = store.snapshot(sandbox, run_id, iteration=1)   # before the first change
    ...
    store.finish_run(sandbox, run_id)                       # the state the run left
    store.changed_files(run_id)                             # what the run changed
    result = store.restore(sandbox, before)                 # undo the run
    store.restore(sandbox, result.undo)                     # undo the undo

What a snapshot holds: every file git would see as not ignored (`.gitignore` files at every
level, the project's `.git/info/exclude`, and the rules of a repository the sandbox is a
sub-folder of), in nested repositories too, with content, the executable bit and symlinks.
Files larger than `max_file_bytes` and unreadable files are left out and listed on the
checkpoint; a restore never touches them, nor ignored files, nor any `.git`, nor the data
folder. Where one of those stands where a restored file would go, that file is not written
and the restore lists it. Empty folders are not recorded.

Snapshots are incremental: a persistent index per sandbox keeps git's stat cache, so only
files whose size or time changed are read again, and a folder that did not change yields
the same tree and the same commit (commits carry fixed dates), so no object is written.

Every git command runs in a clean environment (no user or system config, no hooks, no
signing, no attributes or filters from the project) under a per-sandbox file lock, so two
runs, or a run and a restore, never interleave their git commands. The methods are
synchronous and may take seconds on a large first snapshot: call them off the event loop.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Collection, Iterable
from pathlib import Path

from .files import read_small_text, tree_size
from .git import GitFailed, ShadowRepo
from .git_folder_files import inside_git_folder
from .records import Checkpoint, CheckpointKind, DiskUsage, PruneResult
from .repository import (
    DEFAULT_MAX_EMPTY_FOLDERS,
    DEFAULT_MAX_FILE_BYTES,
    DEFAULT_MAX_FILES,
    DEFAULT_MAX_IGNORED_BYTES,
    DEFAULT_MAX_IGNORED_FILE_BYTES,
    DEFAULT_MAX_IGNORED_FILES,
    default_data_dir,
)
from .restoring import CheckpointRestorer

log = logging.getLogger(__name__)


__all__ = [
    "DEFAULT_MAX_EMPTY_FOLDERS",
    "DEFAULT_MAX_FILES",
    "DEFAULT_MAX_FILE_BYTES",
    "DEFAULT_MAX_IGNORED_BYTES",
    "DEFAULT_MAX_IGNORED_FILES",
    "DEFAULT_MAX_IGNORED_FILE_BYTES",
    "CheckpointStore",
    "default_data_dir",
]


class CheckpointStore(CheckpointRestorer):
    """Checkpoints of any number of sandbox folders, under `data_dir/checkpoints`.

    Raises `CheckpointsUnavailable` when git cannot be run: the caller turns checkpoints off
    and says so, and runs go on without undo.
    """

    # -- public API (listing, diffs and restores come from the layers below) ---------------
    def snapshot(
        self,
        sandbox_root: str | os.PathLike[str],
        run_id: str,
        iteration: int | None,
        *,
        kind: CheckpointKind = "iteration",
    ) -> Checkpoint:
        """Record the folder as it is now, before `iteration` of `run_id` changes it."""
        repo = self._repo(sandbox_root)
        with self._locked(repo):
            checkpoint, _state = self._snapshot_locked(
                repo, run_id, kind, iteration, restored_to=None, pins=self._run_pins(run_id)
            )
            self._keep_git_folder_files(repo, checkpoint.id, self._git_folder_paths(run_id))
            return checkpoint

    def pin(
        self, sandbox_root: str | os.PathLike[str], run_id: str, paths: Iterable[str]
    ) -> list[str]:
        """Keep `paths` (relative to the folder) in the run's checkpoints whatever the ignore
        rules and bounds say: called just before a file tool writes, edits or deletes them.

        A checkpoint of the run that did not hold a path (ignored beyond the bounds, in a
        skipped folder such as `node_modules`) gets it as it is now, which is as it was
        before the call; every later snapshot of the run, and of a restore of it, holds it
        too. A path that does not exist yet is recorded as absent, so a restore removes it.
        Returns what could not be kept (larger than the per-file bound), as sentences.
        """
        repo = self._repo(sandbox_root)
        given = {p for p in paths if p and p != "."}
        wanted = sorted(p for p in given if not self._hidden(repo, p))
        # git cannot hold a path inside a `.git` (written with the protected-writes opt-in):
        # the side store keeps those.
        in_git_folders = sorted(
            p for p in given if inside_git_folder(p) and not self._private(repo, p)
        )
        if not wanted and not in_git_folders:
            return []
        with self._locked(repo):
            self._ensure_repo(repo)
            steps = [cp for cp in self.checkpoints(run_id) if cp.kind == "iteration"]
            problems: list[str] = []
            side_problems: list[str] = []
            for checkpoint in steps:
                if wanted:
                    problems = self._pin_into(repo, checkpoint, wanted)
                if in_git_folders:
                    side_problems = self._keep_git_folder_files(repo, checkpoint.id, in_git_folders)
            return problems + side_problems

    def finish_run(self, sandbox_root: str | os.PathLike[str], run_id: str) -> Checkpoint | None:
        """Record the state a run left, if it took any checkpoint (else None: it changed
        nothing). `changed_files(run_id)` compares this with the run's first checkpoint."""
        if not any(cp.kind == "iteration" for cp in self.checkpoints(run_id)):
            return None
        return self.snapshot(sandbox_root, run_id, None, kind="end")

    def checkpoint_before(self, run_id: str, iteration: int | None = None) -> Checkpoint | None:
        """The checkpoint holding the folder as it was before `iteration` of the run (None:
        before the whole run).

        An iteration that changed nothing has no checkpoint of its own: the state before it
        is the one before the next iteration that did, or the state the run left. None when
        the run changed nothing from `iteration` on (there is nothing to restore).
        """
        ordered = self.checkpoints(run_id)
        steps = [cp for cp in ordered if cp.kind == "iteration"]
        if iteration is None:
            return steps[0] if steps else None
        for checkpoint in steps:
            if checkpoint.iteration is not None and checkpoint.iteration >= iteration:
                return checkpoint
        ends = [cp for cp in ordered if cp.kind == "end"]
        return ends[-1] if ends and steps else None

    def prune(
        self,
        *,
        keep_run_ids: Collection[str] | None = None,
        older_than: float | None = None,
    ) -> PruneResult:
        """Delete checkpoints and reclaim their disk space.

        A run's checkpoints go together: those of runs not in `keep_run_ids` (when given) and
        of runs whose newest checkpoint is older than `older_than` (a Unix time, when given).
        With neither, only housekeeping runs (orphaned refs removed, repositories packed).
        """
        before = self.disk_usage().total_bytes
        with self._catalog.connect() as conn:
            runs = conn.execute(
                "SELECT run_id, MAX(created_at) FROM checkpoints GROUP BY run_id"
            ).fetchall()
        doomed = {
            str(run_id)
            for run_id, newest in runs
            if (keep_run_ids is not None and run_id not in keep_run_ids)
            or (older_than is not None and float(newest) < older_than)
        }
        removed = 0
        emptied = 0
        for home in sorted(path for path in self.root.iterdir() if (path / "git").is_dir()):
            repo = ShadowRepo(home.name, home, Path(read_small_text(home / "sandbox") or home))
            with self._locked(repo):
                # Objects may go: nothing made before is taken for granted afterwards.
                self._forget(repo)
                with self._catalog.connect() as conn:
                    rows = conn.execute(
                        "SELECT id, run_id FROM checkpoints WHERE repo = ?", (repo.key,)
                    ).fetchall()
                    gone = [str(cp_id) for cp_id, run_id in rows if run_id in doomed]
                    conn.executemany("DELETE FROM checkpoints WHERE id = ?", [(i,) for i in gone])
                self._git_folder_files(repo).drop(gone)
                removed += len(gone)
                if len(gone) == len(rows):
                    # Nothing left to restore here: drop the whole repository (the lock file
                    # stays, as another process may be waiting on it).
                    shutil.rmtree(repo.git_dir, ignore_errors=True)
                    emptied += 1
                    continue
                kept_ids = {str(cp_id) for cp_id, _run in rows} - set(gone)
                try:
                    self._drop_refs_except(repo, kept_ids)
                    self._git_runner.run(repo, "reflog", "expire", "--expire=now", "--all")
                    self._git_runner.run(repo, "gc", "--prune=now", "--quiet")
                except GitFailed as exc:
                    # One damaged repository must not stop the others being pruned; its
                    # next snapshot finds the damage and recreates it.
                    log.warning("pruning checkpoints of %s: %s", repo.sandbox, exc)
        with self._catalog.connect() as conn:
            # Rows whose repository is gone (deleted by hand, or recreated after damage).
            present = [path.name for path in self.root.iterdir() if (path / "git").is_dir()]
            marks = ",".join("?" * len(present))
            orphans = conn.execute(
                f"DELETE FROM checkpoints WHERE repo NOT IN ({marks})", present
            ).rowcount
        return PruneResult(removed + orphans, emptied, before, self.disk_usage().total_bytes)

    def disk_usage(self) -> DiskUsage:
        """The bytes the checkpoint store takes on disk, per sandbox and in all."""
        by_sandbox: dict[str, int] = {}
        total = 0
        for entry in self.root.iterdir():
            size = tree_size(entry, allocated=True)
            total += size
            sandbox = read_small_text(entry / "sandbox") if entry.is_dir() else None
            if sandbox is not None and (entry / "git").is_dir():
                by_sandbox[sandbox] = by_sandbox.get(sandbox, 0) + size
        return DiskUsage(total, by_sandbox)
