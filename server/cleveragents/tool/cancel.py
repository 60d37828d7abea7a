"""CancelToken: how a run is stopped, and how a question open to the user is withdrawn.

A cancel wins at once: a callback registered on the event loop's own thread runs inside
`cancel()` itself (not one loop turn later), so a run whose token is cancelled from a handler
on that loop cannot take one more step, even when the message that cancelled it and a reply
that would let it go on (an approval answered in the same read) are handled back to back.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


class CancelToken:
    """Set from anywhere (any thread) to stop a run; the run returns its partial result."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._callbacks: list[tuple[asyncio.AbstractEventLoop, Callable[[], object]]] = []
        self._lock = threading.Lock()

    def cancel(self) -> None:
        with self._lock:
            if self._event.is_set():
                return
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        try:
            here: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            here = None
        for loop, callback in callbacks:
            if loop is here:
                callback()
            else:
                try:
                    loop.call_soon_threadsafe(callback)
                except RuntimeError:  # that loop has closed: nothing of it is left to stop
                    pass

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def on_cancel(self, callback: Callable[[], object]) -> Callable[[], None]:
        """Call `callback` on the running loop when the token is cancelled (at once if it
        already is); returns a function that unregisters it."""
        loop = asyncio.get_running_loop()
        entry = (loop, callback)
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(entry)
                registered = True
            else:
                registered = False
        if not registered:
            callback()
            return _nothing

        def remove() -> None:
            with self._lock:
                if entry in self._callbacks:
                    self._callbacks.remove(entry)

        return remove


def _nothing() -> None:
    pass


async def unless_cancelled(token: CancelToken | None, question: Awaitable[T]) -> T | None:
    """Await `question` (a question to the user) unless the token is cancelled first: then
    the question is withdrawn (its task cancelled, so the front takes it back) and the answer
    is None. Never asked at all when the token is already cancelled."""
    if token is None:
        return await question
    if token.cancelled:
        if asyncio.iscoroutine(question):
            question.close()  # never started: nothing was sent
        return None
    task = asyncio.ensure_future(question)
    remove = token.on_cancel(task.cancel)
    try:
        return await task
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if token.cancelled and (current is None or not current.cancelling()):
            return None
        raise
    finally:
        remove()
