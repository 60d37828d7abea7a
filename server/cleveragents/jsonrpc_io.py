"""LSP base-protocol framing: our own reader and writer, for stdio and TCP.

pygls's reader accepts only `Content-Length: N\\r\\n` exactly and goes deaf after one bad
frame. This parser is lenient about what clients really send (header names in any case,
LF-only line ends, extra headers, blank lines between frames) and, when a frame is broken,
reports it once and resynchronises on the next `Content-Length` header. A frame announced
over the limit is broken too: its length is not trusted (a client that announces 100 MB and
then sends ordinary requests must not be silenced until 100 MB have passed), so reading
resumes at the next `Content-Length` header; the oversized body itself is never buffered.

The writer never blocks the event loop (pygls writes synchronously): it writes at once
only what the pipe or socket can take without waiting, and leaves the rest to a thread of
its own, so a client that stops reading holds nothing up.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import queue
import re
import socket
import stat
import threading
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger(__name__)

MAX_HEADER_LINE = 8 * 1024
_ABSURD_LENGTH = 10**18 - 1  # what a Content-Length of more digits is read as
MAX_BODY = 64 * 1024 * 1024
COALESCE_BYTES = 16 * 1024  # messages gathered in one event-loop callback go out at this size
_HEADER = re.compile(rb"^([!#$%&'*+\-.^_`|~0-9A-Za-z]+)[ \t]*:[ \t]*(.*?)[ \t]*$")
_CONTENT_LENGTH = b"content-length"
_FIND_CONTENT_LENGTH = re.compile(rb"content-length", re.IGNORECASE)
# Bytes a header line (or a blank line) can start with; anything else is not a header.
_LINE_START = frozenset(
    bytes([c])
    for c in b"!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz \t\r\n"
)


@dataclass(slots=True, frozen=True)
class Frame:
    """One message body, still undecoded."""

    body: bytes


@dataclass(slots=True, frozen=True)
class FrameError:
    """Bytes that were not a valid frame; the server answers -32700 and reads on."""

    message: str


Item = Frame | FrameError


class FrameParser:
    """Incremental parser: `feed(bytes)` returns the frames (and errors) completed so far."""

    def __init__(self, max_body: int = MAX_BODY) -> None:
        self.max_body = max_body
        self._buffer = bytearray()
        self._content_length: int | None = None
        self._in_headers = False  # at least one header line of the current frame seen
        self._body_length: int | None = None  # set while waiting for a body
        self._resyncing = False  # discarding bytes up to the next Content-Length header
        self._fed = 0  # bytes fed so far; the buffer starts at `_fed - len(_buffer)`
        # While inside the bytes an over-limit frame announced, further errors are the
        # oversized body being misread as headers: it was reported once, that is enough.
        self._quiet_until = 0

    def feed(self, data: bytes) -> list[Item]:
        self._buffer += data
        self._fed += len(data)
        items: list[Item] = []
        while self._step(items):
            pass
        return items

    def eof(self) -> list[Item]:
        """The stream ended: anything half-read is an error."""
        pending = bool(self._buffer.strip()) or self._in_headers or self._body_length is not None
        self._buffer.clear()
        if pending and not self._resyncing:
            return [FrameError("the stream ended in the middle of a frame")]
        return []

    # -- the state machine: each step consumes something or returns False ------------------
    def _step(self, items: list[Item]) -> bool:
        if self._body_length is not None:
            if len(self._buffer) < self._body_length:
                return False
            body = bytes(self._buffer[: self._body_length])
            del self._buffer[: self._body_length]
            self._body_length = None
            self._quiet_until = 0  # a real frame: whatever was announced before was a lie
            items.append(Frame(body))
            return True
        if self._resyncing:
            found = _FIND_CONTENT_LENGTH.search(self._buffer)
            if found is None:
                # A header could begin in the last bytes; keep just enough of them.
                del self._buffer[: max(0, len(self._buffer) - len(_CONTENT_LENGTH) + 1)]
                return False
            del self._buffer[: found.start()]
            self._resyncing = False
            return True
        if self._buffer and not self._in_headers and bytes(self._buffer[:1]) not in _LINE_START:
            # A body without headers (a bare `{...}`): no need to wait for a newline.
            self._fail(items, f"expected a Content-Length header, got {bytes(self._buffer[:40])!r}")
            return True
        newline = self._buffer.find(b"\n")
        if newline < 0:
            if len(self._buffer) > MAX_HEADER_LINE:
                # Drop a byte so that resynchronising cannot find this same header again.
                del self._buffer[:1]
                self._fail(items, "a header line is longer than 8 KiB")
                return True
            return False
        start = self._position
        line = bytes(self._buffer[:newline]).rstrip(b"\r")
        del self._buffer[: newline + 1]
        self._line(line, start, items)
        return True

    def _line(self, line: bytes, start: int, items: list[Item]) -> None:
        """One header line (or blank line), which began at offset `start` of the stream."""
        if not line.strip():
            if not self._in_headers:
                return  # blank lines between frames are harmless
            if self._content_length is None:
                self._fail(items, "a frame without a Content-Length header", start)
                return
            length = self._content_length
            self._reset_headers()
            if length > self.max_body:
                self._fail(
                    items,
                    f"a frame of {length} bytes is over the {self.max_body} byte limit; "
                    "reading resumes at the next Content-Length header",
                    start,
                )
                self._quiet_until = max(self._quiet_until, self._position + length)
            else:
                self._body_length = length
            return
        match = _HEADER.match(line)
        if match is None:
            self._fail_line(items, line, start, f"expected a header line, got {line[:40]!r}")
            return
        name, value = match.group(1).lower(), match.group(2)
        if name != _CONTENT_LENGTH:
            if _FIND_CONTENT_LENGTH.search(line, 1) is not None:
                # `junkContent-Length: 52` or `X-Foo: baContent-Length: 52`: a header glued
                # to the end of something else, not a header of its own.
                message = f"expected a header line, got {line[:40]!r}"
                self._fail_line(items, line, start, message)
                return
            self._in_headers = True
            return  # Content-Type and anything else: UTF-8 JSON is all we speak
        self._in_headers = True
        if not value.isdigit():
            self._fail_line(items, line, start, f"invalid Content-Length {value[:40]!r}")
            return
        # int() refuses over 4,300 digits (ValueError, which escaped the parser and stopped
        # the daemon reading); a length of more than 18 digits is over any limit, so it is
        # taken as the largest such and reported as an oversized frame.
        digits = value.lstrip(b"0")
        self._content_length = int(digits or b"0") if len(digits) <= 18 else _ABSURD_LENGTH

    def _fail_line(self, items: list[Item], line: bytes, start: int, message: str) -> None:
        """A header line that failed: hand back a `Content-Length` further along it.

        The tail of a body sent with a miscounted length, or of an oversized body being
        skipped, can share its line with the next frame's header; resynchronising from the
        end of the line would skip past that header.
        """
        found = _FIND_CONTENT_LENGTH.search(line, 1)
        if found is not None:
            self._buffer[:0] = line[found.start() :] + b"\n"
        self._fail(items, message, start)

    def _fail(self, items: list[Item], message: str, at: int | None = None) -> None:
        """Report a broken frame (at stream offset `at`, default here) and resynchronise."""
        if (self._position if at is None else at) >= self._quiet_until:
            items.append(FrameError(message))
        self._reset_headers()
        self._resyncing = True

    @property
    def _position(self) -> int:
        """Offset in the stream of the first unread byte."""
        return self._fed - len(self._buffer)

    def _reset_headers(self) -> None:
        self._content_length = None
        self._in_headers = False


def encode(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


class ThreadedWriter:
    """Writes to a file descriptor without ever blocking the caller (the event loop).

    Implements the writer interface pygls expects (`write(bytes)`, `close()`).
    `on_broken` is called (from whichever thread saw it) when the peer has gone.

    While the client keeps up, messages go out from the caller's thread, non-blocking, on a
    private non-blocking handle of the pipe or socket (`nonblocking_writer`): no thread
    hand-off, whose GIL round trips used to cost a fifth of the streaming rate. Messages
    written by one event-loop callback (a burst of text deltas, a record and its
    notifications) are gathered and sent together when the callback ends, or every
    `COALESCE_BYTES`: one system call, and one wake-up of the client, for many messages.
    What the pipe cannot take goes to a queue, and so does everything after it until the
    queue is empty again: a thread of its own writes the backlog, everything queued at once
    with one blocking `os.write`. A client that stops reading therefore only makes the queue
    grow. Other kinds of output (a terminal, a file) always go through the thread.
    """

    def __init__(self, fd: int, on_broken: Callable[[], None] | None = None) -> None:
        self._fd = fd
        self._queue: queue.SimpleQueue[bytes | threading.Event | None] = queue.SimpleQueue()
        self._on_broken = on_broken
        self._lock = threading.Lock()  # orders direct writes against the backlog
        self._backlog = False  # the thread has (or is writing) data: writes must queue
        self._direct = nonblocking_writer(fd)
        self._gathered: list[bytes] = []  # this callback's messages, not sent yet
        self._gathered_size = 0
        self.broken = False
        self._thread = threading.Thread(target=self._run, name="cleveragents-writer", daemon=True)
        self._thread.start()

    def write(self, data: bytes) -> None:
        if self.broken:
            return
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        with self._lock:
            if loop is None or self._direct is None:
                self._out(data)
                return
            if not self._gathered:
                loop.call_soon(self._send_gathered)
            self._gathered.append(data)
            self._gathered_size += len(data)
            if self._gathered_size >= COALESCE_BYTES:
                self._out(self._take_gathered())

    def _send_gathered(self) -> None:
        with self._lock:
            if self._gathered:
                self._out(self._take_gathered())

    def _take_gathered(self) -> bytes:
        data = b"".join(self._gathered)
        self._gathered.clear()
        self._gathered_size = 0
        return data

    def _out(self, data: bytes) -> None:
        """Write now if nothing waits and the pipe takes it; queue the rest. Holds the lock."""
        if self.broken:
            return
        if not self._backlog and self._direct is not None:
            try:
                written = self._direct.write(data)
            except BlockingIOError:
                written = 0
            except OSError as exc:
                self._gone(exc)
                return
            if written == len(data):
                return
            data = data[written:]
        self._backlog = True
        self._queue.put(data)

    def close(self) -> None:
        """No more writes: the backlog still goes out, then the thread ends."""
        with self._lock:
            if self._gathered:
                self._out(self._take_gathered())
            if self._direct is not None:
                self._direct.close()  # the client sees the end once the thread is done too
                self._direct = None
            self._queue.put(None)

    def flush(self, timeout: float) -> bool:
        """Wait until everything written so far is out; False on timeout."""
        with self._lock:
            if self._gathered:
                self._out(self._take_gathered())
            if not self._backlog:
                return True
            written = threading.Event()
            self._queue.put(written)
        return written.wait(timeout)

    def _run(self) -> None:
        batch: list[bytes] = []
        while True:
            item = self._queue.get()
            while True:
                if isinstance(item, bytes):
                    batch.append(item)
                else:  # a flush marker or the end: what came before it goes out first
                    self._send(batch)
                    batch.clear()
                    if item is None:
                        return
                    item.set()
                if self._queue.empty():
                    break
                item = self._queue.get_nowait()
            self._send(batch)
            batch.clear()
            with self._lock:
                if self._queue.empty():
                    self._backlog = False  # caught up: writes go straight out again

    def _send(self, batch: list[bytes]) -> None:
        if self.broken or not batch:
            return
        try:
            view = memoryview(batch[0] if len(batch) == 1 else b"".join(batch))
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
        except OSError as exc:
            self._gone(exc)

    def _gone(self, exc: OSError) -> None:
        """EPIPE and friends: the client is gone."""
        if self.broken:
            return
        log.warning("cannot write to the client: %s", exc)
        self.broken = True
        if self._on_broken is not None:
            self._on_broken()


class NonBlockingHandle:
    """A second handle on a pipe or socket whose writes never block (`write` may raise
    BlockingIOError or write part of the data)."""

    def __init__(self, write: Callable[[bytes], int], close: Callable[[], None]) -> None:
        self.write = write
        self.close = close


def nonblocking_writer(fd: int) -> NonBlockingHandle | None:
    """A non-blocking handle for a pipe or a socket; None for anything else.

    `fd`'s own file description is shared with other processes (the client's end of a
    pipe, a terminal's with the shell), so it stays blocking: a pipe is opened again through
    /proc (Linux) for a description of our own, and a socket gets MSG_DONTWAIT per call.
    """
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISFIFO(mode):
            flags = os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC
            private = os.open(f"/proc/self/fd/{fd}", flags)
            return NonBlockingHandle(
                lambda data: os.write(private, data), lambda: os.close(private)
            )
        if stat.S_ISSOCK(mode):
            sock = socket.socket(fileno=os.dup(fd))
            return NonBlockingHandle(lambda data: sock.send(data, socket.MSG_DONTWAIT), sock.close)
    except (OSError, AttributeError):  # no /proc, no MSG_DONTWAIT: the thread does it all
        pass
    return None


class StreamWriterAdapter:
    """An asyncio StreamWriter (TCP) behind the same interface; the transport buffers."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    def write(self, data: bytes) -> None:
        if not self._writer.is_closing():
            self._writer.write(data)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._writer.close()

    def flush(self, timeout: float) -> bool:
        return True


def start_fd_reader(
    fd: int, loop: asyncio.AbstractEventLoop, on_data: Callable[[bytes], None]
) -> threading.Thread:
    """Read `fd` on a thread of its own (not a shared pool) and hand chunks to the loop.

    `on_data(b"")` signals the end of the stream. Works for pipes, files and terminals alike.
    """

    def run() -> None:
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError as exc:
                log.warning("cannot read from the client: %s", exc)
                chunk = b""
            try:
                loop.call_soon_threadsafe(on_data, chunk)
            except RuntimeError:  # the loop has closed
                return
            if not chunk:
                return

    thread = threading.Thread(target=run, name="cleveragents-reader", daemon=True)
    thread.start()
    return thread
