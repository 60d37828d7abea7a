"""Tokens and cost: Usage with cache tokens, the price table, per-iteration usage and cost."""

from __future__ import annotations

import io
import json
import re
from typing import Any

import pytest
from rich.console import Console

from cleveragents.display import RunDisplay
from cleveragents.tool import (
    FunctionLLMCaller,
    LLMRequest,
    LLMResponse,
    ModelPrice,
    ResponseReceived,
    ToolCallingRuntime,
    ToolCallRequest,
    ToolRegistry,
    ToolRunner,
    Usage,
    context_window_for,
    price_for,
)
from cleveragents.tool.models import model_key
from cleveragents.tool.serialization import to_data


def test_usage_adds_all_four_counts_and_knows_the_uncached_part() -> None:
    total = Usage()
    total.add(Usage(input_tokens=1_000, output_tokens=50, cache_read_tokens=600))
    total.add(Usage(input_tokens=2_000, output_tokens=70, cache_write_tokens=1_500))
    assert to_data(total) == {
        "input_tokens": 3_000,
        "output_tokens": 120,
        "cache_read_tokens": 600,
        "cache_write_tokens": 1_500,
    }
    assert total.uncached_input_tokens == 900


def test_cost_bills_each_kind_of_token_at_its_own_rate() -> None:
    sonnet = price_for("claude-sonnet-4-5-20250929")
    assert sonnet == ModelPrice(input=3.0, output=15.0, cache_write=3.75, cache_read=0.30)
    usage = Usage(
        input_tokens=10_000, output_tokens=500, cache_read_tokens=6_000, cache_write_tokens=2_000
    )
    # 2,000 uncached x $3 + 2,000 written x $3.75 + 6,000 read x $0.30 + 500 out x $15, per Mtok
    assert sonnet.cost(usage) == pytest.approx((6_000 + 7_500 + 1_800 + 7_500) / 1e6)
    gpt = price_for("gpt-4o-2024-08-06")
    assert gpt is not None and gpt.cache_write == gpt.input  # OpenAI: no write surcharge
    assert gpt.cost(Usage(1_000_000, 0, cache_read_tokens=1_000_000)) == pytest.approx(1.25)


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("claude-opus-4-1-20250805", "claude-opus-4-1"),
        ("anthropic.claude-3-5-sonnet-20240620-v1:0", "claude-3-5-sonnet"),
        ("us.anthropic.claude-3-7-sonnet-20250219-v1:0", "claude-3-7-sonnet"),
        ("claude-3-5-sonnet-v2@20241022", "claude-3-5-sonnet"),
        ("openai/gpt-4.1-mini", "gpt-4.1-mini"),
        ("GPT-4o-2024-08-06", "gpt-4o"),
        ("gpt-4-0613", "gpt-4"),
    ],
)
def test_model_names_match_their_rows_with_prefixes_and_dates(name: str, key: str) -> None:
    assert model_key(name) == key


def test_an_unknown_model_has_no_price_and_no_window_rather_than_a_wrong_one() -> None:
    for name in ("o3-pro", "gpt-5-chat-latest", "llama3.1:8b", "claude-next-9", "", None):
        assert price_for(name) is None
    assert context_window_for("llama3.1:8b") is None
    assert context_window_for("claude-next-9") == 200_000  # every Claude reads 200k
    assert context_window_for("gpt-4.1-2025-04-14") == 1_047_576


def test_price_overrides_come_first_and_are_checked() -> None:
    runtime = make_runtime(
        lambda r: LLMResponse(text="x"),
        prices={
            "my-local": {"input": 0.5, "output": 1.0},
            "claude-sonnet-4-5": {"input": 1, "output": 2, "cacheWrite": 3, "cacheRead": 4},
        },
    )
    local = price_for("my-local", runtime.prices)
    assert local == ModelPrice(0.5, 1.0, 0.5, 0.5)  # unknown cache rates: the input rate
    assert price_for("claude-sonnet-4-5-20250929", runtime.prices) == ModelPrice(1, 2, 3, 4)
    with pytest.raises(ValueError, match="needs 'output'"):
        make_runtime(lambda r: LLMResponse(), prices={"m": {"input": 1}})
    with pytest.raises(ValueError, match="finite number"):
        make_runtime(lambda r: LLMResponse(), prices={"m": {"input": -1, "output": 1}})
    with pytest.raises(ValueError, match="unknown price field"):
        make_runtime(lambda r: LLMResponse(), prices={"m": {"input": 1, "output": 1, "in": 2}})
    with pytest.raises(TypeError, match="must be a number"):
        make_runtime(lambda r: LLMResponse(), prices={"m": {"input": "1", "output": 1}})


# -- in a run ---------------------------------------------------------------------------------
class Priced(FunctionLLMCaller):
    def __init__(self, function: Any, model: str | None) -> None:
        super().__init__(function)
        self.model = model


def make_runtime(llm: Any, **kwargs: Any) -> ToolCallingRuntime:
    registry = ToolRegistry()

    @registry.tool
    def look(n: int) -> int:
        """Look."""
        return n

    return ToolCallingRuntime(registry, ToolRunner(registry), llm, **kwargs)


def three_calls(request: LLMRequest) -> LLMResponse:
    usage = Usage(
        input_tokens=1_000 * request.iteration,
        output_tokens=100,
        cache_read_tokens=800 * (request.iteration - 1),
        cache_write_tokens=200,
    )
    if request.iteration < 3:
        call = ToolCallRequest(f"c{request.iteration}", "look", {"n": request.iteration})
        return LLMResponse(tool_calls=[call], usage=usage)
    return LLMResponse(text="done", usage=usage)


def test_each_model_call_reports_its_usage_and_cost_and_the_run_sums_them() -> None:
    events: list[Any] = []
    llm = Priced(three_calls, "claude-haiku-4-5-20251001")
    result = make_runtime(llm, observers=[events.append]).run_tool_loop("go")
    received = [e for e in events if isinstance(e, ResponseReceived)]
    assert [e.usage for e in received] == result.iteration_usage
    assert [u.input_tokens for u in result.iteration_usage] == [1_000, 2_000, 3_000]
    assert result.usage == Usage(6_000, 300, 2_400, 600)
    haiku = ModelPrice(1.0, 5.0, 1.25, 0.10)
    assert [e.cost_usd for e in received] == [
        pytest.approx(haiku.cost(u)) for u in result.iteration_usage
    ]
    assert result.cost_usd == pytest.approx(sum(e.cost_usd or 0.0 for e in received))
    # uncached 3,000 x $1 + written 600 x $1.25 + read 2,400 x $0.10 + out 300 x $5
    assert result.cost_usd == pytest.approx((3_000 + 750 + 240 + 1_500) / 1e6)
    data = json.loads(json.dumps(to_data(result)))
    assert data["cost_usd"] == pytest.approx(result.cost_usd)
    assert data["iteration_usage"][2] == {
        "input_tokens": 3_000,
        "output_tokens": 100,
        "cache_read_tokens": 1_600,
        "cache_write_tokens": 200,
    }


def test_a_model_without_a_price_has_no_cost_but_keeps_its_tokens() -> None:
    events: list[Any] = []
    result = make_runtime(Priced(three_calls, "my-local-model"), observers=[events.append])
    run = result.run_tool_loop("go")
    assert run.cost_usd is None and run.usage.input_tokens == 6_000
    assert all(e.cost_usd is None for e in events if isinstance(e, ResponseReceived))
    assert json.loads(json.dumps(to_data(run)))["cost_usd"] is None
    priced = make_runtime(
        Priced(three_calls, "my-local-model"),
        prices={"my-local-model": {"input": 1, "output": 1, "cache_write": 1, "cache_read": 1}},
    )
    assert priced.run_tool_loop("go").cost_usd == pytest.approx(6_300 / 1e6)


def test_the_cli_summary_shows_tokens_cache_share_and_cost() -> None:
    out = io.StringIO()
    display = RunDisplay(Console(file=out, width=200, color_system=None))
    display.show_result("ok", "final_answer", 3, 2, Usage(6_000, 300, 2_400, 600), 0.00549)
    display.show_result("", "context_exhausted", 9, 8, Usage(10, 5), None)
    display.show_result("ok", "final_answer", 1, 0, Usage(), None)
    text = out.getvalue()
    assert (
        "3 iteration(s), 2 tool call(s), 6,000 tokens in (2,400 from cache, 40%), 300 out, ~$0.0055"
        in text
    )
    assert "context window is full" in text
    assert "10 tokens in, 5 out, cost unknown (no price for this model)" in text
    assert text.rstrip().endswith(
        "1 iteration(s), 0 tool call(s), no token counts (the model reported none)"
    )


def test_the_documented_price_table_is_the_code_s() -> None:
    from pathlib import Path

    from cleveragents.tool.models import MODEL_CONTEXT_WINDOWS, MODEL_PRICES

    readme = (Path(__file__).resolve().parents[2] / "docs" / "tokens.md").read_text()
    rows = re.findall(
        r"^\| `([\w.-]+)` \| ([\d,]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|$",
        readme,
        re.MULTILINE,
    )
    documented = {
        name: (int(window.replace(",", "")), ModelPrice(*map(float, rates)))
        for name, window, *rates in rows
    }
    assert documented == {
        name: (MODEL_CONTEXT_WINDOWS[name], price) for name, price in MODEL_PRICES.items()
    }


def test_a_usage_copy_holds_every_field_and_is_its_own() -> None:
    """The runtime snapshots its running total with `copy()` each response; a field added to
    Usage but not to copy() would silently read 0 in every snapshot."""
    from dataclasses import fields

    total = Usage(**{f.name: n + 1 for n, f in enumerate(fields(Usage))})
    snapshot = total.copy()
    assert snapshot == total and snapshot is not total
    total.add(Usage(input_tokens=5))
    assert snapshot.input_tokens == 1
