"""What the context-window tests share: the documented input limit, and the check that a
conversation the runtime sends answers every tool call it holds."""

from __future__ import annotations

from collections.abc import Sequence

from cleveragents.tool import AssistantMessage, Message, ToolResultsMessage


def input_limit(window: int, max_tokens: int) -> int:
    """The documented rule: window - the answer's room - max(1,024, 2% of the window)."""
    return window - max_tokens - max(1_024, window // 50)


def assert_calls_answered(messages: Sequence[Message]) -> None:
    """Every assistant turn with calls is followed by the results of exactly those calls, and
    every results message answers the turn just before it (none is left without its call)."""
    for index, message in enumerate(messages):
        if isinstance(message, AssistantMessage) and message.tool_calls:
            answer = messages[index + 1]
            assert isinstance(answer, ToolResultsMessage), f"message {index + 1}"
            assert [r.call_id for r in answer.results] == [c.call_id for c in message.tool_calls]
        if isinstance(message, ToolResultsMessage):
            assert isinstance(messages[index - 1], AssistantMessage), f"orphaned results {index}"
