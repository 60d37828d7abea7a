"""grep's engines: RE2 cannot backtrack catastrophically, Python's re runs in a killable process,
and both find exactly the same lines as a plain line-by-line search."""

from __future__ import annotations

import os
import random
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from cleveragents.tool import ToolActorContext, ToolCallRequest, ToolError, ToolRegistry, ToolRunner
from cleveragents.workspace import Sandbox, register_builtin_tools
from cleveragents.workspace.grep_engine import GrepRequest, compile_line_pattern, re2_available
from cleveragents.workspace.search import grep, search_files
from support.live_processes import wait_until_gone

needs_re2 = pytest.mark.skipif(not re2_available(), reason="google-re2 is not installed")
CATASTROPHIC_LINE = "a" * 30_000 + "b\n"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    sandbox = tmp_path / "ws"
    sandbox.mkdir()
    return sandbox


@needs_re2
def test_a_catastrophic_pattern_runs_on_re2_and_returns(root: Path) -> None:
    (root / "a.txt").write_text(CATASTROPHIC_LINE + "aaa\n")
    result = grep("(a+)+$", sandbox_root=str(root), timeout_s=5)
    assert result["engine"] == "re2"
    assert result["matches"] == ["a.txt:2:aaa"]


async def test_a_catastrophic_backtracking_pattern_is_killed_at_its_timeout(root: Path) -> None:
    """Lookahead needs Python's engine; its process is killed and the worker thread is free."""
    (root / "a.txt").write_text(CATASTROPHIC_LINE)
    registry = ToolRegistry()
    register_builtin_tools(registry)
    runner = ToolRunner(registry)
    threads_before = threading.active_count()
    request = ToolCallRequest("g", "grep", {"pattern": "(?=a)(a+)+$", "timeout_s": 1})
    record = await runner.run(request, ToolActorContext(sandbox_root=str(root)))
    assert record.error_kind == "timeout"
    assert "lookaround or a backreference" in (record.error or "")
    assert wait_until_gone("cleveragents.workspace.grep_engine") == []
    # The worker that ran grep returned: the next call runs at once on the same runner.
    again = await runner.run(
        ToolCallRequest("g2", "grep", {"pattern": "b$"}), ToolActorContext(sandbox_root=str(root))
    )
    assert again.success and again.output["count"] == 1
    assert threading.active_count() <= threads_before + 2
    runner.shutdown()


def test_backreferences_and_lookaround_run_on_python_re(root: Path) -> None:
    (root / "a.txt").write_text("abba\nabcd\nfoobar\nfoobaz\n")
    doubled = grep(r"(\w)\1", sandbox_root=str(root))
    assert doubled["matches"] == ["a.txt:1:abba", "a.txt:3:foobar", "a.txt:4:foobaz"]
    assert doubled["engine"] == "re"
    ahead = grep(r"foo(?!bar)", sandbox_root=str(root))
    assert ahead["matches"] == ["a.txt:4:foobaz"] and ahead["engine"] == "re"


def test_an_invalid_pattern_in_the_process_is_the_same_clear_error(root: Path) -> None:
    with pytest.raises(ToolError, match="invalid regular expression"):
        grep("(?<=a+)b", sandbox_root=str(root))  # Python: look-behind needs a fixed width


def test_the_process_walks_the_sandbox_the_same_way(root: Path, tmp_path: Path) -> None:
    (tmp_path / "outside.txt").write_text("secret abba\n")
    os.symlink(tmp_path / "outside.txt", root / "link.txt")
    (root / "in.txt").write_text("abba\n")
    result = grep(r"(b)\1", sandbox_root=str(root))
    assert result["matches"] == ["in.txt:1:abba"]
    with pytest.raises(ToolError, match="above the sandbox root") as refused:
        grep(r"(b)\1", path="..", sandbox_root=str(root))
    assert refused.value.kind == "sandbox_violation"  # the child's error kind comes back


# -- RE2 finds what a line-by-line search finds ------------------------------------------------
PIECES = ["a", "b", "ab", "a+", "b*", "[ab]", "[^a]", ".", "\\bab", "ab\\b", "(a|b)", "x?", " "]
PIECES += ["\\s", "\\w+", "\\B"]


def random_pattern(rng: random.Random) -> str:
    body = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 4)))
    return rng.choice(["", "^"]) + body + rng.choice(["", "$"])


def random_text(rng: random.Random) -> str:
    lines = []
    for _ in range(rng.randint(0, 12)):
        lines.append("".join(rng.choice("ab x\t") for _ in range(rng.randint(0, 10))))
    text = "\n".join(lines)
    return text + rng.choice(["", "\n"])


@needs_re2
def test_re2_and_python_re_find_the_same_lines(root: Path) -> None:
    rng = random.Random(20240601)
    box = Sandbox(str(root))
    for trial in range(600):
        text = random_text(rng)
        if trial % 7 == 0:
            text = text.replace("\n", "\r\n")  # CR line ends take the line-by-line road
        (root / "f.txt").write_text(text, newline="")
        pattern = random_pattern(rng)
        ignore_case = trial % 5 == 0
        request = GrepRequest(pattern, "f.txt", None, ignore_case, 5000, str(root))
        fast = compile_line_pattern(pattern, ignore_case)
        assert fast.engine == "re2"
        reference = compile_line_pattern(pattern, ignore_case, engine="re")
        line_by_line = replace(fast, find_candidate=None, search_bytes=None)
        found = search_files(box, request, fast, None)["matches"]
        # The whole-file search is an optimisation: it finds what RE2 line by line finds...
        assert found == search_files(box, request, line_by_line, None)["matches"], (pattern, text)
        # ...which is what Python's re finds, but for \B at an empty line (re never matches
        # an empty string there; RE2 does).
        if "\\B" not in pattern:
            expected = search_files(box, request, reference, None)["matches"]
            assert found == expected, (pattern, text)


@needs_re2
def test_lines_longer_than_the_read_size_are_searched_in_pieces_as_before(root: Path) -> None:
    (root / "long.txt").write_text("x" * (1024 * 1024 + 10) + "needle\nneedle\n")
    result = grep("needle$", sandbox_root=str(root))
    assert [m.split(":")[1] for m in result["matches"]] == ["1", "2"]


@needs_re2
def test_invalid_utf8_is_searched_as_replacement_characters(root: Path) -> None:
    (root / "bad.txt").write_bytes(b"caf\xe9 latte\nplain\n")
    result = grep("caf. latte", sandbox_root=str(root))
    assert result["matches"] == ["bad.txt:1:caf\ufffd latte"]


def test_timeout_is_bounded(root: Path) -> None:
    for bad in (0, 101):
        with pytest.raises(ToolError, match="timeout_s"):
            grep("x", sandbox_root=str(root), timeout_s=bad)
