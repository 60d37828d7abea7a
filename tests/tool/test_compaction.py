"""Compaction: a long run drops its oldest turns whole, leaves a factual note, and goes on to
its own end; calls and results are never separated, in either provider's format."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cleveragents.providers.anthropic import AnthropicCaller
from cleveragents.providers.openai import OpenAICaller
from cleveragents.service.history import RunHistory
from cleveragents.tool import (
    AssistantMessage,
    FunctionLLMCaller,
    LLMRequest,
    LLMResponse,
    ToolActorContext,
    ToolCallingRuntime,
    ToolCallRequest,
    ToolRegistry,
    ToolResultsMessage,
    ToolRunner,
    Usage,
    UserMessage,
)
from cleveragents.tool.compaction import NOTE_MARKER, SUMMARY_SYSTEM, is_note
from cleveragents.tool.context_guard import ContextGuard, ContextLimits, estimate_request_tokens
from cleveragents.tool.context_policy import ContextPolicy
from cleveragents.tool.messages import ToolResult
from cleveragents.tool.models import DEFAULT_CONTEXT_WINDOW
from cleveragents.workspace import register_builtin_tools
from support import fake_anthropic, fake_openai
from support.context_window import assert_calls_answered, input_limit


# -- the 2,000-iteration run ------------------------------------------------------------------
def test_two_thousand_small_iterations_on_the_default_window_end_with_the_answer(
    tmp_path: Path,
) -> None:
    calls = 2_000
    registry = ToolRegistry()

    @registry.tool
    def tick(n: int) -> dict[str, Any]:
        """Count one step."""
        return {"n": n, "ok": True}

    checked: list[int] = []
    notes: list[str] = []
    limit = input_limit(DEFAULT_CONTEXT_WINDOW, 8_192)

    def model(request: LLMRequest) -> LLMResponse:
        i = request.iteration
        messages = request.messages
        note = next((m.text for m in messages[:3] if is_note(m)), None)
        if note is not None and (not notes or notes[-1] != note):
            notes.append(note)
            checked.append(i)
            assert_calls_answered(messages)
            assert estimate_request_tokens(request) <= limit
        elif i % 100 == 0:
            checked.append(i)
            assert_calls_answered(messages)
            assert estimate_request_tokens(request) <= limit
        assert messages[0] == UserMessage("count to 2,000, one tick at a time")
        if i <= calls:
            call = ToolCallRequest(f"t{i}", "tick", {"n": i})
            return LLMResponse(text=f"Tick {i} of {calls}.", tool_calls=[call])
        return LLMResponse(text=f"Counted to {calls}.")

    history = RunHistory(tmp_path / "history.sqlite3")
    try:
        runtime = ToolCallingRuntime(
            registry,
            ToolRunner(registry),
            FunctionLLMCaller(model),
            max_iterations=calls + 1,
            observers=[history],
        )
        result = runtime.run_tool_loop("count to 2,000, one tick at a time")
        assert result.stop_reason == "final_answer", result.content
        assert result.content == f"Counted to {calls}."
        assert result.iterations == calls + 1
        assert len(result.tool_call_history) == calls
        assert all(r.success for r in result.tool_call_history)
        # The run's own conversation keeps every turn (a continued run starts from it).
        assert len(result.messages) == 1 + 2 * calls + 1
        stored = history.get_run(result.run_id)
        assert stored is not None and stored.status == "finished"
        assert len(stored.records) == calls
        assert [r.inputs["n"] for r in stored.records] == list(range(1, calls + 1))
    finally:
        history.close()
    assert notes, "the run outgrew the window: it had to compact"
    # Compaction takes large steps: a note is written rarely, not every turn.
    assert len(notes) < 20
    assert all("tick x" in note for note in notes)
    # Each note covers more than the one before; its size stays bounded.
    assert all(len(note) < 4_000 for note in notes)


# -- the note ---------------------------------------------------------------------------------
def sandboxed_runtime(tmp_path: Path, llm: Any, **kwargs: Any) -> tuple[ToolCallingRuntime, Any]:
    registry = ToolRegistry()
    register_builtin_tools(registry)
    runtime = ToolCallingRuntime(registry, ToolRunner(registry), llm, **kwargs)
    return runtime, ToolActorContext(sandbox_root=str(tmp_path), automation_profile="full-auto")


def test_the_note_says_which_files_were_read_and_changed_and_which_commands_ran(
    tmp_path: Path,
) -> None:
    (tmp_path / "src.py").write_text("x = 1\n" * 400)
    script: list[tuple[str, dict[str, Any]]] = [
        ("read_file", {"path": "src.py"}),
        ("write_file", {"path": "out.txt", "content": "hello\n" * 300 + "END\n"}),
        ("run_command", {"command": "exit 3"}),
        ("run_command", {"command": "echo ok"}),
        ("edit_file", {"path": "out.txt", "old_text": "END", "new_text": "THE END"}),
        ("read_file", {"path": "missing.py"}),
        ("list_dir", {"path": "."}),
    ]
    script += [("glob", {"pattern": f"*{i}.py"}) for i in range(30)]
    requests: list[LLMRequest] = []

    def model(request: LLMRequest) -> LLMResponse:
        requests.append(request)
        i = request.iteration
        if i <= len(script):
            name, arguments = script[i - 1]
            text = f"Step {i}: calling {name}. " + "Reasoning about it. " * 40
            return LLMResponse(text=text, tool_calls=[ToolCallRequest(f"c{i}", name, arguments)])
        return LLMResponse(text="done")

    class Small(FunctionLLMCaller):
        context_window = 6_000
        max_tokens = 500

    runtime, context = sandboxed_runtime(tmp_path, Small(model), max_iterations=len(script) + 1)
    result = runtime.run_tool_loop("do the chores", context)
    assert result.stop_reason == "final_answer", result.content
    notes = [m.text for r in requests for m in r.messages if is_note(m)]
    assert notes
    note = notes[-1]
    assert note.startswith(NOTE_MARKER)
    assert "Files read: src.py" in note
    assert "Files changed: out.txt (edit_file)" in note
    assert "`exit 3` -> exit 3" in note and "`echo ok` -> exit 0" in note
    assert "list_dir x1" in note
    assert "Failed calls: 1 (" in note  # the missing file
    assert "read_file x" not in note  # ... which is not among the other calls
    assert 'Your last words before this point: "Step' in note
    for request in requests:
        assert_calls_answered(request.messages)
        assert request.messages[0] == UserMessage("do the chores")
    # Deterministic: the same run (out.txt written anew) gives the same notes.
    requests.clear()
    runtime.run_tool_loop("do the chores", context)
    assert [m.text for r in requests for m in r.messages if is_note(m)] == notes


def test_a_continued_conversation_keeps_its_first_message_and_the_new_prompt() -> None:
    guard = ContextGuard(ContextLimits(20_000, 1_000, 1_000), 0, ContextPolicy.at_the_limit())
    first = UserMessage("the original task")
    guard.append(first)
    for i in range(60):
        call = ToolCallRequest(f"c{i}", "tick", {"n": i})
        guard.append(AssistantMessage(f"turn {i} " + "t" * 200, (call,)))
        guard.append(ToolResultsMessage((ToolResult(f"c{i}", "tick", {"n": i}),)))
    guard.append(AssistantMessage("the earlier run's answer"))
    prompt = UserMessage("now go on")
    guard.append(prompt)
    guard.pin(prompt)
    for i in range(60, 400):
        call = ToolCallRequest(f"c{i}", "tick", {"n": i})
        guard.append(AssistantMessage(f"turn {i} " + "t" * 200, (call,)))
        guard.append(ToolResultsMessage((ToolResult(f"c{i}", "tick", {"n": i}),)))
        assert guard.fit()
        assert_calls_answered(guard.view)
        assert guard.view[0] is first
        assert prompt in guard.view
    assert guard.compactions >= 2
    (note,) = [m for m in guard.view if is_note(m)]
    assert guard.view.index(note) == guard.view.index(prompt) + 1
    assert "1 older user message(s)" not in note.text  # pinned ones are never dropped
    assert "tick x" in note.text


# -- both providers through their SDKs and the strict fakes -----------------------------------
STEPS = 40


def dump_registry() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool
    def dump(n: int) -> dict[str, Any]:
        """Return a chunk of data."""
        return {"n": n, "data": f"{n:04d}" * 500}

    return registry


def run_through(caller: Any) -> Any:
    registry = dump_registry()
    runtime = ToolCallingRuntime(
        registry, ToolRunner(registry), caller, max_iterations=STEPS + 1, system_prompt="Be brief."
    )

    async def go() -> Any:
        try:
            return await runtime.arun_tool_loop("dump everything")
        finally:
            await caller.aclose()

    return asyncio.run(go())


def anthropic_turn(n: int) -> fake_anthropic.StreamReply:
    return fake_anthropic.StreamReply(
        [
            fake_anthropic.Text([f"Dumping {n}. " + "Because. " * 30]),
            fake_anthropic.ToolUse(f"toolu_{n:03d}", "dump", [json.dumps({"n": n})]),
        ],
        stop_reason="tool_use",
    )


@pytest.mark.parametrize("cache", [True, False])
def test_anthropic_a_compacted_conversation_keeps_every_call_with_its_result(
    cache: bool,
) -> None:
    window = 6_000
    with fake_anthropic.FakeAnthropic(context_window=window) as server:
        server.push(*(anthropic_turn(n) for n in range(1, STEPS + 1)))
        server.push(fake_anthropic.StreamReply([fake_anthropic.Text(["All dumped."])]))
        caller = AnthropicCaller(
            "claude-sonnet-4-5",
            api_key=fake_anthropic.API_KEY,
            base_url=server.base_url,
            max_tokens=500,
            max_retries=0,
            cache=cache,
            context_window=window,
        )
        result = run_through(caller)
        bodies = [r.body for r in server.requests]
        refused = [r for r in server.requests if r.usage is None]
    # The fake refuses (400) a tool_use without its tool_result and a tool_result without
    # its tool_use: every request was served, so none was separated.
    assert not refused
    assert result.stop_reason == "final_answer" and result.content == "All dumped."
    assert len(bodies) == STEPS + 1
    compacted = [b for b in bodies if NOTE_MARKER in json.dumps(b["messages"])]
    assert compacted, "the small window made the guard compact"
    for body in compacted:
        assert blocks(body, "tool_use", "id") == blocks(body, "tool_result", "tool_use_id")


def blocks(body: dict[str, Any], kind: str, key: str) -> list[str]:
    """`key` of every content block of type `kind` in a Messages API request, in order."""
    return [
        block[key]
        for message in body["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == kind
    ]


def openai_turn(n: int) -> fake_openai.StreamReply:
    return (
        fake_openai.ChunkScript()
        .text(f"Dumping {n}. " + "Because. " * 30)
        .tool_call_start(0, f"call_{n:03d}", "dump")
        .tool_arguments(0, json.dumps({"n": n}))
        .finish("tool_calls")
        .usage(None, 20)
        .reply()
    )


def test_openai_a_compacted_conversation_keeps_every_call_with_its_result() -> None:
    window = 6_000
    with fake_openai.FakeOpenAIServer(context_window=window) as server:
        server.enqueue(*(openai_turn(n) for n in range(1, STEPS + 1)))
        server.enqueue(fake_openai.text_reply("All dumped."))
        caller = OpenAICaller(
            "gpt-4.1",
            api_key="sk-test",
            base_url=server.base_url,
            max_tokens=500,
            max_retries=0,
            context_window=window,
        )
        result = run_through(caller)
        bodies = server.bodies
        refused = [r for r in server.requests if r.usage is None]
    assert not refused
    assert result.stop_reason == "final_answer" and result.content == "All dumped."
    compacted = [b for b in bodies if NOTE_MARKER in json.dumps(b["messages"])]
    assert compacted
    for body in compacted:
        asked = [c["id"] for m in body["messages"] for c in m.get("tool_calls") or ()]
        answered = [m["tool_call_id"] for m in body["messages"] if m["role"] == "tool"]
        assert asked == answered


@pytest.mark.parametrize(
    "messages",
    [
        # A tool message whose call was dropped.
        [
            {"role": "user", "content": "go"},
            {"role": "tool", "tool_call_id": "call_1", "content": "{}"},
        ],
        # A call whose tool message was dropped.
        [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "f", "arguments": "{}"},
                    }
                ],
            },
            {"role": "user", "content": "and?"},
        ],
    ],
)
def test_the_openai_fake_refuses_a_call_apart_from_its_result(
    messages: list[dict[str, Any]],
) -> None:
    with fake_openai.FakeOpenAIServer() as server:
        server.enqueue(fake_openai.text_reply("never sent"))
        caller = OpenAICaller("gpt-4.1", api_key="sk-test", base_url=server.base_url, max_retries=0)

        async def go() -> None:
            try:
                await caller.client.chat.completions.create(
                    model="gpt-4.1",
                    messages=messages,  # type: ignore[arg-type]  # malformed on purpose
                    stream=True,
                )
            finally:
                await caller.aclose()

        import openai

        with pytest.raises(openai.BadRequestError, match="tool"):
            asyncio.run(go())
        assert server.pending == 1


def test_the_anthropic_fake_refuses_a_call_apart_from_its_result() -> None:
    orphan_result: Callable[[], list[dict[str, Any]]] = lambda: [  # noqa: E731
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "ok"},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "{}"}],
        },
    ]
    with fake_anthropic.FakeAnthropic() as server:
        caller = AnthropicCaller(
            "claude-sonnet-4-5",
            api_key=fake_anthropic.API_KEY,
            base_url=server.base_url,
            max_retries=0,
        )

        async def go() -> None:
            try:
                await caller.client.messages.create(
                    model="claude-sonnet-4-5",
                    max_tokens=10,
                    messages=orphan_result(),  # type: ignore[arg-type]  # malformed on purpose
                    stream=True,
                )
            finally:
                await caller.aclose()

        import anthropic

        with pytest.raises(anthropic.BadRequestError, match="tool_use_id"):
            asyncio.run(go())


# -- the model-written summary ----------------------------------------------------------------
def summary_run(
    summarise: Callable[[LLMRequest], LLMResponse], enabled: bool = True
) -> tuple[Any, list[LLMRequest], list[LLMRequest]]:
    registry = dump_registry()
    main: list[LLMRequest] = []
    asked: list[LLMRequest] = []

    def model(request: LLMRequest) -> LLMResponse:
        if request.system == SUMMARY_SYSTEM:
            asked.append(request)
            return summarise(request)
        main.append(request)
        i = request.iteration
        usage = Usage(input_tokens=1_000, output_tokens=10)
        if i <= STEPS:
            call = ToolCallRequest(f"d{i}", "dump", {"n": i})
            return LLMResponse(text=f"Dumping {i}.", tool_calls=[call], usage=usage)
        return LLMResponse(text="All dumped.", usage=usage)

    class Small(FunctionLLMCaller):
        context_window = 6_000
        max_tokens = 500

    runtime = ToolCallingRuntime(
        registry,
        ToolRunner(registry),
        Small(model),
        max_iterations=STEPS + 1,
        compaction_summary=enabled,
    )
    return runtime.run_tool_loop("dump everything"), main, asked


def test_with_the_setting_the_model_summarises_what_compaction_dropped() -> None:
    def summarise(request: LLMRequest) -> LLMResponse:
        (message,) = request.messages
        assert isinstance(message, UserMessage) and request.tools == []
        assert "Conversation being removed:" in message.text and "call dump" in message.text
        done = message.text.count("call dump")
        return LLMResponse(
            text=f"Dumped {done} chunks; nothing failed.",
            usage=Usage(input_tokens=500, output_tokens=20),
        )

    result, main, asked = summary_run(summarise)
    assert result.stop_reason == "final_answer" and result.content == "All dumped."
    assert asked, "the run compacted, so the model was asked"
    notes = [m.text for r in main for m in r.messages if is_note(m)]
    assert notes and "Summary of the removed turns" in notes[-1]
    assert "chunks; nothing failed." in notes[-1]
    assert notes[-1].startswith(NOTE_MARKER)  # the factual note stays first
    # A later summary is asked with the one before it.
    if len(asked) > 1:
        summarised = asked[1].messages[0]
        assert isinstance(summarised, UserMessage)
        assert "Summary so far:\nDumped" in summarised.text
    # The summaries are billed: each with the iteration whose compaction asked for it.
    assert result.usage.input_tokens == 1_000 * len(main) + 500 * len(asked)
    total = Usage()
    for usage in result.iteration_usage:
        total.add(usage)
    assert total == result.usage
    for request in main:
        assert_calls_answered(request.messages)


def test_a_failed_summary_leaves_the_factual_note_and_the_run_goes_on() -> None:
    def summarise(request: LLMRequest) -> LLMResponse:
        raise RuntimeError("the model is down")

    result, main, asked = summary_run(summarise)
    assert result.stop_reason == "final_answer" and asked
    notes = [m.text for r in main for m in r.messages if is_note(m)]
    assert notes and all("Summary of the removed turns" not in n for n in notes)


def test_without_the_setting_no_summary_is_asked() -> None:
    def summarise(request: LLMRequest) -> LLMResponse:
        raise AssertionError("not asked")

    result, main, asked = summary_run(summarise, enabled=False)
    assert result.stop_reason == "final_answer" and not asked
    assert any(is_note(m) for r in main for m in r.messages)
