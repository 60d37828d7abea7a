"""Glob patterns (`*`, `?`, `[...]`, `{a,b}`, `**`) compiled to regular expressions on paths."""

from __future__ import annotations

import re
from collections.abc import Callable

_WILDCARDS = frozenset("*?[{")


def has_wildcard(segment: str) -> bool:
    return any(char in _WILDCARDS for char in segment)


def _class_end(segment: str, start: int) -> int:
    """Index of the `]` closing the class opened at `start`, or -1."""
    index = start + 1
    if index < len(segment) and segment[index] in "!^":
        index += 1
    if index < len(segment) and segment[index] == "]":
        index += 1  # A leading `]` is a member, not the end.
    while index < len(segment):
        if segment[index] == "]":
            return index
        index += 1
    return -1


def _segment_regex(segment: str) -> str:
    out: list[str] = []
    index = 0
    while index < len(segment):
        char = segment[index]
        if char == "*":
            while index + 1 < len(segment) and segment[index + 1] == "*":
                index += 1
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[" and (end := _class_end(segment, index)) != -1:
            body = segment[index + 1 : end]
            negate = body[:1] in ("!", "^")
            if negate:
                body = body[1:]
            body = body.replace("\\", "\\\\")
            out.append(f"[^/{body}]" if negate else f"[{body}]")
            index = end
        elif char == "{" and (end := segment.find("}", index)) != -1:
            choices = segment[index + 1 : end].split(",")
            out.append("(?:" + "|".join(_segment_regex(choice) for choice in choices) + ")")
            index = end
        else:
            out.append(re.escape(char))
        index += 1
    return "".join(out)


def glob_regex(segments: list[str]) -> str:
    """A regex for whole `/`-joined relative paths; `**` spans any number of directories."""
    out: list[str] = []
    last = len(segments) - 1
    for position, segment in enumerate(segments):
        if segment == "**":
            out.append(".*" if position == last else "(?:[^/]+/)*")
        else:
            out.append(_segment_regex(segment) + ("" if position == last else "/"))
    return "".join(out)


def compile_glob(segments: list[str]) -> Callable[[str], bool]:
    """A predicate on relative paths; raises re.error for a malformed pattern."""
    regex = re.compile(glob_regex(segments), re.DOTALL)
    return lambda relative: regex.fullmatch(relative) is not None
