"""The repository guard (issue 17's last hole): no repository a command makes or changes runs
code later unasked.

No mount made before a command can cover a `.git` it invents: `git init -q . && git config
core.fsmonitor '…'` in a folder with no repository, a nested repository with a hook, a `.git`
file pointing at a crafted git folder. Each is run here for real (bubblewrap, real git, temp
sandboxes) through the real runtime, with nobody to ask, an approver saying yes or no, and the
opt-in; then the host's own `git status` / `git commit` runs there and must run nothing.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from cleveragents.tool import (
    ApprovalRequest,
    ToolActorContext,
    ToolCallingRuntime,
    ToolRegistry,
    ToolRunner,
)
from cleveragents.tool.records import ToolCallRecord
from cleveragents.workspace import CommandPolicy, register_builtin_tools, repository_guard
from cleveragents.workspace.repository_guard import (
    RepositoryGuard,
    config_entries,
    config_text,
)
from cli.test_cli import replay_script, run_under_pty
from workspace.test_protected_paths import calls_then_done, cli_run, needs_bwrap

pytestmark = needs_bwrap
GIT_USER = "-c user.name=t -c user.email=t@example.invalid"


def host_git(where: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The user's own git, later, on the host (as an editor's `git status` would run)."""
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=where,
        capture_output=True,
        text=True,
        check=False,
    )


def run_commands(
    root: Path,
    *commands: str,
    policy: CommandPolicy | None = None,
    answers: list[str] | None = None,
    profile: str = "full-auto",
) -> tuple[list[ToolCallRecord], list[ApprovalRequest]]:
    """Each command as a run_command call through the real runtime; `answers` None: nobody
    can be asked, else the approver gives them in turn."""
    asked: list[ApprovalRequest] = []
    pending = list(answers or [])

    async def approve(request: ApprovalRequest) -> Any:
        asked.append(request)
        return pending.pop(0)

    registry = ToolRegistry()
    register_builtin_tools(registry, command_policy=policy or CommandPolicy())
    runtime = ToolCallingRuntime(
        registry,
        ToolRunner(registry),
        calls_then_done(*[("run_command", {"command": command}) for command in commands]),
        approver=approve if answers is not None else None,
    )
    context = ToolActorContext(sandbox_root=str(root), automation_profile=profile)
    result = runtime.run_tool_loop("go", context)
    return list(result.tool_call_history), asked


def outcomes(record: ToolCallRecord) -> dict[str, str]:
    assert record.success, record.error
    return {write["path"]: write["outcome"] for write in record.output["protected_writes"]}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A sandbox that is not a repository (the case the read-only mounts cannot cover)."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "main.py").write_text("print('hi')\n")
    return root


def attack(marker: Path) -> str:
    return f"git init -q . && git config core.fsmonitor 'touch {marker}'"


def test_the_fsmonitor_attack_in_a_folder_with_no_git_is_undone_under_full_auto(
    folder: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "pwned"
    [record], asked = run_commands(folder, attack(marker))

    assert asked == []
    assert outcomes(record) == {".git/config": "undone"}
    assert "core.fsmonitor" in record.output["protected_writes"][0]["what"]
    assert "CLEVERAGENTS_ALLOW_PROTECTED_WRITES=1" in record.output["stderr"]
    assert "fsmonitor" not in (folder / ".git" / "config").read_text()
    # Still a repository (only the code-running key went), and git status runs nothing.
    status = host_git(folder, "status", "--short")
    assert status.returncode == 0, status.stderr
    assert "main.py" in status.stdout
    assert not marker.exists()


def test_git_init_and_commit_in_a_fresh_folder_still_work_and_ask_nothing(folder: Path) -> None:
    command = (
        f"git init -q fresh && cd fresh && echo a > a && git add a && git {GIT_USER} commit "
        "-q -m one && git remote add origin ../elsewhere && git config user.name me && "
        "git config branch.main.remote origin && git log --oneline | wc -l"
    )
    [record], _ = run_commands(folder, command)

    assert record.success and record.output["stdout"].strip() == "1", record.output
    assert "protected_writes" not in record.output  # harmless keys only
    assert host_git(folder / "fresh", "log", "--oneline").stdout.count("\n") == 1
    config = (folder / "fresh" / ".git" / "config").read_text()
    assert "elsewhere" in config and "name = me" in config


def test_a_nested_new_repository_with_a_hook_loses_the_hook(folder: Path, tmp_path: Path) -> None:
    marker = tmp_path / "hook-ran"
    command = (
        "mkdir -p deep/inside && cd deep/inside && git init -q && "
        f"printf '#!/bin/sh\\ntouch {marker}\\n' > .git/hooks/pre-commit && "
        "chmod +x .git/hooks/pre-commit && git config alias.st status"
    )
    [record], _ = run_commands(folder, command)

    assert outcomes(record) == {
        "deep/inside/.git/config": "undone",
        "deep/inside/.git/hooks/pre-commit": "undone",
    }
    nested = folder / "deep" / "inside"
    assert not (nested / ".git" / "hooks" / "pre-commit").exists()
    assert "alias" not in (nested / ".git" / "config").read_text()
    (nested / "x").write_text("x\n")
    host_git(nested, "add", "x")
    committed = host_git(nested, "commit", "-q", "-m", "x")
    assert committed.returncode == 0, committed.stderr
    assert not marker.exists()


def test_a_git_file_pointing_to_a_crafted_git_folder_is_removed(
    folder: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "pointer-ran"
    command = (
        "git init -q --bare crafted && "
        f"git --git-dir=crafted config core.fsmonitor 'touch {marker}' && "
        "git --git-dir=crafted config core.bare false && "
        "mkdir work && printf 'gitdir: ../crafted\\n' > work/.git"
    )
    [record], _ = run_commands(folder, command)

    assert outcomes(record) == {"crafted/config": "undone", "work/.git": "undone"}
    assert not (folder / "work" / ".git").exists()
    assert "fsmonitor" not in (folder / "crafted" / "config").read_text()
    host_git(folder / "work", "status")
    host_git(folder / "crafted", "status")
    assert not marker.exists()


def test_with_the_opt_in_they_are_kept_and_listed(folder: Path, tmp_path: Path) -> None:
    marker = tmp_path / "kept"
    [record], asked = run_commands(
        folder, attack(marker), policy=CommandPolicy(allow_protected_writes=True)
    )

    assert asked == []
    assert outcomes(record) == {".git/config": "kept"}
    assert "kept, allowed" in record.output["stderr"]
    assert "fsmonitor" in (folder / ".git" / "config").read_text()


def test_an_approver_is_asked_after_the_command_yes_keeps_no_undoes(
    folder: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "asked"
    [kept, undone], asked = run_commands(
        folder,
        f"git init -q a && git -C a config core.fsmonitor 'touch {marker}'",
        # Nested, so not under the read-only mounts the sandbox root's repository gets.
        f"git -C a config core.sshCommand 'touch {marker}'",
        answers=["allow", "deny"],
    )

    # full-auto runs the command itself unasked; each protected write is asked about after.
    assert [request.protected for request in asked] == [True, True]
    assert "core.fsmonitor" in (asked[0].note or "")
    assert "core.sshcommand" in (asked[1].note or "")
    assert outcomes(kept) == {"a/.git/config": "approved"}
    assert outcomes(undone) == {"a/.git/config": "undone"}
    config = (folder / "a" / ".git" / "config").read_text()
    # The no put the config back byte for byte: the approved fsmonitor is there, sshCommand not.
    assert "fsmonitor" in config and "sshCommand" not in config


def test_allow_for_run_does_not_cover_the_next_protected_write(folder: Path) -> None:
    records, asked = run_commands(
        folder,
        "git init -q a && git -C a config alias.x '!true'",
        "git init -q b && git -C b config alias.y '!true'",
        answers=["allow_for_run", "deny"],
        profile="full-auto",
    )

    assert len(asked) == 2
    assert [outcomes(record) for record in records] == [
        {"a/.git/config": "approved"},
        {"b/.git/config": "undone"},
    ]


def test_an_existing_nested_config_is_restored_byte_for_byte(folder: Path, tmp_path: Path) -> None:
    nested = folder / "lib"
    nested.mkdir()
    host_git(nested, "init", "-q")
    config = nested / ".git" / "config"
    original = config.read_bytes() + b"# the user's own comment\n[user]\n\tname = Someone\n"
    config.write_bytes(original)
    marker = tmp_path / "pager"
    command = f"cd lib && git remote add origin /x && git config core.pager 'touch {marker}'"

    [record], _ = run_commands(folder, command)

    assert outcomes(record) == {"lib/.git/config": "undone"}
    assert config.read_bytes() == original
    host_git(nested, "log")
    assert not marker.exists()


def test_a_hook_under_a_hooks_path_inside_the_sandbox_is_a_protected_write(folder: Path) -> None:
    nested = folder / "app"
    nested.mkdir()
    host_git(nested, "init", "-q")
    host_git(nested, "config", "core.hooksPath", ".husky")
    (nested / ".husky").mkdir()

    [record], _ = run_commands(folder, "printf '#!/bin/sh\\n' > app/.husky/pre-commit")

    assert outcomes(record) == {"app/.husky/pre-commit": "undone"}
    assert not (nested / ".husky" / "pre-commit").exists()


def test_a_config_swapped_for_a_link_is_replaced_not_written_through(
    folder: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("the user's file\n")
    nested = folder / "lib"
    nested.mkdir()
    host_git(nested, "init", "-q")
    before = (nested / ".git" / "config").read_bytes()

    [record], _ = run_commands(folder, f"ln -sf {outside} lib/.git/config")

    assert outcomes(record) == {"lib/.git/config": "undone"}
    assert outside.read_text() == "the user's file\n"
    assert not (nested / ".git" / "config").is_symlink()
    assert (nested / ".git" / "config").read_bytes() == before


def test_a_failed_command_is_undone_all_the_same(folder: Path) -> None:
    [failed], _ = run_commands(folder, "git init -q a && git -C a config core.editor ed; exit 3")

    assert failed.output["exit_code"] == 3
    assert outcomes(failed) == {"a/.git/config": "undone"}
    assert "editor" not in (folder / "a" / ".git" / "config").read_text()


def test_a_timed_out_command_says_what_was_undone(folder: Path) -> None:
    registry = ToolRegistry()
    register_builtin_tools(registry, command_policy=CommandPolicy())
    arguments = {"command": "git init -q t && git -C t config diff.external x; sleep 60"}
    runtime = ToolCallingRuntime(
        registry,
        ToolRunner(registry),
        calls_then_done(("run_command", {**arguments, "timeout_s": 2})),
    )
    result = runtime.run_tool_loop("go", ToolActorContext(sandbox_root=str(folder)))
    [record] = result.tool_call_history

    assert record.error_kind == "timeout"
    assert "t/.git/config" in (record.error or "") and "undid" in (record.error or "")
    assert "diff.external" not in (folder / "t" / ".git" / "config").read_text()


def test_unconfined_commands_are_guarded_too(folder: Path, tmp_path: Path) -> None:
    marker = tmp_path / "unconfined"
    policy = CommandPolicy(bubblewrap="none", allow_unconfined=True)
    [record], _ = run_commands(folder, attack(marker), policy=policy)

    assert record.output["confined"] is False
    assert outcomes(record) == {".git/config": "undone"}
    host_git(folder, "status")
    assert not marker.exists()


def test_a_later_scan_trusts_unchanged_folders_and_still_finds_a_new_repository(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The incremental scan: folders whose ctime did not move are not listed again, yet a
    repository made deep inside one that did move is found."""
    monkeypatch.setattr(repository_guard, "_RACY_NS", 0)
    (folder / "a" / "b" / "c").mkdir(parents=True)
    guard = RepositoryGuard(str(folder))
    before = guard.scan()
    time.sleep(0.05)  # past the filesystem clock's tick: the next change moves the ctime
    subprocess.run(["git", "init", "-q", str(folder / "a" / "b" / "c")], check=True)
    subprocess.run(
        ["git", "-C", str(folder / "a/b/c"), "config", "core.fsmonitor", "x"], check=True
    )

    changes, after = guard.changes_since(before)

    assert [change.path for change in changes] == ["a/b/c/.git/config"]
    assert "a/b/c/.git" in after.git_folders


def test_the_config_reader_and_the_safe_keys() -> None:
    text = (
        b"[core]\n\tbare = false\n\tfsmonitor = x\n[alias]\n\tst = status\n"
        b'[remote "o.r"]\n\turl = /x\n[include]\n\tpath = ../elsewhere\n'
    )
    entries = config_entries(text)
    assert entries == [
        ("core.bare", "false"),
        ("core.fsmonitor", "x"),
        ("alias.st", "status"),
        ("remote.o.r.url", "/x"),
        ("include.path", "../elsewhere"),
    ]
    unsafe = {key for key, _ in entries if not repository_guard._safe_key(key)}
    assert unsafe == {"core.fsmonitor", "alias.st", "include.path"}
    # What the undo writes for a new repository reads back as the same safe entries.
    safe = [entry for entry in entries if entry[0] not in unsafe]
    assert config_entries(config_text(safe)) == safe


def test_through_the_cli_under_full_auto(folder: Path, tmp_path: Path) -> None:
    marker = tmp_path / "cli-pwned"
    responses = [
        {"tool_calls": [{"name": "run_command", "arguments": {"command": attack(marker)}}]},
        {"text": "done"},
    ]
    [record] = cli_run(folder, tmp_path, {}, responses)["toolCallHistory"]

    assert record["output"]["protected_writes"] == [
        {
            "path": ".git/config",
            "what": "config made in a new repository: core.fsmonitor",
            "outcome": "undone",
        }
    ]
    host_git(folder, "status")
    assert not marker.exists()


def test_never_visible_folders_are_not_looked_into(folder: Path) -> None:
    """Credentials and our own checkpoint store (a git repository the daemon itself changes)
    are neither read nor ever undone by the guard."""
    store = folder / "data" / "checkpoints"
    store.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "--bare", str(store)], check=True)
    (folder / "lib").mkdir()
    subprocess.run(["git", "init", "-q", str(folder / "lib")], check=True)

    scan = RepositoryGuard(str(folder), hidden=[str(folder / "data")]).scan()

    assert scan.git_folders == {"lib/.git"}
    assert all(not path.startswith("data/") for path in scan.files)


def test_the_terminal_asks_after_the_command_with_no_always(folder: Path, tmp_path: Path) -> None:
    """The CLI on a terminal: "always this run" for run_command, then the protected write is
    asked about anyway, with no "always" on offer; the no undoes it."""
    plant = "git init -q n && git -C n config core.fsmonitor 'touch ran'"
    script = replay_script(
        tmp_path,
        [
            {"tool_calls": [{"name": "run_command", "arguments": {"command": plant}}]},
            {"tool_calls": [{"name": "run_command", "arguments": {"command": "echo again"}}]},
            {"text": "done"},
        ],
    )
    process, screen, prompts = run_under_pty(folder, script, [b"a\n", b"n\n"], b"allow? ")
    text = screen.decode(errors="replace")

    assert process.returncode == 0, text
    assert prompts == 2, text  # the second command was covered by "always"
    assert "asked each time: a protected write" in text and "core.fsmonitor" in text
    assert "fsmonitor" not in (folder / "n" / ".git" / "config").read_text()
