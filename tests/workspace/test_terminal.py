"""run_command in an editor's terminal: the swapped tool, and the process the terminal runs
(output live, the result in a file)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cleveragents.tool.policy import unconfined_code
from cleveragents.tool.registry import ToolRegistry
from cleveragents.workspace import CommandPolicy, bubblewrap_status, register_builtin_tools
from cleveragents.workspace.terminal import (
    RUNNER_MODULE,
    TerminalError,
    runner_environment,
    with_terminal,
)
from cleveragents.workspace.terminal_runner import write_spec


def run_runner(
    root: Path, result: Path, *args: str
) -> tuple[subprocess.CompletedProcess[bytes], Any]:
    process = subprocess.run(
        [
            sys.executable,
            "-m",
            RUNNER_MODULE,
            "--sandbox-root",
            str(root),
            "--tag",
            "test-tag",
            "--result",
            str(result),
            *args,
        ],
        capture_output=True,
        env={**os.environ, **runner_environment()},
        timeout=120,
        check=False,
    )
    return process, json.loads(result.read_text())


def test_the_output_shows_live_and_the_result_is_run_commands(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "sub").mkdir(parents=True)
    process, outcome = run_runner(
        root,
        tmp_path / "result.json",
        "--cwd",
        "sub",
        "--timeout",
        "60",
        "--",
        "pwd; echo to-stderr >&2; exit 7",
    )
    assert process.returncode == 7
    shown = process.stdout.decode()
    assert shown.startswith(str(root / "sub")) and "to-stderr" in shown
    result = outcome["result"]
    assert (result["exit_code"], result["stderr"], result["cwd"]) == (7, "to-stderr\n", "sub")
    assert result["stdout"] == f"{root / 'sub'}\n"
    assert result["confined"] is bubblewrap_status().available


def test_a_timeout_and_a_folder_outside_are_errors_with_their_kind(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    process, outcome = run_runner(
        root, tmp_path / "timeout.json", "--timeout", "0.5", "--", "sleep 30"
    )
    assert process.returncode == 124
    assert outcome["kind"] == "timeout" and "timed out" in outcome["error"]

    process, outcome = run_runner(
        root, tmp_path / "outside.json", "--cwd", "..", "--timeout", "5", "--", "ls"
    )
    assert process.returncode == 1
    assert outcome["kind"] == "sandbox_violation"


def test_the_command_gets_the_agents_policy_and_variables_not_the_editors(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    policy = CommandPolicy(env_allow=("CA_TEST_PASSED",))
    spec = tmp_path / "spec.json"
    write_spec(str(spec), policy, {"PATH": os.environ["PATH"], "CA_TEST_PASSED": "from-agent"})
    os.environ["CA_TEST_EDITORS_OWN"] = "from-editor"
    try:
        _, outcome = run_runner(
            root,
            tmp_path / "result.json",
            "--spec",
            str(spec),
            "--timeout",
            "60",
            "--",
            'echo "$CA_TEST_PASSED/${CA_TEST_EDITORS_OWN:-unset}"',
        )
    finally:
        del os.environ["CA_TEST_EDITORS_OWN"]
    assert outcome["result"]["stdout"] == "from-agent/unset\n"


class UnusedEditor:
    """An editor (outside the project) that this test never gets to ask for anything."""

    async def start(self, command: str, args: list[str], cwd: str, env: dict[str, str]) -> str:
        raise AssertionError("not asked")

    async def wait_for_exit(self, terminal_id: str) -> None:
        raise AssertionError("not asked")

    async def output(self, terminal_id: str) -> str:
        raise AssertionError("not asked")

    async def kill(self, terminal_id: str) -> None:
        raise AssertionError("not asked")

    async def release(self, terminal_id: str) -> None:
        raise AssertionError("not asked")


async def test_the_terminal_run_command_keeps_its_spec_and_the_unconfined_question() -> None:
    registry = ToolRegistry()
    register_builtin_tools(registry, command_policy=CommandPolicy(bubblewrap="none"))
    swapped = with_terminal(registry, UnusedEditor())
    before, after = registry.get("run_command"), swapped.get("run_command")
    assert before is not None and after is not None and after is not before
    assert after.to_schema() == before.to_schema() and after.is_async
    assert swapped.get("read_file") is registry.get("read_file")
    # Unconfined here (bubblewrap switched off): the approval rules still hear of it.
    gap = await unconfined_code(after)
    assert gap is not None and gap == await unconfined_code(before)


class StuckEditor(UnusedEditor):
    """An editor whose terminal never ends and which cannot kill it any more."""

    def __init__(self) -> None:
        self.waiting = asyncio.Event()
        self.released = False

    async def start(self, command: str, args: list[str], cwd: str, env: dict[str, str]) -> str:
        return "t1"

    async def wait_for_exit(self, terminal_id: str) -> None:
        self.waiting.set()
        await asyncio.Event().wait()

    async def kill(self, terminal_id: str) -> None:
        raise TerminalError("the terminal is gone")

    async def release(self, terminal_id: str) -> None:
        self.released = True


async def test_a_cancel_stays_a_cancel_when_the_editor_cannot_kill(tmp_path: Path) -> None:
    registry = ToolRegistry()
    register_builtin_tools(registry)
    editor = StuckEditor()
    spec = with_terminal(registry, editor).get("run_command")
    assert spec is not None
    call = asyncio.ensure_future(spec.handler(command="true", sandbox_root=str(tmp_path)))
    await asyncio.wait_for(editor.waiting.wait(), 30)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert editor.released
