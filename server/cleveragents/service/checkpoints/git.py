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


class GitFailed(CheckpointError):
    pass


class GitOptions(TypedDict, total=False):
    input: bytes  # fed to the command's stdin
    work_tree: Path  # GIT_WORK_TREE (and the working directory unless `cwd` is given)
    cwd: Path
    index: Path  # GIT_INDEX_FILE, when not the repository's persistent index


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
        try:
            completed = subprocess.run(
                [self.executable, *args],
                input=options.get("input"),
                cwd=options.get("cwd") or work_tree or repo.git_dir,
                env=self.env(repo, **extra),
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
