"""The per-result budget: how much of one tool result the model is shown.

A tool may return up to 1 MiB (the workspace tools' cap); sent whole, one build log would
take a quarter of a 200k-token window. The model is shown at most `budget` characters of a
result's JSON text instead. The JSON keeps its shape: the largest string fields (stdout, a
file's content) keep their head and tail around a marker, long lists (grep matches, directory
entries) keep their first and last items around a marker item, and small fields (exit_code,
path, truncated) are never touched. Each marker says how much was left out and how to get it
(read_file with offset/limit, a narrower grep, output sent to a file). The record of the
call keeps the full output: this is only the model's view.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

DEFAULT_RESULT_BUDGET_CHARS = 32_000
"""About 9k tokens: Claude Code cuts a shell result at 30,000 characters, Codex at ~10 KiB."""

MIN_RESULT_BUDGET_CHARS = 1_000
"""Below this a marker and its hint would not leave room for any of the result itself."""

_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str)
# Fields smaller than this are kept whole: cutting them saves nothing and loses meaning.
_SMALL_FIELD_CHARS = 256
_MAX_ATTEMPTS = 4
_RATIO_SAMPLE = 32_768

_HINTS: dict[str, str] = {
    "run_command": (
        "to see it, run the command again with its output sent to a file "
        "(`... > out.log 2>&1`) and page through that with read_file (offset, limit), or "
        "filter the output (grep, head, tail)"
    ),
    "grep": (
        "to see it, narrow the search: a more specific pattern, a path or glob, or a lower "
        "max_results"
    ),
    "glob": "to see it, use a narrower pattern or path",
    "list_dir": "to see it, list a subfolder, or use glob with a narrower pattern",
    "read_file": "to see it, read fewer lines at a time with read_file's offset and limit",
}
_DEFAULT_HINT = "to see it, ask the tool for less (a narrower query, a smaller range)"


def json_chars(value: Any) -> int:
    """Length of `value` as the model sees it (the JSON text providers send)."""
    return len(_ENCODER.encode(value))


def approx_chars(value: Any) -> int:
    """About `json_chars(value)`, several times faster on the small values most results are.

    For JSON-shaped data (what tools return and models send) repr and JSON differ only in
    escapes: JSON is at most 1.5x longer (a control character is \\u0001 against \\x01) and
    often shorter (repr escapes what JSON keeps as it is).
    """
    return len(repr(value))


# JSON of a JSON-shaped value is at most this many times its repr (see `approx_chars`).
_JSON_PER_REPR = 1.5
# JSON of a string is at most this many times its length (a control character is \u0001).
_JSON_PER_CHAR = 6
# repr is at most this many times the JSON (an escaped astral character against the raw one).
_REPR_PER_JSON = 10


@dataclass(slots=True)
class FieldSizes:
    """A result's top-level fields measured once (see `field_sizes`)."""

    sizes: dict[str, int]
    total: int
    """About the JSON's length: what the context guard counts."""
    least: int
    """The JSON is at least this long."""
    most: int
    """The JSON is at most this long."""


def field_sizes(content: dict[str, Any], budget: int | None = None) -> FieldSizes:
    """Each field's size, measured once, with the bounds the JSON lies between.

    A string longer than the budget could hold even without escapes is measured by its
    length (free: a 1 MiB output is known to be over without reading it); anything else by
    `approx_chars` (repr: exact up to escapes, and fast on the small values most fields are).
    """
    sizes: dict[str, int] = {}
    total = least = most = 2
    long_string = budget // _JSON_PER_CHAR if budget is not None else -1
    for key, item in content.items():
        frame = len(key) + 4  # "key": and the comma
        if type(item) is str and len(item) > long_string >= 0:
            size = len(item) + 2
            least += frame + size
            most += frame + _JSON_PER_CHAR * size
        else:
            size = len(repr(item))  # approx_chars, inlined: this runs for every result
            least += frame + size // _REPR_PER_JSON
            most += frame + size + (size >> 1) + 1  # _JSON_PER_REPR
        sizes[key] = size
        total += frame + size
    return FieldSizes(sizes, total, least, most)


def fit_to_budget(tool_name: str, content: dict[str, Any], budget: int | None) -> dict[str, Any]:
    """`content` if its JSON fits in `budget` characters, else a cut copy that does.

    `content` itself is never changed. `budget=None` means no limit.
    """
    fitted, _ = fit_with_size(tool_name, content, budget)
    return fitted


def fit_with_size(
    tool_name: str, content: dict[str, Any], budget: int | None
) -> tuple[dict[str, Any], int]:
    """`fit_to_budget` and the size of what it returns (the context guard's measure, so
    callers need not measure again).

    The result is measured once, field by field (a string by its length: a 1 MiB output is
    known to be over any budget without being encoded); only a result whose size is in
    doubt is encoded, and then only one no longer than the budget allows. The cut reuses the
    field sizes.
    """
    measured = field_sizes(content, budget)
    quick = measured.total
    if budget is None or measured.most <= budget:
        return content, quick  # surely fits: no need to encode it
    # Surely over: cut without an exact measure. In doubt: one encode decides.
    if measured.least <= budget:
        exact = json_chars(content)
        if exact <= budget:
            return content, exact
    cutter = _Cutter(tool_name, content, budget, measured.sizes)
    target = budget
    for _ in range(_MAX_ATTEMPTS):
        # Known to be over budget: the size only has to say so.
        cut = cutter.shrink(content, target, "the result", max(quick, budget + 1))
        cut_size = json_chars(cut)
        if cut_size <= budget:
            return cut, cut_size
        # Escapes and markers made it longer than planned: aim lower by the overshoot.
        target -= cut_size - budget + 64
        if target <= 0:
            break
    fallback = cutter.whole_text(content, budget)
    return fallback, json_chars(fallback)


class _Cutter:
    def __init__(
        self,
        tool_name: str,
        content: dict[str, Any],
        budget: int,
        top_sizes: dict[str, int] | None = None,
    ) -> None:
        self.tool_name = tool_name
        self.content = content
        self.budget = budget
        self.hint = _HINTS.get(tool_name, _DEFAULT_HINT)
        # The result's own fields, measured already by `fit_with_size`.
        self.top_sizes = top_sizes

    def shrink(self, value: Any, target: int, label: str, size: int | None = None) -> Any:
        size = json_chars(value) if size is None else size
        if size <= target:
            return value
        if isinstance(value, str):
            return self._cut_string(value, target, label)
        if isinstance(value, list):
            return self._cut_list(value, target, label)
        if isinstance(value, dict):
            return self._cut_dict(value, target)
        return value  # a number, bool or null is never large

    # -- strings ------------------------------------------------------------------------
    def _marker(self, label: str, omitted: int, total: int, extra: str = "") -> str:
        return (
            f"\n[… {omitted:,} of {total:,} characters of {label} left out here to fit the "
            f"{self.budget:,}-character result budget; {extra or self.hint}]\n"
        )

    def _cut_string(self, text: str, target: int, label: str) -> str:
        total = len(text)
        # Characters of JSON per character of text (escapes: \n, \", \\ count two).
        # Measured on the ends, which are what is kept (a 1 MiB middle need not be encoded).
        sample = (
            text if total <= 2 * _RATIO_SAMPLE else text[:_RATIO_SAMPLE] + text[-_RATIO_SAMPLE:]
        )
        ratio = max(1.0, (json_chars(sample) - 2) / max(1, len(sample)))
        marker_room = len(self._marker(label, total, total, self._line_hint(text, 0, total)))
        keep = int((target - 2 - marker_room * 1.1) / ratio)
        if keep <= 0:
            return self._marker(label, total, total).strip()
        for _ in range(_MAX_ATTEMPTS):
            head_end, tail_start = _split_points(text, keep)
            omitted = tail_start - head_end
            marker = self._marker(
                label, omitted, total, self._line_hint(text, head_end, tail_start)
            )
            cut = text[:head_end] + marker + text[tail_start:]
            over = json_chars(cut) - target
            if over <= 0:
                return cut
            keep -= int(over / ratio) + 16
            if keep <= 0:
                break
        return self._marker(label, total, total).strip()

    def _line_hint(self, text: str, head_end: int, tail_start: int) -> str:
        """For read_file's content: which lines were left out and the call that shows them."""
        if self.tool_name != "read_file" or text is not self.content.get("content"):
            return ""
        start_line = self.content.get("start_line")
        path = self.content.get("path")
        if not isinstance(start_line, int) or not isinstance(path, str):
            return ""
        first = start_line + text.count("\n", 0, head_end)
        middle = text[head_end:tail_start]
        last = first + middle.count("\n") - (1 if middle.endswith("\n") else 0)
        lines = max(1, text.count("\n"))
        per_line = max(1, len(text) // lines)
        fits = max(1, int(self.budget * 0.8) // per_line)
        return (
            f"lines {first:,} to {last:,} are not shown: read them with read_file "
            f"path={path!r} offset={first} limit={min(fits, last - first + 1)} "
            f"(about {fits:,} lines of this file fit in one result)"
        )

    # -- lists ----------------------------------------------------------------------------
    def _list_marker(self, label: str, omitted: int, total: int) -> str:
        return (
            f"[… {omitted:,} of {total:,} items of {label} left out here to fit the "
            f"{self.budget:,}-character result budget; {self.hint}]"
        )

    def _cut_list(self, items: list[Any], target: int, label: str) -> list[Any]:
        sizes = [json_chars(item) + 2 for item in items]  # ", " between items
        room = target - 2 - json_chars(self._list_marker(label, len(items), len(items))) - 2
        head: list[int] = []
        tail: list[int] = []
        used = 0
        # Alternate head and tail so both ends of the list stay in view.
        low, high = 0, len(items) - 1
        take_head = True
        while low <= high:
            index = low if take_head else high
            if used + sizes[index] > room:
                break
            used += sizes[index]
            if take_head:
                head.append(index)
                low += 1
            else:
                tail.append(index)
                high -= 1
            take_head = not take_head
        kept = len(head) + len(tail)
        if kept == len(items):  # cannot happen when the list was over target; kept for safety
            return items
        if kept == 0:
            # Even one item is too big: show the first and last ones, cut down.
            ends = [0] if len(items) == 1 else [0, len(items) - 1]
            share = max(1, room // len(ends))
            shown = [self.shrink(items[i], share, label, sizes[i] - 2) for i in ends]
            omitted = len(items) - len(ends)
            if omitted == 0:
                return shown
            return [shown[0], self._list_marker(label, omitted, len(items)), *shown[1:]]
        marker = self._list_marker(label, len(items) - kept, len(items))
        return [*(items[i] for i in head), marker, *(items[i] for i in reversed(tail))]

    # -- objects --------------------------------------------------------------------------
    def _cut_dict(self, value: dict[str, Any], target: int) -> dict[str, Any]:
        # Approximate sizes pick the cap; the caller checks the exact length of the outcome.
        # The result's top level was measured once already; nested objects are measured here.
        if value is self.content and self.top_sizes is not None:
            sizes = self.top_sizes
        else:
            sizes = {key: approx_chars(item) for key, item in value.items()}
        # The keys and punctuation stay whatever happens; "null" stands in for each value.
        frame = json_chars(dict.fromkeys(value)) - 4 * len(value)
        cap = _water_level(list(sizes.values()), target - frame, _SMALL_FIELD_CHARS)
        return {
            key: item if sizes[key] <= cap else self.shrink(item, cap, key, sizes[key])
            for key, item in value.items()
        }

    # -- last resort ----------------------------------------------------------------------
    def whole_text(self, content: dict[str, Any], budget: int) -> dict[str, Any]:
        """The JSON text itself cut head and tail, for a shape the field cuts cannot fit."""
        text = _ENCODER.encode(content)
        return {"result_cut": self._cut_string(text, budget - 20, "the result")}


def _water_level(sizes: list[int], room: int, floor: int) -> int:
    """The largest cap such that the sizes, each cut to the cap, fit in `room` (>= floor)."""
    remaining = room
    ordered = sorted(sizes)
    left = len(ordered)
    for size in ordered:
        if size * left <= remaining:
            remaining -= size
            left -= 1
            continue
        return max(floor, remaining // left)
    return max(ordered, default=floor)


def _split_points(text: str, keep: int) -> tuple[int, int]:
    """Where the head ends and the tail starts, keeping about `keep` characters, on line
    boundaries when one is near."""
    head_end = keep // 2
    tail_start = len(text) - (keep - head_end)
    newline = text.rfind("\n", head_end - head_end // 5, head_end)
    if newline != -1:
        head_end = newline + 1
    newline = text.find("\n", tail_start, tail_start + (len(text) - tail_start) // 5)
    if newline != -1:
        tail_start = newline + 1
    return head_end, max(head_end, tail_start)
