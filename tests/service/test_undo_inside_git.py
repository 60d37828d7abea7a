"""Undo of what the file tools write inside a `.git` with the protected-writes opt-in.

git cannot index such paths, so the checkpoint store keeps them in a side store: the run's
changed files name them (marked `ignored`: git does not see them) and `runs restore` puts them
back, byte for byte and mode, removing what the run created. Real files in temp sandboxes,
real git; the runs go through the real CLI with the replay provider under full-auto, and the
store's own calls for what the CLI does not reach (bounds, prune, links).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cleveragents.service.checkpoints import CheckpointStore

CLI = [sys.executable, "-m", "cleveragents"]
HOOK = "#!/bin/sh\ntouch /tmp/cleveragents-planted-hook\n"
FSMONITOR = "[core]\n\tfsmonitor = touch /tmp/cleveragents-planted-fsmonitor\n"

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "main.py").write_text("print('hi')\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / ".git" / "config").chmod(0o640)  # a mode git would not give back by itself
    return root


def cli(home: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args, "--history", str(home / "h.sqlite3")],
        capture_output=True,
        text=True,
        timeout=180,
        env={
            **os.environ,
            "CLEVERAGENTS_PROVIDER": "",
            "XDG_DATA_HOME": str(home / "data"),
            "COLUMNS": "200",
            **env,
        },
        stdin=subprocess.DEVNULL,
        check=False,
    )


def plant(repo: Path, home: Path, env: dict[str, str]) -> dict[str, Any]:
    """A run that writes a new hook and turns on `core.fsmonitor`; the run as `--json`."""
    script = home / "script.json"
    calls = [
        ("write_file", {"path": ".git/hooks/pre-commit", "content": HOOK}),
        ("edit_file", {"path": ".git/config", "old_text": "[core]\n", "new_text": FSMONITOR}),
        ("write_file", {"path": "notes.txt", "content": "a note\n"}),
    ]
    responses: list[dict[str, Any]] = [
        {"tool_calls": [{"name": name, "arguments": arguments}]} for name, arguments in calls
    ]
    script.write_text(json.dumps({"responses": [*responses, {"text": "done"}]}))
    done = cli(
        home, env, "run", "plant", "--sandbox", str(repo), "--provider", "replay",
        "--script", str(script), "--profile", "full-auto", "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def file_state(path: Path) -> tuple[bytes, int] | None:
    if not path.exists():
        return None
    return path.read_bytes(), stat.S_IMODE(path.lstat().st_mode)


def test_runs_restore_undoes_hook_and_config_written_with_the_opt_in(
    repo: Path, tmp_path: Path
) -> None:
    hook, config = repo / ".git" / "hooks" / "pre-commit", repo / ".git" / "config"
    config_before = file_state(config)
    result = plant(repo, tmp_path, {"CLEVERAGENTS_ALLOW_PROTECTED_WRITES": "1"})
    assert [call["success"] for call in result["toolCallHistory"]] == [True, True, True]
    assert hook.read_text() == HOOK and "fsmonitor" in config.read_text()
    planted = {hook: file_state(hook), config: file_state(config)}

    by_path = {c["path"]: c for c in result["changedFiles"]}
    assert by_path[".git/hooks/pre-commit"] == {
        "path": ".git/hooks/pre-commit",
        "change": "added",
        "ignored": True,
    }
    assert by_path[".git/config"] == {"path": ".git/config", "change": "modified", "ignored": True}
    assert by_path["notes.txt"]["change"] == "added"

    restored = cli(tmp_path, {}, "runs", "restore", str(result["runId"]), "--yes", "--json")
    assert restored.returncode == 0, restored.stderr
    listed = {c["path"]: c["change"] for c in json.loads(restored.stdout)["changedFiles"]}
    assert listed[".git/hooks/pre-commit"] == "deleted"
    assert listed[".git/config"] == "modified"
    assert not hook.exists()
    assert file_state(config) == config_before
    assert not (repo / "notes.txt").exists()

    # A restore of the restore brings the run's writes back, the same way.
    undo_id = json.loads(restored.stdout)["restoreId"]
    again = cli(tmp_path, {}, "runs", "restore", str(undo_id), "--yes", "--json")
    assert again.returncode == 0, again.stderr
    relisted = {c["path"]: c["change"] for c in json.loads(again.stdout)["changedFiles"]}
    assert relisted[".git/hooks/pre-commit"] == "added"
    assert relisted[".git/config"] == "modified"
    assert {path: file_state(path) for path in planted} == planted


def test_without_the_opt_in_nothing_inside_git_changes_or_is_listed(
    repo: Path, tmp_path: Path
) -> None:
    config_before = file_state(repo / ".git" / "config")
    result = plant(repo, tmp_path, {})
    assert [call["success"] for call in result["toolCallHistory"]] == [False, False, True]
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()
    assert file_state(repo / ".git" / "config") == config_before
    assert [c["path"] for c in result["changedFiles"]] == ["notes.txt"]


def test_the_side_store_bounds_links_and_prune(repo: Path, tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "store", max_file_bytes=4096)
    store.snapshot(repo, "run", 1)
    big = repo / ".git" / "big"
    big.write_bytes(b"x" * 4097)
    problems = store.pin(repo, "run", [".git/big", ".git/info/exclude", ".git/new"])
    assert len(problems) == 1 and ".git/big" in problems[0] and "larger" in problems[0]
    exclude = repo / ".git" / "info" / "exclude"
    exclude_before = file_state(exclude)
    exclude.write_text("changed\n")
    # A link planted where the restore writes is replaced, never followed.
    outside = tmp_path / "outside.txt"
    outside.write_text("outside\n")
    (repo / ".git" / "new").symlink_to(outside)
    store.finish_run(repo, "run")
    changed = {c.path: c.change for c in store.changed_files("run")}
    assert changed == {".git/info/exclude": "modified", ".git/new": "added"}
    first = store.checkpoint_before("run")
    assert first is not None
    store.restore(repo, first, restore_id="undo")
    assert file_state(exclude) == exclude_before
    assert not os.path.lexists(repo / ".git" / "new")
    assert outside.read_text() == "outside\n"
    kept = {p.name for p in store.root.glob("*/git-folder-files/*")}
    assert first.id in kept
    # The restore's own checkpoint keeps what it overwrote inside the `.git`.
    undo_ids = {cp.id for cp in store.checkpoints("undo")}
    assert kept & undo_ids
    store.prune(keep_run_ids={"undo"})
    assert {p.name for p in store.root.glob("*/git-folder-files/*")} == kept & undo_ids


def test_a_restore_never_writes_through_a_folder_made_a_link(repo: Path, tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "store")
    store.snapshot(repo, "run", 1)
    store.pin(repo, "run", [".git/hooks/pre-commit", ".git/info/exclude"])
    exclude = repo / ".git" / "info" / "exclude"
    exclude_before = file_state(exclude)
    exclude.write_text("changed\n")
    (repo / ".git" / "hooks" / "pre-commit").write_text(HOOK)
    # The hooks folder becomes a link to a folder outside holding a pre-commit of its own.
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "pre-commit").write_text("theirs\n")
    shutil.rmtree(repo / ".git" / "hooks")
    (repo / ".git" / "hooks").symlink_to(outside)
    first = store.checkpoint_before("run")
    assert first is not None
    result = store.restore(repo, first, restore_id="undo")
    assert file_state(exclude) == exclude_before
    assert (outside / "pre-commit").read_text() == "theirs\n"
    listed = {c.path for c in result.changed_files}
    assert ".git/info/exclude" in listed and ".git/hooks/pre-commit" not in listed


def test_a_restore_to_before_an_iteration_puts_back_only_what_came_after(
    repo: Path, tmp_path: Path
) -> None:
    store = CheckpointStore(tmp_path / "store")
    config, hook = repo / ".git" / "config", repo / ".git" / "hooks" / "pre-commit"
    store.snapshot(repo, "run", 1)
    store.pin(repo, "run", [".git/config"])
    config.write_text(config.read_text() + FSMONITOR)
    after_first = file_state(config)
    store.snapshot(repo, "run", 2)
    store.pin(repo, "run", [".git/hooks/pre-commit"])
    hook.write_text(HOOK)
    store.finish_run(repo, "run")
    second = store.checkpoint_before("run", 2)
    assert second is not None
    result = store.restore(repo, second, restore_id="undo")
    assert {c.path: c.change for c in result.changed_files} == {".git/hooks/pre-commit": "deleted"}
    assert not hook.exists()
    assert file_state(config) == after_first
