"""Protected paths: files in a workspace that make programs run later, outside every wall.

A model that may edit files and run commands must not be able to leave code behind that runs
on its own afterwards, outside the sandbox, with nobody asked: a git hook (`.git/hooks/*`),
`core.fsmonitor` or `core.hooksPath` in `.git/config` (editors run `git status` on their own),
a VS Code task that runs when the folder opens, an `.envrc` that direnv loads on `cd`.

What is protected, matched at any depth of the sandbox (a name pattern per path component,
case-insensitively) unless a pattern starts with `/` (then from the sandbox root):

- `.git` (the file tools: all of it): hooks, config (fsmonitor, hooksPath, sshCommand,
  filter drivers, aliases), info/attributes;
- `.vscode`, `*.code-workspace`: tasks (`runOn: folderOpen`), launch configurations,
  settings that name programs, mcp.json;
- `.idea`: run configurations and startup tasks;
- `.envrc`: direnv runs it in the user's shell on `cd`;
- `.husky`: git hooks, when `core.hooksPath` points there;
- `.claude/settings.json`, `.claude/settings.local.json`: hooks another agent runs unasked.

The file tools (`write_file`, `edit_file`) ask before writing any of them under every
profile, `full-auto` included, and are denied where nobody can be asked. Commands get them
read-only at the sandbox root (`command_mounts`); in `.git` only the parts that run code are
read-only, so `git commit`, `git checkout`, `git stash` and `git fetch` from a local remote keep
working (see `git_protected_parts`). A path that does not exist yet is covered by an empty
read-only placeholder for the command's lifetime, removed afterwards if still empty. What no
mount can cover (a new or nested repository, a `.git` file, a `commondir`) the repository
guard (`repository_guard.py`) finds after the command and undoes unless approved.

The `allow_protected_writes` setting (`settings_table.py`) lets both write them without asking
(the user's explicit opt-in); `protected_paths` adds patterns (separated by `:` or commas).
"""

from __future__ import annotations

import contextlib
import fnmatch
import glob
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass

DEFAULT_PROTECTED = (
    ".git",
    ".vscode",
    "*.code-workspace",
    ".idea",
    ".envrc",
    ".husky",
    ".claude/settings.json",
    ".claude/settings.local.json",
)

# The parts of a repository's git folder that run code or decide what runs; a command gets
# them read-only. Objects, refs, logs, the index, HEAD and the other state files stay
# writable: committing, checking out, stashing, rebasing and fetching need them, and none of
# them runs a program. `modules` holds submodules' own git folders (hooks, config), which
# `git status` enters: all of it is read-only, so a command cannot add one either (`git
# submodule add/update` fail inside). `worktrees/*` are linked worktrees' git folders.
GIT_PROTECTED_PARTS = (
    "hooks",
    "config",
    "config.worktree",
    "info",
    "modules",
    "worktrees/*/config.worktree",
    "worktrees/*/commondir",
    "worktrees/*/gitdir",
)
# Covered by an empty read-only placeholder while a command runs when missing (as other
# missing protected paths are): a command cannot then add a hook, an attributes file or a
# submodule's git folder. An empty one of these is what git itself may have.
_GIT_FOLDERS = ("hooks", "info", "modules")
# A `commondir` a command creates (it sends git to another folder's config and hooks) is no
# placeholder's to stop (git refuses to run beside an empty one): the repository guard
# (`repository_guard.py`) finds it after the command and undoes it unless approved.


def _patterns(extra: tuple[str, ...]) -> tuple[tuple[bool, tuple[str, ...]], ...]:
    """Each pattern as (anchored at the root, its components, lower case)."""
    found = []
    for pattern in (*DEFAULT_PROTECTED, *extra):
        text = pattern.strip().replace("\\", "/")
        anchored = text.startswith("/")
        parts = tuple(part.lower() for part in text.strip("/").split("/") if part not in ("", "."))
        if parts and ".." not in parts:
            found.append((anchored, parts))
    return tuple(found)


def split_patterns(text: str) -> tuple[str, ...]:
    return tuple(
        part.strip() for part in text.replace(",", os.pathsep).split(os.pathsep) if part.strip()
    )


def matching_pattern(parts: tuple[str, ...], extra: tuple[str, ...] = ()) -> str | None:
    """The protected pattern that covers the sandbox-relative path `parts`, or None."""
    lowered = tuple(part.lower() for part in parts)
    for anchored, pattern in _patterns(extra):
        starts = [0] if anchored else range(len(lowered) - len(pattern) + 1)
        for start in starts:
            window = lowered[start : start + len(pattern)]
            if len(window) == len(pattern) and all(
                fnmatch.fnmatchcase(name, want) for name, want in zip(window, pattern, strict=True)
            ):
                return ("/" if anchored else "") + "/".join(pattern)
    return None


@dataclass(frozen=True, slots=True)
class ProtectedPaths:
    """The protected-path settings one tool registry (or one run) applies."""

    allow_writes: bool = False
    extra: tuple[str, ...] = ()

    def covering(self, parts: tuple[str, ...]) -> str | None:
        """The pattern that protects the sandbox-relative path `parts`, or None."""
        return matching_pattern(parts, self.extra)


# -- git folders under any name ------------------------------------------------------------------
# What makes a folder a git folder to git itself (`setup.c`, is_git_directory): HEAD, and
# objects and refs (or a commondir that supplies them). `GIT_DIR=x`, a `.git` file saying
# `gitdir: x`, or `git -C x` run there use such a folder whatever it is called.
_GIT_FOLDER_MARKS = ("HEAD", "objects", "refs", "commondir")
# In a git folder, what runs code or decides what runs (beyond GIT_PROTECTED_PARTS).
_GIT_CODE_PARTS = (*GIT_PROTECTED_PARTS, "commondir")
_GIT_CONFIGS_AND_POINTERS = ("config", "config.worktree", "commondir")


def _git_marks(folder: str) -> set[str]:
    """Which of HEAD, objects, refs, commondir `folder` has."""
    return {mark for mark in _GIT_FOLDER_MARKS if os.path.lexists(os.path.join(folder, mark))}


def _is_git_folder(marks: set[str]) -> bool:
    return "HEAD" in marks and ({"objects", "refs"} <= marks or "commondir" in marks)


def _code_part(inner: tuple[str, ...]) -> str | None:
    """The code-running part of a git folder that the path `inner` (relative to it) is in."""
    for part in _GIT_CODE_PARTS:
        pattern = tuple(part.split("/"))
        window = inner[: len(pattern)]
        if len(window) == len(pattern) and all(
            fnmatch.fnmatchcase(name, want) for name, want in zip(window, pattern, strict=True)
        ):
            return part
    return None


def _holds_code(folder: str) -> bool:
    """`folder` has something a git run there would act on: a config, a hook, a commondir."""
    if any(os.path.lexists(os.path.join(folder, name)) for name in _GIT_CONFIGS_AND_POINTERS):
        return True
    with contextlib.suppress(OSError), os.scandir(os.path.join(folder, "hooks")) as hooks:
        return any(True for _ in hooks)
    return False


def git_folder_write(root: str, parts: tuple[str, ...]) -> str | None:
    """Why writing the sandbox-relative path `parts` (no links in it: `root` is real) writes
    code into a git folder that is not named `.git`, or None.

    Two cases, so the order of the writes does not matter: the path is a code-running part
    (config, hooks, info, commondir...) of a folder that is, or with this write becomes, a git
    folder; or the write makes a folder a git folder (its HEAD, objects or refs) that already
    holds a config or hooks git would then run.
    """
    for depth in range(len(parts)):
        folder = os.path.join(root, *parts[:depth])
        inner = parts[depth:]
        before = _git_marks(folder)
        after = before | ({inner[0]} & set(_GIT_FOLDER_MARKS))  # what this write creates
        if not _is_git_folder(after):
            continue
        name = "/".join(parts[:depth]) or "."
        part = _code_part(inner)
        if part is not None:
            return f"{part} of the git folder {name}"
        if not _is_git_folder(before) and _holds_code(folder):
            return f"makes {name} a git folder, whose config or hooks git would run"
    return None


# -- commands -----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ProtectedTarget:
    """One path a command gets read-only: `exists` False means an empty placeholder."""

    path: str
    pattern: str
    exists: bool


def _git_targets(git_folder: str) -> Iterator[tuple[str, bool]]:
    """(path, exists) for each protected part of the git folder `git_folder`."""
    for part in GIT_PROTECTED_PARTS:
        if "*" in part:
            for found in sorted(glob.glob(os.path.join(glob.escape(git_folder), part))):
                if not os.path.islink(found):
                    yield found, True
            continue
        path = os.path.join(git_folder, part)
        if os.path.islink(path):
            continue
        if os.path.lexists(path) and not _is_placeholder(path):
            yield path, True
        elif part in _GIT_FOLDERS:
            yield path, False


def command_targets(sandbox_root: str, extra: tuple[str, ...] = ()) -> list[ProtectedTarget]:
    """What a command in `sandbox_root` gets read-only: the protected paths at its root.

    Symbolic links are left alone (a mount would land where they point). Deeper matches (a
    nested repository, a `.vscode` in a subfolder) are the file tools' to refuse: a command
    can make new ones anywhere, which no mount list made in advance can cover.
    """
    root = os.path.realpath(sandbox_root)
    targets: list[ProtectedTarget] = []
    for anchored, pattern in _patterns(extra):
        label = ("/" if anchored else "") + "/".join(pattern)
        if pattern == (".git",):
            git = os.path.join(root, ".git")
            if os.path.isdir(git) and not os.path.islink(git):
                targets += [ProtectedTarget(p, label, e) for p, e in _git_targets(git)]
            elif os.path.isfile(git) and not os.path.islink(git):
                targets.append(ProtectedTarget(git, label, True))  # gitdir: points elsewhere
            continue
        if any(glob.has_magic(part) for part in pattern):
            names = glob.glob(os.path.join(glob.escape(root), *pattern))
            targets += [
                ProtectedTarget(n, label, True) for n in sorted(names) if not os.path.islink(n)
            ]
            continue
        path = os.path.join(root, *pattern)
        if os.path.islink(path):
            continue
        if os.path.lexists(path) and not _is_placeholder(path):
            targets.append(ProtectedTarget(path, label, True))
            continue
        # Missing: the placeholder goes where the path's first missing folder would be
        # (`.claude` itself when there is no `.claude`), unless a link lies on the way.
        first = path
        while os.path.dirname(first) != root and not os.path.lexists(os.path.dirname(first)):
            first = os.path.dirname(first)
        parent = os.path.dirname(first)
        if os.path.isdir(parent) and not os.path.islink(parent) and not os.path.lexists(first):
            targets.append(ProtectedTarget(first, label, False))
    unique = {target.path: target for target in reversed(targets)}
    return sorted(unique.values(), key=lambda target: target.path)


_placeholder_lock = threading.Lock()
_placeholder_users: dict[str, int] = {}


def _is_placeholder(path: str) -> bool:
    """An empty folder another running command's placeholder made: a placeholder still."""
    with _placeholder_lock:
        return path in _placeholder_users


@contextlib.contextmanager
def placeholders_kept(paths: list[str]) -> Iterator[None]:
    """While commands run, the placeholders bubblewrap made for missing protected paths stay;
    the last command using one removes it if it is still an empty folder.

    Counted across this process's commands: removing a mount point that another command's
    namespace still uses would drop that mount there, and the path would be open to it.
    """
    with _placeholder_lock:
        for path in paths:
            _placeholder_users[path] = _placeholder_users.get(path, 0) + 1
    try:
        yield
    finally:
        with _placeholder_lock:
            for path in paths:
                _placeholder_users[path] -= 1
                if _placeholder_users[path] == 0:
                    del _placeholder_users[path]
                    with contextlib.suppress(OSError):
                        os.rmdir(path)  # Only an empty folder goes; anything else stays.
