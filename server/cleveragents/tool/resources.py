"""Files the user attaches to a prompt, and how the model is shown them.

A resource is a file of the workspace, a range of its lines, or the text an editor holds for
it (a selection, unsaved changes). The runtime puts a run's resources in the run's first user
message, before the prompt (the material first, the request last, as model vendors advise for
long inputs). Each is a fenced block under a line that names its path and lines:

    The user attached 2 files from the workspace. Each is shown below between fences, ...

    `src/app.py`, lines 10-20 of 120:
    ```
    ...the text...
    ```

    `notes.md`, as the editor has it (it may differ from the file on disk):
    ````
    ...text that itself holds ``` keeps its fence...
    ````

    <the prompt>

A fence is one backtick longer than the longest run of backticks in the text, so no content
can close it early. Text over the budget is cut at a line end and a marker says how much was
left out and how to read the rest (`read_file` with the exact offset).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

RESOURCE_BUDGET_CHARS = 50_000
"""Characters of one resource the model is shown (about 14k tokens)."""

RESOURCES_BUDGET_CHARS = 150_000
"""Characters of all a run's resources together (about 43k tokens); later ones get less."""

_BACKTICKS = re.compile(r"`+")


@dataclass(frozen=True, slots=True)
class Resource:
    """One attached file (or part of it), as the model is shown it.

    `path` is relative to the sandbox root. `start_line`/`end_line` (1-based, inclusive) say
    which lines `text` holds when it is not the whole file; `total_lines` is the file's length
    when it was read from disk. `omitted_chars` counts what the budget left out at the end.
    `from_editor`: the client sent the text (a selection or an unsaved buffer), so the file on
    disk may differ.
    """

    path: str
    text: str
    start_line: int | None = None
    end_line: int | None = None
    total_lines: int | None = None
    omitted_chars: int = 0
    from_editor: bool = False

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Resource:
        return cls(
            path=str(data["path"]),
            text=str(data["text"]),
            start_line=data.get("start_line"),
            end_line=data.get("end_line"),
            total_lines=data.get("total_lines"),
            omitted_chars=int(data.get("omitted_chars") or 0),
            from_editor=bool(data.get("from_editor")),
        )


def cut_to_budget(resource: Resource, limit: int) -> Resource:
    """`resource` with its text cut to at most `limit` characters, at a line end when one is
    near (the omitted count and the last line shown are kept for the marker)."""
    text = resource.text
    if len(text) <= limit:
        return resource
    kept = text[:limit]
    newline = kept.rfind("\n")
    if newline >= limit // 2:  # a line end not too far back: cut there, lines stay whole
        kept = kept[: newline + 1]
    first = resource.start_line or 1
    end_line = first + kept.count("\n") - 1 if kept.endswith("\n") else first + kept.count("\n")
    return Resource(
        path=resource.path,
        text=kept,
        start_line=first,
        end_line=max(first, end_line),
        total_lines=resource.total_lines,
        omitted_chars=resource.omitted_chars + len(text) - len(kept),
        from_editor=resource.from_editor,
    )


def fit_budget(
    resources: Sequence[Resource],
    per_resource: int = RESOURCE_BUDGET_CHARS,
    total: int = RESOURCES_BUDGET_CHARS,
) -> list[Resource]:
    """Every resource cut to `per_resource` characters, and all of them to `total`."""
    fitted: list[Resource] = []
    left = total
    for resource in resources:
        cut = cut_to_budget(resource, max(0, min(per_resource, left)))
        left -= len(cut.text)
        fitted.append(cut)
    return fitted


def _fence(text: str) -> str:
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    return "`" * max(3, longest + 1)


def _heading(resource: Resource) -> str:
    where = f"`{resource.path}`"
    if resource.start_line is not None and resource.end_line is not None:
        lines = (
            f"line {resource.start_line}"
            if resource.start_line == resource.end_line
            else f"lines {resource.start_line}-{resource.end_line}"
        )
        of = f" of {resource.total_lines}" if resource.total_lines is not None else ""
        where += f", {lines}{of}"
    elif resource.total_lines is not None:
        where += f", the whole file ({resource.total_lines} lines)"
    if resource.from_editor:
        where += ", as the editor has it (it may differ from the file on disk)"
    return where + ":"


def _omission(resource: Resource) -> str:
    if not resource.omitted_chars:
        return ""
    next_line = (resource.end_line or 0) + 1
    how = (
        f"read_file with path {resource.path!r} and offset {next_line} shows the rest"
        if not resource.from_editor
        else "the rest is in the editor only; the file on disk may differ"
    )
    return f"\n[… {resource.omitted_chars:,} more characters of {resource.path!r} left out: {how}]"


def render_resource(resource: Resource) -> str:
    text = resource.text
    fence = _fence(text)
    body = text if text.endswith("\n") or not text else text + "\n"
    return f"{_heading(resource)}\n{fence}\n{body}{fence}{_omission(resource)}"


def prompt_with_resources(prompt: str, resources: Sequence[Resource]) -> str:
    """The run's first user message: the attached resources, then the prompt.

    Without resources it is the prompt itself, byte for byte.
    """
    if not resources:
        return prompt
    intro = (
        "The user attached a file from the workspace. It is shown below"
        if len(resources) == 1
        else f"The user attached {len(resources)} files from the workspace. Each is shown below"
    ) + " between fences, under its path and lines; the request follows."
    blocks = "\n\n".join(render_resource(resource) for resource in resources)
    return f"{intro}\n\n{blocks}\n\n{prompt}"
