"""Ending what the daemon started: child processes left behind by tools.

Cancelled runs kill their own commands; this is the backstop at exit for anything a tool
started and did not stop (a background job, a command whose thread could not be cancelled).
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import time

log = logging.getLogger(__name__)


def _children_by_parent() -> dict[int, list[int]]:
    """Parent pid to child pids, from /proc (Linux); empty where /proc is missing."""
    tree: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return tree
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:  # gone already, or not ours to read
            continue
        # The command name (field 2) is in parentheses and may hold spaces or parentheses.
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1:
            tree.setdefault(int(fields[1]), []).append(int(entry))
    return tree


def descendants(pid: int | None = None) -> list[int]:
    """Every process below `pid` (default: this one), parents before children."""
    tree = _children_by_parent()
    found: list[int] = []
    queue = [os.getpid() if pid is None else pid]
    while queue:
        for child in tree.get(queue.pop(0), []):
            if child not in found:
                found.append(child)
                queue.append(child)
    return found


def kill_descendants(grace_s: float = 1.0) -> list[int]:
    """SIGTERM every descendant, SIGKILL those still there after `grace_s`; their pids."""
    pids = descendants()
    if not pids:
        return []
    log.info("stopping %d processes left by tools: %s", len(pids), pids)
    _signal_all(pids, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.02)
    _signal_all([p for p in pids if _alive(p)], signal.SIGKILL)
    return pids


def _signal_all(pids: list[int], signum: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, signum)
        except (ProcessLookupError, PermissionError):
            pass


def _alive(pid: int) -> bool:
    try:
        waited, _ = os.waitpid(pid, os.WNOHANG)  # reap our own children so they vanish
        if waited == pid:
            return False
    except ChildProcessError:
        pass  # not our direct child: fall back to asking the kernel
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie grandchild still answers kill(0); it is dead for our purposes.
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
        return stat[stat.rfind(b")") + 2 :][:1] != b"Z"
    except OSError:
        return False


def claim_stdio() -> tuple[int, int]:
    """Keep stdin and stdout for the protocol alone; returns private copies of both.

    A stray `print` in a tool, or a child process that inherits stdout, would corrupt the
    stream; one that reads stdin would steal the client's bytes. So the protocol gets
    private copies, stdout becomes stderr and stdin becomes /dev/null.
    """
    sys.stdout.flush()
    in_fd, out_fd = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    return in_fd, out_fd
