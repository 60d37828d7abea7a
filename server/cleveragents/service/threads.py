"""The service's thread pools: the tool runtime's worker threads (see `tool/workers.py`).

Daemon threads, so a synchronous tool stuck in a blocking call never holds the daemon or a
CLI open after its client has gone; the service runs its own blocking work there too.
"""

from __future__ import annotations

from ..tool.workers import WorkerThreads as DaemonThreadPool

__all__ = ["DaemonThreadPool"]
