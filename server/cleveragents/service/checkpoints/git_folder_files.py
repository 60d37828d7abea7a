"""Files inside a `.git` that a file tool changed (with the protected-writes opt-in).

git cannot index a path with a `.git` component, so the shadow repository never holds them;
this side store keeps, per checkpoint, each such pinned file's previous state (its bytes and
permission bits, or "absent") under the store's folder for the sandbox, so a run's changed
files name them and a restore puts them back. Files are read and written through `Sandbox`:
never through a symbolic link.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import stat
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from pathlib import Path

from ...tool.errors import ToolError
from ...workspace.sandbox import Sandbox, SandboxPath, closing_fd
from ..changes import ChangedFile

_MANIFEST = "manifest.json"

log = logging.getLogger(__name__)


def literal_path(path: str) -> SandboxPath:
    """`path` as it is spelled, each name opened without following a link (`Sandbox.resolve`
    would follow one that stays inside the sandbox: a restore must not)."""
    parts = tuple(path.split("/"))
    if any(part in ("", ".", "..") for part in parts):
        raise ToolError(f"{path!r} is not a plain relative path")
    return SandboxPath(path, parts)


def inside_git_folder(path: str) -> bool:
    """True for a relative path with a `.git` component (the shadow repository skips it)."""
    return ".git" in path.split("/")


@dataclass(frozen=True, slots=True)
class KeptFile:
    """A file's state: its bytes and permission bits, or absent (`content` None), or
    something else (`other`: a link, a folder; seen in a comparison, never kept)."""

    content: bytes | None
    mode: int = 0
    other: bool = False


class GitFolderFiles:
    """The side store of one sandbox's shadow repository: `<home>/git-folder-files/<id>/`."""

    def __init__(self, home: Path, max_file_bytes: int) -> None:
        self.folder = home / "git-folder-files"
        self.max_file_bytes = max_file_bytes

    def kept(self, checkpoint_id: str) -> dict[str, KeptFile]:
        """What the checkpoint keeps, by path (empty if it keeps nothing)."""
        where = self.folder / checkpoint_id
        try:
            manifest = json.loads((where / _MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        found: dict[str, KeptFile] = {}
        for path, entry in manifest.items():
            if entry.get("absent") or entry.get("other"):
                found[path] = KeptFile(None, other=bool(entry.get("other")))
                continue
            try:
                content = (where / str(entry["file"])).read_bytes()
            except (OSError, KeyError):
                continue  # damaged: not kept, so never "restored" to something made up
            found[path] = KeptFile(content, int(entry.get("mode", 0o644)))
        return found

    def paths(self, checkpoint_ids: Iterable[str]) -> set[str]:
        """Every path any of the checkpoints keeps."""
        found: set[str] = set()
        for checkpoint_id in checkpoint_ids:
            found.update(self.kept(checkpoint_id))
        return found

    def keep(self, checkpoint_id: str, sandbox: Path, paths: Collection[str]) -> list[str]:
        """Record those of `paths` the checkpoint does not keep yet, as they are now.
        Returns what could not be kept (larger than the per-file bound, unreadable)."""
        have = self.kept(checkpoint_id)
        new = sorted(p for p in paths if p not in have)
        if not new:
            return []
        now, problems = self.read(sandbox, new)
        # Something else (a link) is noted, so comparisons see it, but not kept.
        problems += [
            f"{path} is not a regular file: a change to it cannot be undone"
            for path, state in now.items()
            if state.other
        ]
        if not now:
            return problems
        where = self.folder / checkpoint_id
        where.mkdir(parents=True, exist_ok=True)
        try:
            manifest = json.loads((where / _MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            manifest = {}
        for path, state in now.items():
            if state.content is None:
                manifest[path] = {"other": True} if state.other else {"absent": True}
                continue
            name = f"{len(manifest)}.bin"
            (where / name).write_bytes(state.content)
            manifest[path] = {"file": name, "mode": state.mode}
        temp = where / (_MANIFEST + ".tmp")
        temp.write_text(json.dumps(manifest, sort_keys=True), encoding="utf-8")
        os.replace(temp, where / _MANIFEST)
        return problems

    def read(self, sandbox: Path, paths: Iterable[str]) -> tuple[dict[str, KeptFile], list[str]]:
        """The state of `paths` in the sandbox now, and what could not be read (a link or
        folder is `other`)."""
        wanted = list(paths)
        found: dict[str, KeptFile] = {}
        problems: list[str] = []
        if not wanted:
            return found, problems
        box = Sandbox(str(sandbox))
        for path in wanted:
            try:
                resolved = literal_path(path)
                parent = box.open_parent(resolved)
            except ToolError:
                # Not there, or a folder on the way is a link (seen, never followed).
                exists = os.path.lexists(sandbox / path)
                found[path] = KeptFile(None, other=exists)
                continue
            with closing_fd(parent):
                try:
                    info = os.stat(resolved.name, dir_fd=parent, follow_symlinks=False)
                except FileNotFoundError:
                    found[path] = KeptFile(None)
                    continue
                if not stat.S_ISREG(info.st_mode):
                    found[path] = KeptFile(None, stat.S_IMODE(info.st_mode), other=True)
                    continue
                if info.st_size > self.max_file_bytes:
                    problems.append(
                        f"{path} ({info.st_size / 1048576:.1f} MiB) is larger than checkpoints "
                        f"keep ({self.max_file_bytes / 1048576:.0f} MiB): a change to it "
                        "cannot be undone"
                    )
                    continue
                try:
                    fd = os.open(resolved.name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=parent)
                except OSError as exc:
                    problems.append(f"{path}: {exc.strerror}: a change to it cannot be undone")
                    continue
                with closing_fd(fd), os.fdopen(os.dup(fd), "rb") as handle:
                    data = handle.read(self.max_file_bytes + 1)
                    found[path] = KeptFile(data, stat.S_IMODE(os.fstat(fd).st_mode))
        return found, problems

    def put_back(self, sandbox: Path, wanted: dict[str, KeptFile]) -> list[str]:
        """Make each path as `wanted` says: its bytes and bits, or removed. Returns those
        left as they are (a folder on the way is now a link: never followed)."""
        box = Sandbox(str(sandbox))
        left: list[str] = []
        for path, state in sorted(wanted.items()):
            if state.other:
                continue  # not kept: left as it is
            try:
                self._put_back_one(box, path, state)
            except ToolError as exc:
                log.warning("restore left %s as it is: %s", path, exc)
                left.append(path)
        return left

    def _put_back_one(self, box: Sandbox, path: str, state: KeptFile) -> None:
        resolved = literal_path(path)
        try:
            parent = box.open_parent(resolved)
        except ToolError:
            # Its folder is gone (so is the file; a write makes it again), or a folder on
            # the way is now a link (the write refuses it too).
            if state.content is None and os.path.lexists(os.path.join(box.root, path)):
                raise
            parent = None
        if parent is not None:
            with closing_fd(parent):
                try:
                    info = os.stat(resolved.name, dir_fd=parent, follow_symlinks=False)
                except FileNotFoundError:
                    info = None
                # What stands there now goes unless it is a file being rewritten (a link
                # itself is removed, never its target; a folder is not ours to remove).
                if info is not None and not stat.S_ISDIR(info.st_mode):
                    if state.content is None or not stat.S_ISREG(info.st_mode):
                        os.unlink(resolved.name, dir_fd=parent)
        if state.content is None:
            return
        box.write_bytes(resolved, state.content, create_dirs=True)
        parent = box.open_parent(resolved)
        with closing_fd(parent):
            fd = os.open(resolved.name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=parent)
            with closing_fd(fd):
                os.fchmod(fd, state.mode)

    def drop(self, checkpoint_ids: Iterable[str]) -> None:
        """Forget what the checkpoints kept (they were pruned)."""
        for checkpoint_id in checkpoint_ids:
            shutil.rmtree(self.folder / checkpoint_id, ignore_errors=True)


def git_folder_changes(old: dict[str, KeptFile], new: dict[str, KeptFile]) -> list[ChangedFile]:
    """What differs between two states of files inside a `.git` (marked `ignored`: git does
    not see them), for the paths both sides know."""
    changes: list[ChangedFile] = []
    for path in sorted(set(old) & set(new)):
        before, after = old[path], new[path]
        if before == after:
            continue
        if before.content is None and not before.other:
            changes.append(ChangedFile(path, "added", True))
        elif after.content is None and not after.other:
            changes.append(ChangedFile(path, "deleted", True))
        else:
            changes.append(ChangedFile(path, "modified", True))
    return changes


__all__ = ["GitFolderFiles", "KeptFile", "git_folder_changes", "inside_git_folder"]
