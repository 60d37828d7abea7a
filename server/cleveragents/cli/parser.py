"""The `cleveragents` command line: the parsers, and each flag's value checked as it is read (a bad
one exits 2 naming the flag). The setting flags come from the settings table
(`setting_flags`, which `chat` shares)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from .. import __version__
from ..batch.command import add_batch_parser
from ..setting_flags import add_setting_flags, table_help
from ..settings_table import TRUST_HELP

if TYPE_CHECKING:
    from ..service.resources import ResourceRequest


def prompt_text(value: str) -> str:
    """A prompt is text: bytes a shell passed that are not UTF-8 (kept by Python as lone
    surrogates, which no JSON answer, provider or history can hold) become U+FFFD."""
    return value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cleveragents", description="A tool-calling agent runtime you drive from your editor."
    )
    parser.add_argument("--version", action="version", version=f"cleveragents {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser("run", help="run a tool loop on a prompt, showing each tool call")
    run.add_argument("prompt", type=prompt_text, help="what the agent should do")
    run.add_argument(
        "--sandbox",
        metavar="DIR",
        help="the project folder the tools may touch, nothing outside it (default: here)",
    )
    add_setting_flags(run)
    run.add_argument(
        "--file",
        dest="files",
        action="append",
        default=[],
        type=resource_flag,
        metavar="PATH[:START-END]",
        help="attach a workspace file (or lines START to END of it) to the prompt (repeatable)",
    )
    run.add_argument(
        "--image",
        dest="images",
        action="append",
        default=[],
        metavar="PATH",
        help="attach a PNG, JPEG, GIF or WebP image to the prompt (repeatable; docs/images.md)",
    )
    run.add_argument(
        "--tools",
        action="append",
        default=[],
        metavar="MODULE",
        help="a Python module whose @tool functions to add (repeatable)",
    )
    run.add_argument("--no-builtins", action="store_true", help="do not offer the built-in tools")
    run.add_argument(
        "--json",
        action="store_true",
        help="print the whole result, with the tool call history, as JSON",
    )
    run.add_argument("--no-history", action="store_true", help="do not store this run")
    run.add_argument(
        "--continue",
        dest="continue_from",
        metavar="RUN_ID",
        help="continue the conversation of an earlier run",
    )

    runs = commands.add_parser(
        "runs",
        help="list past runs, show one, undo one (restore), or look after the checkpoints",
        description="list: past runs and restores, newest first. show ID: a run with its tool "
        "calls, checkpoints and changed files. restore ID: put the run's folder back as it was "
        "before the run (or before --iteration N); a restore's own ID undoes it. disk: the disk "
        "the checkpoints take. prune-checkpoints: drop checkpoints of runs the history no longer "
        "has (and, with --older-than, older ones), then pack what is left.",
    )
    runs.add_argument(
        "action",
        nargs="?",
        choices=("list", "show", "restore", "disk", "prune-checkpoints"),
        default="list",
    )
    runs.add_argument("run_id", nargs="?", help="the run to show or restore")
    runs.add_argument("--history", metavar="PATH", help=table_help("history"))
    runs.add_argument("--limit", type=int, default=20, help="how many runs to list (default 20)")
    runs.add_argument("--batch", metavar="NAME", help="list only the runs of this batch")
    runs.add_argument("--json", action="store_true", help="print as JSON")
    runs.add_argument(
        "--iteration",
        type=int,
        metavar="N",
        help="restore: go back to before iteration N of the run (default: undo the whole run)",
    )
    runs.add_argument(
        "--dry-run", action="store_true", help="restore: list what would change, change nothing"
    )
    runs.add_argument(
        "--yes", "-y", action="store_true", help="restore: do not ask for confirmation"
    )
    runs.add_argument(
        "--older-than",
        type=float,
        metavar="DAYS",
        help="prune-checkpoints: also drop checkpoints of runs older than DAYS days",
    )

    # Listed for --help only: the launcher hands `serve ...` to the daemon or ACP mode, and
    # `chat` (or no command) to the terminal session.
    commands.add_parser(
        "serve", help="serve the JSON-RPC daemon (stdio or TCP) for editors and other clients"
    )
    commands.add_parser(
        "chat", help="a conversation in this folder (also `cleveragents` alone); see chat --help"
    )

    doctor = commands.add_parser(
        "doctor", help="show what run_command can reach here: mounts, variables, limits"
    )
    doctor.add_argument("--sandbox", metavar="DIR", help="the project folder (default: here)")
    doctor.add_argument("--json", action="store_true", help="print the report as JSON")
    doctor.add_argument(
        "--settings",
        action="store_true",
        help="print every setting's resolved value and where it came from (default, "
        "environment or flag), secrets masked",
    )
    add_setting_flags(doctor)

    tools = commands.add_parser("tools", help="list every tool with its source and schema")
    tools.add_argument("--sandbox", metavar="DIR", help="also list MCP tools of this folder")
    tools.add_argument("--tools", action="append", default=[], metavar="MODULE")
    tools.add_argument("--json", action="store_true", help="print the list as JSON")
    tools.add_argument("--trust-workspace", action="store_true", help=TRUST_HELP)

    trust = commands.add_parser(
        "trust", help="list or forget the answers about workspaces' .mcp.json servers"
    )
    trust.add_argument("action", nargs="?", choices=("list", "forget"), default="list")
    trust.add_argument("folder", nargs="?", help="forget: the workspace folder (default: here)")
    trust.add_argument("--json", action="store_true", help="print the list as JSON")
    add_batch_parser(commands)
    return parser


def resource_flag(spec: str) -> ResourceRequest:
    """`PATH`, `PATH:LINE` or `PATH:START-END` as a resource request."""
    import re

    from ..service.resources import ResourceRequest

    path, _, lines = spec.rpartition(":")
    match = re.fullmatch(r"(\d+)(?:-(\d+))?", lines) if path else None
    if match is None:
        return ResourceRequest(spec)
    start = int(match.group(1))
    end = int(match.group(2)) if match.group(2) else start
    if start < 1 or end < start:
        raise argparse.ArgumentTypeError(
            f"{spec!r}: lines count from 1 and END may not come before START"
        )
    return ResourceRequest(path, start_line=start, end_line=end)
