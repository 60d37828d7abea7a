"""Requests built incrementally: each message converted once, replaced ones anew, none mutated."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from cleveragents.providers.caching import (
    mark_messages,
    marked_tools,
    prompt_caching_enabled,
)
from cleveragents.providers.conversation import MessageConverter, ToolsConverter
from cleveragents.settings_table import ENV_PROMPT_CACHING
from cleveragents.tool import (
    AssistantMessage,
    Message,
    ToolCallRequest,
    ToolResult,
    ToolResultsMessage,
    ToolSchema,
    UserMessage,
)
from cleveragents.tool.router import ToolCallRouter


def anthropic_converter() -> MessageConverter:
    def one(message: Message) -> list[dict[str, object]]:
        converted = ToolCallRouter.to_anthropic_message(message)
        return [] if converted is None else [converted]

    return MessageConverter(one)


def turn(n: int, content: str = "x") -> list[Message]:
    call = ToolCallRequest(f"toolu_{n}", "read_file", {"path": f"f{n}.py"})
    result = ToolResult(call.call_id, "read_file", {"content": content * 10})
    return [AssistantMessage(f"step {n}", (call,)), ToolResultsMessage((result,))]


def conversation(turns: int) -> list[Message]:
    messages: list[Message] = [UserMessage("Do it.")]
    for n in range(1, turns + 1):
        messages.extend(turn(n))
    return messages


def test_each_message_is_converted_once_as_the_conversation_grows() -> None:
    converter = anthropic_converter()
    messages: list[Message] = [UserMessage("Do it.")]
    for n in range(1, 51):
        assert converter.convert(list(messages)) == ToolCallRouter.to_anthropic_messages(messages)
        messages.extend(turn(n))
    assert converter.conversions == 1 + 2 * 49


def test_a_replaced_older_message_is_converted_anew_and_the_rest_reused() -> None:
    converter = anthropic_converter()
    messages = conversation(10)
    converter.convert(messages)
    before = converter.conversions
    elided = list(messages)
    elided[4] = ToolResultsMessage(
        (ToolResult("toolu_2", "read_file", {"elided": "elided to fit the context"}),)
    )
    wire = converter.convert(elided)
    assert converter.conversions == before + 1
    assert wire == ToolCallRouter.to_anthropic_messages(elided)
    assert "elided to fit" in json.dumps(wire[4])


def test_turns_dropped_by_compaction_leave_the_rest_converted_once() -> None:
    converter = anthropic_converter()
    messages = conversation(20)
    converter.convert(messages)
    before = converter.conversions
    note = UserMessage("[Earlier in this conversation: 8 assistant turn(s) ... removed]")
    compacted = [messages[0], note, *messages[17:]]
    wire = converter.convert(compacted)
    assert wire == ToolCallRouter.to_anthropic_messages(compacted)
    assert converter.conversions == before + 1  # only the note is new


def test_a_shorter_or_different_conversation_with_the_same_start_is_right() -> None:
    converter = anthropic_converter()
    messages = conversation(6)
    converter.convert(messages)
    shorter = messages[:5]
    assert converter.convert(shorter) == ToolCallRouter.to_anthropic_messages(shorter)
    branched = [*messages[:3], *turn(99)]
    assert converter.convert(branched) == ToolCallRouter.to_anthropic_messages(branched)


def test_conversations_are_kept_apart_and_a_finished_one_is_forgotten() -> None:
    converter = anthropic_converter()
    first, second = conversation(3), conversation(3)
    converter.convert(first)
    converter.convert(second)
    assert converter.conversions == 14
    converter.convert(first)
    converter.convert(second)
    assert converter.conversions == 14
    converter.forget(first)
    converter.convert(first)
    assert converter.conversions == 21


def test_a_blank_assistant_turn_converts_to_nothing() -> None:
    converter = anthropic_converter()
    messages: list[Message] = [UserMessage("a"), AssistantMessage("  "), UserMessage("b")]
    assert [m["content"] for m in converter.convert(messages)] == ["a", "b"]


def test_openai_results_become_one_message_each() -> None:
    converter = MessageConverter(ToolCallRouter.to_openai_message)
    messages = conversation(2)
    assert converter.convert(messages) == ToolCallRouter.to_openai_messages(messages)


def test_marks_go_on_copies_and_never_change_converted_dicts() -> None:
    converter = anthropic_converter()
    messages = conversation(3)
    wire = converter.convert(messages)
    pristine = copy.deepcopy(wire)
    marked = list(wire)
    assert mark_messages(marked, 2) == 2
    assert wire == pristine and converter.convert(messages) == pristine
    assert marked[-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert marked[-3]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in json.dumps(marked[:-3])
    # A user prompt sent as a string is marked as one text block.
    prompt: list[dict[str, Any]] = [{"role": "user", "content": "hello"}]
    mark_messages(prompt)
    assert prompt[0]["content"] == [
        {"type": "text", "text": "hello", "cache_control": {"type": "ephemeral"}}
    ]


def test_tools_are_converted_again_only_when_they_change() -> None:
    calls: list[int] = []

    def convert(tools: object) -> list[dict[str, object]]:
        calls.append(1)
        return ToolCallRouter.to_anthropic_tools(tools)  # type: ignore[arg-type]

    schema = ToolSchema("t", "A tool.", {"type": "object", "properties": {}})
    tools = ToolsConverter(convert)
    first = tools([schema])
    assert tools([schema]) == first and len(calls) == 1
    assert tools([ToolSchema("t", "A tool.", {"type": "object", "properties": {}})]) == first
    assert len(calls) == 1
    tools([schema, ToolSchema("u", "Another.", {"type": "object"})])
    assert len(calls) == 2
    assert "cache_control" in marked_tools(first)[-1] and "cache_control" not in first[-1]


@pytest.mark.parametrize(
    ("value", "expected"), [(None, True), ("1", True), ("0", False), ("off", False), ("no", False)]
)
def test_the_environment_turns_caching_off(
    monkeypatch: pytest.MonkeyPatch, value: str | None, expected: bool
) -> None:
    if value is None:
        monkeypatch.delenv(ENV_PROMPT_CACHING, raising=False)
    else:
        monkeypatch.setenv(ENV_PROMPT_CACHING, value)
    assert prompt_caching_enabled() is expected
    assert prompt_caching_enabled(True) is True and prompt_caching_enabled(False) is False


def test_the_provider_factory_passes_the_caching_and_window_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cleveragents.providers import create_llm_caller
    from cleveragents.providers.anthropic import AnthropicCaller
    from cleveragents.providers.openai import OpenAICaller

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.delenv(ENV_PROMPT_CACHING, raising=False)
    for provider in ("anthropic", "openai"):
        caller = create_llm_caller(
            provider, "some-model", cache=False, context_window=32_000, max_tokens=2_000
        )
        assert isinstance(caller, AnthropicCaller | OpenAICaller)
        assert caller.cache is False
        assert caller.context_window == 32_000
        assert caller.max_tokens == 2_000
        default = create_llm_caller(provider, "some-model")
        assert isinstance(default, AnthropicCaller | OpenAICaller) and default.cache is True
    monkeypatch.setenv(ENV_PROMPT_CACHING, "0")
    off = create_llm_caller("anthropic", "some-model")
    assert isinstance(off, AnthropicCaller) and off.cache is False
