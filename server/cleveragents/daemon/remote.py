"""Reaching the daemon through a listener: `--tcp` with a token, `--socket` with permissions.

Anyone on the machine can connect to a TCP port, so a TCP daemon admits only a client whose
first message is `initialize` carrying `initializationOptions.token`: a secret generated at
start and written to a file that only the daemon's user can read. Any other first message
(another method, a notification, a broken frame, a wrong or missing token) is answered with
one error and the connection is closed; the daemon keeps listening for its real client.

A Unix socket is guarded by the file system instead: it is created readable and writable by
its owner alone (0600), which is also what makes it the way to reach a daemon on another
machine, through `ssh -L` forwarding of the socket.

Either way a connection becomes the client only once it speaks: its first complete message
(over TCP, `initialize` with the token; over a socket, any well-framed message). A connection
that closes without a byte (a liveness probe, a port scan, a second `serve --socket` checking
whether this socket is live) or stays silent past HANDSHAKE_TIMEOUT_S is closed and the daemon
goes on waiting. The daemon then serves that one client and exits when it leaves (or on
`shutdown`/`exit`); SIGTERM or SIGINT while it waits end it with 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import os
import secrets
import signal
import socket
import stat
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..jsonrpc_io import Frame, FrameError, FrameParser, encode
from ..protocol.wire import UNAUTHORIZED
from ..service.history import default_history_path

log = logging.getLogger(__name__)

TOKEN_BYTES = 32  # secrets.token_urlsafe(32): 43 characters, 256 bits
HANDSHAKE_TIMEOUT_S = 10.0  # for the first message to arrive complete
HANDSHAKE_MAX_BODY = 1024 * 1024  # an `initialize` is a few KiB
MAX_PENDING_HANDSHAKES = 8  # connections not yet admitted; more are closed at once

Session = Callable[[asyncio.StreamReader, asyncio.StreamWriter, bytes], Awaitable[int]]


# -- the token -------------------------------------------------------------------------------


def remote_folder() -> Path:
    """`remote/` in the user data folder (beside the history), private to the user."""
    folder = default_history_path().parent / "remote"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    if os.name == "posix":
        info = folder.lstat()
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            raise RemoteError(f"{folder} is not a folder of yours; not writing a token there")
        if stat.S_IMODE(info.st_mode) != 0o700:
            folder.chmod(0o700)
    return folder


class RemoteError(Exception):
    """The listener cannot be set up safely; the message says why."""


@dataclass(frozen=True, slots=True)
class TokenFile:
    token: str
    path: Path

    def remove(self) -> None:
        """Delete the file, unless another daemon on the same port has replaced it."""
        with contextlib.suppress(OSError):
            if self.path.read_text(encoding="ascii").strip() == self.token:
                self.path.unlink()


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def write_token(token: str, port: int, folder: Path | None = None) -> TokenFile:
    """`token` in `tcp-PORT.token`, created 0600 (never readable by anyone else)."""
    folder = remote_folder() if folder is None else folder
    path = folder / f"tcp-{port}.token"
    temporary = folder / f".tcp-{port}.token.{os.getpid()}"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    with contextlib.suppress(FileNotFoundError):
        temporary.unlink()
    fd = os.open(temporary, flags, 0o600)
    try:
        os.write(fd, token.encode("ascii") + b"\n")
    finally:
        os.close(fd)
    os.replace(temporary, path)
    return TokenFile(token, path)


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a first message does not admit its client, and the id to answer it with."""

    msg_id: int | str | None
    message: str


def check_first_message(item: Frame | FrameError, token: str) -> Refusal | None:
    """None when `item` is `initialize` with the right token; else the refusal."""
    if isinstance(item, FrameError):
        return Refusal(None, f"unauthorized: the first message must be initialize ({item.message})")
    try:
        message = json.loads(item.body)
    except (ValueError, RecursionError):
        return Refusal(None, "unauthorized: the first message must be initialize (not JSON)")
    if not isinstance(message, dict):
        return Refusal(None, "unauthorized: the first message must be initialize")
    msg_id = message.get("id")
    if not (isinstance(msg_id, int | str) and not isinstance(msg_id, bool)):
        msg_id = None
    if message.get("method") != "initialize" or msg_id is None:
        return Refusal(msg_id, "unauthorized: the first message must be the initialize request")
    params = message.get("params")
    options = params.get("initializationOptions") if isinstance(params, dict) else None
    given = options.get("token") if isinstance(options, dict) else None
    if not isinstance(given, str):
        return Refusal(
            msg_id,
            "unauthorized: this daemon listens on TCP and needs initializationOptions.token "
            "(the daemon printed the path of the file that holds it)",
        )
    if not hmac.compare_digest(given.encode("utf-8"), token.encode("utf-8")):
        return Refusal(msg_id, "unauthorized: wrong initializationOptions.token")
    return None


async def handshake(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, token: str
) -> bytes | None:
    """Read up to the first message; the bytes read when it admits the client, else None
    (the client has been answered and the connection closed)."""
    parser = FrameParser(max_body=HANDSHAKE_MAX_BODY)
    received = bytearray()
    items: list[Frame | FrameError] = []
    try:
        async with asyncio.timeout(HANDSHAKE_TIMEOUT_S):
            while not items:
                chunk = await reader.read(65536)
                if not chunk:  # closed without a message: a probe, never the client
                    writer.close()
                    return None
                received += chunk
                items = parser.feed(chunk)
    except TimeoutError:
        items = [FrameError(f"no complete message within {HANDSHAKE_TIMEOUT_S:g} s")]
    except (ConnectionError, OSError):
        writer.close()
        return None
    refusal = check_first_message(items[0], token)
    if refusal is None:
        return bytes(received)
    log.warning("refused a client (%s): %s", _peer(writer), refusal.message)
    error = {"code": UNAUTHORIZED, "message": refusal.message}
    body = {"jsonrpc": "2.0", "id": refusal.msg_id, "error": error}
    with contextlib.suppress(ConnectionError, OSError):
        writer.write(encode(json.dumps(body).encode("utf-8")))
        await writer.drain()
    writer.close()
    return None


async def first_words(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bytes | None:
    """A socket client's handshake: read until one complete message has arrived; the bytes
    read (for the session, which answers them all, noise before the message included), or
    None when the connection closed first, stayed silent past HANDSHAKE_TIMEOUT_S, or sent
    more than HANDSHAKE_MAX_BODY without one (it has been closed).

    Nothing is checked: the socket's file permissions already chose who may connect. This
    only keeps a connection that never speaks from being taken for the client."""
    parser = FrameParser(max_body=HANDSHAKE_MAX_BODY)
    received = bytearray()
    why = "closed without a message"
    try:
        async with asyncio.timeout(HANDSHAKE_TIMEOUT_S):
            while chunk := await reader.read(65536):
                received += chunk
                if any(isinstance(item, Frame) for item in parser.feed(chunk)):
                    return bytes(received)
                if len(received) > HANDSHAKE_MAX_BODY:
                    why = f"no complete message in its first {HANDSHAKE_MAX_BODY} bytes"
                    break
    except TimeoutError:
        why = f"no complete message within {HANDSHAKE_TIMEOUT_S:g} s"
    except (ConnectionError, OSError) as exc:
        why = f"the connection failed: {exc}"
    if received or why != "closed without a message":  # a bare connect-close is routine
        log.warning("closed a connection that did not speak the protocol: %s", why)
    writer.close()
    return None


def _peer(writer: asyncio.StreamWriter) -> str:
    peer = writer.get_extra_info("peername")
    return f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) and len(peer) >= 2 else str(peer)


# -- the Unix socket -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PrivateSocket:
    """A listening Unix socket and the file it made (its inode: ours to remove)."""

    listener: socket.socket
    path: Path
    inode: int

    def remove(self) -> None:
        """Unlink our socket file, not one another daemon has put there since."""
        with contextlib.suppress(OSError):
            info = self.path.lstat()
            if stat.S_ISSOCK(info.st_mode) and info.st_ino == self.inode:
                self.path.unlink()


def bind_private_socket(path: Path) -> PrivateSocket:
    """A listening Unix socket at `path`, 0600 from the moment it exists.

    A stale socket (nobody listening) is replaced; a live one, or anything that is not a
    socket, is refused rather than clobbered.
    """
    if not hasattr(socket, "AF_UNIX"):
        raise RemoteError("--socket needs Unix sockets, which this platform does not have")
    with contextlib.suppress(FileNotFoundError):
        if not stat.S_ISSOCK(path.lstat().st_mode):
            raise RemoteError(f"{path} exists and is not a socket; not replacing it")
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(str(path))
        except ConnectionRefusedError:
            try:
                path.unlink()  # left behind by a daemon that died
            except OSError as exc:  # e.g. another user's socket in a shared folder
                raise RemoteError(
                    f"{path} is a stale socket that cannot be removed ({exc.strerror}); "
                    "remove it or choose another path"
                ) from None
        except OSError as exc:
            raise RemoteError(f"{path} is a socket that cannot be checked: {exc}") from None
        else:
            raise RemoteError(f"a daemon already listens on {path}")
        finally:
            probe.close()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    # The umask makes the socket 0600 at bind time; the chmod is for file systems that
    # ignore it. (The umask is the process's: nothing else runs at this point of start-up.)
    previous = os.umask(0o177)
    try:
        listener.bind(str(path))
    except OSError as exc:
        listener.close()
        raise RemoteError(f"cannot create the socket {path}: {exc.strerror}") from None
    finally:
        os.umask(previous)
    os.chmod(path, 0o600)
    listener.listen(MAX_PENDING_HANDSHAKES)
    listener.setblocking(False)
    return PrivateSocket(listener, path, path.lstat().st_ino)


# -- serving ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TcpEndpoint:
    host: str
    port: int


@dataclass(frozen=True, slots=True)
class SocketEndpoint:
    path: Path


Endpoint = TcpEndpoint | SocketEndpoint


def parse_tcp_address(value: str) -> TcpEndpoint:
    host, _, port = value.rpartition(":")
    if not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"--tcp wants HOST:PORT, got {value!r}")
    return TcpEndpoint(host.strip("[]"), int(port))


async def serve_endpoint(endpoint: Endpoint, session: Session) -> int:
    """Listen, admit the first client that speaks (its first complete message; over TCP,
    `initialize` with the token), serve it with `session(reader, writer, bytes_already_read)`,
    and return its exit code.

    A connection that closes or stays silent before its first message is not the client: the
    daemon goes on waiting. SIGTERM/SIGINT while nobody is admitted end the daemon with 0.
    """
    loop = asyncio.get_running_loop()
    admitted: asyncio.Future[tuple[asyncio.StreamReader, asyncio.StreamWriter, bytes]] = (
        loop.create_future()
    )
    # Drawn before the port opens: a connection in the first instant must already need it.
    secret = new_token() if isinstance(endpoint, TcpEndpoint) else None
    token: TokenFile | None = None
    pending: list[asyncio.StreamWriter] = []  # connections in their handshake, oldest first
    stopping = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):  # before anyone can know we listen
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signum, stopping.set)

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if admitted.done():
            writer.close()  # one client per daemon: start another daemon for another client
            return
        if len(pending) >= MAX_PENDING_HANDSHAKES:
            # The oldest waiting connection makes room, not the newcomer: refusing the
            # newcomer let anyone who opens MAX_PENDING_HANDSHAKES silent connections (and
            # opens them again as they time out) keep the real client out for good.
            log.warning("too many connections waiting for their first message: dropped the oldest")
            pending.pop(0).close()
        pending.append(writer)
        try:
            if secret is not None:
                received = await handshake(reader, writer, secret)
            else:
                received = await first_words(reader, writer)
        finally:
            with contextlib.suppress(ValueError):
                pending.remove(writer)
        if received is None:
            return
        if admitted.done():
            writer.close()
            return
        admitted.set_result((reader, writer, received))

    private: PrivateSocket | None = None
    if isinstance(endpoint, SocketEndpoint):
        private = bind_private_socket(endpoint.path.absolute())
        server = await asyncio.start_unix_server(accept, sock=private.listener)
        where = f"unix socket {private.path}"
    else:
        server = await asyncio.start_server(accept, endpoint.host, endpoint.port)
        host, port = server.sockets[0].getsockname()[:2]
        try:
            token = write_token(secret or new_token(), port)
        except (OSError, RemoteError) as exc:
            server.close()
            raise RemoteError(f"cannot write the token file: {exc}") from None
        where = f"{host}:{port}"
    try:
        print(f"cleveragents: listening on {where}", file=sys.stderr, flush=True)
        if token is not None:
            print(
                f"cleveragents: token in {token.path} (readable by you alone); "
                "clients send it as initializationOptions.token",
                file=sys.stderr,
                flush=True,
            )
        stop_task = asyncio.ensure_future(stopping.wait())
        waiting: list[asyncio.Future[Any]] = [admitted, stop_task]
        await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        stop_task.cancel()
        server.close()  # nobody else gets in, and the socket file goes at once
        if private is not None:
            private.remove()
        if not admitted.done():
            admitted.cancel()
            return 0
        reader, writer, received = admitted.result()
        return await session(reader, writer, received)
    finally:
        if token is not None:
            token.remove()
        if private is not None:
            private.remove()
