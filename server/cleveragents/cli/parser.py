"""The `cleveragents` command line: the parsers, and each flag's value checked as it is read (a bad
one exits 2 naming the flag). Flag help for settings comes from the settings table."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..batch.command import add_batch_parser
from ..settings_table import TRUST_HELP, Level, Setting, rows_for, setting

if TYPE_CHECKING:
    from ..service.resources import ResourceRequest


def table_help(name: str) -> str:
    """A flag's help from its row of the settings table: what it sets, and the variable and
    default it falls back to."""
    row = setting(name)
    what = row.doc[:1].lower() + row.doc[1:].rstrip(".")
    fallback = f"${row.env}, else " if row.env else ""
    return f"{what} (default: {fallback}{row.default.replace('`', '')})"


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


def add_setting_flags(parser: argparse.ArgumentParser) -> None:
    """A flag for each row of the settings table the command line may set, built from the row
    (`run` and `doctor --settings` take the same ones; `flags.client_options` reads them back
    by the row's name). The command limits' rows share one `--command-limit NAME=VALUE`."""
    rows = list(rows_for(Level.CLI))
    for row in rows:
        if row.value_type != "limit":
            _add_row_flag(parser, row)
    limits = [row for row in rows if row.value_type == "limit"]
    names = [(row.flag or "").split(" ")[1].removesuffix("=VALUE") for row in limits]
    parser.add_argument(
        "--command-limit",
        dest=LIMITS_DEST,
        action="append",
        default=[],
        type=command_limit_flag,
        metavar="NAME=VALUE",
        help=f"a limit on each command: {', '.join(names[:-1])} or {names[-1]}, e.g. "
        "memory-bytes=8G or processes=unlimited (repeatable)",
    )


# Where the `--command-limit` values go (the limit rows share the flag).
LIMITS_DEST = "command_limits"


def _add_row_flag(parser: argparse.ArgumentParser, row: Setting) -> None:
    """One row's flag, stored under the row's name: a switch for a yes/no row (`--no-...`
    turns it off, any other on; left out it is None, so the levels below decide), a choice,
    a whole number, a price file, a repeatable list, or text."""
    flag = row.flag_name
    assert flag is not None
    help_text = row.flag_help or table_help(row.name)
    kind = row.value_type
    if kind == "yes/no":
        parser.add_argument(
            flag,
            dest=row.name,
            action="store_const",
            const=not flag.startswith("--no-"),
            default=None,
            help=help_text,
        )
        return
    options: dict[str, Any] = {"dest": row.name, "metavar": row.metavar, "help": help_text}
    if row.choices:
        options["choices"] = row.choices
    elif kind == "integer":
        options["type"] = whole_number(row)
    elif kind == "JSON":
        options["type"] = prices_flag
    elif kind == "list":
        options.update(action="append", default=[], type=_LIST_ITEMS[row.kind])
    parser.add_argument(flag, **options)


# -- flag values: each checked here, so a bad one exits 2 naming the flag ----------------------
def whole_number(row: Setting) -> Callable[[str], int]:
    """An integer row's flag value as a number (argparse names the flag when it is none); its
    range is the core's check, which names the flag too (`--max-iterations: must be ...`)."""

    def parse(text: str) -> int:
        from ..service.settings import parse_setting_text

        value, problem = parse_setting_text(row, text)
        if problem:
            raise argparse.ArgumentTypeError(problem)
        return int(value)

    return parse


def prices_flag(path: str) -> dict[str, Any]:
    from ..service.settings import parse_prices

    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"cannot read {path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"{path} is not valid JSON: {exc}") from None
    try:
        parse_prices(data)
    except (TypeError, ValueError) as exc:
        raise argparse.ArgumentTypeError(f"{path}: {exc}") from None
    return dict(data)


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


def read_path_flag(text: str) -> str:
    if not (text.startswith("~") or os.path.isabs(text)):
        raise argparse.ArgumentTypeError(f"must be absolute or start with ~, got {text!r}")
    return text


def variable_flag(text: str) -> str:
    from ..service.settings import check_variable_pattern

    problem = check_variable_pattern(text)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return text


# The item check of each list row's flag, by the row's kind.
_LIST_ITEMS: dict[str, Callable[[str], str]] = {"paths": read_path_flag, "names": variable_flag}


def command_limit_flag(text: str) -> tuple[str, str]:
    from ..service.settings import COMMAND_LIMITS
    from ..workspace.command_policy import parse_limit

    name, equals, value = text.partition("=")
    key = name.strip().replace("-", "_")
    if not equals or key not in COMMAND_LIMITS:
        names = ", ".join(n.replace("_", "-") for n in COMMAND_LIMITS)
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE with NAME one of {names}")
    try:
        parse_limit(value, size=COMMAND_LIMITS[key][1], name=name)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return key, value.strip()
