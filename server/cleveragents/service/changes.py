"""What a run (or a restore) changed in its folder: one entry per path.

Shared by the checkpoint store, which computes changes, and the run history, which keeps
them with each run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

ChangeKind = Literal["added", "modified", "deleted"]
CHANGE_KINDS: tuple[ChangeKind, ...] = ("added", "modified", "deleted")


@dataclass(frozen=True, slots=True)
class ChangedFile:
    """One path that differs between two states of a folder (relative, `/`-separated)."""

    path: str
    change: ChangeKind

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "change": self.change}
