"""The run history a server opens when a request first needs it, not at start.

A daemon answers `initialize` without loading SQLite or touching the database (issue 21:
cold start); the first request that needs runs opens it, once for every session of the
process. What `open_history` does on opening is unchanged, only when: an unusable file is
logged then (and runs go unstored, as before), and the runs a dead process left "running" are
marked interrupted then.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .history import RunHistory


class HistoryOnDemand:
    """The history at `path_argument` (`--history`, else the environment's or the default
    path), opened by the first `get()`. Used from the event loop's thread only."""

    def __init__(self, path_argument: str | None) -> None:
        self.path_argument = path_argument
        self._opened = False
        self._history: RunHistory | None = None

    def get(self) -> RunHistory | None:
        """The open history, or None when its file cannot be used (logged on the first try)."""
        if not self._opened:
            from .settings import open_history

            self._opened = True
            self._history = open_history(self.path_argument)
        return self._history

    def close(self) -> None:
        if self._history is not None:
            self._history.close()
