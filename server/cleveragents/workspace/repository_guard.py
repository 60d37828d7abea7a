"""Repository guard: no git repository a command makes or changes may run code later unasked.

The read-only mounts (`protected.py`) cover the sandbox root's own `.git` before a command
starts; no mount made in advance covers a path the command invents: a new repository where
there was none (`git init -q . && git config core.fsmonitor 'touch /tmp/pwned'`), a nested
one anywhere, a `.git` file pointing at a crafted git folder, a `commondir`, a hook in any of
them. The next `git status` an editor or a shell prompt runs there would run that program on
the host, outside every wall.

So every command runs between two scans of the sandbox (`guard_command`): every git folder
found (a `.git` folder, a folder that is itself a git folder, and every `.git` file or link),
and in each the files that decide what programs git runs: `config` and `config.worktree`
(only the keys not known to be harmless count: `SAFE_CONFIG_KEYS`), `commondir`, the hooks
(also under a `core.hooksPath` inside the sandbox), the `.git` pointer. Anything new or
changed there is a *protected write*: kept with the explicit opt-in, else the approver is
asked (under every profile; an "always allow" does not answer it), and with nobody to ask or a
no it is undone: a hook removed, a config put back byte for byte, and a new repository's config
kept but for its code-running keys (its objects and refs stay: it is still a repository).

The scan is incremental: the folders of the sandbox are remembered with their ctime (which a
process cannot set back, unlike the mtime: any entry added, removed or renamed in a folder
changes it), so a later scan lists only the folders that changed and stats the others. Never
followed: symbolic links to folders. Not descended: a git folder's `objects`, `refs`, `logs`
and `lfs`. Bounded by `MAX_FOLDERS`; a scan stopped there says so in the command's result.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import hashlib
import os
import shutil
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from cleveragents.tool.errors import ToolError
from cleveragents.tool.policy import protected_writes_asker

from ..settings_table import ENV_ALLOW_PROTECTED_WRITES
from ..tool.serialization import register_shape, to_data
from .command_policy import never_visible_to_tools

# Folders a scan looks at, at most; past this the scan stops and the result says so.
MAX_FOLDERS = 1_000_000
# A file that decides what git runs is read up to this size; a larger one counts by its digest.
MAX_CODE_FILE_BYTES = 1024 * 1024
# A folder whose ctime is this close to the scan's start may still change within the same
# clock tick without its ctime moving: it is listed again next time rather than trusted.
_RACY_NS = 2_000_000_000
_GIT_TIMEOUT_S = 30.0
# Inside a git folder: nothing here runs code, and it is where a repository's bulk lives.
_GIT_BULK = frozenset({"objects", "refs", "logs", "lfs"})
_GIT_CONFIGS = ("config", "config.worktree")

# Config keys that never make git run a program (lower case; `*` is one subsection). Every
# other key that a command adds or changes is a protected write: aliases (`!cmd`, or `-c
# core.fsmonitor=…` on a git command), `core.fsmonitor`, `core.hooksPath`, `core.sshCommand`,
# `core.pager`, `core.editor`, `sequence.editor`, `diff.external`, filter and merge drivers,
# `credential.helper`, `include.path`, `includeIf.*`, `protocol.*.allow`, `url.*.insteadOf`,
# `hook.*`, `remote.*.uploadpack`, and whatever a later git adds.
SAFE_CONFIG_KEYS = (
    "core.repositoryformatversion",
    "core.filemode",
    "core.bare",
    "core.logallrefupdates",
    "core.ignorecase",
    "core.precomposeunicode",
    "core.symlinks",
    "core.autocrlf",
    "core.safecrlf",
    "core.eol",
    "core.quotepath",
    "core.compression",
    "core.untrackedcache",
    "core.sparsecheckout",
    "core.sparsecheckoutcone",
    "core.splitindex",
    "core.commitgraph",
    "core.multipackindex",
    "core.checkstat",
    "core.trustctime",
    "user.*",
    "author.*",
    "committer.*",
    "init.defaultbranch",
    "extensions.objectformat",
    "extensions.worktreeconfig",
    "remote.*.url",
    "remote.*.pushurl",
    "remote.*.fetch",
    "remote.*.push",
    "remote.*.tagopt",
    "remote.*.prune",
    "remote.*.mirror",
    "branch.*.remote",
    "branch.*.merge",
    "branch.*.rebase",
    "branch.*.pushremote",
    "branch.*.description",
    "submodule.*.url",
    "submodule.*.active",
    "pull.rebase",
    "pull.ff",
    "push.default",
    "push.autosetupremote",
    "fetch.prune",
    "merge.ff",
    "rerere.enabled",
    "gc.auto",
    "gc.autodetach",
    "advice.*",
    "i18n.*",
)

Role = Literal["config", "hook", "pointer", "redirect"]


@dataclass(frozen=True, slots=True)
class CodeFile:
    """One file whose content decides what programs git runs, as a scan found it."""

    path: str  # relative to the sandbox root, '/'-separated
    role: Role
    repository: str  # the git folder it belongs to (relative), or the `.git` pointer itself
    data: bytes | None  # the content, or a link's target; None: not a readable regular file
    digest: str  # over the kind, the executable bit and the content
    link: bool = False
    mode: int = 0o644


@dataclass(frozen=True, slots=True)
class RepositoryScan:
    """What one scan found: the code-running files and the git folders they belong to."""

    files: dict[str, CodeFile]
    git_folders: frozenset[str]
    incomplete: str | None = None  # why the scan stopped early


@dataclass(frozen=True, slots=True)
class ProtectedChange:
    """A write a command made that can run code later: what, where, what it was before."""

    path: str
    role: Role
    what: str
    new_repository: bool
    before: CodeFile | None


# A tool result names the path and what it is; the file's old content stays with the guard.
register_shape(
    ProtectedChange,
    omit=("role", "new_repository", "before"),
)


@dataclass(slots=True)
class _Listing:
    ctime: int | None  # None: racy, list it again next time
    folders: tuple[str, ...]
    dot_git: bool  # holds an entry named `.git` (a folder, a file or a link)
    git_folder: bool  # looks like a git folder itself (HEAD with objects and refs, or commondir)


@dataclass(slots=True)
class _Tree:
    listings: dict[str, _Listing] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


_trees: dict[str, _Tree] = {}
_trees_lock = threading.Lock()


def _tree_for(root: str) -> _Tree:
    with _trees_lock:
        tree = _trees.get(root)
        if tree is None:
            tree = _trees[root] = _Tree()
        return tree


def _join(base: str, name: str) -> str:
    return name if not base else f"{base}/{name}"


def _list(full: str, ctime: int, started: int) -> _Listing | None:
    folders: list[str] = []
    names: set[str] = set()
    dot_git = False
    try:
        with os.scandir(full) as entries:
            for entry in entries:
                names.add(entry.name)
                if entry.name == ".git":
                    dot_git = True
                with contextlib.suppress(OSError):
                    if entry.is_dir(follow_symlinks=False):
                        folders.append(entry.name)
    except OSError:
        return None
    git_folder = "HEAD" in names and (
        ("objects" in names and "refs" in names) or "commondir" in names
    )
    if git_folder or os.path.basename(full) == ".git":
        folders = [name for name in folders if name not in _GIT_BULK]
    racy = ctime >= started - _RACY_NS
    return _Listing(None if racy else ctime, tuple(sorted(folders)), dot_git, git_folder)


def _walk(
    root: str, tree: _Tree, limit: int, hidden: frozenset[str]
) -> tuple[dict[str, _Listing], str | None]:
    """Every folder under `root` (not through links, not into `hidden`), listed again only
    where it changed."""
    started = time.time_ns()
    seen: dict[str, _Listing] = {}
    stack = [""]
    while stack:
        if len(seen) >= limit:
            return seen, f"the scan stopped after {limit} folders"
        relative = stack.pop()
        full = os.path.join(root, relative) if relative else root
        try:
            info = os.lstat(full)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode):
            continue
        known = tree.listings.get(relative)
        if known is None or known.ctime is None or known.ctime != info.st_ctime_ns:
            listing = _list(full, info.st_ctime_ns, started)
            if listing is None:
                continue
        else:
            listing = known
        seen[relative] = listing
        inner = (_join(relative, name) for name in reversed(listing.folders))
        stack.extend(path for path in inner if path not in hidden)
    return seen, None


def _digest(kind: str, mode: int, data: bytes | None) -> str:
    executable = "x" if mode & 0o111 else "-"
    return hashlib.sha256(f"{kind}:{executable}:".encode() + (data or b"")).hexdigest()


def _read_code_file(root: str, relative: str, role: Role, repository: str) -> CodeFile | None:
    """The file as it is now; None when there is nothing there. Never blocks on a FIFO and
    never follows a link (a link's target is what is recorded)."""
    full = os.path.join(root, relative)
    try:
        info = os.lstat(full)
    except OSError:
        return None
    if stat.S_ISLNK(info.st_mode):
        try:
            target = os.fsencode(os.readlink(full))
        except OSError:
            target = b""
        return CodeFile(relative, role, repository, target, _digest("link", 0, target), True, 0)
    mode = stat.S_IMODE(info.st_mode)
    if not stat.S_ISREG(info.st_mode):
        kind = f"special-{stat.S_IFMT(info.st_mode)}"
        return CodeFile(relative, role, repository, None, _digest(kind, mode, None), mode=mode)
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(full, flags)
    except OSError:
        return CodeFile(relative, role, repository, None, _digest("unreadable", mode, None))
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(MAX_CODE_FILE_BYTES + 1)
    if len(data) > MAX_CODE_FILE_BYTES:
        hasher = hashlib.sha256(data)
        return CodeFile(
            relative, role, repository, None, _digest(f"large-{hasher.hexdigest()}", mode, None)
        )
    return CodeFile(relative, role, repository, data, _digest("file", mode, data), mode=mode)


def _inside(root: str, path: str) -> str | None:
    """`path` (absolute, real) relative to `root`, or None when it lies outside."""
    if path == root:
        return ""
    if path.startswith(root.rstrip("/") + "/"):
        return path[len(root.rstrip("/")) + 1 :]
    return None


def _pointer_target(root: str, holder: str, data: bytes | None, link: bool) -> str | None:
    """The git folder a `.git` file (`gitdir: X`) or link points to, if inside the sandbox."""
    if data is None:
        return None
    text = os.fsdecode(data).strip()
    if not link:
        if not text.startswith("gitdir:"):
            return None
        text = text[len("gitdir:") :].strip()
    base = os.path.join(root, holder)
    return _inside(root, os.path.realpath(os.path.join(base, text)))


def _hooks_path(config: CodeFile, git_folder: str, root: str) -> str | None:
    """Where `core.hooksPath` in this config sends git, if it is inside the sandbox."""
    if config.data is None or b"hookspath" not in config.data.lower():
        return None
    entries = config_entries(config.data)
    values = [value for key, value in entries or [] if key == "core.hookspath"]
    if not values:
        return None
    value = os.path.expanduser(values[-1])
    top = os.path.dirname(git_folder) if os.path.basename(git_folder) == ".git" else git_folder
    return _inside(root, os.path.realpath(os.path.join(root, top, value)))


def _hook_files(root: str, hooks: str, repository: str) -> Iterator[CodeFile]:
    try:
        names = sorted(os.listdir(os.path.join(root, hooks)))
    except OSError:
        return
    for name in names:
        if name.endswith(".sample"):
            continue  # git never runs these
        found = _read_code_file(root, _join(hooks, name), "hook", repository)
        if found is not None:
            yield found


def _git_folder_files(root: str, folder: str) -> Iterator[tuple[CodeFile, str | None]]:
    """The code-running files of one git folder, with the git folder a `commondir` names."""
    configs = []
    for name in _GIT_CONFIGS:
        found = _read_code_file(root, _join(folder, name), "config", folder)
        if found is not None:
            configs.append(found)
            yield found, None
    redirect = _read_code_file(root, _join(folder, "commondir"), "redirect", folder)
    if redirect is not None:
        common = None
        if redirect.data is not None and not redirect.link:
            where = os.path.join(root, folder, os.fsdecode(redirect.data).strip())
            common = _inside(root, os.path.realpath(where))
        yield redirect, common
    hook_folders = [_join(folder, "hooks")]
    for config in configs:
        other = _hooks_path(config, folder, root)
        if other is not None:
            hook_folders.append(other)
    for hooks in dict.fromkeys(hook_folders):
        for hook in _hook_files(root, hooks, folder):
            yield hook, None


class RepositoryGuard:
    """Scans one sandbox for the code-running parts of its git repositories."""

    def __init__(
        self, sandbox_root: str, max_folders: int = MAX_FOLDERS, hidden: Iterable[str] = ()
    ) -> None:
        """`hidden`: real paths never looked into (the never-visible ones: credentials, our
        own history and checkpoint store, which the daemon itself changes)."""
        self.root = os.path.realpath(sandbox_root)
        self.max_folders = max_folders
        inside = (_inside(self.root, os.path.realpath(path)) for path in hidden)
        self.hidden = frozenset(path for path in inside if path)

    def scan(self) -> RepositoryScan:
        tree = _tree_for(self.root)
        with tree.lock:
            listings, incomplete = _walk(self.root, tree, self.max_folders, self.hidden)
            tree.listings = listings
        files: dict[str, CodeFile] = {}
        folders: list[str] = []
        for relative, listing in listings.items():
            if listing.git_folder or os.path.basename(relative) == ".git":
                folders.append(relative)
            if listing.dot_git:
                holder = _join(relative, ".git")
                if holder in listings:
                    continue  # a folder: it is scanned as one
                pointer = _read_code_file(self.root, holder, "pointer", holder)
                if pointer is None:
                    continue
                files[holder] = pointer
                target = _pointer_target(self.root, relative, pointer.data, pointer.link)
                if target is not None:
                    folders.append(target)
        done: set[str] = set()
        while folders:
            folder = folders.pop()
            if folder in done:
                continue
            done.add(folder)
            for found, common in _git_folder_files(self.root, folder):
                files.setdefault(found.path, found)
                if common is not None:
                    folders.append(common)
        return RepositoryScan(files, frozenset(done), incomplete)

    def changes_since(self, before: RepositoryScan) -> tuple[list[ProtectedChange], RepositoryScan]:
        """The protected writes between `before` and now, and the scan of now."""
        after = self.scan()
        changes = []
        for path, now in sorted(after.files.items()):
            old = before.files.get(path)
            if old is not None and old.digest == now.digest:
                continue
            new_repository = now.repository not in before.git_folders and now.role != "pointer"
            what = _what_changed(old, now, new_repository)
            if what is not None:
                changes.append(ProtectedChange(path, now.role, what, new_repository, old))
        return changes, after

    def undo(self, changes: list[ProtectedChange]) -> list[str]:
        """Put each change back; returns a line for each that could not be undone."""
        failures = []
        for change in changes:
            try:
                self._undo_one(change)
            except OSError as exc:
                failures.append(f"{change.path}: {exc.strerror or exc}")
        return failures

    def _undo_one(self, change: ProtectedChange) -> None:
        before = change.before
        if before is not None and before.data is not None:
            _replace(self.root, change.path, before.data, before.mode, before.link)
            return
        if before is not None:
            raise OSError(0, "what was there before was not kept (not a readable file)")
        if change.role == "config":
            now = _read_code_file(self.root, change.path, "config", change.path)
            kept = None
            if now is not None and now.data is not None and not now.link:
                kept = config_entries(now.data)
            if kept is not None:
                safe = [(key, value) for key, value in kept if _safe_key(key)]
                _replace(self.root, change.path, config_text(safe), 0o644, False)
                return
        _remove(self.root, change.path)


def _what_changed(old: CodeFile | None, now: CodeFile, new_repository: bool) -> str | None:
    where = "in a new repository" if new_repository else "in an existing repository"
    if now.role == "pointer":
        kind = "link" if now.link else "file"
        return f"a .git {kind} {'made' if old is None else 'changed'}: it sends git elsewhere"
    if now.role == "redirect":
        return (
            f"commondir {'made' if old is None else 'changed'} {where}: it sends git to "
            "another folder's config and hooks"
        )
    if now.role == "hook":
        return f"hook {'made' if old is None else 'changed'} {where}"
    keys = _unsafe_keys_changed(old, now)
    if not keys:
        return None
    return f"config {'made' if old is None else 'changed'} {where}: {', '.join(keys)}"


def _unsafe_keys_changed(old: CodeFile | None, now: CodeFile) -> list[str]:
    """The code-running keys that differ; every key when either side cannot be read."""
    before = [] if old is None else (config_entries(old.data) if old.data is not None else None)
    after = config_entries(now.data) if now.data is not None else None
    if before is None or after is None or (old is not None and old.link) or now.link:
        return ["(not a config git can read here: the whole file)"]
    unsafe_before = [entry for entry in before if not _safe_key(entry[0])]
    unsafe_after = [entry for entry in after if not _safe_key(entry[0])]
    if unsafe_before == unsafe_after:
        return []
    changed = {key for key, _ in set(unsafe_before) ^ set(unsafe_after)}
    return sorted(changed) or ["(the order of code-running keys)"]


def _safe_key(key: str) -> bool:
    parts = key.split(".")
    shape = f"{parts[0]}.*.{parts[-1]}" if len(parts) > 2 else key
    return any(fnmatch.fnmatchcase(shape, pattern) for pattern in SAFE_CONFIG_KEYS)


def _git_environment() -> dict[str, str]:
    """git reading a file it is handed and nothing else: no system, global or repo config."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": "/nonexistent",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "LC_ALL": "C",
    }


def config_entries(data: bytes) -> list[tuple[str, str]] | None:
    """(key, value) pairs of a git config, as git reads it (`--no-includes`), in order; None
    when git cannot read it or is not installed. git runs from `/` with no config of its own."""
    git = shutil.which("git")
    if git is None:
        return None
    with tempfile.NamedTemporaryFile(prefix="cleveragents-config-") as copy:
        copy.write(data)
        copy.flush()
        try:
            done = subprocess.run(
                [git, "config", "--file", copy.name, "--no-includes", "--list", "-z"],
                capture_output=True,
                cwd="/",
                env=_git_environment(),
                timeout=_GIT_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            return None
    if done.returncode != 0:
        return None
    entries = []
    for item in done.stdout.split(b"\0"):
        if not item:
            continue
        key, _, value = item.partition(b"\n")
        entries.append((os.fsdecode(key).lower(), os.fsdecode(value)))
    return entries


def _quoted(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped.replace(chr(9), chr(92) + "t")}"'


def config_text(entries: list[tuple[str, str]]) -> bytes:
    """A git config holding exactly `entries` (keys as `config --list` prints them)."""
    lines: list[str] = []
    current = None
    for key, value in entries:
        section, _, rest = key.partition(".")
        subsection, _, name = rest.rpartition(".")
        header = f"[{section}]" if not subsection else f"[{section} {_quoted(subsection)}]"
        if header != current:
            lines.append(header)
            current = header
        lines.append(f"\t{name} = {_quoted(value)}")
    return ("\n".join(lines) + "\n").encode() if lines else b""


def _parent_fd(root: str, relative: str) -> tuple[int, str]:
    """A descriptor of the folder holding `relative`, reached from the root without following
    a link at any step (a command may have swapped one in), and the last name."""
    *folders, name = relative.split("/")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for folder in folders:
            inner = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = inner
    except OSError:
        os.close(fd)
        raise
    return fd, name


def _remove(root: str, relative: str) -> None:
    fd, name = _parent_fd(root, relative)
    try:
        try:
            os.unlink(name, dir_fd=fd)
        except IsADirectoryError:
            shutil.rmtree(name, dir_fd=fd)
        except FileNotFoundError:
            pass
    finally:
        os.close(fd)


def _replace(root: str, relative: str, data: bytes, mode: int, link: bool) -> None:
    """Put `data` (a file's bytes, or a link's target) at `relative`, atomically, whatever a
    command left there (a link is replaced, never written through)."""
    fd, name = _parent_fd(root, relative)
    temporary = f".{name}.cleveragents-restore"
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary, dir_fd=fd)
        if link:
            os.symlink(os.fsdecode(data), temporary, dir_fd=fd)
        else:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
            out = os.open(temporary, flags, mode, dir_fd=fd)
            with os.fdopen(out, "wb") as handle:
                handle.write(data)
            os.chmod(temporary, mode, dir_fd=fd)
        try:
            os.rename(temporary, name, src_dir_fd=fd, dst_dir_fd=fd)
        except (IsADirectoryError, OSError) as exc:
            if not os.path.isdir(f"/proc/self/fd/{fd}/{name}"):
                raise exc from None
            shutil.rmtree(name, dir_fd=fd)
            os.rename(temporary, name, src_dir_fd=fd, dst_dir_fd=fd)
    finally:
        os.close(fd)


# -- around a command --------------------------------------------------------------------------


def _report(lines: list[str], undone: bool, failures: list[str]) -> str:
    if undone:
        head = (
            "cleveragents: undid what this command wrote that could run programs later, "
            "outside the sandbox (a protected path; no one approved it; to allow such writes "
            f"set {ENV_ALLOW_PROTECTED_WRITES}=1):"
        )
    else:
        head = "cleveragents: this command wrote what can run programs later (kept, allowed):"
    text = "\n".join([head, *(f"  {line}" for line in lines)])
    if failures:
        text += "\n" + "\n".join(f"  could not undo {line}" for line in failures)
    return text + "\n"


async def guard_command(
    sandbox_root: str, allow: bool, run: Callable[[], Awaitable[dict[str, Any]]]
) -> dict[str, Any]:
    """Run `run` (a command) between two scans; keep, ask about or undo its protected writes.

    The result gains `protected_writes` (each with its path, what it was and its outcome:
    `kept`, `approved` or `undone`) and stderr says what was undone and why. A command that
    fails or is cancelled has its protected writes undone (or listed, with the opt-in) all the
    same.
    """
    hidden = await asyncio.to_thread(never_visible_to_tools)
    guard = RepositoryGuard(sandbox_root, hidden=hidden)
    before = await asyncio.to_thread(guard.scan)
    try:
        result = await run()
    except (ToolError, asyncio.CancelledError) as failed:
        changes, _ = await asyncio.to_thread(guard.changes_since, before)
        if not changes:
            raise
        failures = [] if allow else await asyncio.to_thread(guard.undo, changes)
        if isinstance(failed, ToolError):
            lines = [f"{change.path}: {change.what}" for change in changes]
            raise ToolError(
                f"{failed}\n{_report(lines, not allow, failures)}", kind=failed.kind
            ) from None
        raise
    changes, after = await asyncio.to_thread(guard.changes_since, before)
    if after.incomplete is not None:
        result["repository_guard"] = (
            f"incomplete: {after.incomplete}; repositories beyond were not checked"
        )
    if not changes:
        return result
    lines = [f"{change.path}: {change.what}" for change in changes]
    outcome = "kept"
    if not allow:
        asker = protected_writes_asker()
        question = (
            "the command wrote what can run programs later, outside the sandbox: "
            + "; ".join(lines)
            + ". Keep it? (No undoes it.)"
        )
        approved = False
        if asker is not None:
            try:
                approved = await asker(question)
            except asyncio.CancelledError:
                await asyncio.to_thread(guard.undo, changes)
                raise
        outcome = "approved" if approved else "undone"
    failures = await asyncio.to_thread(guard.undo, changes) if outcome == "undone" else []
    result["protected_writes"] = [{**to_data(change), "outcome": outcome} for change in changes]
    if outcome != "approved":
        result["stderr"] = result.get("stderr", "") + _report(lines, outcome == "undone", failures)
    return result
