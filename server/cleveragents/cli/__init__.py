"""The terminal front of the `cleveragents` command: run a loop, list tools, read the history.

`serve` is not ours: the launcher (`launcher.py`) hands it to the daemon or ACP mode. One
module a subcommand (`run`, `runs`, `trust`, `doctor`, `tools`); `parser` builds the command
line, `flags` turns it into the core's settings and words the core's problems with its flags.
"""

from __future__ import annotations

import sys

from ..batch.command import batch_main
from .common import EXIT_CANCELLED, EXIT_USAGE, fail
from .doctor import doctor_command
from .output import ReportingStdout
from .parser import build_parser
from .run import run_command
from .runs import runs_command
from .tools import tools_command
from .trust import trust_command


def main(argv: list[str] | None = None) -> int:
    """The subcommand's exit code; an output that could not be written ends it the way Unix
    tools end (cli/output.py): a reader that stopped reading (`| head -1`) quietly with
    141, any other failure (`> /dev/full`) with one line saying why, not with a
    traceback."""
    given_stdout = sys.stdout
    stdout = ReportingStdout(given_stdout)
    sys.stdout = stdout
    try:
        code = _command(argv)
        stdout.flush()  # what is still buffered fails here, not at interpreter exit
    finally:
        sys.stdout = given_stdout
    return stdout.exit_code(code)


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
