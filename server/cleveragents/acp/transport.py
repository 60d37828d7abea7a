"""ACP's wire: newline-delimited JSON-RPC messages over the process's own stdin and stdout.

`StdioTransport` is a message transport for the ACP SDK (its `Transport` protocol: `send`,
`receive`, `close` of decoded messages), so the framing stays ours: a line that is not JSON
is answered with a -32700 parse error instead of being dropped in silence, an over-long line
is skipped up to its end, and writes go through the shared `ThreadedWriter` (`jsonrpc_io.py`),
so a client that stops reading never blocks the event loop.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from typing import Any

from ..jsonrpc_io import ThreadedWriter, start_fd_reader

log = logging.getLogger(__name__)

# The ACP SDK reads lines of up to 50 MiB; an editor may embed whole files in a prompt.
MAX_LINE_BYTES = 64 * 1024 * 1024
PARSE_ERROR = -32700
INVALID_REQUEST = -32600


def encode(message: dict[str, Any]) -> bytes:
    # json.dumps escapes newlines inside strings, so one message is always one line.
    text = json.dumps(message, ensure_ascii=False, separators=(",", ":"), default=str)
    return text.encode("utf-8") + b"\n"


class StdioTransport:
    """Messages in from `in_fd` (one JSON object a line), messages out to `out_fd`."""

    def __init__(
        self, in_fd: int, out_fd: int, *, on_broken: Callable[[], None] | None = None
    ) -> None:
        loop = asyncio.get_running_loop()
        self._lines: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._partial = bytearray()
        self._skipping = False  # inside a line that was too long, until its newline
        self._closed = False

        def broken() -> None:  # called on the writer's thread
            if on_broken is not None:
                loop.call_soon_threadsafe(on_broken)

        self.writer = ThreadedWriter(out_fd, on_broken=broken)
        start_fd_reader(in_fd, loop, self._feed)

    # -- bytes in ----------------------------------------------------------------------------
    def _feed(self, chunk: bytes) -> None:
        """A chunk read from the client; b"" at the end of the stream."""
        if not chunk:
            if self._partial and not self._skipping:
                self._lines.put_nowait(bytes(self._partial))
            self._partial.clear()
            self._lines.put_nowait(None)
            return
        start = 0
        while True:
            newline = chunk.find(b"\n", start)
            if newline < 0:
                if not self._skipping:
                    self._partial += chunk[start:]
                    if len(self._partial) > MAX_LINE_BYTES:
                        self._partial.clear()
                        self._skipping = True
                        self._reply_error(
                            PARSE_ERROR,
                            f"parse error: a message is longer than {MAX_LINE_BYTES} bytes",
                        )
                return
            if self._skipping:
                self._skipping = False
            else:
                self._partial += chunk[start:newline]
                self._lines.put_nowait(bytes(self._partial))
            self._partial.clear()
            start = newline + 1

    # -- the SDK's Transport protocol --------------------------------------------------------
    async def receive(self) -> dict[str, Any] | None:
        """The next message object; None once the client has closed its end."""
        while True:
            line = await self._lines.get()
            if line is None:
                self._lines.put_nowait(None)  # every later call sees the end too
                return None
            line = line.strip()
            if not line:
                continue
            try:
                message = json.loads(line)
            except (ValueError, RecursionError) as exc:
                self._reply_error(PARSE_ERROR, f"parse error: the line is not valid JSON: {exc}")
                continue
            if not isinstance(message, dict):
                self._reply_error(
                    INVALID_REQUEST,
                    "invalid request: a message must be a JSON object (batches are not supported)",
                )
                continue
            return message

    async def send(self, message: dict[str, Any]) -> None:
        if self._closed:
            raise ConnectionError("the ACP connection is closed")
        self.writer.write(encode(message))

    async def close(self) -> None:
        # The writer stays open: the server flushes it once the connection has wound down.
        self._closed = True

    def _reply_error(self, code: int, message: str) -> None:
        log.warning("%s", message)
        if not self._closed:
            error = {"code": code, "message": message}
            self.writer.write(encode({"jsonrpc": "2.0", "id": None, "error": error}))
