"""bench/token_cost.py runs the scripted task end to end and prints its figures and verdicts
(no timing asserts: what it reports is tokens and dollars, checked for consistency)."""

from __future__ import annotations

import json
from typing import Any

from test_bench_smoke import run_bench, verdict_lines

LABELS = ("claude, cache on", "claude, cache off", "gpt, automatic cache", "claude, 40k window")
LONG_LABELS = (
    "at the limit, cache on",
    "at the limit, cache off",
    "cache-priced, cache on",
    "cache-priced, cache off",
)


def test_token_cost_prints_every_run_and_a_verdict_per_target() -> None:
    output = run_bench("token_cost.py", "--quick")
    for label in LABELS + LONG_LABELS:
        assert any(line.startswith(label) for line in output.splitlines()), label
    verdicts = verdict_lines(output)
    # The bill ratio, one window check per run, and two information lines; then per policy
    # of the long variant a bill target, an information line and a window check.
    assert len(verdicts) == 7 + 2 * 3, verdicts
    assert verdicts[0].startswith(("PASS  Claude bill", "MISS  Claude bill"))
    assert [v[:4] for v in verdicts].count("INFO") == 2 + 2
    assert sum("policy cache-priced: bill with caching / the task" in v for v in verdicts) == 1


def test_token_cost_json_is_consistent_for_the_full_task() -> None:
    result: dict[str, Any] = json.loads(run_bench("token_cost.py", "--json"))
    on, off, gpt, small = result["runs"]
    assert [run["label"] for run in result["runs"]] == list(LABELS)
    for run in (on, off, gpt, small):
        assert run["calls"] == 25
        assert run["input_tokens"] == (
            run["uncached_tokens"] + run["cache_write_tokens"] + run["cache_read_tokens"]
        )
        assert 0 < run["peak_request_tokens"] <= run["window"]
        assert run["refused_requests"] == 0
    # The same task sends the same tokens; caching changes only how they are billed.
    assert on["input_tokens"] == off["input_tokens"]
    assert off["cache_read_tokens"] == off["cache_write_tokens"] == 0
    assert on["cache_read_tokens"] > 0 and gpt["cache_read_tokens"] > 0
    assert on["cost_usd"] < off["cost_usd"]
    # The small window makes the guard elide; nothing is refused and nothing goes over it.
    assert small["window"] == 40_000 and small["elided_messages"] > 0
    assert small["peak_request_tokens"] < on["peak_request_tokens"]
    bill = result["verdicts"][0]
    assert bill["target"] and bill["met"] == (on["cost_usd"] <= 0.25 * off["cost_usd"])

    long = {run["label"]: run for run in result["long_runs"]}
    assert list(long) == list(LONG_LABELS)
    for run in long.values():
        assert run["calls"] == 100
        assert 0 < run["peak_request_tokens"] <= run["window"] == 200_000
        assert run["refused_requests"] == 0
    before, after = long["at the limit, cache on"], long["cache-priced, cache on"]
    # The task outgrows the window: today's policy elides near the limit, the new one clears
    # earlier and keeps requests smaller; with the cache, the new one costs less.
    assert before["peak_request_tokens"] > after["peak_request_tokens"]
    assert before["elided_messages"] > 0 and after["elided_messages"] > 0
    assert after["cost_usd"] < before["cost_usd"]
    baseline = long["at the limit, cache off"]["cost_usd"]
    for verdict in result["long_verdicts"]:
        if verdict["target"] and "task uncached" in verdict["text"]:
            run = before if "at the limit" in verdict["text"] else after
            assert verdict["met"] == (run["cost_usd"] <= 0.13 * baseline)
