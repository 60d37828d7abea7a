"""ACP's wire: newline-delimited JSON-RPC messages over the process's own stdin and stdout.

`StdioTransport` is a message transport for the ACP SDK (its `Transport` protocol: `send`,
`receive`, `close` of decoded messages), so the framing stays ours: a line that is not JSON
is answered with a -32700 parse error instead of being dropped in silence, an over-long line
is skipped up to its end, and writes go through the shared `ThreadedWriter` (`jsonrpc_io.py`),
so a client that stops reading never blocks the event loop.

It also keeps what only the wire knows: which `session/prompt` requests are still unanswered
(by request id, with their session), so `$/cancel_request` can cancel the prompt it names and
the server can wait, when it stops, until every prompt has had its answer. Protocol-level
`$/` notifications never reach the SDK, which would log them as unknown methods.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
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


CANCEL_REQUEST = "$/cancel_request"
PROMPT = "session/prompt"


class StdioTransport:
    """Messages in from `in_fd` (one JSON object a line), messages out to `out_fd`.

    `on_cancel_prompt(session_id)` is called for a `$/cancel_request` naming an unanswered
    prompt; `on_end()` is awaited once the client has closed its end, before the SDK hears of
    it (so running prompts can still be answered); `on_broken()` when the client stops reading.
    """

    def __init__(
        self,
        in_fd: int,
        out_fd: int,
        *,
        on_broken: Callable[[], None] | None = None,
        on_cancel_prompt: Callable[[str], None] | None = None,
        on_end: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        loop = asyncio.get_running_loop()
        self._lines: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._partial = bytearray()
        self._skipping = False  # inside a line that was too long, until its newline
        self._closed = False
        self._on_cancel_prompt = on_cancel_prompt
        self._on_end = on_end
        # Unanswered `session/prompt` requests: JSON-RPC id -> session id.
        self._open_prompts: dict[Any, str] = {}
        self._prompts_answered = asyncio.Event()
        self._prompts_answered.set()

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
                on_end, self._on_end = self._on_end, None
                if on_end is not None:
                    await on_end()
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
            if self._protocol_notification(message):
                continue
            if message.get("method") == PROMPT and _valid_id(message.get("id")):
                params = message.get("params")
                session_id = params.get("sessionId") if isinstance(params, dict) else None
                self._open_prompts[message["id"]] = str(session_id)
                self._prompts_answered.clear()
            return message

    def _protocol_notification(self, message: dict[str, Any]) -> bool:
        """Handle a `$/` notification here (True), or leave the message to the SDK (False)."""
        method = message.get("method")
        if not isinstance(method, str) or not method.startswith("$/") or "id" in message:
            return False
        params = message.get("params")
        if method != CANCEL_REQUEST:
            # LSP's rule, which ACP follows: a `$/` notification one does not know is ignored.
            log.debug("ignored %s", method)
            return True
        request_id = params.get("requestId") if isinstance(params, dict) else None
        session_id = self._open_prompts.get(request_id) if _valid_id(request_id) else None
        if session_id is None:
            # Nothing of ours runs long besides prompts: the request has had its answer.
            log.debug("%s for request %r: nothing running to cancel", method, request_id)
        elif self._on_cancel_prompt is not None:
            log.info("%s: cancelling the prompt %r of session %s", method, request_id, session_id)
            self._on_cancel_prompt(session_id)
        return True

    async def prompts_answered(self) -> None:
        """Wait until every `session/prompt` received so far has been answered."""
        await self._prompts_answered.wait()

    async def send(self, message: dict[str, Any]) -> None:
        answered = message.get("id")
        if "method" not in message and _valid_id(answered) and answered in self._open_prompts:
            del self._open_prompts[answered]
            if not self._open_prompts:
                self._prompts_answered.set()
        if self._closed:
            # The SDK is winding the connection down: what its last tasks send has no reader.
            log.debug("not sent, the connection is closed: %s", str(message)[:200])
            return
        self.writer.write(encode(message))

    async def close(self) -> None:
        # The writer stays open: the server flushes it once the connection has wound down.
        self._closed = True

    def _reply_error(self, code: int, message: str) -> None:
        log.warning("%s", message)
        if not self._closed:
            error = {"code": code, "message": message}
            self.writer.write(encode({"jsonrpc": "2.0", "id": None, "error": error}))


def _valid_id(value: Any) -> bool:
    return isinstance(value, int | str) and not isinstance(value, bool)
