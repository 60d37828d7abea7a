"""The file and search tools on real files: happy paths, windows, caps and clear failures."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from cleveragents.tool import ToolActorContext, ToolCallRequest, ToolError, ToolRegistry, ToolRunner
from cleveragents.tool.records import ToolCallRecord
from cleveragents.workspace import builtin_tools, register_builtin_tools
from cleveragents.workspace.builtin_names import BUILTIN_TOOL_NAMES
from cleveragents.workspace.files import edit_file, list_dir, read_file, write_file
from cleveragents.workspace.limits import MAX_OUTPUT_BYTES
from cleveragents.workspace.search import glob, grep

MiB = 1024 * 1024


@pytest.fixture
def root(tmp_path: Path) -> Path:
    sandbox = tmp_path / "ws"
    sandbox.mkdir()
    return sandbox


async def call(sandbox: Path, tool: str, arguments: dict[str, Any]) -> ToolCallRecord:
    registry = ToolRegistry()
    register_builtin_tools(registry)
    context = ToolActorContext(sandbox_root=str(sandbox))
    return await ToolRunner(registry).run(ToolCallRequest("c", tool, arguments), context)


# -- the specs -------------------------------------------------------------------------------
def test_builtin_specs_declare_what_they_do() -> None:
    specs = {spec.name: spec for spec in builtin_tools()}
    assert tuple(specs) == BUILTIN_TOOL_NAMES  # tests/workspace/test_builtin_names.py
    mutating = {name for name, spec in specs.items() if spec.mutating}
    assert mutating == {"write_file", "edit_file", "run_command"}
    assert {name for name, spec in specs.items() if spec.executes_code} == {"run_command"}
    for spec in specs.values():
        # update_plan touches no file: it alone needs no sandbox.
        assert spec.context_params == frozenset(
            set() if spec.name == "update_plan" else {"sandbox_root"}
        )
        assert "sandbox_root" not in spec.input_schema["properties"]
        assert spec.input_schema["additionalProperties"] is False
        assert "Returns" in spec.description
        for name, prop in spec.input_schema["properties"].items():
            assert prop.get("description"), f"{spec.name}.{name} has no description"
    assert specs["run_command"].is_async
    assert (
        specs["run_command"].timeout_s
        > specs["run_command"].input_schema["properties"]["timeout_s"]["maximum"]
    )


def test_register_builtin_tools_refuses_duplicates_unless_replacing() -> None:
    registry = ToolRegistry()
    assert len(register_builtin_tools(registry)) == 8
    with pytest.raises(ValueError, match="already registered"):
        register_builtin_tools(registry)
    register_builtin_tools(registry, replace=True)
    assert len(registry) == 8


async def test_schema_bounds_are_enforced_by_the_runner(root: Path) -> None:
    (root / "a.txt").write_text("x\n")
    record = await call(root, "read_file", {"path": "a.txt", "offset": 0})
    assert record.error_kind == "validation_error"
    record = await call(root, "edit_file", {"path": "a.txt", "old_text": "", "new_text": "y"})
    assert record.error_kind == "validation_error"
    record = await call(root, "read_file", {"path": "a.txt", "sandbox_root": "/"})
    assert record.success and record.inputs["sandbox_root"] == str(root)


# -- read_file -------------------------------------------------------------------------------
def test_read_file_whole_and_windows(root: Path) -> None:
    (root / "lines.txt").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    whole = read_file("lines.txt", sandbox_root=str(root))
    assert whole["content"] == (root / "lines.txt").read_text()
    assert (whole["total_lines"], whole["start_line"], whole["end_line"]) == (10, 1, 10)
    assert whole["truncated"] is False and whole["next_offset"] is None
    window = read_file("lines.txt", offset=3, limit=4, sandbox_root=str(root))
    assert window["content"] == "line 3\nline 4\nline 5\nline 6\n"
    assert (window["start_line"], window["end_line"], window["total_lines"]) == (3, 6, 10)
    assert window["truncated"] is True and window["next_offset"] == 7
    tail = read_file("lines.txt", offset=9, limit=100, sandbox_root=str(root))
    assert tail["content"] == "line 9\nline 10\n" and tail["truncated"] is False


def test_read_file_counts_a_last_line_without_newline(root: Path) -> None:
    (root / "a.txt").write_text("one\ntwo")
    result = read_file("a.txt", sandbox_root=str(root))
    assert result["total_lines"] == 2 and result["content"] == "one\ntwo"
    (root / "empty.txt").write_text("")
    empty = read_file("empty.txt", sandbox_root=str(root))
    assert empty["total_lines"] == 0 and empty["content"] == "" and not empty["truncated"]


def test_read_file_clear_failures(root: Path) -> None:
    (root / "a.txt").write_text("one\ntwo\n")
    (root / "d").mkdir()
    (root / "bin.dat").write_bytes(b"\x7fELF\0\0\1binary")
    cases = {
        ("missing.txt", 1): "does not exist",
        ("d", 1): "is a directory",
        ("a.txt", 5): "past the end",
        ("bin.dat", 1): "binary",
    }
    for (path, offset), message in cases.items():
        with pytest.raises(ToolError, match=message):
            read_file(path, offset=offset, sandbox_root=str(root))
    os.mkfifo(root / "pipe")
    with pytest.raises(ToolError, match="not a regular file"):
        read_file("pipe", sandbox_root=str(root))


def test_read_file_cuts_output_over_one_mebibyte(root: Path) -> None:
    line = "é" * 99 + "\n"  # 199 bytes, two-byte characters to test the cut boundary
    count = (3 * MiB // 2) // len(line.encode()) + 1
    (root / "big.txt").write_text(line * count)
    result = read_file("big.txt", limit=count, sandbox_root=str(root))
    assert result["truncated"] is True
    assert result["total_lines"] == count
    content = result["content"].encode()
    assert MAX_OUTPUT_BYTES - 2 <= len(content) <= MAX_OUTPUT_BYTES
    assert "\ufffd" not in result["content"]
    assert result["next_offset"] == result["end_line"]  # the last line shown was cut
    rest = read_file("big.txt", offset=result["next_offset"], limit=count, sandbox_root=str(root))
    assert rest["truncated"] is False
    assert rest["end_line"] == count


def test_read_file_one_enormous_line(root: Path) -> None:
    (root / "one.txt").write_bytes(b"x" * (3 * MiB))
    result = read_file("one.txt", sandbox_root=str(root))
    assert result["total_lines"] == 1 and result["truncated"] is True
    assert len(result["content"]) == MAX_OUTPUT_BYTES


# -- write_file ------------------------------------------------------------------------------
def test_write_file_creates_directories_and_reports(root: Path) -> None:
    result = write_file("a/b/c.txt", "héllo\n", sandbox_root=str(root))
    assert result == {"path": "a/b/c.txt", "bytes_written": 7, "created": True}
    assert (root / "a/b/c.txt").read_text() == "héllo\n"
    again = write_file("a/b/c.txt", "second\n", sandbox_root=str(root))
    assert again["created"] is False
    assert (root / "a/b/c.txt").read_text() == "second\n"
    # Absolute paths inside the sandbox are accepted.
    write_file(str(root / "abs.txt"), "abs", sandbox_root=str(root))
    assert (root / "abs.txt").read_text() == "abs"


def test_write_file_is_atomic_and_keeps_permissions(root: Path) -> None:
    target = root / "script.sh"
    target.write_text("old\n")
    target.chmod(0o751)
    before_inode = target.stat().st_ino
    with target.open() as reader:
        write_file("script.sh", "new\n", sandbox_root=str(root))
        # The old file was replaced, not rewritten in place: an open reader still sees it.
        assert reader.read() == "old\n"
    assert target.read_text() == "new\n"
    assert target.stat().st_ino != before_inode
    assert stat.S_IMODE(target.stat().st_mode) == 0o751
    assert sorted(os.listdir(root)) == ["script.sh"]  # no temporary file left behind


def test_write_file_clear_failures(root: Path) -> None:
    (root / "d").mkdir()
    (root / "f.txt").write_text("x")
    with pytest.raises(ToolError, match="is a directory"):
        write_file("d", "x", sandbox_root=str(root))
    with pytest.raises(ToolError, match="does not exist"):
        write_file("new/x.txt", "x", create_dirs=False, sandbox_root=str(root))
    with pytest.raises(ToolError, match="not a directory"):
        write_file("f.txt/x.txt", "x", sandbox_root=str(root))
    with pytest.raises(ToolError, match="root directory"):
        write_file(".", "x", sandbox_root=str(root))
    assert not (root / "new").exists()
    assert sorted(os.listdir(root)) == ["d", "f.txt"]


# -- edit_file -------------------------------------------------------------------------------
def test_edit_file_replaces_exactly_once(root: Path) -> None:
    (root / "m.py").write_text("def f():\n    return 1\n")
    result = edit_file("m.py", "return 1", "return 2", sandbox_root=str(root))
    assert result == {"path": "m.py", "replacements": 1}
    assert (root / "m.py").read_text() == "def f():\n    return 2\n"


def test_edit_file_missing_and_ambiguous_text_change_nothing(root: Path) -> None:
    original = "a = 1\nb = 1\n"
    (root / "m.py").write_text(original)
    with pytest.raises(ToolError, match="was not found"):
        edit_file("m.py", "c = 1", "c = 2", sandbox_root=str(root))
    with pytest.raises(ToolError, match="occurs 2 times"):
        edit_file("m.py", "= 1", "= 2", sandbox_root=str(root))
    with pytest.raises(ToolError, match="the same"):
        edit_file("m.py", "a", "a", sandbox_root=str(root))
    with pytest.raises(ToolError, match="does not exist"):
        edit_file("nope.py", "a", "b", sandbox_root=str(root))
    assert (root / "m.py").read_text() == original
    result = edit_file("m.py", "= 1", "= 2", replace_all=True, sandbox_root=str(root))
    assert result["replacements"] == 2
    assert (root / "m.py").read_text() == "a = 2\nb = 2\n"


def test_edit_file_keeps_bytes_that_are_not_utf8(root: Path) -> None:
    (root / "latin1.txt").write_bytes(b"caf\xe9 = old\n")
    edit_file("latin1.txt", "old", "new", sandbox_root=str(root))
    assert (root / "latin1.txt").read_bytes() == b"caf\xe9 = new\n"


# -- list_dir --------------------------------------------------------------------------------
def test_list_dir_entries(root: Path) -> None:
    (root / "b.txt").write_text("12345")
    (root / "a_dir").mkdir()
    os.symlink("b.txt", root / "c_link")
    result = list_dir(sandbox_root=str(root))
    assert result == {
        "path": ".",
        "entries": [
            {"name": "a_dir", "type": "dir"},
            {"name": "b.txt", "type": "file", "size": 5},
            {"name": "c_link", "type": "symlink", "target": "b.txt"},
        ],
        "truncated": False,
    }
    assert list_dir("a_dir", sandbox_root=str(root))["entries"] == []
    with pytest.raises(ToolError, match="not a directory"):
        list_dir("b.txt", sandbox_root=str(root))
    with pytest.raises(ToolError, match="does not exist"):
        list_dir("missing", sandbox_root=str(root))


def test_list_dir_is_capped(root: Path) -> None:
    for n in range(2005):
        (root / f"f{n:05}").touch()
    result = list_dir(sandbox_root=str(root))
    assert result["truncated"] is True and len(result["entries"]) == 2000
    assert result["entries"][0]["name"] == "f00000"


# -- glob ------------------------------------------------------------------------------------
@pytest.fixture
def tree(root: Path) -> Path:
    for rel in (
        "setup.py",
        "README.md",
        "src/pkg/__init__.py",
        "src/pkg/core.py",
        "src/pkg/core.pyi",
        "src/pkg/data.json",
        "tests/test_core.py",
        "tests/test_data.py",
        "tests/helpers/util.py",
        ".git/objects/x.py",
        "a1.txt",
        "a2.txt",
        "ab.txt",
    ):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"content of {rel}\nneedle in {rel}\n")
    return root


def matches(root: Path, pattern: str, path: str = ".") -> list[str]:
    result = glob(pattern, path, sandbox_root=str(root))
    assert result["count"] == len(result["matches"])
    return list(result["matches"])


def test_glob_patterns(tree: Path) -> None:
    assert matches(tree, "*.py") == ["setup.py"]
    assert matches(tree, "**/*.py") == [
        "setup.py",
        "src/pkg/__init__.py",
        "src/pkg/core.py",
        "tests/helpers/util.py",
        "tests/test_core.py",
        "tests/test_data.py",
    ]
    assert matches(tree, "src/**/*.{py,pyi}") == [
        "src/pkg/__init__.py",
        "src/pkg/core.py",
        "src/pkg/core.pyi",
    ]
    assert matches(tree, "tests/test_*.py") == ["tests/test_core.py", "tests/test_data.py"]
    assert matches(tree, "a?.txt") == ["a1.txt", "a2.txt", "ab.txt"]
    assert matches(tree, "a[0-9].txt") == ["a1.txt", "a2.txt"]
    assert matches(tree, "a[!0-9].txt") == ["ab.txt"]
    assert matches(tree, "*.py", "src/pkg") == ["src/pkg/__init__.py", "src/pkg/core.py"]
    assert matches(tree, "**") == sorted(matches(tree, "**"))
    assert "src" not in matches(tree, "*")  # folders are not matches
    assert matches(tree, "src/nothing/**/*.py") == []
    assert matches(tree, str(tree / "src/pkg/*.json")) == ["src/pkg/data.json"]
    assert not any(m.startswith(".git/") for m in matches(tree, "**/*"))


def test_glob_clear_failures(tree: Path) -> None:
    with pytest.raises(ToolError, match="malformed glob"):
        glob("[z-a].txt", sandbox_root=str(tree))
    # An unclosed bracket or brace is a literal character, as in fnmatch.
    assert matches(tree, "a[") == [] and matches(tree, "{a") == []
    with pytest.raises(ToolError, match="names no files"):
        glob("./", sandbox_root=str(tree))
    with pytest.raises(ToolError, match="does not exist"):
        glob("*.py", "missing", sandbox_root=str(tree))


def test_glob_is_capped(root: Path) -> None:
    for n in range(1100):
        (root / f"f{n:05}.txt").touch()
    result = glob("*.txt", sandbox_root=str(root))
    assert result["truncated"] is True and result["count"] == 1000


# -- grep ------------------------------------------------------------------------------------
def test_grep_lines_as_file_line_text(tree: Path) -> None:
    result = grep("needle in src", sandbox_root=str(tree))
    assert result["matches"] == [
        "src/pkg/__init__.py:2:needle in src/pkg/__init__.py",
        "src/pkg/core.py:2:needle in src/pkg/core.py",
        "src/pkg/core.pyi:2:needle in src/pkg/core.pyi",
        "src/pkg/data.json:2:needle in src/pkg/data.json",
    ]
    assert result["truncated"] is False


def test_grep_filters(tree: Path) -> None:
    by_name = grep("needle", glob="*.pyi", sandbox_root=str(tree))["matches"]
    assert by_name == ["src/pkg/core.pyi:2:needle in src/pkg/core.pyi"]
    by_path = grep("needle", path="tests", glob="helpers/*.py", sandbox_root=str(tree))
    assert by_path["matches"] == ["tests/helpers/util.py:2:needle in tests/helpers/util.py"]
    one_file = grep(r"^content", path="README.md", sandbox_root=str(tree))
    assert one_file["matches"] == ["README.md:1:content of README.md"]
    assert one_file["files_searched"] == 1
    folded = grep("NEEDLE IN SETUP", ignore_case=True, sandbox_root=str(tree))
    assert folded["matches"] == ["setup.py:2:needle in setup.py"]
    assert grep("NEEDLE IN SETUP", sandbox_root=str(tree))["matches"] == []
    assert not any(m.startswith(".git/") for m in grep("needle", sandbox_root=str(tree))["matches"])


def test_grep_skips_binary_files_and_shortens_long_lines(root: Path) -> None:
    (root / "bin.dat").write_bytes(b"needle\0\1\2")
    (root / "long.txt").write_text("needle" + "x" * 2000 + "\n")
    result = grep("needle", sandbox_root=str(root))
    assert len(result["matches"]) == 1 and result["matches"][0].startswith("long.txt:1:needle")
    assert "more characters" in result["matches"][0]
    assert len(result["matches"][0]) < 600


async def test_grep_regex_error_is_a_clear_tool_error(tree: Path) -> None:
    with pytest.raises(ToolError, match="invalid regular expression"):
        grep("(unclosed", sandbox_root=str(tree))
    record = await call(tree, "grep", {"pattern": "[z-a]"})
    assert record.error_kind == "execution_error"
    assert "invalid regular expression '[z-a]'" in (record.error or "")


def test_grep_result_caps(root: Path) -> None:
    (root / "many.txt").write_text("hit\n" * 50)
    capped = grep("hit", max_results=10, sandbox_root=str(root))
    assert capped["count"] == 10 and capped["truncated"] is True
    exact = grep("hit", max_results=50, sandbox_root=str(root))
    assert exact["count"] == 50 and exact["truncated"] is False
    line = "hit " + "y" * 490 + "\n"
    for n in range(3):
        (root / f"wide{n}.txt").write_text(line * 1000)
    big = grep("hit", max_results=5000, sandbox_root=str(root))
    assert big["truncated"] is True
    assert sum(len(m.encode()) + 1 for m in big["matches"]) <= MAX_OUTPUT_BYTES
    with pytest.raises(ToolError, match="max_results"):
        grep("hit", max_results=0, sandbox_root=str(root))


# -- the sandbox root itself -----------------------------------------------------------------
def test_sandbox_root_given_through_a_link(root: Path, tmp_path: Path) -> None:
    (root / "a.txt").write_text("via link\n")
    alias = tmp_path / "alias"
    os.symlink(root, alias)
    for path in ("a.txt", str(alias / "a.txt"), str(root / "a.txt")):
        result = read_file(path, sandbox_root=str(alias))
        assert result["path"] == "a.txt" and result["content"] == "via link\n"


def test_sandbox_root_must_be_an_absolute_existing_directory(root: Path) -> None:
    (root / "file").write_text("x")
    for bad, message in (
        ("relative/dir", "absolute"),
        (str(root / "missing"), "not an existing directory"),
        (str(root / "file"), "not an existing directory"),
        ("", "no sandbox root"),
    ):
        with pytest.raises(ToolError, match=message):
            list_dir(sandbox_root=bad)
