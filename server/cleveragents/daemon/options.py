"""`cleveragents serve`'s command line.

Editors start the daemon with a plain line (`serve --stdio --history PATH`, maybe
`--log-level L`): that line is read here without argparse, whose import and parser cost about
as much CPU as the rest of the daemon's start-up beyond bare pygls (issue 21's cold start).
Every other line (help, a transport, an abbreviation, a mistake) goes to argparse, which
decides and words the errors; a test holds the two to the same answers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..settings_table import ENV_HISTORY

if TYPE_CHECKING:
    import argparse

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "debug", "info", "warning", "error")


@dataclass(frozen=True, slots=True)
class ServeOptions:
    stdio: bool = False
    tcp: str | None = None
    socket: str | None = None
    acp: bool = False
    history: str | None = None
    log_level: str = "WARNING"


def parse_serve_options(args: Sequence[str]) -> ServeOptions:
    """The options of `args`; argparse's exit (status 2, or 0 for `--help`) on a bad line."""
    plain = plain_stdio_options(args)
    if plain is not None:
        return plain
    namespace = serve_parser().parse_args(list(args))
    return ServeOptions(
        stdio=namespace.stdio,
        tcp=namespace.tcp,
        socket=namespace.socket,
        acp=namespace.acp,
        history=namespace.history,
        log_level=namespace.log_level,
    )


def plain_stdio_options(args: Sequence[str]) -> ServeOptions | None:
    """The options of a plain stdio line, each given once in its exact spelling (`--stdio`,
    `--history PATH` or `--history=PATH`, `--log-level L`); None for anything else."""
    stdio = False
    values: dict[str, str] = {}
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--stdio" and not stdio:
            stdio = True
            index += 1
            continue
        name, equals, value = arg.partition("=")
        if name not in ("--history", "--log-level") or name in values:
            return None
        if not equals:
            if index + 1 >= len(args):
                return None
            value = args[index + 1]
            index += 1
        if value.startswith("-") or (name == "--log-level" and value not in LOG_LEVELS):
            return None  # argparse's to refuse (or to read as it does)
        values[name] = value
        index += 1
    return ServeOptions(
        stdio=stdio,
        history=values.get("--history"),
        log_level=values.get("--log-level", "WARNING"),
    )


def serve_parser() -> argparse.ArgumentParser:
    import argparse

    parser = argparse.ArgumentParser(
        prog="cleveragents serve",
        description="Serve the cleveragents JSON-RPC protocol (LSP base protocol).",
    )
    transport = parser.add_mutually_exclusive_group()
    transport.add_argument(
        "--stdio", action="store_true", help="talk over stdin and stdout (the default)"
    )
    transport.add_argument(
        "--tcp",
        metavar="HOST:PORT",
        help="listen on a TCP port instead (one client; port 0 picks one); clients must "
        "send the token the daemon writes to a file only you can read",
    )
    transport.add_argument(
        "--socket",
        metavar="PATH",
        help="listen on a Unix socket created 0600 instead (one client); the way to reach "
        "a daemon on another machine, with `ssh -L`",
    )
    transport.add_argument(
        "--acp",
        action="store_true",
        help="speak the Agent Client Protocol on stdio instead, for Zed and other ACP "
        "editors (`--acp --help` lists its options)",
    )
    parser.add_argument(
        "--history",
        metavar="PATH",
        help=f"run history database (default: ${ENV_HISTORY}, else "
        "history.sqlite3 in the user data folder)",
    )
    parser.add_argument(
        "--log-level",
        default="WARNING",
        choices=LOG_LEVELS,
        help="stderr log level (default: WARNING)",
    )
    return parser
