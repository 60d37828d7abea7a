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
import sqlite3
import stat
import subprocess
import sys
import time
import uuid
from collections.abc import Collection, Iterable, Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypedDict, Unpack, cast

from ..workspace.command_policy import never_visible_to_tools
from ..workspace.private import keep_private, private_folder
from .changes import ChangedFile, ChangeKind
from .history import default_history_path

log = logging.getLogger(__name__)

DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024
DEFAULT_MAX_FILES = 200_000
CATALOG_FILE_NAME = "catalog.sqlite3"
CATALOG_VERSION = 1
GIT_TIMEOUT_S = 600.0

CheckpointKind = Literal["iteration", "end", "restore"]
SkipReason = Literal["too_large", "unreadable", "in_the_way"]

_REF_PREFIX = "refs/cleveragents/checkpoints/"
# Commits carry a fixed date so that the same tree always gives the same commit id: a
# snapshot of an unchanged folder writes no object at all. The real time is in the catalog.
_FIXED_DATE = "946684800 +0000"
# Highest-precedence attributes: store and write bytes exactly as they are on disk, whatever
# the project's .gitattributes asks for (eol conversion, LFS or other filter drivers).
_ATTRIBUTES = "* -text -filter -ident !eol !working-tree-encoding\n"
_CHANGE_BY_STATUS: dict[str, ChangeKind] = {
    "A": "added",
    "D": "deleted",
    "M": "modified",
    "T": "modified",
}


class CheckpointError(Exception):
    """A checkpoint could not be taken, read or restored; the message says why."""


class CheckpointsUnavailable(CheckpointError):
    """Checkpoints cannot work on this machine (git is missing or broken)."""


class RestoreFailed(CheckpointError):
    """A restore stopped part way: `undo` holds the folder as it was before it began."""

    def __init__(self, message: str, undo: Checkpoint) -> None:
        super().__init__(message)
        self.undo = undo


class _GitFailed(CheckpointError):
    pass


def default_data_dir() -> Path:
    """The cleveragents user data folder (the one that holds the run history)."""
    return default_history_path().parent


@dataclass(frozen=True, slots=True)
class SkippedFile:
    """A file a snapshot or restore left alone, and why."""

    path: str
    size: int
    reason: SkipReason

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "size": self.size, "reason": self.reason}


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

    @property
    def note(self) -> str | None:
        """A sentence about what this checkpoint does not hold, or None if it holds all."""
        return _skipped_note(self.skipped)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "run_id": self.run_id,
            "kind": self.kind,
            "iteration": self.iteration,
            "sandbox_root": self.sandbox_root,
            "commit": self.commit,
            "tree": self.tree,
            "created_at": self.created_at,
            "skipped": [skipped.to_dict() for skipped in self.skipped],
            "restored_to": self.restored_to,
            "warnings": list(self.warnings),
            "note": self.note,
        }


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


class _GitOptions(TypedDict, total=False):
    input: bytes  # fed to the command's stdin
    work_tree: Path  # GIT_WORK_TREE (and the working directory unless `cwd` is given)
    cwd: Path
    index: Path  # GIT_INDEX_FILE, when not the repository's persistent index


@dataclass(frozen=True, slots=True)
class _DiffEntry:
    changed_file: ChangedFile
    new_id: str  # the object a restore writes at the path ("" when it deletes it)


@dataclass(frozen=True, slots=True)
class _Repo:
    """The shadow repository of one sandbox folder."""

    key: str
    home: Path  # <store>/<key>: the lock file, the sandbox path, the git dir
    sandbox: Path

    @property
    def git_dir(self) -> Path:
        return self.home / "git"

    @property
    def index(self) -> Path:
        return self.git_dir / "index"

    @property
    def empty_index(self) -> Path:
        # Never written: listing files against an empty index shows every unignored file.
        return self.git_dir / "empty-index"

    @property
    def scratch_index(self) -> Path:
        return self.git_dir / "scratch-index"


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
        self._home_env = self.root / "git-home"  # HOME for git: no user config is found
        self._home_env.mkdir(exist_ok=True)
        try:
            version = subprocess.run(
                [self.git, "--version"],
                env=self._env(),
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
        self._catalog_path = self.root / CATALOG_FILE_NAME
        self._init_catalog()

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
            return self._snapshot_locked(repo, run_id, kind, iteration, restored_to=None)

    def finish_run(self, sandbox_root: str | os.PathLike[str], run_id: str) -> Checkpoint | None:
        """Record the state a run left, if it took any checkpoint (else None: it changed
        nothing). `changed_files(run_id)` compares this with the run's first checkpoint."""
        if not any(cp.kind == "iteration" for cp in self.checkpoints(run_id)):
            return None
        return self.snapshot(sandbox_root, run_id, None, kind="end")

    def checkpoints(self, run_id: str) -> list[Checkpoint]:
        """A run's (or a restore's) checkpoints, oldest first."""
        with self._catalog() as conn:
            rows = conn.execute(
                "SELECT * FROM checkpoints WHERE run_id = ? ORDER BY seq", (run_id,)
            ).fetchall()
        return [_checkpoint_from_row(row) for row in rows]

    def checkpoint(self, checkpoint_id: str) -> Checkpoint:
        """The checkpoint with this id; KeyError if there is none (or it was pruned)."""
        with self._catalog() as conn:
            row = conn.execute(
                "SELECT * FROM checkpoints WHERE id = ?", (checkpoint_id,)
            ).fetchone()
        if row is None:
            raise KeyError(checkpoint_id)
        return _checkpoint_from_row(row)

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
            if to is None:
                target, _skipped = self._write_tree(repo)
            else:
                self._check_belongs(repo, to)
                target = to.tree
            return self._diff_trees(repo, from_checkpoint.tree, target)

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
            if dry_run:
                current, _skipped = self._write_tree(repo)
            else:
                undo = self._snapshot_locked(
                    repo,
                    restore_id or f"restore-{uuid.uuid4().hex}",
                    "restore",
                    None,
                    restored_to=checkpoint.id,
                )
                current = undo.tree
            target, kept = self._reachable_target(repo, current, checkpoint.tree)
            changes = self._diff_entries(repo, current, target)
            # Every object the restore will write must be there before anything is written.
            self._check_objects(repo, checkpoint, [c.new_id for c in changes if c.new_id])
            changed = [c.changed_file for c in changes]
            if changes and undo is not None:
                # The index holds `current` with fresh stat data: a two-tree read-tree moves
                # the work tree from it to the target, and refuses (changing nothing) if a
                # file it does not track would be overwritten or a symlink would be followed.
                try:
                    self._run(
                        repo, "read-tree", "-m", "-u", current, target, work_tree=repo.sandbox
                    )
                except _GitFailed as exc:
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
        with self._catalog() as conn:
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
            repo = _Repo(home.name, home, Path(_read_text(home / "sandbox") or home))
            with self._locked(repo):
                with self._catalog() as conn:
                    rows = conn.execute(
                        "SELECT id, run_id FROM checkpoints WHERE repo = ?", (repo.key,)
                    ).fetchall()
                    gone = [str(cp_id) for cp_id, run_id in rows if run_id in doomed]
                    conn.executemany("DELETE FROM checkpoints WHERE id = ?", [(i,) for i in gone])
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
                    self._run(repo, "reflog", "expire", "--expire=now", "--all")
                    self._run(repo, "gc", "--prune=now", "--quiet")
                except _GitFailed as exc:
                    # One damaged repository must not stop the others being pruned; its
                    # next snapshot finds the damage and recreates it.
                    log.warning("pruning checkpoints of %s: %s", repo.sandbox, exc)
        with self._catalog() as conn:
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
            size = _tree_size(entry, allocated=True)
            total += size
            sandbox = _read_text(entry / "sandbox") if entry.is_dir() else None
            if sandbox is not None and (entry / "git").is_dir():
                by_sandbox[sandbox] = by_sandbox.get(sandbox, 0) + size
        return DiskUsage(total, by_sandbox)

    # -- snapshots ---------------------------------------------------------------------------
    def _snapshot_locked(
        self,
        repo: _Repo,
        run_id: str,
        kind: CheckpointKind,
        iteration: int | None,
        *,
        restored_to: str | None,
    ) -> Checkpoint:
        warnings: list[str] = []
        self._ensure_repo(repo)
        try:
            tree, skipped = self._write_tree(repo)
        except _GitFailed as first:
            # The index is only a cache (of stat data): drop it, then look at the repository.
            repo.index.unlink(missing_ok=True)
            if not self._healthy(repo):
                warnings.append(self._recreate(repo, str(first)))
            tree, skipped = self._write_tree(repo)
        commit = self._run(repo, "commit-tree", tree, "-m", "cleveragents checkpoint").decode()
        commit = commit.strip()
        checkpoint = Checkpoint(
            id=uuid.uuid4().hex,
            run_id=run_id,
            kind=kind,
            iteration=iteration,
            sandbox_root=str(repo.sandbox),
            commit=commit,
            tree=tree,
            created_at=time.time(),
            skipped=tuple(skipped),
            restored_to=restored_to,
            warnings=tuple(warnings),
        )
        self._run(repo, "update-ref", _REF_PREFIX + checkpoint.id, commit)
        with self._catalog() as conn:
            conn.execute(
                "INSERT INTO checkpoints (id, run_id, kind, iteration, sandbox, repo, commit_id,"
                " tree_id, created_at, skipped, restored_to, warnings)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    checkpoint.id,
                    run_id,
                    kind,
                    iteration,
                    checkpoint.sandbox_root,
                    repo.key,
                    commit,
                    tree,
                    checkpoint.created_at,
                    json.dumps([s.to_dict() for s in skipped], ensure_ascii=True),
                    restored_to,
                    json.dumps(warnings, ensure_ascii=True),
                ),
            )
        for warning in warnings:
            log.warning("%s", warning)
        if checkpoint.note:
            log.info("checkpoint of %s: %s", repo.sandbox, checkpoint.note)
        return checkpoint

    def _write_tree(self, repo: _Repo) -> tuple[str, list[SkippedFile]]:
        """Bring the persistent index in line with the folder and write its tree."""
        paths, skipped = self._snapshot_paths(repo)
        listed = set(paths)
        indexed = _split_z(self._run(repo, "ls-files", "-z", work_tree=repo.sandbox))
        stale = [path for path in indexed if path not in listed]
        if stale:
            self._drop_from_index(repo, repo.index, stale)
        if paths:
            # Unchanged files are recognised by their stat data and not read again.
            self._run(
                repo,
                "update-index",
                "--add",
                "--remove",
                "--replace",
                "-z",
                "--stdin",
                input=_join_z(paths),
                work_tree=repo.sandbox,
            )
        tree = self._run(repo, "write-tree", work_tree=repo.sandbox).decode().strip()
        return tree, skipped

    def _snapshot_paths(self, repo: _Repo) -> tuple[list[str], list[SkippedFile]]:
        """The files a snapshot holds, and those it leaves out with the reason."""
        paths: list[str] = []
        skipped: list[SkippedFile] = []
        root = str(repo.sandbox)
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
            elif not stat.S_ISLNK(info.st_mode):
                continue
            paths.append(path)
        return paths, skipped

    def _unignored_files(self, repo: _Repo) -> list[str]:
        """Every file git would not ignore, nested repositories included.

        Listed against an index that is always empty, so ignore rules apply to every file.
        git stops at a nested repository (a submodule, a worktree, a cloned repo) and shows it
        as `dir/`; it is listed in turn with its own ignore rules. A sandbox inside a larger
        repository (a package of a monorepo) gets that repository's rules too.
        """
        found: list[str] = []
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
        self, repo: _Repo, work_tree: Path, folder: Path, prefix: str
    ) -> tuple[list[str], list[str]]:
        """The unignored files under `folder` (of the repository whose work tree is
        `work_tree`) and its nested repositories, as paths in the sandbox."""
        args = ["ls-files", "-z", "--others", "--exclude-standard"]
        project_exclude = _project_exclude_file(work_tree)
        if project_exclude is not None:
            args.append(f"--exclude-from={project_exclude}")
        if self.data_dir.is_relative_to(work_tree):
            # A sandbox that holds our own data (the history, this store): never snapshot
            # it, nor let a restore write over it.
            args.append(f"--exclude=/{self.data_dir.relative_to(work_tree).as_posix()}/")
        # Nor credentials a sandbox holds (one that is the home folder holds ~/.ssh): no tool
        # may read them, so no copy of them is made either.
        for hidden in never_visible_to_tools():
            hidden_path = Path(hidden)
            if hidden_path != work_tree and hidden_path.is_relative_to(work_tree):
                args.append(f"--exclude=/{_glob_escape(hidden_path.relative_to(work_tree))}")
        # Run in `folder`, ls-files lists only what is under it, relative to it.
        listing = self._run(repo, *args, work_tree=work_tree, cwd=folder, index=repo.empty_index)
        files: list[str] = []
        nested: list[str] = []
        for path in _split_z(listing):
            (nested if path.endswith("/") else files).append(prefix + path)
        return files, nested

    def _enclosing_work_tree(self, repo: _Repo) -> Path | None:
        """The work tree of a repository the sandbox is a sub-folder of, if the sandbox is
        not its own repository and that repository does not ignore it."""
        if (repo.sandbox / ".git").exists():
            return None
        top = next((p for p in repo.sandbox.parents if (p / ".git").exists()), None)
        if top is None:
            return None
        relative = repo.sandbox.relative_to(top).as_posix() + "/"
        check = self._git(
            repo, "check-ignore", "-q", "--no-index", relative, work_tree=top, check=False
        )
        return None if check.returncode == 0 else top

    # -- restore -----------------------------------------------------------------------------
    def _reachable_target(
        self, repo: _Repo, current: str, target: str
    ) -> tuple[str, list[SkippedFile]]:
        """The target tree without files that would overwrite something no checkpoint holds.

        A path the target adds is "in the way" when, on disk, it (or a folder above it) is a
        file or symlink the current snapshot does not hold, or a folder with such content.
        """
        tracked = set(_split_z(self._run(repo, "ls-tree", "-r", "-z", "--name-only", current)))
        kept: list[SkippedFile] = []
        for change in self._diff_trees(repo, current, target):
            if change.change != "added":
                continue
            obstacle = _obstacle(repo.sandbox, change.path, tracked)
            if obstacle is not None:
                kept.append(SkippedFile(change.path, obstacle, "in_the_way"))
        if not kept:
            return target, []
        try:
            self._run(repo, "read-tree", target, index=repo.scratch_index)
            self._drop_from_index(repo, repo.scratch_index, [k.path for k in kept])
            reachable = self._run(repo, "write-tree", index=repo.scratch_index).decode().strip()
        finally:
            repo.scratch_index.unlink(missing_ok=True)
        return reachable, kept

    def _diff_trees(self, repo: _Repo, old: str, new: str) -> list[ChangedFile]:
        return [entry.changed_file for entry in self._diff_entries(repo, old, new)]

    def _diff_entries(self, repo: _Repo, old: str, new: str) -> list[_DiffEntry]:
        raw = self._run(repo, "diff-tree", "-r", "-z", "--no-renames", old, new)
        fields = raw.split(b"\0")
        entries: list[_DiffEntry] = []
        # -z output, per change: ":<old mode> <new mode> <old id> <new id> <status>" NUL
        # "<path>" NUL.
        for header, path in zip(fields[0::2], fields[1::2], strict=False):
            if not header.startswith(b":"):
                continue
            _old_mode, _new_mode, _old_id, new_id, status = header[1:].decode().split()
            change = _CHANGE_BY_STATUS.get(status[:1], "modified")
            entries.append(
                _DiffEntry(
                    ChangedFile(os.fsdecode(path), change), "" if change == "deleted" else new_id
                )
            )
        return entries

    def _check_objects(self, repo: _Repo, checkpoint: Checkpoint, object_ids: list[str]) -> None:
        if not object_ids:
            return
        report = self._run(
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
    def _repo(self, sandbox_root: str | os.PathLike[str]) -> _Repo:
        path = Path(sandbox_root)
        if not path.exists():
            raise CheckpointError(f"{path} does not exist: no checkpoint of it can be taken")
        if not path.is_dir():
            raise CheckpointError(f"{path} is not a directory: checkpoints are of folders")
        resolved = path.resolve()
        key = hashlib.sha256(os.fsencode(os.path.normcase(str(resolved)))).hexdigest()
        return _Repo(key, self.root / key, resolved)

    def _check_belongs(self, repo: _Repo, checkpoint: Checkpoint) -> None:
        if Path(checkpoint.sandbox_root) != repo.sandbox:
            raise CheckpointError(
                f"checkpoint {checkpoint.id} is of {checkpoint.sandbox_root}, not {repo.sandbox}"
            )

    def _ensure_repo(self, repo: _Repo) -> None:
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

    def _create(self, repo: _Repo) -> None:
        repo.home.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(repo.git_dir, ignore_errors=True)
        subprocess.run(
            [self.git, "init", "--quiet", "--bare", "--template=", str(repo.git_dir)],
            env=self._env(),
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
            self._run(repo, "config", name, value)
        info = repo.git_dir / "info"
        info.mkdir(exist_ok=True)
        (info / "attributes").write_text(_ATTRIBUTES, encoding="utf-8")
        (repo.home / "sandbox").write_text(str(repo.sandbox), encoding="utf-8")

    def _recreate(self, repo: _Repo, reason: str) -> str:
        with self._catalog() as conn:
            lost = conn.execute("DELETE FROM checkpoints WHERE repo = ?", (repo.key,)).rowcount
        self._create(repo)
        return (
            f"the checkpoint repository of {repo.sandbox} was damaged ({reason}); it was "
            f"recreated at {repo.git_dir} and its {lost} earlier checkpoint(s) are lost"
        )

    def _healthy(self, repo: _Repo) -> bool:
        check = self._git(repo, "fsck", "--connectivity-only", "--no-dangling", check=False)
        return check.returncode == 0

    def _object_exists(self, repo: _Repo, object_id: str) -> bool:
        probe = self._git(repo, "cat-file", "-e", f"{object_id}^{{tree}}", check=False)
        return probe.returncode == 0

    def _drop_refs_except(self, repo: _Repo, keep_ids: set[str]) -> None:
        listing = self._run(repo, "for-each-ref", "--format=%(refname)", _REF_PREFIX)
        doomed = [
            ref
            for ref in listing.decode().splitlines()
            if ref and ref[len(_REF_PREFIX) :] not in keep_ids
        ]
        if doomed:
            commands = "".join(f"delete {ref}\n" for ref in doomed).encode()
            self._run(repo, "update-ref", "--stdin", input=commands)

    # -- git ---------------------------------------------------------------------------------
    def _env(self, repo: _Repo | None = None, **extra: str) -> dict[str, str]:
        env = {
            "PATH": os.environ.get("PATH", os.defpath),
            "HOME": str(self._home_env),
            "XDG_CONFIG_HOME": str(self._home_env),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_TERMINAL_PROMPT": "0",
            "LC_ALL": "C",
            "GIT_AUTHOR_NAME": "cleveragents",
            "GIT_AUTHOR_EMAIL": "checkpoints@cleveragents.invalid",
            "GIT_AUTHOR_DATE": _FIXED_DATE,
            "GIT_COMMITTER_NAME": "cleveragents",
            "GIT_COMMITTER_EMAIL": "checkpoints@cleveragents.invalid",
            "GIT_COMMITTER_DATE": _FIXED_DATE,
            # Above any repository config (git >= 2.31): even a config rewritten behind our
            # back cannot make these commands run a program (fsmonitor, reference hooks).
            "GIT_CONFIG_COUNT": "2",
            "GIT_CONFIG_KEY_0": "core.fsmonitor",
            "GIT_CONFIG_VALUE_0": "false",
            "GIT_CONFIG_KEY_1": "core.hooksPath",
            "GIT_CONFIG_VALUE_1": os.devnull,
        }
        for name in ("SYSTEMROOT", "TEMP", "TMP", "TMPDIR"):
            if name in os.environ:
                env[name] = os.environ[name]
        if repo is not None:
            env["GIT_DIR"] = str(repo.git_dir)
            env["GIT_INDEX_FILE"] = str(repo.index)
        env.update(extra)
        return env

    def _git(
        self, repo: _Repo, *args: str, check: bool = True, **options: Unpack[_GitOptions]
    ) -> subprocess.CompletedProcess[bytes]:
        extra: dict[str, str] = {}
        work_tree = options.get("work_tree")
        if work_tree is not None:
            extra["GIT_WORK_TREE"] = str(work_tree)
        index = options.get("index")
        if index is not None:
            extra["GIT_INDEX_FILE"] = str(index)
        try:
            completed = subprocess.run(
                [self.git, *args],
                input=options.get("input"),
                cwd=options.get("cwd") or work_tree or repo.git_dir,
                env=self._env(repo, **extra),
                capture_output=True,
                timeout=GIT_TIMEOUT_S,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise _GitFailed(f"git {args[0]} failed for {repo.sandbox}: {exc}") from exc
        if check and completed.returncode != 0:
            detail = completed.stderr.decode(errors="replace").strip()
            raise _GitFailed(f"git {args[0]} failed for {repo.sandbox}: {detail}")
        return completed

    def _run(self, repo: _Repo, *args: str, **options: Unpack[_GitOptions]) -> bytes:
        """A git command's output; _GitFailed if it fails."""
        return self._git(repo, *args, **options).stdout

    def _drop_from_index(self, repo: _Repo, index: Path, paths: Iterable[str]) -> None:
        """Take `paths` out of `index`; the files themselves stay as they are."""
        self._run(
            repo,
            "update-index",
            "--force-remove",
            "-z",
            "--stdin",
            input=_join_z(paths),
            index=index,
            work_tree=repo.sandbox,
        )

    @contextmanager
    def _locked(self, repo: _Repo) -> Iterator[None]:
        repo.home.mkdir(parents=True, exist_ok=True)
        with _file_lock(repo.home / "lock"):
            yield

    # -- catalog -----------------------------------------------------------------------------
    def _init_catalog(self) -> None:
        try:
            with self._catalog() as conn:
                conn.execute("PRAGMA journal_mode=WAL")
                version = int(conn.execute("PRAGMA user_version").fetchone()[0])
                if version > CATALOG_VERSION:
                    raise CheckpointsUnavailable(
                        f"checkpoint catalog {self._catalog_path} has version {version}; this "
                        f"cleveragents knows up to {CATALOG_VERSION}. Upgrade cleveragents."
                    )
                conn.execute(_CATALOG_SCHEMA)
                conn.execute("CREATE INDEX IF NOT EXISTS checkpoints_run ON checkpoints(run_id)")
                conn.execute("CREATE INDEX IF NOT EXISTS checkpoints_repo ON checkpoints(repo)")
                conn.execute(f"PRAGMA user_version = {CATALOG_VERSION}")
        except sqlite3.OperationalError:
            raise  # busy or unwritable, not damaged: keep the file
        except sqlite3.DatabaseError as exc:
            damaged = self._catalog_path.with_name(
                f"{CATALOG_FILE_NAME}.damaged-{int(time.time())}"
            )
            os.replace(self._catalog_path, damaged)
            log.warning(
                "checkpoint catalog %s was damaged (%s): moved to %s and started afresh",
                self._catalog_path,
                exc,
                damaged,
            )
            self._init_catalog()

    @contextmanager
    def _catalog(self) -> Iterator[sqlite3.Connection]:
        with closing(sqlite3.connect(self._catalog_path, timeout=30.0)) as conn:
            conn.row_factory = sqlite3.Row
            with conn:  # one transaction, committed on success
                yield conn


_CATALOG_SCHEMA = """
CREATE TABLE IF NOT EXISTS checkpoints (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    run_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    iteration INTEGER,
    sandbox TEXT NOT NULL,
    repo TEXT NOT NULL,
    commit_id TEXT NOT NULL,
    tree_id TEXT NOT NULL,
    created_at REAL NOT NULL,
    skipped TEXT NOT NULL,
    restored_to TEXT,
    warnings TEXT NOT NULL
)
"""


def _checkpoint_from_row(row: sqlite3.Row) -> Checkpoint:
    return Checkpoint(
        id=row["id"],
        run_id=row["run_id"],
        kind=cast(CheckpointKind, row["kind"]),
        iteration=row["iteration"],
        sandbox_root=row["sandbox"],
        commit=row["commit_id"],
        tree=row["tree_id"],
        created_at=row["created_at"],
        skipped=tuple(
            SkippedFile(item["path"], item["size"], item["reason"])
            for item in json.loads(row["skipped"])
        ),
        restored_to=row["restored_to"],
        warnings=tuple(json.loads(row["warnings"])),
    )


@contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """An exclusive lock on `path` across threads and processes (blocks until granted)."""
    with open(path, "a+b") as handle:
        if sys.platform == "win32":
            import msvcrt

            while True:
                try:
                    handle.seek(0)
                    msvcrt.locking(handle.fileno(), msvcrt.LK_LOCK, 1)
                    break
                except OSError:
                    continue  # LK_LOCK gives up after 10 s; keep waiting
            try:
                yield
            finally:
                handle.seek(0)
                msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)
        else:
            import fcntl

            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _project_exclude_file(work_tree: Path) -> Path | None:
    """The `info/exclude` of the repository whose work tree is `work_tree`, if any.

    `.git` is a folder, or (submodules, worktrees) a file `gitdir: <path>`; a worktree's
    `info/exclude` lives in the main repository (its `commondir`).
    """
    dot_git = work_tree / ".git"
    try:
        if dot_git.is_dir():
            git_dir = dot_git
        elif dot_git.is_file():
            line = (_read_text(dot_git) or "").strip()
            if not line.startswith("gitdir:"):
                return None
            git_dir = (work_tree / line[len("gitdir:") :].strip()).resolve()
            common = _read_text(git_dir / "commondir")
            if common:
                git_dir = (git_dir / common.strip()).resolve()
        else:
            return None
        exclude = git_dir / "info" / "exclude"
        return exclude if exclude.is_file() else None
    except OSError:
        return None


def _obstacle(root: Path, path: str, tracked: set[str]) -> int | None:
    """The size of what blocks writing `path` (absent from the current snapshot), or None.

    Blocking: a file or symlink no snapshot holds at `path` or at a folder above it, or a
    folder at `path` with content no snapshot holds.
    """
    parts = path.split("/")
    for depth in range(1, len(parts)):
        prefix = "/".join(parts[:depth])
        try:
            info = os.lstat(root / prefix)
        except FileNotFoundError:
            return None
        except OSError:
            return 0
        if stat.S_ISDIR(info.st_mode):
            continue
        return None if prefix in tracked else info.st_size
    try:
        info = os.lstat(root / path)
    except FileNotFoundError:
        return None
    except OSError:
        return 0
    if stat.S_ISDIR(info.st_mode):
        return _untracked_size(root, path, tracked)
    return info.st_size


def _untracked_size(root: Path, folder: str, tracked: set[str]) -> int | None:
    """The size of what under `folder` the current snapshot does not hold (a `.git`, ignored
    or skipped files), or None if it holds all of it (a restore may then replace it)."""
    found = False
    total = 0
    for current, dirs, files in os.walk(root / folder):
        rel = Path(current).relative_to(root).as_posix()
        # os.walk lists symlinks to folders with the folders, and does not follow them.
        for name in [*files, *(d for d in dirs if os.path.islink(os.path.join(current, d)))]:
            if f"{rel}/{name}" not in tracked:
                found = True
                total += _tree_size(Path(current, name))
    return total if found else None


def _tree_size(path: Path, *, allocated: bool = False) -> int:
    """Bytes of the files under `path`: their sizes, or the disk blocks they take."""
    try:
        info = os.lstat(path)
    except OSError:
        return 0
    if not stat.S_ISDIR(info.st_mode):
        return _allocated(info) if allocated else info.st_size
    total = 0
    for folder, _dirs, files in os.walk(path):
        for name in files:
            try:
                info = os.lstat(os.path.join(folder, name))
                total += _allocated(info) if allocated else info.st_size
            except OSError:
                pass
    return total


def _allocated(info: os.stat_result) -> int:
    blocks: int | None = getattr(info, "st_blocks", None)
    return blocks * 512 if blocks is not None else info.st_size


def _read_text(path: Path, limit: int = 8192) -> str | None:
    """A small git pointer file (`.git`, `commondir`); a workspace may plant a huge one."""
    try:
        with path.open("rb") as handle:
            return handle.read(limit).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _glob_escape(path: Path) -> str:
    """`path` as a gitignore pattern that matches it literally."""
    return "".join("\\" + c if c in "*?[\\!#" else c for c in path.as_posix())


def _split_z(output: bytes) -> list[str]:
    return [os.fsdecode(item) for item in output.split(b"\0") if item]


def _join_z(paths: Iterable[str]) -> bytes:
    return b"".join(os.fsencode(path) + b"\0" for path in paths)


def _skipped_note(skipped: Sequence[SkippedFile]) -> str | None:
    if not skipped:
        return None
    large = [s for s in skipped if s.reason == "too_large"]
    unreadable = [s for s in skipped if s.reason == "unreadable"]
    parts: list[str] = []
    if large:
        listed = ", ".join(f"{s.path} ({s.size / 1048576:.1f} MiB)" for s in large)
        parts.append(f"{len(large)} file(s) too large to keep: {listed}")
    if unreadable:
        parts.append(
            f"{len(unreadable)} unreadable file(s): " + ", ".join(s.path for s in unreadable)
        )
    return "not in this checkpoint (a restore leaves them as they are): " + "; ".join(parts)
