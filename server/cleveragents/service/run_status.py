"""A stored run's status and kind: the literals the history writes and the wire names.

Apart from the history package: the wire's shared literals import them, and a daemon
answering `initialize` does not load the history (SQLite and its records) to name them.
"""

from __future__ import annotations

from typing import Literal

RunStatus = Literal["running", "finished", "cancelled", "limit", "failed", "interrupted"]
RunKind = Literal["run", "restore"]
