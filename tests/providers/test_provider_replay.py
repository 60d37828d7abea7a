"""The replay provider: scripted responses from a JSON file."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from cleveragents.providers import create_llm_caller
from cleveragents.providers.replay import ReplayCaller, ReplayScriptError
from cleveragents.tool import (
    RunEvent,
    TextDelta,
    ToolCallingRuntime,
    ToolRegistry,
    ToolRunner,
)
from cleveragents.tool.serialization import to_data


def write(tmp_path: Path, data: Any) -> Path:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return path


def test_plays_the_script_through_a_loop(tmp_path: Path) -> None:
    script = write(
        tmp_path,
        {
            "responses": [
                {
                    "text": "Let me add.",
                    "tool_calls": [
                        {"name": "add", "arguments": {"a": 1, "b": 2}},
                        {"name": "add", "arguments": "{not json"},
                    ],
                },
                {"text": "It is 3."},
            ]
        },
    )
    registry = ToolRegistry()

    @registry.tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    events: list[RunEvent] = []
    runtime = ToolCallingRuntime(
        registry, ToolRunner(registry), create_llm_caller("replay", script=str(script))
    )
    result = runtime.run_tool_loop("add", observers=[events.append])
    first, second = result.tool_call_history
    assert first.output == {"result": 3} and first.call_id == "response_1_call_1"
    assert second.error_kind == "invalid_arguments"
    assert result.content == "It is 3." and result.iterations == 2
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert deltas == ["Let ", "me ", "add.", "It ", "is ", "3."]


def test_one_caller_serves_many_runs(tmp_path: Path) -> None:
    caller = ReplayCaller.from_file(write(tmp_path, [{"text": "same"}]))
    registry = ToolRegistry()
    runtime = ToolCallingRuntime(registry, ToolRunner(registry), caller)
    assert [runtime.run_tool_loop("x").content for _ in range(3)] == ["same"] * 3


def test_running_past_the_script_is_a_clear_error(tmp_path: Path) -> None:
    caller = ReplayCaller.from_file(write(tmp_path, [{"tool_calls": [{"name": "nope"}]}]))
    registry = ToolRegistry()
    runtime = ToolCallingRuntime(registry, ToolRunner(registry), caller)
    with pytest.raises(ReplayScriptError, match="has 1 responses; iteration 2"):
        runtime.run_tool_loop("x")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{oops", "not valid JSON"),
        ({"responses": []}, "non-empty 'responses'"),
        ([{"text": 3}], "'text' must be a string"),
        ([{"tool_calls": [{"arguments": {}}]}], "needs a string 'name'"),
        ([{"delay_ms": -1}], "non-negative"),
    ],
)
def test_bad_scripts_are_clear_errors(tmp_path: Path, content: Any, message: str) -> None:
    with pytest.raises(ReplayScriptError, match=message):
        ReplayCaller.from_file(write(tmp_path, content))


def test_missing_script_file(tmp_path: Path) -> None:
    with pytest.raises(ReplayScriptError, match="not found"):
        ReplayCaller.from_file(tmp_path / "absent.json")


def test_scripted_usage_and_model_price_the_run(tmp_path: Path) -> None:
    script = write(
        tmp_path,
        {
            "model": "claude-sonnet-4-5",
            "responses": [
                {
                    "tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}],
                    "usage": {
                        "input_tokens": 2_000,
                        "output_tokens": 10,
                        "cache_write_tokens": 1_500,
                    },
                },
                {"text": "3", "usage": {"input_tokens": 2_100, "output_tokens": 5}},
            ],
        },
    )
    registry = ToolRegistry()

    @registry.tool
    def add(a: int, b: int) -> int:
        """Add.

        Args:
            a: One.
            b: Two.
        """
        return a + b

    caller = create_llm_caller("replay", script=str(script))
    assert getattr(caller, "model", None) == "claude-sonnet-4-5"
    runtime = ToolCallingRuntime(registry, ToolRunner(registry), caller)
    first = runtime.run_tool_loop("add")
    second = runtime.run_tool_loop("add")  # every run gets its own counts
    assert (
        to_data(first.usage)
        == to_data(second.usage)
        == {
            "input_tokens": 4_100,
            "output_tokens": 15,
            "cache_read_tokens": 0,
            "cache_write_tokens": 1_500,
        }
    )
    # 2,600 uncached x $3 + 1,500 written x $3.75 + 15 out x $15, per million tokens
    assert first.cost_usd == pytest.approx((7_800 + 5_625 + 225) / 1e6)
    named = create_llm_caller("replay", "my-model", script=str(script))
    assert getattr(named, "model", None) == "my-model"  # --model wins over the script's
    assert (
        ToolCallingRuntime(registry, ToolRunner(registry), named).run_tool_loop("add").cost_usd
        is None
    )


@pytest.mark.parametrize(
    ("usage", "message"),
    [
        ([1], "'usage' must be an object"),
        ({"input": 5}, "unknown usage field(s) input"),
        ({"input_tokens": -1}, "usage input_tokens must be a whole number >= 0"),
        ({"input_tokens": True}, "usage input_tokens must be a whole number >= 0"),
        ({"input_tokens": 5, "cache_read_tokens": 6}, "cannot be less than their sum"),
    ],
)
def test_bad_usage_is_a_clear_error(tmp_path: Path, usage: Any, message: str) -> None:
    script = write(tmp_path, {"responses": [{"text": "x", "usage": usage}]})
    with pytest.raises(ReplayScriptError, match=re.escape(message)):
        ReplayCaller.from_file(script)
    with pytest.raises(ReplayScriptError, match="'model' must be a non-empty string"):
        ReplayCaller.from_file(write(tmp_path, {"model": 3, "responses": [{"text": "x"}]}))
