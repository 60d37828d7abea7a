"""The contract's API and error table (docs/spec/tool-calling-loop.md), row by row."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from cleveragents.tool import (
    LLMRequest,
    LLMResponse,
    ToolActorContext,
    ToolCallingRuntime,
    ToolCallRecord,
    ToolCallRequest,
    ToolRegistry,
    ToolRunner,
)


def make_runtime(
    llm: Any, registry: ToolRegistry | None = None, **kwargs: Any
) -> ToolCallingRuntime:
    registry = registry or ToolRegistry()
    return ToolCallingRuntime(
        registry=registry, runner=ToolRunner(registry), llm_caller=llm, **kwargs
    )


def answer(text: str) -> Any:
    return lambda request: LLMResponse(text=text)


def test_empty_prompt_raises_value_error() -> None:
    runtime = make_runtime(answer("x"))
    for prompt in ("", "   \n"):
        with pytest.raises(ValueError, match="empty"):
            runtime.run_tool_loop(prompt)


def test_non_string_prompt_is_a_clear_type_error() -> None:
    runtime = make_runtime(answer("x"))
    for prompt in (None, 42, ["hi"], {"text": "hi"}):
        with pytest.raises(TypeError, match="prompt must be a string"):
            runtime.run_tool_loop(prompt)  # type: ignore[arg-type]


def test_wrong_registry_or_runner_type_raises_at_construction() -> None:
    registry = ToolRegistry()
    runner = ToolRunner(registry)
    with pytest.raises(TypeError, match="registry"):
        ToolCallingRuntime(registry={}, runner=runner, llm_caller=answer("x"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="runner"):
        ToolCallingRuntime(registry=registry, runner=object(), llm_caller=answer("x"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="registry"):
        ToolRunner(["not", "a", "registry"])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="llm_caller"):
        ToolCallingRuntime(registry=registry, runner=runner, llm_caller="gpt")


@pytest.mark.parametrize("limit", [0, -1, -25])
def test_max_iterations_below_one_raises_value_error(limit: int) -> None:
    with pytest.raises(ValueError, match="max_iterations"):
        make_runtime(answer("x"), max_iterations=limit)


def test_max_iterations_must_be_an_int() -> None:
    with pytest.raises(TypeError, match="max_iterations"):
        make_runtime(answer("x"), max_iterations="10")


def test_unknown_tool_becomes_a_failed_record() -> None:
    def llm(request: LLMRequest) -> LLMResponse:
        if request.iteration == 1:
            return LLMResponse(tool_calls=[ToolCallRequest("c1", "no_such_tool", {"a": 1})])
        return LLMResponse(text="ok")

    result = make_runtime(llm).run_tool_loop("go")
    (record,) = result.tool_call_history
    assert record.success is False
    assert record.error_kind == "unknown_tool"
    assert "no_such_tool" in (record.error or "")
    assert record.inputs == {"a": 1}
    assert result.content == "ok"


def test_raising_handler_becomes_a_failed_record_with_error() -> None:
    registry = ToolRegistry()

    @registry.tool
    def explode(reason: str) -> str:
        """Always fails."""
        raise RuntimeError(f"boom: {reason}")

    def llm(request: LLMRequest) -> LLMResponse:
        if request.iteration == 1:
            return LLMResponse(tool_calls=[ToolCallRequest("c1", "explode", {"reason": "why"})])
        return LLMResponse(text="recovered")

    result = make_runtime(llm, registry).run_tool_loop("go")
    (record,) = result.tool_call_history
    assert record.success is False
    assert record.error_kind == "execution_error"
    assert (
        record.error is not None and "RuntimeError" in record.error and "boom: why" in record.error
    )
    assert record.output == {}
    assert result.content == "recovered"


def test_default_limit_is_25_and_sets_terminated_by_limit() -> None:
    registry = ToolRegistry()
    seen: list[int] = []

    @registry.tool
    def step(n: int) -> int:
        """Record a step."""
        seen.append(n)
        return n

    calls = 0

    def llm(request: LLMRequest) -> LLMResponse:
        nonlocal calls
        calls += 1
        return LLMResponse(
            text=f"t{request.iteration}",
            tool_calls=[ToolCallRequest(f"c{request.iteration}", "step", {"n": request.iteration})],
        )

    runtime = make_runtime(llm, registry)
    assert runtime.max_iterations == 25
    result = runtime.run_tool_loop("loop forever")
    assert result.terminated_by_limit is True
    assert result.stop_reason == "max_iterations"
    assert calls == 25 and result.iterations == 25
    # The last allowed response's tools still ran and were recorded.
    assert seen == list(range(1, 26))
    assert [r.iteration for r in result.tool_call_history] == list(range(1, 26))
    # Partial content: the text gathered so far.
    assert result.content.startswith("t1") and result.content.endswith("t25")


def test_final_answer_result_and_record_fields() -> None:
    registry = ToolRegistry()

    @registry.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    def llm(request: LLMRequest) -> LLMResponse:
        if request.iteration == 1:
            return LLMResponse(tool_calls=[ToolCallRequest("c1", "add", {"a": 2, "b": 3})])
        return LLMResponse(text="the sum is 5")

    result = make_runtime(llm, registry, max_iterations=10).run_tool_loop("add")
    assert result.content == "the sum is 5"
    assert result.terminated_by_limit is False
    assert result.stop_reason == "final_answer"
    assert result.iterations == 2
    (record,) = result.tool_call_history
    assert isinstance(record, ToolCallRecord)
    assert record.tool_name == "add"
    assert record.inputs == {"a": 2, "b": 3}
    assert record.output == {"result": 5}
    assert isinstance(record.duration_ms, float) and record.duration_ms >= 0
    assert record.success is True and record.error is None and record.error_kind is None
    assert record.iteration == 1 and record.call_id == "c1"


def test_records_are_appended_to_the_context_history_as_they_complete() -> None:
    registry = ToolRegistry()
    context = ToolActorContext(plan_id="p", phase="execute", sandbox_root=None)
    lengths_seen_by_tool: list[int] = []

    @registry.tool
    def probe(n: int) -> int:
        """Report how many records the context held when this ran."""
        lengths_seen_by_tool.append(len(context.tool_call_history))
        return n

    def llm(request: LLMRequest) -> LLMResponse:
        if request.iteration <= 3:
            return LLMResponse(
                tool_calls=[
                    ToolCallRequest(f"c{request.iteration}", "probe", {"n": request.iteration})
                ]
            )
        return LLMResponse(text="done")

    result = make_runtime(llm, registry).run_tool_loop("go", context=context)
    assert lengths_seen_by_tool == [0, 1, 2]
    assert context.tool_call_history == result.tool_call_history


def test_llm_error_propagates() -> None:
    def llm(request: LLMRequest) -> LLMResponse:
        raise ConnectionError("provider down")

    with pytest.raises(ConnectionError, match="provider down"):
        make_runtime(llm).run_tool_loop("go")


def test_sync_wrapper_works_inside_a_running_event_loop() -> None:
    runtime = make_runtime(answer("from a thread"))

    async def inside() -> str:
        return runtime.run_tool_loop("hello").content

    assert asyncio.run(inside()) == "from a thread"


def test_async_llm_function_is_accepted() -> None:
    async def llm(request: LLMRequest) -> LLMResponse:
        await asyncio.sleep(0)
        return LLMResponse(text="async ok")

    assert make_runtime(llm).run_tool_loop("hi").content == "async ok"


def test_llm_function_returning_wrong_type_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="expected LLMResponse"):
        make_runtime(lambda request: "just text").run_tool_loop("hi")
