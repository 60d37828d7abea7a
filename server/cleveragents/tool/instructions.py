"""Project instructions as the runtime sees them: what a run's system prompt gains, and the
notes its tool results carry.

The files themselves (`AGENTS.md`, `CLAUDE.md`, the user's own) are found and read by
`workspace/instructions.py`; the runtime only asks, through these two small interfaces, once
when a run starts (`InstructionsSource.for_run`) and once per finished call
(`RunInstructions.for_call`). They change what the model reads, never what a call may do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from .messages import ToolResult
from .serialization import register_shape

InstructionScope = Literal["user", "project", "folder"]

NOTE_KEY = "project_instructions"
"""The key a tool result gains when it brings a folder's instructions to the model."""


@dataclass(frozen=True, slots=True)
class InstructionFile:
    """One instructions file a run sent the model.

    `path`: relative to the sandbox root (`/`-separated) for the project's files; the user's
    own file by its absolute path. `folder`: the subtree it governs, relative to the root
    (`.` for the root; empty for the user's file). `chars`: the characters sent;
    `total_chars`: the file's length (larger when it was cut to the cap).
    """

    path: str
    scope: InstructionScope
    folder: str
    chars: int
    total_chars: int

    @property
    def truncated(self) -> bool:
        return self.chars < self.total_chars


register_shape(InstructionFile, extra={"truncated": lambda file: file.truncated})


@dataclass(frozen=True, slots=True)
class FolderNote:
    """Instructions attached to one tool result: the text the model reads and its files."""

    text: str
    files: tuple[InstructionFile, ...]


class RunInstructions(Protocol):
    """One run's instructions: fixed in the system prompt, plus folders found as it goes."""

    @property
    def files(self) -> tuple[InstructionFile, ...]:
        """The files in the system prompt (the user's, then the root's)."""
        ...

    def system_prompt(self, base: str | None) -> str | None:
        """`base` with the instructions appended; the same bytes every time it is asked."""
        ...

    def concerns(self, tool_name: str) -> bool:
        """Whether a call of this tool may reach a folder (no I/O: the runtime asks on the
        event loop, then calls `for_call` on a thread)."""
        ...

    def for_call(self, tool_name: str, arguments: Mapping[str, Any]) -> FolderNote | None:
        """The instructions of folders this call reaches that the run has not sent yet
        (each file is sent at most once per run, whatever thread asks); None when there are
        none."""
        ...


class InstructionsSource(Protocol):
    """Where runs get their instructions (see `workspace/instructions.py`)."""

    def for_run(self, sandbox_root: str | None) -> RunInstructions | None:
        """The run's instructions (called on a thread); None when it can have none (no
        sandbox). A run whose root has no file may still find a subfolder's."""
        ...


def describe_files(files: Sequence[InstructionFile]) -> str:
    """`using AGENTS.md, 2 files: AGENTS.md, src/AGENTS.md` (empty when there are none):
    the one line every front shows."""
    if not files:
        return ""
    names = sorted({file.path.replace("\\", "/").rsplit("/", 1)[-1] for file in files})
    count = f"{len(files)} file{'s' if len(files) != 1 else ''}"
    cut = [file.path for file in files if file.truncated]
    line = f"using {' and '.join(names)}, {count}: {', '.join(file.path for file in files)}"
    return line + (f" (cut to the limit: {', '.join(cut)})" if cut else "")


def with_note(result: ToolResult, note: FolderNote) -> tuple[ToolResult, int]:
    """`result` carrying `note` under NOTE_KEY, and the characters that adds.

    A mapping result gains the key; any other result is wrapped as {"result": ..., key}.
    """
    content = result.content
    if isinstance(content, Mapping):
        merged = {**content, NOTE_KEY: note.text}
    else:
        merged = {"result": content, NOTE_KEY: note.text}
    added = len(note.text) + len(NOTE_KEY) + 6  # the key, its quotes, colon, comma and space
    return ToolResult(result.call_id, result.tool_name, merged, is_error=result.is_error), added
