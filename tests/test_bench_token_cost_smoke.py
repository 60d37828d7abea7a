"""bench/token_cost.py runs the scripted task end to end and prints its figures and verdicts
(no timing asserts: what it reports is tokens and dollars, checked for consistency)."""

from __future__ import annotations

import json
from typing import Any

from test_bench_smoke import run_bench, verdict_lines

LABELS = ("claude, cache on", "claude, cache off", "gpt, automatic cache", "claude, 40k window")


def test_token_cost_prints_every_run_and_a_verdict_per_target() -> None:
    output = run_bench("token_cost.py", "--quick")
    for label in LABELS:
        assert any(line.startswith(label) for line in output.splitlines()), label
    verdicts = verdict_lines(output)
    # The bill ratio, one window check per run, and two information lines.
    assert len(verdicts) == 7, verdicts
    assert verdicts[0].startswith(("PASS  Claude bill", "MISS  Claude bill"))
    assert [v[:4] for v in verdicts].count("INFO") == 2


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
