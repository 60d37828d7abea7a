"""The terminal front of the `cleveragents` command: run a loop, list tools, read the history.

`serve` is not ours: the launcher (`launcher.py`) hands it to the daemon or ACP mode. One
module a subcommand (`run`, `runs`, `trust`, `doctor`, `tools`); `parser` builds the command
line, `flags` turns it into the core's settings and words the core's problems with its flags.
"""

from __future__ import annotations

import os
import select
import sys

from ..batch.command import batch_main
from .common import EXIT_CANCELLED, EXIT_USAGE, fail
from .doctor import doctor_command
from .parser import build_parser
from .run import run_command
from .runs import runs_command
from .tools import tools_command
from .trust import trust_command

# What a shell reports for a writer whose reader went away (`yes | head`): 128 + SIGPIPE.
EXIT_BROKEN_PIPE = 141


def main(argv: list[str] | None = None) -> int:
    """The subcommand's exit code; a reader that stopped reading (`| head -1`) ends it quietly
    with EXIT_BROKEN_PIPE, as other Unix tools end, not with a traceback."""
    try:
        code = _command(argv)
        sys.stdout.flush()  # what is still buffered fails here, not at interpreter exit
    except BrokenPipeError:
        if not _stdout_reader_gone():
            raise  # another pipe (a tool's process, an MCP server): a bug to show
        # Python's documented pattern (signal docs, "Note on SIGPIPE"): stdout to devnull,
        # so the flush at exit does not fail again on what is left in its buffer.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return EXIT_BROKEN_PIPE
    return code


def _stdout_reader_gone() -> bool:
    """Whether stdout is a pipe (or socket) nobody reads any more: poll says POLLERR."""
    if not hasattr(select, "poll"):  # Windows: no poll; a broken stdout is the likely one
        return True
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        events = poller.poll(0)
    except (OSError, ValueError):  # stdout closed or replaced by an object without an fd
        return True
    return any(mask & select.POLLERR for _, mask in events)


def _command(argv: list[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(argv)
    try:
        if args.command == "run":
            return run_command(args)
        if args.command == "tools":
            return tools_command(args)
        if args.command == "runs":
            return runs_command(args)
        if args.command in ("serve", "chat"):
            return fail(f"`{args.command}` starts through the cleveragents command", EXIT_USAGE)
        if args.command == "doctor":
            return doctor_command(args)
        if args.command == "trust":
            return trust_command(args)
        if args.command == "batch":
            return batch_main(args)
    except KeyboardInterrupt:
        return EXIT_CANCELLED
    return EXIT_USAGE
