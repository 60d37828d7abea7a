"""run_command: a shell command in the sandbox, confined by bubblewrap where it works.

Under bubblewrap the whole filesystem is mounted read-only except the sandbox, /tmp is a private
tmpfs, there is no network (a new, empty network namespace) and a new PID namespace, so when the
command's shell exits every process it started dies with the namespace. Without bubblewrap the
command runs unconfined (the output says `"confined": false`): nothing stops it from touching
files or the network outside. Its process group is still killed when it ends, on timeout and on
cancellation, and so is any process that left the group (`setsid`) but still carries the
command's tag in its environment; one that also scrubs its environment escapes.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cleveragents.tool.errors import ToolError

from .limits import MAX_OUTPUT_BYTES
from .sandbox import Sandbox, SandboxPath, closing_fd, require_sandbox

DEFAULT_COMMAND_TIMEOUT_S = 120.0
MAX_COMMAND_TIMEOUT_S = 600.0
# After the shell exits (or is killed) its pipes should close at once; a process that left the
# group and kept them open is not waited for longer than this.
_PIPE_DRAIN_GRACE_S = 2.0
_READ_CHUNK = 64 * 1024
_TIMEOUT_TAIL_CHARS = 4000
COMMAND_TAG_VARIABLE = "CLEVERAGENTS_COMMAND_ID"
"""Set in each command's environment so strays that left its process group can be found."""
# Names of environment variables that likely hold credentials; a model's command never gets them.
_SECRET_NAME_PARTS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")


@dataclass(frozen=True, slots=True)
class Confinement:
    """Whether commands can run under bubblewrap here, and why not when they cannot."""

    available: bool
    executable: str | None
    reason: str


_probe_lock = threading.Lock()
_probe_result: Confinement | None = None


def shell_executable() -> str:
    return shutil.which("bash") or "/bin/sh"


def bubblewrap_arguments(executable: str, sandbox_root: str, cwd: str) -> list[str]:
    """The bwrap command line that confines one command to `sandbox_root`."""
    return [
        executable,
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--proc", "/proc",
        # The tmpfs goes before the sandbox bind: a sandbox under /tmp must stay visible.
        "--tmpfs", "/tmp",
        "--bind", sandbox_root, sandbox_root,
        "--unshare-net",
        "--unshare-pid",
        "--unshare-ipc",
        "--die-with-parent",
        "--chdir", cwd,
        "--",
    ]  # fmt: skip


def bubblewrap_status() -> Confinement:
    """Probe once per process whether bubblewrap runs here (it fails in some containers)."""
    global _probe_result
    with _probe_lock:
        if _probe_result is None:
            _probe_result = probe_bubblewrap()
        return _probe_result


def probe_bubblewrap() -> Confinement:
    """Run bwrap, with the arguments commands get, on a scratch folder: does it work here?"""
    executable = shutil.which("bwrap")
    if executable is None:
        return Confinement(False, None, "bubblewrap (bwrap) is not installed")
    with tempfile.TemporaryDirectory(prefix="cleveragents-bwrap-probe-") as probe_root:
        argv = [*bubblewrap_arguments(executable, probe_root, probe_root), shell_executable()]
        try:
            result = subprocess.run(
                [*argv, "-c", "true"],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=30,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return Confinement(False, executable, f"bubblewrap failed to start: {exc}")
    if result.returncode != 0:
        detail = result.stderr.decode("utf-8", errors="replace").strip()
        return Confinement(False, executable, f"bubblewrap does not work here: {detail}")
    return Confinement(True, executable, "bubblewrap")


def command_environment(confined: bool, tag: str) -> dict[str, str]:
    environment = {
        name: value
        for name, value in os.environ.items()
        if not any(part in name.upper() for part in _SECRET_NAME_PARTS)
    }
    environment.setdefault("PATH", os.defpath)
    environment[COMMAND_TAG_VARIABLE] = tag
    if confined:
        environment["TMPDIR"] = "/tmp"
    return environment


class CappedOutput:
    """Keeps the first and last halves of a stream once it passes the cap."""

    def __init__(self, cap: int = MAX_OUTPUT_BYTES) -> None:
        self.half = cap // 2
        self.cap = cap
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.half - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > self.half:
                del self.tail[: len(self.tail) - self.half]

    @property
    def truncated(self) -> bool:
        return self.total > self.cap

    def text(self) -> str:
        if not self.truncated:
            return (self.head + self.tail).decode("utf-8", errors="replace")
        head = self.head.decode("utf-8", errors="replace")
        tail = self.tail.decode("utf-8", errors="replace")
        omitted = self.total - len(self.head) - len(self.tail)
        return f"{head}\n[... {omitted} bytes of output omitted ...]\n{tail}"


class _OutputPipe:
    """A pipe the command writes into and we read from, closed by us when we are done.

    Our own pipes rather than asyncio's PIPE: asyncio's `Process.wait()` also waits for the
    pipes to close, which a background job holding them open would stretch to its whole life.
    """

    def __init__(self, echo: Callable[[bytes], None] | None = None) -> None:
        self.read_fd, self.write_fd = os.pipe()
        self.sink = CappedOutput()
        self._echo = echo  # also shown somewhere as it comes (a terminal), uncapped
        self._transport: asyncio.BaseTransport | None = None
        self._reader: asyncio.Task[None] | None = None

    def close_write_end(self) -> None:
        if self.write_fd != -1:
            os.close(self.write_fd)
            self.write_fd = -1

    async def start_reading(self) -> None:
        loop = asyncio.get_running_loop()
        stream = asyncio.StreamReader(loop=loop)
        pipe = os.fdopen(self.read_fd, "rb", buffering=0)
        self.read_fd = -1
        self._transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(stream, loop=loop), pipe
        )
        self._reader = asyncio.create_task(self._drain(stream))

    async def _drain(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(_READ_CHUNK):
            self.sink.feed(chunk)
            if self._echo is not None:
                self._echo(chunk)

    async def finish(self, grace_s: float) -> None:
        """Read until end of file, or for `grace_s` if a stray process keeps the pipe open."""
        if self._reader is not None:
            await asyncio.wait([self._reader], timeout=grace_s)
        self.close()
        if self._reader is not None:
            # Closing the transport ends the stream, so the reader returns promptly.
            await asyncio.wait([self._reader])

    def close(self) -> None:
        self.close_write_end()
        if self.read_fd != -1:
            os.close(self.read_fd)
            self.read_fd = -1
        if self._transport is not None:
            self._transport.close()


def kill_process_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def kill_tagged_processes(tag: str) -> None:
    """Kill processes that left the group (`setsid`) but still carry the command's tag.

    Best effort for unconfined commands: a process that also clears its environment escapes.
    """
    needle = f"{COMMAND_TAG_VARIABLE}={tag}".encode()
    for _ in range(3):  # Again, in case one forked while we looked.
        killed = False
        try:
            pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
        except OSError:
            return
        for pid in pids:
            if pid == os.getpid():
                continue
            try:
                with open(f"/proc/{pid}/environ", "rb") as environ:
                    variables = environ.read().split(b"\0")
            except OSError:
                continue
            if needle in variables:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
                    killed = True
        if not killed:
            return


def _kill_everything(pgid: int, tag: str, confined: bool) -> None:
    kill_process_group(pgid)
    if not confined:
        # Under bubblewrap the PID namespace dies with its first process: nothing can stray.
        kill_tagged_processes(tag)


async def _settle(process: asyncio.subprocess.Process, pipes: list[_OutputPipe]) -> None:
    """Reap the killed shell and take what is left in the pipes."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(process.wait(), _PIPE_DRAIN_GRACE_S)
    for pipe in pipes:
        await pipe.finish(_PIPE_DRAIN_GRACE_S)


def _tail(text: str) -> str:
    return text if len(text) <= _TIMEOUT_TAIL_CHARS else "…" + text[-_TIMEOUT_TAIL_CHARS:]


async def run_in_sandbox(
    command: str,
    sandbox: Sandbox,
    cwd: SandboxPath,
    timeout_s: float,
    *,
    confine: bool | None = None,
    echo: Callable[[bytes], None] | None = None,
    tag: str | None = None,
) -> dict[str, Any]:
    """Run `command` with `bash -c` in `cwd`; `confine=None` uses bubblewrap when it works.

    The command's process group is killed when the shell exits (background jobs do not
    outlive it), when `timeout_s` passes, and when this coroutine is cancelled. `echo` gets
    every chunk of output (stdout and stderr) as it comes; `tag` is the value the command's
    processes carry in their environment (a fresh one by default).
    """
    with closing_fd(sandbox.open_directory(cwd)):
        pass  # Checks that cwd is a real directory inside, reached without links.
    cwd_path = os.path.join(sandbox.root, *cwd.parts)
    status = await asyncio.to_thread(bubblewrap_status)
    confined = status.available if confine is None else confine
    if confined and (not status.available or status.executable is None):
        raise ToolError(f"confinement was required but {status.reason}")
    argv = [shell_executable(), "-c", command]
    if confined and status.executable is not None:
        argv = [*bubblewrap_arguments(status.executable, sandbox.root, cwd_path), *argv]
    tag = tag or secrets.token_hex(16)
    out_pipe, err_pipe = _OutputPipe(echo), _OutputPipe(echo)
    pipes = [out_pipe, err_pipe]
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=subprocess.DEVNULL,
            stdout=out_pipe.write_fd,
            stderr=err_pipe.write_fd,
            cwd=cwd_path,
            env=command_environment(confined, tag),
            start_new_session=True,
        )
    except BaseException:
        for pipe in pipes:
            pipe.close()
        raise
    timed_out = False
    try:
        for pipe in pipes:
            pipe.close_write_end()  # Only the command holds the write ends now.
            await pipe.start_reading()
        try:
            await asyncio.wait_for(process.wait(), timeout_s)
        except TimeoutError:
            timed_out = True
    except BaseException:
        # Cancelled (the run was stopped, or the runner's own timeout): nothing may survive.
        _kill_everything(process.pid, tag, confined)
        await _settle(process, pipes)
        raise
    # Background jobs do not outlive the command; under bubblewrap the PID namespace is gone
    # already, unconfined this is what stops them.
    _kill_everything(process.pid, tag, confined)
    await _settle(process, pipes)
    stdout, stderr = out_pipe.sink, err_pipe.sink
    if timed_out:
        raise ToolError(
            f"command timed out after {timeout_s:g} s and its processes were killed\n"
            f"--- stdout (end) ---\n{_tail(stdout.text())}\n"
            f"--- stderr (end) ---\n{_tail(stderr.text())}",
            kind="timeout",
        )
    result: dict[str, Any] = {
        "exit_code": process.returncode,
        "stdout": stdout.text(),
        "stderr": stderr.text(),
        "truncated": stdout.truncated or stderr.truncated,
        "confined": confined,
        "cwd": cwd.relative,
    }
    if not confined:
        result["confinement"] = (
            f"not confined ({status.reason}): the command could reach files and network "
            "outside the sandbox"
            if not status.available
            else "not confined: confinement was switched off for this call"
        )
    return result


async def run_command(
    command: str,
    cwd: str = ".",
    timeout_s: float = DEFAULT_COMMAND_TIMEOUT_S,
    sandbox_root: str | None = None,
) -> dict[str, Any]:
    """Run a shell command (bash -c) in the workspace and return its exit code and output.

    Where bubblewrap works, the command can write only inside the workspace (the rest of the
    filesystem is read-only), has a private /tmp and no network. Processes it leaves in the
    background are killed when it exits; on timeout everything it started is killed and the
    call fails. Environment variables whose names suggest secrets (KEY, TOKEN, SECRET,
    PASSWORD) are removed. Returns {exit_code, stdout, stderr, truncated, confined, cwd}:
    each stream keeps its first and last 512 KiB when longer than 1 MiB (truncated=true);
    confined=false means no sandbox confinement was available.

    Args:
        command: The shell command line to run.
        cwd: Folder to run in, relative to the workspace root (default: the root).
        timeout_s: Seconds before the command is killed (default 120, at most 600).
    """
    sandbox = require_sandbox(sandbox_root)
    check_command(command, timeout_s)
    return await run_in_sandbox(command, sandbox, sandbox.resolve(cwd), timeout_s)


def check_command(command: str, timeout_s: float) -> None:
    if not 0 < timeout_s <= MAX_COMMAND_TIMEOUT_S:
        raise ToolError(
            f"timeout_s must be more than 0 and at most {MAX_COMMAND_TIMEOUT_S:g}, got {timeout_s}"
        )
    if "\0" in command:
        raise ToolError("command contains a NUL byte")
