"""One MCP server over stdio: its process, its session and the calls to its tools.

Each server lives in a task of its own, which enters the SDK's `stdio_client` and
`ClientSession` and, when told to stop, leaves them again: anyio requires a task group to be
left by the task that entered it, while the callers (a CLI run, the daemon's runs, the daemon's
shutdown) come and go in other tasks. Stopping cancels an anyio scope *inside* those contexts,
never the task itself, so the SDK's own shutdown (close stdin, wait, kill the process group)
always runs to the end.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from collections.abc import Iterator
from typing import Any, Protocol, TextIO

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from mcp.types import CONNECTION_CLOSED, Implementation, PaginatedRequestParams, Tool

from .. import __version__
from ..tool.errors import ToolError
from .config import DEFAULT_STARTUP_TIMEOUT_S, McpServerConfig, resolve_program
from .errors import McpStartError
from .results import output_of

STDERR_TAIL_BYTES = 16 * 1024
STDERR_TAIL_LINES = 20
MAX_TOOL_PAGES = 100
# Once the connection drops, how long to wait for the exit code and the rest of stderr: the
# pipe closes a moment before the process is reaped.
_EXIT_WAIT_S = 2.0
_STDERR_DRAIN_S = 1.0
# Grace between SIGTERM and SIGKILL for processes the server left behind in its group.
_LEFTOVER_GRACE_S = 2.0
_POLL_S = 0.01
CLIENT_INFO = Implementation(name="cleveragents", version=__version__)


class _Process(Protocol):
    @property
    def pid(self) -> int: ...
    @property
    def returncode(self) -> int | None: ...


class _StartFailure(Exception):
    """Internal: why the handshake failed, before the stderr tail is added."""


class StderrTail:
    """The last bytes a server wrote to stderr, read by a thread so the server never blocks."""

    def __init__(self, limit: int = STDERR_TAIL_BYTES) -> None:
        read_fd, write_fd = os.pipe()
        # Handed to the server as its stderr; our copy is closed once it has been spawned.
        self.errlog: TextIO = os.fdopen(write_fd, "w", encoding="utf-8", errors="replace")
        self._read_fd = read_fd
        self._limit = limit
        self._buffer = bytearray()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._pump, name="mcp-stderr", daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        try:
            while chunk := os.read(self._read_fd, 4096):
                with self._lock:
                    self._buffer += chunk
                    if len(self._buffer) > self._limit:
                        del self._buffer[: len(self._buffer) - self._limit]
        except OSError:
            pass
        finally:
            os.close(self._read_fd)

    def release_writer(self) -> None:
        self.errlog.close()

    async def drained(self, timeout: float) -> None:
        """Wait (at most `timeout`) until every writer has closed the pipe."""
        with anyio.move_on_after(timeout):
            while self._thread.is_alive():
                await anyio.sleep(_POLL_S)

    def lines(self, count: int = STDERR_TAIL_LINES) -> str:
        with self._lock:
            text = self._buffer.decode("utf-8", errors="replace")
        return "\n".join(text.strip("\n").splitlines()[-count:]).strip()


def exit_description(returncode: int) -> str:
    if returncode >= 0:
        return f"exited (code {returncode})"
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = f"signal {-returncode}"
    return f"was killed by {name}"


def _leaf(exc: BaseException) -> BaseException:
    """The exception that matters inside the task groups' ExceptionGroups."""
    while isinstance(exc, BaseExceptionGroup):
        inner = [e for e in exc.exceptions if not isinstance(e, asyncio.CancelledError)]
        exc = (inner or list(exc.exceptions))[0]
    return exc


def _spawned_process(transport: Any) -> _Process | None:
    """The server process that `stdio_client` started, for its pid and exit code.

    The SDK keeps it to itself: it is a local of the context manager's generator, which is
    suspended (and so inspectable) for as long as the context is open. Should a later SDK
    rename it, the error messages lose the exit code and nothing else breaks.
    """
    frame = getattr(getattr(transport, "gen", None), "ag_frame", None)
    process: Any = frame.f_locals.get("process") if frame is not None else None
    if process is None or not isinstance(getattr(process, "pid", None), int):
        return None
    if not hasattr(process, "returncode"):
        return None
    found: _Process = process
    return found


class McpServerConnection:
    """A started MCP server: `start` it, `call` its tools from any task, `stop` it once."""

    def __init__(
        self,
        config: McpServerConfig,
        sandbox_root: str,
        *,
        startup_timeout_s: float = DEFAULT_STARTUP_TIMEOUT_S,
    ) -> None:
        self.config = config
        self._sandbox_root = sandbox_root
        self._startup_timeout_s = startup_timeout_s
        self._stop_scope = anyio.CancelScope()
        self._session: ClientSession | None = None
        self._process: _Process | None = None
        self._stderr: StderrTail | None = None
        self._task: asyncio.Task[None] | None = None
        self._ready: asyncio.Future[list[Tool]] | None = None
        self._stopping = False
        self._ended: str | None = None  # why the connection ended while nobody stopped it

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def alive(self) -> bool:
        """Started, not stopped, and (as far as can be seen) its process still running."""
        return (
            self._session is not None
            and not self._stopping
            and self._ended is None
            and (self._process is None or self._process.returncode is None)
        )

    async def start(self) -> list[Tool]:
        """Start the server and complete the handshake; its tools, or McpStartError."""
        if self._task is not None:
            raise RuntimeError(f"MCP server {self.name!r} was already started")
        loop = asyncio.get_running_loop()
        self._ready = loop.create_future()
        self._task = loop.create_task(self._serve(), name=f"mcp-server-{self.name}")
        # Shielded: a cancelled caller must not cancel the server's task (only `stop` ends it).
        return await asyncio.shield(self._ready)

    async def stop(self) -> None:
        """Stop the server and whatever it left in its process group; waits until it is gone.

        Cancelling the caller does not cut this short (leaving early would leak the process);
        the cancellation is re-raised once the server is gone. Every wait in it is bounded.
        """
        self._stopping = True
        self._stop_scope.cancel()
        task = self._task
        if task is None:
            return
        interrupted = False
        while not task.done():
            try:
                await asyncio.wait({task})
            except asyncio.CancelledError:
                interrupted = True
        ready = self._ready
        if ready is not None and ready.done() and not ready.cancelled():
            ready.exception()  # a start nobody waited for any more must not warn at exit
        if interrupted:
            raise asyncio.CancelledError

    async def call(self, tool_name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Call one tool; its output as a record's output, or ToolError with a clear reason."""
        label = f"MCP tool {tool_name!r} of server {self.name!r}"
        session = self._session
        if session is None or self._stopping or self._ended is not None:
            raise ToolError(f"{label} cannot be called: {await self._gone_reason()}")
        try:
            result = await session.call_tool(tool_name, arguments)
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED:
                raise ToolError(
                    f"{label} failed: {await self._gone_reason()}", kind="execution_error"
                ) from None
            raise ToolError(f"{label} failed: the server answered with an error: {exc}") from None
        except ToolError:
            raise
        except Exception as exc:  # a malformed or unexpected answer from the server
            raise ToolError(f"{label} failed: {type(exc).__name__}: {exc}") from None
        return output_of(result, label)

    # -- the server's own task --------------------------------------------------------------
    async def _serve(self) -> None:
        ready = self._ready
        assert ready is not None
        stderr = StderrTail()
        self._stderr = stderr
        try:
            parameters = StdioServerParameters(
                command=self._program(),
                args=list(self.config.args),
                env=dict(self.config.env),
                cwd=self._sandbox_root,
            )
            transport = stdio_client(parameters, errlog=stderr.errlog)
            try:
                async with transport as (read_stream, write_stream):
                    stderr.release_writer()
                    self._process = _spawned_process(transport)
                    async with ClientSession(
                        read_stream, write_stream, client_info=CLIENT_INFO
                    ) as session:
                        with self._stop_scope:
                            tools = await self._handshake(session)
                            self._session = session
                            ready.set_result(tools)
                            await anyio.sleep_forever()
            finally:
                stderr.release_writer()
        except BaseException as exc:
            cause = _leaf(exc)
            if not ready.done():
                ready.set_exception(await self._start_error(cause))
            elif not self._stopping:
                self._ended = f"its connection failed: {type(cause).__name__}: {cause}"
            if isinstance(cause, asyncio.CancelledError | KeyboardInterrupt | SystemExit):
                raise
        finally:
            self._session = None
            await self._kill_leftovers()
            if not ready.done():
                ready.set_exception(
                    McpStartError(f"MCP server {self.name!r} was stopped before it was ready")
                )

    def _program(self) -> str:
        """The absolute path to start: the one resolved when the config was read (what the
        workspace-trust question showed), else resolved now by the same rules. Never a bare
        name: the system's own `PATH` search could pick another file than the one shown."""
        program = self.config.program
        if not program:
            env = self.config.env
            search_path = env["PATH"] if "PATH" in env else os.environ.get("PATH")
            program = resolve_program(self.config.command, search_path, self._sandbox_root) or ""
        if not program:
            raise FileNotFoundError(self.config.command)
        return program

    async def _handshake(self, session: ClientSession) -> list[Tool]:
        try:
            with anyio.fail_after(self._startup_timeout_s):
                await session.initialize()
                capabilities = session.server_capabilities
                if capabilities is not None and capabilities.tools is None:
                    return []
                return await self._list_tools(session)
        except TimeoutError:
            raise _StartFailure(
                f"it did not complete the MCP handshake within {self._startup_timeout_s:g} s, "
                "so it was stopped"
            ) from None
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED:
                returncode = await self._exit_code()
                if returncode is None:
                    raise _StartFailure("it closed its output before the handshake") from None
                raise _StartFailure(
                    f"it {exit_description(returncode)} before completing the MCP handshake"
                ) from None
            raise _StartFailure(f"it answered the handshake with an error: {exc}") from None
        except _StartFailure:
            raise
        except Exception as exc:
            raise _StartFailure(f"the MCP handshake failed: {type(exc).__name__}: {exc}") from None

    async def _list_tools(self, session: ClientSession) -> list[Tool]:
        tools: list[Tool] = []
        cursor: str | None = None
        for _ in range(MAX_TOOL_PAGES):
            params = PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await session.list_tools(params=params)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                return tools
        raise _StartFailure(f"its tool list did not end after {MAX_TOOL_PAGES} pages")

    async def _start_error(self, cause: BaseException) -> McpStartError:
        if isinstance(cause, FileNotFoundError):
            where = "" if os.sep in self.config.command else " on its PATH"
            reason = f"the command {self.config.command!r} was not found{where}"
        elif isinstance(cause, PermissionError):
            reason = f"the command {self.config.command!r} cannot be run: {cause.strerror}"
        elif isinstance(cause, OSError):
            reason = f"it could not be spawned: {cause}"
        elif isinstance(cause, _StartFailure):
            reason = str(cause)
        elif isinstance(cause, asyncio.CancelledError):
            reason = "it was cancelled while starting"
        else:
            reason = f"{type(cause).__name__}: {cause}"
        lines = [
            f"MCP server {self.name!r} from {self.config.config_path} failed to start: {reason}",
            f"  command: {self.config.command_line()}",
        ]
        if self._process is not None:  # it ran, so it may have said why it stopped
            lines.extend(await self._stderr_lines())
        return McpStartError("\n".join(lines))

    async def _gone_reason(self) -> str:
        if self._stopping:
            return f"MCP server {self.name!r} has been stopped"
        if self._ended is not None:
            return f"MCP server {self.name!r} is not running: {self._ended}"
        returncode = await self._exit_code()
        if returncode is None:
            what = "closed its connection"
        else:
            what = exit_description(returncode)
        return "\n".join([f"MCP server {self.name!r} {what}", *await self._stderr_lines()])

    async def _stderr_lines(self) -> list[str]:
        if self._stderr is None:
            return []
        await self._stderr.drained(_STDERR_DRAIN_S)
        tail = self._stderr.lines()
        if not tail:
            return ["  (it wrote nothing to stderr)"]
        return ["  last lines of its stderr:", *(f"    {line}" for line in tail.splitlines())]

    async def _exit_code(self) -> int | None:
        process = self._process
        if process is None:
            return None
        with anyio.move_on_after(_EXIT_WAIT_S):
            while process.returncode is None:
                await anyio.sleep(_POLL_S)
        return process.returncode

    async def _kill_leftovers(self) -> None:
        """Signal what the server left in its process group (it leads one of its own).

        The SDK kills the group only when the server outlives its grace period; one that
        exits cleanly can leave children behind.
        """
        process = self._process
        if process is None or os.name != "posix":
            return
        group = process.pid  # a group id is not reused while any member of the group lives
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if not _signal_group(group, sig):
                return
            with anyio.move_on_after(_LEFTOVER_GRACE_S):
                while _group_has_live_members(group):
                    await anyio.sleep(_POLL_S)
                return


def _signal_group(group: int, sig: signal.Signals) -> bool:
    """False when the group no longer exists."""
    try:
        os.killpg(group, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def _group_has_live_members(group: int) -> bool:
    """Whether a process of the group still runs; zombies (waiting to be reaped) do not count."""
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    members = list(_group_members(group))
    if not members:  # no /proc to look in: the signal probe is all there is
        return True
    return any(state != "Z" for state in members)


def _group_members(group: int) -> Iterator[str]:
    """The states (R, S, Z, ...) of the processes in a group, read from /proc."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as handle:
                stat = handle.read()
        except OSError:
            continue
        # pid (comm) state ppid pgrp ...: comm may contain spaces, so split after its ')'.
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 2 and fields[2] == str(group):
            yield fields[0]
