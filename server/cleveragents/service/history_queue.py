"""The run history for an event loop: writes that never wait for a lock, reads off the loop.

A daemon must answer a ping while another process holds the history's write lock, and while
it reads a run of thousands of records back. `QueuedHistory` wraps a `RunHistory` so that
neither touches the event loop:

- **Writes** (run events: it is a run observer) are stored at once, on the caller's thread,
  when nothing is queued and the database is free (a small transaction, an append to the
  WAL): a client that is sent a record afterwards finds it stored, even if the daemon is
  killed the next moment. Otherwise they go into a queue that one writer thread works
  through in order. A write that finds the database locked (SQLITE_BUSY once the connection's
  busy timeout has passed) is tried again after a short pause, until it goes through: no
  record is dropped, none overtakes another. A write that fails for any other reason (a full
  disk, a run id stored twice) is logged and skipped, as it would be without the queue.
  While another process holds the lock, queued records live only in memory: a daemon killed
  then (kill -9, a power cut) loses them, one that exits waits for them (`aclose`).
- **Reads** run on reader threads once the writes queued before them are done, so a client
  that was sent a record finds it when it reads the run back. While another process holds the
  lock a read waits for those writes at most `READ_AFTER_WRITES_S`, then answers with what is
  stored.
- **`aclose`** waits for the queue to empty (at most `FLUSH_TIMEOUT_S`, in case the lock is
  never released) and stops the threads; whatever could not be written is logged as lost.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import sqlite3
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from ..tool.events import RunEvent
from ..tool.messages import Message
from .history import UNSTORED_EVENTS, BatchLabel, RunHistory, RunSummary, StoredRun
from .threads import DaemonThreadPool

log = logging.getLogger(__name__)

T = TypeVar("T")
Write = Callable[[RunHistory], object]

RETRY_PAUSE_S = 0.1
"""The pause before a write that found the database locked is tried again."""
READ_AFTER_WRITES_S = 2.0
"""How long a read waits for the writes queued before it (only a held lock makes it wait)."""
FLUSH_TIMEOUT_S = 10.0
"""How long closing waits for queued writes when another process holds the lock."""
READER_THREADS = 2

_BUSY_CODES = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})


def is_locked(exc: sqlite3.Error) -> bool:
    """Whether an error means another connection holds the lock (worth trying again)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return bool(code & 0xFF in _BUSY_CODES)  # extended codes keep the primary in the low byte
    return "locked" in str(exc) or "busy" in str(exc)


class QueuedHistory:
    """A `RunHistory` whose writes and reads stay off the caller's thread (see the module)."""

    def __init__(self, history: RunHistory, *, retry_pause_s: float = RETRY_PAUSE_S) -> None:
        self.history = history
        self.retry_pause_s = retry_pause_s
        self._queue: queue.SimpleQueue[Write | None] = queue.SimpleQueue()
        self._progress = threading.Condition()
        self._queued = 0  # writes put in the queue, ever
        self._done = 0  # writes done (stored, or given up on), ever; under _progress
        self._stopping = threading.Event()
        self._reads = DaemonThreadPool(READER_THREADS, "cleveragents-history-read")
        self._writer = threading.Thread(
            target=self._write_all, name="cleveragents-history-write", daemon=True
        )
        self._writer.start()

    @property
    def path(self) -> str:
        return str(self.history.path)

    # -- writing ---------------------------------------------------------------------------
    def __call__(self, event: RunEvent) -> None:
        """A run observer: the event is stored in order, at once when nothing is queued and
        the database is free, else on the writer thread."""
        if isinstance(event, UNSTORED_EVENTS):
            return  # a streamed response is thousands of these: not even the lock is taken
        with self._progress:
            # Holding `_progress`, nothing can be queued meanwhile: no write overtakes another.
            if self._queued == self._done and not self._stopping.is_set():
                if self._attempt(lambda history: history.store_now(event)):
                    return
        # Writes are queued already, or the database is locked: the writer thread takes it.
        self.submit(lambda history: history(event))

    def submit(self, write: Write) -> None:
        """Queue a write (a function of the `RunHistory`); it runs after those queued before."""
        if self._stopping.is_set():
            log.error("run history closed: a write after closing is lost")
            return
        with self._progress:
            self._queued += 1
        self._queue.put(write)

    @property
    def pending(self) -> int:
        """Writes queued and not yet done."""
        with self._progress:
            return self._queued - self._done

    def _write_all(self) -> None:
        while True:
            write = self._queue.get()
            if write is None:
                return
            try:
                self._write(write)
            finally:
                with self._progress:
                    self._done += 1
                    self._progress.notify_all()

    def _attempt(self, write: Write) -> bool:
        """Try `write` once: False when the database is locked (worth trying again), True
        when it is done with (stored, or failed for another reason, which is logged)."""
        try:
            write(self.history)
        except sqlite3.Error as exc:
            if is_locked(exc):
                return False
            log.error("run history %s: a write failed and is skipped: %s", self.path, exc)
        except Exception:
            log.exception("run history %s: a write failed and is skipped", self.path)
        return True

    def _write(self, write: Write) -> None:
        waited_since: float | None = None
        while not self._attempt(write):
            if self._stopping.is_set():
                log.error(
                    "run history %s: still locked by another process at shutdown; a write is lost",
                    self.path,
                )
                return
            if waited_since is None:
                waited_since = time.monotonic()
                log.warning(
                    "run history %s is locked by another process; writes wait for it", self.path
                )
            self._stopping.wait(self.retry_pause_s)
        if waited_since is not None:
            log.warning(
                "run history %s: written after waiting %.1f s for the lock",
                self.path,
                time.monotonic() - waited_since,
            )

    def wait_written(self, timeout: float | None) -> bool:
        """Block until the writes queued so far are done; False when `timeout` passed first."""
        with self._progress:
            target = self._queued
            return self._progress.wait_for(lambda: self._done >= target, timeout)

    # -- reading ---------------------------------------------------------------------------
    async def read(self, read: Callable[[RunHistory], T]) -> T:
        """`read(history)` on a reader thread, after the writes queued before it."""
        with self._progress:
            target = self._queued

        def after_writes() -> T:
            with self._progress:
                caught_up = self._progress.wait_for(
                    lambda: self._done >= target, READ_AFTER_WRITES_S
                )
            if not caught_up:
                log.warning(
                    "run history %s: reading before %d queued writes (the database is locked)",
                    self.path,
                    self.pending,
                )
            return read(self.history)

        return await asyncio.wrap_future(self._reads.submit(after_writes))

    async def settled(self) -> None:
        """Wait (off the loop) for the writes queued so far, as a read does."""
        await self.read(lambda history: None)

    async def get_run(self, run_id: str) -> StoredRun | None:
        return await self.read(lambda history: history.get_run(run_id))

    async def has_run(self, run_id: str) -> bool:
        return await self.read(lambda history: history.has_run(run_id))

    async def list_runs(
        self, limit: int, offset: int, *, batch_id: str | None = None
    ) -> list[RunSummary]:
        return await self.read(lambda history: history.list_runs(limit, offset, batch_id=batch_id))

    async def conversation(self, run_id: str) -> list[Message]:
        """KeyError for an unknown run."""
        return await self.read(lambda history: history.conversation(run_id))

    def mark_batch(self, run_id: str, label: BatchLabel) -> None:
        """See `RunHistory.mark_batch` (before the run starts; no I/O: it is noted for the
        run's first write)."""
        self.history.mark_batch(run_id, label)

    async def mark_continuation(self, run_id: str, continued_from: str) -> None:
        """See `RunHistory.mark_continuation` (before the run starts, it only reads)."""
        await self.read(lambda history: history.mark_continuation(run_id, continued_from))

    # -- closing ---------------------------------------------------------------------------
    def close(self, timeout: float = FLUSH_TIMEOUT_S) -> bool:
        """Write what is queued (waiting at most `timeout`), then stop; False if some was lost.

        The `RunHistory` itself stays open: its owner closes it.
        """
        flushed = self.wait_written(timeout)
        if not flushed:
            log.error(
                "run history %s: %d writes not stored after %g s (the database stayed locked)",
                self.path,
                self.pending,
                timeout,
            )
        self._stopping.set()
        self._queue.put(None)
        self._writer.join(timeout=1.0)
        self._reads.shutdown(wait=False, cancel_futures=True)
        return flushed

    async def aclose(self, timeout: float = FLUSH_TIMEOUT_S) -> bool:
        """`close` without blocking the event loop."""
        return await asyncio.wrap_future(self._reads.submit(self.close, timeout))
