"""JSON-RPC error codes, shared by both JSON-RPC fronts (the daemon and ACP mode).

The core's errors carry a kind (`service/errors.py`); this table gives each its number, the
numbers protocol/README.md documents (the wire's `ERROR_CODES` list their meanings).
"""

from __future__ import annotations

from collections.abc import Callable

from .service.errors import ErrorKind, ServiceError

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SERVER_NOT_INITIALIZED = -32002
# The same number as ServerNotInitialized (the protocol's contract): only `cleveragents/restore`
# answers it after `initialize`, so a client tells the two apart by the request it sent.
RUN_ACTIVE = -32002
REQUEST_CANCELLED = -32800
RUN_FAILED = -32010
RUN_NOT_FOUND = -32011
RUN_ID_IN_USE = -32012
RUN_STILL_RUNNING = -32013
PROVIDER_UNAVAILABLE = -32014
TOOLS_UNAVAILABLE = -32015
CHECKPOINTS_UNAVAILABLE = -32016
NO_CHECKPOINT = -32017
RESTORE_FAILED = -32018

CODES: dict[ErrorKind, int] = {
    ErrorKind.INVALID_PARAMS: INVALID_PARAMS,
    ErrorKind.RUN_FAILED: RUN_FAILED,
    ErrorKind.RUN_NOT_FOUND: RUN_NOT_FOUND,
    ErrorKind.RUN_ID_IN_USE: RUN_ID_IN_USE,
    ErrorKind.RUN_STILL_RUNNING: RUN_STILL_RUNNING,
    ErrorKind.PROVIDER_UNAVAILABLE: PROVIDER_UNAVAILABLE,
    ErrorKind.TOOLS_UNAVAILABLE: TOOLS_UNAVAILABLE,
    ErrorKind.RUN_ACTIVE: RUN_ACTIVE,
    ErrorKind.CHECKPOINTS_UNAVAILABLE: CHECKPOINTS_UNAVAILABLE,
    ErrorKind.NO_CHECKPOINT: NO_CHECKPOINT,
    ErrorKind.RESTORE_FAILED: RESTORE_FAILED,
}


def code_of(error: ServiceError) -> int:
    """The JSON-RPC code a front answers `error` with."""
    return CODES[error.kind]


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def wire_field(path: str) -> str:
    """A core field path (`sandbox_root`, `tools[1]`) as JSON-RPC params name it
    (`params.sandboxRoot`, `params.tools[1]`); a path already named so is kept."""
    if path.startswith("params.") or path == "params":
        return path
    return "params." + ".".join(camel(part) for part in path.split("."))


def wire_named(error: ServiceError, name: Callable[[str], str] = wire_field) -> ServiceError:
    """`error` with its fields named by `name` (by default as JSON-RPC params name them,
    `params.sandboxRoot`) and its data keys in camelCase (`runId`)."""
    renamed = error.renamed(name)
    data = renamed.data
    if isinstance(data, dict):
        data = {camel(key): value for key, value in data.items()}
    return ServiceError(error.kind, renamed.message, data)


def as_jsonrpc(
    error: ServiceError, name: Callable[[str], str] = wire_field
) -> tuple[int, str, object]:
    """`error` as a JSON-RPC error's code, message and data (see `wire_named`)."""
    named = wire_named(error, name)
    return CODES[error.kind], named.message, named.data
