"""Finding processes by their command line, for tests that check nothing was left running."""

from __future__ import annotations

import os
import time
from pathlib import Path


def live_processes_with(marker: str) -> list[int]:
    """Pids whose command line holds `marker`, zombies excluded (they are already dead)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker.encode() in cmdline and state not in ("Z", "X"):
            found.append(int(entry))
    return found


def wait_until_gone(marker: str) -> list[int]:
    """The processes still alive after a bounded wait (SIGKILL is delivered asynchronously)."""
    deadline = time.monotonic() + 10
    while (left := live_processes_with(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left
