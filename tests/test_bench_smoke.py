"""The bench scripts run end to end in quick mode and print their tables (no timing asserts)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"

LOOP_VARIANTS = (
    "fake LLM alone",
    "floor, sync tool, direct call",
    "floor, sync tool, thread hop",
    "floor, async tool",
    "runtime, sync tool",
    "runtime, async tool",
    "runtime, typed async tool",
    "one JSON encode of 1 MiB",
    "runtime, 1 MiB results",
)


def run_bench(script: str, *args: str) -> str:
    completed = subprocess.run(
        [sys.executable, str(BENCH / script), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr
    return completed.stdout


def verdict_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith(("PASS ", "MISS ", "INFO "))]


def test_loop_overhead_prints_every_variant_and_a_verdict_per_target() -> None:
    output = run_bench("loop_overhead.py", "--quick")
    assert "median" in output and "p10-p90" in output
    for variant in LOOP_VARIANTS:
        for n in (4, 8):
            assert any(
                line.startswith(variant) and line[31:].split()[0] == str(n)
                for line in output.splitlines()
            ), f"no row for {variant} at N={n}"
    verdicts = verdict_lines(output)
    # Per N: three targets and two informational ratios; then growth for both runtime variants.
    assert len(verdicts) == 12, verdicts
    assert sum("1 MiB results vs one JSON encode" in line for line in verdicts) == 2
    assert sum("growth" in line for line in verdicts) == 2
    assert sum(line.startswith("INFO ") for line in verdicts) == 4
    costs = output.split("Argument check alone, per call")[1].splitlines()[1:]
    assert [line.split("  ")[1].split(",")[0] for line in costs] == ["plain tool"] + [
        "typed tool"
    ] * 2
    assert all(line.endswith(" us") for line in costs)


def test_loop_overhead_json_holds_one_summary_per_variant_and_size() -> None:
    result: dict[str, Any] = json.loads(run_bench("loop_overhead.py", "--quick", "--json"))
    rows = result["rows"]
    assert {(row["variant"], row["n"]) for row in rows} == {
        (variant, n) for variant in LOOP_VARIANTS for n in (4, 8)
    }
    for row in rows:
        assert row["reps"] == 3
        assert 0 < row["min_us"] <= row["median_us"] <= row["max_us"]
        assert row["min_us"] <= row["p10_us"] <= row["p90_us"] <= row["max_us"]
    for verdict in result["verdicts"]:
        assert verdict["met"] == (verdict["value"] <= verdict["limit"])
    assert [c["case"].split(",")[0] for c in result["check_cost_us"]] == [
        "plain tool",
        "typed tool",
        "typed tool",
    ]
    assert all(c["per_call_us"] > 0 for c in result["check_cost_us"])


def test_loop_overhead_profile_names_the_runtime_functions() -> None:
    output = run_bench("loop_overhead.py", "--quick", "--profile", "async")
    assert output.startswith("cProfile: runtime, async tool, N=8")
    assert "runtime.py" in output and "runner.py" in output


def test_import_time_prints_both_commands_and_its_verdicts() -> None:
    output = run_bench("import_time.py", "--quick")
    assert 'python -c "import cleveragents.tool"' in output
    assert 'python -c "pass"' in output
    assert "import share" in output
    for package in ("anthropic", "openai", "jsonschema", "rich"):
        assert f"  {package} " in output
    assert len(verdict_lines(output)) == 2


def test_import_time_json_shows_no_provider_sdk_is_imported() -> None:
    result: dict[str, Any] = json.loads(run_bench("import_time.py", "--quick", "--json"))
    assert result["import"]["runs"] == result["baseline"]["runs"] == 3
    assert set(result["loaded"]) == {"anthropic", "openai", "jsonschema", "rich"}
    # The editor daemon and CLI start through this import: the SDKs load only with a provider.
    assert result["loaded"]["anthropic"] is False
    assert result["loaded"]["openai"] is False
    packages = [package for package, _ms in result["self_ms_by_package"]]
    assert "cleveragents" in packages, "no -X importtime lines were parsed"


CHECKPOINT_STEPS = (
    "first snapshot",
    "no-change snapshot",
    "incremental snapshot",
    "diff to now",
    "restore",
    "prune (pack)",
)
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


@needs_git
def test_checkpoint_bench_prints_every_step_and_a_verdict_per_target() -> None:
    # The bench checks what it measures (an unchanged folder gives the same tree, the diff
    # and the restore see every change), so it crashes rather than report work not done.
    output = run_bench("checkpoint_bench.py", "--quick")
    assert output.startswith("Checkpoints: 500 files, 1 round(s)")
    for step in CHECKPOINT_STEPS:
        assert any(line.startswith(step) for line in output.splitlines()), step
    # Four targets, and three ratios against plain git on the same tree.
    assert len(verdict_lines(output)) == 4 + 3
    assert "Against plain git, 500 files" in output
    assert "store after a prune" in output


@needs_git
def test_checkpoint_bench_json_holds_every_step_and_the_disk_figures() -> None:
    result: dict[str, Any] = json.loads(run_bench("checkpoint_bench.py", "--quick", "--json"))
    assert [row["step"] for row in result["rows"]] == list(CHECKPOINT_STEPS)
    for row in result["rows"]:
        assert 0 < row["min_ms"] <= row["median_ms"] <= row["max_ms"]
    assert result["workspace_bytes"] > 0 and result["store_bytes_packed"] > 0
    for verdict in result["verdicts"]:
        assert verdict["met"] == (verdict["value"] <= verdict["limit"])
    [compared] = result["vs_git"]
    assert [row["case"] for row in compared["rows"]] == [
        "first snapshot",
        "unchanged snapshot",
        "one-edit snapshot",
    ]
    for row in compared["rows"]:
        assert row["ours_ms"] > 0 and row["git_ms"] > 0
        assert row["met"] == (row["ratio"] <= row["limit"])


def test_repository_guard_bench_times_each_scan_and_finds_the_planted_repository() -> None:
    result: dict[str, Any] = json.loads(run_bench("repository_guard_bench.py", "--quick", "--json"))
    assert {"first_scan_s", "later_scan_s", "scan_after_a_command_s"} <= set(result)
    # Each round's command makes one nested repository with a hook: the hook is the one
    # protected write (git init's config holds only harmless keys).
    assert result["protected_writes_found_per_round"] == 1
