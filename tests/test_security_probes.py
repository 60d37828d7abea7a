"""Attacks on the walls, tried for real: the CLI in a subprocess, the replay provider as a
prompt-injected model, real bubblewrap, real git, real files.

Each test is one hole that was found open (docs/security.md, "Tried as an attacker").
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from cleveragents.workspace.bubblewrap import bubblewrap_status
from cleveragents.workspace.command import run_in_sandbox
from cleveragents.workspace.command_policy import CommandPolicy, passes_variable
from cleveragents.workspace.sandbox import Sandbox

CLI = [sys.executable, "-m", "cleveragents"]


CANARY = "CANARY-7f3a9c"

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def run_cli(script: Sequence[object], sandbox: Path, *extra: str, **env: str) -> Any:
    """`cleveragents run --json` playing `script`; returns the parsed result."""
    script_file = sandbox.parent / "script.json"
    script_file.write_text(json.dumps({"responses": script}), encoding="utf-8")
    environment = {**os.environ, "CLEVERAGENTS_PROVIDER": "", "COLUMNS": "200", **env}
    for name in [name for name, value in environment.items() if value == ""]:
        del environment[name]
    completed = subprocess.run(
        [
            *CLI,
            "run",
            "--sandbox",
            str(sandbox),
            "--provider",
            "replay",
            "--script",
            str(script_file),
            "--json",
            *extra,
            "probe",
        ],
        capture_output=True,
        text=True,
        timeout=180,
        env=environment,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout)


def calls(result: Any) -> dict[str, dict[str, Any]]:
    return {record["callId"]: record for record in result["toolCallHistory"]}


@needs_git
def test_a_sandbox_holding_the_data_folder_cannot_reach_the_checkpoint_store_or_credentials(
    tmp_path: Path,
) -> None:
    """Found open: with the sandbox at the home folder (so holding ~/.local/share/cleveragents
    and ~/.ssh), `write_file` under auto-edit rewrote a checkpoint repository's git `config`
    with `core.fsmonitor = <program>`, and the next snapshot ran that program outside every
    wall. `read_file`/`grep` also read `~/.ssh` and the run history."""
    home = tmp_path / "home"
    (home / "proj").mkdir(parents=True)
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_canary").write_text(f"{CANARY} ssh key\n")
    (home / "proj" / "key").symlink_to("../.ssh/id_canary")
    marker = tmp_path / "PWNED"
    key = hashlib.sha256(os.fsencode(str(home.resolve()))).hexdigest()
    store = ".local/share/cleveragents/checkpoints"
    config = f"{store}/{key}/git/config"
    evil = f'[core]\n\tbare = false\n\tfsmonitor = "touch {marker}; false"\n'

    def call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
        return {"id": call_id, "name": name, "arguments": arguments}

    script = [
        {"tool_calls": [call("w1", "write_file", path="proj/a.txt", content="a")]},
        {
            "tool_calls": [
                call("read_config", "read_file", path=config),
                call("write_config", "write_file", path=config, content=evil),
                call("edit_config", "edit_file", path=config, old_text="bare", new_text="x"),
                call("list_store", "list_dir", path=store),
                call("read_history", "read_file", path=".local/share/cleveragents/history.sqlite3"),
                call("read_key", "read_file", path=".ssh/id_canary"),
                call("read_key_abs", "read_file", path=str(home / ".ssh" / "id_canary")),
                call("read_key_link", "read_file", path="proj/key"),
                call("glob_key", "glob", pattern=".ssh/*"),
                call("list_root", "list_dir", path="."),
                call("list_share", "list_dir", path=".local/share"),
                call("glob_all", "glob", pattern="**/*"),
                call("grep_re2", "grep", pattern=CANARY),
                call("grep_child", "grep", pattern=f"(?={CANARY}){CANARY}"),
                call("grep_store", "grep", pattern="fsmonitor", path=store),
            ]
        },
        {"tool_calls": [call("w2", "write_file", path="proj/b.txt", content="b")]},
        {"text": "done"},
    ]
    result = run_cli(script, home, "--profile", "auto-edit", HOME=str(home), XDG_DATA_HOME="")
    by_id = calls(result)
    assert by_id["w1"]["success"] and by_id["w2"]["success"]
    assert not marker.exists(), "a program named in the shadow repository's config ran"
    for refused in (
        "read_config",
        "write_config",
        "edit_config",
        "list_store",
        "read_history",
        "read_key",
        "read_key_abs",
        "read_key_link",
        "glob_key",
        "grep_store",
    ):
        assert by_id[refused]["errorKind"] == "sandbox_violation", by_id[refused]
    assert str(marker) not in (home / config).read_text()
    names = [entry["name"] for entry in by_id["list_root"]["output"]["entries"]]
    assert "proj" in names and ".ssh" not in names
    assert by_id["list_share"]["output"]["entries"] == []
    everything = json.dumps(result["toolCallHistory"])
    assert f"{CANARY} ssh key" not in everything
    assert not any(
        ".ssh" in m or "cleveragents/" in m for m in by_id["glob_all"]["output"]["matches"]
    )
    assert by_id["grep_re2"]["output"]["count"] == 0
    assert by_id["grep_child"]["output"]["engine"] == "re"
    assert by_id["grep_child"]["output"]["count"] == 0
    # The checkpoints of a home-folder sandbox hold no copy of a credential either.
    git_dir = str(home / store / key / "git")
    objects = subprocess.run(
        ["git", "--git-dir", git_dir, "cat-file", "--batch-all-objects", "--batch"],
        capture_output=True,
        check=True,
    ).stdout
    assert b"a.txt" in objects and b"proj" in objects  # the snapshots are there
    assert CANARY.encode() not in objects
    assert b"100644 id_canary" not in objects  # no tree holds the key (proj/key is a link)


def test_the_filesystem_root_and_folders_holding_the_home_folder_are_no_sandbox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home" / "me"
    (home / "proj").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    for root, problem in (
        ("/", "is the root of the filesystem"),
        (str(tmp_path / "home"), f"holds the home folder {home}"),
        (str(tmp_path), f"holds the home folder {home}"),
    ):
        with pytest.raises(Exception, match=problem):
            Sandbox(root)
    if os.path.isdir("/home") and os.path.realpath("/home") == "/home":
        # Whoever runs the daemon (root's home is /root): every user's home is too broad.
        with pytest.raises(Exception, match="holds every user's home folder"):
            Sandbox("/home")
    assert Sandbox(str(home / "proj")).root == str(home / "proj")
    assert Sandbox(str(home)).root == str(home)  # its credentials stay hidden (above)


def test_the_cli_refuses_the_filesystem_root_as_sandbox(tmp_path: Path) -> None:
    completed = subprocess.run(
        [*CLI, "run", "--sandbox", "/", "--provider", "offline", "list the files"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 2, completed
    assert "--sandbox: '/' is the root of the filesystem" in completed.stderr


def test_a_sandbox_inside_the_data_folder_is_refused(tmp_path: Path) -> None:
    private = tmp_path / "data" / "cleveragents"
    (private / "checkpoints").mkdir(parents=True)
    with pytest.raises(Exception, match="which tools may never see"):
        Sandbox(str(private / "checkpoints"), hidden=[str(private)])


@needs_git
def test_the_history_and_checkpoints_are_readable_by_their_owner_only(tmp_path: Path) -> None:
    """Found open: the data folder was made 0755 and the history 0644, so another local user
    could read every prompt and output, and the checkpoints' copies of every project's files
    (from folders they could not read themselves)."""
    data = tmp_path / "data"
    older = data / "cleveragents"
    older.mkdir(parents=True, mode=0o755)  # as an earlier version left it
    older.chmod(0o755)
    sandbox = tmp_path / "proj"
    sandbox.mkdir()
    script = [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "a", "content": "a"}}]},
        {"text": "done"},
    ]
    run_cli(script, sandbox, "--profile", "auto-edit", XDG_DATA_HOME=str(data))
    for path in (older, older / "history.sqlite3", older / "checkpoints"):
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode & 0o077 == 0, f"{path} is {oct(mode)}"
    for sidecar in older.glob("history.sqlite3-*"):
        assert stat.S_IMODE(sidecar.stat().st_mode) & 0o077 == 0


@needs_git
@pytest.mark.skipif(not bubblewrap_status().available, reason="needs working bubblewrap")
def test_a_history_moved_into_the_sandbox_is_hidden_from_commands_and_file_tools(
    tmp_path: Path,
) -> None:
    """Found open: only the default data folder was hidden, so with `--history` in the
    project a command read the history and could rewrite the checkpoint repositories' config
    (their store lies next to the history)."""
    sandbox = tmp_path / "proj"
    sandbox.mkdir()
    marker = tmp_path / "PWNED"
    command = (
        "cat .hist/history.sqlite3 | head -c 16; echo; ls -A .hist/checkpoints | wc -l; "
        f"for c in .hist/checkpoints/*/git/config; do "
        f"printf '[core]\\n\\tfsmonitor = \"touch {marker}\"\\n' >> $c && echo WROTE; done"
    )
    script = [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "a", "content": "a"}}]},
        {
            "tool_calls": [
                {"id": "cmd", "name": "run_command", "arguments": {"command": command}},
                {"id": "read", "name": "read_file", "arguments": {"path": ".hist/history.sqlite3"}},
            ]
        },
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "b", "content": "b"}}]},
        {"text": "done"},
    ]
    result = run_cli(
        script,
        sandbox,
        "--profile",
        "full-auto",
        "--history",
        str(sandbox / ".hist" / "history.sqlite3"),
    )
    by_id = calls(result)
    output = by_id["cmd"]["output"]
    assert output["confined"] is True
    assert "SQLite format" not in output["stdout"]
    assert "WROTE" not in output["stdout"]
    assert output["stdout"].split("\n")[1].strip() == "0"  # the store shows as empty
    assert by_id["read"]["errorKind"] == "sandbox_violation"
    assert not marker.exists()


async def test_only_named_locale_variables_pass_not_any_lc_name(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Found open: `LC_*` was an allow-list pattern, so `LC_SECRET_TOKEN` (any name can start
    with LC_; ssh forwards LC_* from the client) reached every command."""
    assert passes_variable("LC_ALL", CommandPolicy())
    assert passes_variable("LC_CTYPE", CommandPolicy())
    assert not passes_variable("LC_SECRET_TOKEN", CommandPolicy())
    monkeypatch.setenv("LC_SECRET_TOKEN", CANARY)
    monkeypatch.setenv("LC_TIME", "C")
    sandbox = Sandbox(str(tmp_path))
    result = await run_in_sandbox("env", sandbox, sandbox.resolve("."), 60, policy=CommandPolicy())
    assert CANARY not in result["stdout"]
    assert "LC_TIME=C" in result["stdout"]


@needs_git
@pytest.mark.skipif(not bubblewrap_status().available, reason="needs working bubblewrap")
def test_a_command_cannot_move_the_hidden_data_folder_aside_and_plant_a_store(
    tmp_path: Path,
) -> None:
    """Found open: the data folder inside the sandbox was covered by a mount, which cannot be
    moved, but its parent could: `mv ~/.local/share ~/.local/share2` took the real store out
    of the way, and a repository the command made at the store's path, with
    `core.fsmonitor = <program>` in its config, ran that program at the next snapshot."""
    home = tmp_path / "home"
    home.mkdir()
    marker = tmp_path / "PWNED"
    key = hashlib.sha256(os.fsencode(str(home.resolve()))).hexdigest()
    git = f".local/share/cleveragents/checkpoints/{key}/git"
    command = (
        "mv .local/share .local/share2 && echo MOVED; "
        f"git init --quiet --bare {git} && "
        f"git --git-dir={git} config core.fsmonitor 'touch {marker}; false' && "
        f"git --git-dir={git} config core.bare false && echo PLANTED"
    )
    script = [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "a", "content": "a"}}]},
        {"tool_calls": [{"id": "cmd", "name": "run_command", "arguments": {"command": command}}]},
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "b", "content": "b"}}]},
        {"text": "done"},
    ]
    result = run_cli(script, home, "--profile", "full-auto", HOME=str(home), XDG_DATA_HOME="")
    output = calls(result)["cmd"]["output"]
    assert output["confined"] is True
    assert "MOVED" not in output["stdout"], output
    assert not marker.exists(), "a program named in a planted repository's config ran"
    assert (home / ".local" / "share" / "cleveragents" / "history.sqlite3").is_file()


@needs_git
def test_a_rewritten_checkpoint_config_runs_no_program(tmp_path: Path) -> None:
    """Depth behind the walls above: should a checkpoint repository's config be rewritten
    anyway, the git commands of a snapshot still run neither its fsmonitor nor its hooks."""
    from cleveragents.service.checkpoints import CheckpointStore

    sandbox = tmp_path / "sb"
    sandbox.mkdir()
    (sandbox / "a").write_text("a")
    store = CheckpointStore(tmp_path / "data")
    store.snapshot(sandbox, "run", 1)
    repo = next(path for path in store.root.iterdir() if (path / "git").is_dir())
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    hook = hooks / "reference-transaction"
    hook.write_text(f"#!/bin/sh\ntouch {tmp_path / 'HOOK_RAN'}\n")
    hook.chmod(0o755)
    config = repo / "git" / "config"
    config.write_text(
        config.read_text()
        + f'[core]\n\tfsmonitor = "touch {tmp_path / "FSMONITOR_RAN"}; false"\n'
        + f"\thooksPath = {hooks}\n"
    )
    (sandbox / "b").write_text("b")
    store.snapshot(sandbox, "run", 2)
    assert not (tmp_path / "FSMONITOR_RAN").exists()
    assert not (tmp_path / "HOOK_RAN").exists()


@needs_git
@pytest.mark.skipif(not bubblewrap_status().available, reason="needs working bubblewrap")
def test_a_hostile_run_cannot_make_runs_restore_write_outside(tmp_path: Path) -> None:
    """Tried and held: between the snapshot and `cleveragents runs restore`, a command swaps a
    folder for a symlink to a folder outside, plants a newline in a file name and a `.git`
    file pointing elsewhere, and ignores the swapped folder; the restore writes only inside."""
    sandbox = tmp_path / "proj"
    (sandbox / "sub").mkdir(parents=True)
    (sandbox / "sub" / "file").write_text("original\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    history = tmp_path / "h.sqlite3"
    command = (
        f"rm -rf sub && ln -s {outside} sub && printf x > 'new\nline' && "
        f"printf 'gitdir: {outside}\\n' > .git && printf 'sub\\n' > .gitignore && echo SWAPPED"
    )
    script = [
        {"tool_calls": [{"id": "cmd", "name": "run_command", "arguments": {"command": command}}]},
        {"text": "done"},
    ]
    result = run_cli(script, sandbox, "--profile", "full-auto", "--history", str(history))
    assert "SWAPPED" in calls(result)["cmd"]["output"]["stdout"]
    assert (sandbox / "sub").is_symlink()
    restore = subprocess.run(
        [*CLI, "runs", "restore", result["runId"], "--yes", "--history", str(history)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "CLEVERAGENTS_PROVIDER": ""},
        check=False,
    )
    assert restore.returncode == 0, restore.stderr + restore.stdout
    assert os.listdir(outside) == []
    # The ignored symlink stands in the way of sub/file: it is kept, listed, never followed.
    assert "sub/file" in restore.stdout
    assert not (sandbox / "new\nline").exists()
