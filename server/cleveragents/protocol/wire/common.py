"""What every group of wire types shares: the protocol version, the named literals, `doc`.

The literals the runtime and the history produce are imported from them, so the wire says
exactly what they produce; the schema names each (`StopReason`...) as an enum of its own.
"""

from __future__ import annotations

from typing import Literal

from ...service.changes import ChangeKind
from ...service.history import RunKind, RunStatus
from ...tool.policy import ApprovalDecision
from ...tool.records import ErrorKind, StopReason

PROTOCOL_VERSION = "1.3"
"""Major.minor: a new major breaks existing clients; a new minor only adds optional things."""

AutomationProfile = Literal["read-only", "ask", "auto-edit", "full-auto"]
FinishReason = Literal["final_answer", "max_iterations", "cancelled", "context_exhausted", "error"]
PlanStatus = Literal["pending", "in_progress", "done"]
ProgressToken = int | str

__all__ = [
    "PROTOCOL_VERSION",
    "ApprovalDecision",
    "AutomationProfile",
    "ChangeKind",
    "ErrorKind",
    "FinishReason",
    "PlanStatus",
    "ProgressToken",
    "RunKind",
    "RunStatus",
    "StopReason",
    "doc",
]


def doc(text: str) -> dict[str, str]:
    """Field metadata carrying the description the schema and README show."""
    return {"doc": text}
