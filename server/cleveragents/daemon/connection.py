"""Our side of the client connection: raw sends, and requests from the daemon to the client.

Our requests (`approveToolCall`, `trustWorkspace`, `callClientTool`) go out through pygls's
`send_request`, which keys a future by the request's id; the client's answer comes back
through pygls's `handle_message` and `_handle_response`, which settles it. What is ours: the
answer's envelope made well-formed first (so a malformed error answer still fails the request,
naming why), and the withdrawal of a request a cancelled run no longer waits for
(`DaemonProtocol.withdraw`).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
from concurrent.futures import Future
from typing import Any

from lsprotocol.validators import INTEGER_MAX_VALUE, INTEGER_MIN_VALUE
from pygls.exceptions import JsonRpcException

from ..jsonrpc_errors import INTERNAL_ERROR, REQUEST_CANCELLED
from ..jsonrpc_io import StreamWriterAdapter, ThreadedWriter, encode
from ..service.client_tools import ClientTool
from ..service.errors import ClientRequestError
from .pygls_overrides import DaemonProtocol

log = logging.getLogger(__name__)

# One encoder for every message: json.dumps with options builds a new one per call.
_ENCODER = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), default=str)


class Connection:
    """Our side of the client connection: raw sends and server-to-client requests.

    Shares the writer with pygls, so everything goes out in the order it was sent.
    """

    def __init__(
        self, writer: ThreadedWriter | StreamWriterAdapter, protocol: DaemonProtocol
    ) -> None:
        self.writer = writer
        self.protocol = protocol
        self.approvals = False
        self.trust = False
        # The tools the client declared at `initialize` (its answers: `callClientTool`).
        self.client_tools: tuple[ClientTool, ...] = ()
        self._ids = itertools.count(1)
        # Our requests still waiting, so stopping can fail them (pygls matches the answers).
        self._open: set[Future[Any]] = set()

    def send(self, message: dict[str, Any]) -> None:
        # ASCII escapes: a lone surrogate (a file name that is not UTF-8, decoded by Python as
        # \udce9) stays valid JSON instead of failing to encode and losing the message.
        body = _ENCODER.encode(message)
        self.writer.write(encode(body.encode("ascii")))

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def send_error(
        self, msg_id: int | str | None, code: int, message: str, data: Any = None
    ) -> None:
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        self.send({"jsonrpc": "2.0", "id": msg_id, "error": error})

    async def request(self, method: str, params: Any) -> Any:
        """Send a request through pygls and wait for its result; ClientRequestError for an
        error answer. Cancelling the awaiting task withdraws the request (`$/cancelRequest`)."""
        msg_id = f"cleveragents-{next(self._ids)}"
        future = self.protocol.send_request(method, params, msg_id=msg_id)
        self._open.add(future)
        try:
            return await asyncio.wrap_future(future)
        except JsonRpcException as exc:  # pygls's form of the client's error answer
            raise ClientRequestError(exc.code, exc.message) from None
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():  # our side gave up waiting
                if future.cancel():  # still unanswered: take it back
                    self.protocol.withdraw(msg_id)
                raise
            # Not our task: the future itself was cancelled (pygls's `shutdown` cancels every
            # open request; a client's `$/cancelRequest` naming our id does too).
            raise ClientRequestError(
                REQUEST_CANCELLED, f"{method} was cancelled before the client answered"
            ) from None
        finally:
            self._open.discard(future)

    def answered(self, message: dict[str, Any]) -> None:
        """A response from the client (`id` with `result` or `error`), handed to pygls.

        An error object of another shape than JSON-RPC's is made one (code -32603 unless it
        gave an integer one, its message or the object itself as text): pygls would fail to
        structure it, log a traceback, and leave the request waiting until its timeout.
        """
        if "error" in message:
            message = {**message, "error": _well_formed_error(message["error"])}
        self.protocol.handle_message(self.protocol.structure_message(message))

    def fail_pending(self, reason: str) -> None:
        """Fail every request still waiting for the client, with `reason` (the daemon stops)."""
        for future in self._open:
            if not future.done():
                future.set_exception(ClientRequestError(INTERNAL_ERROR, reason))
        self._open.clear()


def _well_formed_error(error: Any) -> dict[str, Any]:
    code = error.get("code") if isinstance(error, dict) else None
    text = error.get("message") if isinstance(error, dict) else None
    if not (isinstance(code, int) and not isinstance(code, bool)):
        code = INTERNAL_ERROR
    elif not INTEGER_MIN_VALUE <= code <= INTEGER_MAX_VALUE:
        code = INTERNAL_ERROR
    return {"code": code, "message": str(text or error)}
