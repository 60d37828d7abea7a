"""Helpers for the ACP tests: the real agent process, the ACP SDK's client on recorded pipes,
and a check of every recorded message against the published ACP JSON Schema."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from functools import cache
from pathlib import Path
from typing import Any, cast

import jsonschema
from acp import PROTOCOL_VERSION, Client, RequestError, connect_to_agent
from acp.client.connection import ClientSideConnection
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    CreateTerminalResponse,
    DeniedOutcome,
    EnvVariable,
    Implementation,
    KillTerminalResponse,
    PermissionOption,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    ToolCallUpdate,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)

ACP_TESTS = Path(__file__).resolve().parents[1] / "acp_agent"  # acp_tools.py, the schema
REPO = ACP_TESTS.parents[1]
SCHEMA_FILE = ACP_TESTS / "schema" / "acp-v1.schema.json"
WAIT_S = 60.0  # a ceiling against hangs, never a timing assertion
LINE_LIMIT = 16 * 1024 * 1024

TO_AGENT = "to_agent"
TO_CLIENT = "to_client"


def agent_env(home: Path, **settings: str) -> dict[str, str]:
    """The agent's environment: our test tools importable, no user settings or keys."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CLEVERAGENTS_", "ANTHROPIC_", "OPENAI_"))
    }
    env["PYTHONPATH"] = os.pathsep.join([str(ACP_TESTS), *filter(None, [env.get("PYTHONPATH")])])
    env["XDG_DATA_HOME"] = str(home / "data")
    # The user's own AGENTS.md lives in the config folder: none of the tester's in a test.
    env["XDG_CONFIG_HOME"] = str(home / "config")
    env["PYTHONUNBUFFERED"] = "1"
    env.update(settings)
    return env


def replay_env(home: Path, script: str, **settings: str) -> dict[str, str]:
    return agent_env(
        home, CLEVERAGENTS_PROVIDER="replay", CLEVERAGENTS_REPLAY_SCRIPT=script, **settings
    )


def write_script(path: Path, *responses: dict[str, Any]) -> str:
    """A replay-provider script: one response per LLM call of a run."""
    path.write_text(json.dumps({"responses": list(responses)}), encoding="utf-8")
    return str(path)


def call(tool_name: str, call_id: str, /, **arguments: Any) -> dict[str, Any]:
    """One scripted tool call; keyword arguments are the tool's arguments."""
    return {"name": tool_name, "id": call_id, "arguments": arguments}


# -- the schema ------------------------------------------------------------------------------


@cache
def acp_schema() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    return data


@cache
def _validator(name: str) -> jsonschema.Draft202012Validator:
    defs = acp_schema()["$defs"]
    return jsonschema.Draft202012Validator({"$ref": f"#/$defs/{name}", "$defs": defs})


@cache
def _envelope_validator(title: str) -> jsonschema.Draft202012Validator:
    """The schema's own top-level branch for messages a side sends ("Agent" or "Client")."""
    schema = acp_schema()
    branch = next(b for b in schema["anyOf"] if b.get("title") == title)
    return jsonschema.Draft202012Validator({**branch, "$defs": schema["$defs"]})


@cache
def _method_defs() -> dict[tuple[str, str], str]:
    """(method, "Request" | "Response" | "Notification") to the `$defs` entry describing it."""
    table: dict[tuple[str, str], str] = {}
    for name, definition in acp_schema()["$defs"].items():
        method = definition.get("x-method")
        if method is None:
            continue
        for part in ("Request", "Response", "Notification"):
            if name.endswith(part):
                table[(method, part)] = name
    return table


def _handled_by(definition: str) -> str:
    return str(acp_schema()["$defs"][definition]["x-side"])


def check_messages(log: list[tuple[str, dict[str, Any]]]) -> int:
    """Validate every message, both ways, against the schema; returns how many were checked.

    Each message must pass its side's top-level branch (the envelope), and its params or
    result must pass the definition of its own method: a request's method names it, a
    response's is the method of the request it answers (matched by id, the other way).
    """
    methods = _method_defs()
    asked: dict[tuple[str, Any], str] = {}
    for direction, message in log:
        where = f"{direction} {json.dumps(message)[:300]}"
        sender = "Client" if direction == TO_AGENT else "Agent"
        if "method" in message:
            method = message["method"]
            part = "Request" if "id" in message else "Notification"
            definition = methods.get((method, part))
            assert definition is not None, f"{method} is not an ACP {part.lower()}: {where}"
            expected_side = "agent" if direction == TO_AGENT else "client"
            side = _handled_by(definition)
            # Protocol-level methods ($/cancel_request) go either way, in their own envelope.
            assert side in (expected_side, "protocol"), f"{method} sent the wrong way"
            envelope = "ProtocolLevel" if side == "protocol" else sender
            _check(_envelope_validator(envelope), message, where)
            _check(_validator(definition), message.get("params"), where)
            if "id" in message:
                asked[(direction, message["id"])] = method
            continue
        _check(_envelope_validator(sender), message, where)
        if "error" in message:
            _check(_validator("Error"), message["error"], where)
            if message.get("id") is not None:
                asked.pop((_other(direction), message["id"]), None)
            continue
        method = asked.pop((_other(direction), message["id"]), None)
        assert method is not None, f"a response to no request: {where}"
        definition = methods[(method, "Response")]
        _check(_validator(definition), message["result"], where)
    return len(log)


def _other(direction: str) -> str:
    return TO_CLIENT if direction == TO_AGENT else TO_AGENT


def _check(validator: jsonschema.Draft202012Validator, value: Any, where: str) -> None:
    errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
    assert not errors, f"schema violations in {where}: " + "; ".join(
        f"{list(e.absolute_path)}: {e.message[:200]}" for e in errors[:5]
    )


# -- the client ------------------------------------------------------------------------------

PermissionAnswer = Callable[[ToolCallUpdate, list[PermissionOption]], Awaitable[str | None]]


async def refuse_to_be_asked(tool_call: ToolCallUpdate, options: list[PermissionOption]) -> None:
    raise AssertionError(f"unexpected permission request for {tool_call.title}")


class EditorTerminal:
    """A terminal the test editor runs: the process, and all it printed."""

    def __init__(
        self, command: str, args: list[str], cwd: str | None, process: asyncio.subprocess.Process
    ) -> None:
        self.command = command
        self.args = args
        self.cwd = cwd
        self.process = process
        self.output = bytearray()
        self.reader: asyncio.Future[None] | None = None
        self.released = False

    async def read_all(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        while chunk := await stdout.read(65536):
            self.output += chunk

    def exit_status(self) -> TerminalExitStatus | None:
        code = self.process.returncode
        if code is None:
            return None
        if code < 0:
            return TerminalExitStatus(exit_code=None, signal=signal.Signals(-code).name)
        return TerminalExitStatus(exit_code=code, signal=None)


class RecordingClient:
    """The editor's side: keeps every update and answers permission requests via `answer`.

    `answer` returns the chosen option id, or None for the `cancelled` outcome. It serves
    `fs/*` as an editor does (an agent uses them only when `initialize` offered them):
    `buffers` are its open files with unsaved changes, read before the disk, and a write
    lands in a buffer, not on disk. `fs_calls` records each (method, path).
    """

    def __init__(self) -> None:
        self.updates: list[tuple[str, Any]] = []
        self.permission_requests: list[tuple[str, ToolCallUpdate, list[PermissionOption]]] = []
        self.answer: PermissionAnswer = refuse_to_be_asked
        self.buffers: dict[str, str] = {}
        self.fs_calls: list[tuple[str, str]] = []
        self.terminals: dict[str, EditorTerminal] = {}
        self.terminal_calls: list[tuple[str, str]] = []
        self._changed = asyncio.Condition()

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **kwargs: Any,
    ) -> ReadTextFileResponse:
        self.fs_calls.append(("fs/read_text_file", path))
        if path in self.buffers:
            text = self.buffers[path]
        else:
            try:
                text = Path(path).read_text(encoding="utf-8")
            except FileNotFoundError:
                raise RequestError.resource_not_found(path) from None
        lines = text.splitlines(keepends=True)
        start = (line or 1) - 1
        end = None if limit is None else start + limit
        return ReadTextFileResponse(content="".join(lines[start:end]))

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse:
        self.fs_calls.append(("fs/write_text_file", path))
        self.buffers[path] = content
        return WriteTextFileResponse()

    # -- terminals, as an editor runs them: real processes, output kept and shown ----------
    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        env: list[EnvVariable] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **kwargs: Any,
    ) -> CreateTerminalResponse:
        terminal_id = f"term_{len(self.terminals) + 1}"
        self.terminal_calls.append(("terminal/create", terminal_id))
        environment = {**os.environ, **{v.name: v.value for v in env or []}}
        process = await asyncio.create_subprocess_exec(
            command,
            *(args or []),
            cwd=cwd,
            env=environment,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        terminal = EditorTerminal(command, args or [], cwd, process)
        self.terminals[terminal_id] = terminal
        terminal.reader = asyncio.ensure_future(terminal.read_all())
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def terminal_output(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> TerminalOutputResponse:
        self.terminal_calls.append(("terminal/output", terminal_id))
        terminal = self.terminals[terminal_id]
        return TerminalOutputResponse(
            output=terminal.output.decode(errors="replace"),
            truncated=False,
            exit_status=terminal.exit_status(),
        )

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> WaitForTerminalExitResponse:
        self.terminal_calls.append(("terminal/wait_for_exit", terminal_id))
        terminal = self.terminals[terminal_id]
        await terminal.process.wait()
        assert terminal.reader is not None
        await terminal.reader
        status = terminal.exit_status()
        assert status is not None
        return WaitForTerminalExitResponse(exit_code=status.exit_code, signal=status.signal)

    async def kill_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> KillTerminalResponse:
        """The harshest kill an editor may do: SIGKILL, to the terminal's process alone."""
        self.terminal_calls.append(("terminal/kill", terminal_id))
        process = self.terminals[terminal_id].process
        if process.returncode is None:
            process.kill()
        return KillTerminalResponse()

    async def release_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> ReleaseTerminalResponse:
        self.terminal_calls.append(("terminal/release", terminal_id))
        terminal = self.terminals[terminal_id]
        if terminal.process.returncode is None:
            terminal.process.kill()
        terminal.released = True
        return ReleaseTerminalResponse()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        async with self._changed:
            self.updates.append((session_id, update))
            self._changed.notify_all()

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        async with self._changed:
            self.permission_requests.append((session_id, tool_call, options))
            self._changed.notify_all()
        chosen = await self.answer(tool_call, options)
        if chosen is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=chosen)
        )

    async def wait_for_update(self, predicate: Callable[[Any], bool]) -> Any:
        async def find() -> Any:
            async with self._changed:
                while True:
                    for _, update in self.updates:
                        if predicate(update):
                            return update
                    await self._changed.wait()

        return await asyncio.wait_for(find(), WAIT_S)

    def session_updates(self, session_id: str) -> list[Any]:
        return [update for sid, update in self.updates if sid == session_id]

    def tool_updates(self, session_id: str, call_id: str) -> list[Any]:
        return [
            u
            for u in self.session_updates(session_id)
            if u.session_update in ("tool_call", "tool_call_update") and u.tool_call_id == call_id
        ]

    def text(self, session_id: str) -> str:
        return "".join(
            u.content.text
            for u in self.session_updates(session_id)
            if u.session_update == "agent_message_chunk"
        )


# -- the agent process -----------------------------------------------------------------------


def agent_command(history: Path, *args: str) -> list[str]:
    """`cleveragents serve --acp` with this history file."""
    return [
        sys.executable,
        "-m",
        "cleveragents",
        "serve",
        "--acp",
        "--history",
        str(history),
        *args,
    ]


class AgentProcess:
    """`python -m cleveragents serve --acp`, driven by the ACP SDK's client side.

    Both pipes go through relays that record every line as it crosses, so the tests can check
    the exact bytes on the wire (not what the SDK made of them) against the schema.
    """

    def __init__(self, process: asyncio.subprocess.Process, client: RecordingClient) -> None:
        self.process = process
        self.client = client
        self.wire: list[tuple[str, bytes]] = []
        self.injected: list[bytes] = []
        self.stderr = bytearray()
        self.connection: ClientSideConnection | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._sdk_writer: asyncio.StreamWriter | None = None
        self._relay_transport: asyncio.BaseTransport | None = None

    @classmethod
    async def start(
        cls, home: Path, env: dict[str, str], *args: str, client: RecordingClient | None = None
    ) -> AgentProcess:
        command = agent_command(home / "history.sqlite3", *args)
        process = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            cwd=str(home),
            limit=LINE_LIMIT,
        )
        agent = cls(process, client or RecordingClient())
        await agent._connect()
        return agent

    async def _connect(self) -> None:
        loop = asyncio.get_running_loop()
        # What the SDK reads: the agent's stdout, line by line, after we recorded it.
        sdk_reader = asyncio.StreamReader(limit=LINE_LIMIT)
        # What the SDK writes: a pipe we read on the other end, record, and pass on.
        read_fd, write_fd = os.pipe()
        relay_reader = asyncio.StreamReader(limit=LINE_LIMIT)
        self._relay_transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(relay_reader), os.fdopen(read_fd, "rb", 0)
        )
        write_protocol = asyncio.StreamReaderProtocol(asyncio.StreamReader())
        transport, _ = await loop.connect_write_pipe(
            lambda: write_protocol, os.fdopen(write_fd, "wb", 0)
        )
        self._sdk_writer = asyncio.StreamWriter(transport, write_protocol, None, loop)
        self._tasks = [
            asyncio.ensure_future(self._from_agent(sdk_reader)),
            asyncio.ensure_future(self._to_agent(relay_reader)),
            asyncio.ensure_future(self._read_stderr()),
        ]
        # The recording client implements the Client methods the agent calls; the SDK answers
        # method-not-found for the others.
        client = cast(Client, self.client)
        self.connection = connect_to_agent(client, self._sdk_writer, sdk_reader)

    async def _from_agent(self, sdk_reader: asyncio.StreamReader) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        while line := await stdout.readline():
            self.wire.append((TO_CLIENT, line))
            sdk_reader.feed_data(line)
        sdk_reader.feed_eof()

    async def _to_agent(self, relay_reader: asyncio.StreamReader) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        while line := await relay_reader.readline():
            self.wire.append((TO_AGENT, line))
            stdin.write(line)
            await stdin.drain()
        stdin.close()

    async def _read_stderr(self) -> None:
        stderr = self.process.stderr
        assert stderr is not None
        while chunk := await stderr.read(65536):
            self.stderr += chunk

    @property
    def conn(self) -> ClientSideConnection:
        assert self.connection is not None
        return self.connection

    def inject(self, raw: bytes) -> None:
        """Bytes straight onto the agent's stdin, past the SDK (malformed input)."""
        stdin = self.process.stdin
        assert stdin is not None
        self.injected.append(raw)
        stdin.write(raw)

    def send_message(self, message: dict[str, Any]) -> None:
        """A message the SDK cannot send ($/cancel_request), written and recorded as sent."""
        line = json.dumps(message).encode() + b"\n"
        self.wire.append((TO_AGENT, line))
        self.inject(line)

    def messages(self) -> list[tuple[str, dict[str, Any]]]:
        """Every line that crossed, parsed; each must be exactly one JSON object and a newline."""
        parsed = []
        for direction, line in self.wire:
            assert line.endswith(b"\n"), f"{direction}: a message without its newline: {line!r}"
            message = json.loads(line)
            assert isinstance(message, dict), f"{direction}: not an object: {line!r}"
            parsed.append((direction, message))
        return parsed

    def received(self, method: str) -> list[dict[str, Any]]:
        return [m for d, m in self.messages() if d == TO_CLIENT and m.get("method") == method]

    async def close(self) -> int:
        """Close our end as an editor does; the agent's exit code."""
        if self.connection is not None:
            await self.connection.close()
        if self._sdk_writer is not None:
            self._sdk_writer.close()
        code = await asyncio.wait_for(self.process.wait(), WAIT_S)
        await asyncio.wait_for(asyncio.gather(*self._tasks), WAIT_S)
        return code

    async def output_read(self) -> None:
        """Wait until the agent's stdout and stderr have been read to their end (it exited)."""
        from_agent, _, stderr = self._tasks
        await asyncio.wait_for(asyncio.gather(from_agent, stderr), WAIT_S)

    def kill(self) -> None:
        """Whatever state the test left: no process, no relay, no open pipe."""
        if self.process.returncode is None:
            self.process.kill()
        for task in self._tasks:
            task.cancel()
        if self._sdk_writer is not None:
            self._sdk_writer.close()
        if self._relay_transport is not None:
            self._relay_transport.close()


# What the `start_agent` fixture returns (in this module, not conftest: test modules cannot
# import from a conftest reliably when several test folders have one).
StartAgent = Callable[..., AbstractAsyncContextManager[AgentProcess]]


async def open_session(conn: Any, cwd: Path, **meta: Any) -> str:
    """`initialize`, then `session/new` on `cwd`: the new session's id."""
    await conn.initialize(
        protocol_version=PROTOCOL_VERSION,
        client_capabilities=ClientCapabilities(),
        client_info=Implementation(name="acp-tests", version="1"),
    )
    session = await conn.new_session(cwd=str(cwd), mcp_servers=[], **meta)
    return str(session.session_id)


def ours(update: Any) -> dict[str, Any]:
    """The `_meta.cleveragents` part of a session update."""
    meta = update.field_meta or {}
    return dict(meta.get("cleveragents") or {})
