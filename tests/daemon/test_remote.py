"""Remote use through the real daemon: `--tcp` admits only a client with the token,
`--socket` is a private (0600) Unix socket, and neither clobbers what it should not."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import stat
from pathlib import Path
from typing import Any

import pytest

from cleveragents.daemon import remote
from cleveragents.jsonrpc_io import Frame, FrameError, encode
from cleveragents.protocol import wire
from support.daemon_support import (
    WAIT_S,
    call,
    daemon_command,
    daemon_env,
    frame,
    replay_options,
    write_script,
)

unix_only = pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="needs Unix sockets")


class Listening:
    """A daemon started with `--tcp` or `--socket`, and what it said on stderr."""

    def __init__(self, process: asyncio.subprocess.Process, lines: list[str]) -> None:
        self.process = process
        self.lines = lines

    @classmethod
    async def start(cls, home: Path, *transport: str, lines: int = 1) -> Listening:
        command = daemon_command(home / "history.sqlite3")
        at = command.index("--stdio")
        command[at : at + 1] = transport
        process = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
            env=daemon_env(home),
        )
        assert process.stderr is not None
        said = []
        for _ in range(lines):
            said.append((await asyncio.wait_for(process.stderr.readline(), WAIT_S)).decode())
        return cls(process, said)

    @property
    def port(self) -> int:
        assert self.lines[0].startswith("cleveragents: listening on 127.0.0.1:"), self.lines
        return int(self.lines[0].strip().rsplit(":", 1)[1])

    @property
    def token_file(self) -> Path:
        assert "token in " in self.lines[1], self.lines
        return Path(self.lines[1].split("token in ", 1)[1].split(" (", 1)[0])

    async def wait(self) -> int:
        return await asyncio.wait_for(self.process.wait(), WAIT_S)

    async def stderr(self) -> str:
        assert self.process.stderr is not None
        return (await asyncio.wait_for(self.process.stderr.read(), WAIT_S)).decode()

    async def kill(self) -> None:
        if self.process.returncode is None:
            self.process.kill()
            await self.process.wait()


class Peer:
    """A client connection with hand-written framing."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def tcp(cls, port: int) -> Peer:
        return cls(*await asyncio.open_connection("127.0.0.1", port))

    @classmethod
    async def unix(cls, path: Path) -> Peer:
        return cls(*await asyncio.open_unix_connection(str(path)))

    async def send(self, data: bytes | dict[str, Any]) -> None:
        self.writer.write(data if isinstance(data, bytes) else frame(json.dumps(data)))
        await self.writer.drain()

    async def receive(self) -> dict[str, Any] | None:
        """The next message, or None when the daemon has closed the connection."""

        async def read() -> dict[str, Any] | None:
            headers: dict[str, str] = {}
            while (line := await self.reader.readline()) != b"\r\n":
                if not line:
                    return None
                name, _, value = line.decode().partition(":")
                headers[name.strip().lower()] = value.strip()
            message: dict[str, Any] = json.loads(
                await self.reader.readexactly(int(headers["content-length"]))
            )
            return message

        return await asyncio.wait_for(read(), WAIT_S)

    async def exchange(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """Send; for a request, the answer with its id (notifications on the way skipped)."""
        await self.send(message)
        if "id" not in message:
            return None
        while (reply := await self.receive()) is not None:
            if reply.get("id") == message["id"] and "method" not in reply:
                return reply
        raise AssertionError(f"the daemon closed the connection instead of answering {message}")

    def close(self) -> None:
        self.writer.close()


def initialize(options: dict[str, Any] | None, msg_id: int = 1) -> dict[str, Any]:
    params = {"processId": None, "capabilities": {}, "initializationOptions": options}
    return {"jsonrpc": "2.0", "id": msg_id, "method": "initialize", "params": params}


async def full_session(peer: Peer, options: dict[str, Any], sandbox: Path) -> None:
    """initialize, a run that calls a tool, shutdown, exit: all answered."""
    init = await peer.exchange(initialize(options))
    assert init is not None and "result" in init, init
    await peer.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    answer = await peer.exchange(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "cleveragents/run",
            "params": {"prompt": "go", "sandboxRoot": str(sandbox)},
        }
    )
    assert answer is not None and answer["result"]["content"] == "Done.", answer
    assert [r["toolName"] for r in answer["result"]["toolCallHistory"]] == ["pause"]
    await peer.exchange({"jsonrpc": "2.0", "id": 3, "method": "shutdown"})
    await peer.send({"jsonrpc": "2.0", "method": "exit"})


def script(tmp_path: Path) -> str:
    return write_script(
        tmp_path / "script.json",
        {"text": "Pausing.", "tool_calls": [call("pause", seconds=0.01, label="x")]},
        {"text": "Done."},
    )


# -- TCP -------------------------------------------------------------------------------------

FIRST_MESSAGES: list[tuple[str, Any, Any]] = [
    ("initialize without options", initialize(None, 7), 7),
    ("initialize without a token", initialize({"provider": "replay"}, 7), 7),
    ("a wrong token", initialize({"token": "not-the-token"}, 7), 7),
    ("a token that is not a string", initialize({"token": 12345}, 7), 7),
    (
        "another request first",
        {"jsonrpc": "2.0", "id": 7, "method": "cleveragents/tools", "params": {}},
        7,
    ),
    ("a notification first", {"jsonrpc": "2.0", "method": "initialized", "params": {}}, None),
    ("garbage first", b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", None),
    ("a body that is not JSON", frame(b"{nope"), None),
]


@pytest.mark.parametrize(
    ("label", "first", "reply_id"), FIRST_MESSAGES, ids=[m[0] for m in FIRST_MESSAGES]
)
async def test_a_tcp_client_without_the_token_is_refused_and_closed(
    tmp_path: Path, sandbox: Path, label: str, first: Any, reply_id: Any
) -> None:
    daemon = await Listening.start(tmp_path, "--tcp", "127.0.0.1:0", lines=2)
    try:
        intruder = await Peer.tcp(daemon.port)
        await intruder.send(first)
        refusal = await intruder.receive()
        assert refusal is not None and refusal["id"] == reply_id, refusal
        assert refusal["error"]["code"] == wire.UNAUTHORIZED
        assert refusal["error"]["message"].startswith("unauthorized")
        assert await intruder.receive() is None  # and the connection is closed
        intruder.close()
        # The daemon still waits for its real client, which gets in with the token.
        token = daemon.token_file.read_text().strip()
        owner = await Peer.tcp(daemon.port)
        await full_session(owner, replay_options(script(tmp_path), token=token), sandbox)
        assert await daemon.wait() == 0
        owner.close()
        assert "refused a client" in await daemon.stderr()
    finally:
        await daemon.kill()


async def test_the_token_file_is_private_and_goes_with_the_daemon(tmp_path: Path) -> None:
    daemon = await Listening.start(tmp_path, "--tcp", "127.0.0.1:0", lines=2)
    try:
        path = daemon.token_file
        assert path.parent == tmp_path / "data" / "cleveragents" / "remote"
        assert path.name == f"tcp-{daemon.port}.token"
        if os.name == "posix":
            assert stat.S_IMODE(path.stat().st_mode) == 0o600
            assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        assert len(path.read_text().strip()) >= 43  # token_urlsafe(32)
        daemon.process.send_signal(signal.SIGTERM)  # while nobody is connected
        assert await daemon.wait() == 0
        assert not path.exists()
    finally:
        await daemon.kill()


async def test_a_second_tcp_client_is_closed_while_the_first_is_served(
    tmp_path: Path, sandbox: Path
) -> None:
    daemon = await Listening.start(tmp_path, "--tcp", "127.0.0.1:0", lines=2)
    try:
        token = daemon.token_file.read_text().strip()
        owner = await Peer.tcp(daemon.port)
        init = await owner.exchange(initialize(replay_options(script(tmp_path), token=token)))
        assert init is not None and "result" in init
        with pytest.raises(ConnectionRefusedError):  # the listener closed at the admission
            await Peer.tcp(daemon.port)
        await owner.exchange({"jsonrpc": "2.0", "id": 3, "method": "shutdown"})
        await owner.send({"jsonrpc": "2.0", "method": "exit"})
        assert await daemon.wait() == 0
    finally:
        await daemon.kill()


async def test_silent_connections_do_not_keep_the_real_client_out(
    tmp_path: Path, sandbox: Path
) -> None:
    """Found open: with as many silent connections as the handshake bound (any local user can
    open them, and open them again every 10 s), the real client was closed without a word:
    the daemon could not be reached for as long as the squatter kept at it. Now the oldest
    waiting connection is dropped to make room, and the real client gets in."""
    daemon = await Listening.start(tmp_path, "--tcp", "127.0.0.1:0", lines=2)
    squatters: list[Peer] = []
    try:
        token = daemon.token_file.read_text().strip()
        squatters = [await Peer.tcp(daemon.port) for _ in range(remote.MAX_PENDING_HANDSHAKES + 3)]
        owner = await Peer.tcp(daemon.port)
        await full_session(owner, replay_options(script(tmp_path), token=token), sandbox)
        assert await daemon.wait() == 0
        owner.close()
        # The squatters were closed (refused, if one waited out the handshake), never served.
        for squatter in squatters:
            while (message := await squatter.receive()) is not None:
                assert message["error"]["code"] == wire.UNAUTHORIZED, message
    finally:
        for squatter in squatters:
            squatter.close()
        await daemon.kill()


# -- the Unix socket -------------------------------------------------------------------------


@unix_only
async def test_a_unix_socket_is_0600_and_serves_without_a_token(
    tmp_path: Path, sandbox: Path
) -> None:
    path = tmp_path / "daemon.sock"
    daemon = await Listening.start(tmp_path, "--socket", str(path))
    try:
        assert daemon.lines[0].strip() == f"cleveragents: listening on unix socket {path}"
        info = path.lstat()
        assert stat.S_ISSOCK(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o600
        peer = await Peer.unix(path)
        await full_session(peer, replay_options(script(tmp_path)), sandbox)
        assert await daemon.wait() == 0
        peer.close()
        assert not path.exists()  # removed once its client was admitted
    finally:
        await daemon.kill()


@unix_only
async def test_the_socket_never_replaces_a_file_that_is_not_a_socket(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("keep me\n")
    daemon = await Listening.start(tmp_path, "--socket", str(path))
    try:
        assert await daemon.wait() == 2
        assert "exists and is not a socket" in daemon.lines[0] + await daemon.stderr()
        assert path.read_text() == "keep me\n"
    finally:
        await daemon.kill()


@unix_only
async def test_the_socket_of_a_live_daemon_is_not_taken_but_a_stale_one_is(
    tmp_path: Path, sandbox: Path
) -> None:
    path = tmp_path / "daemon.sock"
    live = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    live.bind(str(path))
    live.listen(1)
    try:
        daemon = await Listening.start(tmp_path, "--socket", str(path))
        try:
            assert await daemon.wait() == 2
            assert "already listens" in daemon.lines[0] + await daemon.stderr()
        finally:
            await daemon.kill()
    finally:
        live.close()  # the file stays behind, as after a crash: stale
    assert stat.S_ISSOCK(path.lstat().st_mode)
    daemon = await Listening.start(tmp_path, "--socket", str(path))
    try:
        peer = await Peer.unix(path)
        await full_session(peer, replay_options(script(tmp_path)), sandbox)
        assert await daemon.wait() == 0
        peer.close()
    finally:
        await daemon.kill()


def connect_and_close(address: str | tuple[str, int]) -> None:
    """A liveness probe or a port scan: connect, then close without a byte."""
    family = socket.AF_UNIX if isinstance(address, str) else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.connect(address)


@unix_only
async def test_a_second_start_and_a_probe_leave_a_waiting_socket_daemon_serving(
    tmp_path: Path, sandbox: Path
) -> None:
    """Found open (issue 17): a second `serve --socket` on a live daemon's socket was refused,
    but its liveness probe was taken by the waiting daemon as its one client, which then
    removed its socket and exited 1, taking down a daemon waiting for its `ssh -L` client."""
    path = tmp_path / "daemon.sock"
    daemon = await Listening.start(tmp_path, "--socket", str(path))
    try:
        other_home = tmp_path / "second"
        other_home.mkdir()
        second = await Listening.start(other_home, "--socket", str(path))
        try:
            assert await second.wait() == 2
            assert "already listens" in second.lines[0] + await second.stderr()
        finally:
            await second.kill()
        for _ in range(3):
            connect_and_close(str(path))
        assert daemon.process.returncode is None and stat.S_ISSOCK(path.lstat().st_mode)
        # Still waiting, and the real client is served (the probes were accepted before it).
        peer = await Peer.unix(path)
        await full_session(peer, replay_options(script(tmp_path)), sandbox)
        assert await daemon.wait() == 0
        peer.close()
    finally:
        await daemon.kill()


async def test_a_tcp_daemon_outlives_connect_and_close_probes(
    tmp_path: Path, sandbox: Path
) -> None:
    daemon = await Listening.start(tmp_path, "--tcp", "127.0.0.1:0", lines=2)
    try:
        for _ in range(3):
            connect_and_close(("127.0.0.1", daemon.port))
        owner = await Peer.tcp(daemon.port)
        token = daemon.token_file.read_text().strip()
        await full_session(owner, replay_options(script(tmp_path), token=token), sandbox)
        assert await daemon.wait() == 0
        owner.close()
    finally:
        await daemon.kill()


@unix_only
async def test_a_socket_client_is_admitted_only_once_it_sends_a_message(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Over a socket, no token: the first complete message admits, with every byte read so far
    (noise before it included) handed to the session; closing first, or staying silent past
    the handshake timeout, is not being the client."""
    monkeypatch.setattr(remote, "HANDSHAKE_TIMEOUT_S", 0.2)
    admitted: list[bytes] = []

    async def session(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter, received: bytes
    ) -> int:
        admitted.append(received)
        writer.close()
        return 7

    path = tmp_path / "d.sock"
    serving = asyncio.ensure_future(remote.serve_endpoint(remote.SocketEndpoint(path), session))
    while not path.exists():
        await asyncio.sleep(0.01)
    connect_and_close(str(path))
    silent = await Peer.unix(path)
    assert await silent.receive() is None  # closed at the timeout, without being served
    half = await Peer.unix(path)
    await half.send(b"Content-Length: 40\r\n\r\n{")  # an unfinished message: not yet
    assert await half.receive() is None
    owner = await Peer.unix(path)
    first = b"noise\r\n" + encode(json.dumps(initialize(None)).encode())
    await owner.send(first)
    assert await asyncio.wait_for(serving, WAIT_S) == 7
    assert admitted == [first] and not path.exists()


# -- the checks themselves -------------------------------------------------------------------


def body(message: Any) -> Frame:
    return Frame(json.dumps(message).encode())


def test_only_initialize_with_the_exact_token_is_admitted() -> None:
    token = "s3cret-token"
    assert remote.check_first_message(body(initialize({"token": token})), token) is None
    for wrong in ["s3cret-toke", "s3cret-token ", "S3CRET-TOKEN", "", "s3cret-tokén"]:
        refusal = remote.check_first_message(body(initialize({"token": wrong})), token)
        assert refusal is not None and refusal.msg_id == 1, wrong
    refusal = remote.check_first_message(FrameError("a header line is too long"), token)
    assert refusal is not None and refusal.msg_id is None
    no_id = {"jsonrpc": "2.0", "method": "initialize", "params": {}}
    assert remote.check_first_message(body(no_id), token) is not None


async def test_a_client_that_sends_nothing_is_refused_after_the_handshake_timeout(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(remote, "HANDSHAKE_TIMEOUT_S", 0.2)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    admitted: list[bytes] = []

    async def session(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter, received: bytes
    ) -> int:
        admitted.append(received)
        writer.close()
        return 5

    serving = asyncio.ensure_future(
        remote.serve_endpoint(remote.TcpEndpoint("127.0.0.1", 0), session)
    )
    folder = tmp_path / "data" / "cleveragents" / "remote"
    while not list(folder.glob("tcp-*.token")):
        await asyncio.sleep(0.01)
    token_file = next(folder.glob("tcp-*.token"))
    port = int(token_file.name.removeprefix("tcp-").removesuffix(".token"))
    silent = await Peer.tcp(port)
    refusal = await silent.receive()
    assert refusal is not None and "no complete message" in refusal["error"]["message"]
    assert await silent.receive() is None
    owner = await Peer.tcp(port)
    first = encode(json.dumps(initialize({"token": token_file.read_text().strip()})).encode())
    await owner.send(first + b"Content-Length: 2\r\n\r\n{}")
    assert await asyncio.wait_for(serving, WAIT_S) == 5
    assert len(admitted) == 1 and admitted[0].startswith(first)  # handed on to the session
    assert not token_file.exists()


async def test_a_token_over_stdio_is_accepted_and_ignored(tmp_path: Path, sandbox: Path) -> None:
    from support.daemon_support import RawDaemon

    raw = await RawDaemon.start(tmp_path)
    try:
        await raw.initialize(replay_options(script(tmp_path), token="whatever"))
        answer = await raw.request(
            "cleveragents/run", {"prompt": "go", "sandboxRoot": str(sandbox)}
        )
        assert answer["result"]["content"] == "Done.", answer
        assert await raw.close() == 1
    finally:
        raw.kill()


@unix_only
def test_a_stale_socket_that_cannot_be_removed_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cleveragents.daemon.remote import RemoteError, bind_private_socket

    path = tmp_path / "daemon.sock"
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(path))
    stale.close()  # nobody listens: stale

    def refuse(self: Path, missing_ok: bool = False) -> None:
        # What another user's socket in a shared sticky folder answers (root is never refused).
        raise PermissionError(1, "Operation not permitted", str(self))

    monkeypatch.setattr(Path, "unlink", refuse)
    with pytest.raises(RemoteError, match="stale socket that cannot be removed"):
        bind_private_socket(path)
