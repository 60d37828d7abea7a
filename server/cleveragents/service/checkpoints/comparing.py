"""What changed between two states of a folder (checkpoints, or the folder now)."""

from __future__ import annotations

import os
from typing import cast

from ..changes import ChangedFile, ChangeKind
from .files import inside_any
from .git import ShadowRepo
from .git_folder_files import git_folder_changes
from .records import Checkpoint
from .repository import EMPTY_TREE
from .snapshots import SnapshotTaker
from .state import DiffEntry, FolderState

_CHANGE_BY_STATUS: dict[str, ChangeKind] = {
    "A": "added",
    "D": "deleted",
    "M": "modified",
    "T": "modified",
}


class CheckpointComparer(SnapshotTaker):
    """Compares checkpoints with each other and with the folder as it is now."""

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

    def _combine(self, repo: ShadowRepo, state: FolderState) -> str:
        """One tree of the whole folder: git's view with the extra files added."""
        if state.extras_tree == EMPTY_TREE:
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
