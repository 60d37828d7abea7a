"""The command line's setting flags, built from the settings table, and read back as the core's
client options: `cleveragents run`, `doctor` and `chat` take the same flags, checked the same
way (a bad value exits 2 naming the flag), resolved by the same core resolver.

Below the fronts (`cli` and `chat` may not import each other), above the core it reads.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .settings_table import Level, Setting, rows_for, setting

if TYPE_CHECKING:
    from .service.settings import ClientOptions, RunDefaults


def table_help(name: str) -> str:
    """A flag's help from its row of the settings table: what it sets, and the variable and
    default it falls back to."""
    row = setting(name)
    what = row.doc[:1].lower() + row.doc[1:].rstrip(".")
    fallback = f"${row.env}, else " if row.env else ""
    return f"{what} (default: {fallback}{row.default.replace('`', '')})"


def add_setting_flags(parser: argparse.ArgumentParser) -> None:
    """A flag for each row of the settings table the command line may set, built from the row
    (`run`, `doctor --settings` and `chat` take the same ones; `client_options` reads them back
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
        from .service.settings import parse_setting_text

        value, problem = parse_setting_text(row, text)
        if problem:
            raise argparse.ArgumentTypeError(problem)
        return int(value)

    return parse


def prices_flag(path: str) -> dict[str, Any]:
    from .service.settings import parse_prices

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


def read_path_flag(text: str) -> str:
    if not (text.startswith("~") or os.path.isabs(text)):
        raise argparse.ArgumentTypeError(f"must be absolute or start with ~, got {text!r}")
    return text


def variable_flag(text: str) -> str:
    from .service.settings import check_variable_pattern

    problem = check_variable_pattern(text)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return text


# The item check of each list row's flag, by the row's kind.
_LIST_ITEMS: dict[str, Callable[[str], str]] = {"paths": read_path_flag, "names": variable_flag}


def command_limit_flag(text: str) -> tuple[str, str]:
    from .service.settings import COMMAND_LIMITS
    from .workspace.command_policy import parse_limit

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


# -- the flags read back: the core's options, and its problems worded with the flags ----------
def client_options(args: argparse.Namespace) -> ClientOptions:
    """The setting flags (`add_setting_flags`, each stored under its row's name) as the core's
    client options: a flag left out is None, so the environment and then the default decide
    (the core resolves); the command rows make the command layer."""
    from .service.settings import ClientOptions, CommandSettings

    command = CommandSettings(
        read_paths=tuple(args.command_read_paths),
        env=tuple(args.command_env),
        limits=dict(getattr(args, LIMITS_DEST)),
        allow_unconfined=args.allow_unconfined_commands,
    )
    defaults = {
        row.name: getattr(args, row.name)
        for row in rows_for(Level.CLI)
        if row.resolved.startswith("defaults.")
    }
    return ClientOptions(**defaults, command=command)


def flag_settings(args: argparse.Namespace) -> RunDefaults:
    """The run defaults from the flags over the environment; ParamsError naming a bad flag
    (as `OPTIONS_NAME` + option, see `option_flag`) or a bad variable."""
    from .service.settings import session_settings

    options = client_options(args)
    return session_settings(options, os.environ, options_name=OPTIONS_NAME[:-1]).defaults


OPTIONS_NAME = "the command line."  # what `flag_settings` calls the flags, for service/settings.py

# Option names (`maxIterations`, `commandLimits`) as flags, from the table.
OPTION_FLAGS = {
    row.option.split(".")[0]: row.flag_name
    for row in rows_for(Level.CLI)
    if row.option and row.flag_name
}


def option_flag(problem: str) -> str:
    """A settings problem about a flag (`the command line.maxIterations: ...`) naming the flag
    as the user typed it (`--max-iterations: ...`); one about a variable as it is."""
    if not problem.startswith(OPTIONS_NAME):
        return problem
    option, _, rest = problem[len(OPTIONS_NAME) :].partition(":")
    name = re.split(r"[.\[]", option, maxsplit=1)[0]
    flag = OPTION_FLAGS.get(name, name)
    return f"{flag}:{rest}"
