"""File names that are not plain text are data, not crashes (issue 17, item 7).

A name may be any bytes but `/` and NUL: bytes that are not UTF-8, a newline, control
characters, bidi overrides. Every built-in tool shows such a name C-quoted (workspace/names.py)
and takes it back as shown; every answer stays valid UTF-8 JSON, and so does `cleveragents run
--json` and the history. Hypothesis draws the names; the files are real, in a temporary
sandbox, and the tools run through the real ToolRunner.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cleveragents.tool import ToolActorContext, ToolCallRequest, ToolRegistry, ToolRunner
from cleveragents.workspace import register_builtin_tools
from cleveragents.workspace.names import QUOTED_NAMES_NOTE, read_back, shown_path

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="names of any bytes: Linux")

# What must never reach a terminal, a panel or a JSON answer raw: controls, invisible format
# characters, and lone surrogates (the bytes that were not UTF-8).
RAW_HIDDEN = re.compile(
    "[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ud800-\udfff]"
)

NASTY_PIECES = [
    b"\xff",
    b"\xfe\xfd",
    b"\xc3",  # a UTF-8 sequence cut short
    b"\xed\xa0\x80",  # an encoded surrogate: not UTF-8
    b"\n",
    b"\r",
    b"\t",
    b"\x1b[2J",
    b"\x7f",
    "\u202e".encode(),  # right-to-left override
    "\u2066".encode(),  # left-to-right isolate
    "\u200b".encode(),  # zero-width space
    "\u0085".encode(),  # C1 next line, as valid UTF-8
    "\ufeff".encode(),
    b'"',
    b"\\",
    b"\\x41",  # looks like an escape, is four plain characters
    "é".encode(),
    b" ",
    b"plain",
]


def valid_name(name: bytes) -> bool:
    return (
        name not in (b".", b"..", b".git")
        and not name.startswith(b"~")  # `~` leads a path home: the tools refuse it
        and len(name) <= 200
    )


names = (
    st.lists(
        st.one_of(
            st.sampled_from(NASTY_PIECES),
            st.binary(min_size=1, max_size=4).filter(lambda b: b"/" not in b and b"\0" not in b),
        ),
        min_size=1,
        max_size=5,
    )
    .map(b"".join)
    .filter(valid_name)
)


async def call(sandbox: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    registry = ToolRegistry()
    register_builtin_tools(registry)
    context = ToolActorContext(sandbox_root=sandbox)
    record = await ToolRunner(registry).run(ToolCallRequest("c", tool, arguments), context)
    assert record.success, (tool, arguments, record.error)
    # Every answer is valid UTF-8 JSON (what the provider, the history and --json get), and
    # shows nothing raw that could redraw, reorder or split what a person reads.
    text = json.dumps(record.output, ensure_ascii=False)
    text.encode("utf-8")  # raises on a lone surrogate
    assert not RAW_HIDDEN.search(_strings(record.output)), record.output
    output: dict[str, Any] = record.output
    return output


def _strings(value: Any) -> str:
    """Every string in the answer but what files and commands hold (content, not names)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return "".join(
            _strings(v) for k, v in value.items() if k not in ("content", "stdout", "stderr")
        )
    if isinstance(value, list):
        return "".join(_strings(v) for v in value)
    return ""


def on_disk(shown: str) -> bytes:
    """The bytes of the path a shown one stands for."""
    return os.fsencode(read_back(shown))


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(folder=names, file=names, other=names)
def test_every_tool_shows_odd_names_escaped_and_takes_them_back(
    folder: bytes, file: bytes, other: bytes
) -> None:
    with tempfile.TemporaryDirectory() as temporary:
        root = os.path.realpath(temporary)
        asyncio.run(_through_every_tool(root, folder, file, other))


async def _through_every_tool(root: str, folder: bytes, file: bytes, other: bytes) -> None:
    base = os.fsencode(root)
    os.mkdir(os.path.join(base, folder))
    inner = folder + b"/" + file
    files = {inner: b"needle one\n"}
    if other != folder:
        files[other] = b"needle two\n"
    for relative, data in files.items():
        with open(os.path.join(base, relative), "wb") as handle:
            handle.write(data)
    link = b"link-" + file.replace(b"/", b"")
    os.symlink(inner, os.path.join(base, link))

    listed = await call(root, "list_dir", {"path": "."})
    by_disk = {on_disk(entry["name"]): entry for entry in listed["entries"]}
    assert set(by_disk) == {folder, link} | ({other} if other != folder else set())
    assert on_disk(by_disk[link]["target"]) == inner
    quoted = any(entry["name"].startswith('"') for entry in listed["entries"])
    assert ("note" in listed) == (quoted or by_disk[link]["target"].startswith('"'))

    # The folder by the name list_dir showed, and a file in it by that name and a plain "/".
    shown_folder = by_disk[folder]["name"]
    inside = await call(root, "list_dir", {"path": shown_folder})
    (entry,) = inside["entries"]
    assert on_disk(entry["name"]) == file
    joined = f"{shown_folder}/{entry['name']}"
    assert on_disk(joined) == inner

    globbed = await call(root, "glob", {"pattern": "**/*"})
    assert {on_disk(match) for match in globbed["matches"]} == set(files) | {link}
    if any(match.startswith('"') for match in globbed["matches"]):
        assert globbed["note"] == QUOTED_NAMES_NOTE

    for pattern in ("needle", "(?=needle)"):  # RE2 here, Python's re in a child process
        found = await call(root, "grep", {"pattern": pattern})
        expected = {
            f"{shown_path(os.fsdecode(relative))}:1:{data.decode().strip()}"
            for relative, data in files.items()
        }
        assert set(found["matches"]) == expected

    for path in (joined, shown_path(os.fsdecode(inner))):
        read = await call(root, "read_file", {"path": path})
        assert read["content"] == "needle one\n" and on_disk(read["path"]) == inner
    edited = await call(root, "edit_file", {"path": joined, "old_text": "one", "new_text": "1"})
    assert on_disk(edited["path"]) == inner
    written = await call(root, "write_file", {"path": joined, "content": "written\n"})
    assert on_disk(written["path"]) == inner
    with open(os.path.join(base, inner), "rb") as handle:
        assert handle.read() == b"written\n"
    # A new file by a quoted name is created under exactly those bytes.
    new = shown_path(os.fsdecode(folder + b"/new-" + file))
    await call(root, "write_file", {"path": new, "content": "fresh"})
    with open(os.path.join(base, folder, b"new-" + file), "rb") as handle:
        assert handle.read() == b"fresh"


@given(name=names)
@settings(max_examples=300, deadline=None)
def test_the_shown_form_reads_back_to_the_same_bytes(name: bytes) -> None:
    decoded = os.fsdecode(name)
    shown = shown_path(decoded)
    assert os.fsencode(read_back(shown)) == name
    assert shown == decoded or shown.startswith('"')
    shown.encode("utf-8")  # always valid text
    assert "\n" not in shown and not RAW_HIDDEN.search(shown)


def test_plain_names_are_shown_as_they_are_and_the_escape_is_unambiguous() -> None:
    for plain in ("src/main.py", "é/ü.txt", "a b", "back\\slash", "x\\x41", 'mid"quote'):
        assert shown_path(plain) == plain and read_back(plain) == plain
    # A name that starts with a quote is quoted itself, so its shown form reads back to it.
    assert shown_path('"q".txt') == '"\\"q\\".txt"'
    assert read_back('"\\"q\\".txt"') == '"q".txt'
    # Not a quoting of ours: taken as written.
    for literal in ('"unclosed', '"a"b"', '"\\q"', '"\\x4"', '"'):
        assert read_back(literal) == literal
    assert read_back('"\\xff"/"\\n"') == "\udcff/\n"


def test_run_command_in_an_odd_folder_answers_valid_utf8(tmp_path: Path) -> None:
    root = os.path.realpath(tmp_path)
    odd = b"out\xff\n\xe2\x80\xae"
    os.mkdir(os.path.join(os.fsencode(root), odd))
    open(os.path.join(os.fsencode(root), odd, b"f\xfe"), "wb").close()
    shown = shown_path(os.fsdecode(odd))
    output = asyncio.run(
        call(root, "run_command", {"command": "ls; pwd", "cwd": shown, "timeout_s": 60})
    )
    assert output["cwd"] == shown and output["exit_code"] == 0
    assert "f\ufffd" in output["stdout"]  # the command's own bytes, replaced, never raw


CLI = [sys.executable, "-m", "cleveragents"]
CLI_NAMES = [b"bad\xff.txt", b"new\nline.txt", "bi\u202edi.txt".encode(), b"esc\x1b[2J.txt"]


def test_run_json_and_the_history_stay_valid_utf8(tmp_path: Path) -> None:
    """`cleveragents run --json` (replay provider) over a workspace of odd names: every tool
    succeeds, stdout is valid UTF-8 JSON, and the history shows the run back the same way."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    base = os.fsencode(workspace)
    for name in CLI_NAMES:
        with open(os.path.join(base, name), "wb") as handle:
            handle.write(b"needle\n")
    first = shown_path(os.fsdecode(CLI_NAMES[0]))
    calls = [
        {"name": "list_dir", "arguments": {}},
        {"name": "glob", "arguments": {"pattern": "*.txt"}},
        {"name": "grep", "arguments": {"pattern": "needle"}},
        {"name": "read_file", "arguments": {"path": first}},
        {"name": "edit_file", "arguments": {"path": first, "old_text": "needle", "new_text": "x"}},
        {"name": "write_file", "arguments": {"path": shown_path("made\udcfe"), "content": "y"}},
        # A command prints the names raw (ls to a pipe), and bytes that are not UTF-8 of its own.
        {"name": "run_command", "arguments": {"command": "ls; printf 'raw \\377\\376\\n'"}},
    ]
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps({"responses": [{"tool_calls": calls}, {"text": "Done."}]}), encoding="utf-8"
    )
    history = str(tmp_path / "history.sqlite3")
    env = {**os.environ, "CLEVERAGENTS_PROVIDER": "", "XDG_DATA_HOME": str(tmp_path / "data")}
    prompt = os.fsdecode(b"look at \xff\xfe")  # argv bytes that are not UTF-8, too
    command = [*CLI, "run", prompt, "--sandbox", str(workspace), "--provider", "replay"]
    command += ["--script", str(script), "--profile", "full-auto", "--json"]
    done = subprocess.run(
        [*command, "--history", history],
        capture_output=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    result = json.loads(done.stdout.decode("utf-8"))  # strict: invalid UTF-8 raises
    records = result["toolCallHistory"]
    assert [r["toolName"] for r in records] == [c["name"] for c in calls]
    assert all(r["success"] for r in records), records
    listed = {read_back(e["name"]) for e in records[0]["output"]["entries"]}
    assert {os.fsencode(n) for n in listed} == set(CLI_NAMES)
    assert records[0]["output"]["note"] == QUOTED_NAMES_NOTE
    assert len(records[2]["output"]["matches"]) == len(CLI_NAMES)
    # Names in the tools' answers are escaped; a command's stdout is content, kept as printed
    # but for the bytes that are not UTF-8.
    assert not RAW_HIDDEN.search(
        json.dumps([r["output"] for r in records[:-1]], ensure_ascii=False)
    )
    with open(os.path.join(base, CLI_NAMES[0]), "rb") as handle:
        assert handle.read() == b"x\n"
    with open(os.path.join(base, b"made\xfe"), "rb") as handle:
        assert handle.read() == b"y"
    ran = records[-1]["output"]
    assert ran["exit_code"] == 0 and "raw \ufffd\ufffd" in ran["stdout"]
    assert "bad\ufffd.txt" in ran["stdout"]  # the command's bytes, replaced, never raw
    shown = subprocess.run(
        [*CLI, "runs", "show", result["runId"], "--json", "--history", history],
        capture_output=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert shown.returncode == 0, shown.stderr.decode(errors="replace")
    stored = json.loads(shown.stdout.decode("utf-8"))
    assert stored["messages"][0]["text"] == "look at \ufffd\ufffd"
    assert [r["output"] for r in stored["toolCallHistory"]] == [r["output"] for r in records]
