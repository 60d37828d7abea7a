"""Which process owns a running run, and whether it is gone: what makes a run "interrupted"
when the process that ran it ended before it finished."""

from __future__ import annotations

import logging
import os
import socket
import sqlite3
import sys
import uuid
from typing import Any

log = logging.getLogger(__name__)

INTERRUPTED_ERROR = "the process running this run ended before the run finished"

# Tells this process apart from an earlier one that had the same pid (containers restart
# daemons with the same pid), so `mark_interrupted` can recognise that earlier one as dead.
PROCESS_TOKEN = uuid.uuid4().hex


def process_start_key(pid: int) -> str | None:
    """What tells a process apart from any other that has had or will have its pid: the boot
    and the moment (in clock ticks since boot) the process started, from Linux's /proc. None
    where that cannot be read (another system, a process that is gone): then a run's owner
    is judged by whether its pid exists."""
    state = _process_state(pid)
    return None if state is None else state[1]


def _process_state(pid: int) -> tuple[str, str] | None:
    """A process's state letter (R, S, Z, ...) and `process_start_key`, from /proc."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as handle:
            boot = handle.read().strip()
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            stat_line = handle.read()
    except OSError:
        return None
    # pid (comm) state ppid ...: comm may hold spaces and parentheses, so split after the last.
    fields = stat_line[stat_line.rfind(")") + 2 :].split()
    if len(fields) < 20:
        return None
    return fields[0], f"{boot}:{fields[19]}"  # fields 3 and 22 of stat: state, starttime


OWNER_STARTED = process_start_key(os.getpid())


def owner_gone(host: str, pid: int, token: str, started: str | None = None) -> bool:
    """Whether the process that started a run is gone, so the run can never finish: what
    every reader of the history calls a run's "interrupted" (the SQL function `owner_gone`
    in every read, and `mark_interrupted`).

    Runs of other hosts are left alone (their processes cannot be seen from here). Gone: our
    own pid with another process's token (an earlier process that had our pid), a pid that no
    longer exists (or is a zombie), or a pid that now belongs to a process started at
    another moment than the run's owner (`started`, from `process_start_key`).
    """
    if host != socket.gethostname():
        return False
    if pid == os.getpid():
        return token != PROCESS_TOKEN
    if not _process_alive(pid):
        return True
    state = _process_state(pid)
    if state is None:  # no /proc to ask: the pid exists, so the owner is taken to live
        return False
    letter, now = state
    if letter in ("Z", "X"):  # killed, not yet reaped by its parent: it runs no more
        return True
    return started is not None and now != started


def add_sql_functions(conn: sqlite3.Connection) -> None:
    def gone(host: Any, pid: Any, token: Any, started: Any) -> int:
        try:
            return int(owner_gone(str(host), int(pid), str(token), started))
        except Exception:  # a read must not fail over one odd row: it stays as stored
            log.exception("run history: cannot tell whether pid %r is alive", pid)
            return 0

    conn.create_function("owner_gone", 4, gone)


def _process_alive(pid: int) -> bool:
    """Whether a process with this pid exists on this host (True when unsure)."""
    if sys.platform == "win32":
        import ctypes

        # os.kill(pid, 0) on Windows would terminate the process, so ask the kernel.
        kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
        process_query_limited_information, still_active, access_denied = 0x1000, 259, 5
        handle = kernel32.OpenProcess(process_query_limited_information, False, pid)
        if not handle:
            return bool(ctypes.get_last_error() == access_denied)
        try:
            code = ctypes.c_ulong()
            if not kernel32.GetExitCodeProcess(handle, ctypes.byref(code)):
                return True
            return bool(code.value == still_active)
        finally:
            kernel32.CloseHandle(handle)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True
