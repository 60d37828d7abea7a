"""The sandbox wall: a corpus of escape attempts through every file tool, via a real ToolRunner.

A canary tree lives next to the sandbox. Every attempt must be refused with
error_kind="sandbox_violation" and an error naming the path, or (for look-alike names that are
legal inside the sandbox) stay inside; afterwards the canary tree must be byte-for-byte, mtime
for mtime, the same, with no new files.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cleveragents.tool import (
    SandboxViolation,
    ToolActorContext,
    ToolCallRequest,
    ToolRegistry,
    ToolRunner,
)
from cleveragents.tool.records import ToolCallRecord
from cleveragents.workspace import Sandbox, register_builtin_tools
from cleveragents.workspace.names import read_back

FILE_TOOLS = ("read_file", "write_file", "edit_file", "list_dir", "glob", "grep")


@dataclass
class World:
    root: Path  # tmp_path
    sandbox: Path
    outside: Path


def build_world(tmp_path: Path) -> World:
    sandbox = tmp_path / "sandbox"
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "secret.txt").write_text("TOP SECRET needle\n")
    (outside / "sub" / "deeper.txt").write_text("deeper needle\n")
    (outside / "empty_dir").mkdir()
    # A sibling whose name starts with the sandbox's name: a string-prefix check would let it in.
    (tmp_path / "sandbox_sibling").mkdir()
    (tmp_path / "sandbox_sibling" / "x.txt").write_text("sibling needle\n")
    (sandbox / "sub").mkdir(parents=True)
    (sandbox / "inside.txt").write_text("hello needle\n")
    (sandbox / "sub" / "note.txt").write_text("note needle\n")
    links = {
        "link_out_dir": str(outside),
        "link_out_file": str(outside / "secret.txt"),
        "link_rel_up": "../outside",
        "link_rel_file": "../outside/secret.txt",
        "chain1": "chain2",
        "chain2": str(outside),
        "dangling_out": str(outside / "not_yet.txt"),
        "dangling_out_dir": str(outside / "not_yet_dir"),
        "sub/link_up2": "../../outside",
        "link_etc": "/etc",
        "link_root": "/",
        "link_sibling": "../sandbox_sibling",
        "link_in": "sub",
        "link_in_abs": str(sandbox / "sub"),
    }
    for name, target in links.items():
        os.symlink(target, sandbox / name)
    return World(tmp_path, sandbox, outside)


def snapshot(directory: Path) -> dict[str, tuple[str, int, bytes | str | None]]:
    """Every entry under `directory`: kind, mtime in ns, and content (or link target)."""
    state: dict[str, tuple[str, int, bytes | str | None]] = {}
    for current, dirnames, filenames in os.walk(directory, followlinks=False):
        for name in [*dirnames, *filenames]:
            full = Path(current) / name
            info = full.lstat()
            rel = str(full.relative_to(directory))
            if full.is_symlink():
                state[rel] = ("link", info.st_mtime_ns, os.readlink(full))
            elif full.is_dir():
                state[rel] = ("dir", info.st_mtime_ns, None)
            else:
                state[rel] = ("file", info.st_mtime_ns, full.read_bytes())
    state["."] = ("dir", directory.stat().st_mtime_ns, None)
    return state


def escape_corpus(world: World) -> list[str]:
    """Paths that must be refused by every file tool."""
    outside, sandbox = world.outside, world.sandbox
    secret_from_slash = str(outside / "secret.txt").lstrip("/")
    return [
        # .. chains
        "..",
        "../",
        "../outside",
        "../outside/secret.txt",
        "../outside/sub/deeper.txt",
        "../outside/brand_new.txt",
        "../outside/empty_dir/new.txt",
        "../../",
        "../" * 10,
        "../" * 60 + secret_from_slash,
        "./../outside/secret.txt",
        ".//..//outside//secret.txt",
        "sub/../../outside/secret.txt",
        "sub/./../../outside",
        "sub/../sub/../../outside/secret.txt",
        "inside.txt/../../outside/secret.txt",
        "nonexistent/../../outside/secret.txt",
        "nonexistent/deeper/../../../outside/new.txt",
        "sub/" + "../" * 3 + "outside/secret.txt",
        "x/" * 500 + "../" * 501 + "outside/secret.txt",
        # absolute paths outside
        str(outside / "secret.txt"),
        str(outside),
        str(outside / "brand_new.txt"),
        str(outside / "sub" / "deeper.txt"),
        str(world.root),
        "//" + secret_from_slash,
        str(sandbox) + "/../outside/secret.txt",
        str(sandbox) + "/sub/../../outside/secret.txt",
        str(sandbox) + "_sibling/x.txt",
        str(sandbox) + "_sibling",
        # symbolic links pointing out
        "link_out_dir",
        "link_out_dir/secret.txt",
        "link_out_dir/brand_new.txt",
        "link_out_dir/sub/deeper.txt",
        "link_out_dir/empty_dir/new.txt",
        "link_out_file",
        "link_rel_up",
        "link_rel_up/secret.txt",
        "link_rel_file",
        "chain1",
        "chain1/secret.txt",
        "dangling_out",
        "dangling_out_dir/new.txt",
        "sub/link_up2",
        "sub/link_up2/secret.txt",
        "link_in/link_up2/secret.txt",
        "link_in/../link_out_dir/secret.txt",
        "link_out_dir/../sandbox/inside.txt",
        "link_sibling/x.txt",
        "link_in_abs/../../outside/secret.txt",
        # home directories
        "~",
        "~/",
        "~/.bashrc",
        "~root",
        "~root/.profile",
        "~/../outside/secret.txt",
        # NUL bytes
        "inside.txt\x00",
        "\x00",
        "../outside/secret.txt\x00.txt",
        "sub/\x00/note.txt",
        "\x00/../outside/secret.txt",
        # very long names that climb
        ("a" * 300 + "/../") * 3 + "../outside/secret.txt",
        "b" * 5000 + "/../../outside/secret.txt",
        "../" * 2000,
    ]


def system_corpus() -> list[str]:
    """Outside paths only the read-only tools are pointed at (no write is risked on them)."""
    return [
        "/etc/passwd",
        "/etc",
        "/",
        "/proc/self/environ",
        "link_etc/passwd",
        "link_root/etc/passwd",
        "../../../../../../../../etc/passwd",
    ]


def lookalike_corpus() -> list[str]:
    """Names that look like escapes but are legal names inside the sandbox."""
    return [
        "\uff0e\uff0e/outside/secret.txt",  # fullwidth dots
        "\u2024\u2024/outside/secret.txt",  # one dot leaders
        "\u2025/outside/secret.txt",  # two dot leader
        "\uff0e\uff0e\uff0foutside\uff0fsecret.txt",  # fullwidth solidus
        "%2e%2e/outside/secret.txt",
        "..%2foutside%2fsecret.txt",
        "..\\outside\\secret.txt",
        "....",
        ".../outside/secret.txt",
        " ../outside/secret.txt",
        "..\u200b/outside/secret.txt",
        "sub/~/secret.txt",
        "a" * 255,
        "a" * 256,
    ]


def arguments_for(tool: str, path: str) -> dict[str, Any]:
    if tool == "read_file":
        return {"path": path}
    if tool == "write_file":
        return {"path": path, "content": "PWNED\n"}
    if tool == "edit_file":
        return {"path": path, "old_text": "needle", "new_text": "PWNED"}
    if tool == "list_dir":
        return {"path": path}
    if tool == "glob":
        return {"pattern": "**/*", "path": path}
    return {"pattern": "needle", "path": path}


def make_runner() -> ToolRunner:
    registry = ToolRegistry()
    register_builtin_tools(registry)
    return ToolRunner(registry)


async def call(
    runner: ToolRunner, sandbox: Path, tool: str, arguments: dict[str, Any]
) -> ToolCallRecord:
    context = ToolActorContext(sandbox_root=str(sandbox))
    return await runner.run(ToolCallRequest("c", tool, arguments), context)


def assert_refused(record: ToolCallRecord, shown: str) -> None:
    assert record.success is False, f"{record.tool_name}({shown!r}) succeeded: {record.output}"
    assert record.error_kind == "sandbox_violation", (
        f"{record.tool_name}({shown!r}) failed as {record.error_kind}: {record.error}"
    )
    assert repr(shown) in (record.error or ""), f"error does not name the path: {record.error}"


def test_corpus_is_large_enough(tmp_path: Path) -> None:
    world = build_world(tmp_path)
    assert len(escape_corpus(world)) >= 60
    assert len(set(escape_corpus(world))) == len(escape_corpus(world))


async def test_every_escape_is_refused_by_every_file_tool(tmp_path: Path) -> None:
    world = build_world(tmp_path)
    before_outside = snapshot(world.outside)
    before_sibling = snapshot(tmp_path / "sandbox_sibling")
    before_top = sorted(os.listdir(tmp_path))
    before_sandbox = snapshot(world.sandbox)
    runner = make_runner()
    attempts = 0
    for path in escape_corpus(world):
        for tool in FILE_TOOLS:
            record = await call(runner, world.sandbox, tool, arguments_for(tool, path))
            assert_refused(record, path)
            attempts += 1
    for path in system_corpus():
        for tool in ("read_file", "list_dir", "glob", "grep"):
            record = await call(runner, world.sandbox, tool, arguments_for(tool, path))
            assert_refused(record, path)
            attempts += 1
    assert attempts >= 6 * 60
    assert snapshot(world.outside) == before_outside
    assert snapshot(tmp_path / "sandbox_sibling") == before_sibling
    assert sorted(os.listdir(tmp_path)) == before_top
    # Refused calls change nothing inside either: no directories made on the way to a refusal.
    assert snapshot(world.sandbox) == before_sandbox


async def test_lookalike_names_stay_inside(tmp_path: Path) -> None:
    world = build_world(tmp_path)
    before_outside = snapshot(world.outside)
    runner = make_runner()
    for path in lookalike_corpus():
        written = await call(runner, world.sandbox, "write_file", arguments_for("write_file", path))
        if len(path) > 255:
            assert written.error_kind == "execution_error", written.error
            assert "too long" in (written.error or "")
            continue
        assert written.success, f"{path!r}: {written.error}"
        # A name with invisible or control characters is shown C-quoted (workspace/names.py).
        created = world.sandbox / read_back(written.output["path"])
        assert created.resolve().is_relative_to(world.sandbox.resolve())
        assert created.read_text() == "PWNED\n"
        for tool in ("read_file", "edit_file", "grep"):
            arguments = arguments_for(tool, path)
            if tool == "edit_file":
                arguments = {"path": path, "old_text": "PWNED", "new_text": "edited"}
            record = await call(runner, world.sandbox, tool, arguments)
            assert record.success, f"{tool}({path!r}): {record.error}"
    assert snapshot(world.outside) == before_outside


async def test_glob_and_grep_patterns_cannot_leave(tmp_path: Path) -> None:
    world = build_world(tmp_path)
    before = snapshot(world.outside)
    runner = make_runner()
    patterns = [
        "../*",
        "../outside/*",
        "../**/*",
        "**/../../*",
        "sub/../../outside/*",
        str(world.outside) + "/*",
        "/etc/*",
        "~/*",
        "*\x00",
    ]
    for pattern in patterns:
        record = await call(runner, world.sandbox, "glob", {"pattern": pattern})
        assert_refused(record, pattern)
        record = await call(runner, world.sandbox, "grep", {"pattern": "needle", "glob": pattern})
        assert_refused(record, pattern)
    assert snapshot(world.outside) == before


async def test_walks_list_links_but_never_read_through_them(tmp_path: Path) -> None:
    world = build_world(tmp_path)
    runner = make_runner()
    grep = await call(runner, world.sandbox, "grep", {"pattern": "needle"})
    assert grep.success
    assert sorted(grep.output["matches"]) == [
        "inside.txt:1:hello needle",
        "sub/note.txt:1:note needle",
    ]
    found = await call(runner, world.sandbox, "glob", {"pattern": "**/*"})
    assert found.success
    matches = found.output["matches"]
    assert "link_out_dir" in matches and "link_out_file" in matches
    assert not any(m.startswith("link_out_dir/") or m.startswith("chain1/") for m in matches)
    assert not any("secret" in m or "deeper" in m for m in matches)
    listing = await call(runner, world.sandbox, "list_dir", {"path": "."})
    by_name = {entry["name"]: entry for entry in listing.output["entries"]}
    assert by_name["link_out_dir"] == {
        "name": "link_out_dir",
        "type": "symlink",
        "target": str(world.outside),
    }
    assert by_name["sub"]["type"] == "dir"


async def test_links_that_stay_inside_are_followed(tmp_path: Path) -> None:
    world = build_world(tmp_path)
    runner = make_runner()
    for path in ("link_in/note.txt", "link_in_abs/note.txt", str(world.sandbox / "sub/note.txt")):
        record = await call(runner, world.sandbox, "read_file", {"path": path})
        assert record.success, record.error
        assert record.output["path"] == "sub/note.txt"
        assert record.output["content"] == "note needle\n"


async def test_a_link_loop_is_a_clear_error(tmp_path: Path) -> None:
    world = build_world(tmp_path)
    os.symlink("loop_b", world.sandbox / "loop_a")
    os.symlink("loop_a", world.sandbox / "loop_b")
    record = await call(make_runner(), world.sandbox, "read_file", {"path": "loop_a"})
    assert record.success is False
    assert "too many levels of symbolic links" in (record.error or "")


async def test_tools_refuse_without_a_sandbox_root(tmp_path: Path) -> None:
    runner = make_runner()
    for tool in FILE_TOOLS:
        request = ToolCallRequest("c", tool, arguments_for(tool, "inside.txt"))
        for context in (None, ToolActorContext(sandbox_root=None)):
            record = await runner.run(request, context)
            assert record.success is False
            assert record.error_kind == "sandbox_violation"
            assert "no sandbox root" in (record.error or "")
    # Nothing was written relative to the working directory either.
    assert not Path("inside.txt").exists()


def test_a_directory_swapped_for_a_link_after_the_check_is_refused(tmp_path: Path) -> None:
    """The exact TOCTOU interleaving, staged by hand: check, swap, then use."""
    world = build_world(tmp_path)
    before = snapshot(world.outside)
    sandbox = Sandbox(str(world.sandbox))
    checked_write = sandbox.resolve("sub/note.txt")
    checked_read = sandbox.resolve("sub/note.txt")
    checked_dir = sandbox.resolve("sub")
    assert checked_write.parts == ("sub", "note.txt")
    os.rename(world.sandbox / "sub", world.sandbox / "sub_moved")
    os.symlink(str(world.outside / "sub"), world.sandbox / "sub")
    (world.outside / "sub" / "note.txt").write_text("outside note\n")
    before = snapshot(world.outside)
    with pytest.raises(SandboxViolation) as refused:
        sandbox.write_bytes(checked_write, b"PWNED", create_dirs=True)
    assert "sub/note.txt" in str(refused.value)
    with pytest.raises(SandboxViolation):
        sandbox.open_regular_file(checked_read)
    with pytest.raises(SandboxViolation):
        sandbox.open_directory(checked_dir)
    assert snapshot(world.outside) == before


def test_a_final_name_swapped_for_a_link_is_replaced_not_followed(tmp_path: Path) -> None:
    world = build_world(tmp_path)
    sandbox = Sandbox(str(world.sandbox))
    checked = sandbox.resolve("inside.txt")
    (world.sandbox / "inside.txt").unlink()
    os.symlink(str(world.outside / "secret.txt"), world.sandbox / "inside.txt")
    before = snapshot(world.outside)
    with pytest.raises(SandboxViolation):
        sandbox.open_regular_file(checked)
    with pytest.raises(SandboxViolation):
        sandbox.write_bytes(checked, b"PWNED", create_dirs=False)
    assert snapshot(world.outside) == before


FLIPPER = """
import os, sys
sandbox, target, stop_file = sys.argv[1:4]
link, real = os.path.join(sandbox, "flip"), os.path.join(sandbox, "flip_real")
swaps = 0
while not os.path.exists(stop_file):
    os.rename(link, real)
    os.symlink(target, link)
    os.unlink(link)
    os.rename(real, link)
    swaps += 1
print(swaps)
"""


async def test_a_link_flipping_during_many_calls_never_lets_one_out(tmp_path: Path) -> None:
    """Another process keeps swapping `flip` between a real directory and a link going out."""
    world = build_world(tmp_path)
    (world.sandbox / "flip").mkdir()
    (world.sandbox / "flip" / "f.txt").write_text("inside f\n")
    (world.outside / "flip_target").mkdir()
    (world.outside / "flip_target" / "f.txt").write_text("outside f needle\n")
    before = snapshot(world.outside)
    stop_file = tmp_path / "stop"
    flipper = subprocess.Popen(
        [
            sys.executable,
            "-c",
            FLIPPER,
            str(world.sandbox),
            str(world.outside / "flip_target"),
            str(stop_file),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    runner = make_runner()
    outcomes: dict[str, int] = {}
    try:
        for attempt in range(300):
            for tool, arguments in (
                (
                    "write_file",
                    {"path": "flip/f.txt", "content": f"try {attempt}\n", "create_dirs": False},
                ),
                ("read_file", {"path": "flip/f.txt"}),
                ("edit_file", {"path": "flip/f.txt", "old_text": "try", "new_text": "TRY"}),
                ("list_dir", {"path": "flip"}),
                ("grep", {"pattern": "f", "path": "flip"}),
                ("glob", {"pattern": "*", "path": "flip"}),
            ):
                record = await call(runner, world.sandbox, tool, arguments)
                key = "ok" if record.success else str(record.error_kind)
                outcomes[key] = outcomes.get(key, 0) + 1
                if record.success and tool == "read_file":
                    assert "outside" not in record.output["content"]
                if record.success and tool == "grep":
                    assert not any("outside" in line for line in record.output["matches"])
    finally:
        stop_file.touch()
        swaps = int(flipper.communicate(timeout=60)[0])
    assert flipper.returncode == 0
    assert set(outcomes) <= {"ok", "sandbox_violation", "execution_error"}, outcomes
    assert swaps > 0 and outcomes.get("ok", 0) > 0
    assert snapshot(world.outside) == before
