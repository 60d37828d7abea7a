"""The sandbox wall: every workspace path resolves beneath one root directory, or is refused.

How a path is checked and then used:

1. `Sandbox.resolve` walks the requested path one component at a time, the way the kernel
   would, but beneath the root: `..` may not climb above the root, absolute paths must start
   with the root, symbolic links are followed only while their targets stay inside (an
   absolute target must start with the root; a relative one is walked like the rest). A link
   whose target leaves the root refuses the whole path, even if a later `..` would come back.
   Nothing outside the root is stat'ed, read or written while resolving. The result is a list
   of plain names under the root that were not symbolic links when checked.
2. Files and directories are then opened through directory descriptors, one component at a
   time from the root, with `O_NOFOLLOW` (and `O_DIRECTORY` for directories). A component that
   became a symbolic link after the check makes the open fail, and the call is refused as a
   sandbox violation: a link swapped in between check and use is never followed.
3. Writes go to a fresh temporary file (`O_CREAT | O_EXCL | O_NOFOLLOW`) in the target's own
   directory descriptor and `os.replace` it over the name. A rename replaces a symbolic link
   rather than following it, so even a link planted at the final name is never written
   through. Missing parent directories are created one at a time with `mkdir` relative to the
   parent's descriptor, then opened with `O_NOFOLLOW`.

What remains (documented, not defended here): a process that can write both inside and outside
the sandbox can *move* a directory we already hold open to somewhere outside (a rename, not a
symlink); operations through the held descriptor then land in the moved directory. Linux's
`openat2(RESOLVE_BENEATH)` would close part of that gap; Python has no binding for it. Commands
run under bubblewrap cannot write outside the sandbox, so they cannot stage that move.

Never-visible paths (`private.py`: credentials such as `~/.ssh`, and cleveragents' own history
and checkpoint store) are refused even inside the root, and listings and searches pass over
them: a sandbox that is the home folder must not hand the model `~/.ssh/id_ed25519`, nor let it
write the checkpoint store's git `config` (which git obeys, running programs it names). A root
inside one of them is refused outright.

Absolute paths are accepted when they name something inside the root (they must begin with the
root as given or as its real path); everything else absolute is refused. A leading `~` is
refused rather than expanded: home directories lie outside the sandbox.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from cleveragents.tool.errors import SandboxViolation, ToolError

from .command_policy import never_visible_to_tools
from .names import read_back

MAX_SYMLINK_FOLLOWS = 40
"""Same bound as Linux's MAXSYMLINKS: more links than this in one path is a loop."""

DIR_OPEN_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a FIFO planted in the sandbox must not hang the tool.
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(frozen=True, slots=True)
class SandboxPath:
    """A path checked against the sandbox: plain names beneath the root, no links, no `..`."""

    requested: str
    parts: tuple[str, ...]

    @property
    def relative(self) -> str:
        """The path relative to the sandbox root, `/`-separated; `.` for the root itself."""
        return "/".join(self.parts) or "."

    @property
    def name(self) -> str:
        return self.parts[-1] if self.parts else "."

    @property
    def is_root(self) -> bool:
        return not self.parts


def _refuse_missing_root() -> ToolError:
    return ToolError(
        "no sandbox root is set for this run: workspace tools refuse to touch the "
        "filesystem without one",
        kind="sandbox_violation",
    )


USERS_FOLDERS = ("/home", "/Users")


def too_broad(real: str) -> str | None:
    """Why a (real) folder cannot be a sandbox root: the filesystem's root, a folder that
    holds the home folder, or the folder of every user's home. None for a project folder,
    and for the home folder itself, whose credentials stay hidden all the same."""
    home = os.path.realpath(os.path.expanduser("~"))
    if real == "/":
        return (
            "is the root of the filesystem: a sandbox is one project's folder, and every "
            "file of the system would be open to the tools; choose the project's folder"
        )
    if home != real and _within(home, real):
        return f"holds the home folder {home} (and other users' files): choose the project's folder"
    if real in USERS_FOLDERS:  # every user's home, whoever runs the daemon (root too)
        return "holds every user's home folder: choose the project's folder"
    return None


def refused_root(real: str, hidden: Iterable[str] | None = None) -> str | None:
    """Why a (real) folder cannot be a sandbox root, or None: too broad (`too_broad`), or
    inside a path the tools may never see (`~/.ssh`, `~/.aws`, the data folder...; `hidden`,
    default `never_visible_to_tools()`). Every front refuses a root with this rule (the
    service's `check_sandbox_root`), and so does `Sandbox` itself."""
    problem = too_broad(real)
    if problem is not None:
        return problem
    paths = never_visible_to_tools() if hidden is None else hidden
    covering = next((h for h in paths if _within(real, h)), None)
    if covering is not None:
        return (
            f"lies inside {covering}, which tools may never see (credentials, cleveragents' "
            "own history and checkpoints): choose another folder"
        )
    return None


class Sandbox:
    """One sandbox root; resolves paths beneath it and opens them without following links."""

    def __init__(self, sandbox_root: str | None, hidden: Iterable[str] | None = None) -> None:
        """`hidden`: real paths never shown (default: `never_visible_to_tools()`)."""
        if not isinstance(sandbox_root, str) or not sandbox_root:
            raise _refuse_missing_root()
        if "\0" in sandbox_root or not os.path.isabs(sandbox_root):
            raise ToolError(
                f"sandbox root {sandbox_root!r} must be an absolute path",
                kind="sandbox_violation",
            )
        real = os.path.realpath(sandbox_root)
        if not os.path.isdir(real):
            raise ToolError(f"sandbox root {sandbox_root!r} is not an existing directory")
        self.root = real
        self.hidden = tuple(never_visible_to_tools() if hidden is None else hidden)
        problem = refused_root(real, self.hidden)
        if problem is not None:
            raise ToolError(f"sandbox root {sandbox_root!r} {problem}", kind="sandbox_violation")
        # The hidden paths beneath the root, as names under it.
        self._hidden_parts = tuple(
            tuple(os.path.relpath(h, real).split("/"))
            for h in self.hidden
            if h != real and _within(h, real)
        )
        # Absolute paths may begin with the root as configured or with its real path.
        aliases = {real, os.path.normpath(sandbox_root)}
        self._aliases = tuple(sorted(aliases, key=len, reverse=True))

    # -- checking ----------------------------------------------------------------------------
    def relative_to_root(self, absolute: str) -> str | None:
        """The part of `absolute` after the sandbox root, or None when it does not start there."""
        for alias in self._aliases:
            if alias == "/":
                return absolute.lstrip("/")
            if absolute == alias:
                return ""
            if absolute.startswith(alias + "/"):
                return absolute[len(alias) + 1 :]
        return None

    def absolute(self, path: SandboxPath) -> str:
        """A checked path as an absolute one under the real root (to hand another program)."""
        return os.path.join(self.root, *path.parts)

    def resolve(self, path: str) -> SandboxPath:
        """Check `path` against the wall; raises SandboxViolation naming `path` on any escape."""
        if not isinstance(path, str):
            raise ToolError(f"path must be a string, not {type(path).__name__}")
        requested, path = path, read_back(path)  # a name the tools showed quoted (names.py)
        if "\0" in path:
            raise SandboxViolation(requested, "contains a NUL byte")
        if path.split("/", 1)[0].startswith("~"):
            raise SandboxViolation(
                requested, "starts with '~': home directories are outside the sandbox"
            )
        if os.path.isabs(path):
            inside = self.relative_to_root(path)
            if inside is None:
                raise SandboxViolation(requested, "is an absolute path outside the sandbox root")
            components = inside.split("/")
        else:
            components = path.split("/")
        return SandboxPath(requested, self._walk_beneath(requested, components))

    def hidden_by(self, parts: tuple[str, ...]) -> str | None:
        """The never-visible path (relative to the root) that `parts` lies in, if any."""
        for hidden in self._hidden_parts:
            if parts[: len(hidden)] == hidden:
                return "/".join(hidden)
        return None

    def check_visible(self, requested: str, parts: tuple[str, ...]) -> None:
        hidden = self.hidden_by(parts)
        if hidden is not None:
            raise SandboxViolation(
                requested,
                f"is inside {hidden!r}, which tools never see (credentials, cleveragents' own "
                "history and checkpoints)",
            )

    def hidden_under(self, parts: tuple[str, ...]) -> frozenset[str]:
        """The never-visible paths strictly beneath `parts`, relative to it: a walk skips them."""
        depth = len(parts)
        return frozenset(
            "/".join(hidden[depth:])
            for hidden in self._hidden_parts
            if len(hidden) > depth and hidden[:depth] == parts
        )

    def _walk_beneath(self, requested: str, components: list[str]) -> tuple[str, ...]:
        pending = list(reversed(components))
        resolved: list[str] = []
        follows = 0
        while pending:
            name = pending.pop()
            if name in ("", "."):
                continue
            if name == "..":
                if not resolved:
                    raise SandboxViolation(requested, "leads above the sandbox root")
                resolved.pop()
                continue
            candidate = os.path.join(self.root, *resolved, name)
            try:
                info = os.lstat(candidate)
            except OSError:
                # Not there (yet), or not reachable: a plain name; opening it later decides.
                resolved.append(name)
                if self._hidden_parts:
                    self.check_visible(requested, tuple(resolved))
                continue
            if not stat.S_ISLNK(info.st_mode):
                resolved.append(name)
                if self._hidden_parts:
                    # Not even a link inside a hidden folder is followed.
                    self.check_visible(requested, tuple(resolved))
                continue
            follows += 1
            if follows > MAX_SYMLINK_FOLLOWS:
                raise ToolError(f"path {requested!r} has too many levels of symbolic links")
            try:
                target = os.readlink(candidate)
            except OSError as exc:
                raise ToolError(f"path {requested!r}: cannot read link: {exc.strerror}") from None
            link = "/".join([*resolved, name])
            if os.path.isabs(target):
                inside = self.relative_to_root(target)
                if inside is None:
                    raise SandboxViolation(
                        requested,
                        f"goes through the symbolic link {link!r} which points outside the "
                        "sandbox root",
                    )
                resolved = []
                pending.extend(reversed(inside.split("/")))
            else:
                pending.extend(reversed(target.split("/")))
        return tuple(resolved)

    # -- opening -----------------------------------------------------------------------------
    def _open_root(self) -> int:
        try:
            return os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            raise ToolError(f"cannot open the sandbox root: {exc.strerror}") from None

    def _explain(
        self, parent_fd: int, name: str, where: str, path: SandboxPath, exc: OSError
    ) -> ToolError:
        """Turn a failed open of one component into a violation (a link appeared) or an error."""
        try:
            info = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
        except OSError:
            info = None
        if info is not None and stat.S_ISLNK(info.st_mode):
            return SandboxViolation(
                path.requested,
                f"changed while in use: {where!r} became a symbolic link, which is not followed",
            )
        if isinstance(exc, FileNotFoundError):
            return ToolError(f"{path.requested!r}: {where!r} does not exist")
        if exc.errno == errno.ENOTDIR or (info is not None and not stat.S_ISDIR(info.st_mode)):
            return ToolError(f"{path.requested!r}: {where!r} is not a directory")
        return ToolError(f"{path.requested!r}: cannot open {where!r}: {exc.strerror}")

    def _descend(self, path: SandboxPath, names: tuple[str, ...], *, create: bool) -> int:
        """A descriptor for the directory `names` beneath the root, opened link by link."""
        fd = self._open_root()
        try:
            for index, name in enumerate(names):
                where = "/".join(names[: index + 1])
                try:
                    child = os.open(name, DIR_OPEN_FLAGS, dir_fd=fd)
                except FileNotFoundError as exc:
                    if not create:
                        raise self._explain(fd, name, where, path, exc) from None
                    try:
                        os.mkdir(name, 0o777, dir_fd=fd)
                        _owned_like(fd, name, None)
                    except FileExistsError:
                        pass  # Someone else made it meanwhile; the O_NOFOLLOW open decides.
                    except OSError as mkdir_exc:
                        raise ToolError(
                            f"{path.requested!r}: cannot create directory {where!r}: "
                            f"{mkdir_exc.strerror}"
                        ) from None
                    try:
                        child = os.open(name, DIR_OPEN_FLAGS, dir_fd=fd)
                    except OSError as reopen_exc:
                        raise self._explain(fd, name, where, path, reopen_exc) from None
                except OSError as exc:
                    raise self._explain(fd, name, where, path, exc) from None
                os.close(fd)
                fd = child
        except BaseException:
            os.close(fd)
            raise
        return fd

    def open_directory(self, path: SandboxPath) -> int:
        """A descriptor for the directory at `path` (caller closes it)."""
        return self._descend(path, path.parts, create=False)

    def open_entry(self, path: SandboxPath) -> tuple[int, bool]:
        """(descriptor, is_directory) for a directory or regular file at `path`."""
        if path.is_root:
            return self._open_root(), True
        parent = self.open_parent(path)
        try:
            try:
                info = os.stat(path.name, dir_fd=parent, follow_symlinks=False)
            except OSError as exc:
                raise self._explain(parent, path.name, path.relative, path, exc) from None
            if stat.S_ISLNK(info.st_mode):
                raise SandboxViolation(
                    path.requested,
                    f"changed while in use: {path.relative!r} became a symbolic link",
                )
            if not stat.S_ISDIR(info.st_mode):
                return open_file_at(parent, path.name, path), False
            try:
                return os.open(path.name, DIR_OPEN_FLAGS, dir_fd=parent), True
            except OSError as exc:
                raise self._explain(parent, path.name, path.relative, path, exc) from None
        finally:
            os.close(parent)

    def open_parent(self, path: SandboxPath, *, create: bool = False) -> int:
        """A descriptor for the directory holding `path`, creating missing ones when asked."""
        if path.is_root:
            raise ToolError(f"{path.requested!r} is the sandbox root directory itself")
        return self._descend(path, path.parts[:-1], create=create)

    def open_regular_file(self, path: SandboxPath) -> int:
        """A read-only descriptor for the regular file at `path` (caller closes it)."""
        if path.is_root:
            raise ToolError(f"{path.requested!r} is a directory, not a file")
        parent = self.open_parent(path)
        try:
            return open_file_at(parent, path.name, path)
        finally:
            os.close(parent)

    def write_bytes(self, path: SandboxPath, data: bytes, *, create_dirs: bool) -> bool:
        """Replace the file at `path` with `data` atomically; True when the file is new."""
        parent = self.open_parent(path, create=create_dirs)
        try:
            try:
                existing: os.stat_result | None = os.stat(
                    path.name, dir_fd=parent, follow_symlinks=False
                )
            except FileNotFoundError:
                existing = None
            except OSError as exc:
                raise ToolError(f"{path.requested!r}: {exc.strerror}") from None
            if existing is not None:
                if stat.S_ISLNK(existing.st_mode):
                    raise SandboxViolation(
                        path.requested,
                        f"changed while in use: {path.relative!r} became a symbolic link",
                    )
                if stat.S_ISDIR(existing.st_mode):
                    raise ToolError(f"{path.requested!r} is a directory")
                if not stat.S_ISREG(existing.st_mode):
                    raise ToolError(f"{path.requested!r} is not a regular file")
            _replace_atomically(parent, path, data, existing)
            return existing is None
        finally:
            os.close(parent)


def open_file_at(dir_fd: int, name: str, path: SandboxPath) -> int:
    """Open regular file `name` in `dir_fd` for reading, never through a symbolic link."""
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK):
            raise SandboxViolation(
                path.requested, "changed while in use: it became a symbolic link"
            ) from None
        if isinstance(exc, FileNotFoundError):
            raise ToolError(f"{path.requested!r} does not exist") from None
        raise ToolError(f"{path.requested!r}: cannot open: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise ToolError(f"{path.requested!r} is a directory, not a file")
        if not stat.S_ISREG(info.st_mode):
            raise ToolError(f"{path.requested!r} is not a regular file")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _replace_atomically(
    parent: int, path: SandboxPath, data: bytes, existing: os.stat_result | None
) -> None:
    temp_name = f".cleveragents-{os.urandom(8).hex()}.tmp"  # what secrets.token_hex does
    try:
        fd = os.open(temp_name, _TEMP_FLAGS, 0o666, dir_fd=parent)
    except OSError as exc:
        raise ToolError(
            f"{path.requested!r}: cannot create a temporary file: {exc.strerror}"
        ) from None
    try:
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            if existing is not None:
                os.fchmod(fd, stat.S_IMODE(existing.st_mode))
            _owned_like(parent, None, existing, fd)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp_name, path.name, src_dir_fd=parent, dst_dir_fd=parent)
    except BaseException as exc:
        try:
            os.unlink(temp_name, dir_fd=parent)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise ToolError(f"{path.requested!r}: cannot write: {exc.strerror}") from None
        raise


def _owned_like(
    parent: int, name: str | None, existing: os.stat_result | None, fd: int | None = None
) -> None:
    """A root daemon's new file or folder gets the owner of the file it replaces, or of its
    folder: a user's project stays the user's, and commands, which run as the sandbox's
    owner (bubblewrap.command_identity), can still change what the file tools wrote."""
    if os.name != "posix" or os.geteuid() != 0:
        return
    owner = existing if existing is not None else os.fstat(parent)
    if owner.st_uid == 0 and owner.st_gid == 0:
        return
    if fd is not None:
        os.fchown(fd, owner.st_uid, owner.st_gid)
    elif name is not None:
        os.chown(name, owner.st_uid, owner.st_gid, dir_fd=parent, follow_symlinks=False)


def _within(path: str, folder: str) -> bool:
    return folder == "/" or path == folder or path.startswith(folder.rstrip("/") + "/")


@contextmanager
def closing_fd(fd: int) -> Iterator[int]:
    try:
        yield fd
    finally:
        os.close(fd)


def require_sandbox(sandbox_root: str | None) -> Sandbox:
    """The sandbox a tool call runs in; refuses the call when the runtime supplied none."""
    if sandbox_root is None:
        raise _refuse_missing_root()
    return Sandbox(sandbox_root)
