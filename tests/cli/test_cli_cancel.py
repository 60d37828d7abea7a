"""Ctrl-C at the CLI's approval prompt stops the run, in a real pseudo-terminal.

The CLI runs as the terminal's foreground process (its own session, the pty its controlling
terminal), so Ctrl-C typed at the prompt is the kernel's SIGINT, as for a user. After it the
run asks nothing more, writes nothing, exits 130 and is stored cancelled with the pending call
recorded as cancelled. 20 runs; the seed picks what was typed before Ctrl-C and whether a read
step comes before the question.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from pathlib import Path

import pytest

from cleveragents.service.history import RunHistory
from support.pseudo_terminal import spawn_on_pty

CLI = [sys.executable, "-m", "cleveragents"]
EXIT_CANCELLED = 130
PROMPT = b"always this run"
CTRL_C = b"\x03"
CEILING_S = 60.0  # against hangs, never a timing assertion


def run_in_terminal(args: list[str], typed_at_prompt: bytes) -> tuple[int, bytes, int]:
    """Run the CLI on a pty; at the approval prompt type `typed_at_prompt`. Returns the exit
    code, the screen and how many times the prompt showed."""
    process, leader = spawn_on_pty(
        [*CLI, *args],
        env={**os.environ, "TERM": "dumb", "COLUMNS": "200", "CLEVERAGENTS_PROVIDER": ""},
    )
    screen = b""
    typed = False
    deadline = time.monotonic() + CEILING_S
    try:
        while time.monotonic() < deadline:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the child closed the terminal: it has exited
                break
            if not chunk:
                break
            screen += chunk
            if not typed and PROMPT in screen:
                typed = True
                os.write(leader, typed_at_prompt)
        code = process.wait(timeout=CEILING_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(leader)
    return code, screen, screen.count(PROMPT)


@pytest.mark.parametrize("seed", range(20))
def test_ctrl_c_at_the_approval_prompt_stops_the_run(seed: int, tmp_path: Path) -> None:
    rng = random.Random(seed)
    typed_first = rng.choice([b"", b"y", b"a", b"n"])  # typed, never Entered
    read_first = rng.random() < 0.5
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("hello\n")
    steps: list[dict[str, object]] = []
    if read_first:
        steps.append(
            {"tool_calls": [{"name": "read_file", "id": "c0", "arguments": {"path": "notes.txt"}}]}
        )
    steps += [
        {
            "text": "Writing.",
            "tool_calls": [
                {"name": "write_file", "id": "c1", "arguments": {"path": "one.txt", "content": "1"}}
            ],
        },
        {
            "tool_calls": [
                {"name": "write_file", "id": "c2", "arguments": {"path": "two.txt", "content": "2"}}
            ]
        },
        {"text": "Should not get here."},
    ]
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"responses": steps}))
    history = tmp_path / "history.sqlite3"
    args = [
        "run",
        "write two files",
        "--sandbox",
        str(workspace),
        "--provider",
        "replay",
        "--script",
        str(script),
        "--profile",
        "ask",
        "--history",
        str(history),
    ]
    code, screen, prompts = run_in_terminal(args, typed_first + CTRL_C)
    text = screen.decode(errors="replace")
    assert code == EXIT_CANCELLED, text
    assert prompts == 1, text  # no question after the Ctrl-C
    assert sorted(p.name for p in workspace.iterdir()) == ["notes.txt"], text
    assert "Should not get here." not in text
    with RunHistory(history) as stored_runs:
        (summary,) = stored_runs.list_runs(10, 0)
        run = stored_runs.get_run(summary.run_id)
    assert run is not None and run.status == "cancelled"
    expected = [("c0", None)] if read_first else []
    assert [(r.call_id, r.error_kind) for r in run.records] == [*expected, ("c1", "cancelled")]
