"""`cleveragents ... | head -1`: a reader that goes away ends the command quietly, exit 141.

Each command writes into a real pipe whose reading end is already closed, so the first write
fails (EPIPE) whatever the timing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cleveragents import cli
from cleveragents.cli.output import EXIT_BROKEN_PIPE, ReportingStdout

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


def stored_runs(history: Path) -> list[dict[str, object]]:
    listed = subprocess.run(
        [*CLI, "runs", "--json", "--history", str(history)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    runs: list[dict[str, object]] = json.loads(listed.stdout)
    return runs


@pytest.mark.parametrize(
    "args",
    [["tools", "--json"], ["runs", "--json"], ["runs", "--json", "--limit", "1"]],
    ids=["tools", "runs", "runs-limit"],
)
def test_a_listing_into_a_closed_pipe_exits_141_without_a_traceback(
    args: list[str], tmp_path: Path
) -> None:
    done = run_into_closed_pipe(args, tmp_path)
    assert done.returncode == EXIT_BROKEN_PIPE, done.stderr.decode()
    assert done.stderr == b""


def test_a_run_into_a_closed_pipe_exits_141_and_is_still_recorded(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "a.txt").write_text("hi\n")
    history = tmp_path / "h.sqlite3"
    args = ["run", "look around", "--sandbox", str(workspace), "--json"]
    done = run_into_closed_pipe([*args, "--history", str(history)], tmp_path)
    assert done.returncode == EXIT_BROKEN_PIPE, done.stderr.decode()
    assert b"Traceback" not in done.stderr and b"BrokenPipeError" not in done.stderr
    # The run ended before its answer was printed: the history has it.
    [stored] = stored_runs(history)
    assert (stored["prompt"], stored["status"]) == ("look around", "finished")


@pytest.mark.parametrize("args", [["tools"], ["runs"], ["doctor"]], ids=["tools", "runs", "doctor"])
def test_a_rich_table_into_a_closed_pipe_exits_141_too(args: list[str], tmp_path: Path) -> None:
    """rich's own answer to a broken pipe is exit 1, which a shell cannot tell from a failed
    command; the terminal views end as the --json ones."""
    done = run_into_closed_pipe(args, tmp_path)
    assert done.returncode == EXIT_BROKEN_PIPE, done.stderr.decode()
    assert done.stderr == b""


@pytest.mark.parametrize("args", [["tools"], ["tools", "--json"], ["runs", "--json"]])
def test_output_to_a_full_device_says_why_in_one_line_and_exits_1(
    args: list[str], tmp_path: Path
) -> None:
    assert_full_device_refused(args, tmp_path)


def assert_full_device_refused(args: list[str], tmp_path: Path) -> None:
    """The command with stdout on /dev/full: exit 1 and one line saying why, nothing else."""
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data"), "CLEVERAGENTS_PROVIDER": ""}
    with open("/dev/full", "wb") as full:
        done = subprocess.run(
            [*CLI, *args], stdout=full, stderr=subprocess.PIPE, env=env, timeout=120
        )
    assert done.returncode == 1
    assert done.stderr.decode() == (
        "cleveragents: could not write the output: No space left on device\n"
    )


def test_a_run_whose_reader_leaves_midway_is_stopped_and_kept(tmp_path: Path) -> None:
    """`cleveragents run ... | head -c 200`: once nobody reads, the run stops as Ctrl-C stops
    it (no more tokens spent for nobody) and what it did stays in the history."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    for n in range(6):
        (workspace / f"notes{n}.md").write_text(f"TODO: item {n}\n" * 40)
    history = tmp_path / "h.sqlite3"
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data"), "CLEVERAGENTS_PROVIDER": ""}
    prompt = "Find the open TODOs in this project and write a short report"
    args = ["run", prompt, "--sandbox", str(workspace), "--history", str(history)]
    runner = subprocess.Popen(
        [*CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    assert runner.stdout is not None and runner.stderr is not None
    runner.stdout.read(200)  # the first lines only, as `head -c 200` would
    runner.stdout.close()
    errors = runner.stderr.read()
    assert runner.wait(timeout=120) == EXIT_BROKEN_PIPE, errors.decode()
    assert b"Traceback" not in errors
    [stored] = stored_runs(history)
    assert (stored["prompt"], stored["status"]) == (prompt, "cancelled")


def test_a_broken_pipe_elsewhere_is_not_taken_for_stdouts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Another pipe's BrokenPipeError (a tool's process, an MCP server) is a bug to show, not a
    reader that left: only stdout's own writes are judged."""

    def broken(_args: list[str] | None) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(cli, "_command", broken)
    with pytest.raises(BrokenPipeError):
        cli.main(["tools"])


def test_stdout_after_a_lost_write_swallows_the_rest_and_tells_listeners() -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)
    told: list[str] = []
    with open(write_end, "w", closefd=False) as raw:
        stdout = ReportingStdout(raw)
        stdout.listeners.append(lambda: told.append("lost"))
        stdout.write("x" * 100_000)
        stdout.flush()
        stdout.write("more")
        stdout.flush()
        assert told == ["lost"]
        assert isinstance(stdout.failure, BrokenPipeError)
        assert stdout.exit_code(0) == EXIT_BROKEN_PIPE
    os.close(write_end)


def test_a_run_whose_output_cannot_be_written_is_not_started(tmp_path: Path) -> None:
    """`cleveragents run ... > /dev/full`: the first line already fails, so the run spends
    nothing, stores nothing, and the one-line reason says why."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    history = tmp_path / "h.sqlite3"
    args = ["run", "look around", "--sandbox", str(workspace), "--history", str(history)]
    assert_full_device_refused(args, tmp_path)
    assert stored_runs(history) == []
