"""Custom commands: reusable prompts kept as Markdown files, typed as `/name arguments`.

Where they come from (a workspace's command wins over the user's of the same name):

- `.cleveragents/commands/NAME.md` in the workspace (read through the sandbox wall);
- `commands/NAME.md` in the user's configuration folder (`paths.user_config_dir()`).

A file is the prompt's text. It may start with a front matter of `key: value` lines between
`---` lines: `description` (shown in the command list; default: the first line of the text)
and `argument-hint` (what to type after the name). In the text, `$ARGUMENTS` stands for
everything typed after the name, and `$1` to `$9` for its words; when the text names none of
them, what was typed is added after a blank line.

A command only writes the prompt: it runs what any prompt runs, under the same profile,
approvals and walls. Names the fronts use themselves (`/undo`, `/restore`, ...) stay theirs.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..paths import user_config_dir
from ..tool.errors import ToolError
from .sandbox import Sandbox, closing_fd
from .text_files import read_user_text, read_workspace_text

WORKSPACE_COMMANDS = ".cleveragents/commands"
USER_COMMANDS = "commands"
MAX_COMMAND_BYTES = 64 * 1024
MAX_COMMANDS = 200
MAX_DESCRIPTION_CHARS = 120
# The slash commands of the fronts (ACP, the terminal session): a file cannot take them.
RESERVED_NAMES = frozenset(
    {"undo", "restore", "cost", "model", "profile", "new", "runs", "help", "exit", "quit"}
)

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_INVOCATION = re.compile(r"/([A-Za-z0-9][A-Za-z0-9_.-]{0,63})(?:\s+(.*))?", re.DOTALL)
_PLACEHOLDER = re.compile(r"\$ARGUMENTS|\$([1-9])")


@dataclass(frozen=True, slots=True)
class PromptCommand:
    """One custom command. `source`: `workspace` or `user`; `path`: the file it came from."""

    name: str
    description: str
    argument_hint: str | None
    body: str
    source: str
    path: str

    def expand(self, arguments: str) -> str:
        """The prompt this command writes for `arguments` (what was typed after its name)."""
        arguments = arguments.strip()
        words = arguments.split()
        uses = _PLACEHOLDER.search(self.body) is not None

        def fill(match: re.Match[str]) -> str:
            if match.group(1) is None:
                return arguments
            index = int(match.group(1)) - 1
            return words[index] if index < len(words) else ""

        # One pass: what the user typed is never read for placeholders itself.
        text = _PLACEHOLDER.sub(fill, self.body)
        if arguments and not uses:
            text = f"{text.rstrip()}\n\n{arguments}"
        return text.strip()


def parse_command_file(name: str, text: str, source: str, path: str) -> PromptCommand:
    """A command from its file's text (front matter, then the prompt)."""
    meta: dict[str, str] = {}
    body = text
    lines = text.splitlines()
    if lines and lines[0].strip() == "---":
        end = next((i for i, line in enumerate(lines[1:], 1) if line.strip() == "---"), None)
        if end is not None:
            for line in lines[1:end]:
                key, sep, value = line.partition(":")
                if sep:
                    meta[key.strip().lower()] = value.strip().strip("\"'")
            body = "\n".join(lines[end + 1 :])
    body = body.strip()
    description = meta.get("description") or next(
        (line.strip().lstrip("#").strip() for line in body.splitlines() if line.strip()), name
    )
    if len(description) > MAX_DESCRIPTION_CHARS:
        description = description[: MAX_DESCRIPTION_CHARS - 1] + "…"
    return PromptCommand(
        name=name,
        description=description,
        argument_hint=meta.get("argument-hint") or None,
        body=body,
        source=source,
        path=path,
    )


def _command_name(file_name: str) -> str | None:
    if not file_name.endswith(".md"):
        return None
    name = file_name[:-3]
    if not _NAME.fullmatch(name) or name.lower() in RESERVED_NAMES:
        return None
    return name


def _workspace_command(sandbox: Sandbox, file_name: str) -> PromptCommand | None:
    """The workspace's command in `file_name`, read through the wall; None if unusable."""
    name = _command_name(file_name)
    if name is None:
        return None
    relative = f"{WORKSPACE_COMMANDS}/{file_name}"
    found = read_workspace_text(sandbox, relative, MAX_COMMAND_BYTES + 1)
    if found is None or found.size > MAX_COMMAND_BYTES:
        return None
    return parse_command_file(name, found.text, "workspace", relative)


def _user_command(folder: Path, file_name: str) -> PromptCommand | None:
    """The user's command in `file_name` of their commands folder; None if unusable."""
    name = _command_name(file_name)
    if name is None:
        return None
    path = folder / file_name
    found = read_user_text(path, MAX_COMMAND_BYTES + 1)
    if found is None or found.size > MAX_COMMAND_BYTES:
        return None
    return parse_command_file(name, found.text, "user", str(path))


def _sandbox(sandbox_root: str | None) -> Sandbox | None:
    if not sandbox_root:
        return None
    try:
        return Sandbox(sandbox_root)
    except ToolError:
        return None


def _workspace_commands(sandbox_root: str | None) -> list[PromptCommand]:
    sandbox = _sandbox(sandbox_root)
    if sandbox is None:
        return []
    try:
        folder = sandbox.resolve(WORKSPACE_COMMANDS)
        with closing_fd(sandbox.open_directory(folder)) as fd:
            names = sorted(os.listdir(fd))
    except (ToolError, OSError):
        return []
    found = (_workspace_command(sandbox, file_name) for file_name in names[: MAX_COMMANDS * 2])
    return [command for command in found if command is not None]


def _user_commands(folder: Path) -> list[PromptCommand]:
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    found = (_user_command(folder, file_name) for file_name in names[: MAX_COMMANDS * 2])
    return [command for command in found if command is not None]


def load_prompt_commands(
    sandbox_root: str | None, user_folder: Path | None = None
) -> list[PromptCommand]:
    """Every custom command for a workspace, by name (a workspace's wins over the user's),
    at most MAX_COMMANDS. Unreadable files and folders are skipped."""
    user = _user_commands((user_folder or user_config_dir()) / USER_COMMANDS)
    workspace = _workspace_commands(sandbox_root)
    by_name = {command.name: command for command in user}
    by_name.update({command.name: command for command in workspace})
    return [by_name[name] for name in sorted(by_name)][:MAX_COMMANDS]


def parse_invocation(text: str) -> tuple[str, str] | None:
    """(name, arguments) when `text` is `/name arguments`; None otherwise."""
    match = _INVOCATION.fullmatch(text.strip())
    if match is None:
        return None
    return match.group(1), match.group(2) or ""


def expand_prompt_command(
    text: str, sandbox_root: str | None, user_folder: Path | None = None
) -> str | None:
    """The prompt `text` stands for when it invokes a custom command; None when it does not
    (not `/name`, or no such command: the text is then sent as typed)."""
    invocation = parse_invocation(text)
    if invocation is None:
        return None
    name, arguments = invocation
    file_name = f"{name}.md"
    sandbox = _sandbox(sandbox_root)
    command = _workspace_command(sandbox, file_name) if sandbox is not None else None
    if command is None:  # only the named file is read, the workspace's first
        command = _user_command((user_folder or user_config_dir()) / USER_COMMANDS, file_name)
    return command.expand(arguments) if command is not None else None
