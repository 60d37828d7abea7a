"""How grep matches a line: RE2 where it can, Python's `re` in a process that can be killed.

RE2 (the `google-re2` package) runs every pattern in time linear in the text, so no pattern can
keep a worker busy: `(a+)+$` on a long line of a's costs what `a` costs. RE2 has no lookaround
and no backreferences; a pattern that needs them (Python's `re` accepts it, RE2 does not) runs
on `re` in a child process, which is killed when the timeout passes. Without `google-re2`
installed, every pattern takes that road. Run as `python -m cleveragents.workspace.grep_engine`,
this module is that child: a request as JSON on stdin, the result as JSON on stdout.
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, Literal

from cleveragents.tool.errors import ToolError


@functools.cache
def _re2_module() -> Any:
    """google-re2, imported at the first grep (it loads a C++ runtime), or None without it."""
    try:
        import re2
    except ImportError:  # a dependency; without it every pattern runs in a process
        return None
    return re2


DEFAULT_GREP_TIMEOUT_S = 30.0
MAX_GREP_TIMEOUT_S = 100.0
"""Below the tool's own 120 s deadline, so grep's timeout (and its message) always fires first."""

Engine = Literal["re2", "re"]


@dataclass(frozen=True, slots=True)
class GrepRequest:
    pattern: str
    path: str
    glob: str | None
    ignore_case: bool
    max_results: int
    sandbox_root: str
    # The never-visible paths the parent's Sandbox refuses: the child refuses the same.
    hidden: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class LineMatcher:
    engine: Engine
    search: Callable[[str], bool]
    # RE2 only, over a whole file as UTF-8: where the first candidate at or after a byte
    # offset starts, or None. It never skips a line that matches (it may stop at one that
    # does not): one RE2 call rules out a file without a match, instead of one per line.
    find_candidate: Callable[[bytes, int], int | None] | None = None
    # RE2 only: `search` for one line given as UTF-8.
    search_bytes: Callable[[bytes], bool] | None = None


def re2_available() -> bool:
    return _re2_module() is not None


def compile_line_pattern(
    pattern: str, ignore_case: bool, *, engine: Engine | None = None
) -> LineMatcher:
    """The matcher for one grep: RE2 unless the pattern needs Python's engine (or `engine`)."""
    try:
        compiled = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error as exc:
        raise ToolError(f"invalid regular expression {pattern!r}: {exc}") from None
    _re2 = _re2_module()
    if _re2 is not None and engine != "re":
        options = _re2.Options()
        options.log_errors = False  # RE2 would print every refused pattern on stderr
        options.case_sensitive = not ignore_case
        try:
            linear = _re2.compile(pattern, options)
        except _re2.error:
            pass  # Lookaround, a backreference, or another construct only `re` has.
        else:
            linear_bytes = _re2.compile(pattern.encode("utf-8"), options)
            return LineMatcher(
                "re2",
                lambda text: linear.search(text) is not None,
                _whole_file_finder(pattern, options),
                lambda line: linear_bytes.search(line) is not None,
            )
    return LineMatcher("re", lambda text: compiled.search(text) is not None)


def _whole_file_finder(pattern: str, options: Any) -> Callable[[bytes, int], int | None] | None:
    """The pattern in multi-line mode, for searching a whole file at once.

    A line that matches on its own matches inside the file too, as long as `^` and `$` mean
    line starts and ends (multi-line mode; the caller reads files with CR line ends line by
    line, as `$` would not see those ends) and no `\\A` or `\\z` asks for the text's own ends.
    """
    if "\\A" in pattern or "\\z" in pattern:
        return None
    _re2 = _re2_module()
    try:
        whole = _re2.compile(("(?m)" + pattern).encode("utf-8"), options)
    except _re2.error:
        return None

    def find(text: bytes, pos: int) -> int | None:
        found = whole.search(text, pos)
        return None if found is None else int(found.start())

    return find


def grep_in_process(request: GrepRequest, timeout_s: float) -> dict[str, Any]:
    """Run the search with Python's `re` in a child process, killed after `timeout_s`."""
    package_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join(
        part for part in (package_parent, environment.get("PYTHONPATH", "")) if part
    )
    try:
        completed = subprocess.run(
            [sys.executable, "-m", "cleveragents.workspace.search"],
            input=json.dumps(asdict(request)),
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env=environment,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ToolError(
            f"grep for {request.pattern!r} did not finish within {timeout_s:g} s and was "
            "stopped. The pattern uses lookaround or a backreference, which only Python's "
            "backtracking engine runs, and that can take exponential time: rewrite it without "
            "them (those run on RE2, in linear time), or narrow path and glob",
            kind="timeout",
        ) from None
    try:
        answer = json.loads(completed.stdout)
    except json.JSONDecodeError:
        detail = completed.stderr.strip()[-2000:]
        raise ToolError(
            f"the grep process failed (exit code {completed.returncode}): {detail}"
        ) from None
    if "error" in answer:
        raise ToolError(str(answer["error"]), kind=answer.get("kind") or "execution_error")
    result: dict[str, Any] = answer["result"]
    return result
