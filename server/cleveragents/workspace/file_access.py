"""File tools through another program's view of the files: an editor's open buffers.

An editor knows files the disk does not yet: unsaved changes, new files never saved. A front
whose client offers its view (ACP's `fs/read_text_file` and `fs/write_text_file`) hands a
`FileAccess` for its session to `with_file_access`, which swaps the built-in read_file,
write_file and edit_file for versions with the same names, schemas, descriptions and flags
(so the model, the approval rules and the history see the same tools) that read and write
through it. What the access does not offer (a client that reads but does not write) stays on
the disk, as before. The core and the tools know nothing of the protocol behind it.

The sandbox wall comes first, with the disk tools' own code: the path must resolve beneath the
sandbox root (`Sandbox.resolve`: no `..` above it, no symbolic link leading out, absolute
paths only inside it) before anything is asked of the editor, which then gets the checked
absolute path. A file that exists on disk must be a regular file (not a directory, FIFO or
device) and, to be read, not binary; a write's missing parent folders are made (or, with
`create_dirs` false, refused) by the sandbox code. What the editor does with the path is then
the editor's: the disk tools' descriptor-by-descriptor opening, which never follows a link
swapped in after the check, cannot reach into another program.
"""

from __future__ import annotations

import asyncio
import io
import os
import stat
from collections.abc import Callable
from typing import Any, Protocol

from cleveragents.tool.errors import SandboxViolation, ToolError
from cleveragents.tool.registry import ToolRegistry

from .builtins import with_builtins_replaced
from .files import (
    DEFAULT_READ_LIMIT,
    check_edit,
    check_window,
    read_text,
    read_window,
    refuse_binary,
    replace_text,
    write_text,
)
from .names import shown_path, with_note
from .sandbox import Sandbox, SandboxPath, closing_fd, require_sandbox


class FileAccessError(Exception):
    """The other program could not read or write the file; the message says why."""


class FileAccess(Protocol):
    """Text files as another program sees them; paths are absolute and already checked."""

    @property
    def reads(self) -> bool: ...

    @property
    def writes(self) -> bool: ...

    async def read_text(self, path: str) -> str: ...

    async def write_text(self, path: str, content: str) -> None: ...


def with_file_access(registry: ToolRegistry, access: FileAccess) -> ToolRegistry:
    """A copy of `registry` whose built-in file tools go through `access` where it can."""
    return with_builtins_replaced(registry, file_handlers(access))


def file_handlers(access: FileAccess) -> dict[str, Callable[..., Any]]:
    """The file tools `access` takes part in, by name, going through it."""
    tools = _ThroughAccess(access)
    handlers: dict[str, Callable[..., Any]] = {}
    if access.reads:
        handlers["read_file"] = tools.read_file
    if access.writes:
        handlers["write_file"] = tools.write_file
    if access.reads or access.writes:
        handlers["edit_file"] = tools.edit_file
    return handlers


class _ThroughAccess:
    """read_file, write_file and edit_file: the sandbox check, then the access (or the disk)."""

    def __init__(self, access: FileAccess) -> None:
        self.access = access

    async def read_file(
        self,
        path: str,
        offset: int = 1,
        limit: int = DEFAULT_READ_LIMIT,
        sandbox_root: str | None = None,
    ) -> dict[str, Any]:
        check_window(offset, limit)
        sandbox = require_sandbox(sandbox_root)
        target = sandbox.resolve(path)
        await asyncio.to_thread(_check_readable, sandbox, target)
        text = await self._read(sandbox, target)
        stream = io.BytesIO(text.encode("utf-8", errors="replace"))
        shown = shown_path(target.relative)
        return with_note(read_window(stream, shown, offset, limit), shown)

    async def write_file(
        self,
        path: str,
        content: str,
        create_dirs: bool = True,
        sandbox_root: str | None = None,
    ) -> dict[str, Any]:
        sandbox = require_sandbox(sandbox_root)
        target = sandbox.resolve(path)
        created = await asyncio.to_thread(_prepare_write, sandbox, target, create_dirs)
        await self._write(sandbox, target, content)
        shown = shown_path(target.relative)
        written = {
            "path": shown,
            "bytes_written": len(content.encode("utf-8", errors="surrogateescape")),
            "created": created,
        }
        return with_note(written, shown)

    async def edit_file(
        self,
        path: str,
        old_text: str,
        new_text: str,
        replace_all: bool = False,
        sandbox_root: str | None = None,
    ) -> dict[str, Any]:
        sandbox = require_sandbox(sandbox_root)
        check_edit(old_text, new_text)
        target = sandbox.resolve(path)
        if self.access.reads:
            await asyncio.to_thread(_check_readable, sandbox, target)
            text = await self._read(sandbox, target)
        else:
            text = await asyncio.to_thread(read_text, sandbox, target)
        shown = shown_path(target.relative)
        updated, count = replace_text(text, old_text, new_text, replace_all, shown)
        if self.access.writes:
            await asyncio.to_thread(_prepare_write, sandbox, target, False)
            await self._write(sandbox, target, updated)
        else:
            await asyncio.to_thread(write_text, sandbox, target, updated)
        return with_note({"path": shown, "replacements": count}, shown)

    async def _read(self, sandbox: Sandbox, target: SandboxPath) -> str:
        try:
            return await self.access.read_text(sandbox.absolute(target))
        except FileAccessError as exc:
            raise ToolError(f"{target.requested!r}: the editor could not read it: {exc}") from None

    async def _write(self, sandbox: Sandbox, target: SandboxPath, content: str) -> None:
        try:
            await self.access.write_text(sandbox.absolute(target), content)
        except FileAccessError as exc:
            raise ToolError(f"{target.requested!r}: the editor could not write it: {exc}") from None


def _on_disk(sandbox: Sandbox, target: SandboxPath) -> os.stat_result | None:
    """The entry at `target` as it is on disk now (not followed), or None when there is none."""
    try:
        info = os.lstat(sandbox.absolute(target))
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise ToolError(f"{target.requested!r}: {exc.strerror}") from None
    if stat.S_ISLNK(info.st_mode):
        raise SandboxViolation(
            target.requested,
            f"changed while in use: {target.relative!r} became a symbolic link",
        )
    return info


def _check_readable(sandbox: Sandbox, target: SandboxPath) -> None:
    """A file the disk has must be a regular text file; one it lacks may be an open buffer."""
    if target.is_root:
        raise ToolError(f"{target.requested!r} is a directory, not a file")
    if _on_disk(sandbox, target) is None:
        return
    with closing_fd(sandbox.open_regular_file(target)) as fd:
        refuse_binary(fd, target.requested)


def _prepare_write(sandbox: Sandbox, target: SandboxPath, create_dirs: bool) -> bool:
    """Check the target and make its parent folders; True when the disk has no file there."""
    if target.is_root:
        raise ToolError(f"{target.requested!r} is the workspace root directory, not a file")
    info = _on_disk(sandbox, target)
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise ToolError(f"{target.requested!r} is a directory")
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise ToolError(f"{target.requested!r} is not a regular file")
    os.close(sandbox.open_parent(target, create=create_dirs))
    return info is None
