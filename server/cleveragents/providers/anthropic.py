"""AnthropicCaller: the `LLMCaller` for Claude, over the official SDK's streaming Messages API.

The SDK is imported when a caller is built, never at module import, so `cleveragents.tool`
and this module stay importable without it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..tool.llm import TextSink
from ..tool.messages import LLMRequest, LLMResponse, Message, ToolCallRequest
from ..tool.records import Usage
from ..tool.router import ANTHROPIC_CONTENT, ToolCallRouter, loads_strict
from .caching import (
    MAX_BREAKPOINTS,
    MESSAGE_BREAKPOINTS,
    mark_messages,
    marked_system,
    marked_tools,
    prompt_caching_enabled,
)
from .conversation import MessageConverter, ToolsConverter
from .errors import ProviderContextLengthError, ProviderError

if TYPE_CHECKING:
    from anthropic import APIError, AsyncAnthropic
    from anthropic.types import RawMessageStreamEvent

DEFAULT_MODEL = "claude-sonnet-5-5"
DEFAULT_MAX_TOKENS = 16000

# Thinking blocks in the latest assistant turn must go back byte for byte, and our
# provider-neutral history does not carry them; so we keep the turns we received, keyed by
# their tool_use ids, for as many turns as a few concurrent runs need.
_THINKING_TYPES = frozenset({"thinking", "redacted_thinking"})

_HINTS = {
    "authentication_error": "Check that ANTHROPIC_API_KEY holds a valid Anthropic API key.",
    "permission_error": "This API key may not make this request; check its workspace and "
    "model access.",
    "not_found_error": "Check the model name ({model!r}) and the base URL ({base_url}).",
    "request_too_large": "The request is larger than the API accepts; the conversation must "
    "shrink.",
    "context_length": "The conversation no longer fits the model's context window; it must shrink.",
    "rate_limit_error": "Rate limited{retries}; wait a minute and try again, or run fewer "
    "requests at once.",
    "overloaded_error": "Anthropic's API is overloaded{retries}; try again in a few minutes.",
    "api_error": "Anthropic's API failed{retries}; try again shortly.",
}
_TYPE_BY_STATUS = {
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


# What the API says when a request holds more tokens than the model reads (400
# invalid_request_error): "prompt is too long: 210000 tokens > 200000 maximum", and since
# Claude 3.7 "input length and `max_tokens` exceed context limit: ...".
_TOO_LONG_MARKERS = ("prompt is too long", "exceed context limit")


def _is_too_long(status: int, error_type: str | None, detail: str) -> bool:
    if status == 413 or error_type == "request_too_large":
        return True
    lowered = detail.lower()
    return status == 400 and any(marker in lowered for marker in _TOO_LONG_MARKERS)


class AnthropicCaller:
    """Streams one Messages API call per `complete`; the SDK retries 408/409/429/5xx itself.

    `cache` (default: on unless the prompt caching variable is 0) marks prompt-cache breakpoints
    (see `caching.py`); `context_window` overrides the runtime's model table.
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        max_retries: int = 2,
        timeout: float = 120.0,
        client: AsyncAnthropic | None = None,
        cache: bool | None = None,
        context_window: int | None = None,
    ) -> None:
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, got {max_tokens}")
        if context_window is not None and context_window < 1:
            raise ValueError(f"context_window must be at least 1, got {context_window}")
        self.model = model
        self.max_tokens = max_tokens
        self.context_window = context_window
        self.cache = prompt_caching_enabled(cache)
        self.vision = True  # every current Claude model takes images
        self._messages = MessageConverter(_anthropic_message)
        self._tools = ToolsConverter(ToolCallRouter.to_anthropic_tools)
        self.max_retries = max_retries
        self.timeout = timeout
        if client is None:
            from anthropic import AsyncAnthropic

            # api_key=None lets the SDK read ANTHROPIC_API_KEY (or its other credential
            # sources: ANTHROPIC_AUTH_TOKEN, profiles); base_url=None, ANTHROPIC_BASE_URL.
            client = AsyncAnthropic(
                api_key=api_key or None,
                base_url=base_url,
                max_retries=max_retries,
                timeout=timeout,
            )
            if client.api_key is None and client.auth_token is None and client.credentials is None:
                raise ProviderError(
                    "No Anthropic API key found: set the ANTHROPIC_API_KEY environment "
                    "variable (or pass api_key=...)."
                )
        self.client = client

    async def complete(self, request: LLMRequest, on_text: TextSink | None = None) -> LLMResponse:
        import httpx2
        from anthropic import APIConnectionError, APIError

        turn = _TurnAssembler(on_text)
        started = False
        try:
            stream = await self.client.messages.create(**self._params(request), stream=True)
            async with stream:
                async for event in stream:
                    started = True
                    turn.feed(event)
        except APIError as exc:
            if started and isinstance(exc, APIConnectionError):
                # SDK 2.17 wraps a transport failure after the first event (a timeout too) as
                # APIConnectionError; it is the stream breaking off, not a server never answering.
                raise _stream_broke_off(exc) from exc
            raise self._error(exc) from exc
        except httpx2.HTTPError as exc:
            # SDKs before 2.17 pass transport failures through as-is once the stream started.
            raise _stream_broke_off(exc) from exc
        if not turn.finished:
            raise ProviderError(
                "The Anthropic API response stream ended before message_stop; try again."
            )
        response = turn.response()
        if not response.tool_calls:
            self._messages.forget(request.messages)  # the run ends with this answer
        if response.tool_calls and any(b["type"] in _THINKING_TYPES for b in turn.blocks):
            # The runtime keeps this with the assistant message (and the history stores it),
            # so the next request, even from a continued run, sends the turn back unchanged.
            response.provider_data = {ANTHROPIC_CONTENT: turn.echo_blocks(response.tool_calls)}
        return response

    async def aclose(self) -> None:
        await self.client.close()

    def _params(self, request: LLMRequest) -> dict[str, Any]:
        """The request body: messages converted once each (see `conversation.py`), with
        cache breakpoints on copies when caching is on."""
        cache = self.cache and request.cache
        params: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens}
        marks = 0
        if request.tools:
            tools = self._tools(request.tools)
            if cache:
                tools = marked_tools(tools)
                marks += 1
            params["tools"] = tools
        if request.system:
            params["system"] = request.system
            if cache:
                params["system"] = marked_system(request.system)
                marks += 1
        messages = self._messages.convert(request.messages)
        if cache:
            mark_messages(messages, min(MAX_BREAKPOINTS - marks, MESSAGE_BREAKPOINTS))
        params["messages"] = messages
        return params

    def _error(self, exc: APIError) -> ProviderError:
        from anthropic import APIConnectionError, APIStatusError, APITimeoutError

        attempts = f"{self.max_retries + 1} attempt{'s' if self.max_retries else ''}"
        if isinstance(exc, APITimeoutError):
            return ProviderError(
                f"The Anthropic API did not answer within {self.timeout:g} s ({attempts}). "
                "Check your network, or raise the timeout."
            )
        if isinstance(exc, APIConnectionError):
            cause = f": {exc.__cause__}" if exc.__cause__ else ""
            return ProviderError(
                f"Could not connect to the Anthropic API at {self.client.base_url} "
                f"({attempts}){cause}. Check your network and ANTHROPIC_BASE_URL."
            )
        if not isinstance(exc, APIStatusError):
            return ProviderError(f"The Anthropic API sent a response we could not read: {exc}")
        status = exc.status_code
        error_type = (
            exc.type or _TYPE_BY_STATUS.get(status) or ("api_error" if status >= 500 else None)
        )
        detail = (exc.api_message or exc.message).rstrip(".")
        # A 200 here is an `error` event in the middle of a stream; the SDK does not retry it.
        where = "during streaming" if status == 200 else str(status)
        retried = status != 200 and (status in (408, 409, 429) or status >= 500)
        retries = f" (gave up after {attempts})" if retried else ""
        too_long = _is_too_long(status, error_type, detail)
        hint_key = "context_length" if too_long and status != 413 else error_type or ""
        hint = _HINTS.get(hint_key, "").format(
            model=self.model, base_url=self.client.base_url, retries=retries
        )
        message = f"Anthropic API error {where} ({error_type or 'error'}): {detail}"
        error = ProviderContextLengthError if too_long else ProviderError
        return error(f"{message}. {hint}".rstrip(), status_code=status, error_type=error_type)


def _stream_broke_off(exc: Exception) -> ProviderError:
    cause = exc.__cause__ if isinstance(exc.__cause__, Exception) else exc
    return ProviderError(
        f"The Anthropic API response stream broke off ({type(cause).__name__}: {cause}); try again."
    )


class _TurnAssembler:
    """One streamed response, built from its events; blocks are kept as the API sent them."""

    def __init__(self, on_text: TextSink | None) -> None:
        self.on_text = on_text
        self._blocks: dict[int, dict[str, Any]] = {}
        self._tool_json: dict[int, str] = {}
        self.stop_reason: str | None = None
        self.usage = Usage()
        self.finished = False

    @property
    def blocks(self) -> list[dict[str, Any]]:
        return [self._blocks[index] for index in sorted(self._blocks)]

    def feed(self, event: RawMessageStreamEvent) -> None:
        if event.type == "message_start":
            usage = event.message.usage
            self.usage = _usage(
                usage.input_tokens,
                usage.cache_creation_input_tokens,
                usage.cache_read_input_tokens,
                usage.output_tokens,
            )
        elif event.type == "content_block_start":
            self._blocks[event.index] = event.content_block.to_dict(mode="json")
        elif event.type == "content_block_delta":
            block, delta = self._blocks[event.index], event.delta
            if delta.type == "text_delta":
                block["text"] = block.get("text", "") + delta.text
                if self.on_text is not None and delta.text:
                    self.on_text(delta.text)
            elif delta.type == "input_json_delta":
                self._tool_json[event.index] = (
                    self._tool_json.get(event.index, "") + delta.partial_json
                )
            elif delta.type == "thinking_delta":
                block["thinking"] = block.get("thinking", "") + delta.thinking
            elif delta.type == "signature_delta":
                block["signature"] = delta.signature
        elif event.type == "message_delta":
            self.stop_reason = event.delta.stop_reason
            totals = event.usage
            # Counts on message_delta are cumulative; input counts come only when they changed.
            if totals.input_tokens is not None:
                self.usage = _usage(
                    totals.input_tokens,
                    totals.cache_creation_input_tokens
                    if totals.cache_creation_input_tokens is not None
                    else self.usage.cache_write_tokens,
                    totals.cache_read_input_tokens
                    if totals.cache_read_input_tokens is not None
                    else self.usage.cache_read_tokens,
                    totals.output_tokens,
                )
            self.usage.output_tokens = totals.output_tokens
        elif event.type == "message_stop":
            self.finished = True

    def response(self) -> LLMResponse:
        text: list[str] = []
        calls: list[ToolCallRequest] = []
        for index, block in sorted(self._blocks.items()):
            if block["type"] == "text":
                text.append(block.get("text", ""))
            elif block["type"] == "tool_use":
                calls.append(self._tool_call(index, block))
        return LLMResponse("".join(text), calls, self.stop_reason, self.usage)

    def _tool_call(self, index: int, block: dict[str, Any]) -> ToolCallRequest:
        raw = self._tool_json.get(index, "")
        if not raw.strip():  # a call without arguments streams no input_json_delta
            return ToolCallRouter.from_anthropic_tool_use(block)
        try:
            arguments = loads_strict(raw)
        except ValueError as exc:
            # Usually output cut at max_tokens: the runner reports it instead of running
            # the tool on half its arguments.
            call = ToolCallRouter.from_anthropic_tool_use(block)
            return dataclasses.replace(call, arguments=raw, parse_error=str(exc))
        return ToolCallRouter.from_anthropic_tool_use({**block, "input": arguments})

    def echo_blocks(self, calls: Sequence[ToolCallRequest]) -> list[dict[str, Any]]:
        """The turn as it must go back: thinking, text and tool_use blocks in their order."""
        arguments = {c.call_id: c.arguments for c in calls}
        echo: list[dict[str, Any]] = []
        for block in self.blocks:
            kind = block["type"]
            if kind == "thinking":
                echo.append(
                    {
                        "type": kind,
                        "thinking": block.get("thinking", ""),
                        "signature": block.get("signature", ""),
                    }
                )
            elif kind == "redacted_thinking":
                echo.append({"type": kind, "data": block.get("data", "")})
            elif kind == "text" and block.get("text", "").strip():
                echo.append({"type": kind, "text": block["text"]})
            elif kind == "tool_use":
                value = arguments.get(block["id"])
                echo.append(
                    {
                        "type": kind,
                        "id": block["id"],
                        "name": block["name"],
                        "input": value if isinstance(value, dict) else {},
                    }
                )
        return echo


def _anthropic_message(message: Message) -> list[dict[str, Any]]:
    converted = ToolCallRouter.to_anthropic_message(message)
    return [] if converted is None else [converted]


def _usage(
    uncached: int | None, cache_write: int | None, cache_read: int | None, output: int | None
) -> Usage:
    """The API reports uncached input, cache writes and cache reads apart; `Usage` counts
    all input the model read in `input_tokens`."""
    write, read = cache_write or 0, cache_read or 0
    return Usage((uncached or 0) + write + read, output or 0, read, write)
