"""A cgroup per command, where the daemon may make one: a process ceiling, a memory ceiling, and
a sure way to find and kill every process the command started.

Linux only. The daemon makes a child of its own cgroup in each hierarchy it can write to: cgroup
v1's `pids` and `memory` hierarchies (containers and CI machines often have these writable for
root), or cgroup v2 where the daemon's own cgroup already delegates `pids`/`memory` to children
(`cgroup.subtree_control`). Elsewhere (a desktop session, where systemd owns the tree) there is
no per-command cgroup: the rlimits still apply, and the timeout bounds the rest.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import threading
import time
from dataclasses import dataclass

log = logging.getLogger(__name__)

CGROUP_PREFIX = "cleveragents-"
CONTROLLERS = ("pids", "memory")
# A left-over cgroup (a daemon that was killed) is removed once it is older than the longest
# command could run; a younger one may belong to another daemon starting a command right now.
_STALE_AFTER_S = 3600.0
_EMPTY_WAIT_S = 3.0


@dataclass(frozen=True, slots=True)
class CgroupHome:
    """Where command cgroups for one controller go: `base` is a folder the daemon can write."""

    controller: str
    base: str
    version: int


@dataclass(frozen=True, slots=True)
class CgroupSupport:
    homes: tuple[CgroupHome, ...]
    reason: str  # why a controller is missing, for `cleveragents doctor`

    def home(self, controller: str) -> CgroupHome | None:
        return next((home for home in self.homes if home.controller == controller), None)


_support_lock = threading.Lock()
_support: CgroupSupport | None = None


def cgroup_support() -> CgroupSupport:
    """Find, once per process, the cgroup folders this daemon may create children in."""
    global _support
    with _support_lock:
        if _support is None:
            _support = discover_cgroups()
            for home in _support.homes:
                remove_stale_cgroups(home.base)
        return _support


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def _own_cgroups() -> tuple[dict[str, str], str | None]:
    """This process's cgroup path per v1 controller, and its v2 path (None when not on v2)."""
    v1: dict[str, str] = {}
    v2: str | None = None
    for line in _read("/proc/self/cgroup").splitlines():
        number, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if number == "0" and controllers == "":
            v2 = path
        for controller in controllers.split(","):
            v1[controller] = path
    return v1, v2


def _cgroup_mounts() -> list[tuple[str, str, str, set[str]]]:
    """(fstype, mount root, mount point, super options) of every cgroup file system."""
    mounts = []
    for line in _read("/proc/self/mountinfo").splitlines():
        fields = line.split()
        if "-" not in fields:
            continue
        dash = fields.index("-")
        fstype = fields[dash + 1]
        if fstype not in ("cgroup", "cgroup2"):
            continue
        options = set(fields[dash + 3].split(",")) if len(fields) > dash + 3 else set()
        mounts.append((fstype, fields[3], fields[4], options))
    return mounts


def _joined(mount_point: str, mount_root: str, path: str) -> str | None:
    """Where a cgroup path shows under a mount that may expose only a subtree."""
    if mount_root != "/":
        if not (path == mount_root or path.startswith(mount_root + "/")):
            return None
        path = path[len(mount_root) :]
    return os.path.join(mount_point, path.lstrip("/"))


def discover_cgroups() -> CgroupSupport:
    if not os.path.exists("/proc/self/cgroup"):
        return CgroupSupport((), "no cgroups on this system")
    try:
        v1_paths, v2_path = _own_cgroups()
        mounts = _cgroup_mounts()
    except OSError as exc:
        return CgroupSupport((), f"cannot read this process's cgroups: {exc}")
    homes: list[CgroupHome] = []
    missing: list[str] = []
    for controller in CONTROLLERS:
        home = None
        for fstype, root, point, options in mounts:
            if fstype == "cgroup" and controller in options and controller in v1_paths:
                folder = _joined(point, root, v1_paths[controller])
                if folder and os.path.isdir(folder) and os.access(folder, os.W_OK | os.X_OK):
                    home = CgroupHome(controller, folder, 1)
            elif fstype == "cgroup2" and v2_path is not None:
                folder = _joined(point, root, v2_path)
                if folder and _delegates(folder, controller):
                    home = CgroupHome(controller, folder, 2)
            if home is not None:
                break
        if home is None:
            missing.append(controller)
        else:
            homes.append(home)
    reason = (
        f"no writable cgroup for {', '.join(missing)} (the daemon may not create cgroups here)"
        if missing
        else ""
    )
    return CgroupSupport(tuple(homes), reason)


def _delegates(folder: str, controller: str) -> bool:
    try:
        enabled = _read(os.path.join(folder, "cgroup.subtree_control")).split()
    except OSError:
        return False
    return controller in enabled and os.access(folder, os.W_OK | os.X_OK)


def remove_stale_cgroups(base: str) -> None:
    now = time.time()
    try:
        entries = [entry for entry in os.scandir(base) if entry.name.startswith(CGROUP_PREFIX)]
    except OSError:
        return
    for entry in entries:
        with contextlib.suppress(OSError):
            if now - entry.stat().st_mtime > _STALE_AFTER_S:
                os.rmdir(entry.path)  # Fails, harmlessly, while processes are still inside.


class CommandCgroup:
    """The cgroup folders of one command: made before it starts, emptied and removed after."""

    def __init__(self, folders: dict[str, tuple[str, int]]) -> None:
        self.folders = folders  # controller -> (folder, version)

    @classmethod
    def create(
        cls, tag: str, max_processes: int | None, max_memory: int | None
    ) -> CommandCgroup | None:
        """A cgroup with the given ceilings, or None where no cgroup can be made here."""
        support = cgroup_support()
        folders: dict[str, tuple[str, int]] = {}
        made: list[str] = []
        try:
            for home in support.homes:
                folder = os.path.join(home.base, CGROUP_PREFIX + tag)
                if folder not in made:  # v2: one folder holds both controllers
                    os.mkdir(folder)
                    made.append(folder)
                folders[home.controller] = (folder, home.version)
                if home.controller == "pids" and max_processes is not None:
                    _write(os.path.join(folder, "pids.max"), str(max_processes))
                if home.controller == "memory" and max_memory is not None:
                    name = "memory.max" if home.version == 2 else "memory.limit_in_bytes"
                    _write(os.path.join(folder, name), str(max_memory))
        except OSError as exc:
            log.warning("cannot set up a cgroup for a command: %s", exc)
            for folder in reversed(made):
                with contextlib.suppress(OSError):
                    os.rmdir(folder)
            return None
        return cls(folders) if folders else None

    @property
    def procs_files(self) -> list[str]:
        """The files the command's first process writes its pid into, one per folder."""
        return sorted({os.path.join(folder, "cgroup.procs") for folder, _ in self.folders.values()})

    def _counter(self, controller: str, file: str, key: str) -> int:
        if controller not in self.folders:
            return 0
        try:
            text = _read(os.path.join(self.folders[controller][0], file))
        except OSError:
            return 0
        for line in text.splitlines():
            name, _, value = line.partition(" ")
            if name == key and value.strip().isdigit():
                return int(value)
        return 0

    def process_limit_hit(self) -> bool:
        """A fork or clone was refused because the process ceiling was reached."""
        return self._counter("pids", "pids.events", "max") > 0

    def memory_limit_hit(self) -> bool:
        """The kernel killed a process of the command for going over its memory ceiling."""
        if "memory" not in self.folders:
            return False
        version = self.folders["memory"][1]
        events = "memory.events" if version == 2 else "memory.oom_control"
        return self._counter("memory", events, "oom_kill") > 0

    def pids(self) -> set[int]:
        found: set[int] = set()
        for procs in self.procs_files:
            with contextlib.suppress(OSError, ValueError):
                found.update(int(line) for line in _read(procs).split())
        return found

    def kill_all(self) -> None:
        """SIGKILL every process in the cgroup; none can leave it, so none escapes."""
        for folder, version in self.folders.values():
            if version == 2 and os.path.exists(os.path.join(folder, "cgroup.kill")):
                with contextlib.suppress(OSError):
                    _write(os.path.join(folder, "cgroup.kill"), "1")
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)

    async def destroy(self) -> None:
        """Kill what is left (a fork bomb may still be forking) and remove the folders."""
        deadline = time.monotonic() + _EMPTY_WAIT_S
        while True:
            self.kill_all()
            if not self.pids() or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.02)
        for folder in sorted({folder for folder, _ in self.folders.values()}, reverse=True):
            while True:
                try:
                    os.rmdir(folder)
                    break
                except FileNotFoundError:
                    break
                except OSError as exc:
                    if time.monotonic() > deadline:
                        log.warning("cannot remove the command cgroup %s: %s", folder, exc)
                        break
                    await asyncio.sleep(0.02)


def _write(path: str, value: str) -> None:
    with open(path, "w", encoding="ascii") as handle:
        handle.write(value)
