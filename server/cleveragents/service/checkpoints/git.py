"""Running git on a sandbox's shadow repository: its layout, its environment, its commands."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict, Unpack

from .records import CheckpointError

GIT_TIMEOUT_S = 600.0
# Commits carry a fixed date so that the same tree always gives the same commit id: a
# snapshot of an unchanged folder writes no object at all. The real time is in the catalog.
FIXED_DATE = "946684800 +0000"
# From this many new files on, `update-index` writes their contents into packs instead of
# one loose object file each (see GitRunner.add_to_index), PACK_BATCH files per pack.
PACK_FROM_FILES = 1000
PACK_BATCH = 5000
# For those commands: glibc keeps freed memory instead of returning it to the system and
# faulting it in again, once per file, for zlib's buffers.
_KEEP_FREED_MEMORY = (
    "glibc.malloc.top_pad=16777216:glibc.malloc.trim_threshold=67108864"
    ":glibc.malloc.mmap_threshold=4194304"
)


class GitFailed(CheckpointError):
    pass


class GitOptions(TypedDict, total=False):
    input: bytes  # fed to the command's stdin
    work_tree: Path  # GIT_WORK_TREE (and the working directory unless `cwd` is given)
    cwd: Path
    index: Path  # GIT_INDEX_FILE, when not the repository's persistent index
    config: dict[str, str]  # settings for this command only, above any config file
    env: dict[str, str]  # more environment variables


@dataclass(frozen=True, slots=True)
class ShadowRepo:
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


def split_z(output: bytes) -> list[str]:
    return [os.fsdecode(item) for item in output.split(b"\0") if item]


def join_z(paths: Iterable[str]) -> bytes:
    return b"".join(os.fsencode(path) + b"\0" for path in paths)


class GitRunner:
    """Runs git for the store: a clean environment (no user or system config, no hooks, no
    signing), a timeout, and a failure raised as `GitFailed` naming the sandbox."""

    def __init__(self, executable: str, home: Path) -> None:
        self.executable = executable
        self.home = home  # HOME for git: no user config is found
        # Whether `update-index` batches the objects it writes (see add_to_index); set once
        # the version is known.
        self.batches_objects = False

    def know_version(self, version: str) -> None:
        """Take note of what `git --version` printed."""
        self.batches_objects = version_at_least(version, (2, 37))

    def start(self, repo: ShadowRepo, *args: str, work_tree: Path) -> subprocess.Popen[bytes]:
        try:
            return subprocess.Popen(
                [self.executable, *args],
                cwd=work_tree,
                env=self.env(repo, GIT_WORK_TREE=str(work_tree)),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        except OSError as exc:
            raise GitFailed(f"git {args[0]} failed for {repo.sandbox}: {exc}") from exc

    def wait(self, repo: ShadowRepo, job: subprocess.Popen[bytes], name: str) -> bytes:
        try:
            out, err = job.communicate(timeout=GIT_TIMEOUT_S)
        except subprocess.TimeoutExpired as exc:
            job.kill()
            job.communicate()
            raise GitFailed(f"git {name} failed for {repo.sandbox}: {exc}") from exc
        if job.returncode != 0:
            detail = err.decode(errors="replace").strip()
            raise GitFailed(f"git {name} failed for {repo.sandbox}: {detail}")
        return out

    def env(self, repo: ShadowRepo | None = None, **extra: str) -> dict[str, str]:
        env = {
            "PATH": os.environ.get("PATH", os.defpath),
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.home),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_TERMINAL_PROMPT": "0",
            "LC_ALL": "C",
            "GIT_AUTHOR_NAME": "cleveragents",
            "GIT_AUTHOR_EMAIL": "checkpoints@cleveragents.invalid",
            "GIT_AUTHOR_DATE": FIXED_DATE,
            "GIT_COMMITTER_NAME": "cleveragents",
            "GIT_COMMITTER_EMAIL": "checkpoints@cleveragents.invalid",
            "GIT_COMMITTER_DATE": FIXED_DATE,
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

    def call(
        self, repo: ShadowRepo, *args: str, check: bool = True, **options: Unpack[GitOptions]
    ) -> subprocess.CompletedProcess[bytes]:
        extra: dict[str, str] = {}
        work_tree = options.get("work_tree")
        if work_tree is not None:
            extra["GIT_WORK_TREE"] = str(work_tree)
        index = options.get("index")
        if index is not None:
            extra["GIT_INDEX_FILE"] = str(index)
        extra.update(options.get("env", {}))
        env = self.env(repo, **extra)
        for name, value in options.get("config", {}).items():
            count = int(env["GIT_CONFIG_COUNT"])
            env[f"GIT_CONFIG_KEY_{count}"] = name
            env[f"GIT_CONFIG_VALUE_{count}"] = value
            env["GIT_CONFIG_COUNT"] = str(count + 1)
        try:
            completed = subprocess.run(
                [self.executable, *args],
                input=options.get("input"),
                cwd=options.get("cwd") or work_tree or repo.git_dir,
                env=env,
                capture_output=True,
                timeout=GIT_TIMEOUT_S,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise GitFailed(f"git {args[0]} failed for {repo.sandbox}: {exc}") from exc
        if check and completed.returncode != 0:
            detail = completed.stderr.decode(errors="replace").strip()
            raise GitFailed(f"git {args[0]} failed for {repo.sandbox}: {detail}")
        return completed

    def run(self, repo: ShadowRepo, *args: str, **options: Unpack[GitOptions]) -> bytes:
        """A git command's output; GitFailed if it fails."""
        return self.call(repo, *args, **options).stdout

    def add_to_index(
        self,
        repo: ShadowRepo,
        index: Path,
        paths: list[str],
        *,
        new_files: int,
        split: bool = False,
    ) -> None:
        """Put `paths` into `index` as they are on disk (unchanged files are recognised by
        their stat data and not read again); `new_files` is how many of them are new or
        changed (their contents to be written); `split` makes it a split index.

        git writes each new file's content as a loose object, one file in the object store per file:
        creating those is most of a large first snapshot's time (and ~4 KiB of disk per file). From
        git 2.37 on, `update-index` batches the objects it writes: a file above
        `core.bigFileThreshold` is streamed into one pack for the whole command, and a threshold of
        one byte sends every file of two bytes or more there. That changes no object id and holds
        only for these commands (diffs and packing elsewhere keep the default); a prune's `gc` folds
        the packs together. git looks up each object written in a list of the pack's objects, a cost
        that grows with the square of their number: one command per PACK_BATCH files keeps it small.
        """
        if not (self.batches_objects and new_files >= PACK_FROM_FILES):
            self._update_index(repo, index, paths, split=split)
            return
        for start in range(0, len(paths), PACK_BATCH):
            self._update_index(
                repo,
                index,
                paths[start : start + PACK_BATCH],
                split=split,
                config={"core.bigFileThreshold": "1"},
                env={"GLIBC_TUNABLES": _KEEP_FREED_MEMORY},
            )

    def _update_index(
        self,
        repo: ShadowRepo,
        index: Path,
        paths: list[str],
        *,
        split: bool,
        config: dict[str, str] | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.run(
            repo,
            "update-index",
            "--add",
            "--remove",
            "--replace",
            *(["--split-index"] if split else []),
            "-z",
            "--stdin",
            input=join_z(paths),
            index=index,
            work_tree=repo.sandbox,
            config=config or {},
            env=env or {},
        )


def version_at_least(version: str, wanted: tuple[int, int]) -> bool:
    """True when `git --version` output (`git version 2.39.5`, `... 2.45.1.windows.1`)
    names a version at or above `wanted` (major, minor); False when it cannot be read."""
    words = version.split()
    numbers = words[2].split(".") if len(words) >= 3 else []
    try:
        found = (int(numbers[0]), int(numbers[1]))
    except (IndexError, ValueError):
        return False
    return found >= wanted
