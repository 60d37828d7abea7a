"""The checkpoint bench runs end to end in quick mode and prints its table (no timing asserts).

The bench checks what it measures (an unchanged folder gives the same tree, the diff and the
restore see every change made), so a zero exit status means the figures are of work done.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench" / "checkpoint_bench.py"
STEPS = (
    "first snapshot",
    "no-change snapshot",
    "incremental snapshot",
    "diff to now",
    "restore",
    "prune (pack)",
)

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def run_bench(*args: str) -> str:
    completed = subprocess.run(
        [sys.executable, str(BENCH), "--quick", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr
    return completed.stdout


def test_table_has_every_step_and_a_verdict_per_target() -> None:
    output = run_bench()
    assert output.startswith("Checkpoints: 500 files, 1 round(s)")
    for step in STEPS:
        assert any(line.startswith(step) for line in output.splitlines()), step
    verdicts = [line for line in output.splitlines() if line.startswith(("PASS ", "MISS "))]
    assert len(verdicts) == 4
    assert "store after a prune" in output


def test_json_holds_every_step_and_the_disk_figures() -> None:
    result: dict[str, Any] = json.loads(run_bench("--json"))
    assert [row["step"] for row in result["rows"]] == list(STEPS)
    for row in result["rows"]:
        assert 0 < row["min_ms"] <= row["median_ms"] <= row["max_ms"]
    assert result["workspace_bytes"] > 0 and result["store_bytes_packed"] > 0
    for verdict in result["verdicts"]:
        assert verdict["met"] == (verdict["value"] <= verdict["limit"])
