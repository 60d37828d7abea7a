"""What a snapshot holds of a folder beyond git's view (modes, empty folders) and how a
restore puts it back."""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from ..changes import ChangedFile
from .files import heavy_prefix
from .records import Coverage, SkippedFile


@dataclass(frozen=True, slots=True)
class DiffEntry:
    changed_file: ChangedFile
    new_id: str  # the object a restore writes at the path ("" when it deletes it)
    old_mode: str = ""
    old_id: str = ""
    new_mode: str = ""


@dataclass(frozen=True, slots=True)
class FolderMeta:
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
    def from_text(text: bytes) -> FolderMeta:
        try:
            data = json.loads(text)
            return FolderMeta(
                int(data["umask"]),
                {str(k): int(v) for k, v in data["modes"].items()},
                tuple(str(d) for d in data["empty_dirs"]),
            )
        except (ValueError, KeyError, TypeError, AttributeError):
            return FolderMeta()

    def default_mode(self, executable: bool) -> int:
        return (0o777 if executable else 0o666) & ~self.umask


@dataclass(slots=True)
class Untracked:
    """What the persistent index does not hold, sorted (see `FolderScanner._untracked`)."""

    new: list[str] = field(default_factory=list)  # files to add to git's view
    ignored_files: list[str] = field(default_factory=list)
    ignored_dirs: list[str] = field(default_factory=list)  # wholly ignored: walked
    empty_dirs: list[str] = field(default_factory=list)
    heavy: set[str] = field(default_factory=set)


@dataclass(frozen=True, slots=True)
class FolderState:
    """A folder's state as a snapshot holds it: git's view (`tree`), the files beyond it
    (`extras_tree`: ignored and pinned files) and the rest (`meta`)."""

    tree: str
    extras_tree: str
    extras_commit: str
    meta: FolderMeta
    coverage: Coverage
    skipped: tuple[SkippedFile, ...]
    files: int | None = None


def knew_absent(state: FolderState, path: str, ignored: bool) -> bool:
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
    if ignored and heavy_prefix(path) is not None:
        return False
    return not ignored or state.coverage.ignored_held


def apply_modes(root: Path, changes: list[DiffEntry], now: FolderMeta, wanted: FolderMeta) -> None:
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


def apply_folders(root: Path, now: FolderMeta, wanted: FolderMeta) -> None:
    """Remove the empty folders made since (deepest first; one that holds anything now
    stays), and make the empty folders the checkpoint had."""
    for folder in sorted(set(now.empty_dirs) - set(wanted.empty_dirs), reverse=True):
        if real_folder(root, folder):
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


def real_folder(root: Path, folder: str) -> bool:
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
