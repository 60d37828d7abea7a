"""bubblewrap: whether it works here, and the command line that gives a command its view.

The command runs in new user, mount, PID, network, IPC, UTS (and, where possible, cgroup)
namespaces with every capability dropped and no way to make further user namespaces: it can
neither mount, nor remount a read-only folder writable, nor reach a socket outside, and when its
shell exits every process it started dies with the PID namespace. Its filesystem is built from
nothing: only the mounts `command_mounts` lists exist inside.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass

from .command_policy import ENV_BUBBLEWRAP, CommandPolicy, CommandView, command_mounts

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
    executable: str, view: CommandView, cwd: str, features: frozenset[str] = frozenset()
) -> list[str]:
    """The bwrap command line that shows a command `view` and nothing else, starting in `cwd`."""
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
        view = command_mounts(CommandPolicy(), probe_root)
        argv = bubblewrap_arguments(executable, view, probe_root, features)
        try:
            result = subprocess.run(
                [*argv, shell_executable(), "-c", "true"],
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
    return Confinement(True, executable, "bubblewrap", features)
