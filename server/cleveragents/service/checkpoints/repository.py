"""The shadow repositories of a checkpoint store: where they live, how they are created,
repaired and locked, the catalog of checkpoints, and what no snapshot may hold.

The base of `CheckpointStore` (see store.py for the whole design); each layer above adds
one job: scanning, snapshots, comparing, restoring.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Collection, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ...tool.errors import ToolError
from ...workspace.command_policy import never_visible_to_tools
from ...workspace.private import keep_private, private_folder
from ..history import default_history_path
from .catalog import CATALOG_FILE_NAME, Catalog, checkpoint_from_row
from .files import file_lock, glob_escape
from .git import GIT_TIMEOUT_S, GitRunner, ShadowRepo, join_z, split_z
from .git_folder_files import GitFolderFiles, inside_git_folder
from .records import Checkpoint, CheckpointError, CheckpointsUnavailable
from .state import FolderMeta

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
REF_PREFIX = "refs/cleveragents/checkpoints/"
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
COMMIT_MESSAGE = "cleveragents checkpoint"
SCAN_STATE_FILE = "scan-state.json"
# Highest-precedence attributes: store and write bytes exactly as they are on disk, whatever
# the project's .gitattributes asks for (eol conversion, LFS or other filter drivers).
_ATTRIBUTES = "* -text -filter -ident !eol !working-tree-encoding\n"


def default_data_dir() -> Path:
    """The cleveragents user data folder (the one that holds the run history)."""
    return default_history_path().parent


class ShadowRepositories:
    """The shadow repositories and the catalog of any number of sandbox folders, under
    `data_dir/checkpoints`.

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

    def _forget(self, repo: ShadowRepo) -> None:
        """Drop what this store remembers of a repository whose objects may be gone."""
        self._commits.pop(repo.key, None)
        self._empty_tree_written.discard(repo.key)
        (repo.home / SCAN_STATE_FILE).unlink(missing_ok=True)

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

    def _tree_paths(self, repo: ShadowRepo, tree: str) -> set[str]:
        if tree == EMPTY_TREE:
            return set()
        return set(split_z(self._git_runner.run(repo, "ls-tree", "-r", "-z", "--name-only", tree)))

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
        listing = self._git_runner.run(repo, "for-each-ref", "--format=%(refname)", REF_PREFIX)
        doomed = [
            ref
            for ref in listing.decode().splitlines()
            if ref and ref[len(REF_PREFIX) :] not in keep_ids
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
