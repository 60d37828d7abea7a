"""No bytes can silence the daemon: a property test of resynchronisation.

Definitions (the same as protocol/README.md, "Framing"):

- **Noise** is any run of bytes that announces no frame of its own: nowhere in it (any case)
  does `Content-Length`, optional spaces or tabs, `:`, optional spaces or tabs, and a
  decimal length within the limit occur. Noise may be empty, random, cut anywhere (in the
  middle of a header line too), and may hold `Content-Length` headers over the limit or
  with a value that is not a number, followed by some of the oversized body or not.
- A **resync point** is the `Content-Length` header of a well-formed frame that follows
  noise (or another frame). The property: in any stream of noise and well-formed frames,
  every well-formed frame is read intact and in order, nothing else is read as a frame,
  and each run of noise is reported with at most one error per `Content-Length` in it,
  plus one.

Streams are fed to the parser split at random points, and to the real daemon over stdio,
where every request after a resync point must be answered.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from cleveragents.jsonrpc_io import MAX_BODY, Frame, FrameError, FrameParser
from cleveragents.protocol import wire
from support.daemon_support import WAIT_S, daemon_command, daemon_env

PARSER_LIMIT = 256  # a small limit, so that bodies over it are cheap to generate
_ANNOUNCEMENT = re.compile(rb"content-length[ \t]*:[ \t]*(\d+)", re.IGNORECASE)
_CONTENT_LENGTH = re.compile(rb"content-length", re.IGNORECASE)

HEADER_STYLES = [
    b"Content-Length: %d\r\n\r\n",
    b"content-length:%d\n\n",
    b"CONTENT-LENGTH: %d \r\n\r\n",
    b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: %d\r\n\r\n",
    b"Content-Length: %d\r\nContent-Type: application/json\r\n\r\n",
    b"\r\n\r\nContent-Length: %d\n\r\n",
]


def announces_no_frame(noise: bytes, limit: int) -> bool:
    return all(int(match.group(1)) > limit for match in _ANNOUNCEMENT.finditer(noise))


def noise(limit: int) -> st.SearchStrategy[bytes]:
    fragment = st.one_of(
        st.binary(max_size=24),
        st.sampled_from(
            [
                b"\r\n",
                b"\n",
                b"\r",
                b"\r\n\r\n",
                b":",
                b" ",
                b"{",
                b'{"jsonrpc":"2.0","id":1,"method":"cleveragents/tools"}',
                b"Content-Type: application/json",
                b"X-Foo: bar",
                b"Content-Length",
                b"content-length:",
                b"CONTENT-LENGTH: ",
                b"Content-Length: twelve",
                b"Content-Length: -4",
                b"Content-Length: 1e3",
                b"x" * 9000,  # a header line over 8 KiB
            ]
        ),
        st.integers(min_value=limit + 1, max_value=10**12).map(lambda n: b"Content-Length: %d" % n),
        st.integers(min_value=limit + 1, max_value=10**12).map(
            lambda n: b"Content-Length: %d\r\n\r\n" % n
        ),
    )
    return (
        st.lists(fragment, max_size=8)
        .map(b"".join)
        .filter(lambda data: announces_no_frame(data, limit))
    )


def request_body(text: str, ascii_only: bool, msg_id: int, method: str) -> bytes:
    message = {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": {"note": text}}
    return json.dumps(message, ensure_ascii=ascii_only).encode()


def well_formed(body: bytes, style: int) -> bytes:
    return HEADER_STYLES[style] % len(body) + body


# Text that a body may carry: framing look-alikes too, which must be taken by length.
texts = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["Content-Length: 5\r\n\r\n", "\r\n\r\n", "Content-Length: 999999999999"]),
)
segments = st.lists(
    st.tuples(noise(PARSER_LIMIT), texts, st.booleans(), st.integers(0, len(HEADER_STYLES) - 1)),
    min_size=1,
    max_size=6,
)


@settings(max_examples=400, suppress_health_check=[HealthCheck.filter_too_much])
@given(segments=segments, cuts=st.lists(st.integers(min_value=0), max_size=12))
def test_every_well_formed_frame_after_noise_is_read(
    segments: list[tuple[bytes, str, bool, int]], cuts: list[int]
) -> None:
    stream = b""
    expected: list[bytes] = []
    error_budget = 0
    for number, (junk, text, ascii_only, style) in enumerate(segments):
        body = request_body(text, ascii_only, number, "x")
        if len(body) > PARSER_LIMIT:
            body = request_body(text[:10], True, number, "x")
        stream += junk + well_formed(body, style)
        expected.append(body)
        error_budget += 1 + len(_CONTENT_LENGTH.findall(junk))
    points = sorted({cut % (len(stream) + 1) for cut in cuts})
    parser = FrameParser(max_body=PARSER_LIMIT)
    items: list[Frame | FrameError] = []
    for start, end in zip([0, *points], [*points, len(stream)], strict=True):
        items.extend(parser.feed(stream[start:end]))
    frames = [item.body for item in items if isinstance(item, Frame)]
    assert frames == expected
    assert sum(isinstance(item, FrameError) for item in items) <= error_budget
    assert parser.eof() == []  # the stream ended on a complete frame


def test_a_huge_announcement_then_a_request_is_one_error_and_the_request() -> None:
    body = request_body("hi", True, 1, "x")
    items = FrameParser().feed(b"Content-Length: 100000000\r\n\r\n" + well_formed(body, 0))
    assert [type(item) for item in items] == [FrameError, Frame]
    assert isinstance(items[0], FrameError) and "over the" in items[0].message
    assert items[1] == Frame(body)


def test_an_oversized_body_with_look_alike_headers_is_reported_once() -> None:
    # A body over the limit that really is sent: JSON strings cannot hold a raw line break,
    # so what looks like a header inside it never parses as one, and it costs one error.
    inner = b"Content-Length: 5 and content-length: 7 " * 50
    body = b'{"text":"%s"}' % inner
    after = request_body("after", True, 2, "x")
    stream = b"Content-Length: %d\r\n\r\n" % len(body) + body + well_formed(after, 0)
    parser = FrameParser(max_body=PARSER_LIMIT)
    items = [item for i in range(0, len(stream), 7) for item in parser.feed(stream[i : i + 7])]
    assert [type(item) for item in items] == [FrameError, Frame]
    assert items[1] == Frame(after)


def test_a_content_length_header_longer_than_8_kib_does_not_hang_the_parser() -> None:
    parser = FrameParser()
    assert [type(i) for i in parser.feed(b"Content-Length: " + b"1" * 10_000)] == [FrameError]
    assert parser.feed(b"\r\n" + well_formed(b"{}", 0)) == [Frame(b"{}")]


def test_a_content_length_of_thousands_of_digits_is_an_oversized_frame() -> None:
    """Found open: `int()` refuses a string of over 4,300 digits (Python's limit on integer
    conversion), so `Content-Length: 999…9` of 5,000 digits (a 5 KiB header line, within the
    8 KiB allowed) raised ValueError out of the parser, and the daemon stopped reading."""
    body = request_body("after", True, 1, "x")
    for digits in (b"9" * 5000, b"1" + b"0" * 8000):
        parser = FrameParser()
        items = parser.feed(b"Content-Length: " + digits + b"\r\n\r\n" + well_formed(body, 0))
        assert [type(item) for item in items] == [FrameError, Frame], digits[:8]
        assert isinstance(items[0], FrameError) and "over the" in items[0].message
        assert items[1] == Frame(body)
    leading_zeros = FrameParser().feed(b"Content-Length: " + b"0" * 5000 + b"2\r\n\r\n{}")
    assert leading_zeros == [Frame(b"{}")]


# -- the real daemon -----------------------------------------------------------------------


class StdioDaemon:
    """A daemon over real stdio, written to and read from plain threads (no event loop),
    so that one process serves every generated example."""

    def __init__(self, home: Path) -> None:
        self.process = subprocess.Popen(
            daemon_command(home / "history.sqlite3"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=daemon_env(home),
            cwd=str(home),
        )
        self.answered: set[Any] = set()
        self.parse_errors = 0
        self._changed = threading.Condition()
        self._closed = False
        self.deaf = False
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._next_id = 0

    def _read(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        parser = FrameParser()
        while chunk := os.read(stdout.fileno(), 65536):
            for item in parser.feed(chunk):
                assert isinstance(item, Frame), item  # the daemon's output is well-formed
                message = json.loads(item.body)
                with self._changed:
                    if message.get("id") is None and "error" in message:
                        assert message["error"]["code"] == wire.PARSE_ERROR, message
                        self.parse_errors += 1
                    elif "id" in message and "method" not in message:
                        self.answered.add(message["id"])
                    self._changed.notify_all()
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def write(self, data: bytes) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write(data)
        stdin.flush()

    def wait_answered(self, ids: list[int]) -> None:
        # A daemon that went deaf stays deaf: later examples fail at once, not after a wait.
        assert not self.deaf, "the daemon went deaf in an earlier example"
        with self._changed:
            self._changed.wait_for(lambda: self._closed or self.answered.issuperset(ids), WAIT_S)
            missing = sorted(set(ids) - self.answered)
        self.deaf = bool(missing)
        assert not missing, f"unanswered requests {missing}; the daemon went deaf"

    def stop(self) -> int:
        if self.process.stdin is not None:
            self.process.stdin.close()
        code = self.process.wait(WAIT_S)
        self._reader.join(WAIT_S)
        return code


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StdioDaemon]:
    served = StdioDaemon(tmp_path_factory.mktemp("resync"))
    try:
        init = served.new_id()
        params: dict[str, Any] = {
            "processId": None,
            "capabilities": {},
            "initializationOptions": None,
        }
        served.write(
            well_formed(
                json.dumps(
                    {"jsonrpc": "2.0", "id": init, "method": "initialize", "params": params}
                ).encode(),
                0,
            )
        )
        served.wait_answered([init])
        served.write(well_formed(b'{"jsonrpc":"2.0","method":"initialized","params":{}}', 0))
        yield served
        assert served.stop() == 1  # stdin closed without shutdown: the daemon was alive
    finally:
        if served.process.poll() is None:
            served.process.kill()
            served.process.wait()


# Requests the daemon answers without side effects: a history listing (with a `note` it
# must reject as an unknown field, -32602) and a method it does not serve (-32601).
DAEMON_METHODS = ["cleveragents/runs", "cleveragents/fly"]


@settings(
    max_examples=60,
    # A daemon that went deaf stays deaf: shrinking would only repeat the same wait.
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    deadline=None,
    suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow],
)
@given(
    segments=st.lists(
        st.tuples(
            noise(MAX_BODY),
            texts,
            st.booleans(),
            st.integers(0, len(HEADER_STYLES) - 1),
            st.sampled_from(DAEMON_METHODS),
        ),
        min_size=1,
        max_size=5,
    )
)
def test_the_daemon_answers_every_request_after_a_resync_point(
    daemon: StdioDaemon, segments: list[tuple[bytes, str, bool, int, str]]
) -> None:
    ids: list[int] = []
    stream = b""
    for junk, text, ascii_only, style, method in segments:
        ids.append(daemon.new_id())
        stream += junk + well_formed(request_body(text, ascii_only, ids[-1], method), style)
    daemon.write(stream)
    daemon.wait_answered(ids)


def test_the_daemon_reports_an_oversized_frame_once_and_answers_the_next_request(
    daemon: StdioDaemon,
) -> None:
    before = daemon.parse_errors
    msg_id = daemon.new_id()
    body = request_body("after", True, msg_id, "cleveragents/runs")
    daemon.write(b"Content-Length: 100000000\r\n\r\n" + well_formed(body, 0))
    daemon.wait_answered([msg_id])
    assert daemon.parse_errors == before + 1


def test_the_daemon_answers_after_a_content_length_of_thousands_of_digits(
    daemon: StdioDaemon,
) -> None:
    before = daemon.parse_errors
    msg_id = daemon.new_id()
    body = request_body("after", True, msg_id, "cleveragents/runs")
    daemon.write(b"Content-Length: " + b"9" * 5000 + b"\r\n\r\n" + well_formed(body, 0))
    daemon.wait_answered([msg_id])
    assert daemon.parse_errors == before + 1
