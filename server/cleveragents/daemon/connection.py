"""Our side of the client connection: raw sends, and requests from the daemon to the client."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections import OrderedDict
from typing import Any

from ..jsonrpc_errors import INTERNAL_ERROR
from ..jsonrpc_io import StreamWriterAdapter, ThreadedWriter, encode
from ..service.client_tools import ClientTool
from ..service.errors import ClientRequestError

# Withdrawn request ids kept to recognise late answers; older ones are forgotten.
MAX_WITHDRAWN_REMEMBERED = 1024


# One encoder for every message: json.dumps with options builds a new one per call.
_ENCODER = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), default=str)


class Connection:
    """Our side of the client connection: raw sends and server-to-client requests.

    Shares the writer with pygls, so everything goes out in the order it was sent.
    """

    def __init__(self, writer: ThreadedWriter | StreamWriterAdapter) -> None:
        self.writer = writer
        self.approvals = False
        self.trust = False
        # The tools the client declared at `initialize` (its answers: `callClientTool`).
        self.client_tools: tuple[ClientTool, ...] = ()
        self._ids = itertools.count(1)
        self._pending: dict[str, asyncio.Future[Any]] = {}
        # Ids of requests we withdrew: LSP clients still answer them, which is no news.
        self._withdrawn: OrderedDict[str, None] = OrderedDict()

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
        msg_id = f"cleveragents-{next(self._ids)}"
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = future
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        try:
            return await future
        except asyncio.CancelledError:
            if msg_id in self._pending:  # withdrawn before the client answered
                self._remember_withdrawn(msg_id)
                self.notify("$/cancelRequest", {"id": msg_id})
            raise
        finally:
            self._pending.pop(msg_id, None)

    def _remember_withdrawn(self, msg_id: str) -> None:
        self._withdrawn[msg_id] = None
        if len(self._withdrawn) > MAX_WITHDRAWN_REMEMBERED:
            self._withdrawn.popitem(last=False)

    def was_withdrawn(self, msg_id: Any) -> bool:
        """Whether `msg_id` is a request of ours that we withdrew (a late answer is expected)."""
        return str(msg_id) in self._withdrawn

    def resolve(self, message: dict[str, Any]) -> bool:
        """Settle one of our requests with the client's answer; False if it is not ours."""
        future = self._pending.pop(str(message.get("id")), None)
        if future is None or future.done():
            return False
        error = message.get("error")
        if error is not None:
            code = error.get("code") if isinstance(error, dict) else None
            text = error.get("message") if isinstance(error, dict) else None
            future.set_exception(
                ClientRequestError(
                    code if isinstance(code, int) else INTERNAL_ERROR, str(text or error)
                )
            )
        else:
            future.set_result(message.get("result"))
        return True

    def fail_pending(self, reason: str) -> None:
        for future in self._pending.values():
            if not future.done():
                future.set_exception(ClientRequestError(INTERNAL_ERROR, reason))
        self._pending.clear()
