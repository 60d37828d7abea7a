"""Rules about the files of a sandbox: heavy folders, permission bits, what stands in a
restore's way, sizes, and the per-sandbox lock."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path

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


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
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


def note_bits(modes: dict[str, int], path: str, info: os.stat_result, umask: int) -> None:
    """Record a regular file's permission bits in `modes` if git would not give them back
    (it writes 0666 or 0777 less the umask)."""
    bits = info.st_mode & 0o7777
    if bits != (0o777 if info.st_mode & stat.S_IXUSR else 0o666) & ~umask:
        modes[path] = bits


def process_umask() -> int:
    """The process's umask, read without changing it (os.umask would, for every thread)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022


def heavy_prefix(path: str) -> str | None:
    """The first heavy folder (`node_modules`...) on `path`, as a path; None if none."""
    parts = path.split("/")
    for depth, part in enumerate(parts):
        if part in HEAVY_FOLDERS:
            return "/".join(parts[: depth + 1])
    return None


def inside_any(path: str, folders: Collection[str]) -> bool:
    return any(path.startswith(folder + "/") for folder in folders)


def project_exclude_file(work_tree: Path) -> Path | None:
    """The `info/exclude` of the repository whose work tree is `work_tree`, if any.

    `.git` is a folder, or (submodules, worktrees) a file `gitdir: <path>`; a worktree's
    `info/exclude` lives in the main repository (its `commondir`).
    """
    dot_git = work_tree / ".git"
    try:
        if dot_git.is_dir():
            git_dir = dot_git
        elif dot_git.is_file():
            line = (read_small_text(dot_git) or "").strip()
            if not line.startswith("gitdir:"):
                return None
            git_dir = (work_tree / line[len("gitdir:") :].strip()).resolve()
            common = read_small_text(git_dir / "commondir")
            if common:
                git_dir = (git_dir / common.strip()).resolve()
        else:
            return None
        exclude = git_dir / "info" / "exclude"
        return exclude if exclude.is_file() else None
    except OSError:
        return None


def obstacle_size(root: Path, path: str, tracked: set[str]) -> int | None:
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
        return untracked_size(root, path, tracked)
    return info.st_size


def untracked_size(root: Path, folder: str, tracked: set[str]) -> int | None:
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
                total += tree_size(Path(current, name))
    return total if found else None


def tree_size(path: Path, *, allocated: bool = False) -> int:
    """Bytes of the files under `path`: their sizes, or the disk blocks they take."""
    try:
        info = os.lstat(path)
    except OSError:
        return 0
    if not stat.S_ISDIR(info.st_mode):
        return allocated_bytes(info) if allocated else info.st_size
    total = 0
    for folder, _dirs, files in os.walk(path):
        for name in files:
            try:
                info = os.lstat(os.path.join(folder, name))
                total += allocated_bytes(info) if allocated else info.st_size
            except OSError:
                pass
    return total


def allocated_bytes(info: os.stat_result) -> int:
    blocks: int | None = getattr(info, "st_blocks", None)
    return blocks * 512 if blocks is not None else info.st_size


def read_small_text(path: Path, limit: int = 8192) -> str | None:
    """A small git pointer file (`.git`, `commondir`); a workspace may plant a huge one."""
    try:
        with path.open("rb") as handle:
            return handle.read(limit).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def glob_escape(path: Path) -> str:
    """`path` as a gitignore pattern that matches it literally."""
    return "".join("\\" + c if c in "*?[\\!#" else c for c in path.as_posix())
