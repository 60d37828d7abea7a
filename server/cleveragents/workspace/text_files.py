"""Small text files read for the prompt (AGENTS.md, command files): from the workspace through
the file tools' wall, or from the user's own config folder.

A file that is missing, unreadable, not a regular file, binary (a NUL byte in what is read)
or blank gives None: such a file is simply not there for the prompt.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from ..tool.errors import ToolError
from .sandbox import Sandbox, closing_fd


@dataclass(frozen=True, slots=True)
class SmallText:
    """The text read (at most the limit's bytes) and the file's size in bytes."""

    text: str
    size: int


def _text(data: bytes, size: int, limit: int) -> SmallText | None:
    data = data[:limit]
    if b"\0" in data:
        return None
    text = data.decode("utf-8", errors="replace")
    return SmallText(text, size) if text.strip() else None


def read_workspace_text(sandbox: Sandbox, relative: str, limit: int) -> SmallText | None:
    """The workspace file `relative`, read through the wall (no link out of the root is
    followed, hidden paths stay hidden), its first `limit` bytes."""
    try:
        target = sandbox.resolve(relative)
        with closing_fd(sandbox.open_regular_file(target)) as fd:
            return _text(os.pread(fd, limit, 0), os.fstat(fd).st_size, limit)
    except (ToolError, OSError):
        return None


def read_user_text(path: Path, limit: int) -> SmallText | None:
    """The user's own file at `path` (a regular file), its first `limit` bytes."""
    try:
        # Non-blocking: a FIFO in its place must not hang the reader (it is refused below).
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with closing_fd(fd):
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                return None
            return _text(os.pread(fd, limit, 0), info.st_size, limit)
        except OSError:
            return None
