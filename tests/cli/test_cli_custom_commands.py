"""A custom command typed to `cleveragents run`: the core expands it as for the daemon and ACP
(the CLI, run for real in a subprocess, sends the model the command's prompt)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

RUN = [sys.executable, "-m", "cleveragents", "run", "--profile", "read-only"]
SHOW = [sys.executable, "-m", "cleveragents", "runs", "show"]


def test_run_expands_a_workspace_command_and_leaves_other_slashes(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    commands = workspace / ".cleveragents" / "commands"
    commands.mkdir(parents=True)
    (commands / "review.md").write_text("---\ndescription: Review\n---\nReview $1 for tests.\n")
    env = {
        **os.environ,
        "CLEVERAGENTS_PROVIDER": "",
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
    }

    def first_message(prompt: str) -> object:
        """The first message of the run's conversation: what the model was sent."""
        history = str(tmp_path / "history.db")
        done = subprocess.run(
            [*RUN, prompt, "--sandbox", str(workspace), "--json", "--history", history],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        # `run --json` is the daemon's RunResult; the conversation is in `runs show --json`.
        shown = subprocess.run(
            [*SHOW, json.loads(done.stdout)["runId"], "--history", history, "--json"],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
            check=False,
        )
        assert shown.returncode == 0, shown.stderr
        messages = json.loads(shown.stdout)["messages"]
        assert isinstance(messages, list) and messages
        return {"role": messages[0]["role"], "text": messages[0]["text"]}

    assert first_message("/review app.py quickly") == {
        "role": "user",
        "text": "Review app.py for tests.",
    }
    # No such command: sent as typed.
    assert first_message("/nosuch app.py") == {"role": "user", "text": "/nosuch app.py"}
