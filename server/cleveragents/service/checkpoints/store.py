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

import hashlib
import json
import logging
import os
import shutil
import stat
import subprocess
import sys
import time
import uuid
from collections.abc import Collection, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from ...tool.errors import ToolError
from ...workspace.command_policy import never_visible_to_tools
from ...workspace.private import keep_private, private_folder
from ..changes import ChangedFile, ChangeKind
from ..history import default_history_path
from .catalog import CATALOG_FILE_NAME, Catalog, checkpoint_from_row
from .files import (
    HEAVY_FOLDERS,
    file_lock,
    glob_escape,
    heavy_prefix,
    inside_any,
    note_bits,
    obstacle_size,
    process_umask,
    project_exclude_file,
    read_small_text,
    tree_size,
)
from .git import GIT_TIMEOUT_S, GitFailed, GitRunner, ShadowRepo, join_z, split_z
from .git_folder_files import GitFolderFiles, git_folder_changes, inside_git_folder
from .records import (
    Checkpoint,
    CheckpointError,
    CheckpointKind,
    CheckpointsUnavailable,
    Coverage,
    DiskUsage,
    PruneResult,
    RestoreFailed,
    RestoreResult,
    SkippedFile,
    SkipReason,
)
from .state import (
    DiffEntry,
    FolderMeta,
    FolderState,
    Untracked,
    apply_folders,
    apply_modes,
    knew_absent,
)

log = logging.getLogger(__name__)

DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024
DEFAULT_MAX_FILES = 200_000
# Bounds on what a snapshot keeps outside git's view (ignored files): per file, in count and
# in bytes. Smallest files are kept first, so a `.env` is kept before a database dump.
DEFAULT_MAX_IGNORED_FILE_BYTES = 4 * 1024 * 1024
DEFAULT_MAX_IGNORED_FILES = 5_000
DEFAULT_MAX_IGNORED_BYTES = 64 * 1024 * 1024
# Empty folders a snapshot records at most (beyond: none, and a restore removes none).
DEFAULT_MAX_EMPTY_FOLDERS = 10_000
_REF_PREFIX = "refs/cleveragents/checkpoints/"
_EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
_MESSAGE = "cleveragents checkpoint"
_SCAN_STATE = "scan-state.json"
# Highest-precedence attributes: store and write bytes exactly as they are on disk, whatever
# the project's .gitattributes asks for (eol conversion, LFS or other filter drivers).
_ATTRIBUTES = "* -text -filter -ident !eol !working-tree-encoding\n"
_CHANGE_BY_STATUS: dict[str, ChangeKind] = {
    "A": "added",
    "D": "deleted",
    "M": "modified",
    "T": "modified",
}


def default_data_dir() -> Path:
    """The cleveragents user data folder (the one that holds the run history)."""
    return default_history_path().parent


class CheckpointStore:
    """Checkpoints of any number of sandbox folders, under `data_dir/checkpoints`.

    Raises `CheckpointsUnavailable` when git cannot be run: the caller turns checkpoints off
    and says so, and runs go on without undo.
    """

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        *,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        max_files: int = DEFAULT_MAX_FILES,
        max_ignored_file_bytes: int = DEFAULT_MAX_IGNORED_FILE_BYTES,
        max_ignored_files: int = DEFAULT_MAX_IGNORED_FILES,
        max_ignored_bytes: int = DEFAULT_MAX_IGNORED_BYTES,
        max_empty_folders: int = DEFAULT_MAX_EMPTY_FOLDERS,
        git: str = "git",
    ) -> None:
        executable = shutil.which(git)
        if executable is None:
            raise CheckpointsUnavailable(
                f"git was not found (looked for {git!r} on PATH): checkpoints are off, so "
                "runs go on but cannot be undone. Install git to turn them on."
            )
        self.git = executable
        self.data_dir = Path(data_dir).resolve()
        self.root = self.data_dir / "checkpoints"
        self.max_file_bytes = max_file_bytes
        self.max_files = max_files
        # Copies of every project's files: the owner's alone, and out of every tool's reach
        # (git obeys a repository's `config`: a tool that could write it could run programs).
        private_folder(self.data_dir, tighten=self.data_dir == default_data_dir().resolve())
        private_folder(self.root, tighten=True)
        keep_private(self.root)
        git_home = self.root / "git-home"  # HOME for git: no user config is found
        git_home.mkdir(exist_ok=True)
        self._git_runner = GitRunner(executable, git_home)
        try:
            version = subprocess.run(
                [self.git, "--version"],
                env=self._git_runner.env(),
                capture_output=True,
                timeout=60,
                check=True,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise CheckpointsUnavailable(
                f"git ({executable}) does not run ({exc}): checkpoints are off, so runs go "
                "on but cannot be undone."
            ) from exc
        self.git_version = version.stdout.decode(errors="replace").strip()
        self._git_runner.know_version(self.git_version)
        self._catalog = Catalog(self.root / CATALOG_FILE_NAME)
        self.max_ignored_file_bytes = max_ignored_file_bytes
        self.max_ignored_files = max_ignored_files
        self.max_ignored_bytes = max_ignored_bytes
        self.max_empty_folders = max_empty_folders
        self._hidden_prefixes: dict[str, tuple[str, ...]] = {}
        self._meta_cache: dict[str, FolderMeta] = {}
        # Per sandbox: files indexed in the second of the snapshot being taken (see _fast_tree).
        self._recent: dict[str, list[str]] = {}
        # Per sandbox: commits made lately, by what they were made of (see _commit).
        self._commits: dict[str, dict[str, str]] = {}
        self._empty_tree_written: set[str] = set()

    # -- public API --------------------------------------------------------------------------
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

    def checkpoints(self, run_id: str) -> list[Checkpoint]:
        """A run's (or a restore's) checkpoints, oldest first."""
        with self._catalog.connect() as conn:
            rows = conn.execute(
                "SELECT * FROM checkpoints WHERE run_id = ? ORDER BY seq", (run_id,)
            ).fetchall()
        return [checkpoint_from_row(row) for row in rows]

    def checkpoint(self, checkpoint_id: str) -> Checkpoint:
        """The checkpoint with this id; KeyError if there is none (or it was pruned)."""
        with self._catalog.connect() as conn:
            row = conn.execute(
                "SELECT * FROM checkpoints WHERE id = ?", (checkpoint_id,)
            ).fetchone()
        if row is None:
            raise KeyError(checkpoint_id)
        return checkpoint_from_row(row)

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

    def diff(
        self,
        sandbox_root: str | os.PathLike[str],
        from_checkpoint: Checkpoint,
        to: Checkpoint | None = None,
    ) -> list[ChangedFile]:
        """What changed from `from_checkpoint` to `to` (None: the folder as it is now)."""
        repo = self._repo(sandbox_root)
        self._check_belongs(repo, from_checkpoint)
        with self._locked(repo):
            self._ensure_repo(repo)
            side = self._git_folder_files(repo)
            side_before = side.kept(from_checkpoint.id)
            if to is None:
                target = self._capture(repo, self._run_pins(from_checkpoint.run_id))
                side_after, _unread = side.read(repo.sandbox, side_before)
            else:
                self._check_belongs(repo, to)
                target = self._state_of(repo, to)
                side_after = side.kept(to.id)
            changes = self._changes(repo, self._state_of(repo, from_checkpoint), target)
            if not side_before:
                return changes
            inside = git_folder_changes(side_before, side_after)
            return sorted([*changes, *inside], key=lambda c: c.path)

    def changed_files(self, run_id: str) -> list[ChangedFile]:
        """The files a run changed: its first checkpoint against the state it left (its
        "end" checkpoint, or the folder now while it has none). Empty if it took none."""
        ordered = self.checkpoints(run_id)
        steps = [cp for cp in ordered if cp.kind == "iteration"]
        if not steps:
            return []
        ends = [cp for cp in ordered if cp.kind == "end"]
        first = steps[0]
        if ends:
            return self.diff(first.sandbox_root, first, ends[-1])
        return self.diff(first.sandbox_root, first)

    def restore(
        self,
        sandbox_root: str | os.PathLike[str],
        checkpoint: Checkpoint,
        *,
        restore_id: str | None = None,
        dry_run: bool = False,
    ) -> RestoreResult:
        """Make the folder as it was at `checkpoint`: content, executable bit and symlinks,
        files created since deleted, deleted and renamed ones brought back.

        Ignored files, files a checkpoint skipped and every `.git` are left alone; a file the
        checkpoint holds is not written where such a file is in the way (listed in `kept`).
        The folder as it was is snapshotted first (`undo`, under `restore_id`). With
        `dry_run`, nothing is written or recorded and the result says what would change.
        """
        repo = self._repo(sandbox_root)
        self._check_belongs(repo, checkpoint)
        with self._locked(repo):
            self._ensure_repo(repo)
            if not self._object_exists(repo, checkpoint.commit):
                raise CheckpointError(
                    f"checkpoint {checkpoint.id} is damaged or was pruned: its snapshot is "
                    f"missing from {repo.git_dir}"
                )
            undo: Checkpoint | None = None
            wanted = self._state_of(repo, checkpoint)
            side = self._git_folder_files(repo)
            side_wanted = side.kept(checkpoint.id)
            # The state before the restore holds whatever the restore may overwrite: the
            # run's pinned files, and every file beyond git's view the checkpoint holds
            # (else one beyond the bounds now would be "in the way" and not restored).
            pins = self._run_pins(checkpoint.run_id) | self._tree_paths(repo, wanted.extras_tree)
            if dry_run:
                current = self._capture(repo, pins)
            else:
                undo, current = self._snapshot_locked(
                    repo,
                    restore_id or f"restore-{uuid.uuid4().hex}",
                    "restore",
                    None,
                    restored_to=checkpoint.id,
                    pins=pins,
                )
                # The restore's own checkpoint keeps what it may overwrite inside a `.git`,
                # so a restore of the restore puts it back.
                side_paths = set(side_wanted) | self._git_folder_paths(checkpoint.run_id)
                self._keep_git_folder_files(repo, undo.id, side_paths)
            # What was not kept (a link) is left as it is.
            side_wanted = {p: s for p, s in side_wanted.items() if not s.other}
            side_now, _unread = side.read(repo.sandbox, side_wanted)
            side_changes = git_folder_changes(side_now, side_wanted)
            plain = current.extras_tree == _EMPTY_TREE and wanted.extras_tree == _EMPTY_TREE
            current_full = current.tree if plain else self._combine(repo, current)
            target_full = wanted.tree if plain else self._combine(repo, wanted)
            target, kept = self._reachable_target(repo, current_full, target_full, current, wanted)
            changes = self._diff_entries(repo, current_full, target)
            # Every object the restore will write must be there before anything is written.
            self._check_objects(repo, checkpoint, [c.new_id for c in changes if c.new_id])
            changed = self._changes(repo, current, wanted, entries=(current_full, target))
            if side_changes:
                changed = sorted([*changed, *side_changes], key=lambda c: c.path)
            if undo is not None and changed:
                try:
                    if changes:
                        self._move_work_tree(repo, current, current_full, target, plain)
                    apply_modes(repo.sandbox, changes, current.meta, wanted.meta)
                    apply_folders(repo.sandbox, current.meta, wanted.meta)
                    if side_changes:
                        changed_paths = {c.path for c in side_changes}
                        left = side.put_back(
                            repo.sandbox,
                            {p: s for p, s in side_wanted.items() if p in changed_paths},
                        )
                        changed = [c for c in changed if c.path not in left]
                except (GitFailed, OSError, ToolError) as exc:
                    raise RestoreFailed(
                        f"{exc}. Restore checkpoint {undo.id} to get the folder back as it "
                        "was before this restore.",
                        undo,
                    ) from exc
            return RestoreResult(checkpoint, changed, undo, kept, dry_run)

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

    # -- snapshots ---------------------------------------------------------------------------
    def _snapshot_locked(
        self,
        repo: ShadowRepo,
        run_id: str,
        kind: CheckpointKind,
        iteration: int | None,
        *,
        restored_to: str | None,
        pins: Collection[str] = (),
    ) -> tuple[Checkpoint, FolderState]:
        warnings: list[str] = []
        checkpoint_id = uuid.uuid4().hex
        self._ensure_repo(repo)
        try:
            state, commit = self._capture_and_commit(repo, pins, checkpoint_id)
        except GitFailed as first:
            # The indexes and what this store remembers of the repository are only caches:
            # drop them, then look at the repository.
            self._forget(repo)
            repo.index.unlink(missing_ok=True)
            repo.extras_index.unlink(missing_ok=True)
            if not self._healthy(repo):
                warnings.append(self._recreate(repo, str(first)))
            state, commit = self._capture_and_commit(repo, pins, checkpoint_id)
        checkpoint = Checkpoint(
            id=checkpoint_id,
            run_id=run_id,
            kind=kind,
            iteration=iteration,
            sandbox_root=str(repo.sandbox),
            commit=commit,
            tree=state.tree,
            created_at=time.time(),
            skipped=state.skipped,
            restored_to=restored_to,
            warnings=tuple(warnings),
            coverage=state.coverage,
            files=state.files,
        )
        with self._catalog.connect() as conn:
            conn.execute(
                "INSERT INTO checkpoints (id, run_id, kind, iteration, sandbox, repo, commit_id,"
                " tree_id, created_at, skipped, restored_to, warnings, coverage)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    checkpoint.id,
                    run_id,
                    kind,
                    iteration,
                    checkpoint.sandbox_root,
                    repo.key,
                    checkpoint.commit,
                    state.tree,
                    checkpoint.created_at,
                    json.dumps([s.to_dict() for s in state.skipped], ensure_ascii=True),
                    restored_to,
                    json.dumps(warnings, ensure_ascii=True),
                    state.coverage.to_json(),
                ),
            )
        for warning in warnings:
            log.warning("%s", warning)
        if checkpoint.note:
            log.info("checkpoint of %s: %s", repo.sandbox, checkpoint.note)
        return checkpoint, state

    def _capture_and_commit(
        self, repo: ShadowRepo, pins: Collection[str], checkpoint_id: str
    ) -> tuple[FolderState, str]:
        state = self._capture(repo, pins)
        commit = self._commit(repo, state.tree, state.extras_commit, _MESSAGE.encode() + b"\n")
        # The ref first, then the catalog row: a checkpoint listed is always there.
        self._git_runner.run(repo, "update-ref", _REF_PREFIX + checkpoint_id, commit)
        return state, commit

    def _forget(self, repo: ShadowRepo) -> None:
        """Drop what this store remembers of a repository whose objects may be gone."""
        self._commits.pop(repo.key, None)
        self._empty_tree_written.discard(repo.key)
        (repo.home / _SCAN_STATE).unlink(missing_ok=True)

    def _capture(self, repo: ShadowRepo, pins: Collection[str] = ()) -> FolderState:
        """Bring the indexes in line with the folder and write its trees (no ref, no row).

        git does the scanning: after the first snapshot of a folder, `git diff-files` finds
        what changed among the files it holds (its index keeps their stat data) while `git
        ls-files --others --directory` lists what it does not hold, in one walk (untracked
        folders collapsed); Python then looks only at what changed, and at ignored files.
        The first snapshot, one after a restore or a damaged index, and a folder inside a
        larger repository take the full listing instead.
        """
        umask = process_umask()
        self._refresh_hidden(repo)
        previous = self._scan_state(repo)
        fast = previous is not None and self._enclosing_work_tree(repo) is None
        if fast:
            assert previous is not None
            tree, count, skipped, modes, untracked = self._fast_tree(repo, umask, previous)
        else:
            tree, listed, skipped, modes = self._write_tree(repo, umask)
            count = len(listed)
            untracked = self._untracked(repo, self._run_untracked_listing(repo))
        self._save_scan_state(repo, count, modes, tree)
        extras, ignored_held, extra_skipped = self._extra_files(repo, untracked, pins, umask, modes)
        extras_tree = self._write_index(repo, repo.extras_index, extras)
        meta = FolderMeta(umask, modes, tuple(sorted(untracked.empty_dirs)))
        extras_commit = self._commit(repo, extras_tree, None, meta.to_text())
        pinned = tuple(sorted(p for p in pins if not self._hidden(repo, p)))
        return FolderState(
            tree,
            extras_tree,
            extras_commit,
            meta,
            Coverage(extras_commit, ignored_held, pinned),
            tuple(skipped + extra_skipped),
            count + len(extras),
        )

    def _commit(self, repo: ShadowRepo, tree: str, parent: str | None, message: bytes) -> str:
        """The commit of `tree` (with `parent`) and `message`: commits carry fixed dates, so
        the same inputs give the same commit, made once and then remembered (until a prune
        may have removed it)."""
        key = hashlib.sha256(f"{tree} {parent}\n".encode() + message).hexdigest()
        known = self._commits.get(repo.key, {})
        if key in known:
            return known[key]
        args = ["commit-tree", tree, *(["-p", parent] if parent else []), "-F", "-"]
        commit = self._git_runner.run(repo, *args, input=message).decode().strip()
        self._commits[repo.key] = {**dict(list(known.items())[-7:]), key: commit}
        return commit

    # -- the fast scan -------------------------------------------------------------------------
    def _scan_state(self, repo: ShadowRepo) -> dict[str, Any] | None:
        """What the last snapshot left for the next one (the files it holds and their
        permission bits), if the persistent index is still the one it wrote."""
        try:
            state = json.loads((repo.home / _SCAN_STATE).read_text(encoding="utf-8"))
            info = repo.index.stat()
        except (OSError, ValueError):
            return None
        signature = [info.st_mtime_ns, info.st_size, info.st_ino]
        if not isinstance(state, dict) or state.get("index") != signature:
            return None
        return state

    def _save_scan_state(
        self, repo: ShadowRepo, count: int, modes: dict[str, int], tree: str
    ) -> None:
        try:
            info = repo.index.stat()
        except OSError:
            return
        state = {"index": [info.st_mtime_ns, info.st_size, info.st_ino], "count": count}
        state["modes"] = modes
        state["recent"] = self._recent.pop(repo.key, [])
        state["tree"] = tree
        temporary = repo.home / (_SCAN_STATE + ".tmp")
        temporary.write_text(json.dumps(state, ensure_ascii=True), encoding="utf-8")
        os.replace(temporary, repo.home / _SCAN_STATE)

    def _fast_tree(
        self, repo: ShadowRepo, umask: int, previous: dict[str, Any]
    ) -> tuple[str, int, list[SkippedFile], dict[str, int], Untracked]:
        """The persistent index brought up to date from what git reports changed."""
        # Both walks at once: the stat of every file held, the listing of every folder.
        dirty_job = self._git_runner.start(
            repo, "diff-files", "-z", "--name-only", work_tree=repo.sandbox
        )
        listing = self._run_untracked_listing(repo)
        dirty = split_z(self._git_runner.wait(repo, dirty_job, "diff-files"))
        untracked = self._untracked(repo, listing)
        modes: dict[str, int] = {str(k): int(v) for k, v in previous.get("modes", {}).items()}
        count = int(previous.get("count", 0))
        skipped: list[SkippedFile] = []
        update: list[str] = []
        drop: list[str] = []
        # git compares times to the second: a file indexed in the second of the last
        # snapshot may have its bits changed in that second unseen; those are looked at again.
        cutoff = int(time.time())
        recent = self._recent[repo.key] = []
        seen = set(dirty) | set(untracked.new)
        for path in previous.get("recent", []):
            if path in seen:
                continue
            try:
                info = os.lstat(os.path.join(repo.sandbox, path))
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode):
                modes.pop(path, None)
                note_bits(modes, path, info, umask)
                if info.st_ctime >= cutoff:
                    recent.append(path)
        queue = [*((p, True) for p in dirty), *((p, False) for p in untracked.new)]
        for path, tracked in queue:  # grows while it is walked (a file become a folder)
            modes.pop(path, None)
            full = os.path.join(repo.sandbox, path)
            try:
                info = os.lstat(full)
            except OSError:
                if tracked:
                    drop.append(path)  # deleted
                continue
            if stat.S_ISREG(info.st_mode):
                reason: SkipReason | None = None
                if info.st_size > self.max_file_bytes:
                    reason = "too_large"
                elif not info.st_mode & stat.S_IROTH and not os.access(full, os.R_OK):
                    reason = "unreadable"
                if reason is not None:
                    skipped.append(SkippedFile(path, info.st_size, reason))
                    if tracked:
                        drop.append(path)
                    continue
                note_bits(modes, path, info, umask)
                if info.st_ctime >= cutoff:
                    recent.append(path)
            elif not stat.S_ISLNK(info.st_mode):
                if tracked:
                    drop.append(path)
                    if stat.S_ISDIR(info.st_mode):
                        # A file become a folder: git's listing skips a path the index
                        # holds, so what is in the folder is found here.
                        before = len(untracked.new)
                        self._new_folder(repo, path, untracked)
                        queue.extend((p, False) for p in untracked.new[before:])
                continue
            update.append(path)
            if not tracked:
                count += 1
        count -= len(drop)
        if count > self.max_files:
            raise CheckpointError(
                f"{repo.sandbox} holds more than {self.max_files} files that are not "
                "ignored: no checkpoint was taken (add a .gitignore for generated folders)"
            )
        if not drop and not update and isinstance(previous.get("tree"), str):
            return str(previous["tree"]), count, skipped, modes, untracked  # index untouched
        if drop:
            self._drop_from_index(repo, repo.index, drop)
        if update:
            self._git_runner.add_to_index(repo, repo.index, update, new_files=len(update))
        tree = self._git_runner.run(repo, "write-tree", work_tree=repo.sandbox).decode().strip()
        return tree, count, skipped, modes, untracked

    def _run_untracked_listing(self, repo: ShadowRepo) -> list[str]:
        """Every path the persistent index does not hold, ignored or not, in one walk: files
        in folders it holds files of, and whole folders (`dir/`) it holds nothing of."""
        return split_z(
            self._git_runner.run(
                repo, "ls-files", "-z", "--others", "--directory", work_tree=repo.sandbox
            )
        )

    def _untracked(self, repo: ShadowRepo, entries: list[str]) -> Untracked:
        """Sort what the index does not hold: ignored (kept beside git's view, bounded), new
        files (to add), folders with nothing in them; heavy folders and private paths out."""
        found = Untracked()
        visible = [e for e in entries if not self._hidden(repo, e.rstrip("/"))]
        ignored = self._ignored_paths(repo, [e.rstrip("/") for e in visible])
        for entry in visible:
            path = entry.rstrip("/")
            is_dir = entry.endswith("/")
            if path in ignored:
                heavy_at = heavy_prefix(path)
                if heavy_at is not None:
                    found.heavy.add(heavy_at)
                elif is_dir:
                    found.ignored_dirs.append(path)
                    found.empty_dirs.extend(self._empty_within(repo, path))
                else:
                    found.ignored_files.append(path)
            elif not is_dir:
                found.new.append(path)
            else:
                self._new_folder(repo, path, found)
        return found

    def _new_folder(self, repo: ShadowRepo, path: str, found: Untracked) -> None:
        """A folder the index holds nothing of: its files (by its ignore rules; a nested
        repository's by its own), its ignored files, its empty folders."""
        found.empty_dirs.extend(self._empty_within(repo, path))
        pending = [path]
        while pending:
            folder = pending.pop()
            own = (repo.sandbox / folder / ".git").exists()
            work_tree = repo.sandbox / folder if own else repo.sandbox
            files, nested = self._list_level(repo, work_tree, repo.sandbox / folder, folder + "/")
            found.new.extend(files)
            pending.extend(n.rstrip("/") for n in nested)
            listing = self._git_runner.run(
                repo,
                "ls-files",
                "-z",
                "--others",
                "--ignored",
                "--exclude-standard",
                "--directory",
                work_tree=work_tree,
                cwd=repo.sandbox / folder,
                index=repo.empty_index,
            )
            for entry in split_z(listing):
                inner = f"{folder}/{entry.rstrip('/')}"
                if self._hidden(repo, inner):
                    continue
                heavy_at = heavy_prefix(inner)
                if heavy_at is not None:
                    found.heavy.add(heavy_at)
                elif entry.endswith("/"):
                    found.ignored_dirs.append(inner)
                else:
                    found.ignored_files.append(inner)

    def _empty_within(self, repo: ShadowRepo, path: str) -> list[str]:
        """The folders at or under `path` that hold no file at any depth (none past the
        bound: a folder with more is not taken apart)."""
        holds: dict[str, bool] = {}
        order: list[str] = []
        for current, dirs, files in os.walk(repo.sandbox / path, topdown=True):
            rel = Path(current).relative_to(repo.sandbox).as_posix()
            dirs[:] = [d for d in dirs if d != ".git" and not self._hidden(repo, f"{rel}/{d}")]
            links = [d for d in dirs if os.path.islink(os.path.join(current, d))]
            dirs[:] = [d for d in dirs if d not in links]
            holds[rel] = bool(files or links)
            order.append(rel)
            if len(order) > self.max_empty_folders:
                return []
        # A folder holds something if it or any folder under it does.
        for rel in sorted(order, key=lambda r: r.count("/"), reverse=True):
            if holds[rel]:
                parent = rel.rpartition("/")[0]
                if parent in holds and parent.startswith(path):
                    holds[parent] = True
        return [rel for rel in order if not holds[rel]]

    def _write_tree(
        self, repo: ShadowRepo, umask: int
    ) -> tuple[str, set[str], list[SkippedFile], dict[str, int]]:
        """Bring the persistent index in line with the folder (git's view) and write its tree.

        Also returns the paths it holds, those it left out, and the permission bits of the
        files git would not give back as they are.
        """
        paths, skipped, modes = self._snapshot_paths(repo, umask)
        tree = self._write_index(repo, repo.index, paths)
        return tree, set(paths), skipped, modes

    def _write_index(self, repo: ShadowRepo, index: Path, paths: list[str]) -> str:
        """Make `index` hold exactly `paths` as they are on disk; its tree."""
        if not paths and index != repo.index:
            index.unlink(missing_ok=True)  # nothing to hold
            if repo.key not in self._empty_tree_written:
                # Commits name it: it must be in the repository, not only known to git.
                self._git_runner.run(repo, "hash-object", "-w", "-t", "tree", "--stdin", input=b"")
                self._empty_tree_written.add(repo.key)
            return _EMPTY_TREE
        listed = set(paths)
        indexed = split_z(
            self._git_runner.run(repo, "ls-files", "-z", index=index, work_tree=repo.sandbox)
        )
        stale = [path for path in indexed if path not in listed]
        if stale:
            self._drop_from_index(repo, index, stale)
        if paths:
            # The persistent index, rebuilt here, is split: a later snapshot that changes a
            # few files writes a small index, not all of it again.
            new_files = len(listed) - (len(indexed) - len(stale))
            self._git_runner.add_to_index(
                repo, index, paths, new_files=new_files, split=index == repo.index
            )
        return (
            self._git_runner.run(repo, "write-tree", index=index, work_tree=repo.sandbox)
            .decode()
            .strip()
        )

    def _snapshot_paths(
        self, repo: ShadowRepo, umask: int
    ) -> tuple[list[str], list[SkippedFile], dict[str, int]]:
        """The files a snapshot holds, those it leaves out with the reason, and the modes."""
        paths: list[str] = []
        skipped: list[SkippedFile] = []
        modes: dict[str, int] = {}
        root = str(repo.sandbox)
        recent = self._recent[repo.key] = []
        cutoff = int(time.time())
        for path in self._unignored_files(repo):
            full = os.path.join(root, path)  # not pathlib: this runs for every file
            try:
                info = os.lstat(full)
            except OSError:
                continue  # gone since it was listed
            if stat.S_ISREG(info.st_mode):
                if info.st_size > self.max_file_bytes:
                    skipped.append(SkippedFile(path, info.st_size, "too_large"))
                    continue
                # Readable by all needs no access() call (the common case, and a syscall
                # saved per file).
                if not info.st_mode & stat.S_IROTH and not os.access(full, os.R_OK):
                    skipped.append(SkippedFile(path, info.st_size, "unreadable"))
                    continue
                note_bits(modes, path, info, umask)
                if info.st_ctime >= cutoff:
                    recent.append(path)
            elif not stat.S_ISLNK(info.st_mode):
                continue
            paths.append(path)
        return paths, skipped, modes

    def _extra_files(
        self,
        repo: ShadowRepo,
        untracked: Untracked,
        pins: Collection[str],
        umask: int,
        modes: dict[str, int],
    ) -> tuple[list[str], bool, list[SkippedFile]]:
        """The files kept beyond git's view: ignored ones within the bounds, smallest first,
        outside heavy folders, and every pinned one. Adds their permission bits to `modes`.

        Returns the paths, whether every ignored file outside the heavy folders was kept,
        and what was left out.
        """
        candidates, skipped = self._ignored_candidates(repo, untracked)
        chosen: list[str] = []
        infos: dict[str, os.stat_result] = {}
        total = 0
        left_out = 0
        left_out_bytes = 0
        for size, path, info in sorted(candidates, key=lambda c: (c[0], c[1])):
            if size > self.max_ignored_file_bytes:
                skipped.append(SkippedFile(path, size, "too_large"))
                continue
            if len(chosen) >= self.max_ignored_files or total + size > self.max_ignored_bytes:
                left_out += 1
                left_out_bytes += size
                continue
            chosen.append(path)
            infos[path] = info
            total += size
        if left_out:
            skipped.append(
                SkippedFile(f"{left_out} ignored file(s)", left_out_bytes, "over_bounds")
            )
        held = not any(s.reason in ("over_bounds", "too_large", "unreadable") for s in skipped)
        wanted = sorted(set(pins) - set(chosen))
        have = self._in_index(repo, repo.index, wanted)
        for path in wanted:
            if path in have or self._hidden(repo, path):
                continue
            try:
                info = os.lstat(repo.sandbox / path)
            except OSError:
                continue  # absent: the checkpoint records it as absent
            if stat.S_ISLNK(info.st_mode) or (
                stat.S_ISREG(info.st_mode) and info.st_size <= self.max_file_bytes
            ):
                chosen.append(path)
                infos[path] = info
        for path in chosen:
            info = infos[path]
            if stat.S_ISREG(info.st_mode):
                note_bits(modes, path, info, umask)
        return chosen, held, skipped

    def _in_index(self, repo: ShadowRepo, index: Path, paths: list[str]) -> set[str]:
        """Those of `paths` the index holds."""
        if not paths:
            return set()
        listing = self._git_runner.run(
            repo,
            "ls-files",
            "-z",
            "--",
            *(f":(literal){p}" for p in paths),
            index=index,
            work_tree=repo.sandbox,
        )
        return set(split_z(listing)) & set(paths)

    def _ignored_candidates(
        self, repo: ShadowRepo, untracked: Untracked
    ) -> tuple[list[tuple[int, str, os.stat_result]], list[SkippedFile]]:
        """Every ignored file and symlink outside heavy folders, with its size; and the
        heavy folders and unreadable files left out."""
        found: list[tuple[int, str, os.stat_result]] = []
        skipped: list[SkippedFile] = []
        heavy = set(untracked.heavy)
        root = repo.sandbox

        def consider(path: str) -> None:
            try:
                info = os.lstat(root / path)
            except OSError:
                return
            if stat.S_ISLNK(info.st_mode):
                found.append((0, path, info))
            elif stat.S_ISREG(info.st_mode):
                if not info.st_mode & stat.S_IROTH and not os.access(root / path, os.R_OK):
                    skipped.append(SkippedFile(path, info.st_size, "unreadable"))
                else:
                    found.append((info.st_size, path, info))

        # A walk stops a little past what could be kept: a huge ignored folder is not
        # listed whole at every snapshot (what is left out makes `ignored_held` false).
        limit = 4 * self.max_ignored_files
        for path in untracked.ignored_files:
            consider(path)
        for path in untracked.ignored_dirs:
            if len(found) > limit:
                skipped.append(SkippedFile(f"{path}/", 0, "over_bounds"))
                continue
            for current, dirs, files in os.walk(root / path):
                if len(found) > limit:
                    skipped.append(SkippedFile(f"{path}/", 0, "over_bounds"))
                    break
                rel = Path(current).relative_to(root).as_posix()
                for name in list(dirs):
                    sub = f"{rel}/{name}"
                    if name == ".git" or self._hidden(repo, sub):
                        dirs.remove(name)
                    elif name in HEAVY_FOLDERS:
                        heavy.add(sub)
                        dirs.remove(name)
                    elif os.path.islink(os.path.join(current, name)):
                        consider(sub)  # os.walk does not follow it
                for name in files:
                    if name != ".git" and not self._hidden(repo, f"{rel}/{name}"):
                        consider(f"{rel}/{name}")
        skipped.extend(SkippedFile(folder, 0, "heavy_folder") for folder in sorted(heavy))
        return found, skipped

    def _private_excludes(self, repo: ShadowRepo, work_tree: Path) -> list[str]:
        """`--exclude` options for what a snapshot never holds: our own data, credentials."""
        args: list[str] = []
        if self.data_dir.is_relative_to(work_tree):
            # A sandbox that holds our own data (the history, this store): never snapshot
            # it, nor let a restore write over it.
            args.append(f"--exclude=/{self.data_dir.relative_to(work_tree).as_posix()}/")
        # Nor credentials a sandbox holds (one that is the home folder holds ~/.ssh): no tool
        # may read them, so no copy of them is made either.
        for hidden in never_visible_to_tools():
            hidden_path = Path(hidden)
            if hidden_path != work_tree and hidden_path.is_relative_to(work_tree):
                args.append(f"--exclude=/{glob_escape(hidden_path.relative_to(work_tree))}")
        return args

    def _hidden(self, repo: ShadowRepo, path: str) -> bool:
        """True for a path (relative to the sandbox) no snapshot may hold: our data folder,
        a never-visible path, or anything inside a `.git`."""
        return inside_git_folder(path) or self._private(repo, path)

    def _private(self, repo: ShadowRepo, path: str) -> bool:
        """True for our data folder and the never-visible paths (and what is inside them)."""
        prefixes = self._hidden_prefixes.get(repo.key)
        if prefixes is None:
            prefixes = self._refresh_hidden(repo)
        return any(path == p or path.startswith(p + "/") for p in prefixes)

    def _refresh_hidden(self, repo: ShadowRepo) -> tuple[str, ...]:
        """The never-visible paths and our data folder inside the sandbox, relative to it
        (looked up again at each snapshot: the user may add some meanwhile)."""
        found: list[str] = []
        for private in (self.data_dir, *map(Path, never_visible_to_tools())):
            if private != repo.sandbox and private.is_relative_to(repo.sandbox):
                found.append(private.relative_to(repo.sandbox).as_posix())
        prefixes = tuple(found)
        self._hidden_prefixes[repo.key] = prefixes
        return prefixes

    def _unignored_files(self, repo: ShadowRepo) -> list[str]:
        """Every file git would not ignore, nested repositories included.

        Listed against an index that is always empty, so ignore rules apply to every file.
        git stops at a nested repository (a submodule, a worktree, a cloned repo) and shows it
        as `dir/`; it is listed in turn with its own ignore rules. A sandbox inside a larger
        repository (a package of a monorepo) gets that repository's rules too.
        """
        found: list[str] = []
        self._refresh_hidden(repo)
        enclosing = self._enclosing_work_tree(repo)
        if enclosing is not None:
            found, nested = self._list_level(repo, enclosing, repo.sandbox, "")
            if not found and not nested:
                # Rules such as "*" then "!*/" hide every file yet not the folder: a sandbox
                # whose every file the larger repository ignores follows its own rules only.
                enclosing = None
            pending = nested
        if enclosing is None:
            found, pending = self._list_level(repo, repo.sandbox, repo.sandbox, "")
        while pending:
            prefix = pending.pop()
            files, nested = self._list_level(
                repo, repo.sandbox / prefix, repo.sandbox / prefix, prefix
            )
            found.extend(files)
            pending.extend(nested)
            if len(found) > self.max_files:
                break
        if len(found) > self.max_files:
            raise CheckpointError(
                f"{repo.sandbox} holds more than {self.max_files} files that are not "
                "ignored: no checkpoint was taken (add a .gitignore for generated folders)"
            )
        return found

    def _list_level(
        self, repo: ShadowRepo, work_tree: Path, folder: Path, prefix: str
    ) -> tuple[list[str], list[str]]:
        """The unignored files under `folder` (of the repository whose work tree is
        `work_tree`) and its nested repositories, as paths in the sandbox."""
        args = ["ls-files", "-z", "--others", "--exclude-standard"]
        project_exclude = project_exclude_file(work_tree)
        if project_exclude is not None:
            args.append(f"--exclude-from={project_exclude}")
        args += self._private_excludes(repo, work_tree)
        # Run in `folder`, ls-files lists only what is under it, relative to it.
        listing = self._git_runner.run(
            repo, *args, work_tree=work_tree, cwd=folder, index=repo.empty_index
        )
        files: list[str] = []
        nested: list[str] = []
        for path in split_z(listing):
            (nested if path.endswith("/") else files).append(prefix + path)
        return files, nested

    def _enclosing_work_tree(self, repo: ShadowRepo) -> Path | None:
        """The work tree of a repository the sandbox is a sub-folder of, if the sandbox is
        not its own repository and that repository does not ignore it."""
        if (repo.sandbox / ".git").exists():
            return None
        top = next((p for p in repo.sandbox.parents if (p / ".git").exists()), None)
        if top is None:
            return None
        relative = repo.sandbox.relative_to(top).as_posix() + "/"
        check = self._git_runner.call(
            repo, "check-ignore", "-q", "--no-index", relative, work_tree=top, check=False
        )
        return None if check.returncode == 0 else top

    # -- restore -----------------------------------------------------------------------------
    def _reachable_target(
        self, repo: ShadowRepo, current: str, target: str, now: FolderState, wanted: FolderState
    ) -> tuple[str, list[SkippedFile]]:
        """The target tree without what a restore must not do.

        A path the target adds is "in the way" when, on disk, it (or a folder above it) is a
        file or symlink the current snapshot does not hold, or a folder with such content:
        it is left out (and listed). A path the target lacks is deleted only if the target
        would have held it: one in a folder it skipped, too large for it, or ignored when it
        did not keep every ignored file, is kept as it is (we do not know it was absent).
        """
        tracked = set(
            split_z(self._git_runner.run(repo, "ls-tree", "-r", "-z", "--name-only", current))
        )
        ignored_now = self._tree_paths(repo, now.extras_tree)
        kept: list[SkippedFile] = []
        keep_current: list[DiffEntry] = []
        for entry in self._diff_entries(repo, current, target):
            change = entry.changed_file
            if change.change == "added":
                obstacle = obstacle_size(repo.sandbox, change.path, tracked)
                if obstacle is not None:
                    kept.append(SkippedFile(change.path, obstacle, "in_the_way"))
            elif change.change == "deleted" and not knew_absent(
                wanted, change.path, change.path in ignored_now
            ):
                keep_current.append(entry)
        if not kept and not keep_current:
            return target, []
        try:
            self._git_runner.run(repo, "read-tree", target, index=repo.scratch_index)
            if kept:
                self._drop_from_index(repo, repo.scratch_index, [k.path for k in kept])
            if keep_current:
                lines = b"".join(
                    f"{e.old_mode} {e.old_id}\t".encode() + os.fsencode(e.changed_file.path) + b"\0"
                    for e in keep_current
                )
                self._git_runner.run(
                    repo,
                    "update-index",
                    "-z",
                    "--index-info",
                    input=lines,
                    index=repo.scratch_index,
                )
            reachable = (
                self._git_runner.run(repo, "write-tree", index=repo.scratch_index).decode().strip()
            )
        finally:
            repo.scratch_index.unlink(missing_ok=True)
        return reachable, kept

    def _move_work_tree(
        self, repo: ShadowRepo, now: FolderState, current: str, target: str, plain: bool
    ) -> None:
        """Make the work tree go from `current` to `target` (both trees of the whole folder).

        A two-tree read-tree moves it, and refuses (changing nothing) if a file it does not
        track would be overwritten or a symlink followed. Its index must hold `current` with
        fresh stat data: the persistent index does when no file beyond git's view is
        involved; else a scratch copy with the extra files added and refreshed.
        """
        if plain:
            self._git_runner.run(
                repo, "read-tree", "-m", "-u", current, target, work_tree=repo.sandbox
            )
            return
        try:
            shutil.copyfile(repo.index, repo.scratch_index)
            listing = self._git_runner.run(repo, "ls-tree", "-r", "-z", now.extras_tree)
            if listing:
                self._git_runner.run(
                    repo,
                    "update-index",
                    "-z",
                    "--index-info",
                    input=listing,
                    index=repo.scratch_index,
                )
            self._git_runner.call(
                repo,
                "update-index",
                "-q",
                "--refresh",
                check=False,
                index=repo.scratch_index,
                work_tree=repo.sandbox,
            )
            self._git_runner.run(
                repo,
                "read-tree",
                "-m",
                "-u",
                current,
                target,
                index=repo.scratch_index,
                work_tree=repo.sandbox,
            )
        finally:
            repo.scratch_index.unlink(missing_ok=True)

    def _combine(self, repo: ShadowRepo, state: FolderState) -> str:
        """One tree of the whole folder: git's view with the extra files added."""
        if state.extras_tree == _EMPTY_TREE:
            return state.tree
        try:
            self._git_runner.run(repo, "read-tree", state.tree, index=repo.scratch_index)
            listing = self._git_runner.run(repo, "ls-tree", "-r", "-z", state.extras_tree)
            self._git_runner.run(
                repo,
                "update-index",
                "-z",
                "--index-info",
                input=listing,
                index=repo.scratch_index,
            )
            return (
                self._git_runner.run(repo, "write-tree", index=repo.scratch_index).decode().strip()
            )
        finally:
            repo.scratch_index.unlink(missing_ok=True)

    def _tree_paths(self, repo: ShadowRepo, tree: str) -> set[str]:
        if tree == _EMPTY_TREE:
            return set()
        return set(split_z(self._git_runner.run(repo, "ls-tree", "-r", "-z", "--name-only", tree)))

    def _state_of(self, repo: ShadowRepo, checkpoint: Checkpoint) -> FolderState:
        """The state a checkpoint holds (its extras and meta read from its parent commit)."""
        extras = checkpoint.coverage.extras
        if extras is None:
            return FolderState(
                checkpoint.tree,
                _EMPTY_TREE,
                "",
                FolderMeta(),
                checkpoint.coverage,
                checkpoint.skipped,
            )
        meta = self._meta_cache.get(extras)
        raw = self._git_runner.run(repo, "cat-file", "commit", extras)
        header, _sep, message = raw.partition(b"\n\n")
        extras_tree = header.split(b"\n", 1)[0].split(b" ", 1)[1].decode().strip()
        if meta is None:
            meta = FolderMeta.from_text(message)
            self._meta_cache[extras] = meta
        return FolderState(
            checkpoint.tree, extras_tree, extras, meta, checkpoint.coverage, checkpoint.skipped
        )

    def _changes(
        self,
        repo: ShadowRepo,
        old: FolderState,
        new: FolderState,
        *,
        entries: tuple[str, str] | None = None,
    ) -> list[ChangedFile]:
        """What differs from `old` to `new`: files (those beyond git's view marked
        `ignored`), permission bits, empty folders (as `path/`).

        `entries`: the two whole-folder trees to compare instead (a restore's, whose target
        may leave some paths out).
        """
        extra_paths = self._tree_paths(repo, old.extras_tree) | self._tree_paths(
            repo, new.extras_tree
        )
        changed: dict[str, ChangedFile] = {}
        if entries is not None:
            for entry in self._diff_entries(repo, *entries):
                change = entry.changed_file
                changed[change.path] = ChangedFile(
                    change.path, change.change, change.path in extra_paths
                )
        else:
            # The object each side had at a path: a file that moved between git's view and
            # beyond it (its ignore rule changed) is one change, or none if it is the same.
            before: dict[str, str] = {}
            after: dict[str, str] = {}
            for tree_pair, ignored in (
                ((old.tree, new.tree), False),
                ((old.extras_tree, new.extras_tree), True),
            ):
                if tree_pair[0] == tree_pair[1]:
                    continue
                for entry in self._diff_entries(repo, *tree_pair):
                    change = entry.changed_file
                    if change.change != "added":
                        before[change.path] = f"{entry.old_mode} {entry.old_id}"
                    if change.change != "deleted":
                        after[change.path] = f"{entry.new_mode} {entry.new_id}"
                    seen = changed.get(change.path)
                    if seen is not None and seen.change != change.change:
                        changed[change.path] = ChangedFile(change.path, "modified", True)
                    else:
                        changed[change.path] = ChangedFile(change.path, change.change, ignored)
            for path in [p for p in changed if p in before and p in after]:
                if before[path] == after[path]:
                    del changed[path]
        # A checkpoint older than the extras recorded no permission bits: none to compare.
        compared = old.extras_commit and new.extras_commit
        for path in sorted(set(old.meta.modes) | set(new.meta.modes) if compared else ()):
            if path in changed:
                continue
            if old.meta.modes.get(path) != new.meta.modes.get(path):
                changed[path] = ChangedFile(path, "modified", path in extra_paths)
        old_dirs, new_dirs = set(old.meta.empty_dirs), set(new.meta.empty_dirs)
        touched = "\0".join(changed)
        for folder, kind in (
            *((d, "added") for d in sorted(new_dirs - old_dirs)),
            *((d, "deleted") for d in sorted(old_dirs - new_dirs)),
        ):
            # A folder that only went from empty to holding files (or back) is shown by
            # its files.
            if f"{folder}/" not in touched and not inside_any(folder, old_dirs & new_dirs):
                changed[folder + "/"] = ChangedFile(folder + "/", cast(ChangeKind, kind))
        return sorted(changed.values(), key=lambda c: c.path)

    def _diff_trees(self, repo: ShadowRepo, old: str, new: str) -> list[ChangedFile]:
        return [entry.changed_file for entry in self._diff_entries(repo, old, new)]

    def _diff_entries(self, repo: ShadowRepo, old: str, new: str) -> list[DiffEntry]:
        raw = self._git_runner.run(repo, "diff-tree", "-r", "-z", "--no-renames", old, new)
        fields = raw.split(b"\0")
        entries: list[DiffEntry] = []
        # -z output, per change: ":<old mode> <new mode> <old id> <new id> <status>" NUL
        # "<path>" NUL.
        for header, path in zip(fields[0::2], fields[1::2], strict=False):
            if not header.startswith(b":"):
                continue
            old_mode, new_mode, old_id, new_id, status = header[1:].decode().split()
            change = _CHANGE_BY_STATUS.get(status[:1], "modified")
            entries.append(
                DiffEntry(
                    ChangedFile(os.fsdecode(path), change),
                    "" if change == "deleted" else new_id,
                    old_mode,
                    old_id,
                    new_mode,
                )
            )
        return entries

    # -- pins ----------------------------------------------------------------------------------
    def _git_folder_files(self, repo: ShadowRepo) -> GitFolderFiles:
        return GitFolderFiles(repo.home, self.max_file_bytes)

    def _git_folder_paths(self, run_id: str) -> set[str]:
        """Every path inside a `.git` the run's file tools changed (see `pin`)."""
        steps = self.checkpoints(run_id)
        if not steps:
            return set()
        repo = self._repo(steps[0].sandbox_root)
        return self._git_folder_files(repo).paths(cp.id for cp in steps)

    def _keep_git_folder_files(
        self, repo: ShadowRepo, checkpoint_id: str, paths: Collection[str]
    ) -> list[str]:
        """Keep `paths` (inside a `.git`) in the side store as they are now; returns what
        could not be kept."""
        if not paths:
            return []
        try:
            return self._git_folder_files(repo).keep(checkpoint_id, repo.sandbox, paths)
        except (OSError, ToolError) as exc:
            return [f"{', '.join(sorted(paths))}: {exc}: a change cannot be undone"]

    def _run_pins(self, run_id: str) -> set[str]:
        """Every path the run's file tools changed (see `pin`): every later snapshot of the
        run, and of a restore of it, holds them."""
        pins: set[str] = set()
        for checkpoint in self.checkpoints(run_id):
            pins.update(checkpoint.coverage.pinned)
        return pins

    def _pin_into(self, repo: ShadowRepo, checkpoint: Checkpoint, paths: list[str]) -> list[str]:
        """Record `paths` in `checkpoint`: those it does not know add to its extras as they
        are now. Returns what could not be kept."""
        new = [p for p in paths if p not in checkpoint.coverage.pinned]
        if not new:
            return []
        self._refresh_hidden(repo)
        state = self._state_of(repo, checkpoint)
        held = self._held(repo, state, new)
        ignored = self._ignored_paths(repo, [p for p in new if p not in held])
        problems: list[str] = []
        add: list[str] = []
        modes = dict(state.meta.modes)
        for path in new:
            if path in held or knew_absent(state, path, path in ignored):
                continue
            try:
                info = os.lstat(repo.sandbox / path)
            except OSError:
                continue  # absent now, and the checkpoint does not say otherwise
            if stat.S_ISREG(info.st_mode) and info.st_size > self.max_file_bytes:
                problems.append(
                    f"{path} ({info.st_size / 1048576:.1f} MiB) is larger than checkpoints "
                    f"keep ({self.max_file_bytes / 1048576:.0f} MiB): a change to it cannot "
                    "be undone"
                )
                continue
            if not (stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode)):
                continue
            add.append(path)
            if stat.S_ISREG(info.st_mode):
                note_bits(modes, path, info, state.meta.umask)
        coverage = Coverage(
            checkpoint.coverage.extras,
            checkpoint.coverage.ignored_held,
            tuple(sorted({*checkpoint.coverage.pinned, *new})),
        )
        commit = checkpoint.commit
        if add:
            try:
                self._git_runner.run(repo, "read-tree", state.extras_tree, index=repo.scratch_index)
                self._git_runner.run(
                    repo,
                    "update-index",
                    "--add",
                    "-z",
                    "--stdin",
                    input=join_z(add),
                    index=repo.scratch_index,
                    work_tree=repo.sandbox,
                )
                extras_tree = (
                    self._git_runner.run(repo, "write-tree", index=repo.scratch_index)
                    .decode()
                    .strip()
                )
            finally:
                repo.scratch_index.unlink(missing_ok=True)
            meta = FolderMeta(state.meta.umask, modes, state.meta.empty_dirs)
            extras = (
                self._git_runner.run(
                    repo, "commit-tree", extras_tree, "-F", "-", input=meta.to_text()
                )
                .decode()
                .strip()
            )
            commit = (
                self._git_runner.run(
                    repo, "commit-tree", checkpoint.tree, "-p", extras, "-m", _MESSAGE
                )
                .decode()
                .strip()
            )
            self._git_runner.run(repo, "update-ref", _REF_PREFIX + checkpoint.id, commit)
            coverage = Coverage(extras, coverage.ignored_held, coverage.pinned)
        with self._catalog.connect() as conn:
            conn.execute(
                "UPDATE checkpoints SET commit_id = ?, coverage = ? WHERE id = ?",
                (commit, coverage.to_json(), checkpoint.id),
            )
        return problems

    def _held(self, repo: ShadowRepo, state: FolderState, paths: list[str]) -> set[str]:
        """Those of `paths` the state holds (in git's view or beyond)."""
        trees = [state.tree] + ([state.extras_tree] if state.extras_tree != _EMPTY_TREE else [])
        queries = [(path, f"{tree}:{path}") for path in paths for tree in trees]
        report = self._git_runner.run(
            repo,
            "cat-file",
            "--batch-check=%(objecttype)",
            input=b"".join(os.fsencode(q) + b"\n" for _p, q in queries),
        )
        answers = report.decode(errors="replace").splitlines()
        return {
            path
            for (path, _q), answer in zip(queries, answers, strict=False)
            if answer in ("blob", "commit")
        }

    def _ignored_paths(self, repo: ShadowRepo, paths: list[str]) -> set[str]:
        """Those of `paths` the sandbox's ignore rules ignore."""
        if not paths:
            return set()
        exclude = project_exclude_file(repo.sandbox)
        settings = ["-c", f"core.excludesFile={exclude}"] if exclude is not None else []
        check = self._git_runner.call(
            repo,
            *settings,
            "check-ignore",
            "--no-index",
            "-z",
            "--stdin",
            input=join_z(paths),
            work_tree=repo.sandbox,
            index=repo.empty_index,
            check=False,
        )
        return set(split_z(check.stdout))

    def _check_objects(
        self, repo: ShadowRepo, checkpoint: Checkpoint, object_ids: list[str]
    ) -> None:
        if not object_ids:
            return
        report = self._git_runner.run(
            repo,
            "cat-file",
            "--batch-check=%(objectname)",
            input="".join(f"{oid}\n" for oid in object_ids).encode(),
        )
        missing = [line.split()[0] for line in report.decode().splitlines() if "missing" in line]
        if missing:
            raise CheckpointError(
                f"checkpoint {checkpoint.id} is damaged: {len(missing)} of its files are missing "
                f"from {repo.git_dir}; nothing was restored"
            )

    # -- repositories ------------------------------------------------------------------------
    def _repo(self, sandbox_root: str | os.PathLike[str]) -> ShadowRepo:
        path = Path(sandbox_root)
        if not path.exists():
            raise CheckpointError(f"{path} does not exist: no checkpoint of it can be taken")
        if not path.is_dir():
            raise CheckpointError(f"{path} is not a directory: checkpoints are of folders")
        resolved = path.resolve()
        key = hashlib.sha256(os.fsencode(os.path.normcase(str(resolved)))).hexdigest()
        return ShadowRepo(key, self.root / key, resolved)

    def _check_belongs(self, repo: ShadowRepo, checkpoint: Checkpoint) -> None:
        if Path(checkpoint.sandbox_root) != repo.sandbox:
            raise CheckpointError(
                f"checkpoint {checkpoint.id} is of {checkpoint.sandbox_root}, not {repo.sandbox}"
            )

    def _ensure_repo(self, repo: ShadowRepo) -> None:
        """Create the repository if need be, and clear lock files a killed git left.

        Called under the sandbox's lock, so no git command of ours runs on the repository:
        any `*.lock` there is stale, and would make every later snapshot fail. A damaged
        repository is found when a git command fails (see _snapshot_locked).
        """
        if not (repo.git_dir / "HEAD").is_file():
            self._create(repo)
            return
        for stale in repo.git_dir.glob("*.lock"):
            log.warning("removing %s, left by a git command that did not finish", stale)
            stale.unlink(missing_ok=True)

    def _create(self, repo: ShadowRepo) -> None:
        repo.home.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(repo.git_dir, ignore_errors=True)
        self._forget(repo)
        subprocess.run(
            [self.git, "init", "--quiet", "--bare", "--template=", str(repo.git_dir)],
            env=self._git_runner.env(),
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            check=True,
        )
        settings = {
            "core.bare": "false",
            "core.autocrlf": "false",
            "core.safecrlf": "false",
            "core.fsmonitor": "false",
            "core.untrackedCache": "false",
            "core.logAllRefUpdates": "false",
            "core.hooksPath": os.devnull,
            "commit.gpgSign": "false",
            "gc.auto": "0",
            "gc.autoDetach": "false",
            "maintenance.auto": "false",
        }
        if sys.platform != "win32":
            settings["core.fileMode"] = "true"
            settings["core.symlinks"] = "true"
        else:
            settings["core.longpaths"] = "true"
        for name, value in settings.items():
            self._git_runner.run(repo, "config", name, value)
        info = repo.git_dir / "info"
        info.mkdir(exist_ok=True)
        (info / "attributes").write_text(_ATTRIBUTES, encoding="utf-8")
        (repo.home / "sandbox").write_text(str(repo.sandbox), encoding="utf-8")

    def _recreate(self, repo: ShadowRepo, reason: str) -> str:
        with self._catalog.connect() as conn:
            lost = conn.execute("DELETE FROM checkpoints WHERE repo = ?", (repo.key,)).rowcount
        self._create(repo)
        return (
            f"the checkpoint repository of {repo.sandbox} was damaged ({reason}); it was "
            f"recreated at {repo.git_dir} and its {lost} earlier checkpoint(s) are lost"
        )

    def _healthy(self, repo: ShadowRepo) -> bool:
        check = self._git_runner.call(
            repo, "fsck", "--connectivity-only", "--no-dangling", check=False
        )
        return check.returncode == 0

    def _object_exists(self, repo: ShadowRepo, object_id: str) -> bool:
        probe = self._git_runner.call(repo, "cat-file", "-e", f"{object_id}^{{tree}}", check=False)
        return probe.returncode == 0

    def _drop_refs_except(self, repo: ShadowRepo, keep_ids: set[str]) -> None:
        listing = self._git_runner.run(repo, "for-each-ref", "--format=%(refname)", _REF_PREFIX)
        doomed = [
            ref
            for ref in listing.decode().splitlines()
            if ref and ref[len(_REF_PREFIX) :] not in keep_ids
        ]
        if doomed:
            commands = "".join(f"delete {ref}\n" for ref in doomed).encode()
            self._git_runner.run(repo, "update-ref", "--stdin", input=commands)

    def _drop_from_index(self, repo: ShadowRepo, index: Path, paths: Iterable[str]) -> None:
        """Take `paths` out of `index`; the files themselves stay as they are."""
        self._git_runner.run(
            repo,
            "update-index",
            "--force-remove",
            "-z",
            "--stdin",
            input=join_z(paths),
            index=index,
            work_tree=repo.sandbox,
        )

    @contextmanager
    def _locked(self, repo: ShadowRepo) -> Iterator[None]:
        repo.home.mkdir(parents=True, exist_ok=True)
        with file_lock(repo.home / "lock"):
            yield
