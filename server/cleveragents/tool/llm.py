"""The `LLMCaller` protocol: how the runtime talks to a model, whatever the provider."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Protocol, runtime_checkable

from .messages import LLMRequest, LLMResponse

TextSink = Callable[[str], None]
"""Receives assistant text as it streams; providers that do not stream call it once."""


@runtime_checkable
class LLMCaller(Protocol):
    """One model invocation: the conversation and tool schemas in, text and tool calls out.

    `on_text` receives text deltas while the response streams. Implementations raise on
    transport failures (after their own retries); the runtime lets such errors propagate.
    """

    async def complete(
        self, request: LLMRequest, on_text: TextSink | None = None
    ) -> LLMResponse: ...


LLMFunction = Callable[[LLMRequest], LLMResponse | Awaitable[LLMResponse]]


class FunctionLLMCaller:
    """Adapts a plain function (sync or async) taking an `LLMRequest` into an `LLMCaller`.

    The quickest way to script a model in tests and examples, like pydantic-ai's FunctionModel.
    """

    def __init__(self, function: LLMFunction) -> None:
        self.function = function

    async def complete(self, request: LLMRequest, on_text: TextSink | None = None) -> LLMResponse:
        response = self.function(request)
        if inspect.isawaitable(response):
            response = await response
        if not isinstance(response, LLMResponse):
            raise TypeError(
                f"LLM function returned {type(response).__name__}, expected LLMResponse"
            )
        if on_text is not None and response.text:
            on_text(response.text)
        return response


def as_llm_caller(caller: object) -> LLMCaller:
    """Accept an `LLMCaller` or a plain function; anything else is a TypeError."""
    if isinstance(caller, LLMCaller):
        return caller
    if callable(caller):
        return FunctionLLMCaller(caller)
    raise TypeError(f"llm_caller must be an LLMCaller or a callable, not {type(caller).__name__}")
