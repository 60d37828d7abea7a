"""What a run (or a restore) changed in its folder: one entry per path.

Shared by the checkpoint store, which computes changes, and the run history, which keeps
them with each run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ..workspace.names import shown_path

ChangeKind = Literal["added", "modified", "deleted"]
CHANGE_KINDS: tuple[ChangeKind, ...] = ("added", "modified", "deleted")


@dataclass(frozen=True, slots=True)
class ChangedFile:
    """One path that differs between two states of a folder (relative, `/`-separated; a name
    that is not UTF-8 keeps its bytes as surrogates: `to_dict` shows it C-quoted)."""

    path: str
    change: ChangeKind

    def to_dict(self) -> dict[str, Any]:
        return {"path": shown_path(self.path), "change": self.change}
