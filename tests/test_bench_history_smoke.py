"""The history bench runs end to end in quick mode against the real daemon (no timing asserts).

The bench checks what it measures (every getRun returns the whole run; the run made while
another process held the lock returns its calls and has every record stored once the lock is
released) and crashes otherwise, so a zero exit status means the figures are of a daemon that
did the work.
"""

from __future__ import annotations

import json

from test_bench_smoke import run_bench as run_script


def run_bench(*args: str) -> str:
    return run_script("history_bench.py", "--quick", *args)


def test_the_table_has_every_figure_and_three_verdicts() -> None:
    output = run_bench()
    for row in (
        "getRun of a 200-record run",
        "ping alone",
        "pings answered while getRun was served",
        "run, no lock held",
        "run, another process holding the lock 0.5 s",
        "longest ping while the lock is held",
        "records of the locked run, after the release",
    ):
        assert any(line.startswith(row) for line in output.splitlines()), row
    verdicts = [line for line in output.splitlines() if line.startswith(("PASS ", "MISS "))]
    assert len(verdicts) == 3, verdicts


def test_json_figures_are_consistent() -> None:
    result = json.loads(run_bench("--json"))
    assert result["records"] == 200 and result["records_after_release"] == 3
    assert len(result["get_run_ms"]) == 1 and result["get_run_ms"][0] > 0
    assert result["get_run_bytes"] > 0 and result["lock_hold_s"] == 0.5
    assert result["pings_during_lock"] > 0
    assert [v["met"] in (True, False) for v in result["verdicts"]] == [True, True, True]
