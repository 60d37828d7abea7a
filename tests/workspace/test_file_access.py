"""File tools through an editor's view of the files, behind the same sandbox wall.

`BufferEditor` stands in for the editor (another program, outside the project): it holds
unsaved buffers and falls back to the disk, as editors do, and counts every call. The tools,
the sandbox and the runner are the real ones, on real files.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from cleveragents.tool import ToolActorContext, ToolCallRecord, ToolCallRequest, ToolRunner
from cleveragents.tool.registry import ToolRegistry
from cleveragents.workspace import register_builtin_tools
from cleveragents.workspace.file_access import FileAccessError, file_handlers, with_file_access


class BufferEditor:
    def __init__(self, *, reads: bool = True, writes: bool = True) -> None:
        self.reads = reads
        self.writes = writes
        self.buffers: dict[str, str] = {}
        self.calls: list[tuple[str, str]] = []
        self.broken = False

    async def read_text(self, path: str) -> str:
        self.calls.append(("read", path))
        if self.broken:
            raise FileAccessError("the editor is busy")
        if path in self.buffers:
            return self.buffers[path]
        try:
            return Path(path).read_text()
        except FileNotFoundError:
            raise FileAccessError(f"no such file: {path}") from None

    async def write_text(self, path: str, content: str) -> None:
        self.calls.append(("write", path))
        self.buffers[path] = content  # unsaved: the disk keeps what it had


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "sandbox"
    folder.mkdir()
    return folder


def tools_through(editor: BufferEditor) -> ToolRunner:
    registry = ToolRegistry()
    register_builtin_tools(registry)
    return ToolRunner(with_file_access(registry, editor))


async def call(runner: ToolRunner, root: Path, tool: str, **arguments: Any) -> ToolCallRecord:
    return await runner.run(
        ToolCallRequest("c1", tool, arguments), ToolActorContext(sandbox_root=str(root))
    )


async def test_reads_see_the_buffer_not_the_disk(root: Path) -> None:
    (root / "a.py").write_text("on disk\n")
    editor = BufferEditor()
    editor.buffers[str(root / "a.py")] = "unsaved 1\nunsaved 2\nunsaved 3\n"
    editor.buffers[str(root / "new.py")] = "never saved\n"
    runner = tools_through(editor)

    record = await call(runner, root, "read_file", path="a.py", offset=2, limit=1)
    assert record.success, record.error
    assert record.output["content"] == "unsaved 2\n"
    assert (record.output["total_lines"], record.output["next_offset"]) == (3, 3)
    assert (await call(runner, root, "read_file", path="new.py")).output["content"] == (
        "never saved\n"
    )
    # A file only the disk has: the editor reads it from there.
    (root / "plain.txt").write_text("plain\n")
    assert (await call(runner, root, "read_file", path="plain.txt")).output["content"] == (
        "plain\n"
    )
    assert editor.calls == [
        ("read", str(root / "a.py")),
        ("read", str(root / "new.py")),
        ("read", str(root / "plain.txt")),
    ]


async def test_the_wall_refuses_before_the_editor_is_asked(root: Path, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("secret\n")
    os.symlink(tmp_path / "secret.txt", root / "link.txt")
    (root / "dir").mkdir()
    (root / "blob.bin").write_bytes(b"\0\1\2")
    editor = BufferEditor()
    runner = tools_through(editor)
    arguments: dict[str, Any]
    for tool, arguments in (
        ("read_file", {"path": "../secret.txt"}),
        ("read_file", {"path": str(tmp_path / "secret.txt")}),
        ("read_file", {"path": "link.txt"}),
        ("write_file", {"path": "../x.txt", "content": "x"}),
        ("write_file", {"path": "link.txt", "content": "x"}),
        ("edit_file", {"path": "../secret.txt", "old_text": "secret", "new_text": "s"}),
    ):
        record = await call(runner, root, tool, **arguments)
        assert not record.success and record.error_kind == "sandbox_violation", (tool, arguments)
    for tool, arguments, why in (
        ("read_file", {"path": "dir"}, "directory"),
        ("read_file", {"path": "blob.bin"}, "binary"),
        ("write_file", {"path": "dir", "content": "x"}, "directory"),
        ("write_file", {"path": "missing/x.txt", "content": "x", "create_dirs": False}, "exist"),
    ):
        record = await call(runner, root, tool, **arguments)
        assert not record.success and why in (record.error or ""), (tool, record.error)
    assert editor.calls == []
    assert (tmp_path / "secret.txt").read_text() == "secret\n"


async def test_writes_and_edits_go_through_the_editor(root: Path) -> None:
    (root / "m.py").write_text("x = 1\n")
    editor = BufferEditor()
    editor.buffers[str(root / "m.py")] = "x = 1\ny = 2\n"  # edited, not saved
    runner = tools_through(editor)

    written = await call(runner, root, "write_file", path="pkg/new.py", content="z = 3\n")
    assert written.success, written.error
    assert written.output == {"path": "pkg/new.py", "bytes_written": 6, "created": True}
    assert editor.buffers[str(root / "pkg" / "new.py")] == "z = 3\n"
    assert (root / "pkg").is_dir() and not (root / "pkg" / "new.py").exists()

    edited = await call(runner, root, "edit_file", path="m.py", old_text="y = 2", new_text="y = 5")
    assert edited.success, edited.error
    assert editor.buffers[str(root / "m.py")] == "x = 1\ny = 5\n"
    assert (root / "m.py").read_text() == "x = 1\n"  # the editor decides when to save

    missing = await call(runner, root, "edit_file", path="m.py", old_text="nope", new_text="n")
    assert not missing.success and "not found" in (missing.error or "")
    editor.broken = True
    failed = await call(runner, root, "read_file", path="m.py")
    assert not failed.success and "the editor could not read it: the editor is busy" in (
        failed.error or ""
    )


async def test_what_the_editor_does_not_offer_stays_on_disk(root: Path) -> None:
    (root / "m.py").write_text("a = 1\n")
    reader = BufferEditor(writes=False)
    reader.buffers[str(root / "m.py")] = "a = 2\n"
    assert sorted(file_handlers(reader)) == ["edit_file", "read_file"]
    runner = tools_through(reader)
    edited = await call(runner, root, "edit_file", path="m.py", old_text="a = 2", new_text="a = 3")
    assert edited.success, edited.error
    assert (root / "m.py").read_text() == "a = 3\n"  # read from the buffer, written to disk
    written = await call(runner, root, "write_file", path="w.txt", content="disk")
    assert written.success and (root / "w.txt").read_text() == "disk"
    assert reader.calls == [("read", str(root / "m.py"))]

    assert file_handlers(BufferEditor(reads=False, writes=False)) == {}


def test_the_swapped_tools_look_the_same_to_the_model() -> None:
    registry = ToolRegistry()
    register_builtin_tools(registry)
    swapped = with_file_access(registry, BufferEditor())
    assert registry.names() == swapped.names()
    for spec in registry.specs():
        other = swapped.get(spec.name)
        assert other is not None
        assert other.to_schema() == spec.to_schema()
        assert (other.timeout_s, other.context_params, other.source) == (
            spec.timeout_s,
            spec.context_params,
            spec.source,
        )
    assert swapped.get("read_file") is not registry.get("read_file")
    assert swapped.get("list_dir") is registry.get("list_dir")
