"""The framing parser: lenient about real clients, resynchronising after broken frames."""

from __future__ import annotations

import asyncio
import os
import threading

import pytest

from cleveragents.jsonrpc_io import Frame, FrameError, FrameParser, ThreadedWriter, encode

BODY = b'{"jsonrpc":"2.0","id":1,"method":"x"}'


def parse(*chunks: bytes, max_body: int | None = None) -> list[Frame | FrameError]:
    parser = FrameParser() if max_body is None else FrameParser(max_body=max_body)
    items: list[Frame | FrameError] = []
    for chunk in chunks:
        items.extend(parser.feed(chunk))
    return items


def kinds(items: list[Frame | FrameError]) -> list[str]:
    return ["frame" if isinstance(i, Frame) else "error" for i in items]


def test_a_well_formed_frame() -> None:
    assert parse(encode(BODY)) == [Frame(BODY)]


def test_frames_split_anywhere_and_glued_together() -> None:
    data = encode(BODY) + encode(b"{}") + encode(BODY)
    assert parse(*[data[i : i + 1] for i in range(len(data))]) == [
        Frame(BODY),
        Frame(b"{}"),
        Frame(BODY),
    ]
    assert parse(data) == [Frame(BODY), Frame(b"{}"), Frame(BODY)]


@pytest.mark.parametrize(
    "header",
    [
        b"content-length: %d\r\n\r\n",
        b"Content-Length: %d\n\n",
        b"CONTENT-LENGTH:%d\r\n\r\n",
        b"Content-Length: %d \r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n",
        b"Content-Type: application/json\nContent-Length: %d\n\n",
        b"\r\n\r\nContent-Length: %d\r\n\r\n",
    ],
)
def test_header_variants_real_clients_send_are_accepted(header: bytes) -> None:
    assert parse(header % len(BODY) + BODY) == [Frame(BODY)]


def test_the_body_is_taken_by_length_not_by_line() -> None:
    body = b'{"text":"line one\r\n\r\nContent-Length: 3\r\n\r\n"}'
    assert parse(encode(body) + encode(BODY)) == [Frame(body), Frame(BODY)]


@pytest.mark.parametrize(
    ("garbage", "message"),
    [
        (b"hello\r\n", "expected a header line"),
        (b"{}", "expected a Content-Length header"),
        (b"Content-Length: twelve\r\n\r\n", "invalid Content-Length"),
        (b"Content-Length: -4\r\n\r\n", "invalid Content-Length"),
        (b"Content-Type: x\r\n\r\n", "without a Content-Length"),
        (b"Content-Length 12\r\n\r\n", "expected a header line"),
    ],
)
def test_garbage_is_reported_once_and_the_next_frame_still_arrives(
    garbage: bytes, message: str
) -> None:
    items = parse(garbage + b"more junk\r\n" + encode(BODY))
    assert kinds(items) == ["error", "frame"]
    error = items[0]
    assert isinstance(error, FrameError) and message in error.message
    assert items[1] == Frame(BODY)


def test_resynchronising_finds_a_header_glued_to_garbage() -> None:
    items = parse(b'{"oops": true}' + encode(BODY))
    assert kinds(items) == ["error", "frame"]


def test_a_header_after_a_miscounted_body_on_the_same_line_is_kept() -> None:
    # A client that counted characters, not bytes: the body's tail runs into the next header.
    short = b"Content-Length: %d\r\n\r\n" % (len(BODY) - 3) + BODY
    items = parse(short + encode(BODY))
    assert kinds(items) == ["frame", "error", "frame"]  # the cut body fails as JSON later
    assert items[-1] == Frame(BODY)


def test_an_endless_header_line_is_an_error_not_a_memory_leak() -> None:
    parser = FrameParser()
    items = parser.feed(b"X" * 20_000)
    assert kinds(items) == ["error"]
    assert kinds(parser.feed(b"\r\n" + encode(BODY))) == ["frame"]


def test_an_oversized_frame_is_skipped_without_being_buffered() -> None:
    items = parse(b"Content-Length: 10\r\n\r\n", b"0123", b"456789" + encode(b"{}"), max_body=5)
    assert kinds(items) == ["error", "frame"]
    assert items[1] == Frame(b"{}")


def test_the_end_of_the_stream_mid_frame_is_an_error() -> None:
    parser = FrameParser()
    assert parser.feed(b"Content-Length: 10\r\n\r\n{") == []
    assert kinds(parser.eof()) == ["error"]
    assert FrameParser().eof() == []


def test_the_threaded_writer_delivers_in_order_and_flushes() -> None:
    read_fd, write_fd = os.pipe()
    writer = ThreadedWriter(write_fd)
    for number in range(200):
        writer.write(encode(b'{"n":%d}' % number))
    assert writer.flush(30)
    writer.close()
    os.close(write_fd)
    data = b""
    while chunk := os.read(read_fd, 65536):
        data += chunk
    os.close(read_fd)
    assert parse(data) == [Frame(b'{"n":%d}' % n) for n in range(200)]


def test_the_threaded_writer_reports_a_client_that_has_gone() -> None:
    read_fd, write_fd = os.pipe()
    os.close(read_fd)
    gone: list[bool] = []
    writer = ThreadedWriter(write_fd, on_broken=lambda: gone.append(True))
    writer.write(b"x")
    assert writer.flush(30)
    assert gone == [True] and writer.broken
    writer.write(b"dropped")  # no error, no block
    writer.close()
    os.close(write_fd)


def test_the_threaded_writer_never_blocks_on_a_client_that_stops_reading() -> None:
    # 4 MiB into a pipe that holds 64 KiB and that nobody reads yet: a blocking `write`
    # would hang here (the event loop, in the daemon) instead of queueing.
    read_fd, write_fd = os.pipe()
    writer = ThreadedWriter(write_fd)
    messages = [encode(b'{"n":%d,"pad":"%s"}' % (n, b"x" * 1000)) for n in range(4096)]
    for message in messages:
        writer.write(message)
    assert not writer.flush(0.05)  # still queued: the pipe is full
    received = bytearray()

    def drain() -> None:
        while chunk := os.read(read_fd, 65536):
            received.extend(chunk)

    reader = threading.Thread(target=drain)
    reader.start()
    assert writer.flush(60)  # everything went out once the client read again, in order
    writer.close()
    os.close(write_fd)
    reader.join(60)
    os.close(read_fd)
    assert bytes(received) == b"".join(messages)


async def test_messages_of_one_callback_go_out_together_in_order_and_are_never_lost() -> None:
    read_fd, write_fd = os.pipe()
    writer = ThreadedWriter(write_fd)
    first = [encode(b'{"n":%d}' % n) for n in range(1000)]  # 36 KB: over one gathering
    for message in first:
        writer.write(message)
    await asyncio.sleep(0)  # the callback ends: what was gathered goes out
    last = encode(b'{"n":"last"}')
    writer.write(last)  # gathered, not yet sent: flush and close must send it
    assert writer.flush(30)
    writer.close()
    os.close(write_fd)
    received = bytearray()
    while chunk := os.read(read_fd, 65536):
        received.extend(chunk)
    os.close(read_fd)
    assert bytes(received) == b"".join([*first, last])
