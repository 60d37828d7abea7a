"""The daemon bench runs end to end in quick mode against the real daemon (no timing asserts).

The bench checks each run it makes (stop reason, iterations, every tool call's output, the
notifications' `seq`) and crashes when one is wrong, so a zero exit status means the daemon
really served every request, stream and concurrent run the figures come from.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from test_bench_smoke import run_bench as run_script

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/status").exists(), reason="the daemon bench reads /proc (Linux)"
)


def run_bench(*args: str) -> str:
    return run_script("daemon_bench.py", "--quick", *args)


def test_table_has_every_section_and_one_line_per_target() -> None:
    output = run_bench()
    for heading in (
        "cold start: spawn to the initialize reply",
        "cold start: the server's CPU time up to the reply",
        "RSS 0.3 s after initialized",
        "round trips, one request at a time",
        "notifications to the raw client, first to last",
        "the same stream, daemon beside bare pygls (1 rounds)",
        "runs of 3 iterations, 5 ms LLM delay each",
    ):
        assert heading in output, heading
    for row in (
        "cleveragents daemon",
        "bare pygls server",
        "python -c pass (to exit)",
        "cleveragents/cancel (unknown run)",
        "bench/ping on the bare pygls server",
        "textDelta stream (200 words, one response)",
        "tool-call stream (5 iterations, list_dir)",
        "daemon, 200 textDelta notifications",
        "bare pygls, 200 textDelta notifications",
        "one run alone",
        "3 runs at once",
    ):
        assert any(line.strip().startswith(row) for line in output.splitlines()), row
    verdicts = [
        line for line in output.splitlines() if line.startswith(("PASS ", "MISS ", "INFO "))
    ]
    targets = [line for line in verdicts if not line.startswith("INFO ")]
    assert len(targets) == 4, verdicts
    assert any("cold start to the initialize reply" in line for line in targets)
    assert any("3 concurrent runs / one run alone" in line for line in targets)
    assert any("idle RSS of a fresh process, daemon / bare pygls" in line for line in targets)
    assert any("textDelta stream rate, daemon / bare pygls" in line for line in targets)
    assert len(verdicts) == 8, verdicts


def test_json_figures_are_consistent() -> None:
    result: dict[str, Any] = json.loads(run_bench("--json"))
    for summary in (
        *result["cold_start_ms"],
        *result["cold_start_cpu_ms"],
        *result["round_trips_ms"],
    ):
        assert summary["n"] >= 1
        assert 0 <= summary["min"] <= summary["median"] <= summary["max"]
    assert [s["label"] for s in result["cold_start_ms"]][:2] == [
        "cleveragents daemon",
        "bare pygls server",
    ]
    assert result["cold_start_ratio"] > 0
    assert result["rss_mib"]["idle"] > 0
    streams = result["notification_streams"]
    # One word per textDelta, plus runStarted, iterationStarted, usage and runFinished.
    assert streams[0]["notifications_per_run"] == 200 + 4
    # runStarted, runFinished and the one-word answer's textDelta; an iterationStarted and a
    # usage per iteration; a toolCallStarted and a toolCall per call.
    assert streams[1]["notifications_per_run"] == 3 + 2 * 5 + 2 * 4
    assert all(s["per_s"]["median"] > 0 for s in streams)
    versus = result["stream_versus_bare_pygls"]
    assert versus["words"] == 200
    assert versus["daemon_per_s"]["n"] == versus["bare_per_s"]["n"] == 1
    assert versus["ratio"] > 0
    concurrency = result["concurrency"]
    assert concurrency["runs"] == 3
    assert concurrency["each_run_in_batch_ms"]["n"] == 3
    assert concurrency["ratio"] > 0
    for verdict in result["verdicts"]:
        assert verdict["target"] == (verdict["met"] is not None)


def test_cold_start_alone_prints_its_rows_and_its_three_verdicts() -> None:
    output = run_bench("--cold-start")
    assert "cold start: spawn to the initialize reply" in output
    assert "RSS 0.3 s after initialized (fresh processes)" in output
    assert "round trips, one request at a time" not in output
    verdicts = [
        line for line in output.splitlines() if line.startswith(("PASS ", "MISS ", "INFO "))
    ]
    assert len(verdicts) == 3, verdicts
    assert "cold start to the initialize reply" in verdicts[0]
    assert "idle RSS of a fresh process" in verdicts[1]
    assert verdicts[2].startswith("INFO  cold start, the server's CPU time")
