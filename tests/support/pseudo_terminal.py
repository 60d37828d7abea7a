"""A command run as a terminal's foreground process, for the tests that type at it.

The child gets its own session with the pty as its controlling terminal, so Ctrl-C typed on
the leader is the kernel's SIGINT (while the terminal is in cooked mode) or a key (while a line
editor holds it in raw mode), as for a user.
"""

from __future__ import annotations

import fcntl
import os
import pty
import subprocess
import termios
from pathlib import Path


def _controlling_terminal() -> None:
    # In the child after setsid: stdin (the pty) becomes its controlling terminal.
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def spawn_on_pty(
    args: list[str], env: dict[str, str], cwd: Path | None = None
) -> tuple[subprocess.Popen[bytes], int]:
    """Start `args` on a new pty; the process and the leader's fd (the caller closes it)."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        args,
        cwd=cwd,
        stdin=follower,
        stdout=follower,
        stderr=follower,
        close_fds=True,
        start_new_session=True,
        preexec_fn=_controlling_terminal,
        env=env,
    )
    os.close(follower)
    return process, leader
