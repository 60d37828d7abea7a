"""What is in a sandbox folder, by git's view and beyond it: the files a snapshot holds,
what the persistent index does not hold yet, ignored files and empty folders."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

from .files import HEAVY_FOLDERS, heavy_prefix, note_bits, project_exclude_file
from .git import ShadowRepo, join_z, split_z
from .records import CheckpointError, SkippedFile
from .repository import ShadowRepositories
from .state import Untracked


class FolderScanner(ShadowRepositories):
    """Lists a sandbox folder the way a snapshot sees it (git does the walking)."""

    def _run_untracked_listing(self, repo: ShadowRepo) -> list[str]:
        """Every path the persistent index does not hold, ignored or not, in one walk: files
        in folders it holds files of, and whole folders (`dir/`) it holds nothing of."""
        return split_z(
            self._git_runner.run(
                repo, "ls-files", "-z", "--others", "--directory", work_tree=repo.sandbox
            )
        )

    def _untracked(self, repo: ShadowRepo, entries: list[str]) -> Untracked:
        """Sort what the index does not hold: ignored (kept beside git's view, bounded), new
        files (to add), folders with nothing in them; heavy folders and private paths out."""
        found = Untracked()
        visible = [e for e in entries if not self._hidden(repo, e.rstrip("/"))]
        ignored = self._ignored_paths(repo, [e.rstrip("/") for e in visible])
        for entry in visible:
            path = entry.rstrip("/")
            is_dir = entry.endswith("/")
            if path in ignored:
                heavy_at = heavy_prefix(path)
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

    def _new_folder(self, repo: ShadowRepo, path: str, found: Untracked) -> None:
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
            listing = self._git_runner.run(
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
            for entry in split_z(listing):
                inner = f"{folder}/{entry.rstrip('/')}"
                if self._hidden(repo, inner):
                    continue
                heavy_at = heavy_prefix(inner)
                if heavy_at is not None:
                    found.heavy.add(heavy_at)
                elif entry.endswith("/"):
                    found.ignored_dirs.append(inner)
                else:
                    found.ignored_files.append(inner)

    def _empty_within(self, repo: ShadowRepo, path: str) -> list[str]:
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

    def _snapshot_paths(
        self, repo: ShadowRepo, umask: int
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
                note_bits(modes, path, info, umask)
                if info.st_ctime >= cutoff:
                    recent.append(path)
            elif not stat.S_ISLNK(info.st_mode):
                continue
            paths.append(path)
        return paths, skipped, modes

    def _in_index(self, repo: ShadowRepo, index: Path, paths: list[str]) -> set[str]:
        """Those of `paths` the index holds."""
        if not paths:
            return set()
        listing = self._git_runner.run(
            repo,
            "ls-files",
            "-z",
            "--",
            *(f":(literal){p}" for p in paths),
            index=index,
            work_tree=repo.sandbox,
        )
        return set(split_z(listing)) & set(paths)

    def _ignored_candidates(
        self, repo: ShadowRepo, untracked: Untracked
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

    def _unignored_files(self, repo: ShadowRepo) -> list[str]:
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
        self, repo: ShadowRepo, work_tree: Path, folder: Path, prefix: str
    ) -> tuple[list[str], list[str]]:
        """The unignored files under `folder` (of the repository whose work tree is
        `work_tree`) and its nested repositories, as paths in the sandbox."""
        args = ["ls-files", "-z", "--others", "--exclude-standard"]
        project_exclude = project_exclude_file(work_tree)
        if project_exclude is not None:
            args.append(f"--exclude-from={project_exclude}")
        args += self._private_excludes(repo, work_tree)
        # Run in `folder`, ls-files lists only what is under it, relative to it.
        listing = self._git_runner.run(
            repo, *args, work_tree=work_tree, cwd=folder, index=repo.empty_index
        )
        files: list[str] = []
        nested: list[str] = []
        for path in split_z(listing):
            (nested if path.endswith("/") else files).append(prefix + path)
        return files, nested

    def _enclosing_work_tree(self, repo: ShadowRepo) -> Path | None:
        """The work tree of a repository the sandbox is a sub-folder of, if the sandbox is
        not its own repository and that repository does not ignore it."""
        if (repo.sandbox / ".git").exists():
            return None
        top = next((p for p in repo.sandbox.parents if (p / ".git").exists()), None)
        if top is None:
            return None
        relative = repo.sandbox.relative_to(top).as_posix() + "/"
        check = self._git_runner.call(
            repo, "check-ignore", "-q", "--no-index", relative, work_tree=top, check=False
        )
        return None if check.returncode == 0 else top

    def _ignored_paths(self, repo: ShadowRepo, paths: list[str]) -> set[str]:
        """Those of `paths` the sandbox's ignore rules ignore."""
        if not paths:
            return set()
        exclude = project_exclude_file(repo.sandbox)
        settings = ["-c", f"core.excludesFile={exclude}"] if exclude is not None else []
        check = self._git_runner.call(
            repo,
            *settings,
            "check-ignore",
            "--no-index",
            "-z",
            "--stdin",
            input=join_z(paths),
            work_tree=repo.sandbox,
            index=repo.empty_index,
            check=False,
        )
        return set(split_z(check.stdout))
