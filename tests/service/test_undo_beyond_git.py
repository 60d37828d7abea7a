"""Undo of what git does not see: ignored files, heavy folders, permission bits, empty folders.

Real files in a temp sandbox, real git, real bubblewrap for commands; the run goes through the
real runtime (the CLI with the replay provider in a subprocess, or the RunManager with a
scripted model) and the real checkpoint and undo code.
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

from cleveragents.service.changes import ChangedFile
from cleveragents.service.history import RunHistory
from cleveragents.service.runs import RunManager, RunOutcome, RunRequest
from cleveragents.service.settings import RunDefaults
from cleveragents.tool import LLMRequest, LLMResponse, ToolCallRequest, ToolRegistry
from cleveragents.tool.llm import FunctionLLMCaller
from cleveragents.workspace import bubblewrap_status, register_builtin_tools
from support.sinks import Sink

CLI = [sys.executable, "-m", "cleveragents"]
Entry = tuple[str, bytes, int]

pytestmark = [
    pytest.mark.skipif(shutil.which("git") is None, reason="needs git"),
    pytest.mark.usefixtures("fixed_umask"),  # modes are compared exactly
]


def folder_state(root: Path) -> dict[str, Entry]:
    """Every entry under `root`: files with bytes and mode, symlinks with their target,
    folders with their mode."""
    state: dict[str, Entry] = {}
    for folder, dirs, names in os.walk(root):
        for name in [*dirs, *names]:
            path = Path(folder, name)
            rel = path.relative_to(root).as_posix()
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                state[rel] = ("link", os.fsencode(os.readlink(path)), 0)
            elif stat.S_ISDIR(info.st_mode):
                state[rel] = ("dir", b"", stat.S_IMODE(info.st_mode))
            else:
                state[rel] = ("file", path.read_bytes(), stat.S_IMODE(info.st_mode))
    return state


def write(root: Path, rel: str, content: str | bytes, mode: int | None = None) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    if mode is not None:
        path.chmod(mode)


def project(root: Path) -> None:
    """A project whose ignored files matter: a secret, a log, a cache, a link, a dependency."""
    write(root, ".gitignore", ".env\n*.log\ncache/\nnode_modules/\n")
    write(root, "app.py", "print('app')\n")
    write(root, "tool.sh", "#!/bin/sh\necho tool\n", mode=0o755)
    write(root, ".env", "SECRET=orig\n", mode=0o600)
    write(root, "debug.log", "first line\n", mode=0o640)
    os.symlink("debug.log", root / "latest.log")
    write(root, "cache/blob.bin", bytes(range(256)) * 8)
    write(root, "node_modules/dep/index.js", "module.exports = 1\n")


BWRAP = bubblewrap_status()
needs_bubblewrap = pytest.mark.skipif(
    not BWRAP.available, reason=f"commands need bubblewrap: {BWRAP.reason}"
)


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "CLEVERAGENTS_PROVIDER": "",
        "XDG_DATA_HOME": str(home / "data"),
        "COLUMNS": "200",
    }
    return subprocess.run(
        [*CLI, *args, "--history", str(home / "h.sqlite3")],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        stdin=subprocess.DEVNULL,
        check=False,
    )


@needs_bubblewrap
def test_runs_restore_puts_back_ignored_files_modes_links_and_removes_made_folders(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "workspace"
    project(workspace)
    before = folder_state(workspace)
    command = (
        "rm debug.log latest.log && rm -r cache && mkdir -p made/empty/deep && chmod 600 app.py"
    )
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            {
                "responses": [
                    {
                        "tool_calls": [
                            {
                                "name": "write_file",
                                "arguments": {"path": ".env", "content": "SECRET=clobbered\n"},
                            }
                        ]
                    },
                    {"tool_calls": [{"name": "run_command", "arguments": {"command": command}}]},
                    {
                        "tool_calls": [
                            {
                                "name": "write_file",
                                "arguments": {"path": "new/nested/dir/f.txt", "content": "new"},
                            },
                            {
                                "name": "edit_file",
                                "arguments": {
                                    "path": "node_modules/dep/index.js",
                                    "old_text": "1",
                                    "new_text": "2",
                                },
                            },
                        ]
                    },
                    {"text": "Done."},
                ]
            }
        )
    )
    done = cli(
        tmp_path,
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
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert all(call["success"] for call in result["toolCallHistory"]), result
    # Each checkpoint is shown as a step of its own (files and milliseconds).
    assert "checkpoint before iteration 1: 7 files, " in done.stderr, done.stderr
    assert (workspace / ".env").read_text() == "SECRET=clobbered\n"
    assert (workspace / "made/empty/deep").is_dir()
    # The changed-files list names each change, those git does not see marked.
    by_path = {c["path"]: c for c in result["changedFiles"]}
    assert by_path[".env"] == {"path": ".env", "change": "modified", "ignored": True}
    assert by_path["debug.log"] == {"path": "debug.log", "change": "deleted", "ignored": True}
    assert by_path["latest.log"] == {"path": "latest.log", "change": "deleted", "ignored": True}
    assert by_path["cache/blob.bin"]["change"] == "deleted"
    assert by_path["app.py"] == {"path": "app.py", "change": "modified", "ignored": False}
    assert by_path["new/nested/dir/f.txt"] == {
        "path": "new/nested/dir/f.txt",
        "change": "added",
        "ignored": False,
    }
    assert by_path["node_modules/dep/index.js"] == {
        "path": "node_modules/dep/index.js",
        "change": "modified",
        "ignored": True,
    }
    assert {p for p in by_path if p.startswith("made")} == {
        "made/",
        "made/empty/",
        "made/empty/deep/",
    }

    restored = cli(tmp_path, "runs", "restore", str(result["runId"]), "--yes")
    assert restored.returncode == 0, restored.stderr
    # Every byte, mode bit and link is back; the folders the run made are gone.
    assert folder_state(workspace) == before


def script(*steps: list[ToolCallRequest]) -> Any:
    def complete(request: LLMRequest) -> LLMResponse:
        if request.iteration <= len(steps):
            return LLMResponse(text="step", tool_calls=steps[request.iteration - 1])
        return LLMResponse(text="Done.")

    return lambda provider, model, **options: FunctionLLMCaller(complete)


def call(call_id: str, tool: str, **arguments: Any) -> ToolCallRequest:
    return ToolCallRequest(call_id, tool, arguments)


async def test_files_a_file_tool_changes_in_a_skipped_folder_are_kept_for_every_step(
    tmp_path: Path,
) -> None:
    """node_modules is never copied by a snapshot, yet a file tool's change there is undone,
    from any step; a file the run made there is removed."""
    sandbox = tmp_path / "sandbox"
    project(sandbox)
    before = folder_state(sandbox)
    registry = ToolRegistry()
    register_builtin_tools(registry)
    steps = script(
        [call("w1", "write_file", path="app.py", content="print('one')\n")],
        [call("w2", "write_file", path="notes.md", content="two\n")],
        [
            call("w3", "write_file", path="node_modules/dep/index.js", content="changed\n"),
            call("w4", "write_file", path="node_modules/dep/made.js", content="made\n"),
        ],
    )
    with RunHistory(tmp_path / "h.sqlite3") as history:
        manager = RunManager(registry, RunDefaults(), history, llm_factory=steps)
        request = RunRequest(
            prompt="go", sandbox_root=str(sandbox), run_id="r", automation_profile="full-auto"
        )
        outcome = await manager.run(request, Sink())
        assert isinstance(outcome, RunOutcome), outcome
        assert set(outcome.changed_files) == {
            ChangedFile("app.py", "modified"),
            ChangedFile("notes.md", "added"),
            ChangedFile("node_modules/dep/index.js", "modified", ignored=True),
            ChangedFile("node_modules/dep/made.js", "added", ignored=True),
        }
        # Before step 2: step 1's change stays, the dependency is back as it was.
        partial = await manager.restore("r", 2)
        assert (sandbox / "app.py").read_text() == "print('one')\n"
        assert (sandbox / "node_modules/dep/index.js").read_text() == "module.exports = 1\n"
        assert not (sandbox / "node_modules/dep/made.js").exists()
        assert partial.restore_id is not None
        await manager.restore(partial.restore_id)  # undo that restore: all of it is back
        assert (sandbox / "node_modules/dep/made.js").read_text() == "made\n"
        await manager.restore("r")
        assert folder_state(sandbox) == before
        await manager.aclose()  # its history writes are all done
        stored = history.get_run("r")
        assert stored is not None
        assert set(stored.changed_files or []) == set(outcome.changed_files)
