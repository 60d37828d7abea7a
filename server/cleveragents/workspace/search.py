"""Search tools: glob (find files by name pattern) and grep (find lines by regex).

Both walk the tree through directory descriptors opened with `O_NOFOLLOW`: symbolic links are
seen as names and never followed, so nothing a link points at (inside or out) is read by a walk.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from cleveragents.tool.errors import SandboxViolation, ToolError

from .globbing import compile_glob, has_wildcard
from .grep_engine import (
    DEFAULT_GREP_TIMEOUT_S,
    MAX_GREP_TIMEOUT_S,
    GrepRequest,
    LineMatcher,
    compile_line_pattern,
    grep_in_process,
)
from .limits import MAX_OUTPUT_BYTES, shorten_line
from .names import QUOTED_NAMES_NOTE, shown_path, with_note
from .sandbox import DIR_OPEN_FLAGS, Sandbox, closing_fd, open_file_at, require_sandbox

MAX_WALK_DEPTH = 64
MAX_WALK_ENTRIES = 200_000
MAX_GLOB_RESULTS = 1000
DEFAULT_GREP_RESULTS = 200
MAX_GREP_RESULTS = 5000
# Version-control internals are noise for every search a model makes.
SKIPPED_DIRECTORIES = frozenset({".git"})
_GREP_LINE_BYTES = 1024 * 1024
_BINARY_SNIFF_BYTES = 8192


@dataclass(frozen=True, slots=True)
class TreeEntry:
    """One name met by a walk; `dir_fd` is its directory, valid only until the walk moves on."""

    dir_fd: int
    name: str
    relative: str  # `/`-joined, from where the walk started
    kind: str  # "file", "dir", "symlink" or "other"


class TreeWalk:
    """A depth-first walk in name order that never follows a symbolic link."""

    def __init__(self, skip: frozenset[str] = frozenset()) -> None:
        self.entries_seen = 0
        self.cut_short = False
        # Relative paths never shown nor entered: the never-visible paths under the start.
        self.skip = skip

    def walk(self, dir_fd: int, prefix: str = "", depth: int = 0) -> Iterator[TreeEntry]:
        try:
            with os.scandir(dir_fd) as iterator:
                found = sorted(iterator, key=lambda entry: entry.name)
        except OSError:
            return
        for entry in found:
            self.entries_seen += 1
            if self.entries_seen > MAX_WALK_ENTRIES:
                self.cut_short = True
                return
            relative = f"{prefix}{entry.name}"
            if relative in self.skip:
                continue
            kind = _kind(entry)
            yield TreeEntry(dir_fd, entry.name, relative, kind)
            if kind != "dir" or entry.name in SKIPPED_DIRECTORIES:
                continue
            if depth + 1 >= MAX_WALK_DEPTH:
                self.cut_short = True
                continue
            try:
                child = os.open(entry.name, DIR_OPEN_FLAGS, dir_fd=dir_fd)
            except OSError:
                continue  # Gone, unreadable, or swapped for a link since scandir: skip it.
            with closing_fd(child):
                yield from self.walk(child, relative + "/", depth + 1)
            if self.cut_short and self.entries_seen > MAX_WALK_ENTRIES:
                return


def _kind(entry: os.DirEntry[str]) -> str:
    # DirEntry answers these from the directory listing itself, without a stat per name.
    try:
        if entry.is_symlink():
            return "symlink"
        if entry.is_dir(follow_symlinks=False):
            return "dir"
        if entry.is_file(follow_symlinks=False):
            return "file"
    except OSError:
        pass
    return "other"


def _pattern_segments(sandbox: Sandbox, pattern: str, what: str) -> tuple[list[str], bool]:
    """A glob split into segments, and whether it was absolute (anchored at the root)."""
    if not pattern:
        raise ToolError(f"{what} is empty")
    if "\0" in pattern:
        raise SandboxViolation(pattern, "contains a NUL byte")
    anchored = os.path.isabs(pattern)
    relative = pattern
    if anchored:
        inside = sandbox.relative_to_root(pattern)
        if inside is None:
            raise SandboxViolation(pattern, "is an absolute pattern outside the sandbox root")
        relative = inside
    segments = [segment for segment in relative.split("/") if segment not in ("", ".")]
    if any(segment == ".." for segment in segments):
        raise SandboxViolation(pattern, "contains '..': a pattern cannot leave the folder searched")
    if segments and segments[0].startswith("~"):
        raise SandboxViolation(pattern, "starts with '~': home directories are outside the sandbox")
    if not segments:
        raise ToolError(f"{what} {pattern!r} names no files")
    return segments, anchored


def _compile(segments: list[str], original: str) -> Callable[[str], bool]:
    try:
        return compile_glob(segments)
    except re.error as exc:
        raise ToolError(f"malformed glob pattern {original!r}: {exc}") from None


def _descend_literal(dir_fd: int, names: list[str]) -> int | None:
    """Open the plain (wildcard-free) leading directories of a pattern, never through links."""
    fd = os.dup(dir_fd)
    for name in names:
        try:
            child = os.open(name, DIR_OPEN_FLAGS, dir_fd=fd)
        except OSError:
            os.close(fd)
            return None
        os.close(fd)
        fd = child
    return fd


def _join(*parts: str) -> str:
    return "/".join(part for part in parts if part and part != ".") or "."


def glob(pattern: str, path: str = ".", sandbox_root: str | None = None) -> dict[str, Any]:
    """Find files in the workspace whose path matches a glob pattern.

    The pattern is matched against the whole path relative to `path`: `*` and `?` stay within
    one folder, `**` spans any number of folders, `[abc]` and `{py,pyi}` choose. So `*.py`
    matches only directly in `path`; use `**/*.py` for every level. Files and symbolic links
    match (links are not followed); folders named .git are not searched. Returns {matches,
    count, truncated}: paths relative to the workspace root, sorted, at most 1000.

    Args:
        pattern: Glob pattern, e.g. "**/*.py" or "src/**/test_*.{py,pyi}".
        path: Folder to search from, relative to the workspace root (default: the root).
    """
    sandbox = require_sandbox(sandbox_root)
    segments, anchored = _pattern_segments(sandbox, pattern, "glob pattern")
    base = sandbox.resolve("." if anchored else path)
    literal: list[str] = []
    while len(segments) > 1 and not has_wildcard(segments[0]) and segments[0] != "**":
        literal.append(segments.pop(0))
    matches_path = _compile(segments, pattern)
    matches: list[str] = []
    size = 0
    truncated = False
    start_parts = (*base.parts, *literal)
    sandbox.check_visible(pattern, start_parts)
    with closing_fd(sandbox.open_directory(base)) as base_fd:
        start = _descend_literal(base_fd, literal)
        if start is None:
            return {"matches": [], "count": 0, "truncated": False}
        walk = TreeWalk(sandbox.hidden_under(start_parts))
        with closing_fd(start):
            for entry in walk.walk(start):
                if entry.kind not in ("file", "symlink") or not matches_path(entry.relative):
                    continue
                found = shown_path(_join(base.relative, *literal, entry.relative))
                size += len(found.encode()) + 1
                if len(matches) >= MAX_GLOB_RESULTS or size > MAX_OUTPUT_BYTES:
                    truncated = True
                    break
                matches.append(found)
        truncated = truncated or walk.cut_short
    return with_note({"matches": matches, "count": len(matches), "truncated": truncated}, *matches)


def grep(
    pattern: str,
    path: str = ".",
    glob: str | None = None,
    ignore_case: bool = False,
    max_results: int = DEFAULT_GREP_RESULTS,
    timeout_s: float = DEFAULT_GREP_TIMEOUT_S,
    sandbox_root: str | None = None,
) -> dict[str, Any]:
    """Search workspace files for lines matching a regular expression (Python `re` syntax).

    Searches one file, or every text file under a folder (binary files, symbolic links and
    .git folders are skipped). Patterns run on RE2, which takes time linear in the text:
    \\w, \\d, \\s and \\b match ASCII only there. Lookaround and backreferences, which RE2
    lacks, run on Python's engine in a separate process that is killed at the timeout.
    Returns {matches, count, truncated, files_searched, engine}: each match is
    "path:line:text" with the path relative to the workspace root and the line numbered from
    1 (long lines are shortened). `truncated` is true when max_results or the 1 MiB cap
    stopped the search early.

    Args:
        pattern: Regular expression to look for in each line.
        path: File or folder to search, relative to the workspace root (default: the root).
        glob: Only search files matching this glob: a pattern without "/" (e.g. "*.py") is
            matched against file names, one with "/" against paths relative to `path`.
        ignore_case: Match letters regardless of case.
        max_results: Most matching lines to return (default 200, at most 5000).
        timeout_s: Seconds before the search gives up (default 30, at most 100).
    """
    sandbox = require_sandbox(sandbox_root)
    if not 1 <= max_results <= MAX_GREP_RESULTS:
        raise ToolError(f"max_results must be between 1 and {MAX_GREP_RESULTS}, got {max_results}")
    if not 0 < timeout_s <= MAX_GREP_TIMEOUT_S:
        raise ToolError(
            f"timeout_s must be more than 0 and at most {MAX_GREP_TIMEOUT_S:g}, got {timeout_s}"
        )
    matcher = compile_line_pattern(pattern, ignore_case)
    request = GrepRequest(
        pattern, path, glob, ignore_case, max_results, sandbox.root, sandbox.hidden
    )
    if matcher.engine == "re":
        # Python's engine backtracks and cannot be interrupted: only a process can be killed.
        return grep_in_process(request, timeout_s)
    return search_files(sandbox, request, matcher, time.monotonic() + timeout_s)


def search_files(
    sandbox: Sandbox, request: GrepRequest, matcher: LineMatcher, deadline: float | None
) -> dict[str, Any]:
    """The search itself, for the tool (RE2, a deadline) and for the grep process (re, none)."""
    file_filter: Callable[[str], bool] | None = None
    filter_by_name = False
    if request.glob is not None:
        segments, _ = _pattern_segments(sandbox, request.glob, "glob filter")
        filter_by_name = "/" not in request.glob.strip("/")
        file_filter = _compile(segments, request.glob)
    target = sandbox.resolve(request.path)
    search = _GrepSearch(matcher, request.max_results, deadline, request.pattern)
    fd, is_dir = sandbox.open_entry(target)
    with closing_fd(fd):
        if not is_dir:
            search.search_file(fd, shown_path(target.relative))
        else:
            walk = TreeWalk(sandbox.hidden_under(target.parts))
            for entry in walk.walk(fd):
                if search.stopped:
                    break
                if entry.kind != "file":
                    continue
                if file_filter is not None:
                    subject = entry.name if filter_by_name else entry.relative
                    if not file_filter(subject):
                        continue
                try:
                    file_fd = open_file_at(entry.dir_fd, entry.name, target)
                except ToolError:
                    continue  # Vanished or replaced since the walk saw it.
                with closing_fd(file_fd):
                    shown = shown_path(_join(target.relative, entry.relative))
                    search.search_file(file_fd, shown)
            search.truncated = search.truncated or walk.cut_short
    result: dict[str, Any] = {
        "matches": search.matches,
        "count": len(search.matches),
        "truncated": search.truncated,
        "files_searched": search.files_searched,
        "engine": matcher.engine,
    }
    if search.quoted_names:
        result["note"] = QUOTED_NAMES_NOTE
    return result


class _GrepSearch:
    def __init__(
        self, matcher: LineMatcher, max_results: int, deadline: float | None, pattern: str
    ) -> None:
        self.search = matcher.search
        self.find_candidate = matcher.find_candidate
        self.search_bytes = matcher.search_bytes
        self.max_results = max_results
        self.deadline = deadline
        self.pattern = pattern
        self.matches: list[str] = []
        self.size = 0
        self.files_searched = 0
        self.truncated = False
        self.stopped = False
        self.quoted_names = False  # a match's path is C-quoted: the result gets the note

    def _check_deadline(self) -> None:
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise ToolError(
                f"grep for {self.pattern!r} stopped at its timeout after searching "
                f"{self.files_searched} files ({len(self.matches)} matches so far); narrow the "
                "search with path or glob, or raise timeout_s",
                kind="timeout",
            )

    def search_file(self, fd: int, shown_path: str) -> None:
        """Search one open file; `shown_path` is its path as the results show it (quoted when
        its name is not plain text: names.py)."""
        self._check_deadline()
        if b"\0" in os.pread(fd, _BINARY_SNIFF_BYTES, 0):
            return
        self.files_searched += 1
        if self.find_candidate is not None:
            data = os.pread(fd, _GREP_LINE_BYTES + 1, 0)
            # Long lines are cut into pieces and CR line ends hide `$`: those go line by line.
            if len(data) <= _GREP_LINE_BYTES and b"\r" not in data:
                # Valid UTF-8 throughout, as the line-by-line reading would see it.
                utf8 = data.decode("utf-8", errors="replace").encode("utf-8")
                self._search_text(utf8, shown_path)
                return
        line_number = 0
        at_line_start = True
        with os.fdopen(os.dup(fd), "rb") as stream:
            while not self.stopped:
                raw: bytes = stream.readline(_GREP_LINE_BYTES)
                if not raw:
                    return
                if at_line_start:
                    line_number += 1
                at_line_start = raw.endswith(b"\n")
                text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
                if self.search(text):
                    self._add(f"{shown_path}:{line_number}:{shorten_line(text)}")
                if line_number % 1024 == 0:
                    self._check_deadline()

    def _search_text(self, text: bytes, shown_path: str) -> None:
        """A whole (small) file: only the lines where a candidate starts are tried on their own."""
        assert self.find_candidate is not None and self.search_bytes is not None
        position = 0
        line_number = 1
        counted_to = 0
        tried = 0
        while not self.stopped:
            tried += 1
            if tried % 1024 == 0:
                self._check_deadline()
            start = self.find_candidate(text, position)
            if start is None:
                return
            line_start = text.rfind(b"\n", 0, start) + 1
            if line_start == len(text):
                return  # After the last line end: no line there.
            line_end = text.find(b"\n", line_start)
            line_end = len(text) if line_end == -1 else line_end
            line_number += text.count(b"\n", counted_to, line_start)
            counted_to = line_start
            line = text[line_start:line_end]
            if self.search_bytes(line):
                shown = shorten_line(line.decode("utf-8"))
                self._add(f"{shown_path}:{line_number}:{shown}")
            position = line_end + 1
            if position > len(text):
                return

    def _add(self, line: str) -> None:
        self.quoted_names = self.quoted_names or line.startswith('"')
        self.size += len(line.encode("utf-8")) + 1
        if len(self.matches) >= self.max_results or self.size > MAX_OUTPUT_BYTES:
            self.truncated = True
            self.stopped = True
            return
        self.matches.append(line)


def main() -> int:
    """The grep child (`python -m cleveragents.workspace.search`).

    Searches as asked on stdin with Python's `re` and answers on stdout.
    """
    request = GrepRequest(**json.loads(sys.stdin.read()))
    try:
        matcher = compile_line_pattern(request.pattern, request.ignore_case, engine="re")
        result = search_files(Sandbox(request.sandbox_root, request.hidden), request, matcher, None)
    except ToolError as exc:
        print(json.dumps({"error": str(exc), "kind": exc.kind}))
        return 0
    print(json.dumps({"result": result}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
