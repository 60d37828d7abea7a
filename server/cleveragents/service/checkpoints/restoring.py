"""Restoring a folder to a checkpoint, without writing through what is in the way."""

from __future__ import annotations

import os
import shutil
import uuid

from ...tool.errors import ToolError
from .comparing import CheckpointComparer
from .files import obstacle_size
from .git import GitFailed, ShadowRepo, split_z
from .git_folder_files import git_folder_changes
from .records import Checkpoint, CheckpointError, RestoreFailed, RestoreResult, SkippedFile
from .repository import EMPTY_TREE
from .state import DiffEntry, FolderState, apply_folders, apply_modes, knew_absent


class CheckpointRestorer(CheckpointComparer):
    """Puts a folder back as a checkpoint holds it (a snapshot of the state before first)."""

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
            plain = current.extras_tree == EMPTY_TREE and wanted.extras_tree == EMPTY_TREE
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
