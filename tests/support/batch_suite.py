"""A 20-task suite over replay and offline providers, built in a temp folder for the batch tests.

What each task must come to (status, stop reason) is in EXPECTED: passing and failing checks,
expected files, a task that times out, one that stops at max_iterations.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml


def _script(folder: Path, name: str, responses: list[dict[str, Any]]) -> str:
    path = folder / name
    path.write_text(json.dumps({"model": "claude-haiku-4-5", "responses": responses}))
    return name


def _write(path: str, content: str) -> dict[str, Any]:
    return {"name": "write_file", "arguments": {"path": path, "content": content}}


USAGE = {"input_tokens": 1000, "output_tokens": 50}

# task id -> (status, stop_reason)
EXPECTED: dict[str, tuple[str, str]] = {}


def build_suite(folder: Path, *, slow_delay_ms: int = 4000) -> Path:
    """Write the suite, its workspace and its replay scripts under `folder`; the suite path."""
    project = folder / "project"
    project.mkdir()
    (project / "README.md").write_text("# a project\n")
    (project / "app.py").write_text("print('hi')\n")
    scripts = folder / "scripts"
    scripts.mkdir()
    write = _script(
        scripts,
        "write.json",
        [
            {"text": "Writing.", "tool_calls": [_write("out.txt", "done\n")], "usage": USAGE},
            {"text": "Wrote out.txt.", "usage": USAGE},
        ],
    )
    two_calls = _script(
        scripts,
        "two_calls.json",
        [
            {
                "text": "Looking.",
                "tool_calls": [
                    {"name": "read_file", "arguments": {"path": "app.py"}},
                    {"name": "list_dir", "arguments": {"path": "."}},
                ],
                "usage": USAGE,
            },
            {"text": "It prints hi.", "usage": USAGE},
        ],
    )
    slow = _script(scripts, "slow.json", [{"text": "Thinking...", "delay_ms": slow_delay_ms}])
    looping = _script(
        scripts,
        "loop.json",
        [
            {"text": f"Step {i}.", "tool_calls": [_write(f"step{i}.txt", "x")], "usage": USAGE}
            for i in range(1, 6)
        ],
    )
    tasks: list[dict[str, Any]] = []

    def task(task_id: str, expected: tuple[str, str], **fields: Any) -> None:
        EXPECTED[task_id] = expected
        tasks.append({"id": task_id, "workspace": "project", "prompt": "Do the task.", **fields})

    for i in range(6):
        task(
            f"write-{i}",
            ("passed", "final_answer"),
            provider="replay",
            replay_script=f"scripts/{write}",
            check="grep -q done out.txt",
            expected_files=["out.txt"],
            tags=["write"],
        )
    for i in range(4):
        task(
            f"write-wrong-{i}",
            ("failed", "final_answer"),
            provider="replay",
            replay_script=f"scripts/{write}",
            check="grep -q finished out.txt",
        )
    for i in range(3):
        task(
            f"read-{i}",
            ("passed", "final_answer"),
            provider="replay",
            replay_script=f"scripts/{two_calls}",
            check="test -f app.py",
        )
    for i in range(3):
        task(
            f"offline-{i}",
            ("passed", "final_answer"),
            provider="offline",
            check="test -f README.md",
            profile="read-only",
        )
    task(
        "offline-missing",
        ("failed", "final_answer"),
        provider="offline",
        profile="read-only",
        expected_files=["never-written.txt"],
    )
    task(
        "missing-output",
        ("failed", "final_answer"),
        provider="replay",
        replay_script=f"scripts/{two_calls}",
        check="test -f out.txt",
    )
    task(
        "slow",
        ("timeout", "timeout"),
        provider="replay",
        replay_script=f"scripts/{slow}",
        timeout_s=1,
        check="true",
    )
    task(
        "looping",
        ("passed", "max_iterations"),
        provider="replay",
        replay_script=f"scripts/{looping}",
        max_iterations=2,
        check="test -f step2.txt",
    )
    assert len(tasks) == 20
    suite = folder / "suite.yaml"
    suite.write_text(yaml.safe_dump({"name": "twenty", "tasks": tasks}, sort_keys=False))
    return suite


def comparable(report: dict[str, Any]) -> dict[str, tuple[Any, ...]]:
    """What must agree between executors, task by task."""
    return {
        row["task_id"]: (
            row["status"],
            row["stop_reason"],
            row["iterations"],
            row["tool_calls"],
            row["input_tokens"],
            row["output_tokens"],
            (row["check"] or {}).get("exit_code"),
        )
        for row in report["tasks"]
    }
