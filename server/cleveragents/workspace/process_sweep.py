"""Finding and killing what an unconfined command left running, without reading every process.

A confined command needs none of this (its PID namespace dies with its shell), and neither does
one in a cgroup of its own (`cgroups.py`: every process it started is listed there and cannot
leave). For an unconfined command without a cgroup, the process group catches background jobs,
but a process that called `setsid` (a daemon that double-forks) left the group, and once its
parent exits it is reparented away from the command's tree.

So the daemon makes itself a child subreaper (`PR_SET_CHILD_SUBREAPER`): an orphan below it is
reparented to the daemon instead of to init. The sweep then walks `/proc/PID/task/*/children`
from the command's shell, and looks at the daemon's own direct children (a handful) for the
ones the command left behind: those in its process group, or carrying its tag in their
environment. Everything below those is the command's too, whatever its environment says.

Where the kernel offers neither (no prctl, no `children` files), the sweep falls back to
`sweep_by_environment`: reading `/proc/*/environ` of every process on the machine for the tag.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Iterable

from ..settings_table import COMMAND_TAG_VARIABLE

_PR_SET_CHILD_SUBREAPER = 36
# Killed processes that are (or become) the daemon's children are reaped within this; the rest
# are tried again at the next sweep, so no zombie is left for long.
_REAP_WAIT_S = 0.5
_ROUNDS = 3  # Walk again, in case one forked while we looked.

_lock = threading.Lock()
_subreaper: bool | None = None
_unreaped: set[int] = set()


def become_subreaper() -> bool:
    """Make this process a child subreaper, once; False where Linux's prctl is not available."""
    global _subreaper
    with _lock:
        if _subreaper is None:
            _subreaper = _set_subreaper() and _children_files_exist()
        return _subreaper


def _set_subreaper() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    import ctypes  # Only here: start-up does not load it.

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _children_files_exist() -> bool:
    """`children` needs CONFIG_PROC_CHILDREN; without it the tree cannot be walked."""
    pid = os.getpid()
    return os.path.exists(f"/proc/{pid}/task/{pid}/children")


def children_of(pid: int) -> set[int]:
    """The direct children of `pid` (every thread's), zombies included; empty once it is gone."""
    found: set[int] = set()
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        with contextlib.suppress(OSError, ValueError):
            with open(f"/proc/{pid}/task/{task}/children", "rb") as children:
                found.update(int(child) for child in children.read().split())
    return found


def descendants_of(roots: Iterable[int]) -> set[int]:
    """`roots` and every process below them."""
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        pid = stack.pop()
        if pid in seen:
            continue
        seen.add(pid)
        stack.extend(children_of(pid) - seen)
    return seen


def _process_group(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            # The command name may hold spaces and parentheses: fields start after the last ")".
            fields = stat.read().rsplit(b")", 1)[1].split()
        return int(fields[2])  # state, ppid, pgrp
    except (OSError, IndexError, ValueError):
        return None


def _carries_tag(pid: int, needle: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as environ:
            return needle in environ.read().split(b"\0")
    except OSError:
        return False


def _adopted_from(pgid: int, needle: bytes, skip: int) -> set[int]:
    """The daemon's direct children the command left behind: its group, or its tag."""
    return {
        child
        for child in children_of(os.getpid())
        if child != skip and (_process_group(child) == pgid or _carries_tag(child, needle))
    }


def _kill(pids: Iterable[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def sweep_descendants(pid: int, tag: str) -> set[int]:
    """Kill the command's shell `pid`, every process below it and every orphan of it the daemon
    adopted as subreaper; return what was killed.

    Call it before killing the shell's group: while the shell lives, the tree holds even a
    process that left the group and cleared its environment. The shell is left to whoever
    waits for it (asyncio); the rest is reaped here.
    """
    needle = f"{COMMAND_TAG_VARIABLE}={tag}".encode()
    own = os.getpid()
    killed: set[int] = set()
    # The shell leads a session of its own; once reaped, its pid may already be another's.
    shell = {pid} if _process_group(pid) == pid else set()
    for _ in range(_ROUNDS):
        found = descendants_of(shell | _adopted_from(pid, needle, pid)) - killed - {own}
        _kill(found)
        killed |= found
        if not found - {pid}:
            break
    killed.discard(pid)
    _reap(killed)
    return killed


def _reap(pids: set[int]) -> None:
    """Collect the zombies of killed processes that are, or are becoming, our children."""
    with _lock:
        pending = set(pids) | _unreaped
        _unreaped.clear()
    deadline = time.monotonic() + _REAP_WAIT_S
    while pending:
        for pid in list(pending):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                # Not ours: reaped by its own parent (gone), or not reparented to us yet.
                if not os.path.exists(f"/proc/{pid}"):
                    pending.discard(pid)
                continue
            if done:
                pending.discard(pid)
        if not pending or time.monotonic() > deadline:
            break
        time.sleep(0.005)
    with _lock:
        _unreaped.update(pending)


def sweep_by_environment(tag: str) -> set[int]:
    """The fallback: read every process's environment and kill those carrying `tag`.

    Best effort: a process that also clears its environment escapes. Its cost grows with the
    number of processes on the machine, not with the command's.
    """
    needle = f"{COMMAND_TAG_VARIABLE}={tag}".encode()
    killed: set[int] = set()
    for _ in range(_ROUNDS):
        try:
            pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
        except OSError:
            return killed
        found = {
            pid
            for pid in pids
            if pid != os.getpid() and pid not in killed and _carries_tag(pid, needle)
        }
        if not found:
            break
        _kill(found)
        killed |= found
    return killed


def sweep_command(pid: int, tag: str, *, subreaper: bool) -> set[int]:
    """Kill what the unconfined command with shell `pid` and `tag` left running.

    `subreaper` says the daemon was a subreaper before the command started (`become_subreaper`),
    which is what makes the tree walk complete.
    """
    if subreaper:
        return sweep_descendants(pid, tag)
    return sweep_by_environment(tag)
