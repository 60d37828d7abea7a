"""Slash commands of an ACP session: `/undo` and `/restore N`, undo through the core, and the
custom commands of the workspace and the user (`workspace/prompt_commands.py`).

The agent advertises them with an `available_commands_update` right after `session/new` and
`session/load`. A custom command's `/name arguments` is expanded to its prompt, which runs as
any prompt does. `/undo` and `/restore` run no model:

- `/undo` puts the files back as they were before the session's last prompt. Right after a
  `/undo` or `/restore`, it undoes that restore instead (so `/undo` twice is a redo).
- `/restore N [RUN_ID]` puts the files back as they were before step (iteration) N of the
  session's last prompt, or of the run RUN_ID.

The answer is an `agent_message_chunk` naming the files the restore changed, and the prompt's
response carries `_meta.cleveragents` = {restoreId, runId, changedFiles, error}. The
conversation is left as it was: the model sees the restored files when it next reads them.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from acp import Client
from acp.schema import (
    AgentMessageChunk,
    AvailableCommand,
    AvailableCommandInput,
    AvailableCommandsUpdate,
    PromptResponse,
    TextContentBlock,
    UnstructuredCommandInput,
)

from ..jsonrpc_errors import as_jsonrpc
from ..service.errors import INVALID_PARAMS, ServiceError
from ..service.runs import RunManager
from ..service.undo import RestoreOutcome
from ..tool.serialization import to_data
from ..workspace.names import shown_path
from ..workspace.prompt_commands import PromptCommand, load_prompt_commands
from .session import AcpSession
from .updates import META_KEY

log = logging.getLogger(__name__)

_COMMAND = re.compile(r"/(undo|restore)\b(.*)", re.DOTALL)
_MARKS = {"added": "+", "modified": "~", "deleted": "-"}
# The tasks sending command lists, kept until done (the loop holds tasks only weakly).
_sending: set[asyncio.Task[None]] = set()


@dataclass(frozen=True, slots=True)
class SlashCommand:
    name: str
    arguments: list[str]


def available_commands(custom: Sequence[PromptCommand] = ()) -> AvailableCommandsUpdate:
    """The built-in commands, then the custom ones (their source under `_meta.cleveragents`)."""
    return AvailableCommandsUpdate(
        session_update="available_commands_update",
        available_commands=[
            AvailableCommand(
                name="undo",
                description=(
                    "Put the files back as they were before the last prompt (after /undo or "
                    "/restore: undo that restore)."
                ),
            ),
            AvailableCommand(
                name="restore",
                description=(
                    "Put the files back as they were before step N of the last prompt (or of "
                    "the run RUN_ID)."
                ),
                input=AvailableCommandInput(UnstructuredCommandInput(hint="N [RUN_ID]")),
            ),
            *(
                AvailableCommand(
                    name=command.name,
                    description=command.description,
                    input=AvailableCommandInput(
                        UnstructuredCommandInput(hint=command.argument_hint or "arguments")
                    ),
                    field_meta={META_KEY: {"source": command.source, "path": command.path}},
                )
                for command in custom
            ),
        ],
    )


def advertise_commands(client: Client, session_id: str, sandbox_root: str) -> None:
    """Send the command list (the workspace's and the user's custom commands read on a
    thread) once the current request has been answered."""

    async def send() -> None:
        try:
            custom = await asyncio.to_thread(load_prompt_commands, sandbox_root)
            await client.session_update(session_id, available_commands(custom))
        except Exception as exc:  # the connection went away: nobody to tell
            log.warning("available commands not sent: %s: %s", type(exc).__name__, exc)

    task = asyncio.ensure_future(send())
    _sending.add(task)
    task.add_done_callback(_sending.discard)


def slash_command(text: str) -> SlashCommand | None:
    match = _COMMAND.fullmatch(text.strip())
    if match is None:
        return None
    return SlashCommand(match.group(1), match.group(2).split())


async def run_slash_command(
    manager: RunManager, client: Client, session: AcpSession, command: SlashCommand
) -> PromptResponse:
    """Run `/undo` or `/restore`; the outcome, or why not, goes to the client as text."""
    meta: dict[str, Any] = {"runId": None, "restoreId": None, "changedFiles": [], "error": None}
    try:
        run_id, iteration = _target(session, command)
        meta["runId"] = run_id
        outcome = await manager.restore(run_id, iteration)
    except ServiceError as exc:
        code, message, _ = as_jsonrpc(exc)
        meta["error"] = {"code": code, "message": message}
        text = f"Not restored: {message}"
    else:
        meta["restoreId"] = outcome.restore_id
        meta["changedFiles"] = to_data(outcome.changed_files)
        if outcome.restore_id is not None:
            session.last_restore_id = outcome.restore_id
        text = _describe(outcome)
    await client.session_update(
        session.session_id,
        AgentMessageChunk(
            session_update="agent_message_chunk",
            content=TextContentBlock(type="text", text=text),
        ),
    )
    return PromptResponse(stop_reason="end_turn", field_meta={META_KEY: meta})


def _target(session: AcpSession, command: SlashCommand) -> tuple[str, int | None]:
    """The run (or restore) to restore and the iteration; ServiceError when unclear."""

    def usage(problem: str) -> ServiceError:
        return ServiceError(INVALID_PARAMS, problem, {"problems": [problem]})

    if command.name == "undo":
        if command.arguments:
            raise usage("/undo takes no arguments (to go back to a step: /restore N)")
        target = session.last_restore_id or session.last_run_id
        if target is None:
            raise usage("nothing to undo yet: this session has run no prompt")
        return target, None
    if not 1 <= len(command.arguments) <= 2 or not command.arguments[0].isdigit():
        raise usage("use /restore N (the step to go back before) or /restore N RUN_ID")
    run_id = command.arguments[1] if len(command.arguments) == 2 else session.last_run_id
    if run_id is None:
        raise usage("no prompt has run in this session: name the run, /restore N RUN_ID")
    return run_id, int(command.arguments[0])


def _describe(outcome: RestoreOutcome) -> str:
    if not outcome.changed_files:
        return "Nothing to restore: the files are already as they were."
    lines = [f"Restored {len(outcome.changed_files)} file(s) in {outcome.sandbox_root}:"]
    lines += [
        f"  {_MARKS[c.change]} {shown_path(c.path)} ({c.change})" for c in outcome.changed_files
    ]
    lines += [f"  kept {k.path}: an ignored or too-large file is in the way" for k in outcome.kept]
    lines.append("Type /undo to undo this restore.")
    return "\n".join(lines)
