"""The line editor of the terminal session at a terminal: prompt_toolkit, imported only here,
so piped sessions never load it.

It edits the line (history kept in the data folder, Up recalls, Ctrl-R searches, Alt-Enter
starts a new line, Tab completes `/names`) and asks the approvals too, so no reader thread is
ever left blocked on the terminal after a Ctrl-C.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.formatted_text import ANSI
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from rich.console import Console

from ..display import LineReader
from ..workspace.prompt_commands import PromptCommand
from .lines import PROMPT
from .slash import BUILTINS, complete_names


class SlashCompleter(Completer):
    """Tab completion of `/name` at the start of the line: built-in and custom commands (the
    custom names are given again after each turn, since files may come and go)."""

    def __init__(self, custom: Sequence[PromptCommand] = ()) -> None:
        self.custom = list(custom)

    def names(self) -> list[str]:
        return [c.name for c in BUILTINS] + [c.name for c in self.custom]

    def get_completions(
        self, document: Document, complete_event: CompleteEvent
    ) -> Iterator[Completion]:
        typed = document.text_before_cursor
        descriptions = {c.name: c.description for c in BUILTINS}
        descriptions.update({c.name: c.description for c in self.custom})
        for name in complete_names(typed, self.names()):
            yield Completion(
                f"/{name}", start_position=-len(typed), display_meta=descriptions.get(name, "")
            )


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
