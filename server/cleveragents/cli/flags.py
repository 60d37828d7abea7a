"""The core's fields as the command line names them: a refused run's problems worded with the
flag the user typed (the setting flags themselves, and their resolution, are `setting_flags`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..settings_table import Level, rows_for

if TYPE_CHECKING:
    from ..service.errors import ServiceError
    from ..service.resources import ResourceRequest


def file_flag(requests: list[ResourceRequest]) -> Callable[[int | None, str], str]:
    """Names a --file flag in a problem, as the user wrote it."""

    def label(index: int | None, _: str) -> str:
        if index is None:
            return "--file"
        request = requests[index]
        lines = f":{request.start_line}-{request.end_line}" if request.start_line else ""
        return f"--file {request.path}{lines}"

    return label


# The core's field names as the command line names them, in a refused run's problems: each
# setting's flag from the table, and the run's own arguments.
FIELD_FLAGS = {row.name: row.flag_name for row in rows_for(Level.CLI) if row.flag_name} | {
    "sandbox_root": "--sandbox",
    "prompt": "the prompt",  # the one argument that is no flag
    "continue_from": "--continue",
    "iteration": "--iteration",
}


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
