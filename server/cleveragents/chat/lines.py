"""Where the terminal session's lines come from: a line editor at a terminal, or stdin's lines.

At a terminal, prompt_toolkit edits the line (history kept in the data folder, Up recalls,
Tab completes `/names`) and asks the approvals too, so no reader thread is ever left blocked on
the terminal after a Ctrl-C. Piped (stdin no terminal), each line of stdin is a prompt: no line
editor, no questions (calls that need approval are denied), so scripts work.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Protocol, TextIO

from prompt_toolkit import PromptSession
from prompt_toolkit.formatted_text import ANSI
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from rich.console import Console

from ..display import LineReader, read_in_daemon_thread
from ..workspace.prompt_commands import PromptCommand
from .slash import SlashCompleter

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


class TerminalLines:
    """A prompt_toolkit line editor with a history file and `/name` completion."""

    def __init__(self, history_path: Path | None, console: Console) -> None:
        self.console = console
        self.completer = SlashCompleter()
        self.history = _history(history_path, console)
        self._prompts: PromptSession[str] = PromptSession(
            history=self.history,
            completer=self.completer,
            complete_while_typing=True,
            key_bindings=_newline_keys(),
        )
        # Answers to approvals are not prompts: they stay out of the history.
        self._answers: PromptSession[str] = PromptSession(history=InMemoryHistory())

    @property
    def ask(self) -> LineReader | None:
        return self._answer

    async def read(self) -> str:
        return await self._prompts.prompt_async(PROMPT)

    def offer_commands(self, custom: list[PromptCommand]) -> None:
        self.completer.custom = list(custom)

    async def _answer(self, console: Console, prompt: str) -> str:
        """An approval's answer, after `prompt` (rich markup, drawn as the console would)."""
        with console.capture() as captured:
            console.print(prompt, end="", highlight=False)
        return await self._answers.prompt_async(ANSI(captured.get()))


def _newline_keys() -> KeyBindings:
    """Enter sends the prompt; Alt-Enter (Esc then Enter) starts a new line in it."""
    keys = KeyBindings()

    @keys.add("escape", "enter")
    def _(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    return keys


def _history(path: Path | None, console: Console) -> History:
    """The history file (made private), else one kept in memory for this session."""
    if path is None:
        return InMemoryHistory()
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_CREAT | os.O_APPEND | os.O_WRONLY, 0o600)
        os.close(fd)
    except OSError as exc:
        console.print(
            f"[yellow]input history not kept: cannot write {path}: {exc.strerror}[/]",
            highlight=False,
        )
        return InMemoryHistory()
    return FileHistory(str(path))


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
