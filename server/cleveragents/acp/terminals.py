"""The editor's terminals for a session: `terminal/create`, `wait_for_exit`, `output`, `kill`,
`release`.

When the client says in `initialize` that it serves terminals (`clientCapabilities.terminal`),
run_command shows its output in one (`workspace/terminal.py`: the terminal runs our runner,
which runs the command under our wall). As soon as the terminal exists it is embedded in the
running run_command call (a `tool_call_update` whose content is the terminal), so the editor
shows the output live; the call's last update embeds it too, and only after that update is
sent is the terminal released (ACP: a terminal must be embedded before its release).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from acp import Client, RequestError
from acp.schema import ClientCapabilities, EnvVariable

from ..workspace.terminal import TERMINAL_OUTPUT_LIMIT, TerminalError
from .files import describe_client_error
from .session import PromptTurn

FLUSH_TIMEOUT_S = 5.0


class EditorTerminals:
    """A `TerminalHost` over the ACP client, for one session."""

    def __init__(self, client: Client, session_id: str, turn: Callable[[], PromptTurn | None]):
        self._client = client
        self._session_id = session_id
        self._turn = turn  # the session's running prompt, which shows the terminal

    @classmethod
    def offered(
        cls,
        client: Client,
        session_id: str,
        capabilities: ClientCapabilities | None,
        turn: Callable[[], PromptTurn | None],
    ) -> EditorTerminals | None:
        if capabilities is None or not capabilities.terminal:
            return None
        return cls(client, session_id, turn)

    async def start(self, command: str, args: list[str], cwd: str, env: dict[str, str]) -> str:
        try:
            created = await self._client.create_terminal(
                session_id=self._session_id,
                command=command,
                args=args,
                env=[EnvVariable(name=name, value=value) for name, value in env.items()],
                cwd=cwd,
                output_byte_limit=TERMINAL_OUTPUT_LIMIT,
            )
        except (RequestError, ConnectionError) as exc:
            raise TerminalError(describe_client_error(exc)) from None
        turn = self._turn()
        if turn is not None:
            turn.show_terminal(created.terminal_id)
        return created.terminal_id

    async def wait_for_exit(self, terminal_id: str) -> None:
        try:
            await self._client.wait_for_terminal_exit(
                session_id=self._session_id, terminal_id=terminal_id
            )
        except (RequestError, ConnectionError) as exc:
            raise TerminalError(describe_client_error(exc)) from None

    async def output(self, terminal_id: str) -> str:
        try:
            shown = await self._client.terminal_output(
                session_id=self._session_id, terminal_id=terminal_id
            )
        except (RequestError, ConnectionError) as exc:
            raise TerminalError(describe_client_error(exc)) from None
        return shown.output

    async def kill(self, terminal_id: str) -> None:
        try:
            await self._client.kill_terminal(session_id=self._session_id, terminal_id=terminal_id)
        except (RequestError, ConnectionError) as exc:
            raise TerminalError(describe_client_error(exc)) from None

    async def release(self, terminal_id: str) -> None:
        turn = self._turn()
        if turn is not None:
            # The call's updates embedding this terminal go out before it is released (a
            # client that stopped reading does not hold the release up for long).
            flushing = asyncio.ensure_future(turn.updates.flush())
            await asyncio.wait([flushing], timeout=FLUSH_TIMEOUT_S)
            flushing.cancel()
        try:
            await self._client.release_terminal(
                session_id=self._session_id, terminal_id=terminal_id
            )
        except (RequestError, ConnectionError) as exc:
            raise TerminalError(describe_client_error(exc)) from None
