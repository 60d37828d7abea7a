"""The command wall through the real daemon: a scripted model's run_command calls cannot read
the home folder or the daemon's secrets, runaway commands end as failed records while the
daemon keeps answering, and an unconfined command is asked about even under full-auto."""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from cleveragents.workspace import CommandPolicy, bubblewrap_status
from cleveragents.workspace.cgroups import cgroup_support
from cleveragents.workspace.command import process_rlimit
from support.daemon_lsp import lsp_session
from support.daemon_support import call, replay_options, write_script

BWRAP = bubblewrap_status()
needs_bwrap = pytest.mark.skipif(
    not BWRAP.available, reason=f"bubblewrap is not usable here: {BWRAP.reason}"
)
DAEMON_SECRETS = {
    "GITHUB_PAT": "ghp_daemon_secret",
    "DATABASE_URL": "postgres://user:daemon_pw@db/x",
    "NPM_AUTH": "npm_daemon_secret",
}


@pytest.fixture
def planted() -> Iterator[tuple[str, Path, Path]]:
    """A key in the real ~/.ssh and a file in a folder outside the sandbox and /tmp."""
    token = secrets.token_hex(8)
    ssh = Path(os.path.expanduser("~")).resolve() / ".ssh"
    made_ssh = not ssh.exists()
    ssh.mkdir(mode=0o700, exist_ok=True)
    key = ssh / f"cleveragents-daemon-key-{token}"
    key.write_text(f"KEY-SECRET-{token}\n")
    base = "/var/tmp" if os.access("/var/tmp", os.W_OK) else str(ssh.parent)
    outside = Path(tempfile.mkdtemp(prefix="cleveragents-outside-", dir=base))
    (outside / "notes.txt").write_text(f"OUTSIDE-SECRET-{token}\n")
    try:
        yield token, key, outside / "notes.txt"
    finally:
        key.unlink()
        shutil.rmtree(outside, ignore_errors=True)
        if made_ssh:
            shutil.rmtree(ssh, ignore_errors=True)


@needs_bwrap
async def test_a_commands_output_holds_no_home_file_and_no_daemon_secret(
    tmp_path: Path, sandbox: Path, planted: tuple[str, Path, Path]
) -> None:
    token, key, outside_file = planted
    command = f"cat {key} ~/.ssh/* {outside_file}; ls -A ~; env"
    script = write_script(
        tmp_path / "s.json",
        {"text": "", "tool_calls": [call("run_command", "c", command=command)]},
        {"text": "Done."},
    )
    options = replay_options(script, builtinTools=True, automationProfile="full-auto")
    async with lsp_session(tmp_path, options, env=DAEMON_SECRETS) as session:
        result = await session.request(
            "cleveragents/run", {"prompt": "look around", "sandboxRoot": str(sandbox)}
        )
    record = result["toolCallHistory"][0]
    assert record["success"] is True and record["output"]["confined"] is True
    shown = record["output"]["stdout"] + record["output"]["stderr"]
    assert f"SECRET-{token}" not in shown
    assert not [value for value in DAEMON_SECRETS.values() if value in shown]
    names = {
        line.split("=", 1)[0] for line in record["output"]["stdout"].splitlines() if "=" in line
    }
    assert not set(DAEMON_SECRETS) & names and "PATH" in names


def _process_limit_enforced() -> bool:
    return (
        cgroup_support().home("pids") is not None
        or process_rlimit(CommandPolicy().limits) is not None
    )


async def test_a_fork_bomb_and_a_disk_filler_end_as_failed_records(
    tmp_path: Path, sandbox: Path
) -> None:
    if not _process_limit_enforced():
        pytest.skip("no pids cgroup and RLIMIT_NPROC does not bind root: nothing bounds it")
    script = write_script(
        tmp_path / "s.json",
        {
            "text": "",
            "tool_calls": [
                call("run_command", "bomb", command="bomb() { bomb | bomb & }; bomb; sleep 60"),
                call("run_command", "fill", command="yes > big; ls -l big"),
            ],
        },
        {"text": "", "tool_calls": [call("run_command", "after", command="echo fine")]},
        {"text": "Done."},
    )
    limits = {
        "CLEVERAGENTS_COMMAND_MAX_PROCESSES": "64",
        "CLEVERAGENTS_COMMAND_MAX_FILE_SIZE": "1M",
    }
    options = replay_options(script, builtinTools=True, automationProfile="full-auto")
    async with lsp_session(tmp_path, options, env=limits) as session:
        result = await session.request(
            "cleveragents/run", {"prompt": "misbehave", "sandboxRoot": str(sandbox)}
        )
        # The daemon still answers while and after the commands ran.
        tools = await session.request("cleveragents/tools", {})
        assert any(tool["name"] == "run_command" for tool in tools["tools"])
    bomb, fill, after = result["toolCallHistory"]
    assert bomb["success"] is False and bomb["errorKind"] in ("execution_error", "timeout")
    assert "process limit" in bomb["error"] or bomb["errorKind"] == "timeout"
    assert fill["success"] is False and "file size limit (1 MiB)" in fill["error"]
    assert (sandbox / "big").stat().st_size <= 1024 * 1024
    assert after["success"] is True and after["output"]["stdout"] == "fine\n"


async def test_an_unconfined_command_is_asked_about_under_full_auto(
    tmp_path: Path, sandbox: Path
) -> None:
    script = write_script(
        tmp_path / "s.json",
        {"text": "", "tool_calls": [call("run_command", "c", command="touch ran")]},
        {"text": "Done."},
    )
    options = replay_options(
        script, builtinTools=True, automationProfile="full-auto", approvals=True
    )
    # What a machine without bubblewrap does, switched on by the real setting.
    async with lsp_session(
        tmp_path, options, env={"CLEVERAGENTS_COMMAND_BWRAP": "none"}
    ) as session:
        session.decide = lambda params: {"decision": "deny"}
        result = await session.request(
            "cleveragents/run", {"prompt": "touch", "sandboxRoot": str(sandbox)}
        )
        assert [asked["toolName"] for asked in session.approval_requests] == ["run_command"]
    assert result["toolCallHistory"][0]["errorKind"] == "denied"
    assert not (sandbox / "ran").exists()
    # With the explicit setting, full-auto runs it without asking, and the record says so.
    unconfined_ok = {
        "CLEVERAGENTS_COMMAND_BWRAP": "none",
        "CLEVERAGENTS_ALLOW_UNCONFINED_COMMANDS": "1",
    }
    async with lsp_session(tmp_path, options, env=unconfined_ok) as session:
        result = await session.request(
            "cleveragents/run", {"prompt": "touch", "sandboxRoot": str(sandbox)}
        )
        assert session.approval_requests == []
    record = result["toolCallHistory"][0]
    assert record["success"] is True and record["output"]["confined"] is False
    assert (sandbox / "ran").exists()


async def test_the_daemons_own_history_and_checkpoints_are_out_of_every_tools_reach(
    tmp_path: Path,
) -> None:
    """A sandbox that holds the daemon's history (and so its checkpoint store): the file
    tools refuse them by name and pass over them in searches, and a command (when confined)
    sees them empty. Found open in a review: `read_file` read the history of every run."""
    history = tmp_path / "history.sqlite3"
    script = write_script(
        tmp_path / "s.json",
        {"text": "", "tool_calls": [call("write_file", "w", path="a.txt", content="a")]},
        {
            "text": "",
            "tool_calls": [
                call("read_file", "r", path="history.sqlite3"),
                call("list_dir", "l", path="."),
                call("grep", "g", pattern="PROMPT-MARKER"),
                call("run_command", "c", command="wc -c < history.sqlite3; ls -A checkpoints"),
            ],
        },
        {"text": "Done."},
    )
    options = replay_options(script, builtinTools=True, automationProfile="full-auto")
    async with lsp_session(tmp_path, options) as session:
        result = await session.request(
            "cleveragents/run", {"prompt": "PROMPT-MARKER", "sandboxRoot": str(tmp_path)}
        )
    records = {record["callId"]: record for record in result["toolCallHistory"]}
    assert records["w"]["success"] is True
    assert records["r"]["errorKind"] == "sandbox_violation"
    names = [entry["name"] for entry in records["l"]["output"]["entries"]]
    assert "a.txt" in names and "history.sqlite3" not in names and "checkpoints" not in names
    # The script itself names the pattern; nothing of the history or the store may match.
    assert [m.split(":")[0] for m in records["g"]["output"]["matches"]] == ["s.json"]
    assert history.stat().st_mode & 0o077 == 0
    if BWRAP.available:
        # A history lying directly in the sandbox folder cannot be hidden with its folder (a
        # command could plant its -journal before SQLite makes one): no command runs there.
        assert records["c"]["success"] is False
        assert "lies directly in the sandbox folder" in records["c"]["error"]


async def test_a_protected_write_by_a_command_is_asked_about_over_the_wire(
    tmp_path: Path, sandbox: Path
) -> None:
    """The repository guard through the daemon: under full-auto the command runs unasked, then
    `approveToolCall` comes with `protected: true` and what it wrote; the client's no undoes it."""
    plant = "git init -q . && git config core.fsmonitor 'touch fsmonitor-ran'"
    script = write_script(
        tmp_path / "s.json",
        {"text": "", "tool_calls": [call("run_command", "c", command=plant)]},
        {"text": "Done."},
    )
    options = replay_options(
        script, builtinTools=True, automationProfile="full-auto", approvals=True
    )
    async with lsp_session(tmp_path, options) as session:
        session.decide = lambda params: {"decision": "deny"}
        result = await session.request(
            "cleveragents/run", {"prompt": "plant", "sandboxRoot": str(sandbox)}
        )
        [asked] = session.approval_requests
    assert asked["protected"] is True and "core.fsmonitor" in asked["note"]
    output = result["toolCallHistory"][0]["output"]
    assert output["protected_writes"][0]["outcome"] == "undone"
    assert "fsmonitor" not in (sandbox / ".git" / "config").read_text()
