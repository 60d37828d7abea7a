"""A raw JSON-RPC client for the daemon benches: hand-written framing over asyncio pipes.

No LSP client library: the bench measures the daemon, not a client's converter. One reader
task settles request futures by id and hands notifications to a callback; server-to-client
requests (none are expected: the bench never declares approvals) are answered with an error
so a run could never hang on one.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

HEADER_END = b"\r\n\r\n"
CONTENT_LENGTH = b"content-length:"
STOP_WAIT_S = 10.0
STREAM_LIMIT = 1 << 20


class DaemonCrashed(RuntimeError):
    """The server closed its output, or answered a request with an error."""


def encode(message: dict[str, Any]) -> bytes:
    body = json.dumps(message, separators=(",", ":")).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


async def read_frame(reader: asyncio.StreamReader) -> bytes | None:
    """One message body, or None at the end of the stream."""
    try:
        header = await reader.readuntil(HEADER_END)
    except asyncio.IncompleteReadError:
        return None
    length: int | None = None
    for line in header.split(b"\r\n"):
        if line.lower().startswith(CONTENT_LENGTH):
            length = int(line[len(CONTENT_LENGTH) :].strip())
    if length is None:
        raise DaemonCrashed(f"a frame without Content-Length: {header!r}")
    try:
        return await reader.readexactly(length)
    except asyncio.IncompleteReadError:
        return None


NotificationSink = Callable[[str, Any], None]


class RawClient:
    """A started server process and the client end of its stdio pipes."""

    def __init__(self, process: asyncio.subprocess.Process, stderr_path: Path) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self.stderr_path = stderr_path
        self._writer = process.stdin
        self._reader = process.stdout
        self._next_id = 0
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self.on_notification: NotificationSink | None = None
        self.notifications = 0
        self._reading: asyncio.Task[None] | None = None

    @property
    def pid(self) -> int:
        return self.process.pid

    @classmethod
    async def spawn(
        cls, command: Sequence[str], env: dict[str, str], stderr_path: Path
    ) -> RawClient:
        stderr: IO[bytes] = stderr_path.open("ab")
        try:
            process = await asyncio.create_subprocess_exec(
                *command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=stderr,
                env=env,
                limit=STREAM_LIMIT,
            )
        finally:
            stderr.close()  # the child holds its own copy
        return cls(process, stderr_path)

    def start_reading(self) -> None:
        self._reading = asyncio.ensure_future(self._read_loop())

    # -- sending -----------------------------------------------------------------------------
    def send(self, message: dict[str, Any]) -> None:
        self._writer.write(encode(message))

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request_future(self, method: str, params: Any) -> asyncio.Future[Any]:
        """Send a request now; the future settles with its result (or DaemonCrashed)."""
        if self._reading is None:
            self.start_reading()
        self._next_id += 1
        msg_id = self._next_id
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = future
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return future

    async def request(self, method: str, params: Any = None) -> Any:
        return await self.request_future(method, params)

    # -- receiving ---------------------------------------------------------------------------
    async def _read_loop(self) -> None:
        reason = "the server closed its output"
        try:
            while True:
                body = await read_frame(self._reader)
                if body is None:
                    break
                self._dispatch(json.loads(body))
        except Exception as exc:  # surfaced through every pending request
            reason = f"reading from the server failed: {type(exc).__name__}: {exc}"
        for future in self._pending.values():
            if not future.done():
                future.set_exception(DaemonCrashed(f"{reason}; stderr: {self.stderr_tail()}"))
        self._pending.clear()

    def _dispatch(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if method is None:
            future = self._pending.pop(message.get("id"), None)  # type: ignore[arg-type]
            if future is None or future.done():
                return
            if "error" in message:
                future.set_exception(DaemonCrashed(f"error answer: {message['error']}"))
            else:
                future.set_result(message.get("result"))
            return
        if "id" in message:
            self.send(
                {
                    "jsonrpc": "2.0",
                    "id": message["id"],
                    "error": {"code": -32601, "message": "the bench client serves nothing"},
                }
            )
            return
        self.notifications += 1
        if self.on_notification is not None:
            self.on_notification(method, message.get("params"))

    # -- lifecycle ---------------------------------------------------------------------------
    async def initialize(self, options: dict[str, Any] | None) -> Any:
        params: dict[str, Any] = {
            "processId": os.getpid(),
            "clientInfo": {"name": "cleveragents-bench"},
            "capabilities": {},
        }
        if options is not None:
            params["initializationOptions"] = options
        return await self.request("initialize", params)

    async def stop(self) -> int:
        """shutdown + exit, then wait for the process (killed if it lingers)."""
        with contextlib.suppress(DaemonCrashed, ConnectionError):
            await asyncio.wait_for(self.request("shutdown"), STOP_WAIT_S)
            self.notify("exit", None)
            await self._writer.drain()
        with contextlib.suppress(ConnectionError, OSError):
            self._writer.close()
        try:
            code = await asyncio.wait_for(self.process.wait(), STOP_WAIT_S)
        except TimeoutError:
            self.process.kill()
            code = await self.process.wait()
        if self._reading is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._reading
        return code

    def stderr_tail(self, limit: int = 2000) -> str:
        try:
            text = self.stderr_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return text[-limit:]


def rss_kib(pid: int) -> int:
    """Resident set size of a live process, from /proc (Linux)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for process {pid}")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a live process has used, from /proc (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
    return ticks / os.sysconf("SC_CLK_TCK")
