"""The command line as the core's settings and fields: the flags over the environment (resolved
by the core), and the core's problems worded with the flag the user typed."""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..settings_table import Level, rows_for

if TYPE_CHECKING:
    from ..service.errors import ServiceError
    from ..service.resources import ResourceRequest
    from ..service.settings import ClientOptions, RunDefaults


def file_flag(requests: list[ResourceRequest]) -> Callable[[int | None, str], str]:
    """Names a --file flag in a problem, as the user wrote it."""

    def label(index: int | None, _: str) -> str:
        if index is None:
            return "--file"
        request = requests[index]
        lines = f":{request.start_line}-{request.end_line}" if request.start_line else ""
        return f"--file {request.path}{lines}"

    return label


def client_options(args: argparse.Namespace) -> ClientOptions:
    """The setting flags (`parser.add_setting_flags`, each stored under its row's name) as the
    core's client options: a flag left out is None, so the environment and then the default
    decide (the core resolves); the command rows make the command layer."""
    from ..service.settings import ClientOptions, CommandSettings
    from .parser import LIMITS_DEST

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
    from ..service.settings import session_settings

    options = client_options(args)
    return session_settings(options, os.environ, options_name=OPTIONS_NAME[:-1]).defaults


# The core's field names as the command line names them, in a refused run's problems: each
# setting's flag from the table, and the run's own arguments.
FIELD_FLAGS = {row.name: row.flag_name for row in rows_for(Level.CLI) if row.flag_name} | {
    "sandbox_root": "--sandbox",
    "prompt": "the prompt",  # the one argument that is no flag
    "continue_from": "--continue",
    "iteration": "--iteration",
}

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


def flag_problems(error: ServiceError, flag: Callable[[str], str]) -> str:
    """An INVALID_PARAMS error's problems, each field named as the command line names it."""
    from ..service.errors import rename_field

    return "; ".join(rename_field(problem, flag) for problem in error.problems)


def file_flag_of(field: str, requests: list[ResourceRequest]) -> str:
    """`resources[0].path` as the --file flag the user wrote; other fields as they are."""
    import re

    match = re.fullmatch(r"resources(?:\[(\d+)\]\.\w+)?", field)
    if match is None:
        return field
    flag: str = file_flag(requests)(int(match.group(1)) if match.group(1) else None, "")
    return flag
