"""The run history stays private even before its side files exist (issue 17, item 4).

The history inside the sandbox, in WAL mode: SQLite makes `-wal` and `-shm` as it goes and a
rollback `-journal` only for some operations, so none of them may exist when a command starts.
A command that could create `history.db-journal` plants a hot journal that the next open
rolls back: "database disk image is malformed" for every later `runs`. Through the real CLI
with the replay provider and `--history` inside the project: the folder that holds the history
is hidden whole, and a history lying directly in the sandbox folder runs no command at all.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cleveragents.workspace import bubblewrap_status

CLI = [sys.executable, "-m", "cleveragents"]
BWRAP = bubblewrap_status()
pytestmark = pytest.mark.skipif(
    not BWRAP.available, reason=f"bubblewrap is not usable here: {BWRAP.reason}"
)

# What the attacker planted: 512 bytes that begin like a rollback journal.
JOURNAL_MAGIC = "\\xd9\\xd5\\x05\\xf9\\x20\\xa1\\x63\\xd7"
PLANT = (
    "printf '" + JOURNAL_MAGIC + "' > {target} ; head -c 504 /dev/zero >> {target} ; "
    "ls -la {folder} ; echo planted: $(wc -c < {target} 2>/dev/null)"
)


@pytest.fixture(autouse=True)
def private_data_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CLEVERAGENTS_PROVIDER": ""}
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, timeout=120, env=env, check=False
    )


def run_commands(workspace: Path, history: Path, tmp_path: Path, *commands: str) -> Any:
    """`run` under full-auto, the replay model asking for each command in turn."""
    script = tmp_path / "script.json"
    responses = [
        {"tool_calls": [{"name": "run_command", "arguments": {"command": command}}]}
        for command in commands
    ]
    script.write_text(json.dumps({"responses": [*responses, {"text": "done"}]}))
    done = cli(
        "run", "plant", "--sandbox", str(workspace), "--provider", "replay",
        "--script", str(script), "--profile", "full-auto", "--json", "--history", str(history),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def assert_history_intact(history: Path, runs: int) -> None:
    listed = cli("runs", "--json", "--history", str(history))
    assert listed.returncode == 0, listed.stderr
    assert len(json.loads(listed.stdout)) == runs
    with sqlite3.connect(history) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "README.md").write_text("a project\n")
    return folder


def test_a_command_cannot_plant_the_history_journal(workspace: Path, tmp_path: Path) -> None:
    history = workspace / ".cleveragents" / "history.db"
    first = run_commands(workspace, history, tmp_path, "true")
    assert first["stopReason"] == "final_answer"
    assert not Path(f"{history}-journal").exists()  # WAL mode: no journal to cover

    second = run_commands(
        workspace,
        history,
        tmp_path,
        PLANT.format(target=".cleveragents/history.db-journal", folder=".cleveragents"),
        PLANT.format(target=".cleveragents/history.db-wal", folder=".cleveragents"),
    )

    outputs = [record["output"] for record in second["toolCallHistory"]]
    for output in outputs:
        # The folder is empty and read-only inside: nothing was planted.
        assert "Read-only file system" in output["stderr"]
        assert "history.db" not in output["stdout"]
    assert not Path(f"{history}-journal").exists()
    assert_history_intact(history, runs=2)


def test_a_history_directly_in_the_sandbox_runs_no_command(workspace: Path, tmp_path: Path) -> None:
    history = workspace / "history.db"

    result = run_commands(
        workspace, history, tmp_path, PLANT.format(target="history.db-journal", folder=".")
    )

    [record] = result["toolCallHistory"]
    assert record["success"] is False
    assert "lies directly in the sandbox folder" in record["error"]
    assert "--history .cleveragents/history.db" in record["error"]
    assert not Path(f"{history}-journal").exists()
    assert_history_intact(history, runs=1)


def test_the_folder_of_a_history_elsewhere_in_the_sandbox_is_hidden_whole(
    workspace: Path, tmp_path: Path
) -> None:
    """Other files in that folder are hidden with it: said here so a reader knows."""
    (workspace / "data").mkdir()
    (workspace / "data" / "notes.txt").write_text("mine\n")
    history = workspace / "data" / "runs.db"

    result = run_commands(workspace, history, tmp_path, "ls -A data; cat README.md")

    [record] = result["toolCallHistory"]
    assert record["output"]["stdout"] == "a project\n"
    shutil.rmtree(workspace / "data")
