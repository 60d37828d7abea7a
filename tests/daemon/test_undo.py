"""Undo through the real daemon: checkpoints of real runs, `cleveragents/restore`, real git.

Each test runs replay-scripted runs whose tools (the built-in `write_file`, `edit_file` and
`run_command`) change real files, then restores through the protocol and compares the folder
with what it was, byte for byte and mode for mode (the project's own `.git` included).
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from support.daemon_support import (
    RawDaemon,
    call,
    check_against_schema,
    check_type,
    replay_options,
    write_script,
)

pytestmark = [
    pytest.mark.skipif(shutil.which("git") is None, reason="needs git"),
    pytest.mark.usefixtures("fixed_umask"),  # modes are compared exactly
]

Entry = tuple[str, bytes, int]
RUN_ACTIVE = -32002


def tree(root: Path) -> dict[str, Entry]:
    """Every file, folder and symlink under `root` (any `.git` included): content and mode."""
    entries: dict[str, Entry] = {}
    for folder, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            path = Path(folder, name)
            info = path.lstat()
            rel = path.relative_to(root).as_posix()
            if stat.S_ISLNK(info.st_mode):
                entries[rel] = ("link", os.readlink(path).encode(), 0)
            elif stat.S_ISDIR(info.st_mode):
                entries[rel] = ("dir", b"", stat.S_IMODE(info.st_mode))
            else:
                entries[rel] = ("file", path.read_bytes(), stat.S_IMODE(info.st_mode))
    return entries


def make_project(root: Path) -> None:
    """Text, binary, executable and ignored files, a nested folder and a symlink."""
    (root / "edit.txt").write_text("first line\nold line\nlast line\n")
    (root / "keep.txt").write_text("kept\n")
    (root / "blob.bin").write_bytes(bytes(range(256)) * 4)
    tool = root / "tool.sh"
    tool.write_text("#!/bin/sh\necho tool\n")
    tool.chmod(0o755)
    (root / "doomed" / "deep").mkdir(parents=True)
    (root / "doomed" / "old.txt").write_text("old\n")
    (root / "doomed" / "deep" / "older.txt").write_text("older\n")
    (root / ".gitignore").write_text("*.log\n")
    (root / "build.log").write_text("an ignored file the run leaves alone\n")
    (root / "link.txt").symlink_to("keep.txt")


def undo_script(tmp_path: Path) -> str:
    command = (
        "rm -r doomed && mkdir -p made && printf '\\000\\001\\002' > made/blob.bin && "
        "chmod 755 made/blob.bin && chmod 644 tool.sh && mv keep.txt moved.txt && "
        "ln -sfn moved.txt link.txt && printf 'changed' > blob.bin"
    )
    return write_script(
        tmp_path / "undo.json",
        {
            "text": "Writing and editing.",
            "tool_calls": [
                call("write_file", path="new.txt", content="fresh\n"),
                call("edit_file", path="edit.txt", old_text="old line", new_text="new line"),
            ],
        },
        {"text": "Reorganising.", "tool_calls": [call("run_command", command=command)]},
        {"text": "Done."},
    )


def changes(items: list[dict[str, Any]]) -> set[tuple[str, str]]:
    return {(item["path"], item["change"]) for item in items}


async def result_of(raw: RawDaemon, method: str, params: dict[str, Any]) -> Any:
    answer = await raw.request(method, params)
    assert "result" in answer, answer
    check_against_schema(method, answer["result"], "result")
    return answer["result"]


async def error_of(raw: RawDaemon, method: str, params: dict[str, Any]) -> dict[str, Any]:
    answer = await raw.request(method, params)
    assert "error" in answer, answer
    return dict(answer["error"])


async def test_a_run_is_undone_byte_for_byte_and_restores_are_in_the_history(
    raw: RawDaemon, sandbox: Path, tmp_path: Path
) -> None:
    make_project(sandbox)
    original = tree(sandbox)
    await raw.initialize(
        replay_options(undo_script(tmp_path), builtinTools=True, automationProfile="full-auto")
    )
    run = await result_of(
        raw, "cleveragents/run", {"prompt": "tidy up", "sandboxRoot": str(sandbox), "runId": "r1"}
    )
    assert [r["success"] for r in run["toolCallHistory"]] == [True, True, True], run
    assert run["checkpointWarning"] is None
    # Each checkpoint is a step of its own on the wire: 8 files in git's view, 1 ignored.
    snapshots = [m["params"] for m in raw.received if m.get("method") == "cleveragents/snapshot"]
    for note in snapshots:
        check_against_schema("cleveragents/snapshot", note)
    assert [(n["iteration"], n["error"]) for n in snapshots] == [(1, None), (2, None)]
    assert snapshots[0]["files"] == 9
    made = {
        ("new.txt", "added"),
        ("edit.txt", "modified"),
        ("doomed/old.txt", "deleted"),
        ("doomed/deep/older.txt", "deleted"),
        ("made/blob.bin", "added"),
        ("tool.sh", "modified"),
        ("keep.txt", "deleted"),
        ("moved.txt", "added"),
        ("link.txt", "modified"),
        ("blob.bin", "modified"),
    }
    assert changes(run["changedFiles"]) == made
    after_run = tree(sandbox)
    # Iteration 2 did not touch what iteration 1 wrote: the folder between the two.
    after_first = {**original, "new.txt": after_run["new.txt"], "edit.txt": after_run["edit.txt"]}
    assert after_first["edit.txt"][1] == b"first line\nnew line\nlast line\n"

    detail = await result_of(raw, "cleveragents/getRun", {"runId": "r1"})
    assert [c["iteration"] for c in detail["checkpoints"]] == [1, 2]
    assert changes(detail["changedFiles"]) == made and detail["kind"] == "run"

    dry = await result_of(raw, "cleveragents/restore", {"runId": "r1", "dryRun": True})
    assert dry["restoreId"] is None and dry["dryRun"] is True
    opposite = {"added": "deleted", "deleted": "added", "modified": "modified"}
    assert changes(dry["changedFiles"]) == {(path, opposite[kind]) for path, kind in made}
    assert tree(sandbox) == after_run  # a dry run changes nothing

    second = await result_of(raw, "cleveragents/restore", {"runId": "r1", "iteration": 2})
    assert tree(sandbox) == after_first  # iteration 1's changes kept, iteration 2's undone
    assert ("new.txt", "deleted") not in changes(second["changedFiles"])

    whole = await result_of(raw, "cleveragents/restore", {"runId": "r1"})
    assert tree(sandbox) == original  # byte for byte, modes, symlink, ignored file untouched
    assert changes(whole["changedFiles"]) == {("new.txt", "deleted"), ("edit.txt", "modified")}
    assert whole["sandboxRoot"] == str(sandbox.resolve()) and whole["kept"] == []

    listed = await result_of(raw, "cleveragents/runs", {})
    assert [(r["runId"], r["kind"], r["restoredIteration"]) for r in listed["runs"]] == [
        (whole["restoreId"], "restore", None),
        (second["restoreId"], "restore", 2),
        ("r1", "run", None),
    ]
    assert {r["restoredRunId"] for r in listed["runs"][:2]} == {"r1"}
    assert all(r["status"] == "finished" for r in listed["runs"])

    # A restore is undone like a run: the folder goes back to just before it.
    undone = await result_of(raw, "cleveragents/restore", {"runId": whole["restoreId"]})
    assert tree(sandbox) == after_first
    stored = await result_of(raw, "cleveragents/getRun", {"runId": whole["restoreId"]})
    assert stored["kind"] == "restore" and [c["iteration"] for c in stored["checkpoints"]] == [None]
    assert changes(stored["changedFiles"]) == changes(whole["changedFiles"])
    redone = await result_of(raw, "cleveragents/getRun", {"runId": undone["restoreId"]})
    assert redone["restoredRunId"] == whole["restoreId"]

    bad = await error_of(raw, "cleveragents/restore", {"runId": "r1", "iteration": 9})
    assert bad["code"] == -32602 and "params.iteration" in bad["message"]
    bad = await error_of(raw, "cleveragents/restore", {"runId": whole["restoreId"], "iteration": 1})
    assert bad["code"] == -32602 and "restore" in bad["message"]
    missing = await error_of(raw, "cleveragents/restore", {"runId": "nope"})
    assert missing["code"] == -32011
    typed = await error_of(raw, "cleveragents/restore", {"runId": "r1", "dryRun": "yes"})
    assert typed["code"] == -32602 and "params.dryRun" in typed["message"]


def git(root: Path, *args: str) -> str:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(root.parent),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    done = subprocess.run(
        ["git", *args], cwd=root, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout


async def test_a_project_with_its_own_git_keeps_index_head_and_stash(
    raw: RawDaemon, sandbox: Path, tmp_path: Path
) -> None:
    git(sandbox, "init", "-q")
    (sandbox / "tracked.txt").write_text("committed\n")
    (sandbox / "edit.txt").write_text("old line\n")
    git(sandbox, "add", ".")
    git(sandbox, "commit", "-qm", "first")
    (sandbox / "tracked.txt").write_text("stashed change\n")
    git(sandbox, "stash", "-q")
    (sandbox / "staged.txt").write_text("staged\n")
    git(sandbox, "add", "staged.txt")
    (sandbox / "tracked.txt").write_text("an unstaged change\n")
    status = git(sandbox, "status", "--porcelain")
    original = tree(sandbox)  # the .git folder too: index, HEAD, refs, the stash
    script = write_script(
        tmp_path / "git.json",
        {
            "text": "Editing.",
            "tool_calls": [
                call("write_file", path="tracked.txt", content="overwritten\n"),
                call("edit_file", path="edit.txt", old_text="old line", new_text="new line"),
            ],
        },
        {
            "text": "Shuffling.",
            "tool_calls": [call("run_command", command="rm staged.txt && echo made > made.txt")],
        },
        {"text": "Done."},
    )
    await raw.initialize(replay_options(script, builtinTools=True, automationProfile="full-auto"))
    run = await result_of(raw, "cleveragents/run", {"prompt": "go", "sandboxRoot": str(sandbox)})
    assert changes(run["changedFiles"]) == {
        ("tracked.txt", "modified"),
        ("edit.txt", "modified"),
        ("staged.txt", "deleted"),
        ("made.txt", "added"),
    }
    await result_of(raw, "cleveragents/restore", {"runId": run["runId"]})
    assert tree(sandbox) == original
    assert git(sandbox, "status", "--porcelain") == status
    assert git(sandbox, "diff", "--cached", "--name-only") == "staged.txt\n"
    assert len(git(sandbox, "stash", "list").splitlines()) == 1
    assert git(sandbox, "stash", "show", "-p").count("+stashed change") == 1


async def test_without_git_runs_go_on_and_say_they_cannot_be_undone(
    sandbox: Path, tmp_path: Path
) -> None:
    no_git = tmp_path / "bin"
    no_git.mkdir()
    daemon = await RawDaemon.start(tmp_path, env={"PATH": str(no_git)})
    try:
        script = write_script(
            tmp_path / "s.json",
            {"tool_calls": [call("write_file", path="a.txt", content="a")]},
            {"text": "Done."},
        )
        await daemon.initialize(
            replay_options(script, builtinTools=True, automationProfile="full-auto")
        )
        params = {"prompt": "go", "sandboxRoot": str(sandbox)}
        await result_of(daemon, "cleveragents/run", params)
        run = await result_of(daemon, "cleveragents/run", params)
        assert run["stopReason"] == "final_answer" and (sandbox / "a.txt").read_text() == "a"
        assert run["toolCallHistory"][0]["success"] is True
        assert "git was not found" in run["checkpointWarning"]
        assert run["changedFiles"] == []
        detail = await result_of(daemon, "cleveragents/getRun", {"runId": run["runId"]})
        assert detail["checkpointWarning"] == run["checkpointWarning"]
        refused = await error_of(daemon, "cleveragents/restore", {"runId": run["runId"]})
        assert refused["code"] == -32016 and "git was not found" in refused["message"]
        assert (sandbox / "a.txt").read_text() == "a"
    finally:
        daemon.kill()
        await daemon.process.wait()
    said = [line for line in daemon.stderr.decode().splitlines() if "git was not found" in line]
    assert len(said) == 1, said  # once for the daemon, however many runs


async def test_a_restore_while_a_run_is_active_in_the_folder_is_refused(
    raw: RawDaemon, sandbox: Path, tmp_path: Path
) -> None:
    first = write_script(
        tmp_path / "first.json",
        {"tool_calls": [call("write_file", path="a.txt", content="from the first run")]},
        {"text": "Done."},
    )
    second = write_script(
        tmp_path / "second.json",
        {"tool_calls": [call("write_note", name="b.txt", text="from the second run")]},
        {"tool_calls": [call("wait_for_file", name="go")]},
        {"text": "Done."},
    )
    await raw.initialize(replay_options(first, builtinTools=True, automationProfile="full-auto"))
    await result_of(
        raw, "cleveragents/run", {"prompt": "one", "sandboxRoot": str(sandbox), "runId": "one"}
    )
    start = len(raw.received)
    running = raw.send_request(
        "cleveragents/run",
        {"prompt": "two", "sandboxRoot": str(sandbox), "runId": "two", "replayScript": second},
    )
    await raw.wait_for(
        lambda m: (
            m.get("method") == "cleveragents/toolCallStarted"
            and m["params"]["toolName"] == "wait_for_file"
        ),
        start,
    )
    for run_id in ("one", "two"):
        refused = await error_of(raw, "cleveragents/restore", {"runId": run_id})
        assert refused["code"] == RUN_ACTIVE, refused
        assert "active" in refused["message"] and refused["data"]["activeRunIds"] == ["two"]
    # Another daemon finds the run in the shared history, and refuses too.
    other = await RawDaemon.start(tmp_path)
    try:
        await other.initialize(replay_options(first, builtinTools=True))
        refused = await error_of(other, "cleveragents/restore", {"runId": "one"})
        assert refused["code"] == RUN_ACTIVE and refused["data"]["activeRunIds"] == ["two"]
    finally:
        other.kill()
        await other.process.wait()
    assert (sandbox / "a.txt").read_text() == "from the first run"

    (sandbox / "go").write_text("")
    finished = await raw.response(running)
    assert changes(finished["result"]["changedFiles"]) == {("b.txt", "added"), ("go", "added")}
    undone = await result_of(raw, "cleveragents/restore", {"runId": "one"})
    assert changes(undone["changedFiles"]) == {
        ("a.txt", "deleted"),
        ("b.txt", "deleted"),
        ("go", "deleted"),
    }
    assert list(sandbox.iterdir()) == []


async def test_a_run_that_only_reads_changes_nothing_and_restores_nothing(
    raw: RawDaemon, sandbox: Path, tmp_path: Path
) -> None:
    (sandbox / "a.txt").write_text("a")
    script = write_script(
        tmp_path / "read.json",
        {"tool_calls": [call("read_file", path="a.txt")]},
        {"text": "Read it."},
    )
    await raw.initialize(replay_options(script, builtinTools=True, automationProfile="full-auto"))
    run = await result_of(raw, "cleveragents/run", {"prompt": "read", "sandboxRoot": str(sandbox)})
    assert run["changedFiles"] == [] and run["checkpointWarning"] is None
    detail = await result_of(raw, "cleveragents/getRun", {"runId": run["runId"]})
    assert detail["checkpoints"] == [] and detail["changedFiles"] == []
    nothing = await result_of(raw, "cleveragents/restore", {"runId": run["runId"]})
    assert nothing == {
        "restoreId": None,
        "sandboxRoot": str(sandbox.resolve()),
        "changedFiles": [],
        "kept": [],
        "dryRun": False,
    }
    listed = await result_of(raw, "cleveragents/runs", {})
    assert [r["kind"] for r in listed["runs"]] == ["run"]  # nothing restored, nothing recorded
    check_type("RunSummary", listed["runs"][0])
