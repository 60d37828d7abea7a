"""What a run (or a restore) changed in its folder: one entry per path.

Shared by the checkpoint store, which computes changes, and the run history, which keeps
them with each run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..tool.serialization import register_shape
from ..workspace.names import shown_path

ChangeKind = Literal["added", "modified", "deleted"]
CHANGE_KINDS: tuple[ChangeKind, ...] = ("added", "modified", "deleted")


@dataclass(frozen=True, slots=True)
class ChangedFile:
    """One path that differs between two states of a folder (relative, `/`-separated; a name
    that is not UTF-8 keeps its bytes as surrogates: its data shows it C-quoted).

    `ignored`: a file git does not see (ignored by the project's rules, or in a folder such
    as `node_modules`), kept by the checkpoints all the same. A path ending in `/` is an
    empty folder.
    """

    path: str
    change: ChangeKind
    ignored: bool = False


# A path as the terminal shows it; `ignored` only when it is.
register_shape(
    ChangedFile,
    convert={"path": shown_path},
    omit_if_default=("ignored",),
)
