"""The terminal session's slash commands: what a typed line is, the built-in commands' table,
the help text and which names complete a typed `/na` (the line editor, `editor.py`, offers
them).

A line that starts with `/name` is a command: a built-in one (this table; the names
`workspace/prompt_commands.py` reserves for the fronts), else a custom command (a Markdown
prompt file), else unknown. Anything else is a prompt for the model. What each built-in does
to the session is `session.py`'s.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..workspace.prompt_commands import PromptCommand, parse_invocation


@dataclass(frozen=True, slots=True)
class BuiltinCommand:
    name: str
    arguments: str  # the hint shown after the name in /help ("" when it takes none)
    description: str


BUILTINS: tuple[BuiltinCommand, ...] = (
    BuiltinCommand(
        "undo",
        "",
        "put the files back as they were before the last prompt (right after /undo or "
        "/restore: undo that restore)",
    ),
    BuiltinCommand(
        "restore",
        "N [RUN_ID]",
        "put the files back as they were before step N of the last prompt (or of run RUN_ID)",
    ),
    BuiltinCommand("cost", "", "this session's tokens and cost"),
    BuiltinCommand(
        "model",
        "[PROVIDER] [NAME]",
        "show the model, or use NAME (of PROVIDER) from the next prompt on",
    ),
    BuiltinCommand(
        "profile",
        "[NAME]",
        "show what may run without asking, or change it (read-only, ask, auto-edit, full-auto)",
    ),
    BuiltinCommand("new", "", "start a new conversation: the next prompt does not continue this"),
    BuiltinCommand("runs", "", "the runs of this session, with their ids and cost"),
    BuiltinCommand("help", "", "this list, with the custom commands"),
    BuiltinCommand("exit", "", "leave the session (also /quit and Ctrl-D)"),
)
BUILTIN_NAMES = frozenset(command.name for command in BUILTINS) | {"quit"}


@dataclass(frozen=True, slots=True)
class SlashCall:
    """`/name arguments` as typed: `arguments` is the rest of the line, stripped."""

    name: str
    arguments: str

    @property
    def builtin(self) -> bool:
        return self.name in BUILTIN_NAMES

    @property
    def words(self) -> list[str]:
        return self.arguments.split()


def parse_line(line: str) -> SlashCall | None:
    """The command a line invokes, or None when it is a prompt (including a line such as
    `/usr/bin is full`, whose first word is no command name)."""
    invocation = parse_invocation(line)
    if invocation is None:
        return None
    name, arguments = invocation
    # Built-in names are matched whatever their case (`/Undo`); custom ones as their file.
    return SlashCall(name.lower() if name.lower() in BUILTIN_NAMES else name, arguments.strip())


def help_lines(custom: Sequence[PromptCommand]) -> list[str]:
    """`/help`: the built-in commands, then the custom ones with where they come from."""
    lines = ["commands:"]
    for command in BUILTINS:
        usage = f"/{command.name} {command.arguments}".rstrip()
        lines.append(f"  {usage:<22} {command.description}")
    if custom:
        lines.append("custom commands (Markdown files; $ARGUMENTS is what follows the name):")
        for prompt in custom:
            usage = f"/{prompt.name} {prompt.argument_hint or ''}".rstrip()
            lines.append(f"  {usage:<22} {prompt.description}  ({prompt.source}: {prompt.path})")
    else:
        lines.append(
            "custom commands: none yet (a Markdown file in .cleveragents/commands/ or in the "
            "commands folder of your config folder is one)"
        )
    lines.append("Ctrl-C stops the running turn; Ctrl-D (or /exit) leaves.")
    return lines


def complete_names(typed: str, names: Iterable[str]) -> list[str]:
    """The command names that complete `typed` (the line so far, `/` first, no space yet),
    in order; none once the name is followed by a space or for a line that is no command."""
    if not typed.startswith("/") or any(c.isspace() for c in typed):
        return []
    prefix = typed[1:].lower()
    return sorted({name for name in names if name.lower().startswith(prefix)})
