"""run_command: a shell command in the sandbox, behind a wall of its own.

Where bubblewrap works, a command sees only what `command_mounts` lists: the system read-only,
the sandbox read-write, an empty private /tmp and home, the Python installation and any read
paths the user added; never the rest of the home folder, other projects or the never-visible
paths. It has no network, no capabilities, a seccomp filter (`seccomp.py`), read-only host
kernel knobs in /proc, and a new PID namespace, so when its shell exits every process it
started dies with the namespace; a root daemon runs a user's sandbox as that user
(`bubblewrap.command_identity`). The protected paths (`protected.py`: git hooks and config,
editor tasks) are read-only to it, and what it writes anywhere that would run code later (a new
repository's hooks or `core.fsmonitor`) is asked about or undone (`repository_guard.py`). It
gets only allow-listed environment variables, and runs under resource limits (rlimits, plus a
cgroup where the daemon can make one). Without bubblewrap the command runs unconfined (the
output says `"confined": false`, and the Authorizer asks before it runs): nothing stops it from
touching files or the network outside. Its process group is still killed when it ends, on
timeout and on cancellation, and so is every process in its cgroup, or without a cgroup every
process below its shell, found from the daemon as child subreaper (`process_sweep.py`), so a
daemonised grandchild (`setsid`) dies too.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shlex
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cleveragents.tool.errors import ToolError
from cleveragents.tool.policy import UnconfinedCode

from ..paths import default_history_path
from ..settings_table import (
    COMMAND_TAG_VARIABLE,
    ENV_ALLOW_UNCONFINED,
    ENV_BUBBLEWRAP,
    ENV_MAX_CPU_SECONDS,
    ENV_MAX_FILE_SIZE,
    ENV_MAX_MEMORY,
    ENV_MAX_PROCESSES,
    ENV_MIN_FREE_DISK,
)
from ..tool.lazy import lazy_exports
from .command_policy import (
    CommandPolicy,
    ResourceLimits,
    command_environment,
    command_mounts,
    human_size,
)
from .limits import MAX_OUTPUT_BYTES
from .names import shown_path
from .private import private_folder
from .process_sweep import become_subreaper, sweep_command
from .process_sweep import sweep_by_environment as kill_tagged_processes
from .protected import placeholders_kept
from .sandbox import Sandbox, SandboxPath, closing_fd, require_sandbox

if TYPE_CHECKING:
    from .bubblewrap import CommandIdentity, Confinement, bubblewrap_status, probe_bubblewrap
    from .cgroups import CommandCgroup

# The wall's parts (bubblewrap, seccomp, cgroups) are imported when a command first runs:
# registering run_command at start-up does not need them.
__getattr__ = lazy_exports(
    __name__,
    {
        "Confinement": ".bubblewrap",
        "bubblewrap_status": ".bubblewrap",
        "probe_bubblewrap": ".bubblewrap",
    },
)

_resource: Any
try:
    import resource as _resource
except ImportError:  # Windows: no rlimits at all
    _resource = None

DEFAULT_COMMAND_TIMEOUT_S = 120.0
MAX_COMMAND_TIMEOUT_S = 600.0
# After the shell exits (or is killed) its pipes should close at once; a process that left the
# group and kept them open is not waited for longer than this.
_PIPE_DRAIN_GRACE_S = 2.0
_READ_CHUNK = 64 * 1024
_TIMEOUT_TAIL_CHARS = 4000
# How often a running command's process ceiling and the free disk space are looked at.
_WATCH_INTERVAL_S = 0.25
# Free space may wobble by this much (other programs) before a low disk is blamed on a command.
_DISK_SLACK_BYTES = 64 * 1024 * 1024
# The limits launcher exits with this, after saying why on stderr, when it cannot set them.
_LAUNCH_FAILED = 125
_LAUNCH_MARKER = "cleveragents: cannot start the command:"
_CPU_GRACE_S = 5
# How a shell reports a job the kernel killed for a limit (strsignal of SIGXFSZ / SIGXCPU).
_SIGNAL_REPORT = re.compile(r"\d+\s+(File size|CPU time) limit exceeded")

__all__ = [
    "COMMAND_TAG_VARIABLE",
    "DEFAULT_COMMAND_TIMEOUT_S",
    "MAX_COMMAND_TIMEOUT_S",
    "CommandTool",
    "Confinement",
    "bubblewrap_status",
    "kill_tagged_processes",
    "probe_bubblewrap",
    "run_in_sandbox",
]


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


def _kill_everything(
    pgid: int, tag: str, confined: bool, cgroup: CommandCgroup | None, subreaper: bool
) -> None:
    if cgroup is None and not confined:
        # First, while a live shell still holds its tree together. Under bubblewrap the PID
        # namespace dies with its first process: nothing can stray.
        sweep_command(pgid, tag, subreaper=subreaper)
    kill_process_group(pgid)
    if cgroup is not None:
        cgroup.kill_all()  # Every process the command started is in it, and none can leave.


async def _settle(process: asyncio.subprocess.Process, pipes: list[_OutputPipe]) -> None:
    """Reap the killed shell and take what is left in the pipes."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(process.wait(), _PIPE_DRAIN_GRACE_S)
    for pipe in pipes:
        await pipe.finish(_PIPE_DRAIN_GRACE_S)


def _tail(text: str) -> str:
    return text if len(text) <= _TIMEOUT_TAIL_CHARS else "…" + text[-_TIMEOUT_TAIL_CHARS:]


def _user_task_count(uid: int) -> int:
    """Processes and threads the user runs now: RLIMIT_NPROC counts all of them, not ours."""
    count = 0
    try:
        entries = list(os.scandir("/proc"))
    except OSError:
        return 0
    for entry in entries:
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if entry.stat(follow_symlinks=False).st_uid == uid:
                count += len(os.listdir(f"/proc/{entry.name}/task"))
    return count


def process_rlimit(limits: ResourceLimits) -> int | None:
    """RLIMIT_NPROC for a command: what the user runs already plus the command's allowance.

    None for root (the kernel does not enforce it for uid 0) and where /proc cannot be counted.
    """
    if limits.max_processes is None or os.getuid() == 0 or not os.path.isdir("/proc/self/task"):
        return None
    return _user_task_count(os.getuid()) + limits.max_processes


def _within_own_limit(rlimit_name: str, wanted: int) -> int:
    """`wanted`, or the daemon's own hard limit when that is lower (it cannot be raised)."""
    if _resource is None:
        return wanted
    _, hard = _resource.getrlimit(getattr(_resource, rlimit_name))
    return wanted if hard == _resource.RLIM_INFINITY else min(wanted, int(hard))


def launcher_script(limits: ResourceLimits, nproc: int | None, procs_files: list[str]) -> str:
    """A few lines of shell that join the cgroup, set the rlimits, then exec the command.

    Each rlimit is set soft and hard: a process without CAP_SYS_RESOURCE (every confined one)
    cannot raise it again.
    """
    lines = [f'fail() {{ echo {shlex.quote(_LAUNCH_MARKER)} "$1" >&2; exit {_LAUNCH_FAILED}; }}']
    for procs in procs_files:
        lines.append(f"echo $$ > {shlex.quote(procs)} || fail 'cannot join its cgroup'")
    # bash's ulimit counts -f and -v in KiB, -t in seconds, -u in processes.
    settings = [
        ("-u", "RLIMIT_NPROC", nproc, 1, "processes", 0),
        ("-f", "RLIMIT_FSIZE", limits.max_file_size, 1024, "file size", 0),
        ("-v", "RLIMIT_AS", limits.max_address_space, 1024, "address space", 0),
        # CPU time: SIGXCPU at the soft limit (a clear "CPU time limit exceeded"), SIGKILL a
        # little later at the hard one for a process that ignores it.
        ("-t", "RLIMIT_CPU", limits.max_cpu_seconds, 1, "CPU time", _CPU_GRACE_S),
    ]
    # Linux sets every one of these; elsewhere (macOS refuses some, e.g. the address space)
    # they are best effort rather than a command that can never run.
    otherwise = "fail 'cannot limit its {}'" if sys.platform.startswith("linux") else "true"
    for flag, rlimit_name, value, unit, what, grace in settings:
        if value is None:
            continue
        hard = _within_own_limit(rlimit_name, value + grace * unit)
        soft = min(value, hard)
        lines.append(
            f"ulimit -S {flag} {max(1, soft // unit)} && ulimit -H {flag} {max(1, hard // unit)} "
            f"|| {otherwise.format(what)}"
        )
    lines.append('exec "$@"')
    return "\n".join(lines)


def _free_disk(path: str) -> int | None:
    try:
        stats = os.statvfs(path)
    except OSError:
        return None
    return stats.f_bavail * stats.f_frsize


async def _watch_limits(cgroup: CommandCgroup | None, disk_path: str, min_free: int | None) -> str:
    """Return when the command must be stopped: "processes" or "disk" (runs until cancelled)."""
    start_free = _free_disk(disk_path) if min_free is not None else None
    while True:
        await asyncio.sleep(_WATCH_INTERVAL_S)
        if cgroup is not None and cgroup.process_limit_hit():
            return "processes"
        if min_free is not None and start_free is not None:
            free = _free_disk(disk_path)
            if free is not None and free < min_free and free < start_free - _DISK_SLACK_BYTES:
                return "disk"


def _signal_number(name: str) -> int:
    return int(getattr(signal, name, -1000))  # -1000: no such signal here, no status matches


def _limits_hit(
    limits: ResourceLimits,
    stopped: str | None,
    cgroup: CommandCgroup | None,
    status: int | None,
    stderr: str,
) -> list[str]:
    """Each limit the command ran into, said with the setting that raises it.

    A file size or CPU time kill shows as the shell's status (128 + the signal) when it was the
    last command, or as the shell's report of a killed job on stderr when it was not.
    """
    reported = {match.group(1) for match in _SIGNAL_REPORT.finditer(stderr)}
    hit: list[str] = []
    if stopped == "processes" or (cgroup is not None and cgroup.process_limit_hit()):
        hit.append(
            f"it reached the process limit ({limits.max_processes} processes and threads) and "
            f"was stopped; raise it with {ENV_MAX_PROCESSES}"
        )
    if stopped == "disk":
        hit.append(
            f"the free space on the sandbox's disk fell below {human_size(limits.min_free_disk)} "
            f"and it was stopped; lower the reserve with {ENV_MIN_FREE_DISK}"
        )
    if cgroup is not None and cgroup.memory_limit_hit():
        hit.append(
            f"a process was killed for going over the memory limit "
            f"({human_size(limits.max_memory)}); raise it with {ENV_MAX_MEMORY}"
        )
    if status == 128 + _signal_number("SIGXFSZ") or "File size" in reported:
        hit.append(
            f"a process was killed for writing a file over the file size limit "
            f"({human_size(limits.max_file_size)}); raise it with {ENV_MAX_FILE_SIZE}"
        )
    if status == 128 + _signal_number("SIGXCPU") or "CPU time" in reported:
        hit.append(
            f"a process was killed for using more than {limits.max_cpu_seconds} s of CPU time; "
            f"raise it with {ENV_MAX_CPU_SECONDS}"
        )
    return hit


def _inside_folder(path: str, folder: str) -> bool:
    real = os.path.realpath(path)
    return folder == "/" or real == folder or real.startswith(folder.rstrip("/") + "/")


@dataclass(slots=True)
class _Prepared:
    """Everything decided before a command starts."""

    argv: list[str]
    environment: dict[str, str]
    confined: bool
    status: Confinement
    private_home: str | None  # unconfined: a temporary folder, removed afterwards
    # Descriptors the command's launcher inherits (the seccomp filter); closed once started.
    pass_fds: tuple[int, ...] = ()
    identity: CommandIdentity | None = None
    placeholders: tuple[str, ...] = ()  # removed after the command (protected paths)

    def close_fds(self) -> None:
        for fd in self.pass_fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.pass_fds = ()


def _prepare(
    command: str,
    sandbox: Sandbox,
    cwd_path: str,
    policy: CommandPolicy,
    confine: bool | None,
    tag: str,
    cgroup: CommandCgroup | None,
) -> _Prepared:
    """Runs in a worker thread: probing bubblewrap and listing the mounts touch the disk."""
    from .bubblewrap import (
        bubblewrap_arguments,
        bubblewrap_status,
        command_identity,
        command_seccomp,
        shell_executable,
        switch_user_argv,
        view_for,
    )
    from .seccomp import filter_fd

    status = bubblewrap_status(policy.bubblewrap)
    confined = status.available if confine is None else confine
    if confined and (not status.available or status.executable is None):
        raise ToolError(f"confinement was required but {status.reason}")
    data_folder = default_history_path().parent
    if _inside_folder(str(data_folder), sandbox.root):
        # Hidden only if it exists: else the command could make one (a planted checkpoint
        # store) that a later run with a history would trust.
        private_folder(data_folder, tighten=True)
    view = command_mounts(policy, sandbox.root)
    if view.sandbox_hidden_by is not None:
        raise ToolError(
            f"the sandbox lies inside {view.sandbox_hidden_by}, which commands may never see: "
            "run_command refuses to run there"
        )
    if view.private_exposed is not None:
        raise ToolError(
            f"the run history {view.private_exposed} lies directly in the sandbox folder, "
            "where a command could create its journal (-journal, -wal) before SQLite does and "
            "destroy the history: run_command refuses to run here. Keep the history in a "
            "folder of its own (--history .cleveragents/history.db) or outside the sandbox"
        )
    inner = [shell_executable(), "-c", command]
    private_home: str | None = None
    pass_fds: tuple[int, ...] = ()
    identity: CommandIdentity | None = None
    if confined and status.executable is not None:
        seccomp = command_seccomp(status)
        seccomp_fd = filter_fd(seccomp.program) if seccomp.available else None
        pass_fds = () if seccomp_fd is None else (seccomp_fd,)
        identity = command_identity(policy, sandbox.root, status)
        view = view_for(view, identity)
        switch = switch_user_argv(identity.uid, identity.gid) if identity.switched else []
        wall = bubblewrap_arguments(status.executable, view, cwd_path, status.features, seccomp_fd)
        argv = [*switch, *wall, *inner]
        environment = command_environment(policy, home=view.home, tmpdir="/tmp", tag=tag)
    else:
        import tempfile  # here, not at the top: a daemon's start-up loads this module (issue 21)

        private_home = tempfile.mkdtemp(prefix="cleveragents-home-")
        argv = inner
        environment = command_environment(
            policy, home=private_home, tmpdir=tempfile.gettempdir(), tag=tag
        )
    procs_files = cgroup.procs_files if cgroup is not None else []
    script = launcher_script(policy.limits, process_rlimit(policy.limits), procs_files)
    argv = [shell_executable(), "-c", script, "cleveragents-limits", *argv]
    return _Prepared(
        argv,
        environment,
        confined,
        status,
        private_home,
        pass_fds,
        identity,
        placeholders=view.placeholders if confined else (),
    )


async def run_in_sandbox(
    command: str,
    sandbox: Sandbox,
    cwd: SandboxPath,
    timeout_s: float,
    *,
    confine: bool | None = None,
    policy: CommandPolicy | None = None,
    echo: Callable[[bytes], None] | None = None,
    tag: str | None = None,
) -> dict[str, Any]:
    """Run `command` with `bash -c` in `cwd`; `confine=None` uses bubblewrap when it works.

    The command's processes are killed when the shell exits (background jobs do not outlive
    it), when `timeout_s` passes, when it runs into its process or disk limit, and when this
    coroutine is cancelled. `echo` gets every chunk of output (stdout and stderr) as it
    comes; `tag` is the value the command's processes carry in their environment (a fresh
    one by default).
    """
    with closing_fd(sandbox.open_directory(cwd)):
        pass  # Checks that cwd is a real directory inside, reached without links.
    cwd_path = os.path.join(sandbox.root, *cwd.parts)
    policy = policy if policy is not None else CommandPolicy.from_environment()
    limits = policy.limits
    tag = tag or os.urandom(16).hex()  # what secrets.token_hex does, without its imports
    from .cgroups import CommandCgroup

    cgroup = await asyncio.to_thread(
        CommandCgroup.create, tag, limits.max_processes, limits.max_memory
    )
    try:
        prepared = await asyncio.to_thread(
            _prepare, command, sandbox, cwd_path, policy, confine, tag, cgroup
        )
        try:
            with placeholders_kept(list(prepared.placeholders)):
                return await _run_prepared(
                    prepared, cwd, cwd_path, timeout_s, tag, cgroup, limits, sandbox.root, echo
                )
        finally:
            prepared.close_fds()
            if prepared.private_home is not None:
                import shutil  # here, not at the top: see `_prepare`'s tempfile

                shutil.rmtree(prepared.private_home, ignore_errors=True)
    finally:
        if cgroup is not None:
            await cgroup.destroy()


async def _run_prepared(
    prepared: _Prepared,
    cwd: SandboxPath,
    cwd_path: str,
    timeout_s: float,
    tag: str,
    cgroup: CommandCgroup | None,
    limits: ResourceLimits,
    disk_path: str,
    echo: Callable[[bytes], None] | None,
) -> dict[str, Any]:
    confined = prepared.confined
    out_pipe, err_pipe = _OutputPipe(echo), _OutputPipe(echo)
    pipes = [out_pipe, err_pipe]
    # Before it starts: an orphan of the command is then reparented to us, where the sweep
    # finds it without reading every process on the machine (process_sweep.py).
    subreaper = not confined and cgroup is None and become_subreaper()
    try:
        process = await asyncio.create_subprocess_exec(
            *prepared.argv,
            stdin=subprocess.DEVNULL,
            stdout=out_pipe.write_fd,
            stderr=err_pipe.write_fd,
            cwd=cwd_path,
            env=prepared.environment,
            start_new_session=True,
            pass_fds=prepared.pass_fds,
        )
    except BaseException:
        for pipe in pipes:
            pipe.close()
        raise
    finally:
        prepared.close_fds()  # The launcher holds its own copy now.
    timed_out = False
    stopped: str | None = None
    waiter = asyncio.ensure_future(process.wait())
    watcher = asyncio.ensure_future(_watch_limits(cgroup, disk_path, limits.min_free_disk))
    try:
        for pipe in pipes:
            pipe.close_write_end()  # Only the command holds the write ends now.
            await pipe.start_reading()
        done, _ = await asyncio.wait(
            [waiter, watcher], timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED
        )
        if watcher in done:
            stopped = watcher.result()
        elif not done:
            timed_out = True
    except BaseException:
        # Cancelled (the run was stopped, or the runner's own timeout): nothing may survive.
        _kill_everything(process.pid, tag, confined, cgroup, subreaper)
        await _settle(process, pipes)
        waiter.cancel()
        raise
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
    # Background jobs do not outlive the command; under bubblewrap the PID namespace is gone
    # already, unconfined this is what stops them.
    _kill_everything(process.pid, tag, confined, cgroup, subreaper)
    await _settle(process, pipes)
    waiter.cancel()
    stdout, stderr = out_pipe.sink, err_pipe.sink
    status = process.returncode
    if status is not None and status < 0:
        status = 128 - status  # Killed by a signal, as a shell would report it.
    if status == _LAUNCH_FAILED and _LAUNCH_MARKER in stderr.text():
        raise ToolError(stderr.text().strip())
    hit = _limits_hit(limits, stopped, cgroup, None if timed_out else status, stderr.text())
    if timed_out or hit:
        why = f"timed out after {timeout_s:g} s" if timed_out else "ran into a resource limit"
        details = "".join(f"\n- {line}" for line in hit)
        raise ToolError(
            f"command {why} and its processes were killed{details}\n"
            f"--- stdout (end) ---\n{_tail(stdout.text())}\n"
            f"--- stderr (end) ---\n{_tail(stderr.text())}",
            kind="timeout" if timed_out else "execution_error",
        )
    result: dict[str, Any] = {
        "exit_code": process.returncode,
        "stdout": stdout.text(),
        "stderr": stderr.text(),
        "truncated": stdout.truncated or stderr.truncated,
        "confined": confined,
        "cwd": shown_path(cwd.relative),  # C-quoted when not plain text (names.py)
    }
    if not confined:
        result["confinement"] = (
            f"not confined ({prepared.status.reason}): the command could reach files and "
            "network outside the sandbox"
            if not prepared.status.available
            else "not confined: confinement was switched off for this call"
        )
    return result


class CommandTool:
    """`run_command` bound to one CommandPolicy (the daemon's, the CLI's, or the environment's)."""

    def __init__(self, policy: CommandPolicy | None = None) -> None:
        self.policy = policy if policy is not None else CommandPolicy.from_environment()

    async def unconfined_code(self) -> UnconfinedCode | None:
        """For the Authorizer: None when commands run under bubblewrap, else why they cannot."""
        from .bubblewrap import bubblewrap_status

        status = await asyncio.to_thread(bubblewrap_status, self.policy.bubblewrap)
        if status.available:
            return None
        return UnconfinedCode(
            f"{status.reason}. Install bubblewrap, or allow unconfined commands under "
            f"full-auto with {ENV_ALLOW_UNCONFINED}=1 (confinement setting: "
            f"{ENV_BUBBLEWRAP}={self.policy.bubblewrap})",
            allowed_under_full_auto=self.policy.allow_unconfined,
        )

    async def run_command(
        self,
        command: str,
        cwd: str = ".",
        timeout_s: float = DEFAULT_COMMAND_TIMEOUT_S,
        sandbox_root: str | None = None,
    ) -> dict[str, Any]:
        """Run a shell command (bash -c) in the workspace and return its exit code and output.

        Where bubblewrap works, the command sees the system read-only, the workspace
        read-write, an empty private /tmp and home folder, and nothing else of the machine (no
        other projects, no credentials); it has no network. Only basic environment variables
        (PATH, HOME, LANG, TERM, ...) reach it. Processes it leaves in the background are
        killed when it exits; on timeout, or when it runs into a resource limit (processes,
        file size, memory, CPU time, disk space), everything it started is killed and the call
        fails. Returns {exit_code, stdout, stderr, truncated, confined, cwd}: each stream
        keeps its first and last 512 KiB when longer than 1 MiB (truncated=true);
        confined=false means no sandbox confinement was available.

        Args:
            command: The shell command line to run.
            cwd: Folder to run in, relative to the workspace root (default: the root).
            timeout_s: Seconds before the command is killed (default 120, at most 600).
        """
        sandbox = require_sandbox(sandbox_root)
        check_command(command, timeout_s)
        where = sandbox.resolve(cwd)
        # Imported by the first command, not with the tools: a daemon's `initialize` builds
        # the registry and need not load the scanner (issue 21's cold start).
        from .repository_guard import guard_command

        return await guard_command(
            sandbox.root,
            self.policy.allow_protected_writes,
            lambda: run_in_sandbox(command, sandbox, where, timeout_s, policy=self.policy),
        )


def check_command(command: str, timeout_s: float) -> None:
    """run_command's own checks of its arguments, before anything runs."""
    if not 0 < timeout_s <= MAX_COMMAND_TIMEOUT_S:
        raise ToolError(
            f"timeout_s must be more than 0 and at most {MAX_COMMAND_TIMEOUT_S:g}, got {timeout_s}"
        )
    if "\0" in command:
        raise ToolError("command contains a NUL byte")
