"""AnthropicCaller: the `LLMCaller` for Claude, over the official SDK's streaming Messages API.

The SDK is imported when a caller is built, never at module import, so `cleveragents.tool`
and this module stay importable without it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..tool.llm import TextSink
from ..tool.messages import LLMRequest, LLMResponse, ToolCallRequest
from ..tool.records import Usage
from ..tool.router import ANTHROPIC_CONTENT, ToolCallRouter, loads_strict
from .errors import ProviderError

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
    "request_too_large": "The conversation is too large for one request; start a new run.",
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


class AnthropicCaller:
    """Streams one Messages API call per `complete`; the SDK retries 408/409/429/5xx itself."""

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
    ) -> None:
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, got {max_tokens}")
        self.model = model
        self.max_tokens = max_tokens
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
        from anthropic import APIError

        turn = _TurnAssembler(on_text)
        try:
            stream = await self.client.messages.create(**self._params(request), stream=True)
            async with stream:
                async for event in stream:
                    turn.feed(event)
        except APIError as exc:
            raise self._error(exc) from exc
        except httpx2.HTTPError as exc:
            # Once the stream has started, the SDK passes transport failures through as-is.
            raise ProviderError(
                f"The Anthropic API response stream broke off ({type(exc).__name__}: {exc}); "
                "try again."
            ) from exc
        if not turn.finished:
            raise ProviderError(
                "The Anthropic API response stream ended before message_stop; try again."
            )
        response = turn.response()
        if response.tool_calls and any(b["type"] in _THINKING_TYPES for b in turn.blocks):
            # The runtime keeps this with the assistant message (and the history stores it),
            # so the next request, even from a continued run, sends the turn back unchanged.
            response.provider_data = {ANTHROPIC_CONTENT: turn.echo_blocks(response.tool_calls)}
        return response

    async def aclose(self) -> None:
        await self.client.close()

    def _params(self, request: LLMRequest) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "messages": ToolCallRouter.to_anthropic_messages(request.messages),
        }
        if request.system:
            params["system"] = request.system
        if request.tools:
            params["tools"] = ToolCallRouter.to_anthropic_tools(request.tools)
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
        hint = _HINTS.get(error_type or "", "").format(
            model=self.model, base_url=self.client.base_url, retries=retries
        )
        message = f"Anthropic API error {where} ({error_type or 'error'}): {detail}"
        return ProviderError(
            f"{message}. {hint}".rstrip(), status_code=status, error_type=error_type
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
            self.usage = Usage(
                _total_input(
                    usage.input_tokens,
                    usage.cache_creation_input_tokens,
                    usage.cache_read_input_tokens,
                ),
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
                self.usage.input_tokens = _total_input(
                    totals.input_tokens,
                    totals.cache_creation_input_tokens,
                    totals.cache_read_input_tokens,
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


def _total_input(uncached: int | None, cache_write: int | None, cache_read: int | None) -> int:
    # What the model read this call, cached or not: the API reports the parts separately.
    return (uncached or 0) + (cache_write or 0) + (cache_read or 0)
