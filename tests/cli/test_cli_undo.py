"""Undo from a terminal: `cleveragents run` takes checkpoints, `runs restore` puts files back.

The real command in subprocesses, real git, real files; the model is the replay provider.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

CLI = [sys.executable, "-m", "cleveragents"]
Entry = tuple[bytes, int]

pytestmark = [
    pytest.mark.skipif(shutil.which("git") is None, reason="needs git"),
    pytest.mark.usefixtures("fixed_umask"),  # modes are compared exactly
]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path


def cli(home: Path, *args: str, stdin: int | None = subprocess.DEVNULL) -> Any:
    env = {
        **os.environ,
        "CLEVERAGENTS_PROVIDER": "",
        "XDG_DATA_HOME": str(home / "data"),
        "COLUMNS": "200",
    }
    return subprocess.run(
        [*CLI, *args, *(["--history", str(home / "h.sqlite3")] if args[0] != "run" else [])],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        stdin=stdin,
        check=False,
    )


def files(root: Path) -> dict[str, Entry]:
    found: dict[str, Entry] = {}
    for folder, _dirs, names in os.walk(root):
        for name in names:
            path = Path(folder, name)
            found[path.relative_to(root).as_posix()] = (
                path.read_bytes(),
                stat.S_IMODE(path.stat().st_mode),
            )
    return found


def run_and_change(home: Path, workspace: Path) -> tuple[str, dict[str, Any]]:
    """A run that writes, edits, and runs a command that deletes and creates files."""
    script = home / "script.json"
    command = "rm -r old && printf 'x' > made.bin && chmod 755 made.bin && chmod 644 tool.sh"
    script.write_text(
        json.dumps(
            {
                "responses": [
                    {
                        "tool_calls": [
                            {"name": "write_file", "arguments": {"path": "n.txt", "content": "n"}},
                            {
                                "name": "edit_file",
                                "arguments": {"path": "e.txt", "old_text": "a", "new_text": "b"},
                            },
                        ]
                    },
                    {"tool_calls": [{"name": "run_command", "arguments": {"command": command}}]},
                    {"text": "Done."},
                ]
            }
        )
    )
    done = cli(
        home,
        "run",
        "change things",
        "--sandbox",
        str(workspace),
        "--provider",
        "replay",
        "--script",
        str(script),
        "--profile",
        "full-auto",
        "--json",
        "--history",
        str(home / "h.sqlite3"),
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    return str(result["runId"]), result


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    (root / "old").mkdir(parents=True)
    (root / "old" / "gone.txt").write_text("gone\n")
    (root / "e.txt").write_text("a\n")
    (root / "tool.sh").write_text("#!/bin/sh\n")
    (root / "tool.sh").chmod(0o755)
    return root


def test_a_run_lists_its_changes_and_runs_restore_undoes_it(home: Path, workspace: Path) -> None:
    original = files(workspace)
    run_id, result = run_and_change(home, workspace)
    assert {(c["path"], c["change"]) for c in result["changedFiles"]} == {
        ("n.txt", "added"),
        ("e.txt", "modified"),
        ("old/gone.txt", "deleted"),
        ("made.bin", "added"),
        ("tool.sh", "modified"),
    }
    assert result["checkpointWarning"] is None
    after_run = files(workspace)
    after_first = {**original, "n.txt": after_run["n.txt"], "e.txt": after_run["e.txt"]}

    shown = cli(home, "runs", "show", run_id)
    assert shown.returncode == 0, shown.stderr
    assert "before iteration 1" in shown.stdout and "before iteration 2" in shown.stdout
    assert "changed 5 file(s)" in shown.stdout and "old/gone.txt" in shown.stdout
    stored = json.loads(cli(home, "runs", "show", run_id, "--json").stdout)
    assert [c["iteration"] for c in stored["checkpoints"]] == [1, 2]

    refused = cli(home, "runs", "restore", run_id)  # no terminal, no --yes
    assert refused.returncode == 2 and "pass --yes" in refused.stderr
    dry = cli(home, "runs", "restore", run_id, "--dry-run")
    assert dry.returncode == 0 and "dry run: nothing was changed" in dry.stdout
    assert "n.txt" in dry.stdout and files(workspace) == after_run

    back = cli(home, "runs", "restore", run_id, "--iteration", "2", "--yes")
    assert back.returncode == 0, back.stderr
    assert files(workspace) == after_first
    whole = cli(home, "runs", "restore", run_id, "--yes", "--json")
    assert whole.returncode == 0, whole.stderr
    assert files(workspace) == original
    restore_id = json.loads(whole.stdout)["restoreId"]

    listed = json.loads(cli(home, "runs", "--json").stdout)
    assert [(r["kind"], r["restoredRunId"]) for r in listed] == [
        ("restore", run_id),
        ("restore", run_id),
        ("run", None),
    ]
    undone = cli(home, "runs", "restore", restore_id, "--yes")
    assert undone.returncode == 0 and "Undo this restore with: cleveragents runs restore" in (
        undone.stdout
    )
    assert files(workspace) == after_first

    bad = cli(home, "runs", "restore", run_id, "--iteration", "7", "--yes")
    assert bad.returncode == 2 and "--iteration: " in bad.stderr
    missing = cli(home, "runs", "restore", "run_nope", "--yes")
    assert missing.returncode == 1 and "no run 'run_nope'" in missing.stderr
    # The core's continuation rules, as the daemon's continueFrom gets them: a restore has no
    # conversation to go on with.
    history = str(home / "h.sqlite3")
    continued = cli(
        home,
        "run",
        "go",
        "--sandbox",
        str(workspace),
        "--history",
        history,
        "--continue",
        restore_id,
    )
    assert continued.returncode == 2, continued.stderr
    assert continued.stderr.startswith("cleveragents: --continue: ") and "is a restore" in (
        continued.stderr
    )

    disk = cli(home, "runs", "disk", "--json")
    assert json.loads(disk.stdout)["by_sandbox"][str(workspace.resolve())] > 0
    assert "checkpoints take" in cli(home, "runs", "disk").stdout
    pruned = cli(home, "runs", "prune-checkpoints")
    assert pruned.returncode == 0 and "removed 0 checkpoint(s)" in pruned.stdout


def test_restore_asks_at_a_terminal(home: Path, workspace: Path) -> None:
    import pty

    original = files(workspace)
    run_id, _result = run_and_change(home, workspace)
    after_run = files(workspace)
    for answer, expected in ((b"n\n", after_run), (b"y\n", original)):
        leader, follower = pty.openpty()
        process = subprocess.Popen(
            [*CLI, "runs", "restore", run_id, "--history", str(home / "h.sqlite3")],
            stdin=follower,
            stdout=follower,
            stderr=follower,
            close_fds=True,
            env={**os.environ, "TERM": "dumb", "COLUMNS": "200"},
        )
        os.close(follower)
        screen = b""
        deadline = time.monotonic() + 60
        answered = False
        while process.poll() is None and time.monotonic() < deadline:
            try:
                screen += os.read(leader, 4096)
            except OSError:
                break
            if not answered and b"[y/N]" in screen:
                os.write(leader, answer)
                answered = True
        process.wait(timeout=30)
        os.close(leader)
        assert answered, screen.decode(errors="replace")
        assert process.returncode == (1 if answer == b"n\n" else 0), screen
        assert files(workspace) == expected
