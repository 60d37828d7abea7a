"""Where the daemon departs from pygls 2, and why: the only overrides of pygls classes.

pygls owns dispatch (`@server.feature` handlers, found by `JsonRPCProtocol._get_handler`;
-32601 for a method without one), the lifecycle handlers (`lsp_initialize`, `lsp_shutdown`,
which cancels the requests still open, and `lsp_exit`, which decides the exit code),
`$/cancelRequest` (`_handle_cancel_notification`), `window/workDoneProgress/cancel` and the
tasks of requests. What it cannot do is done here, on its extension points:

- Strict params. pygls structures a message through `get_message_type(method)` and its
  converter; the converter coerces (`"7"` becomes 7) and a failure becomes a bare
  `JsonRpcInvalidParams()`/`JsonRpcInternalError()` that names no field (`structure_message`:
  `raise JsonRpcInternalError() from exc`). Our methods get `CustomRequest`, whose hook
  structures the params with the strict wire converter; its `ParamsError` rides out as the
  cause, and `params_error` gives it back so the answer is -32602 naming every field.
- The client's answers to our requests keep their results as sent (`ClientResponse`, through
  `get_result_type`): pygls's converter would structure an object into namedtuples.
- The `initialize` result advertises only our capability (pygls would advertise document
  sync and commands it builds from its own feature table).
- A result encoded off the event loop (`encoded.py`) is written as it is; pygls's
  `_send_data` would walk it with the converter and encode it again, on the loop.
- A late answer to a request of ours that we withdrew. pygls keys our requests' futures by
  id (`send_request`) and settles them in `_handle_response`, but has no withdrawal: a
  future popped from `_request_futures` makes the answer a warning (`'Received response to
  unknown message id "%s"'`), and one left there cancelled makes
  `future.set_result(result)` raise `InvalidStateError`. LSP clients answer withdrawn
  requests as a rule, so `withdraw` keeps the cancelled future under its id (the last
  `MAX_WITHDRAWN_KEPT`) and `_handle_response` drops the answer to a settled one quietly.
- Errors that are the client's mistake are neither toasted at the user (pygls's
  `report_server_error` sends `window/showMessage`) nor logged with a traceback.

What stays outside pygls, in `server.py`, because pygls has no place for it: the framing
reader (`jsonrpc_io.py`; pygls's `aio_readline` accepts only `Content-Length: N\\r\\n` and goes
deaf after a bad frame) and the envelope and lifecycle checks (ARCHITECTURE.md, "The daemon
and pygls", quotes the pygls code that prevents each).
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Generator
from typing import Any

import attrs
from cattrs import Converter
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import (
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    LanguageServerProtocol,
    default_converter,
    lsp_method,
)

from ..protocol import wire
from ..protocol.converter import structure
from ..service.errors import ParamsError
from .encoded import EncodedResult, response_frame

log = logging.getLogger(__name__)

# Withdrawn requests whose late answer is recognised; older ones are forgotten.
MAX_WITHDRAWN_KEPT = 1024

# Our requests, by method; the server-to-client ones have no handler here (pygls: -32601).
CUSTOM_REQUESTS = {
    method.name: method
    for method in wire.METHODS
    if method.direction == "client_to_server" and method.params_type is not None
}


# The requests we send the client; their answers' results are kept as sent (`ClientResponse`).
CLIENT_REQUESTS = frozenset(
    method.name
    for method in wire.METHODS
    if method.direction == "server_to_client" and method.kind == "request"
)


@attrs.define
class ClientResponse(JsonRPCResponseMessage):
    """The client's answer to one of our requests, its result as the client sent it: the front
    checks it strictly (`runs.py`); pygls's converter would turn objects into namedtuples."""


def _structure_client_response(data: dict[str, Any], _: type) -> ClientResponse:
    return ClientResponse(id=data["id"], jsonrpc=data["jsonrpc"], result=data.get("result"))


@attrs.define
class CustomRequest(JsonRPCRequestMessage):
    """A request for one of our methods, its params structured strictly (`daemon_converter`)."""


def _structure_custom_request(data: dict[str, Any], _: type) -> CustomRequest:
    method = CUSTOM_REQUESTS[data["method"]]
    assert method.params is not None  # CUSTOM_REQUESTS holds only methods with params
    params = data.get("params")
    if params is None:
        if not method.params_optional:
            raise ParamsError(["params: required"])
        params = {}
    return CustomRequest(
        id=data["id"],
        method=method.name,
        jsonrpc=data["jsonrpc"],
        params=structure(params, method.params),
    )


def daemon_converter() -> Converter:
    """pygls's converter (LSP types, as pygls structures them) plus our strict requests."""
    converter: Converter = default_converter()  # type: ignore[no-untyped-call]
    converter.register_structure_hook(CustomRequest, _structure_custom_request)
    converter.register_structure_hook(ClientResponse, _structure_client_response)
    return converter


def params_error(exc: JsonRpcException) -> ParamsError | None:
    """The `ParamsError` of our strict structuring behind pygls's bare error, if it is one."""
    cause = exc.__cause__
    return cause if isinstance(cause, ParamsError) else None


class DaemonProtocol(LanguageServerProtocol):
    """pygls's LSP protocol: our requests structured strictly, our capability advertised."""

    capability: dict[str, Any] | None = None

    def __init__(self, server: Any, converter: Converter) -> None:
        super().__init__(server, converter)
        self._withdrawn: deque[str | int] = deque()

    # pygls wraps its own in `lru_cache` (hence the ignore); a dict lookup needs no cache.
    def get_message_type(self, method: str) -> type[Any] | None:  # type: ignore[override]
        if method in CUSTOM_REQUESTS:
            return CustomRequest
        return super().get_message_type(method)

    def get_result_type(self, method: str) -> type[Any] | None:  # type: ignore[override]
        if method in CLIENT_REQUESTS:
            return ClientResponse
        return super().get_result_type(method)

    @lsp_method(lsp.INITIALIZE)
    def lsp_initialize(
        self, params: lsp.InitializeParams
    ) -> Generator[Any, Any, lsp.InitializeResult]:
        result: lsp.InitializeResult = yield from super().lsp_initialize(params)
        # Only what we serve: no document sync or commands, which pygls would advertise.
        capabilities = lsp.ServerCapabilities(experimental={"cleveragents": self.capability})
        self.server_capabilities = capabilities
        return lsp.InitializeResult(capabilities=capabilities, server_info=result.server_info)

    def withdraw(self, msg_id: str | int) -> None:
        """Take back a request of ours whose future the caller has cancelled: the client is
        told (`$/cancelRequest`), and the future stays under its id so that the answer LSP
        clients still send is recognised as late (`_handle_response`), not unknown."""
        self._withdrawn.append(msg_id)
        if len(self._withdrawn) > MAX_WITHDRAWN_KEPT:
            self._request_futures.pop(self._withdrawn.popleft(), None)
        self.notify(lsp.CANCEL_REQUEST, lsp.CancelParams(id=msg_id))

    def _handle_response(
        self, msg_id: str | int, result: Any = None, error: lsp.ResponseError | None = None
    ) -> None:
        # pygls forgets the result type it noted for `msg_id` only when a result comes.
        self._result_types.pop(msg_id, None)
        future = self._request_futures.get(msg_id)
        if future is not None and future.done():
            # Withdrawn (or failed as the daemon stops): pygls's `future.set_result` would
            # raise InvalidStateError. A late answer is normal for LSP clients: no warning.
            del self._request_futures[msg_id]
            log.debug("ignoring the late answer to withdrawn request %r", msg_id)
            return
        super()._handle_response(msg_id, result, error)

    def _send_data(self, data: Any) -> None:
        # A result encoded off the loop (`encoded.py`) goes out as it is: pygls would walk it
        # with its converter and encode it again, here on the event loop.
        if isinstance(data, JsonRPCResponseMessage) and isinstance(data.result, EncodedResult):
            if self.writer is not None:
                self.writer.write(response_frame(data.id, data.result))
            return
        super()._send_data(data)


class DaemonServer(LanguageServer):
    def report_server_error(self, error: Exception, source: Any) -> None:
        # pygls would toast `window/showMessage` at the user for what is a client's mistake.
        log.debug("pygls reported %s: %s", getattr(source, "__name__", source), error)


class ExpectedErrors(logging.Filter):
    """Keep pygls from logging a traceback for every error we answer on purpose."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, JsonRpcException) and params_error(exc) is not None:
            return False
        if f"{ParamsError.__module__}.{ParamsError.__name__}" in record.getMessage():
            return False  # pygls's "Unable to deserialize" with our -32602's traceback
        return not (isinstance(exc, JsonRpcException) and exc.code != wire.INTERNAL_ERROR)
