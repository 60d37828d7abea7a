"""Stop means stop, in the core: after a cancel, no model request, no tool call, no question.

Every front (daemon, ACP, CLI) inherits this from the runtime; the front tests drive the same
orders over their wires. Each test runs 20 times (seeds), since a race hides in the 1 in 20:
the seed picks the order of the cancel and the answer, and the thread the cancel comes from.
"""

from __future__ import annotations

import asyncio
import random
import threading
from pathlib import Path
from typing import Any

import pytest

from cleveragents.tool import (
    ApprovalRequest,
    CancelToken,
    IterationStarted,
    LLMRequest,
    LLMResponse,
    RunEvent,
    RunFinished,
    TextDelta,
    ToolActorContext,
    ToolCallFinished,
    ToolCallingRuntime,
    ToolCallRequest,
    ToolCallStarted,
    ToolRegistry,
    ToolRunner,
)
from cleveragents.tool.cancel import unless_cancelled
from cleveragents.tool.llm import TextSink

SEEDS = range(20)
WAIT_S = 10.0  # a ceiling against hangs, never a timing assertion


def write_tools(folder: Path) -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(mutating=True)
    def write_note(name: str, text: str) -> str:
        """Write a file in the test's folder."""
        (folder / name).write_text(text, encoding="utf-8")
        return "written"

    @registry.tool
    def look() -> str:
        """Read nothing; answers at once."""
        return "nothing here"

    return registry


class ScriptedModel:
    """Asks for `write_note` at every step (a new file each time); keeps every request."""

    def __init__(self) -> None:
        self.requests: list[LLMRequest] = []

    async def complete(self, request: LLMRequest, on_text: TextSink | None = None) -> LLMResponse:
        self.requests.append(request)
        n = request.iteration
        return LLMResponse(
            text=f"Step {n}.",
            tool_calls=[ToolCallRequest(f"c{n}", "write_note", {"name": f"n{n}.txt", "text": "x"})],
        )


class Asked:
    """An approver whose questions the test answers: each one is a future."""

    def __init__(self) -> None:
        self.questions: list[tuple[ApprovalRequest, asyncio.Future[Any]]] = []
        self.withdrawn = 0
        self._arrived = asyncio.Event()

    async def __call__(self, request: ApprovalRequest) -> Any:
        answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.questions.append((request, answer))
        self._arrived.set()
        try:
            return await answer
        except asyncio.CancelledError:
            self.withdrawn += 1
            raise

    async def first(self) -> asyncio.Future[Any]:
        await asyncio.wait_for(self._arrived.wait(), WAIT_S)
        return self.questions[0][1]


def cancel_from_another_thread(token: CancelToken) -> None:
    thread = threading.Thread(target=token.cancel)
    thread.start()
    thread.join()


def after_the_cancel(events: list[RunEvent], mark: int) -> list[RunEvent]:
    """What the run said after the cancel, its own end and the pending call's record aside."""
    return [e for e in events[mark:] if not isinstance(e, (ToolCallFinished, RunFinished))]


@pytest.mark.parametrize("seed", SEEDS)
async def test_a_cancel_while_an_approval_is_open_wins_over_any_answer(
    seed: int, tmp_path: Path
) -> None:
    rng = random.Random(seed)
    order = rng.choice(
        ["cancel_then_answer", "answer_then_cancel", "thread_cancel_then_answer", "answer_cancel"]
    )
    answer = (
        "cancel" if order == "answer_cancel" else rng.choice(["deny", "allow", "allow_for_run"])
    )
    model, asked, token = ScriptedModel(), Asked(), CancelToken()
    events: list[RunEvent] = []
    registry = write_tools(tmp_path)
    runtime = ToolCallingRuntime(registry, ToolRunner(registry), model, max_iterations=5)
    run = asyncio.ensure_future(
        runtime.arun_tool_loop(
            "write notes",
            ToolActorContext(automation_profile="ask"),
            approver=asked,
            cancel=token,
            observers=[events.append],
        )
    )
    question = await asked.first()
    mark = len(events)
    # Both in one loop turn (as a client's cancel and answer read from one write are).
    if order == "cancel_then_answer":
        token.cancel()
        # Withdrawn inside cancel() itself: the late answer has no question to go to.
        assert question.cancelled()
    elif order == "answer_then_cancel":
        question.set_result(answer)
        token.cancel()
    elif order == "thread_cancel_then_answer":
        cancel_from_another_thread(token)  # its callback waits for the next loop turn
        question.set_result(answer)
    else:
        question.set_result("cancel")
    result = await asyncio.wait_for(run, WAIT_S)

    assert token.cancelled, order
    assert result.stop_reason == "cancelled", order
    assert len(model.requests) == 1, order  # no model request after the cancel
    assert len(asked.questions) == 1, order  # no question after it
    assert [(r.call_id, r.error_kind) for r in result.tool_call_history] == [("c1", "cancelled")]
    assert "waited for approval" in (result.tool_call_history[0].error or "")
    assert list(tmp_path.iterdir()) == [], order  # nothing written
    assert after_the_cancel(events, mark) == [], order
    assert result.content == "Step 1."  # the partial content is kept
    if order == "answer_cancel":
        assert asked.withdrawn == 0  # answered, not withdrawn
    elif order != "answer_then_cancel":
        assert asked.withdrawn == 1, order  # the open question was taken back


@pytest.mark.parametrize("seed", SEEDS)
async def test_a_cancel_during_the_model_stream_aborts_it(seed: int, tmp_path: Path) -> None:
    from_thread = random.Random(seed).random() < 0.5
    streaming, aborted = asyncio.Event(), asyncio.Event()
    requests: list[LLMRequest] = []

    class SlowStream:
        async def complete(
            self, request: LLMRequest, on_text: TextSink | None = None
        ) -> LLMResponse:
            requests.append(request)
            assert on_text is not None
            if request.iteration == 1:
                on_text("Looked.")
                return LLMResponse(text="Looked.", tool_calls=[ToolCallRequest("c1", "look", {})])
            try:
                on_text("Half a")
                streaming.set()
                await asyncio.Event().wait()  # the rest never comes
            except asyncio.CancelledError:
                on_text(" sentence")  # what a stream had buffered when it was aborted
                aborted.set()
                raise
            raise AssertionError("unreachable")

    token = CancelToken()
    events: list[RunEvent] = []
    registry = write_tools(tmp_path)
    runtime = ToolCallingRuntime(registry, ToolRunner(registry), SlowStream())
    run = asyncio.ensure_future(
        runtime.arun_tool_loop("look", cancel=token, observers=[events.append])
    )
    await asyncio.wait_for(streaming.wait(), WAIT_S)
    mark = len(events)
    if from_thread:
        cancel_from_another_thread(token)
    else:
        token.cancel()
    result = await asyncio.wait_for(run, WAIT_S)

    assert aborted.is_set()  # the request was aborted, not left to finish
    assert result.stop_reason == "cancelled"
    assert len(requests) == 2
    assert result.content == "Looked."  # the finished step's text is kept
    assert after_the_cancel(events, mark) == []  # not even the buffered delta
    assert [r.error_kind for r in result.tool_call_history] == [None]


@pytest.mark.parametrize("seed", SEEDS)
async def test_a_cancel_from_a_running_tool_starts_no_later_call(seed: int, tmp_path: Path) -> None:
    """The cancel lands while a call of a batch runs (from its thread or the loop's): the
    calls after it never start, and no model request follows."""
    from_thread = random.Random(seed).random() < 0.5
    token = CancelToken()
    registry = ToolRegistry()
    ran: list[str] = []

    @registry.tool(mutating=True)
    def stop_here() -> str:
        """Cancels the run from the tool's own thread."""
        ran.append("stop_here")
        token.cancel()
        return "stopped"

    @registry.tool(mutating=True)
    async def stop_here_async() -> str:
        """Cancels the run from the event loop's thread."""
        ran.append("stop_here")
        token.cancel()
        await asyncio.sleep(0)
        return "stopped"

    @registry.tool(mutating=True)
    def write_note(name: str) -> str:
        """Write a file."""
        ran.append("write_note")
        (tmp_path / name).write_text("x", encoding="utf-8")
        return "written"

    requests: list[LLMRequest] = []

    def model(request: LLMRequest) -> LLMResponse:
        requests.append(request)
        first = "stop_here" if from_thread else "stop_here_async"
        return LLMResponse(
            tool_calls=[
                ToolCallRequest("c1", first, {}),
                ToolCallRequest("c2", "write_note", {"name": "late.txt"}),
            ]
        )

    events: list[RunEvent] = []
    runtime = ToolCallingRuntime(registry, ToolRunner(registry), model)
    result = await asyncio.wait_for(
        runtime.arun_tool_loop("go", cancel=token, observers=[events.append]), WAIT_S
    )
    assert result.stop_reason == "cancelled"
    assert ran == ["stop_here"] and len(requests) == 1
    assert not (tmp_path / "late.txt").exists()
    started = [e.call_id for e in events if isinstance(e, ToolCallStarted)]
    assert started == ["c1"]
    assert [(r.call_id, r.error_kind) for r in result.tool_call_history] == [
        ("c1", "cancelled"),
        ("c2", "cancelled"),
    ]
    assert not any(isinstance(e, IterationStarted) and e.iteration > 1 for e in events)


async def test_an_already_cancelled_token_sends_no_request_and_asks_nothing(
    tmp_path: Path,
) -> None:
    model, asked, token = ScriptedModel(), Asked(), CancelToken()
    token.cancel()
    registry = write_tools(tmp_path)
    events: list[RunEvent] = []
    result = await ToolCallingRuntime(registry, ToolRunner(registry), model).arun_tool_loop(
        "go", approver=asked, cancel=token, observers=[events.append]
    )
    assert result.stop_reason == "cancelled" and model.requests == [] and asked.questions == []
    assert isinstance(events[-1], RunFinished)
    assert not any(isinstance(e, (ToolCallStarted, TextDelta)) for e in events)


async def test_a_cancel_answer_without_a_token_still_ends_the_run(tmp_path: Path) -> None:
    async def stop(request: ApprovalRequest) -> Any:
        return "cancel"

    model = ScriptedModel()
    registry = write_tools(tmp_path)
    result = await ToolCallingRuntime(registry, ToolRunner(registry), model).arun_tool_loop(
        "go", ToolActorContext(automation_profile="ask"), approver=stop
    )
    assert result.stop_reason == "cancelled" and len(model.requests) == 1
    assert [r.error_kind for r in result.tool_call_history] == ["cancelled"]
    assert list(tmp_path.iterdir()) == []


async def test_unless_cancelled_withdraws_an_open_question_and_never_asks_after() -> None:
    token = CancelToken()
    started, withdrawn = asyncio.Event(), asyncio.Event()

    async def question() -> bool:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            withdrawn.set()
            raise
        return True

    asking = asyncio.ensure_future(unless_cancelled(token, question()))
    await asyncio.wait_for(started.wait(), WAIT_S)
    token.cancel()
    assert await asyncio.wait_for(asking, WAIT_S) is None and withdrawn.is_set()

    asked: list[str] = []

    async def never() -> bool:
        asked.append("asked")
        return True

    assert await unless_cancelled(token, never()) is None and asked == []
    assert await unless_cancelled(CancelToken(), never()) is True


async def test_unless_cancelled_passes_on_a_cancel_of_its_caller() -> None:
    token = CancelToken()
    started = asyncio.Event()

    async def question() -> bool:
        started.set()
        await asyncio.Event().wait()
        return True

    asking = asyncio.ensure_future(unless_cancelled(token, question()))
    await asyncio.wait_for(started.wait(), WAIT_S)
    asking.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asking
