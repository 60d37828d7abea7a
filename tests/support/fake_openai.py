"""A fake OpenAI Chat Completions server on 127.0.0.1 for tests.

It speaks the real wire format: `POST /v1/chat/completions` answered with a
`text/event-stream` of `data: {chat.completion.chunk}` events ending in `data: [DONE]`
(HTTP/1.1 chunked, as OpenAI sends it), or an error status with OpenAI's error JSON.
Replies come from a scripted queue; every request's headers and JSON body are recorded.

Like the real service it refuses a conversation in which a tool call and its result are
apart (400 with OpenAI's messages: a `tool` message that answers no call of the assistant
message just before it, or calls left without their `tool` messages), counts each chat
request's tokens (the fixed estimate in `fake_tokens.py`: each tool definition and each
message is a block), refuses one over
`context_window` with 400 and code `context_length_exceeded` (OpenAI's message and body),
and caches prompts as OpenAI documents it: a request whose prefix (tools, then messages) is
identical to that of an earlier request, for 1,024 tokens or more, reports the matched part
in `usage.prompt_tokens_details.cached_tokens`, in 128-token increments above 1,024 (matched
here at message boundaries). Every prefix of a served request is cached for `cache_ttl_s`.
A usage chunk scripted with `prompt_tokens=None` (the default of `text_reply` and
`tool_call_reply`) gets the fake's count; a number is reported as scripted.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from support.fake_tokens import Block, CacheUse, PrefixCache, image_problem, prefixes

CHAT_PATH = "/v1/chat/completions"
MIN_CACHED_TOKENS = 1024
CACHE_INCREMENT_TOKENS = 128
DEFAULT_CACHE_TTL_S = 300.0


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    # The fake's count of a chat request's input tokens (None when not counted).
    usage: CacheUse | None = None


@dataclass
class StreamReply:
    """An SSE stream: each chunk is one `data:` event; `drop_after` cuts the connection."""

    chunks: list[dict[str, Any]]
    headers: dict[str, str] = field(default_factory=dict)
    done: bool = True
    drop_after: int | None = None


@dataclass
class ErrorReply:
    status: int
    body: dict[str, Any] | str
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class DropConnection:
    """Read the request, then close the socket without answering."""


@dataclass
class Stall:
    """Read the request and answer nothing until the server stops (for client timeouts)."""


Reply = StreamReply | ErrorReply | DropConnection | Stall


def openai_error(
    status: int,
    message: str,
    *,
    error_type: str = "invalid_request_error",
    code: str | None = None,
    param: str | None = None,
    headers: dict[str, str] | None = None,
) -> ErrorReply:
    """An error in OpenAI's shape: `{"error": {"message", "type", "param", "code"}}`."""
    body = {"error": {"message": message, "type": error_type, "param": param, "code": code}}
    return ErrorReply(status, body, dict(headers or {}))


class ChunkScript:
    """Builds the `chat.completion.chunk` objects of one streamed response, in order."""

    def __init__(self, model: str = "fake-model", completion_id: str = "chatcmpl-fake") -> None:
        self.model = model
        self.completion_id = completion_id
        self.chunks: list[dict[str, Any]] = []
        self._chunk(choices=[self._choice({"role": "assistant", "content": ""})])

    def _chunk(self, *, choices: list[dict[str, Any]], usage: Any = None) -> None:
        self.chunks.append(
            {
                "id": self.completion_id,
                "object": "chat.completion.chunk",
                "created": 1_700_000_000,
                "model": self.model,
                "system_fingerprint": "fp_fake",
                "choices": choices,
                "usage": usage,
            }
        )

    @staticmethod
    def _choice(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}

    def text(self, *pieces: str) -> ChunkScript:
        for piece in pieces:
            self._chunk(choices=[self._choice({"content": piece})])
        return self

    def tool_call_start(
        self, index: int, call_id: str, name: str, arguments: str = ""
    ) -> ChunkScript:
        fragment = {
            "index": index,
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": arguments},
        }
        self._chunk(choices=[self._choice({"tool_calls": [fragment]})])
        return self

    def tool_arguments(self, index: int, *pieces: str) -> ChunkScript:
        for piece in pieces:
            fragment = {"index": index, "function": {"arguments": piece}}
            self._chunk(choices=[self._choice({"tool_calls": [fragment]})])
        return self

    def finish(self, reason: str) -> ChunkScript:
        self._chunk(choices=[self._choice({}, finish_reason=reason)])
        return self

    def usage(
        self, prompt_tokens: int | None, completion_tokens: int, cached_tokens: int | None = None
    ) -> ChunkScript:
        """The extra last chunk `stream_options.include_usage` asks for: no choices.
        `prompt_tokens=None`: the server's own count, with its cached tokens."""
        usage: dict[str, Any] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": None if prompt_tokens is None else prompt_tokens + completion_tokens,
        }
        if cached_tokens is not None:
            usage["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
        self._chunk(choices=[], usage=usage)
        return self

    def reply(self, **kwargs: Any) -> StreamReply:
        return StreamReply(list(self.chunks), **kwargs)


def text_reply(
    text: str, *, prompt_tokens: int | None = None, completion_tokens: int = 5
) -> StreamReply:
    return ChunkScript().text(text).finish("stop").usage(prompt_tokens, completion_tokens).reply()


def tool_call_reply(call_id: str, name: str, arguments: str) -> StreamReply:
    script = ChunkScript().tool_call_start(0, call_id, name).tool_arguments(0, arguments)
    return script.finish("tool_calls").usage(None, 5).reply()


def _filled_usage(chunk: dict[str, Any], counted: CacheUse | None) -> dict[str, Any]:
    usage = chunk.get("usage")
    if not isinstance(usage, dict) or usage.get("prompt_tokens") is not None:
        return chunk
    prompt = counted.total if counted is not None else 0
    filled = {
        **usage,
        "prompt_tokens": prompt,
        "total_tokens": prompt + int(usage.get("completion_tokens") or 0),
        "prompt_tokens_details": {"cached_tokens": counted.read if counted else 0},
    }
    return {**chunk, "usage": filled}


def image_url_error(messages: Any) -> ErrorReply | None:
    """OpenAI's 400 for an image part that is not a valid image data URL (or sits outside a
    user message, where the API takes none)."""
    for index, message in enumerate(messages if isinstance(messages, list) else []):
        content = message.get("content") if isinstance(message, dict) else None
        for part in content if isinstance(content, list) else []:
            if not isinstance(part, dict) or part.get("type") != "image_url":
                continue
            url = str((part.get("image_url") or {}).get("url", ""))
            head, _, data = url.partition(",")
            problem = None
            if message.get("role") != "user":
                problem = "Image URLs are only allowed for messages with role 'user'"
            elif not (head.startswith("data:") and head.endswith(";base64")):
                problem = "Invalid image URL: a base64 data URL is expected here"
            else:
                problem = image_problem(head[len("data:") : -len(";base64")], data)
            if problem:
                return openai_error(400, f"messages[{index}]: {problem}", param="messages")
    return None


def tool_pairing_error(messages: Any) -> ErrorReply | None:
    """The 400 OpenAI answers when a tool call and its result are apart: a `tool` message that
    does not answer a call of the assistant message before it, or an assistant message whose
    calls are not all answered by the tool messages right after it."""
    if not isinstance(messages, list):
        return None
    pending: dict[str, int] = {}  # call id -> index of the assistant message that made it
    answered: set[str] = set()
    for index, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id in pending and call_id not in answered:
                answered.add(call_id)
                continue
            return openai_error(
                400,
                "Invalid parameter: messages with role 'tool' must be a response to a "
                "preceeding message with 'tool_calls'.",
                param=f"messages.[{index}].role",
            )
        missing = [c for c in pending if c not in answered]
        if missing:
            return _unanswered(pending[missing[0]], missing)
        pending, answered = {}, set()
        if role == "assistant":
            for call in message.get("tool_calls") or ():
                pending[str(call.get("id"))] = index
    missing = [c for c in pending if c not in answered]
    return _unanswered(pending[missing[0]], missing) if missing else None


def _unanswered(index: int, missing: list[str]) -> ErrorReply:
    return openai_error(
        400,
        "An assistant message with 'tool_calls' must be followed by tool messages responding "
        "to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
        + ", ".join(missing),
        param=f"messages.[{index}].role",
    )


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = raw.decode("utf-8", "replace")
        request = RecordedRequest(
            "POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body
        )
        reply = self.server.fake.record_and_next(request)
        if self.path != CHAT_PATH:
            reply = openai_error(404, f"Invalid URL (POST {self.path})")
        if isinstance(reply, DropConnection):
            self.close_connection = True
            return
        if isinstance(reply, Stall):
            self.server.fake.stopping.wait()
            self.close_connection = True
            return
        if isinstance(reply, ErrorReply):
            self._send_error(reply)
            return
        self._send_stream(reply, request.usage)

    def _send_error(self, reply: ErrorReply) -> None:
        data = (reply.body if isinstance(reply.body, str) else json.dumps(reply.body)).encode()
        self.send_response(reply.status)
        content_type = "text/plain" if isinstance(reply.body, str) else "application/json"
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_stream(self, reply: StreamReply, counted: CacheUse | None) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache")
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        events = [f"data: {json.dumps(_filled_usage(c, counted))}\n\n" for c in reply.chunks]
        if reply.done:
            events.append("data: [DONE]\n\n")
        for number, event in enumerate(events):
            if reply.drop_after is not None and number >= reply.drop_after:
                # Cut mid-stream: no terminating zero-length chunk, so the client sees an
                # incomplete body.
                self.close_connection = True
                self.wfile.flush()
                return
            self._write_chunk(event.encode())
        self._write_chunk(b"")

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    fake: FakeOpenAIServer


class FakeOpenAIServer:
    """Start with `with FakeOpenAIServer() as server:`; point the SDK at `server.base_url`."""

    def __init__(
        self, *, context_window: int | None = None, cache_ttl_s: float = DEFAULT_CACHE_TTL_S
    ) -> None:
        self.context_window = context_window
        self.cache = PrefixCache(cache_ttl_s)
        self._lock = threading.Lock()
        self._replies: deque[Reply] = deque()
        self.requests: list[RecordedRequest] = []
        self.stopping = threading.Event()
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.fake = self
        # A short poll interval so `stop` does not wait half a second per test.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.01,), daemon=True, name="fake-openai"
        )

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def enqueue(self, *replies: Reply) -> None:
        with self._lock:
            self._replies.extend(replies)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._replies)

    def record_and_next(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self.requests.append(request)
        if request.path == CHAT_PATH and isinstance(request.body, dict):
            messages = request.body.get("messages")
            refusal = (
                tool_pairing_error(messages) or image_url_error(messages) or self._count(request)
            )
            if refusal is not None:  # refused before the model ran: the script waits
                return refusal
        with self._lock:
            if self._replies:
                return self._replies.popleft()
        return openai_error(
            500,
            "fake server: no scripted reply left",
            error_type="server_error",
            headers={"x-should-retry": "false"},
        )

    def _count(self, request: RecordedRequest) -> ErrorReply | None:
        """Count the request's tokens; refuse it when too long, else read and fill the cache."""
        body = request.body
        blocks = [Block(tool) for tool in body.get("tools") or []]
        blocks.extend(
            Block(message, str(message.get("role"))) for message in body.get("messages") or []
        )
        found = prefixes(str(body.get("model")), blocks)
        total, window = found.total, self.context_window
        answer = body.get("max_completion_tokens") or body.get("max_tokens") or 0
        if window is not None and total + answer > window:
            asked = (
                f"your messages resulted in {total} tokens"
                if not answer
                else f"you requested {total + answer} tokens ({total} in the messages, "
                f"{answer} in the completion)"
            )
            return openai_error(
                400,
                f"This model's maximum context length is {window} tokens. However, {asked}. "
                "Please reduce the length of the messages" + (" or completion." if answer else "."),
                code="context_length_exceeded",
                param="messages",
            )
        matched = 0
        for index in range(len(found.hashes) - 1, -1, -1):
            tokens = self.cache.hit(found.hashes[index])
            if tokens is not None:
                matched = tokens
                break
        for digest, tokens in zip(found.hashes, found.tokens, strict=True):
            self.cache.store(digest, tokens)
        cached = 0
        if matched >= MIN_CACHED_TOKENS:
            steps = (matched - MIN_CACHED_TOKENS) // CACHE_INCREMENT_TOKENS
            cached = MIN_CACHED_TOKENS + steps * CACHE_INCREMENT_TOKENS
        request.usage = CacheUse(total, cached)
        return None

    @property
    def bodies(self) -> list[Any]:
        with self._lock:
            return [r.body for r in self.requests]
