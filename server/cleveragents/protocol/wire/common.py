"""What every group of wire types shares: the protocol version, the named literals, `doc`.

The literals the runtime and the history produce are imported from them, so the wire says
exactly what they produce; the schema names each (`StopReason`...) as an enum of its own.
"""

from __future__ import annotations

import re
from typing import Literal

from ...service.changes import ChangeKind
from ...service.run_status import RunKind, RunStatus
from ...settings_table import Setting, setting
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
    "setting_description",
    "setting_doc",
]


def doc(text: str) -> dict[str, str]:
    """Field metadata carrying the description the schema and README show."""
    return {"doc": text}


def setting_doc(name: str, *, run: bool = False) -> dict[str, str]:
    """Metadata of a field that is a setting: its description made from the settings table's
    row `name` (never written here, so the schema and docs/settings.md cannot disagree).
    `run`: a run param, whose default is the session's value."""
    return {"doc": setting_description(setting(name), run=run), "setting": name}


def setting_description(row: Setting, *, run: bool) -> str:
    """A setting's wire description: the table's doc line, what it accepts, its default."""
    parts = [row.doc]
    if row.check and row.kind != "yes/no":  # a yes/no is a JSON boolean on the wire
        parts.append(f"Accepts: {row.check}.")
    if run:
        parts.append(f"Default: the session's `{row.option}`.")
    elif row.env:
        parts.append(f"Default: `${row.env}`, else {row.default}.")
    else:
        parts.append(f"Default: {row.default}.")
    return _links_from_protocol_folder(" ".join(parts))


def _links_from_protocol_folder(text: str) -> str:
    """The table's links point into docs/; the schema and its README live in protocol/."""
    return re.sub(r"\]\((?![a-z]+:|#|/)", "](../docs/", text)
