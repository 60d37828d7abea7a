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
# Bounds on what a snapshot keeps outside git's view (ignored files): per file, in count and
# in bytes. Smallest files are kept first, so a `.env` is kept before a database dump.
DEFAULT_MAX_IGNORED_FILE_BYTES = 4 * 1024 * 1024
DEFAULT_MAX_IGNORED_FILES = 5_000
DEFAULT_MAX_IGNORED_BYTES = 64 * 1024 * 1024
# Empty folders a snapshot records at most (beyond: none, and a restore removes none).
DEFAULT_MAX_EMPTY_FOLDERS = 10_000
# Ignored folders a snapshot never copies (dependencies, virtual environments, build output:
# large, and rebuilt by their tools); each one skipped is named in the checkpoint's note.
HEAVY_FOLDERS = frozenset(
    {
        "node_modules",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        "target",
        "build",
        "dist",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".gradle",
        ".next",
        ".cache",
        ".terraform",
    }
)
CATALOG_FILE_NAME = "catalog.sqlite3"
CATALOG_VERSION = 2
GIT_TIMEOUT_S = 600.0

CheckpointKind = Literal["iteration", "end", "restore"]
SkipReason = Literal["too_large", "unreadable", "in_the_way", "heavy_folder", "over_bounds"]

_REF_PREFIX = "refs/cleveragents/checkpoints/"
# Commits carry a fixed date so that the same tree always gives the same commit id: a
# snapshot of an unchanged folder writes no object at all. The real time is in the catalog.
_FIXED_DATE = "946684800 +0000"
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
        return json.dumps(
            {"extras": self.extras, "ignored_held": self.ignored_held, "pinned": self.pinned},
            ensure_ascii=True,
        )

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
            "ignored_held": self.coverage.ignored_held,
            "pinned": list(self.coverage.pinned),
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
    old_mode: str = ""
    old_id: str = ""
    new_mode: str = ""


@dataclass(frozen=True, slots=True)
class _Meta:
    """What git does not keep of a folder: permission bits it would not give back (by path;
    files git would write with the default mode under `umask` are not listed) and empty
    folders (every folder that holds no file, nested ones included)."""

    umask: int = 0o022
    modes: dict[str, int] = field(default_factory=dict)
    empty_dirs: tuple[str, ...] = ()

    def to_text(self) -> bytes:
        data = {"umask": self.umask, "modes": self.modes, "empty_dirs": list(self.empty_dirs)}
        return json.dumps(data, ensure_ascii=True, sort_keys=True).encode("ascii")

    @staticmethod
    def from_text(text: bytes) -> _Meta:
        try:
            data = json.loads(text)
            return _Meta(
                int(data["umask"]),
                {str(k): int(v) for k, v in data["modes"].items()},
                tuple(str(d) for d in data["empty_dirs"]),
            )
        except (ValueError, KeyError, TypeError, AttributeError):
            return _Meta()

    def default_mode(self, executable: bool) -> int:
        return (0o777 if executable else 0o666) & ~self.umask


@dataclass(slots=True)
class _Untracked:
    """What the persistent index does not hold, sorted (see `CheckpointStore._untracked`)."""

    new: list[str] = field(default_factory=list)  # files to add to git's view
    ignored_files: list[str] = field(default_factory=list)
    ignored_dirs: list[str] = field(default_factory=list)  # wholly ignored: walked
    empty_dirs: list[str] = field(default_factory=list)
    heavy: set[str] = field(default_factory=set)


@dataclass(frozen=True, slots=True)
class _State:
    """A folder's state as a snapshot holds it: git's view (`tree`), the files beyond it
    (`extras_tree`: ignored and pinned files) and the rest (`meta`)."""

    tree: str
    extras_tree: str
    extras_commit: str
    meta: _Meta
    coverage: Coverage
    skipped: tuple[SkippedFile, ...]
    files: int | None = None


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

    @property
    def extras_index(self) -> Path:
        # The ignored and pinned files, with their stat data: a separate index, so git's
        # view of the folder (`tree`) stays what it was.
        return self.git_dir / "extras-index"


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
        self.max_ignored_file_bytes = max_ignored_file_bytes
        self.max_ignored_files = max_ignored_files
        self.max_ignored_bytes = max_ignored_bytes
        self.max_empty_folders = max_empty_folders
        self._hidden_prefixes: dict[str, tuple[str, ...]] = {}
        self._meta_cache: dict[str, _Meta] = {}
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
        wanted = sorted({p for p in paths if p and p != "." and not self._hidden(repo, p)})
        if not wanted:
            return []
        with self._locked(repo):
            self._ensure_repo(repo)
            steps = [cp for cp in self.checkpoints(run_id) if cp.kind == "iteration"]
            problems: list[str] = []
            for checkpoint in steps:
                problems = self._pin_into(repo, checkpoint, wanted)
            return problems

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
                target = self._capture(repo, self._run_pins(from_checkpoint.run_id))
            else:
                self._check_belongs(repo, to)
                target = self._state_of(repo, to)
            return self._changes(repo, self._state_of(repo, from_checkpoint), target)

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
            plain = current.extras_tree == _EMPTY_TREE and wanted.extras_tree == _EMPTY_TREE
            current_full = current.tree if plain else self._combine(repo, current)
            target_full = wanted.tree if plain else self._combine(repo, wanted)
            target, kept = self._reachable_target(repo, current_full, target_full, current, wanted)
            changes = self._diff_entries(repo, current_full, target)
            # Every object the restore will write must be there before anything is written.
            self._check_objects(repo, checkpoint, [c.new_id for c in changes if c.new_id])
            changed = self._changes(repo, current, wanted, entries=(current_full, target))
            if undo is not None and changed:
                try:
                    if changes:
                        self._move_work_tree(repo, current, current_full, target, plain)
                    _apply_modes(repo.sandbox, changes, current.meta, wanted.meta)
                    _apply_folders(repo.sandbox, current.meta, wanted.meta)
                except (_GitFailed, OSError) as exc:
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
                # Objects may go: nothing made before is taken for granted afterwards.
                self._forget(repo)
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
        pins: Collection[str] = (),
    ) -> tuple[Checkpoint, _State]:
        warnings: list[str] = []
        checkpoint_id = uuid.uuid4().hex
        self._ensure_repo(repo)
        try:
            state, commit = self._capture_and_commit(repo, pins, checkpoint_id)
        except _GitFailed as first:
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
        with self._catalog() as conn:
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
        self, repo: _Repo, pins: Collection[str], checkpoint_id: str
    ) -> tuple[_State, str]:
        state = self._capture(repo, pins)
        commit = self._commit(repo, state.tree, state.extras_commit, _MESSAGE.encode() + b"\n")
        # The ref first, then the catalog row: a checkpoint listed is always there.
        self._run(repo, "update-ref", _REF_PREFIX + checkpoint_id, commit)
        return state, commit

    def _forget(self, repo: _Repo) -> None:
        """Drop what this store remembers of a repository whose objects may be gone."""
        self._commits.pop(repo.key, None)
        self._empty_tree_written.discard(repo.key)
        (repo.home / _SCAN_STATE).unlink(missing_ok=True)

    def _capture(self, repo: _Repo, pins: Collection[str] = ()) -> _State:
        """Bring the indexes in line with the folder and write its trees (no ref, no row).

        git does the scanning: after the first snapshot of a folder, `git diff-files` finds
        what changed among the files it holds (its index keeps their stat data) while `git
        ls-files --others --directory` lists what it does not hold, in one walk (untracked
        folders collapsed); Python then looks only at what changed, and at ignored files.
        The first snapshot, one after a restore or a damaged index, and a folder inside a
        larger repository take the full listing instead.
        """
        umask = _umask()
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
        meta = _Meta(umask, modes, tuple(sorted(untracked.empty_dirs)))
        extras_commit = self._commit(repo, extras_tree, None, meta.to_text())
        pinned = tuple(sorted(p for p in pins if not self._hidden(repo, p)))
        return _State(
            tree,
            extras_tree,
            extras_commit,
            meta,
            Coverage(extras_commit, ignored_held, pinned),
            tuple(skipped + extra_skipped),
            count + len(extras),
        )

    def _commit(self, repo: _Repo, tree: str, parent: str | None, message: bytes) -> str:
        """The commit of `tree` (with `parent`) and `message`: commits carry fixed dates, so
        the same inputs give the same commit, made once and then remembered (until a prune
        may have removed it)."""
        key = hashlib.sha256(f"{tree} {parent}\n".encode() + message).hexdigest()
        known = self._commits.get(repo.key, {})
        if key in known:
            return known[key]
        args = ["commit-tree", tree, *(["-p", parent] if parent else []), "-F", "-"]
        commit = self._run(repo, *args, input=message).decode().strip()
        self._commits[repo.key] = {**dict(list(known.items())[-7:]), key: commit}
        return commit

    # -- the fast scan -------------------------------------------------------------------------
    def _scan_state(self, repo: _Repo) -> dict[str, Any] | None:
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

    def _save_scan_state(self, repo: _Repo, count: int, modes: dict[str, int], tree: str) -> None:
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
        self, repo: _Repo, umask: int, previous: dict[str, Any]
    ) -> tuple[str, int, list[SkippedFile], dict[str, int], _Untracked]:
        """The persistent index brought up to date from what git reports changed."""
        # Both walks at once: the stat of every file held, the listing of every folder.
        dirty_job = self._start(repo, "diff-files", "-z", "--name-only", work_tree=repo.sandbox)
        listing = self._run_untracked_listing(repo)
        dirty = _split_z(self._wait(repo, dirty_job, "diff-files"))
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
                _note_bits(modes, path, info, umask)
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
                _note_bits(modes, path, info, umask)
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
            self._add_to_index(repo, repo.index, update)
        tree = self._run(repo, "write-tree", work_tree=repo.sandbox).decode().strip()
        return tree, count, skipped, modes, untracked

    def _run_untracked_listing(self, repo: _Repo) -> list[str]:
        """Every path the persistent index does not hold, ignored or not, in one walk: files
        in folders it holds files of, and whole folders (`dir/`) it holds nothing of."""
        return _split_z(
            self._run(repo, "ls-files", "-z", "--others", "--directory", work_tree=repo.sandbox)
        )

    def _untracked(self, repo: _Repo, entries: list[str]) -> _Untracked:
        """Sort what the index does not hold: ignored (kept beside git's view, bounded), new
        files (to add), folders with nothing in them; heavy folders and private paths out."""
        found = _Untracked()
        visible = [e for e in entries if not self._hidden(repo, e.rstrip("/"))]
        ignored = self._ignored_paths(repo, [e.rstrip("/") for e in visible])
        for entry in visible:
            path = entry.rstrip("/")
            is_dir = entry.endswith("/")
            if path in ignored:
                heavy_at = _heavy_prefix(path)
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

    def _new_folder(self, repo: _Repo, path: str, found: _Untracked) -> None:
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
            listing = self._run(
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
            for entry in _split_z(listing):
                inner = f"{folder}/{entry.rstrip('/')}"
                if self._hidden(repo, inner):
                    continue
                heavy_at = _heavy_prefix(inner)
                if heavy_at is not None:
                    found.heavy.add(heavy_at)
                elif entry.endswith("/"):
                    found.ignored_dirs.append(inner)
                else:
                    found.ignored_files.append(inner)

    def _empty_within(self, repo: _Repo, path: str) -> list[str]:
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

    def _start(self, repo: _Repo, *args: str, work_tree: Path) -> subprocess.Popen[bytes]:
        try:
            return subprocess.Popen(
                [self.git, *args],
                cwd=work_tree,
                env=self._env(repo, GIT_WORK_TREE=str(work_tree)),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        except OSError as exc:
            raise _GitFailed(f"git {args[0]} failed for {repo.sandbox}: {exc}") from exc

    def _wait(self, repo: _Repo, job: subprocess.Popen[bytes], name: str) -> bytes:
        try:
            out, err = job.communicate(timeout=GIT_TIMEOUT_S)
        except subprocess.TimeoutExpired as exc:
            job.kill()
            job.communicate()
            raise _GitFailed(f"git {name} failed for {repo.sandbox}: {exc}") from exc
        if job.returncode != 0:
            detail = err.decode(errors="replace").strip()
            raise _GitFailed(f"git {name} failed for {repo.sandbox}: {detail}")
        return out

    def _write_tree(
        self, repo: _Repo, umask: int
    ) -> tuple[str, set[str], list[SkippedFile], dict[str, int]]:
        """Bring the persistent index in line with the folder (git's view) and write its tree.

        Also returns the paths it holds, those it left out, and the permission bits of the
        files git would not give back as they are.
        """
        paths, skipped, modes = self._snapshot_paths(repo, umask)
        tree = self._write_index(repo, repo.index, paths)
        return tree, set(paths), skipped, modes

    def _write_index(self, repo: _Repo, index: Path, paths: list[str]) -> str:
        """Make `index` hold exactly `paths` as they are on disk; its tree."""
        if not paths and index != repo.index:
            index.unlink(missing_ok=True)  # nothing to hold
            if repo.key not in self._empty_tree_written:
                # Commits name it: it must be in the repository, not only known to git.
                self._run(repo, "hash-object", "-w", "-t", "tree", "--stdin", input=b"")
                self._empty_tree_written.add(repo.key)
            return _EMPTY_TREE
        listed = set(paths)
        indexed = _split_z(self._run(repo, "ls-files", "-z", index=index, work_tree=repo.sandbox))
        stale = [path for path in indexed if path not in listed]
        if stale:
            self._drop_from_index(repo, index, stale)
        if paths:
            # The persistent index, rebuilt here, is split: a later snapshot that changes a
            # few files writes a small index, not all of it again.
            self._add_to_index(repo, index, paths, split=index == repo.index)
        return self._run(repo, "write-tree", index=index, work_tree=repo.sandbox).decode().strip()

    def _add_to_index(
        self, repo: _Repo, index: Path, paths: list[str], *, split: bool = False
    ) -> None:
        """Put `paths` into `index` as they are on disk (unchanged files are recognised by
        their stat data and not read again)."""
        self._run(
            repo,
            "update-index",
            "--add",
            "--remove",
            "--replace",
            *(["--split-index"] if split else []),
            "-z",
            "--stdin",
            input=_join_z(paths),
            index=index,
            work_tree=repo.sandbox,
        )

    def _snapshot_paths(
        self, repo: _Repo, umask: int
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
                _note_bits(modes, path, info, umask)
                if info.st_ctime >= cutoff:
                    recent.append(path)
            elif not stat.S_ISLNK(info.st_mode):
                continue
            paths.append(path)
        return paths, skipped, modes

    def _extra_files(
        self,
        repo: _Repo,
        untracked: _Untracked,
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
                _note_bits(modes, path, info, umask)
        return chosen, held, skipped

    def _in_index(self, repo: _Repo, index: Path, paths: list[str]) -> set[str]:
        """Those of `paths` the index holds."""
        if not paths:
            return set()
        listing = self._run(
            repo,
            "ls-files",
            "-z",
            "--",
            *(f":(literal){p}" for p in paths),
            index=index,
            work_tree=repo.sandbox,
        )
        return set(_split_z(listing)) & set(paths)

    def _ignored_candidates(
        self, repo: _Repo, untracked: _Untracked
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

    def _private_excludes(self, repo: _Repo, work_tree: Path) -> list[str]:
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
                args.append(f"--exclude=/{_glob_escape(hidden_path.relative_to(work_tree))}")
        return args

    def _hidden(self, repo: _Repo, path: str) -> bool:
        """True for a path (relative to the sandbox) no snapshot may hold: our data folder,
        a never-visible path, or anything inside a `.git`."""
        if ".git" in path.split("/"):
            return True
        prefixes = self._hidden_prefixes.get(repo.key)
        if prefixes is None:
            prefixes = self._refresh_hidden(repo)
        return any(path == p or path.startswith(p + "/") for p in prefixes)

    def _refresh_hidden(self, repo: _Repo) -> tuple[str, ...]:
        """The never-visible paths and our data folder inside the sandbox, relative to it
        (looked up again at each snapshot: the user may add some meanwhile)."""
        found: list[str] = []
        for private in (self.data_dir, *map(Path, never_visible_to_tools())):
            if private != repo.sandbox and private.is_relative_to(repo.sandbox):
                found.append(private.relative_to(repo.sandbox).as_posix())
        prefixes = tuple(found)
        self._hidden_prefixes[repo.key] = prefixes
        return prefixes

    def _unignored_files(self, repo: _Repo) -> list[str]:
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
        self, repo: _Repo, work_tree: Path, folder: Path, prefix: str
    ) -> tuple[list[str], list[str]]:
        """The unignored files under `folder` (of the repository whose work tree is
        `work_tree`) and its nested repositories, as paths in the sandbox."""
        args = ["ls-files", "-z", "--others", "--exclude-standard"]
        project_exclude = _project_exclude_file(work_tree)
        if project_exclude is not None:
            args.append(f"--exclude-from={project_exclude}")
        args += self._private_excludes(repo, work_tree)
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
        self, repo: _Repo, current: str, target: str, now: _State, wanted: _State
    ) -> tuple[str, list[SkippedFile]]:
        """The target tree without what a restore must not do.

        A path the target adds is "in the way" when, on disk, it (or a folder above it) is a
        file or symlink the current snapshot does not hold, or a folder with such content:
        it is left out (and listed). A path the target lacks is deleted only if the target
        would have held it: one in a folder it skipped, too large for it, or ignored when it
        did not keep every ignored file, is kept as it is (we do not know it was absent).
        """
        tracked = set(_split_z(self._run(repo, "ls-tree", "-r", "-z", "--name-only", current)))
        ignored_now = self._tree_paths(repo, now.extras_tree)
        kept: list[SkippedFile] = []
        keep_current: list[_DiffEntry] = []
        for entry in self._diff_entries(repo, current, target):
            change = entry.changed_file
            if change.change == "added":
                obstacle = _obstacle(repo.sandbox, change.path, tracked)
                if obstacle is not None:
                    kept.append(SkippedFile(change.path, obstacle, "in_the_way"))
            elif change.change == "deleted" and not _knew_absent(
                wanted, change.path, change.path in ignored_now
            ):
                keep_current.append(entry)
        if not kept and not keep_current:
            return target, []
        try:
            self._run(repo, "read-tree", target, index=repo.scratch_index)
            if kept:
                self._drop_from_index(repo, repo.scratch_index, [k.path for k in kept])
            if keep_current:
                lines = b"".join(
                    f"{e.old_mode} {e.old_id}\t".encode() + os.fsencode(e.changed_file.path) + b"\0"
                    for e in keep_current
                )
                self._run(
                    repo,
                    "update-index",
                    "-z",
                    "--index-info",
                    input=lines,
                    index=repo.scratch_index,
                )
            reachable = self._run(repo, "write-tree", index=repo.scratch_index).decode().strip()
        finally:
            repo.scratch_index.unlink(missing_ok=True)
        return reachable, kept

    def _move_work_tree(
        self, repo: _Repo, now: _State, current: str, target: str, plain: bool
    ) -> None:
        """Make the work tree go from `current` to `target` (both trees of the whole folder).

        A two-tree read-tree moves it, and refuses (changing nothing) if a file it does not
        track would be overwritten or a symlink followed. Its index must hold `current` with
        fresh stat data: the persistent index does when no file beyond git's view is
        involved; else a scratch copy with the extra files added and refreshed.
        """
        if plain:
            self._run(repo, "read-tree", "-m", "-u", current, target, work_tree=repo.sandbox)
            return
        try:
            shutil.copyfile(repo.index, repo.scratch_index)
            listing = self._run(repo, "ls-tree", "-r", "-z", now.extras_tree)
            if listing:
                self._run(
                    repo,
                    "update-index",
                    "-z",
                    "--index-info",
                    input=listing,
                    index=repo.scratch_index,
                )
            self._git(
                repo,
                "update-index",
                "-q",
                "--refresh",
                check=False,
                index=repo.scratch_index,
                work_tree=repo.sandbox,
            )
            self._run(
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

    def _combine(self, repo: _Repo, state: _State) -> str:
        """One tree of the whole folder: git's view with the extra files added."""
        if state.extras_tree == _EMPTY_TREE:
            return state.tree
        try:
            self._run(repo, "read-tree", state.tree, index=repo.scratch_index)
            listing = self._run(repo, "ls-tree", "-r", "-z", state.extras_tree)
            self._run(
                repo,
                "update-index",
                "-z",
                "--index-info",
                input=listing,
                index=repo.scratch_index,
            )
            return self._run(repo, "write-tree", index=repo.scratch_index).decode().strip()
        finally:
            repo.scratch_index.unlink(missing_ok=True)

    def _tree_paths(self, repo: _Repo, tree: str) -> set[str]:
        if tree == _EMPTY_TREE:
            return set()
        return set(_split_z(self._run(repo, "ls-tree", "-r", "-z", "--name-only", tree)))

    def _state_of(self, repo: _Repo, checkpoint: Checkpoint) -> _State:
        """The state a checkpoint holds (its extras and meta read from its parent commit)."""
        extras = checkpoint.coverage.extras
        if extras is None:
            return _State(
                checkpoint.tree, _EMPTY_TREE, "", _Meta(), checkpoint.coverage, checkpoint.skipped
            )
        meta = self._meta_cache.get(extras)
        raw = self._run(repo, "cat-file", "commit", extras)
        header, _sep, message = raw.partition(b"\n\n")
        extras_tree = header.split(b"\n", 1)[0].split(b" ", 1)[1].decode().strip()
        if meta is None:
            meta = _Meta.from_text(message)
            self._meta_cache[extras] = meta
        return _State(
            checkpoint.tree, extras_tree, extras, meta, checkpoint.coverage, checkpoint.skipped
        )

    def _changes(
        self,
        repo: _Repo,
        old: _State,
        new: _State,
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
            if f"{folder}/" not in touched and not _inside_any(folder, old_dirs & new_dirs):
                changed[folder + "/"] = ChangedFile(folder + "/", cast(ChangeKind, kind))
        return sorted(changed.values(), key=lambda c: c.path)

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
            old_mode, new_mode, old_id, new_id, status = header[1:].decode().split()
            change = _CHANGE_BY_STATUS.get(status[:1], "modified")
            entries.append(
                _DiffEntry(
                    ChangedFile(os.fsdecode(path), change),
                    "" if change == "deleted" else new_id,
                    old_mode,
                    old_id,
                    new_mode,
                )
            )
        return entries

    # -- pins ----------------------------------------------------------------------------------
    def _run_pins(self, run_id: str) -> set[str]:
        """Every path the run's file tools changed (see `pin`): every later snapshot of the
        run, and of a restore of it, holds them."""
        pins: set[str] = set()
        for checkpoint in self.checkpoints(run_id):
            pins.update(checkpoint.coverage.pinned)
        return pins

    def _pin_into(self, repo: _Repo, checkpoint: Checkpoint, paths: list[str]) -> list[str]:
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
            if path in held or _knew_absent(state, path, path in ignored):
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
                _note_bits(modes, path, info, state.meta.umask)
        coverage = Coverage(
            checkpoint.coverage.extras,
            checkpoint.coverage.ignored_held,
            tuple(sorted({*checkpoint.coverage.pinned, *new})),
        )
        commit = checkpoint.commit
        if add:
            try:
                self._run(repo, "read-tree", state.extras_tree, index=repo.scratch_index)
                self._run(
                    repo,
                    "update-index",
                    "--add",
                    "-z",
                    "--stdin",
                    input=_join_z(add),
                    index=repo.scratch_index,
                    work_tree=repo.sandbox,
                )
                extras_tree = (
                    self._run(repo, "write-tree", index=repo.scratch_index).decode().strip()
                )
            finally:
                repo.scratch_index.unlink(missing_ok=True)
            meta = _Meta(state.meta.umask, modes, state.meta.empty_dirs)
            extras = (
                self._run(repo, "commit-tree", extras_tree, "-F", "-", input=meta.to_text())
                .decode()
                .strip()
            )
            commit = (
                self._run(repo, "commit-tree", checkpoint.tree, "-p", extras, "-m", _MESSAGE)
                .decode()
                .strip()
            )
            self._run(repo, "update-ref", _REF_PREFIX + checkpoint.id, commit)
            coverage = Coverage(extras, coverage.ignored_held, coverage.pinned)
        with self._catalog() as conn:
            conn.execute(
                "UPDATE checkpoints SET commit_id = ?, coverage = ? WHERE id = ?",
                (commit, coverage.to_json(), checkpoint.id),
            )
        return problems

    def _held(self, repo: _Repo, state: _State, paths: list[str]) -> set[str]:
        """Those of `paths` the state holds (in git's view or beyond)."""
        trees = [state.tree] + ([state.extras_tree] if state.extras_tree != _EMPTY_TREE else [])
        queries = [(path, f"{tree}:{path}") for path in paths for tree in trees]
        report = self._run(
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

    def _ignored_paths(self, repo: _Repo, paths: list[str]) -> set[str]:
        """Those of `paths` the sandbox's ignore rules ignore."""
        if not paths:
            return set()
        exclude = _project_exclude_file(repo.sandbox)
        settings = ["-c", f"core.excludesFile={exclude}"] if exclude is not None else []
        check = self._git(
            repo,
            *settings,
            "check-ignore",
            "--no-index",
            "-z",
            "--stdin",
            input=_join_z(paths),
            work_tree=repo.sandbox,
            index=repo.empty_index,
            check=False,
        )
        return set(_split_z(check.stdout))

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
        self._forget(repo)
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
                columns = {row[1] for row in conn.execute("PRAGMA table_info(checkpoints)")}
                if "coverage" not in columns:  # a version 1 catalog
                    conn.execute(
                        "ALTER TABLE checkpoints ADD COLUMN coverage TEXT NOT NULL DEFAULT '{}'"
                    )
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
    warnings TEXT NOT NULL,
    coverage TEXT NOT NULL DEFAULT '{}'
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
        coverage=Coverage.from_json(row["coverage"]),
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


def _note_bits(modes: dict[str, int], path: str, info: os.stat_result, umask: int) -> None:
    """Record a regular file's permission bits in `modes` if git would not give them back
    (it writes 0666 or 0777 less the umask)."""
    bits = info.st_mode & 0o7777
    if bits != (0o777 if info.st_mode & stat.S_IXUSR else 0o666) & ~umask:
        modes[path] = bits


def _umask() -> int:
    """The process's umask, read without changing it (os.umask would, for every thread)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022


def _heavy_prefix(path: str) -> str | None:
    """The first heavy folder (`node_modules`...) on `path`, as a path; None if none."""
    parts = path.split("/")
    for depth, part in enumerate(parts):
        if part in HEAVY_FOLDERS:
            return "/".join(parts[: depth + 1])
    return None


def _inside_any(path: str, folders: Collection[str]) -> bool:
    return any(path.startswith(folder + "/") for folder in folders)


def _knew_absent(state: _State, path: str, ignored: bool) -> bool:
    """True when a state that does not hold `path` would have held it had it been there:
    so it was absent. False for a path in a folder it skipped, one it left out (too large,
    unreadable), or an ignored one when it did not keep every ignored file."""
    if path in state.coverage.pinned:
        return True
    for skipped in state.skipped:
        if skipped.reason == "heavy_folder":
            if path == skipped.path or path.startswith(skipped.path + "/"):
                return False
        elif skipped.path == path:
            return False
    if ignored and _heavy_prefix(path) is not None:
        return False
    return not ignored or state.coverage.ignored_held


def _apply_modes(root: Path, changes: list[_DiffEntry], now: _Meta, wanted: _Meta) -> None:
    """Give restored files the permission bits they had: what git wrote gets the recorded
    bits (or the default of the checkpoint's umask), and so does a file whose bits alone
    changed."""
    paths = {
        e.changed_file.path: e.new_mode == "100755"
        for e in changes
        if e.new_id and e.new_mode in ("100644", "100755")
    }
    for path in set(now.modes) | set(wanted.modes):
        if path not in paths and now.modes.get(path) != wanted.modes.get(path):
            paths[path] = False  # the executable bit is read from the file below
    written = {e.changed_file.path for e in changes}
    for path, executable in paths.items():
        full = root / path
        try:
            info = os.lstat(full)
        except OSError:
            continue
        if not stat.S_ISREG(info.st_mode):
            continue  # never chmod through a symlink
        if path not in written:
            executable = bool(info.st_mode & stat.S_IXUSR)
        bits = wanted.modes.get(path, wanted.default_mode(executable))
        if info.st_mode & 0o7777 != bits:
            os.chmod(full, bits)


def _apply_folders(root: Path, now: _Meta, wanted: _Meta) -> None:
    """Remove the empty folders made since (deepest first; one that holds anything now
    stays), and make the empty folders the checkpoint had."""
    for folder in sorted(set(now.empty_dirs) - set(wanted.empty_dirs), reverse=True):
        if _real_folder(root, folder):
            try:
                os.rmdir(root / folder)
            except OSError:
                pass  # not empty (any more): what is in it stays
    for folder in sorted(set(wanted.empty_dirs)):
        current = root
        for part in folder.split("/"):
            current = current / part
            try:
                info = os.lstat(current)
            except FileNotFoundError:
                os.mkdir(current)
                continue
            if not stat.S_ISDIR(info.st_mode):
                break  # a file or a symlink is in the way: never made through it


def _real_folder(root: Path, folder: str) -> bool:
    """True when `folder` and every folder above it (up to `root`) is a folder, not a
    symlink: nothing is removed through a link."""
    current = root
    for part in folder.split("/"):
        current = current / part
        try:
            if not stat.S_ISDIR(os.lstat(current).st_mode):
                return False
        except OSError:
            return False
    return True


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
