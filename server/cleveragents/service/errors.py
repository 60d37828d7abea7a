"""What the core reports to its fronts: bad params, and errors with a kind.

The core speaks no wire: a `ServiceError` carries a kind (what went wrong) and, for bad
params, problems that name the core's fields (`sandbox_root: ...`). Each front renders both
its own way: the daemon and ACP mode answer JSON-RPC errors (`jsonrpc_errors.py` maps a kind
to its code, and the daemon names fields `params.sandboxRoot`), the CLI exits with a code
and names its flags (`--sandbox`).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable
from typing import Any


class ErrorKind(enum.Enum):
    """Why the core could not serve a request (a front maps each to its own code)."""

    INVALID_PARAMS = "invalid_params"
    RUN_FAILED = "run_failed"
    RUN_NOT_FOUND = "run_not_found"
    RUN_ID_IN_USE = "run_id_in_use"
    RUN_STILL_RUNNING = "run_still_running"
    PROVIDER_UNAVAILABLE = "provider_unavailable"
    TOOLS_UNAVAILABLE = "tools_unavailable"
    # A restore refused while a run is active in its folder.
    RUN_ACTIVE = "run_active"
    CHECKPOINTS_UNAVAILABLE = "checkpoints_unavailable"
    NO_CHECKPOINT = "no_checkpoint"
    RESTORE_FAILED = "restore_failed"


# The kinds by name, for the modules that raise them.
INVALID_PARAMS = ErrorKind.INVALID_PARAMS
RUN_FAILED = ErrorKind.RUN_FAILED
RUN_NOT_FOUND = ErrorKind.RUN_NOT_FOUND
RUN_ID_IN_USE = ErrorKind.RUN_ID_IN_USE
RUN_STILL_RUNNING = ErrorKind.RUN_STILL_RUNNING
PROVIDER_UNAVAILABLE = ErrorKind.PROVIDER_UNAVAILABLE
TOOLS_UNAVAILABLE = ErrorKind.TOOLS_UNAVAILABLE
RUN_ACTIVE = ErrorKind.RUN_ACTIVE
CHECKPOINTS_UNAVAILABLE = ErrorKind.CHECKPOINTS_UNAVAILABLE
NO_CHECKPOINT = ErrorKind.NO_CHECKPOINT
RESTORE_FAILED = ErrorKind.RESTORE_FAILED


class ParamsError(ValueError):
    """Params or settings that do not fit; `problems` name each bad field."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


class ServiceError(Exception):
    """A request the core cannot serve: its kind, a message, and data naming what (core
    names: `run_id`, `sandbox_root`; a front renames them)."""

    def __init__(self, kind: ErrorKind, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.data = data

    @property
    def problems(self) -> list[str]:
        """The bad fields of an INVALID_PARAMS error, one `field: what is wrong` each."""
        if isinstance(self.data, dict):
            return [str(p) for p in self.data.get("problems", [])]
        return []

    def renamed(self, rename: Callable[[str], str]) -> ServiceError:
        """The same error with each problem's field named by `rename` (a front's names)."""
        problems = [rename_field(p, rename) for p in self.problems]
        if self.kind is not ErrorKind.INVALID_PARAMS or problems == self.problems:
            return self
        renamed = invalid_params(problems)
        data = {**self.data, "problems": renamed.data["problems"]}
        return ServiceError(self.kind, renamed.message, data)


def invalid_params(problems: list[str]) -> ServiceError:
    return ServiceError(
        INVALID_PARAMS, "invalid params: " + "; ".join(problems), {"problems": problems}
    )


# `field`, `field[2]`, `field.sub`: the path a problem begins with, before its ": ".
_FIELD = re.compile(
    r"^([A-Za-z_][A-Za-z0-9_]*(?:\[\d+\])?(?:\.[A-Za-z_][A-Za-z0-9_]*(?:\[\d+\])?)*): "
)


def rename_field(problem: str, rename: Callable[[str], str]) -> str:
    """`problem` with its leading field path passed through `rename` (unchanged when it
    begins with no field)."""
    match = _FIELD.match(problem)
    if match is None:
        return problem
    return rename(match.group(1)) + problem[match.end(1) :]


class ClientRequestError(Exception):
    """The client answered a request the front sent it (an approval) with an error; `code`
    is the number the client sent."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"{message} ({code})")
        self.code = code
