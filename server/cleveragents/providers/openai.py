"""The `openai` provider: any OpenAI-compatible Chat Completions server.

OpenAI itself, Ollama, vLLM, llama.cpp's server and LM Studio all speak this API; only the
base URL (and whether a key is needed) differs. The official SDK does the HTTP, the SSE
decoding and the retries (429, 5xx, connection errors); this module translates requests with
`ToolCallRouter`, assembles the streamed response and turns what still fails into a
`ProviderError` that says what to do about it.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

from ..settings_table import ENV_OPENAI_API_KEY, ENV_OPENAI_BASE_URL, ENV_OPENAI_VISION
from ..tool.llm import TextSink
from ..tool.messages import LLMRequest, LLMResponse, ToolCallRequest
from ..tool.records import Usage
from ..tool.router import ToolCallRouter
from .caching import prompt_caching_enabled
from .conversation import MessageConverter, ToolsConverter
from .errors import ProviderContextLengthError, ProviderError

if TYPE_CHECKING:
    from openai import AsyncOpenAI
    from openai.types.chat import ChatCompletionChunk

INSTALL_HINT = "pip install 'cleveragents[openai]'"
# Local servers ignore the key, but the SDK refuses to build a client without one.
LOCAL_SERVER_API_KEY = "not-needed"
DEFAULT_TIMEOUT_S = 120.0
DEFAULT_MAX_RETRIES = 2
_OLLAMA_PORT = 11434
_OPENAI_HOST = "api.openai.com"

# How servers say a request holds more tokens than the model reads. OpenAI: 400 with code
# context_length_exceeded ("This model's maximum context length is ..."); vLLM: the same
# words, or "... is longer than the maximum model length of ..."; llama.cpp: type
# exceed_context_size_error ("the request exceeds the available context size"); Ollama, LM
# Studio and gateways: "prompt is too long", "exceeds the context length", "greater than the
# context length", "context window exceeded".
_TOO_LONG_CODES = frozenset({"context_length_exceeded", "exceed_context_size_error"})
_TOO_LONG = re.compile(
    r"maximum context length|context[ _]length[ _]exceeded|available context size"
    r"|exceed_context_size|longer than the maximum model length|prompt (?:is )?too long"
    r"|exceeds? (?:the )?(?:maximum )?context length|greater than the context length"
    r"|context ?window ?exceeded|exceeds? the context window",
    re.IGNORECASE,
)


def _import_sdk() -> Any:
    try:
        import openai
    except ImportError as exc:
        raise ProviderError(
            f"the openai provider needs the openai SDK, which is not installed: {INSTALL_HINT}"
        ) from exc
    return openai


@dataclass(slots=True)
class _ToolCallParts:
    """One tool call while it streams: id and name come first, arguments in pieces."""

    call_id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)

    def to_request(self) -> ToolCallRequest:
        return ToolCallRouter.from_openai_tool_call(
            {
                "id": self.call_id,
                "function": {"name": self.name, "arguments": "".join(self.arguments)},
            }
        )


class _StreamAssembler:
    """Folds `chat.completion.chunk`s into one `LLMResponse`."""

    def __init__(self, on_text: TextSink | None) -> None:
        self.on_text = on_text
        self.text: list[str] = []
        self.calls: list[_ToolCallParts] = []
        self._slot_of_index: dict[int, int] = {}
        self.finish_reason: str | None = None
        self.usage = Usage()

    def add(self, chunk: ChatCompletionChunk) -> None:
        if chunk.usage is not None:
            # Some servers report running totals on every chunk: the last one is the total.
            self.usage = _usage(chunk.usage)
        for choice in chunk.choices or ():
            if choice.index not in (0, None):  # we never ask for n > 1
                continue
            if choice.finish_reason:
                self.finish_reason = choice.finish_reason
            delta = choice.delta
            if delta is None:
                continue
            for piece in (delta.content, delta.refusal):
                if piece:
                    self.text.append(piece)
                    if self.on_text is not None:
                        self.on_text(piece)
            for fragment in delta.tool_calls or ():
                self._add_fragment(fragment)

    def _add_fragment(self, fragment: Any) -> None:
        index = getattr(fragment, "index", None)
        fragment_id = getattr(fragment, "id", None) or ""
        slot = self._slot_of_index.get(index) if index is not None else None
        if slot is None and index is None and fragment_id == "" and self.calls:
            slot = len(self.calls) - 1  # a server that omits the index: continue the last call
        if slot is not None and fragment_id and self.calls[slot].call_id not in ("", fragment_id):
            slot = None  # a server that reuses one index for parallel calls: a new call
        if slot is None:
            self.calls.append(_ToolCallParts())
            slot = len(self.calls) - 1
        if index is not None:
            self._slot_of_index[index] = slot
        parts = self.calls[slot]
        if fragment_id:
            parts.call_id = fragment_id
        function = getattr(fragment, "function", None)
        if function is None:
            return
        # Some servers repeat the name on every fragment; it is never sent in pieces.
        if function.name and not parts.name:
            parts.name = function.name
        if function.arguments:
            parts.arguments.append(function.arguments)

    def response(self) -> LLMResponse:
        return LLMResponse(
            text="".join(self.text),
            tool_calls=[parts.to_request() for parts in self.calls],
            stop_reason=self.finish_reason,
            usage=self.usage,
        )


def _usage(usage: Any) -> Usage:
    """prompt_tokens counts all input, cached included; the cached part is in the details
    (OpenAI, vLLM with prefix caching; servers that cache nothing leave it out)."""
    details = getattr(usage, "prompt_tokens_details", None)
    read = getattr(details, "cached_tokens", None) or 0
    write = getattr(details, "cache_write_tokens", None) or 0
    return Usage(usage.prompt_tokens or 0, usage.completion_tokens or 0, read, write)


def _is_too_long(exc: Any, message: str) -> bool:
    kinds = {getattr(exc, "code", None), getattr(exc, "type", None)}
    if kinds & _TOO_LONG_CODES:
        return True
    return _TOO_LONG.search(message) is not None


def _is_local(base_url: str) -> bool:
    host = urlsplit(base_url).hostname or ""
    return host in ("localhost", "127.0.0.1", "::1", "0.0.0.0") or host.endswith(".local")


def _root_cause(exc: BaseException) -> str:
    """The innermost reason under the SDK's generic "Connection error."."""
    seen: set[int] = set()
    current: BaseException | None = exc
    deepest = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ConnectionRefusedError):
            return "connection refused"
        if str(current):
            deepest = current
        current = current.__cause__ or current.__context__
    return str(deepest) or type(deepest).__name__


def _server_message(exc: Any) -> str:
    """The server's own words from an SDK status error (OpenAI, vLLM and Ollama shapes)."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        message = body.get("message") or body.get("detail")
        return str(message) if message else json.dumps(body, default=str)[:500]
    if isinstance(body, str) and body.strip():
        return body.strip()[:500]
    return "no details in the response"


def openai_vision_enabled() -> bool:
    """The vision variable is 1 (or true, yes, on): the server's model takes images."""
    return os.environ.get(ENV_OPENAI_VISION, "").strip().lower() in ("1", "true", "yes", "on")


class OpenAICaller:
    """`LLMCaller` for OpenAI-compatible Chat Completions servers, streaming.

    `base_url` defaults to `OPENAI_BASE_URL`, else OpenAI's; the key to `OPENAI_API_KEY`.
    A server at a custom base URL may need no key (Ollama, vLLM, llama.cpp, LM Studio).
    `client` takes a ready `AsyncOpenAI` instead (the other settings are then ignored).

    These servers cache a prompt prefix by themselves when it is byte-identical to an
    earlier request's (OpenAI from 1,024 tokens): each message is converted once and the
    tools and system prompt never change within a run, so the prefix stays identical.
    `cache` records the setting (default: on unless the prompt caching variable is 0); the API
    has no switch to turn the server's caching off. `max_tokens` caps each answer (unset: the
    server's default); `context_window` overrides the runtime's model table, which a local
    model usually needs. `vision` says the model takes images (default:
    the openai vision variable, off).
    """

    provider = "openai"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
        timeout: float = DEFAULT_TIMEOUT_S,
        client: AsyncOpenAI | None = None,
        max_tokens: int | None = None,
        context_window: int | None = None,
        cache: bool | None = None,
        vision: bool | None = None,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ValueError("the openai provider needs a model name, e.g. 'gpt-4o-mini'")
        for name, value in (("max_tokens", max_tokens), ("context_window", context_window)):
            if value is not None and value < 1:
                raise ValueError(f"{name} must be at least 1, got {value}")
        self.model = model
        self.max_tokens = max_tokens
        self.context_window = context_window
        self.cache = prompt_caching_enabled(cache)
        # Whether the model takes images: only when the user says so (a compatible server's
        # model may have no vision, and would fail on an image part or ignore it).
        self.vision = vision if vision is not None else openai_vision_enabled()
        self._messages = MessageConverter(ToolCallRouter.to_openai_message)
        self._tools = ToolsConverter(ToolCallRouter.to_openai_tools)
        if client is None:
            openai = _import_sdk()
            base_url = base_url or os.environ.get(ENV_OPENAI_BASE_URL) or None
            api_key = api_key or os.environ.get(ENV_OPENAI_API_KEY) or None
            if api_key is None:
                if base_url is None:
                    raise ProviderError(
                        f"no OpenAI API key: set {ENV_OPENAI_API_KEY}, or point "
                        f"{ENV_OPENAI_BASE_URL} "
                        "(or base_url) at an OpenAI-compatible server such as Ollama "
                        "(http://localhost:11434/v1), which needs no key"
                    )
                api_key = LOCAL_SERVER_API_KEY
            client = cast(
                "AsyncOpenAI",
                openai.AsyncOpenAI(
                    api_key=api_key, base_url=base_url, max_retries=max_retries, timeout=timeout
                ),
            )
        self.client = client
        self.base_url = str(client.base_url).rstrip("/")
        self.max_retries = client.max_retries
        self.timeout = client.timeout

    async def aclose(self) -> None:
        """Close the HTTP connection pool."""
        await self.client.close()

    def request_params(self, request: LLMRequest) -> dict[str, Any]:
        """The Chat Completions request body for `request` (without transport options).

        Each message is converted once per conversation (see `conversation.py`)."""
        messages = self._messages.convert(request.messages)
        if request.system:
            messages.insert(0, {"role": "system", "content": request.system})
        params: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if self.max_tokens is not None:
            # OpenAI's reasoning models accept only the new name; other servers the old one.
            official = urlsplit(self.base_url).hostname == _OPENAI_HOST
            params["max_completion_tokens" if official else "max_tokens"] = self.max_tokens
        tools = self._tools(request.tools)
        if tools:  # some servers reject an empty list
            params["tools"] = tools
        return params

    async def complete(self, request: LLMRequest, on_text: TextSink | None = None) -> LLMResponse:
        openai = _import_sdk()
        assembler = _StreamAssembler(on_text)
        streaming = False  # the SDK retries until the stream opens, never after
        try:
            stream = await self.client.chat.completions.create(**self.request_params(request))
            streaming = True
            async with stream:
                async for chunk in stream:
                    assembler.add(chunk)
        except openai.APIStatusError as exc:
            if exc.status_code in (400, 413) and _is_too_long(exc, _server_message(exc)):
                raise ProviderContextLengthError(
                    f"{self.base_url} refused the request as longer than model "
                    f"{self.model!r} can read: {_server_message(exc)}",
                    status_code=exc.status_code,
                    error_type="context_length_exceeded",
                ) from exc
            raise ProviderError(
                self._describe_status_error(exc), status_code=exc.status_code
            ) from exc
        except openai.APIConnectionError as exc:  # includes APITimeoutError
            if streaming:
                raise ProviderError(
                    f"the response from {self.base_url} broke off while streaming "
                    f"({_root_cause(exc)}); try again"
                ) from exc
            if isinstance(exc, openai.APITimeoutError):
                raise ProviderError(
                    f"the request to {self.base_url} timed out (timeout {self.timeout}s, "
                    f"{self._attempts()}): raise the timeout, or check that the server is "
                    "not overloaded"
                ) from exc
            raise ProviderError(self._describe_connection_error(exc)) from exc
        except openai.APIError as exc:  # an error event in the middle of the stream
            raise ProviderError(
                f"{self.base_url} reported an error while streaming model {self.model!r}: "
                f"{_server_message(exc)}"
            ) from exc
        response = assembler.response()
        if not response.tool_calls:
            self._messages.forget(request.messages)  # the run ends with this answer
        return response

    def _attempts(self) -> str:
        attempts = self.max_retries + 1
        return f"{attempts} attempt" + ("s" if attempts != 1 else "")

    def _describe_connection_error(self, exc: Exception) -> str:
        where = (
            f"could not connect to {self.base_url} ({_root_cause(exc)}) after {self._attempts()}"
        )
        if urlsplit(self.base_url).port == _OLLAMA_PORT:
            return f"{where}: is Ollama running at {self.base_url}? Start it with `ollama serve`."
        if _is_local(self.base_url):
            return (
                f"{where}: is the local server (Ollama, vLLM, llama.cpp, LM Studio) running "
                f"at {self.base_url}?"
            )
        return f"{where}: check the network and the base URL ({ENV_OPENAI_BASE_URL})."

    def _describe_status_error(self, exc: Any) -> str:
        status = int(getattr(exc, "status_code", 0))
        message = _server_message(exc)
        said = f"{self.base_url} answered {status}: {message}"
        if status == 401:
            return f"{said}. The API key was rejected: set {ENV_OPENAI_API_KEY} to a valid key."
        if status == 403:
            return f"{said}. The API key may not use model {self.model!r}."
        if status == 404:
            return (
                f"{said}. Check the model name {self.model!r} (for Ollama: `ollama pull "
                f"{self.model}`) and that the base URL ends in /v1."
            )
        if status == 429:
            code = getattr(exc, "code", None)
            if code == "insufficient_quota":
                return f"{said}. The account is out of quota: check its plan and billing."
            return (
                f"{said}. Still rate limited after {self._attempts()}: wait and try again, "
                "or lower the request rate."
            )
        if status >= 500:
            return (
                f"{said}. The server failed after {self._attempts()}: try again later, or "
                "check the server's log if it is yours."
            )
        if status == 400 and "tool" in message.lower():
            return f"{said}. Use a model that supports tool calling."
        return f"{said}."
