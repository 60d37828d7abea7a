"""A run's attached files (resources): checked against the sandbox wall, read through it.

A client attaches files to a prompt (the current file, a selection, an `@file` mention), each
a path inside the sandbox with, optionally, the text the editor holds and the lines it covers.
`check_resources` is the cheap part (shape and the wall, nothing read) that every request goes
through; `load_resources` reads what the client did not send, through the same sandbox code
the file tools use (no link is followed out, binary files are refused), and fits everything to
the budget (`tool/resources.py`). The runtime then shows them in the run's first message.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..tool.errors import ToolError
from ..tool.resources import Resource, fit_budget
from ..workspace.files import read_file
from ..workspace.sandbox import Sandbox

MAX_RESOURCES = 50
"""Files one run may attach."""

_WHOLE_FILE_LINES = 1 << 40  # read_file's limit when the whole file is wanted


@dataclass(frozen=True, slots=True)
class ResourceRequest:
    """An attached file as a client sends it: `text` None means the file on disk.

    Lines are 1-based and inclusive; with `text`, they say where the text came from.
    """

    path: str
    text: str | None = None
    start_line: int | None = None
    end_line: int | None = None


Label = Callable[[int | None, str], str]
"""Names a request's field in a problem: (index, field) -> `params.resources[0].path`; an
index of None names the whole list."""


def wire_label(index: int | None, field: str) -> str:
    return "params.resources" if index is None else f"params.resources[{index}].{field}"


def check_resources(
    requests: Sequence[ResourceRequest], sandbox_root: str, label: Label = wire_label
) -> list[str]:
    """The problems with `requests` (each naming its field), reading nothing."""
    problems: list[str] = []
    if len(requests) > MAX_RESOURCES:
        problems.append(
            f"{label(None, 'path')}: at most {MAX_RESOURCES} files, got {len(requests)}"
        )
    sandbox = Sandbox(sandbox_root)
    for index, request in enumerate(requests):
        if not request.path.strip():
            problems.append(f"{label(index, 'path')}: must not be empty")
        else:
            try:
                target = sandbox.resolve(request.path)
            except ToolError as exc:
                problems.append(f"{label(index, 'path')}: {exc}")
            else:
                if target.is_root:
                    problems.append(
                        f"{label(index, 'path')}: {request.path!r} is the sandbox root, not a file"
                    )
        start, end = request.start_line, request.end_line
        if start is not None and start < 1:
            problems.append(f"{label(index, 'startLine')}: lines count from 1, got {start}")
        if end is not None and end < 1:
            problems.append(f"{label(index, 'endLine')}: lines count from 1, got {end}")
        if start is not None and end is not None and 1 <= end < start:
            problems.append(f"{label(index, 'endLine')}: {end} is before startLine {start}")
    return problems


def load_resources(
    requests: Sequence[ResourceRequest], sandbox_root: str, label: Label = wire_label
) -> tuple[list[Resource], list[str]]:
    """The resources as the model will see them (read where needed, fitted to the budget),
    and the problems that kept any from loading (each naming its field). Blocking I/O: call
    it off the event loop."""
    problems = check_resources(requests, sandbox_root, label)
    if problems:
        return [], problems
    sandbox = Sandbox(sandbox_root)
    loaded: list[Resource] = []
    for index, request in enumerate(requests):
        relative = sandbox.resolve(request.path).relative
        if request.text is not None:
            loaded.append(_from_editor(request, relative))
            continue
        start = request.start_line or 1
        limit = request.end_line - start + 1 if request.end_line is not None else _WHOLE_FILE_LINES
        try:
            window = read_file(relative, offset=start, limit=limit, sandbox_root=sandbox.root)
        except ToolError as exc:
            text = str(exc)
            field = "path"
            if text.startswith(f"offset {start} is past the end"):
                field, text = "startLine", text.replace(f"offset {start}", f"line {start}", 1)
            problems.append(f"{label(index, field)}: {text}")
            continue
        ranged = request.start_line is not None or request.end_line is not None
        loaded.append(
            Resource(
                path=relative,
                text=window["content"],
                start_line=window["start_line"] if ranged else None,
                end_line=window["end_line"] if ranged else None,
                total_lines=window["total_lines"],
            )
        )
    return fit_budget(loaded), problems


def _from_editor(request: ResourceRequest, relative: str) -> Resource:
    start, end = request.start_line, request.end_line
    if start is not None and end is None:
        end = start + max(0, request.text.rstrip("\n").count("\n")) if request.text else start
    if end is not None and start is None:
        start = 1
    return Resource(
        path=relative,
        text=request.text or "",
        start_line=start,
        end_line=end,
        from_editor=True,
    )
