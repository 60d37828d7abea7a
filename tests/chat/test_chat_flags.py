"""`cleveragents chat` takes its setting flags from the settings table, as `cleveragents run`
does: the same flags with the same help, a bad value refused with the same words (exit 2,
the flag named), and the values resolved by the same core resolver into the session's runs
(checked in the run history the session wrote, through the real command)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cleveragents.chat.command import parser as chat_parser
from cleveragents.cli.parser import build_parser
from cleveragents.service.history import RunHistory
from cleveragents.settings_table import ENV_MAX_ITERATIONS, Level, rows_for

CLI = [sys.executable, "-m", "cleveragents"]


def _setting_actions(parser: argparse.ArgumentParser) -> dict[str, tuple[object, ...]]:
    """Each setting flag of a parser with what a user sees of it and where it is stored."""
    setting_dests = {row.name for row in rows_for(Level.CLI)} | {"command_limits"}
    return {
        action.option_strings[0]: (action.dest, action.help, action.metavar, action.choices)
        for action in parser._actions
        if action.dest in setting_dests
    }


def _run_parser() -> argparse.ArgumentParser:
    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    run: argparse.ArgumentParser = commands.choices["run"]
    return run


def test_chat_takes_every_setting_flag_run_takes_with_the_same_help() -> None:
    chat = _setting_actions(chat_parser())
    run = _setting_actions(_run_parser())
    assert chat == run
    flags = {row.flag_name for row in rows_for(Level.CLI) if row.value_type != "limit"}
    assert flags | {"--command-limit"} == set(chat)


def _cli(
    args: list[str], cwd: Path, tmp_path: Path, stdin: str = "", **env: str
) -> subprocess.CompletedProcess[str]:
    environment = {
        **{k: v for k, v in os.environ.items() if not k.startswith("CLEVERAGENTS_")},
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "COLUMNS": "200",
        **env,
    }
    return subprocess.run(
        [*CLI, *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
    )


@pytest.mark.parametrize(
    "flags",
    [
        ["--max-iterations", "1001"],
        ["--max-iterations", "many"],
        ["--tool-result-budget", "5"],
        ["--provider", "bogus"],
        ["--command-limit", "memory-bytes=lots"],
        ["--command-read-path", "relative/dir"],
        ["--command-env", "NOT A NAME"],
    ],
    ids=lambda flags: " ".join(flags),
)
def test_a_bad_setting_flag_is_refused_as_run_refuses_it(tmp_path: Path, flags: list[str]) -> None:
    project = tmp_path / "project"
    project.mkdir()
    chat = _cli(["chat", *flags], project, tmp_path)
    run = _cli(["run", "hello", "--no-history", *flags], project, tmp_path)
    assert chat.returncode == run.returncode == 2
    chat_error = chat.stderr.strip().splitlines()[-1]
    run_error = run.stderr.strip().splitlines()[-1]
    # argparse's words (`cleveragents chat: error: argument --provider: ...`) or the core's
    # (`cleveragents: --max-iterations: must be at most 1000, got 1001`): the flag is named.
    assert flags[0] in chat_error
    assert chat_error.replace("cleveragents chat:", "cleveragents run:") == run_error


def test_a_bad_setting_variable_is_named_as_run_names_it(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    bad = {ENV_MAX_ITERATIONS: "0"}
    chat = _cli(["chat"], project, tmp_path, **bad)
    run = _cli(["run", "hello", "--no-history"], project, tmp_path, **bad)
    assert chat.returncode == run.returncode == 2
    assert chat.stderr == run.stderr
    assert chat.stderr.startswith(f"cleveragents: ${ENV_MAX_ITERATIONS}: ")


def test_the_flags_set_the_sessions_runs(tmp_path: Path) -> None:
    """--history, --provider, --script, --profile and --max-iterations reach the runs the
    session stores: the replayed model asks for a second call the limit of 1 refuses."""
    project = tmp_path / "project"
    project.mkdir()
    script = tmp_path / "script.json"
    listing = {"name": "list_files", "arguments": {"path": "."}}
    script.write_text(json.dumps({"responses": [{"tool_calls": [listing]}, {"text": "Done."}]}))
    history = tmp_path / "elsewhere" / "history.db"
    history.parent.mkdir()
    flags = ["--history", str(history), "--provider", "replay", "--script", str(script)]
    done = _cli(
        ["chat", *flags, "--profile", "read-only", "--max-iterations", "1"],
        project,
        tmp_path,
        stdin="list the files\n",
    )
    assert done.returncode == 0, done.stderr
    assert "provider replay" in done.stdout
    store = RunHistory(history)
    try:
        [run] = store.list_runs()
    finally:
        store.close()
    assert (run.prompt, run.automation_profile) == ("list the files", "read-only")
    assert (run.status, run.iterations, run.tool_call_count) == ("limit", 1, 1)
    assert not (tmp_path / "data" / "cleveragents").exists()  # nothing went to the default
