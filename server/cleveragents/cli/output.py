"""Where the terminal front's output goes, and what a failed write of it means.

Output can fail two ways: the reader went away (`| head -1`, EPIPE) or stdout cannot take the
bytes (`> /dev/full`, a full disk, a dead terminal). Either way the command ends as Unix tools
end, not with a traceback: quietly with 141 for a gone reader, else with one line saying why
and exit 1. A run whose output fails is stopped as Ctrl-C stops it (nobody is watching it spend
tokens any more); what it did is kept in the history.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

from .common import fail

EXIT_BROKEN_PIPE = 141  # what a shell reports for a writer whose reader went away: 128 + SIGPIPE


class ReportingStdout:
    """sys.stdout as the CLI writes it. The first failed write or flush is kept in `failure`
    and told to the listeners; the file descriptor then points at devnull, so later writes
    (and the interpreter's flush at exit) go nowhere instead of failing again, Python's
    documented pattern (signal docs, "Note on SIGPIPE")."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.failure: OSError | None = None
        self.listeners: list[Callable[[], object]] = []

    def write(self, text: str) -> int:
        if self.failure is None:
            try:
                return self.stream.write(text)
            except OSError as error:
                self._lose(error)
        return len(text)

    def flush(self) -> None:
        if self.failure is None:
            try:
                self.stream.flush()
            except OSError as error:
                self._lose(error)

    def __getattr__(self, name: str) -> object:
        # isatty, fileno, encoding...: what rich and argparse ask the stream.
        return getattr(self.stream, name)

    def _lose(self, error: OSError) -> None:
        self.failure = error
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.stream.fileno())
            os.close(devnull)
        except (OSError, ValueError):
            pass  # not a real descriptor (a test's capture): the flag alone keeps it quiet
        for listener in self.listeners:
            listener()

    def exit_code(self, code: int) -> int:
        """`code`, unless the output was lost: EXIT_BROKEN_PIPE, or 1 with the reason said."""
        if self.failure is None:
            return code
        if isinstance(self.failure, BrokenPipeError):
            return EXIT_BROKEN_PIPE
        return fail(f"could not write the output: {self.failure.strerror}")


@contextmanager
def when_output_lost(listener: Callable[[], object]) -> Iterator[None]:
    """While inside, call `listener` if the command's stdout fails (only under the CLI's main;
    elsewhere, as in a test calling a command directly, nothing is watched)."""
    stdout = sys.stdout
    if not isinstance(stdout, ReportingStdout):
        yield
        return
    stdout.listeners.append(listener)
    try:
        yield
    finally:
        stdout.listeners.remove(listener)


def output_lost() -> bool:
    """Whether what the command wrote so far could not be written (flushed first, so a write
    still in the buffer is tried): a run not started yet would show nobody anything."""
    stdout = sys.stdout
    if not isinstance(stdout, ReportingStdout):
        return False
    stdout.flush()
    return stdout.failure is not None
