"""The per-result budget: what the model is shown of a large tool result, and what is kept."""

from __future__ import annotations

import copy
import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from cleveragents.tool import (
    DEFAULT_RESULT_BUDGET_CHARS,
    FunctionLLMCaller,
    LLMRequest,
    LLMResponse,
    ToolActorContext,
    ToolCallFinished,
    ToolCallingRuntime,
    ToolCallRecord,
    ToolCallRequest,
    ToolRegistry,
    ToolResultsMessage,
    ToolRunner,
)
from cleveragents.tool.result_budget import fit_to_budget, json_chars
from cleveragents.tool.router import ToolCallRouter, result_from_record
from cleveragents.workspace import register_builtin_tools

MiB = 1024 * 1024


def model_text(content: dict[str, Any]) -> str:
    """What a provider sends the model for a result (the router's own serialisation)."""
    from cleveragents.tool.messages import ToolResult

    return str(ToolCallRouter.to_openai_tool_message(ToolResult("c", "t", content))["content"])


def record(tool: str, output: dict[str, Any], success: bool = True) -> ToolCallRecord:
    return ToolCallRecord(tool, {}, output, 1.0, success, call_id="c1")


def build_log(lines: int) -> str:
    return "".join(f"[{i:06d}] compiling module_{i}.c ... ok\n" for i in range(lines))


# -- the cut itself ---------------------------------------------------------------------------
def test_a_small_result_is_sent_as_it_is() -> None:
    output = {"exit_code": 0, "stdout": "hello\n", "stderr": ""}
    result = result_from_record(record("run_command", output))
    assert result.content is output


def test_a_large_command_output_keeps_head_and_tail_around_a_marker() -> None:
    stdout = build_log(40_000)  # ~1.5 MB
    output = {
        "exit_code": 2,
        "stdout": stdout,
        "stderr": "error: undefined reference to `main'\n",
        "truncated": False,
        "confined": True,
        "cwd": ".",
    }
    kept = copy.deepcopy(output)
    shown = result_from_record(record("run_command", output)).content

    assert len(model_text(shown)) <= DEFAULT_RESULT_BUDGET_CHARS
    assert output == kept, "the record's output must not change"
    # Small fields are exact; the big one keeps its first and last lines.
    assert {k: shown[k] for k in ("exit_code", "stderr", "truncated", "confined", "cwd")} == {
        k: output[k] for k in ("exit_code", "stderr", "truncated", "confined", "cwd")
    }
    assert shown["stdout"].startswith("[000000] compiling module_0.c ... ok\n")
    assert shown["stdout"].endswith("[039999] compiling module_39999.c ... ok\n")
    marker = re.search(r"\[… ([\d,]+) of ([\d,]+) characters of stdout left out", shown["stdout"])
    assert marker is not None
    omitted, total = (int(g.replace(",", "")) for g in marker.groups())
    assert total == len(stdout)
    # What is shown plus what is left out is all of it: head + tail + omitted == total.
    head, _, tail = shown["stdout"].partition("\n[…")
    tail = tail.split("]\n", 1)[1]
    assert len(head) + len(tail) + omitted == total
    assert stdout.startswith(head) and stdout.endswith(tail)
    assert "> out.log 2>&1" in shown["stdout"] and "read_file" in shown["stdout"]


def test_a_long_list_keeps_its_first_and_last_items_and_counts_the_rest() -> None:
    matches = [f"src/mod{i}.py:{i}:    value = compute({i})" for i in range(5000)]
    output = {"matches": matches, "count": 5000, "truncated": False, "files_searched": 812}
    shown = result_from_record(record("grep", output), budget_chars=8_000).content
    assert len(model_text(shown)) <= 8_000
    assert shown["count"] == 5000 and shown["files_searched"] == 812
    listed = shown["matches"]
    markers = [m for m in listed if m.startswith("[…")]
    assert len(markers) == 1
    kept = [m for m in listed if not m.startswith("[…")]
    assert listed[0] == matches[0] and listed[-1] == matches[-1]
    assert set(kept) <= set(matches)
    assert f"{5000 - len(kept):,} of 5,000 items of matches left out" in markers[0]
    assert "narrow the search" in markers[0]


def test_an_error_result_is_held_to_the_budget_too() -> None:
    failed = record("run_command", {}, success=False)
    failed.error, failed.error_kind = "timed out\n" + "x" * 100_000, "timeout"
    shown = result_from_record(failed, budget_chars=2_000)
    assert shown.is_error and shown.content["error_kind"] == "timeout"
    assert len(model_text(shown.content)) <= 2_000
    assert shown.content["error"].startswith("timed out\n")


def test_no_budget_means_the_whole_result() -> None:
    output = {"stdout": "y" * 100_000}
    assert result_from_record(record("run_command", output), budget_chars=None).content is output


@pytest.mark.parametrize("seed", range(12))
def test_any_shape_fits_its_budget(seed: int) -> None:
    """Nested objects, lists of large strings, escapes, non-ASCII: the JSON always fits."""
    rng = random.Random(seed)
    alphabet = 'ab "\\\n\té€😀\x01<>'
    room = [400_000]  # characters left to generate, so a shape stays test-sized

    def text(n: int) -> str:
        n = min(n, max(0, room[0]))
        room[0] -= n
        start = rng.randrange(len(alphabet))
        return (alphabet * (n // len(alphabet) + 2))[start : start + n]

    def value(depth: int) -> Any:
        kind = rng.choice(["str", "list", "dict", "num"] if depth < 3 else ["str", "num"])
        if kind == "str":
            return text(rng.choice([5, 300, 20_000, 120_000]))
        if kind == "num":
            return rng.choice([1, 2.5, None, True])
        if kind == "list":
            return [value(depth + 1) for _ in range(rng.choice([1, 3, 200]))]
        return {f"k{i}": value(depth + 1) for i in range(rng.choice([1, 4, 12]))}

    content = {"result": value(0), "tail": text(50)}
    budget = rng.choice([1_000, 4_000, 32_000])
    before = json.dumps(content)
    shown = fit_to_budget("some_mcp_tool", content, budget)
    assert json.dumps(content) == before
    assert json_chars(shown) <= budget
    assert len(model_text(shown)) <= budget


# -- in a run ---------------------------------------------------------------------------------
def make_runtime(registry: ToolRegistry, llm: Any, **kwargs: Any) -> ToolCallingRuntime:
    return ToolCallingRuntime(registry, ToolRunner(registry), llm, **kwargs)


def dump_then_done(seen: list[LLMRequest]) -> Any:
    """A model that calls `dump` once, then answers; keeps every request it gets."""

    def llm(request: LLMRequest) -> LLMResponse:
        seen.append(request)
        if request.iteration == 1:
            return LLMResponse(tool_calls=[ToolCallRequest("c1", "dump", {})])
        return LLMResponse(text="done")

    return llm


def test_the_model_sees_the_budgeted_result_and_the_record_keeps_everything() -> None:
    registry = ToolRegistry()
    big = "z" * MiB

    @registry.tool
    def dump() -> dict[str, Any]:
        """Return a lot."""
        return {"data": big}

    seen: list[LLMRequest] = []
    finished: list[ToolCallRecord] = []
    llm = dump_then_done(seen)
    runtime = make_runtime(
        registry,
        llm,
        result_budget_chars=5_000,
        observers=[
            lambda e: finished.append(e.record) if isinstance(e, ToolCallFinished) else None
        ],
    )
    result = runtime.run_tool_loop("go")
    sent = seen[1].messages[-1]
    assert isinstance(sent, ToolResultsMessage)
    assert len(model_text(sent.results[0].content)) <= 5_000
    assert result.tool_call_history[0].output["data"] == big
    assert finished[0].output["data"] == big
    # The run's conversation (what a continued run starts from) holds the budgeted form.
    assert result.messages[-2] == sent


def test_a_run_can_set_its_own_budget_and_bad_budgets_are_refused() -> None:
    registry = ToolRegistry()

    @registry.tool
    def dump() -> str:
        """Return a lot."""
        return "q" * 50_000

    seen: list[LLMRequest] = []
    runtime = make_runtime(registry, dump_then_done(seen))
    runtime.run_tool_loop("go", result_budget_chars=2_000)
    runtime.run_tool_loop("go", result_budget_chars=None)
    first, second = seen[1].messages[-1], seen[3].messages[-1]
    assert isinstance(first, ToolResultsMessage) and isinstance(second, ToolResultsMessage)
    assert len(model_text(first.results[0].content)) <= 2_000
    assert second.results[0].content == {"result": "q" * 50_000}
    with pytest.raises(ValueError, match="result_budget_chars"):
        make_runtime(registry, dump_then_done([]), result_budget_chars=10)
    with pytest.raises(TypeError, match="result_budget_chars"):
        make_runtime(registry, dump_then_done([]), result_budget_chars="32k")


def test_the_read_file_marker_names_the_call_that_shows_the_missing_lines(tmp_path: Path) -> None:
    """The model follows the marker's advice with the real read_file and gets those lines."""
    lines = [f"line {n}: " + "payload " * 8 + "\n" for n in range(1, 3001)]
    (tmp_path / "big.txt").write_text("".join(lines))
    registry = ToolRegistry()
    register_builtin_tools(registry)
    follow_up: dict[str, Any] = {}

    def model(request: LLMRequest) -> LLMResponse:
        if request.iteration == 1:
            return LLMResponse(tool_calls=[ToolCallRequest("r1", "read_file", {"path": "big.txt"})])
        if request.iteration == 2:
            shown = request.messages[-1]
            assert isinstance(shown, ToolResultsMessage)
            content = shown.results[0].content["content"]
            advice = re.search(r"read_file path='big.txt' offset=(\d+) limit=(\d+)", content)
            assert advice is not None, content[:200]
            follow_up.update(offset=int(advice[1]), limit=int(advice[2]))
            return LLMResponse(
                tool_calls=[ToolCallRequest("r2", "read_file", {"path": "big.txt", **follow_up})]
            )
        return LLMResponse(text="read it")

    runtime = make_runtime(registry, FunctionLLMCaller(model), result_budget_chars=12_000)
    result = runtime.run_tool_loop("read", ToolActorContext(sandbox_root=str(tmp_path)))
    first, second = result.tool_call_history
    assert first.success and first.output["content"] == "".join(lines[:2000])
    assert second.success
    # The follow-up starts exactly at the first line the marker said was left out...
    start = follow_up["offset"]
    assert second.output["content"].startswith(lines[start - 1])
    first_shown = result.messages[2]
    assert isinstance(first_shown, ToolResultsMessage)
    shown_head = first_shown.results[0].content["content"].split("\n[…")[0]
    assert shown_head.endswith(lines[start - 2])
    # ...and asks for no more lines than fit in one budgeted result.
    shown_second = result.messages[4]
    assert isinstance(shown_second, ToolResultsMessage)
    assert "[…" not in shown_second.results[0].content["content"]


# -- measured once ----------------------------------------------------------------------------
def test_a_huge_result_is_cut_without_measuring_the_whole_of_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A 1 MiB output is known to be over the budget by its length: nothing encodes or reprs
    the whole result (that was two passes over it); only what is kept is measured."""
    from cleveragents.tool import result_budget

    measured: list[int] = []
    real_json, real_approx = result_budget.json_chars, result_budget.approx_chars

    def counting_json(value: Any) -> int:
        size = real_json(value)
        measured.append(size)
        return size

    def counting_approx(value: Any) -> int:
        size = real_approx(value)
        measured.append(size)
        return size

    monkeypatch.setattr(result_budget, "json_chars", counting_json)
    monkeypatch.setattr(result_budget, "approx_chars", counting_approx)
    output: dict[str, Any] = {
        "exit_code": 0,
        "stdout": build_log(30_000),
        "stderr": "warning: x\n" * 10,
    }
    assert len(output["stdout"]) > MiB
    cut, size = result_budget.fit_with_size("run_command", output, 32_000)
    assert size == real_json(cut) <= 32_000  # the guard gets the exact size of what is sent
    assert cut["exit_code"] == 0 and "left out here" in cut["stdout"]
    assert measured and max(measured) < 200_000, measured


def test_the_size_given_for_a_result_that_fits_is_about_its_json() -> None:
    from cleveragents.tool.result_budget import fit_with_size

    for output in (
        {"n": 1},
        {"content": 'say "hi"\n' * 500, "path": "a.py", "start_line": 1},
        {"matches": [{"path": f"f{i}.py", "line": i, "text": "x = 1"} for i in range(50)]},
    ):
        content, size = fit_with_size("grep", output, 32_000)
        assert content is output
        assert 0.8 * json_chars(output) <= size <= 1.25 * json_chars(output)
