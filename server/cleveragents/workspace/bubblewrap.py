"""bubblewrap: whether it works here, and the command line that gives a command its view.

The command runs in new user, mount, PID, network, IPC, UTS (and, where possible, cgroup)
namespaces with every capability dropped and no way to make further user namespaces: it can
neither mount, nor remount a read-only folder writable, nor reach a socket outside, and when its
shell exits every process it started dies with the PID namespace. Its filesystem is built from
nothing: only the mounts `command_mounts` lists exist inside. A seccomp filter
(`seccomp.DENIED_SYSCALLS`) refuses the calls no build needs.

Who it runs as (`command_identity`): a daemon that is not root gives commands its own uid. A
root daemon gives them the uid of the sandbox folder's owner when that is not root (switched
with `setpriv` before bubblewrap starts, so the uid is unprivileged outside the namespace as
well as in it); a sandbox root owns stays with uid 0, which outside the namespace is still
root: no capability, read-only /proc, no /sys and the seccomp filter are what hold it then.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, replace

from ..settings_table import ENV_BUBBLEWRAP, ENV_COMMAND_USER
from ..tool.serialization import register_shape
from .command_policy import (
    CommandPolicy,
    CommandView,
    Mount,
    command_mounts,
)
from .seccomp import SeccompStatus, filter_fd, seccomp_status

# Flags older bubblewrap releases lack; used when `bwrap --help` lists them.
OPTIONAL_FEATURES = ("--disable-userns", "--size")


@dataclass(frozen=True, slots=True)
class Confinement:
    """Whether commands can run under bubblewrap here, and why not when they cannot."""

    available: bool
    executable: str | None
    reason: str
    features: frozenset[str] = frozenset()


_probe_lock = threading.Lock()
_probe_results: dict[str, Confinement] = {}


def shell_executable() -> str:
    return shutil.which("bash") or "/bin/sh"


def locate_bubblewrap(setting: str) -> tuple[str | None, str]:
    """The bwrap program the setting names (`auto`, `none` or a path), or None and why not."""
    if setting == "none":
        return None, f"confinement is switched off ({ENV_BUBBLEWRAP}=none)"
    if setting == "auto":
        found = shutil.which("bwrap")
        return (found, "") if found else (None, "bubblewrap (bwrap) is not installed")
    if not (os.path.isabs(setting) and os.access(setting, os.X_OK) and os.path.isfile(setting)):
        return None, f"{ENV_BUBBLEWRAP}={setting} is not an executable file"
    return setting, ""


def bubblewrap_arguments(
    executable: str,
    view: CommandView,
    cwd: str,
    features: frozenset[str] = frozenset(),
    seccomp_fd: int | None = None,
) -> list[str]:
    """The bwrap command line that shows a command `view` and nothing else, starting in `cwd`.

    `seccomp_fd`: a descriptor holding the compiled seccomp filter (`seccomp.filter_fd`),
    which the caller passes on to bwrap; bwrap installs it just before it starts the command.
    """
    argv = [executable]
    for mount in view.mounts:
        if mount.kind == "ro":
            argv += ["--ro-bind", mount.path, mount.path]
        elif mount.kind == "rw":
            argv += ["--bind", mount.path, mount.path]
        elif mount.kind == "tmpfs":
            if mount.size is not None and "--size" in features:
                argv += ["--size", str(mount.size)]
            argv += ["--tmpfs", mount.path]
        elif mount.kind == "dev":
            argv += ["--dev", mount.path]
        elif mount.kind == "proc":
            argv += ["--proc", mount.path]
        elif mount.kind == "symlink":
            argv += ["--symlink", mount.source, mount.path]
        elif mount.source == "dir":  # hidden folder: an empty, read-only one in its place
            argv += ["--tmpfs", mount.path, "--remount-ro", mount.path]
        else:  # hidden file: the host's /dev/null, read-only, in its place
            argv += ["--ro-bind", "/dev/null", mount.path]
    argv += [
        "--unshare-user",
        *(["--disable-userns"] if "--disable-userns" in features else []),
        "--unshare-pid",
        "--unshare-net",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        # Root outside stays uid 0 inside, but without a single capability.
        "--cap-drop", "ALL",
        "--die-with-parent",
        *(["--seccomp", str(seccomp_fd)] if seccomp_fd is not None else []),
        "--chdir", cwd,
        "--",
    ]  # fmt: skip
    return argv


def bubblewrap_features(executable: str) -> frozenset[str]:
    try:
        result = subprocess.run(
            [executable, "--help"], capture_output=True, timeout=30, check=False, text=True
        )
    except (OSError, subprocess.TimeoutExpired):
        return frozenset()
    listed = result.stdout + result.stderr
    return frozenset(flag for flag in OPTIONAL_FEATURES if flag in listed)


def bubblewrap_status(setting: str = "auto") -> Confinement:
    """Probe once per process (and per setting) whether bubblewrap runs here."""
    with _probe_lock:
        if setting not in _probe_results:
            _probe_results[setting] = probe_bubblewrap(setting)
        return _probe_results[setting]


def probe_bubblewrap(setting: str = "auto") -> Confinement:
    """Run bwrap, with the arguments commands get, on a scratch folder: does it work here?"""
    executable, reason = locate_bubblewrap(setting)
    if executable is None:
        return Confinement(False, None, reason)
    features = bubblewrap_features(executable)
    with tempfile.TemporaryDirectory(prefix="cleveragents-bwrap-probe-") as probe_root:
        problem = try_wall(executable, features, probe_root)
    if problem is not None:
        return Confinement(False, executable, f"bubblewrap does not work here: {problem}")
    return Confinement(True, executable, "bubblewrap", features)


def try_wall(
    executable: str,
    features: frozenset[str],
    root: str,
    *,
    identity: CommandIdentity | None = None,
    seccomp_fd: int | None = None,
) -> str | None:
    """Run `true` behind the wall a command in `root` gets (as `identity`, with the filter in
    `seccomp_fd`): None when it works, else bwrap's own words for why not."""
    view = command_mounts(CommandPolicy(), root)
    switch: list[str] = []
    if identity is not None and identity.switched:
        view = view_for(view, identity)
        switch = switch_user_argv(identity.uid, identity.gid)
    argv = bubblewrap_arguments(executable, view, root, features, seccomp_fd)
    try:
        result = subprocess.run(
            [*switch, *argv, shell_executable(), "-c", "true"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=30,
            check=False,
            pass_fds=() if seccomp_fd is None else (seccomp_fd,),
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"it failed to start: {exc}"
    if result.returncode != 0:
        return (
            result.stderr.decode("utf-8", errors="replace").strip() or f"exit {result.returncode}"
        )
    return None


@dataclass(frozen=True, slots=True)
class CommandIdentity:
    """The uid and gid a confined command runs as, outside its namespace, and why."""

    uid: int
    gid: int
    switched: bool  # the daemon is root and switches to `uid` before bubblewrap starts
    reason: str


register_shape(CommandIdentity, rename={"reason": "why"})


# A switch to another uid without setpriv: the daemon's own interpreter does it.
_SWITCH_CODE = (
    "import os,sys;u,g=int(sys.argv[1]),int(sys.argv[2]);os.setgroups([]);os.setresgid(g,g,g);"
    "os.setresuid(u,u,u);os.execvp(sys.argv[3],sys.argv[3:])"
)
_switch_lock = threading.Lock()
_switch_results: dict[tuple[str, int, int, str], str] = {}


def switch_user_argv(uid: int, gid: int) -> list[str]:
    """The words that run the rest of a command line as `uid`:`gid`, no other group."""
    setpriv = shutil.which("setpriv")
    if setpriv is not None:
        return [setpriv, f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--"]
    return [sys.executable, "-I", "-S", "-c", _SWITCH_CODE, str(uid), str(gid)]


def command_identity(
    policy: CommandPolicy, sandbox_root: str, confinement: Confinement
) -> CommandIdentity:
    """Who a confined command in `sandbox_root` runs as (see the module's docstring)."""
    uid, gid = os.geteuid(), os.getegid()
    if uid != 0:
        return CommandIdentity(uid, gid, False, "the daemon's own user (not root)")
    if policy.command_user == "daemon":
        return CommandIdentity(0, 0, False, f"root without capabilities: {ENV_COMMAND_USER}=daemon")
    try:
        owner = os.stat(sandbox_root)
    except OSError as exc:
        return CommandIdentity(0, 0, False, f"root without capabilities: {exc.strerror}")
    if owner.st_uid == 0:
        return CommandIdentity(
            0,
            0,
            False,
            "root without capabilities: the sandbox folder belongs to root, and another uid "
            "could not write its files",
        )
    if not confinement.available or confinement.executable is None:
        return CommandIdentity(0, 0, False, "root: commands are not confined here")
    problem = _switch_problem(confinement, owner.st_uid, owner.st_gid, sandbox_root)
    if problem:
        return CommandIdentity(
            0, 0, False, f"root without capabilities: bubblewrap as uid {owner.st_uid} {problem}"
        )
    return CommandIdentity(owner.st_uid, owner.st_gid, True, "the owner of the sandbox folder")


def reachable_by(path: str, uid: int, gid: int) -> bool:
    """Whether `uid` (with `gid` and no other group) can read `path` and pass every folder
    above it, by the mode bits (ACLs are not read: a path they open is left out all the same).
    """
    current = "/"
    parts = [part for part in path.split("/") if part]
    for index, part in enumerate(["", *parts]):
        current = os.path.join(current, part) if part else "/"
        try:
            info = os.stat(current)
        except OSError:
            return False
        last = index == len(parts)
        need = 0o4 if last else 0o1
        if last and os.path.isdir(current):
            need |= 0o1
        if info.st_uid == uid:
            bits = (info.st_mode >> 6) & 0o7
        elif info.st_gid == gid:
            bits = (info.st_mode >> 3) & 0o7
        else:
            bits = info.st_mode & 0o7
        if bits & need != need:
            return False
    return True


def view_for(view: CommandView, identity: CommandIdentity) -> CommandView:
    """`view` without the read-only mounts the command's uid could not read anyway (bwrap,
    run as that uid, would fail on them): a root daemon's Python under /root, say."""
    if not identity.switched:
        return view
    mounts: list[Mount] = []
    refused = list(view.refused)
    for mount in view.mounts:
        if mount.kind == "ro" and not reachable_by(mount.path, identity.uid, identity.gid):
            refused.append(f"{mount.path}: not readable by uid {identity.uid}, left out")
            continue
        mounts.append(mount)
    return replace(view, mounts=tuple(mounts), refused=tuple(refused))


def _switch_problem(confinement: Confinement, uid: int, gid: int, sandbox_root: str) -> str:
    """Whether bubblewrap runs as `uid` here (user namespaces may be root's only): once."""
    assert confinement.executable is not None
    # Per sandbox too: the uid must reach this sandbox (a folder above it may be root's).
    key = (confinement.executable, uid, gid, os.path.realpath(sandbox_root))
    with _switch_lock:
        if key not in _switch_results:
            trial = CommandIdentity(uid, gid, True, "trial")
            problem = try_wall(
                confinement.executable, confinement.features, sandbox_root, identity=trial
            )
            _switch_results[key] = "" if problem is None else f"fails: {problem}"
        return _switch_results[key]


_seccomp_lock = threading.Lock()
_seccomp_results: dict[str, SeccompStatus] = {}


def command_seccomp(confinement: Confinement) -> SeccompStatus:
    """The seccomp filter confined commands get here, tried once with this bubblewrap."""
    compiled = seccomp_status()
    if not confinement.available or confinement.executable is None or not compiled.available:
        return compiled
    with _seccomp_lock:
        if confinement.executable not in _seccomp_results:
            _seccomp_results[confinement.executable] = _try_seccomp(confinement, compiled)
        return _seccomp_results[confinement.executable]


def _try_seccomp(confinement: Confinement, compiled: SeccompStatus) -> SeccompStatus:
    assert confinement.executable is not None
    fd = filter_fd(compiled.program)
    try:
        with tempfile.TemporaryDirectory(prefix="cleveragents-seccomp-probe-") as probe_root:
            problem = try_wall(
                confinement.executable, confinement.features, probe_root, seccomp_fd=fd
            )
    finally:
        os.close(fd)
    if problem is not None:
        return SeccompStatus(False, f"bubblewrap could not load the seccomp filter: {problem}")
    return compiled
