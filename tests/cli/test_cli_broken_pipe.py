"""`cleveragents ... | head -1`: a reader that goes away ends the command quietly, exit 141.

Each command writes into a real pipe whose reading end is already closed, so the first write
fails (EPIPE) whatever the timing.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cleveragents import cli

CLI = [sys.executable, "-m", "cleveragents"]


def run_into_closed_pipe(args: list[str], home: Path) -> subprocess.CompletedProcess[bytes]:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the command writes anything
    try:
        env = {**os.environ, "XDG_DATA_HOME": str(home / "data"), "CLEVERAGENTS_PROVIDER": ""}
        return subprocess.run(
            [*CLI, *args], stdout=write_end, stderr=subprocess.PIPE, env=env, timeout=120
        )
    finally:
        os.close(write_end)


@pytest.mark.parametrize(
    "args",
    [["tools", "--json"], ["runs", "--json"], ["runs", "--json", "--limit", "1"]],
    ids=["tools", "runs", "runs-limit"],
)
def test_a_listing_into_a_closed_pipe_exits_141_without_a_traceback(
    args: list[str], tmp_path: Path
) -> None:
    done = run_into_closed_pipe(args, tmp_path)
    assert done.returncode == cli.EXIT_BROKEN_PIPE, done.stderr.decode()
    assert done.stderr == b""


def test_a_run_into_a_closed_pipe_exits_141_and_is_still_recorded(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "a.txt").write_text("hi\n")
    history = tmp_path / "h.sqlite3"
    args = ["run", "look around", "--sandbox", str(workspace), "--json"]
    done = run_into_closed_pipe([*args, "--history", str(history)], tmp_path)
    assert done.returncode == cli.EXIT_BROKEN_PIPE, done.stderr.decode()
    assert b"Traceback" not in done.stderr and b"BrokenPipeError" not in done.stderr
    # The run ended before its answer was printed: the history has it.
    listed = subprocess.run(
        [*CLI, "runs", "--json", "--history", str(history)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    [stored] = json.loads(listed.stdout)
    assert (stored["prompt"], stored["status"]) == ("look around", "finished")


def test_a_broken_pipe_is_stdouts_only_when_stdouts_reader_is_gone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Another pipe's BrokenPipeError (a tool's process) is not taken for a closed stdout."""
    read_end, write_end = os.pipe()
    try:
        # In the test body: pytest puts its own capture back on sys.stdout after fixtures.
        with open(write_end, "wb", closefd=False) as raw:
            monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(raw))
            assert cli._stdout_reader_gone() is False
            os.close(read_end)
            assert cli._stdout_reader_gone() is True
    finally:
        os.close(write_end)
        with contextlib.suppress(OSError):
            os.close(read_end)
