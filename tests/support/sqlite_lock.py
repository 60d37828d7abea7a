"""Another process holding a SQLite database's write lock until the test lets go."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import TracebackType

# Takes the write lock (BEGIN IMMEDIATE), says so, and commits once its stdin closes.
_HOLDER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.read()
conn.execute("COMMIT")
print("released", flush=True)
"""
WAIT_S = 60.0  # a ceiling against hangs, never a timing assertion


class WriteLockHolder:
    """`with WriteLockHolder(path):` another process holds the lock for the block (or until
    `release()`)."""

    def __init__(self, path: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", _HOLDER, str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if line != b"locked\n":
            self.process.kill()
            raise RuntimeError(f"the lock holder did not take the lock: {line!r}")

    def release(self) -> None:
        if self.process.returncode is not None:
            return
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        assert self.process.stdout.readline() == b"released\n"
        self.process.wait(WAIT_S)

    def __enter__(self) -> WriteLockHolder:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.release()
        else:
            self.process.kill()
            self.process.wait(WAIT_S)
