"""`cleveragents/runs` filters by batch: the runs of a `cleveragents batch`, over real stdio."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from cleveragents.cli import main
from support.daemon_support import RawDaemon, check_against_schema


def write_suite(folder: Path, name: str, tasks: int) -> Path:
    project = folder / "project"
    project.mkdir(exist_ok=True)
    suite = folder / f"{name}.yaml"
    suite.write_text(
        "tasks:\n"
        + "".join(
            f"  - id: t{i}\n    workspace: project\n    prompt: Look\n    provider: offline\n"
            "    profile: read-only\n    check: 'true'\n"
            for i in range(tasks)
        )
    )
    return suite


async def test_runs_of_one_batch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    history = tmp_path / "history.sqlite3"
    for name, count in (("first", 2), ("second", 3)):
        suite = str(write_suite(tmp_path, name, count))
        argv = ["batch", suite, "--history", str(history), "--json"]
        assert await asyncio.to_thread(main, argv) == 0
        report = json.loads(capsys.readouterr().out)
    daemon = await RawDaemon.start(tmp_path)
    try:
        await daemon.initialize({"provider": "offline"})
        answer = await daemon.request("cleveragents/runs", {"batchId": "second"})
        check_against_schema("cleveragents/runs", answer["result"], "result")
        runs = answer["result"]["runs"]
        assert sorted(r["batch"]["taskId"] for r in runs) == ["t0", "t1", "t2"]
        assert {r["batch"]["batchId"] for r in runs} == {"second"}
        assert {r["runId"] for r in runs} == {row["run_id"] for row in report["tasks"]}
        everything = (await daemon.request("cleveragents/runs", {}))["result"]["runs"]
        assert len(everything) == 5
        none = await daemon.request("cleveragents/runs", {"batchId": "third"})
        assert none["result"]["runs"] == []
        opened = await daemon.request("cleveragents/getRun", {"runId": runs[0]["runId"]})
        assert opened["result"]["batch"] == runs[0]["batch"]
    finally:
        daemon.kill()
        await daemon.process.wait()
