"""Taking snapshots: the indexes brought in line with the folder, trees and commits written
(incrementally, from what git reports changed), files pinned into a run's checkpoints."""

from __future__ import annotations

import json
import logging
import os
import stat
import time
import uuid
from collections.abc import Collection
from pathlib import Path
from typing import Any

from ...tool.serialization import to_data
from .files import note_bits, process_umask
from .git import GitFailed, ShadowRepo, join_z, split_z
from .records import Checkpoint, CheckpointError, CheckpointKind, Coverage, SkippedFile, SkipReason
from .repository import COMMIT_MESSAGE, EMPTY_TREE, REF_PREFIX, SCAN_STATE_FILE
from .scanning import FolderScanner
from .state import FolderMeta, FolderState, Untracked, knew_absent

log = logging.getLogger(__name__)


class SnapshotTaker(FolderScanner):
    """Takes snapshots of sandbox folders and reads back what a checkpoint holds."""

    def _snapshot_locked(
        self,
        repo: ShadowRepo,
        run_id: str,
        kind: CheckpointKind,
        iteration: int | None,
        *,
        restored_to: str | None,
        pins: Collection[str] = (),
    ) -> tuple[Checkpoint, FolderState]:
        warnings: list[str] = []
        checkpoint_id = uuid.uuid4().hex
        self._ensure_repo(repo)
        try:
            state, commit = self._capture_and_commit(repo, pins, checkpoint_id)
        except GitFailed as first:
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
        with self._catalog.connect() as conn:
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
                    json.dumps(to_data(state.skipped), ensure_ascii=True),
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
        self, repo: ShadowRepo, pins: Collection[str], checkpoint_id: str
    ) -> tuple[FolderState, str]:
        state = self._capture(repo, pins)
        commit = self._commit(
            repo, state.tree, state.extras_commit, COMMIT_MESSAGE.encode() + b"\n"
        )
        # The ref first, then the catalog row: a checkpoint listed is always there.
        self._git_runner.run(repo, "update-ref", REF_PREFIX + checkpoint_id, commit)
        return state, commit

    def _capture(self, repo: ShadowRepo, pins: Collection[str] = ()) -> FolderState:
        """Bring the indexes in line with the folder and write its trees (no ref, no row).

        git does the scanning: after the first snapshot of a folder, `git diff-files` finds
        what changed among the files it holds (its index keeps their stat data) while `git
        ls-files --others --directory` lists what it does not hold, in one walk (untracked
        folders collapsed); Python then looks only at what changed, and at ignored files.
        The first snapshot, one after a restore or a damaged index, and a folder inside a
        larger repository take the full listing instead.
        """
        umask = process_umask()
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
        meta = FolderMeta(umask, modes, tuple(sorted(untracked.empty_dirs)))
        extras_commit = self._commit(repo, extras_tree, None, meta.to_text())
        pinned = tuple(sorted(p for p in pins if not self._hidden(repo, p)))
        return FolderState(
            tree,
            extras_tree,
            extras_commit,
            meta,
            Coverage(extras_commit, ignored_held, pinned),
            tuple(skipped + extra_skipped),
            count + len(extras),
        )

    def _scan_state(self, repo: ShadowRepo) -> dict[str, Any] | None:
        """What the last snapshot left for the next one (the files it holds and their
        permission bits), if the persistent index is still the one it wrote."""
        try:
            state = json.loads((repo.home / SCAN_STATE_FILE).read_text(encoding="utf-8"))
            info = repo.index.stat()
        except (OSError, ValueError):
            return None
        signature = [info.st_mtime_ns, info.st_size, info.st_ino]
        if not isinstance(state, dict) or state.get("index") != signature:
            return None
        return state

    def _save_scan_state(
        self, repo: ShadowRepo, count: int, modes: dict[str, int], tree: str
    ) -> None:
        try:
            info = repo.index.stat()
        except OSError:
            return
        state = {"index": [info.st_mtime_ns, info.st_size, info.st_ino], "count": count}
        state["modes"] = modes
        state["recent"] = self._recent.pop(repo.key, [])
        state["tree"] = tree
        temporary = repo.home / (SCAN_STATE_FILE + ".tmp")
        temporary.write_text(json.dumps(state, ensure_ascii=True), encoding="utf-8")
        os.replace(temporary, repo.home / SCAN_STATE_FILE)

    def _fast_tree(
        self, repo: ShadowRepo, umask: int, previous: dict[str, Any]
    ) -> tuple[str, int, list[SkippedFile], dict[str, int], Untracked]:
        """The persistent index brought up to date from what git reports changed."""
        # Both walks at once: the stat of every file held, the listing of every folder.
        dirty_job = self._git_runner.start(
            repo, "diff-files", "-z", "--name-only", work_tree=repo.sandbox
        )
        listing = self._run_untracked_listing(repo)
        dirty = split_z(self._git_runner.wait(repo, dirty_job, "diff-files"))
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
                note_bits(modes, path, info, umask)
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
                note_bits(modes, path, info, umask)
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
            self._git_runner.add_to_index(repo, repo.index, update, new_files=len(update))
        tree = self._git_runner.run(repo, "write-tree", work_tree=repo.sandbox).decode().strip()
        return tree, count, skipped, modes, untracked

    def _write_tree(
        self, repo: ShadowRepo, umask: int
    ) -> tuple[str, set[str], list[SkippedFile], dict[str, int]]:
        """Bring the persistent index in line with the folder (git's view) and write its tree.

        Also returns the paths it holds, those it left out, and the permission bits of the
        files git would not give back as they are.
        """
        paths, skipped, modes = self._snapshot_paths(repo, umask)
        tree = self._write_index(repo, repo.index, paths)
        return tree, set(paths), skipped, modes

    def _write_index(self, repo: ShadowRepo, index: Path, paths: list[str]) -> str:
        """Make `index` hold exactly `paths` as they are on disk; its tree."""
        if not paths and index != repo.index:
            index.unlink(missing_ok=True)  # nothing to hold
            if repo.key not in self._empty_tree_written:
                # Commits name it: it must be in the repository, not only known to git.
                self._git_runner.run(repo, "hash-object", "-w", "-t", "tree", "--stdin", input=b"")
                self._empty_tree_written.add(repo.key)
            return EMPTY_TREE
        listed = set(paths)
        indexed = split_z(
            self._git_runner.run(repo, "ls-files", "-z", index=index, work_tree=repo.sandbox)
        )
        stale = [path for path in indexed if path not in listed]
        if stale:
            self._drop_from_index(repo, index, stale)
        if paths:
            # The persistent index, rebuilt here, is split: a later snapshot that changes a
            # few files writes a small index, not all of it again.
            new_files = len(listed) - (len(indexed) - len(stale))
            self._git_runner.add_to_index(
                repo, index, paths, new_files=new_files, split=index == repo.index
            )
        return (
            self._git_runner.run(repo, "write-tree", index=index, work_tree=repo.sandbox)
            .decode()
            .strip()
        )

    def _extra_files(
        self,
        repo: ShadowRepo,
        untracked: Untracked,
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
                note_bits(modes, path, info, umask)
        return chosen, held, skipped

    def _state_of(self, repo: ShadowRepo, checkpoint: Checkpoint) -> FolderState:
        """The state a checkpoint holds (its extras and meta read from its parent commit)."""
        extras = checkpoint.coverage.extras
        if extras is None:
            return FolderState(
                checkpoint.tree,
                EMPTY_TREE,
                "",
                FolderMeta(),
                checkpoint.coverage,
                checkpoint.skipped,
            )
        meta = self._meta_cache.get(extras)
        raw = self._git_runner.run(repo, "cat-file", "commit", extras)
        header, _sep, message = raw.partition(b"\n\n")
        extras_tree = header.split(b"\n", 1)[0].split(b" ", 1)[1].decode().strip()
        if meta is None:
            meta = FolderMeta.from_text(message)
            self._meta_cache[extras] = meta
        return FolderState(
            checkpoint.tree, extras_tree, extras, meta, checkpoint.coverage, checkpoint.skipped
        )

    def _pin_into(self, repo: ShadowRepo, checkpoint: Checkpoint, paths: list[str]) -> list[str]:
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
            if path in held or knew_absent(state, path, path in ignored):
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
                note_bits(modes, path, info, state.meta.umask)
        coverage = Coverage(
            checkpoint.coverage.extras,
            checkpoint.coverage.ignored_held,
            tuple(sorted({*checkpoint.coverage.pinned, *new})),
        )
        commit = checkpoint.commit
        if add:
            try:
                self._git_runner.run(repo, "read-tree", state.extras_tree, index=repo.scratch_index)
                self._git_runner.run(
                    repo,
                    "update-index",
                    "--add",
                    "-z",
                    "--stdin",
                    input=join_z(add),
                    index=repo.scratch_index,
                    work_tree=repo.sandbox,
                )
                extras_tree = (
                    self._git_runner.run(repo, "write-tree", index=repo.scratch_index)
                    .decode()
                    .strip()
                )
            finally:
                repo.scratch_index.unlink(missing_ok=True)
            meta = FolderMeta(state.meta.umask, modes, state.meta.empty_dirs)
            extras = (
                self._git_runner.run(
                    repo, "commit-tree", extras_tree, "-F", "-", input=meta.to_text()
                )
                .decode()
                .strip()
            )
            commit = (
                self._git_runner.run(
                    repo, "commit-tree", checkpoint.tree, "-p", extras, "-m", COMMIT_MESSAGE
                )
                .decode()
                .strip()
            )
            self._git_runner.run(repo, "update-ref", REF_PREFIX + checkpoint.id, commit)
            coverage = Coverage(extras, coverage.ignored_held, coverage.pinned)
        with self._catalog.connect() as conn:
            conn.execute(
                "UPDATE checkpoints SET commit_id = ?, coverage = ? WHERE id = ?",
                (commit, coverage.to_json(), checkpoint.id),
            )
        return problems

    def _held(self, repo: ShadowRepo, state: FolderState, paths: list[str]) -> set[str]:
        """Those of `paths` the state holds (in git's view or beyond)."""
        trees = [state.tree] + ([state.extras_tree] if state.extras_tree != EMPTY_TREE else [])
        queries = [(path, f"{tree}:{path}") for path in paths for tree in trees]
        report = self._git_runner.run(
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
