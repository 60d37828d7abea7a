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
from .parser import build_parser
from .run import run_command
from .runs import runs_command
from .tools import tools_command
from .trust import trust_command


def main(argv: list[str] | None = None) -> int:
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
