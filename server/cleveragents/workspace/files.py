"""File tools: read_file, write_file, edit_file and list_dir, all confined to the sandbox."""

from __future__ import annotations

import os
import stat
from typing import Any

from cleveragents.tool.errors import ToolError
from cleveragents.tool.policy import ProtectedWrite

from ..settings_table import ENV_ALLOW_PROTECTED_WRITES
from .limits import MAX_OUTPUT_BYTES, cut_utf8
from .names import shown_path, with_note
from .protected import ProtectedPaths, git_folder_write
from .sandbox import Sandbox, SandboxPath, closing_fd, require_sandbox

DEFAULT_READ_LIMIT = 2000
MAX_LIST_ENTRIES = 2000
_READ_CHUNK = 64 * 1024
_BINARY_SNIFF_BYTES = 8192


def read_file(
    path: str,
    offset: int = 1,
    limit: int = DEFAULT_READ_LIMIT,
    sandbox_root: str | None = None,
) -> dict[str, Any]:
    """Read a UTF-8 text file from the workspace, a window of lines at a time.

    Returns {path, content, start_line, end_line, total_lines, truncated, next_offset}:
    `content` is the exact text of lines start_line..end_line (1-based, line endings kept);
    `truncated` is true when the file goes on past what was returned (more lines, or the
    1 MiB output cap was hit) and `next_offset` then says where to continue. Binary files
    are refused. A window longer than the result budget is shown cut in the middle, with a
    marker naming the offset and limit that show the lines left out.

    Args:
        path: File path, relative to the workspace root (or absolute inside it).
        offset: First line to return, counting from 1.
        limit: Most lines to return (2000 by default).
    """
    check_window(offset, limit)
    sandbox = require_sandbox(sandbox_root)
    target = sandbox.resolve(path)
    shown = shown_path(target.relative)
    with closing_fd(sandbox.open_regular_file(target)) as fd:
        refuse_binary(fd, path)
        with os.fdopen(os.dup(fd), "rb") as stream:
            return with_note(read_window(stream, shown, offset, limit), shown)


def refuse_binary(fd: int, path: str) -> None:
    """A ToolError when the open file looks binary (a NUL in its first 8 KiB)."""
    if b"\0" in os.pread(fd, _BINARY_SNIFF_BYTES, 0):
        size = os.fstat(fd).st_size
        raise ToolError(
            f"{path!r} looks like a binary file ({size} bytes); read_file returns text only"
        )


def check_window(offset: int, limit: int) -> None:
    if offset < 1:
        raise ToolError(f"offset must be 1 or more (lines count from 1), got {offset}")
    if limit < 1:
        raise ToolError(f"limit must be 1 or more, got {limit}")


def read_window(stream: Any, relative: str, offset: int, limit: int) -> dict[str, Any]:
    """read_file's result for lines offset..offset+limit-1 of a binary stream."""
    last_wanted = offset + limit - 1
    collected = bytearray()
    cut_by_size = False
    cut_at_line = 0
    line_number = 0
    last_included = offset - 1
    at_line_start = True
    while True:
        # Bounded reads: a file that is one enormous line must not be loaded whole.
        piece: bytes = stream.readline(_READ_CHUNK)
        if not piece:
            break
        if at_line_start:
            line_number += 1
        at_line_start = piece.endswith(b"\n")
        if cut_by_size or not offset <= line_number <= last_wanted:
            continue
        room = MAX_OUTPUT_BYTES - len(collected)
        kept, cut = cut_utf8(piece, room)
        collected += kept
        if kept:
            last_included = line_number
        if cut:
            cut_by_size = True
            cut_at_line = line_number
    total = line_number
    if offset > 1 and offset > total:
        raise ToolError(f"offset {offset} is past the end of {relative!r}, which has {total} lines")
    more_lines = last_wanted < total
    truncated = cut_by_size or more_lines
    next_offset: int | None = None
    if cut_by_size:
        # Continue from the line the cap fell in (shown in part, or not at all).
        next_offset = cut_at_line
    elif more_lines:
        next_offset = last_wanted + 1
    return {
        "path": relative,
        "content": collected.decode("utf-8", errors="replace"),
        "start_line": offset,
        "end_line": max(last_included, offset - 1),
        "total_lines": total,
        "truncated": truncated,
        "next_offset": next_offset,
    }


def write_file(
    path: str,
    content: str,
    create_dirs: bool = True,
    sandbox_root: str | None = None,
) -> dict[str, Any]:
    """Create or overwrite a file in the workspace with the given text (UTF-8).

    The write is atomic: readers see the old file or the new one, never half of it. An
    existing file keeps its permissions. Returns {path, bytes_written, created}.

    Args:
        path: File path, relative to the workspace root (or absolute inside it).
        content: The complete new content of the file.
        create_dirs: Create missing parent directories (default true).
    """
    sandbox = require_sandbox(sandbox_root)
    target = sandbox.resolve(path)
    if target.is_root:
        raise ToolError(f"{path!r} is the workspace root directory, not a file")
    data = content.encode("utf-8")
    created = sandbox.write_bytes(target, data, create_dirs=create_dirs)
    shown = shown_path(target.relative)
    return with_note({"path": shown, "bytes_written": len(data), "created": created}, shown)


def edit_file(
    path: str,
    old_text: str,
    new_text: str,
    replace_all: bool = False,
    sandbox_root: str | None = None,
) -> dict[str, Any]:
    """Replace an exact piece of text in an existing workspace file.

    `old_text` must match the file exactly (whitespace and indentation included) and, unless
    replace_all is true, occur exactly once: include enough surrounding lines to make it
    unique. The call fails, changing nothing, when the text is missing or ambiguous.
    Returns {path, replacements}.

    Args:
        path: File path, relative to the workspace root (or absolute inside it).
        old_text: The exact text to find.
        new_text: The text to put in its place.
        replace_all: Replace every occurrence instead of requiring exactly one.
    """
    sandbox = require_sandbox(sandbox_root)
    check_edit(old_text, new_text)
    target = sandbox.resolve(path)
    text = read_text(sandbox, target)
    shown = shown_path(target.relative)
    updated, count = replace_text(text, old_text, new_text, replace_all, shown)
    write_text(sandbox, target, updated)
    return with_note({"path": shown, "replacements": count}, shown)


def check_edit(old_text: str, new_text: str) -> None:
    if not old_text:
        raise ToolError("old_text is empty: give the exact text to replace")
    if old_text == new_text:
        raise ToolError("old_text and new_text are the same: there is nothing to change")


def read_text(sandbox: Sandbox, target: SandboxPath) -> str:
    """A whole file as text; bytes that are not UTF-8 kept as they were (surrogateescape)."""
    with closing_fd(sandbox.open_regular_file(target)) as fd:
        chunks = []
        while chunk := os.read(fd, _READ_CHUNK):
            chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", errors="surrogateescape")


def write_text(sandbox: Sandbox, target: SandboxPath, text: str) -> None:
    """Replace an existing file's text (what read_text gave back stays byte for byte)."""
    sandbox.write_bytes(target, text.encode("utf-8", errors="surrogateescape"), create_dirs=False)


def replace_text(
    text: str, old_text: str, new_text: str, replace_all: bool, relative: str
) -> tuple[str, int]:
    """edit_file's replacement: the new text and how many places changed."""
    count = text.count(old_text)
    if count == 0:
        raise ToolError(
            f"old_text was not found in {relative!r}; read the file and copy the "
            "text exactly, including whitespace"
        )
    if count > 1 and not replace_all:
        raise ToolError(
            f"old_text occurs {count} times in {relative!r}; include more surrounding "
            "text to make it unique, or set replace_all to replace every occurrence"
        )
    if replace_all:
        return text.replace(old_text, new_text), count
    return text.replace(old_text, new_text, 1), 1


def list_dir(path: str = ".", sandbox_root: str | None = None) -> dict[str, Any]:
    """List one workspace directory (not recursive), sorted by name.

    Returns {path, entries, truncated}: each entry has `name` and `type` (file, dir, symlink
    or other); files carry `size` in bytes, symbolic links their `target` text (links are
    listed, never followed). At most 2000 entries are returned.

    Args:
        path: Directory path, relative to the workspace root (or absolute inside it).
    """
    sandbox = require_sandbox(sandbox_root)
    target = sandbox.resolve(path)
    with closing_fd(sandbox.open_directory(target)) as fd:
        try:
            with os.scandir(fd) as iterator:
                found = sorted(iterator, key=lambda entry: entry.name)
        except OSError as exc:
            raise ToolError(f"{path!r}: cannot list: {exc.strerror}") from None
        hidden = sandbox.hidden_under(target.parts)
        found = [entry for entry in found if entry.name not in hidden]
        entries = [_describe_entry(fd, entry) for entry in found[:MAX_LIST_ENTRIES]]
    shown = shown_path(target.relative)
    listing = {"path": shown, "entries": entries, "truncated": len(found) > MAX_LIST_ENTRIES}
    return with_note(listing, shown, *(e["name"] for e in entries), *_targets(entries))


def _targets(entries: list[dict[str, Any]]) -> list[str]:
    return [entry["target"] for entry in entries if "target" in entry]


def _describe_entry(dir_fd: int, entry: os.DirEntry[str]) -> dict[str, Any]:
    name = shown_path(entry.name)  # names that are not plain text are C-quoted (names.py)
    try:
        info = entry.stat(follow_symlinks=False)
    except OSError:
        return {"name": name, "type": "other"}
    if stat.S_ISLNK(info.st_mode):
        try:
            link_target = os.readlink(entry.name, dir_fd=dir_fd)
        except OSError:
            link_target = ""
        return {"name": name, "type": "symlink", "target": shown_path(link_target)}
    if stat.S_ISDIR(info.st_mode):
        return {"name": name, "type": "dir"}
    if stat.S_ISREG(info.st_mode):
        return {"name": name, "type": "file", "size": info.st_size}
    return {"name": name, "type": "other"}


def protected_write(protection: ProtectedPaths, inputs: dict[str, Any]) -> ProtectedWrite | None:
    """For the Authorizer: the protected path (protected.py) a write_file or edit_file call
    would write, found the way the tool itself would find the file (through links)."""
    path, root = inputs.get("path"), inputs.get("sandbox_root")
    if not isinstance(path, str) or not isinstance(root, str):
        return None
    try:
        sandbox = Sandbox(root)
        target = sandbox.resolve(path)
    except (ToolError, OSError):  # The tool refuses the same path itself, saying why.
        return None
    pattern = protection.covering(target.parts)
    if pattern is None:
        # A git folder under another name is as dangerous: GIT_DIR or a `.git` file can
        # point at it, and a `git -C` run there uses it.
        pattern = git_folder_write(sandbox.root, target.parts)
    if pattern is None:
        return None
    return ProtectedWrite(
        path=shown_path(target.relative),
        why=f"a protected path ({pattern}): what is written there can run programs later, "
        "outside the sandbox",
        setting=f"{ENV_ALLOW_PROTECTED_WRITES}=1",
        allowed=protection.allow_writes,
    )
