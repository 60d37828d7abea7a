"""Worker threads for synchronous tools: daemon threads, and a cheap hop there and back.

Two things `ThreadPoolExecutor` does not give:

- **Exit stays exit.** It joins its workers when the interpreter exits, so a synchronous tool
  stuck in a blocking call (cancelling a run cannot interrupt a thread) would hold a CLI or the
  daemon open after its user or client has gone. These workers are daemon threads.
- **A hop that costs little.** Every sync tool call crosses to a worker and back, and on a
  loaded machine the crossing is most of such a call. `submit` builds a
  `concurrent.futures.Future` (a `Condition` of its own, notified when it settles), then takes
  an idle-worker `Semaphore` (another `Condition`); the awaiting side wraps that future in an
  asyncio one. `start` skips all of it: the worker runs the function and calls `done` with
  the outcome, which hands it to the event loop in one `call_soon_threadsafe`. Measured on
  this machine, a round trip through `start` took about 0.7x one through `run_in_executor`
  (see bench/README.md, "the sync-tool hop").

`submit` remains, for callers that want a `Future` (the service runs its own blocking work
here too).
"""

from __future__ import annotations

import functools
import queue
import threading
from collections.abc import Callable
from concurrent.futures import CancelledError, Executor, Future
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

Done = Callable[[Any, BaseException | None], None]
"""Called in the worker with (result, None) or (None, error) once the function returned."""

_QUEUED, _RUNNING, _CANCELLED = 0, 1, 2


class Job:
    """One function waiting for or running in a worker; see `WorkerThreads.cancel`."""

    __slots__ = ("done", "fn", "state")

    def __init__(self, fn: Callable[[], Any], done: Done) -> None:
        self.fn = fn
        self.done = done
        self.state = _QUEUED


class WorkerThreads(Executor):
    """Up to `max_workers` daemon threads, started as work arrives and reused when idle."""

    def __init__(self, max_workers: int, thread_name_prefix: str) -> None:
        if max_workers < 1:
            raise ValueError("max_workers must be at least 1")
        self.max_workers = max_workers
        self._prefix = thread_name_prefix
        self._queue: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._idle = 0  # workers that finished a job and will take the next without a new thread
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._shut = False

    def start(self, fn: Callable[[], Any], done: Done) -> Job:
        """Run `fn()` in a worker, then `done(result, error)` there (unless cancelled first).

        `done` must not raise: it runs in the worker, outside any caller.
        """
        job = Job(fn, done)
        with self._lock:
            if self._shut:
                raise RuntimeError("cannot start work in a pool that was shut down")
            self._queue.put(job)
            if self._idle:
                self._idle -= 1
            elif len(self._threads) < self.max_workers:
                thread = threading.Thread(
                    target=self._work,
                    name=f"{self._prefix}_{len(self._threads)}",
                    daemon=True,
                )
                self._threads.append(thread)
                thread.start()
        return job

    def cancel(self, job: Job) -> bool:
        """Keep a job that has not started from ever starting (its `done` is then never
        called); False when it has started: a thread cannot be stopped, it runs on."""
        return self._drop(job) or job.state == _CANCELLED

    def _drop(self, job: Job) -> bool:
        """Mark a queued job cancelled; True only for the call that did."""
        with self._lock:
            if job.state != _QUEUED:
                return False
            job.state = _CANCELLED
            return True

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        future: Future[T] = Future()
        call = functools.partial(fn, *args, **kwargs)
        self.start(
            functools.partial(_settle_future, future, call),
            functools.partial(_cancel_unstarted, future),
        )
        return future

    def _work(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            with self._lock:
                runs = job.state == _QUEUED
                if runs:
                    job.state = _RUNNING
            if not runs:
                with self._lock:
                    self._idle += 1
                continue
            try:
                result, error = job.fn(), None
            except BaseException as exc:  # handed to whoever waits for the job
                result, error = None, exc
            # Idle before `done` wakes the caller: its next job then goes to this thread,
            # already awake, instead of starting another while this one is about to wait.
            with self._lock:
                self._idle += 1
            job.done(result, error)
            del job, result, error  # drop references before waiting

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Refuse new work; with `cancel_futures`, what has not started gets
        `done(None, CancelledError())` here and never runs."""
        with self._lock:
            self._shut = True
            threads = list(self._threads)
        if cancel_futures:
            while True:
                try:
                    job = self._queue.get_nowait()
                except queue.Empty:
                    break
                if job is not None and self._drop(job):
                    job.done(None, CancelledError())
        for _ in threads:
            self._queue.put(None)
        if wait:
            for thread in threads:
                thread.join()


def _settle_future(future: Future[Any], call: Callable[[], Any]) -> None:
    """`submit`'s job: run `call` into `future`, unless the future was cancelled first."""
    if not future.set_running_or_notify_cancel():
        return
    try:
        result = call()
    except BaseException as exc:  # handed to whoever awaits the future
        future.set_exception(exc)
    else:
        future.set_result(result)


def _cancel_unstarted(future: Future[Any], result: Any, error: BaseException | None) -> None:
    """`submit`'s `done`: only a job the shutdown dropped leaves its future pending."""
    if not future.done():
        future.cancel()
