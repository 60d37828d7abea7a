"""The context guard: no request over the window, oldest results elided first, calls and results
kept together, calibration from reported tokens, retry once on a refusal, context_exhausted."""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise
from typing import Any

import pytest

from cleveragents.tool import (
    AssistantMessage,
    ContextLengthExceeded,
    FunctionLLMCaller,
    LLMRequest,
    LLMResponse,
    Message,
    RunFinished,
    ToolCallingRuntime,
    ToolCallRequest,
    ToolRegistry,
    ToolResultsMessage,
    ToolRunner,
    Usage,
    UserMessage,
)
from cleveragents.tool.compaction import is_note
from cleveragents.tool.context_guard import ContextGuard, ContextLimits, estimate_request_tokens
from cleveragents.tool.context_policy import ContextPolicy
from cleveragents.tool.messages import ToolResult
from support.context_window import assert_calls_answered, input_limit

MiB = 1024 * 1024


class Model(FunctionLLMCaller):
    """A scripted model with the attributes a provider's caller has."""

    def __init__(
        self,
        function: Callable[[LLMRequest], LLMResponse],
        *,
        model: str | None = None,
        max_tokens: int | None = None,
        context_window: int | None = None,
    ) -> None:
        super().__init__(function)
        self.model = model
        self.max_tokens = max_tokens
        self.context_window = context_window


def registry_with_dump(size: int) -> ToolRegistry:
    registry = ToolRegistry()
    payload = "d" * size

    @registry.tool
    def dump(n: int) -> dict[str, Any]:
        """Return `size` characters."""
        return {"n": n, "data": payload}

    return registry


def runtime(registry: ToolRegistry, llm: Any, **kwargs: Any) -> ToolCallingRuntime:
    return ToolCallingRuntime(registry, ToolRunner(registry), llm, **kwargs)


def is_elided(message: Message) -> bool:
    return isinstance(message, ToolResultsMessage) and all(
        "elided" in r.content for r in message.results
    )


def dump_calls(iterations: int, requests: list[LLMRequest]) -> Callable[[LLMRequest], LLMResponse]:
    def model(request: LLMRequest) -> LLMResponse:
        requests.append(request)
        if request.iteration < iterations:
            call = ToolCallRequest(f"c{request.iteration}", "dump", {"n": request.iteration})
            return LLMResponse(text=f"step {request.iteration}", tool_calls=[call])
        return LLMResponse(text="done")

    return model


# -- eliding ----------------------------------------------------------------------------------
def test_oldest_results_are_elided_first_in_large_steps_and_calls_keep_their_results() -> None:
    window, max_tokens = 60_000, 4_000
    limit = input_limit(window, max_tokens)
    requests: list[LLMRequest] = []
    llm = Model(dump_calls(30, requests), max_tokens=max_tokens, context_window=window)
    result = runtime(registry_with_dump(30_000), llm, max_iterations=30).run_tool_loop("go")

    assert result.stop_reason == "final_answer" and len(requests) == 30
    elided_counts = []
    for request in requests:
        assert estimate_request_tokens(request) <= limit
        assert_calls_answered(request.messages)
        assert request.messages[0] == UserMessage("go")
        flags = [is_elided(m) for m in request.messages if isinstance(m, ToolResultsMessage)]
        # Elided results are always the oldest ones, and the newest is never among them.
        assert flags == sorted(flags, reverse=True)
        assert not flags or not flags[-1]
        elided_counts.append(sum(flags))
    assert elided_counts[-1] > 0, "the run was long enough to need eliding"
    # The prefix changed only a few times (a cache keeps it in between), not every turn.
    changes = [i for i in range(1, len(elided_counts)) if elided_counts[i] != elided_counts[i - 1]]
    assert 1 <= len(changes) <= len(requests) // 3
    assert all(b - a >= 2 for a, b in pairwise(changes))
    # The run's own conversation (for continuing it) and the records keep everything.
    assert not any(is_elided(m) for m in result.messages)
    assert all(len(r.output["data"]) == 30_000 for r in result.tool_call_history)


def test_an_elided_result_says_how_much_was_left_out_and_what_to_do() -> None:
    requests: list[LLMRequest] = []
    llm = Model(dump_calls(12, requests), max_tokens=2_000, context_window=30_000)
    runtime(registry_with_dump(25_000), llm, max_iterations=12).run_tool_loop("go")
    last = requests[-1].messages
    note = next(m for m in last if is_elided(m))
    assert isinstance(note, ToolResultsMessage)
    (only,) = note.results
    assert only.tool_name == "dump" and only.call_id == "c1"
    assert only.content["elided"].startswith("elided to fit the context: 25,")
    assert "call dump again" in only.content["elided"]


def test_older_assistant_text_and_large_arguments_go_after_the_results() -> None:
    """Results here are too small to elide: the guard turns to older assistant turns."""
    registry = ToolRegistry()

    @registry.tool
    def save(path: str, content: str) -> str:
        """Pretend to save."""
        return "ok"

    requests: list[LLMRequest] = []

    def model(request: LLMRequest) -> LLMResponse:
        requests.append(request)
        i = request.iteration
        if i < 15:
            call = ToolCallRequest(f"s{i}", "save", {"path": f"f{i}.txt", "content": "w" * 9_000})
            return LLMResponse(text=f"thinking {i} " + "t" * 9_000, tool_calls=[call])
        return LLMResponse(text="done")

    window = 30_000
    llm = Model(model, max_tokens=2_000, context_window=window)
    result = runtime(registry, llm, max_iterations=15).run_tool_loop("go")
    assert result.stop_reason == "final_answer"
    last = requests[-1].messages
    assert estimate_request_tokens(requests[-1]) <= input_limit(window, 2_000)
    assert_calls_answered(last)
    turns = [m for m in last if isinstance(m, AssistantMessage)]
    first, newest = turns[0], turns[-1]
    assert first.text.startswith("[elided to fit the context: 9,0")
    (call,) = first.tool_calls
    assert call.call_id == "s1" and call.tool_name == "save"
    assert call.arguments["path"] == "f1.txt"  # small values stay
    assert call.arguments["content"].startswith("[elided to fit the context")
    assert newest.text.startswith("thinking 14 ") and len(newest.text) > 9_000
    assert newest.tool_calls[0].arguments["content"] == "w" * 9_000


# -- the window -------------------------------------------------------------------------------
def test_a_prompt_that_cannot_fit_ends_the_run_without_calling_the_model() -> None:
    called: list[LLMRequest] = []
    events: list[Any] = []

    def model(request: LLMRequest) -> LLMResponse:
        called.append(request)
        return LLMResponse(text="hi")

    # gpt-4 is in the table with an 8,192-token window.
    llm = Model(model, model="gpt-4-0613", max_tokens=1_000)
    result = runtime(ToolRegistry(), llm, observers=[events.append]).run_tool_loop("p" * 40_000)
    assert called == []
    assert result.stop_reason == "context_exhausted" and result.terminated_by_limit
    assert result.iterations == 0
    assert "no longer fits the model's context window" in result.content
    assert "8,192 tokens" in result.content and "gpt-4-0613" in result.content
    assert isinstance(events[-1], RunFinished)
    assert events[-1].result.stop_reason == "context_exhausted"


def test_the_window_comes_from_the_run_the_runtime_the_caller_or_the_table() -> None:
    prompt = "p" * 40_000  # ~11.5k tokens

    def answer(request: LLMRequest) -> LLMResponse:
        return LLMResponse(text="ok")

    small = Model(answer, model="gpt-4")  # 8,192 in the table
    assert runtime(ToolRegistry(), small).run_tool_loop(prompt).stop_reason == "context_exhausted"
    bigger = runtime(ToolRegistry(), small, context_window=50_000)
    assert bigger.run_tool_loop(prompt).stop_reason == "final_answer"
    assert bigger.run_tool_loop(prompt, context_window=8_000).stop_reason == "context_exhausted"
    own = Model(answer, model="gpt-4", context_window=50_000)
    assert runtime(ToolRegistry(), own).run_tool_loop(prompt).stop_reason == "final_answer"
    # Unknown model, nothing configured: 128k.
    unknown = Model(answer, model="my-local-model")
    assert runtime(ToolRegistry(), unknown).run_tool_loop(prompt).stop_reason == "final_answer"
    huge = "p" * 500_000  # ~143k tokens
    assert runtime(ToolRegistry(), unknown).run_tool_loop(huge).stop_reason == "context_exhausted"
    with pytest.raises(ValueError, match="context_window"):
        runtime(ToolRegistry(), unknown, context_window=0)


def test_calibration_from_reported_tokens_keeps_the_real_count_under_the_limit() -> None:
    """The service counts twice what the estimate says; after one report the guard knows."""
    window, max_tokens = 60_000, 4_000
    limit = input_limit(window, max_tokens)
    real_counts: list[int] = []

    def model(request: LLMRequest) -> LLMResponse:
        real = 2 * estimate_request_tokens(request)
        real_counts.append(real)
        usage = Usage(input_tokens=real, output_tokens=10)
        if request.iteration < 25:
            call = ToolCallRequest(f"c{request.iteration}", "dump", {"n": request.iteration})
            return LLMResponse(tool_calls=[call], usage=usage)
        return LLMResponse(text="done", usage=usage)

    llm = Model(model, max_tokens=max_tokens, context_window=window)
    result = runtime(registry_with_dump(20_000), llm, max_iterations=25).run_tool_loop("x" * 8_000)
    assert result.stop_reason == "final_answer"
    assert max(real_counts) <= limit
    assert max(real_counts) > limit // 2, "the run grew enough to need the calibration"


def test_calibration_only_tightens_and_ignores_tiny_or_absurd_reports() -> None:
    limits = ContextLimits.for_window(100_000, 4_000)
    guard = ContextGuard(limits, fixed_chars=0)
    guard.calibrate(sent_chars=35_000, reported_tokens=8_000)  # 10k estimated, fewer reported
    assert guard.factor == 1.0
    guard.calibrate(sent_chars=35_000, reported_tokens=13_000)
    assert guard.factor == pytest.approx(1.3)
    guard.calibrate(sent_chars=35_000, reported_tokens=11_000)
    assert guard.factor == pytest.approx(1.3)
    guard.calibrate(sent_chars=700, reported_tokens=900)  # 200 tokens: too small to tell
    assert guard.factor == pytest.approx(1.3)
    guard.calibrate(sent_chars=35_000, reported_tokens=400_000)  # 40x: a broken report
    assert guard.factor == pytest.approx(1.3)


class ServiceSaysTooLong(RuntimeError, ContextLengthExceeded):
    """What a provider raises: its own error class, marked as a context-length refusal."""


def test_a_refusal_shrinks_the_conversation_and_retries_once() -> None:
    """The service's real window is far smaller than the guard believes (128k default)."""
    service_limit = 20_000
    requests: list[LLMRequest] = []
    refused: list[int] = []

    def model(request: LLMRequest) -> LLMResponse:
        requests.append(request)
        size = estimate_request_tokens(request)
        if size > service_limit:
            refused.append(request.iteration)
            raise ServiceSaysTooLong(f"prompt is too long: {size} tokens > {service_limit}")
        if request.iteration < 20:
            call = ToolCallRequest(f"c{request.iteration}", "dump", {"n": request.iteration})
            return LLMResponse(tool_calls=[call])
        return LLMResponse(text="done")

    result = runtime(registry_with_dump(20_000), Model(model), max_iterations=20).run_tool_loop(
        "go"
    )
    assert result.stop_reason == "final_answer" and result.iterations == 20
    assert len(refused) == 1, "after one refusal the guard keeps requests small enough"
    (iteration,) = refused
    retry = [r for r in requests if r.iteration == iteration]
    assert len(retry) == 2
    assert estimate_request_tokens(retry[1]) < estimate_request_tokens(retry[0])
    assert_calls_answered(retry[1].messages)
    assert len(result.iteration_usage) == 20  # the refused call reported nothing


def test_a_second_refusal_ends_the_run_with_context_exhausted() -> None:
    def model(request: LLMRequest) -> LLMResponse:
        if request.iteration == 1:
            return LLMResponse(text="reading", tool_calls=[ToolCallRequest("c1", "dump", {"n": 1})])
        raise ServiceSaysTooLong("prompt is too long")

    result = runtime(registry_with_dump(5_000), Model(model)).run_tool_loop("go")
    assert result.stop_reason == "context_exhausted"
    assert result.iterations == 2 and len(result.tool_call_history) == 1
    assert "refused the request as too long (prompt is too long)" in result.content
    assert "refused the shrunk request too" in result.content
    assert result.content.startswith("reading")  # the partial text is kept


def test_a_continued_run_is_elided_to_fit_a_smaller_window() -> None:
    requests: list[LLMRequest] = []
    big = runtime(registry_with_dump(30_000), Model(dump_calls(10, requests)), max_iterations=10)
    first = big.run_tool_loop("go")
    later: list[LLMRequest] = []

    def model(request: LLMRequest) -> LLMResponse:
        later.append(request)
        return LLMResponse(text="summary")

    small = runtime(ToolRegistry(), Model(model, max_tokens=2_000, context_window=40_000))
    second = small.run_tool_loop("sum it up", history=first.messages)
    assert second.stop_reason == "final_answer"
    assert estimate_request_tokens(later[0]) <= input_limit(40_000, 2_000)
    assert any(is_elided(m) for m in later[0].messages)
    assert_calls_answered(later[0].messages)


# -- the stress run from the issue ------------------------------------------------------------
@pytest.mark.parametrize("window", [60_000, 8_000])
def test_a_hundred_iterations_of_one_mib_results_never_exceed_the_window(window: int) -> None:
    """In the small window even the elided turns outgrow it: the oldest are compacted, and
    the run goes on to its own limit instead of ending with context_exhausted."""
    max_tokens = 1_024
    limit = input_limit(window, max_tokens)
    requests: list[LLMRequest] = []
    llm = Model(dump_calls(1_000, requests), max_tokens=max_tokens, context_window=window)
    stress = runtime(registry_with_dump(MiB), llm, max_iterations=100)
    result = stress.run_tool_loop("go")

    assert result.stop_reason == "max_iterations" and len(requests) == 100
    for request in requests:
        assert estimate_request_tokens(request) <= limit
        assert_calls_answered(request.messages)
        assert request.messages[0] == UserMessage("go")
    assert all(len(r.output["data"]) == MiB for r in result.tool_call_history)
    assert len(result.tool_call_history) == 100
    compacted = [r for r in requests if any(is_note(m) for m in r.messages)]
    if window == 8_000:
        assert compacted, "the small window needed compaction"
        assert len(result.messages) == 1 + 2 * 100  # the run's own messages keep every turn
    else:
        assert not compacted


# -- the cache-priced policy ------------------------------------------------------------------
def results_turn(guard: ContextGuard, n: int, size: int) -> None:
    call = ToolCallRequest(f"c{n}", "dump", {"n": n})
    guard.append(AssistantMessage(f"step {n}", (call,)))
    guard.append(ToolResultsMessage((ToolResult(f"c{n}", "dump", {"data": "d" * size}),)))


def test_past_the_trigger_all_but_the_newest_results_are_cleared_in_one_step() -> None:
    policy = ContextPolicy(trigger_tokens=20_000, keep_tool_uses=2, clear_at_least_tokens=5_000)
    guard = ContextGuard(ContextLimits(200_000, 8_000, 4_000), 0, policy)
    guard.append(UserMessage("go"))
    elided_at: list[int] = []
    for n in range(1, 40):
        results_turn(guard, n, 7_000)  # about 2,000 tokens each
        before = guard.elided_messages
        assert guard.fit()
        if guard.elided_messages != before:
            elided_at.append(n)
            flags = [is_elided(m) for m in guard.view if isinstance(m, ToolResultsMessage)]
            # One step clears every result but the newest two.
            assert flags == [True] * (len(flags) - 2) + [False, False]
            assert guard.estimate() < 20_000 * 0.6
        assert guard.estimate() <= 20_000 + 2_100
        assert_calls_answered(guard.view)
    # Rarely, and far apart: the cached prefix is rewritten a few times, not every turn.
    assert 2 <= len(elided_at) <= 6
    assert all(b - a >= 5 for a, b in pairwise(elided_at))


def test_a_step_smaller_than_clear_at_least_is_not_taken() -> None:
    policy = ContextPolicy(trigger_tokens=3_000, keep_tool_uses=1, clear_at_least_tokens=5_000)
    guard = ContextGuard(ContextLimits(200_000, 8_000, 4_000), 0, policy)
    guard.append(UserMessage("x" * 14_000))  # 4,000 tokens of prompt: past the trigger at once
    for n in range(1, 6):
        results_turn(guard, n, 1_000)  # results too small to be worth a rewrite
        assert guard.fit()
    assert guard.elided_messages == 0
    # The window's limit still holds whatever the policy says.
    assert ContextPolicy.at_the_limit().trigger_for(100) is None
    assert policy.trigger_for(2_000) == 2_000
    with pytest.raises(ValueError, match="keep_tool_uses"):
        ContextPolicy(keep_tool_uses=-1)
    with pytest.raises(TypeError, match="trigger_tokens"):
        ContextPolicy(trigger_tokens="many")  # type: ignore[arg-type]
