"""What the core reports to its fronts: bad params, and errors with JSON-RPC codes.

Both protocols the fronts speak are JSON-RPC 2.0, so a `ServiceError` carries the code the
daemon and ACP mode answer with (listed, with their meanings, in the daemon's `wire.py`).
"""

from __future__ import annotations

from typing import Any

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


class ParamsError(ValueError):
    """Params or settings that do not fit; `problems` name each bad field."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


class ServiceError(Exception):
    """A request the core cannot serve; a front answers it as a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


def invalid_params(problems: list[str]) -> ServiceError:
    return ServiceError(
        INVALID_PARAMS, "invalid params: " + "; ".join(problems), {"problems": problems}
    )


class ClientRequestError(Exception):
    """The client answered a request the front sent it (an approval) with an error."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"{message} ({code})")
        self.code = code
