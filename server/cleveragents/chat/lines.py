"""Where the terminal session's lines come from: the line editor at a terminal (`editor.py`,
which alone loads prompt_toolkit), or stdin's lines.

Piped (stdin no terminal), each line of stdin is a prompt: no line editor, no questions (calls
that need approval are denied), so scripts work.
"""

from __future__ import annotations

import sys
from typing import Protocol, TextIO

from ..display import LineReader, read_in_daemon_thread
from ..workspace.prompt_commands import PromptCommand

# One character no answer text starts with, so a prompt is easy to tell on the screen.
PROMPT = "\N{SINGLE RIGHT-POINTING ANGLE QUOTATION MARK} "


class LineSource(Protocol):
    """The session's input: `read` raises EOFError at the end (Ctrl-D) and KeyboardInterrupt
    for a Ctrl-C typed at the prompt."""

    @property
    def ask(self) -> LineReader | None:
        """How approvals are asked (None: nobody can be asked)."""
        ...

    async def read(self) -> str: ...

    def offer_commands(self, custom: list[PromptCommand]) -> None:
        """The custom commands to complete from now on."""
        ...


class PipedLines:
    """Each line of a piped stdin is a prompt (blank lines skipped by the session)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stdin

    @property
    def ask(self) -> LineReader | None:
        return None

    async def read(self) -> str:
        line = await read_in_daemon_thread(self.stream.readline)
        if not line:
            raise EOFError
        return line.rstrip("\r\n")

    def offer_commands(self, custom: list[PromptCommand]) -> None:
        return None  # nothing to complete without a line editor
