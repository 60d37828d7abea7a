"""The command line as the core's settings and fields: the flags over the environment (resolved
by the core), and the core's problems worded with the flag the user typed."""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Callable
from typing import Any


def file_flag(requests: list[Any]) -> Any:
    """Names a --file flag in a problem, as the user wrote it."""

    def label(index: int | None, _: str) -> str:
        if index is None:
            return "--file"
        request = requests[index]
        lines = f":{request.start_line}-{request.end_line}" if request.start_line else ""
        return f"--file {request.path}{lines}"

    return label


def flag_settings(args: argparse.Namespace, **options: Any) -> Any:
    """The run defaults from the flags over the environment (service/settings.py resolves
    both); ParamsError naming a bad environment variable."""
    from ..service.settings import ClientOptions, CommandSettings, session_settings

    command = CommandSettings(
        read_paths=tuple(args.command_read_paths),
        env=tuple(args.command_env),
        limits=dict(args.command_limits),
        allow_unconfined=args.allow_unconfined_commands,
    )
    return session_settings(
        ClientOptions(command=command, **options), os.environ, options_name=OPTIONS_NAME[:-1]
    ).defaults


# The core's field names as the command line names them, in a refused run's problems.
FIELD_FLAGS = {
    "sandbox_root": "--sandbox",
    "prompt": "the prompt",  # the one argument that is no flag
    "provider": "--provider",
    "max_iterations": "--max-iterations",
    "continue_from": "--continue",
    "tool_result_budget": "--tool-result-budget",
    "context_window": "--context-window",
    "model": "--model",
    "iteration": "--iteration",
}


OPTIONS_NAME = "the command line."  # what `flag_settings` calls the flags, for service/settings.py


OPTION_FLAGS = {"automationProfile": "--profile", "commandReadPaths": "--command-read-path"}


def option_flag(problem: str) -> str:
    """A settings problem about a flag (`the command line.maxIterations: ...`) naming the flag
    as the user typed it (`--max-iterations: ...`); one about a variable as it is."""
    if not problem.startswith(OPTIONS_NAME):
        return problem
    option, _, rest = problem[len(OPTIONS_NAME) :].partition(":")
    name = re.split(r"[.\[]", option, maxsplit=1)[0]
    flag = OPTION_FLAGS.get(name) or "--" + re.sub(r"([A-Z])", r"-\1", name).lower()
    return f"{flag}:{rest}"


def flag_problems(error: Any, flag: Callable[[str], str]) -> str:
    """An INVALID_PARAMS error's problems, each field named as the command line names it."""
    from ..service.errors import rename_field

    return "; ".join(rename_field(problem, flag) for problem in error.problems)


def file_flag_of(field: str, requests: list[Any]) -> str:
    """`resources[0].path` as the --file flag the user wrote; other fields as they are."""
    import re

    match = re.fullmatch(r"resources(?:\[(\d+)\]\.\w+)?", field)
    if match is None:
        return field
    flag: str = file_flag(requests)(int(match.group(1)) if match.group(1) else None, "")
    return flag
