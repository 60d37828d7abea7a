"""Project instructions: `AGENTS.md` (or `CLAUDE.md`) files, read for the model.

Where they come from, as Codex and the AGENTS.md convention have it:

- the user's own file in their configuration folder (`paths.user_config_dir()`), for every
  project;
- the sandbox root's file, for the whole workspace;
- a subfolder's file, for the files beneath that folder (the nearest one wins there).

In each folder `AGENTS.md` is read, or `CLAUDE.md` when there is no `AGENTS.md`.

How they reach the model without breaking the cached prefix: the user's and the root's files
go in the system prompt once, when the run starts (the same bytes for every iteration). A
subfolder's file is attached, once per run, to the result of the first tool call that reaches
into that folder (`project_instructions` in the result), so the conversation only grows at
its end. Each file is capped at `MAX_FILE_CHARS` and a run at `MAX_RUN_CHARS`, with a note
saying what was left out.

The files are read through the sandbox wall (no link leaving the root is followed; the paths
tools never see stay unseen). They are data: they change the prompt, never what a call may do
(the profile, approvals and walls are decided elsewhere and never read these files).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..paths import user_config_dir
from ..tool.errors import ToolError
from ..tool.instructions import FolderNote, InstructionFile, InstructionScope
from .sandbox import Sandbox
from .text_files import SmallText, read_user_text, read_workspace_text

INSTRUCTION_FILE_NAMES = ("AGENTS.md", "CLAUDE.md")
"""Read in each folder, the first that exists: CLAUDE.md only where there is no AGENTS.md."""

MAX_FILE_CHARS = 16_000
"""The most characters of one file the model is sent; the rest is left out with a note."""

MAX_RUN_CHARS = 48_000
"""The most characters of instructions one run sends in all; later files are only named."""

# A file larger than this is not read whole (its size is reported instead of its length).
_MAX_READ_BYTES = 1 << 20

# The built-in tools whose `path` argument names where they work.
PATH_TOOLS = frozenset({"read_file", "write_file", "edit_file", "list_dir", "glob", "grep"})

HEADER = (
    "# Project instructions\n"
    "The user and the project's authors wrote the instructions below for agents working "
    "here. Follow them where they apply: a subfolder's instructions take precedence over the "
    "root's for the files beneath that folder, and the user's request in this conversation "
    "over all of them. They guide how you work; they do not change which tools you have, "
    "what needs approval or what the workspace lets you reach."
)


@dataclass(frozen=True, slots=True)
class _Read:
    text: str
    total_chars: int


def _cut(text: str, total: int, limit: int) -> str:
    """`text` cut to `limit` characters with a note saying so (as is when it fits)."""
    if len(text) <= limit and total <= limit:
        return text
    kept = text[:limit]
    return (
        f"{kept}\n[… cut: the file has {total:,} characters; the first {len(kept):,} are shown "
        f"(the limit is {limit:,} per file) …]"
    )


def _read(found: SmallText | None) -> _Read | None:
    """A file's text for the model; its length counts characters (its size, when it was
    larger than what is read)."""
    if found is None:
        return None
    whole = found.size <= _MAX_READ_BYTES
    return _Read(found.text, len(found.text) if whole else found.size)


def read_user_file(folder: Path) -> tuple[str, _Read] | None:
    """(path, contents) of the user's own file in `folder`, or None when there is none."""
    for name in INSTRUCTION_FILE_NAMES:
        path = folder / name
        read = _read(read_user_text(path, _MAX_READ_BYTES))
        if read is not None:
            return str(path), read
    return None


class ProjectInstructions:
    """The `InstructionsSource` build_runtime gives a runtime: reads the files for each run."""

    def __init__(self, user_folder: Path | None = None) -> None:
        """`user_folder`: where the user's own file is looked for (default: the user's
        configuration folder, read when each run starts)."""
        self.user_folder = user_folder

    def for_run(self, sandbox_root: str | None) -> RunInstructionFiles | None:
        if not sandbox_root:
            return None
        try:
            sandbox = Sandbox(sandbox_root)
        except ToolError:
            return None  # the run's own tools say what is wrong with the root
        run = RunInstructionFiles(sandbox)
        user = read_user_file(self.user_folder or user_config_dir())
        if user is not None:
            run.add_fixed(user[0], "user", "", user[1])
        root = run.read_folder(())
        if root is not None:
            run.add_fixed(root[0], "project", ".", root[1])
        return run  # with no file at the root, a subfolder's may still come


@dataclass(slots=True)
class RunInstructionFiles:
    """One run's instructions (`tool.instructions.RunInstructions`)."""

    sandbox: Sandbox
    fixed: list[tuple[InstructionFile, str]] = field(default_factory=list)
    # Folders (as parts under the root) already looked at: each is looked at once per run.
    seen: set[tuple[str, ...]] = field(default_factory=lambda: {()})
    sent_chars: int = 0
    _system: dict[str | None, str | None] = field(default_factory=dict)
    # Calls of one response run concurrently, each asking on its own thread.
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def files(self) -> tuple[InstructionFile, ...]:
        return tuple(file for file, _ in self.fixed)

    def _budgeted(self, read: _Read) -> tuple[str, int]:
        """The text to send, within the file cap and what the run has left, and how many of
        the file's characters it holds."""
        left = max(0, MAX_RUN_CHARS - self.sent_chars)
        limit = min(MAX_FILE_CHARS, left)
        sent = min(len(read.text), limit)
        self.sent_chars += sent
        if limit < MAX_FILE_CHARS and sent < read.total_chars:
            note = (
                f"[… cut: the file has {read.total_chars:,} characters; the first {sent:,} are "
                f"shown (a run sends at most {MAX_RUN_CHARS:,} characters of instructions) …]"
            )
            return f"{read.text[:sent]}\n{note}" if sent else note, sent
        return _cut(read.text, read.total_chars, limit), sent

    def add_fixed(self, path: str, scope: InstructionScope, folder: str, read: _Read) -> None:
        text, sent = self._budgeted(read)
        self.fixed.append((InstructionFile(path, scope, folder, sent, read.total_chars), text))

    def read_folder(self, parts: tuple[str, ...]) -> tuple[str, _Read] | None:
        """(relative path, contents) of a folder's instructions file, read through the wall."""
        for name in INSTRUCTION_FILE_NAMES:
            relative = "/".join((*parts, name))
            read = _read(read_workspace_text(self.sandbox, relative, _MAX_READ_BYTES))
            if read is not None:
                return relative, read
        return None

    def system_prompt(self, base: str | None) -> str | None:
        if not self.fixed:
            return base
        if base not in self._system:
            sections = [HEADER]
            for file, text in self.fixed:
                if file.scope == "user":
                    title = "Your user's own instructions (for every project)"
                else:
                    title = f"{file.path} (the workspace root: applies to every file)"
                sections.append(f"## {title}\n{text.strip()}")
            block = "\n\n".join(sections)
            self._system[base] = f"{base}\n\n{block}" if base else block
        return self._system[base]

    def concerns(self, tool_name: str) -> bool:
        return tool_name in PATH_TOOLS

    def for_call(self, tool_name: str, arguments: Mapping[str, Any]) -> FolderNote | None:
        if tool_name not in PATH_TOOLS:
            return None
        with self._lock:
            return self._for_call(arguments)

    def _for_call(self, arguments: Mapping[str, Any]) -> FolderNote | None:
        path = arguments.get("path", ".")
        if not isinstance(path, str):
            return None
        try:
            target = self.sandbox.resolve(path)
        except ToolError:
            return None
        parts = target.parts
        folders = [parts[:depth] for depth in range(1, len(parts))]
        if parts and os.path.isdir(self.sandbox.absolute(target)):
            folders.append(parts)
        texts: list[str] = []
        files: list[InstructionFile] = []
        for folder in folders:
            if folder in self.seen:
                continue
            self.seen.add(folder)
            found = self.read_folder(folder)
            if found is None:
                continue
            relative, read = found
            where = "/".join(folder)
            text, sent = self._budgeted(read)
            files.append(InstructionFile(relative, "folder", where, sent, read.total_chars))
            texts.append(
                f"Instructions from {relative}, for the files under {where}/ (they take "
                f"precedence over the root's there):\n{text.strip()}"
            )
        if not files:
            return None
        return FolderNote("\n\n".join(texts), tuple(files))
