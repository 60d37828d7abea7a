"""A fake Anthropic Messages API on 127.0.0.1 for provider tests.

It speaks the wire format the real SDK expects (SSE streams, error JSON, retry headers),
records every request, serves a scripted queue of replies, and enforces the request rules
the real API enforces that our translation could break (non-empty content, tool_use and
tool_result pairing, thinking blocks echoed unchanged), answering 400 the way the API does.

Like the real service it counts each request's tokens (the fixed estimate in
`fake_tokens.py`), refuses one over `context_window` (400 invalid_request_error "prompt is
too long: N tokens > M maximum", or "input length and `max_tokens` exceed context limit"
when the answer's room does not fit) or over `max_request_bytes` (413 request_too_large),
and runs a prompt cache by Anthropic's documented rules:

- a block marked `cache_control` (at most 4 in a request, else 400; a top-level
  `cache_control` marks the last block) is a breakpoint; the prefix is tools, then system,
  then messages, up to and including the marked block;
- a breakpoint reads the longest cached prefix that ends at it or at one of the 20 block
  boundaries before it (the lookback); the request reads the longest such prefix;
- a breakpoint whose prefix is at least the model's minimum cacheable length (1,024 tokens;
  2,048 for Haiku 3 and 3.5; 4,096 for Opus 4.5 and 4.6 and Haiku 4.5) and longer than what
  was read is written; entries live `cache_ttl_s` (5 minutes), refreshed on each hit;
- usage: `cache_read_input_tokens` the prefix read, `cache_creation_input_tokens` the tokens
  from there to the furthest breakpoint written, `input_tokens` the rest.

A scripted `StreamReply` with `input_tokens` set reports its scripted numbers instead.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from support.fake_tokens import (
    Block,
    CacheUse,
    PrefixCache,
    image_problem,
    message_blocks,
    prefixes,
)

API_KEY = "sk-ant-fake-test-key"
MAX_CACHE_BREAKPOINTS = 4
CACHE_LOOKBACK_BLOCKS = 20
DEFAULT_CACHE_TTL_S = 300.0
MAX_REQUEST_BYTES = 32 * 1024 * 1024


def min_cacheable_tokens(model: str) -> int:
    """The shortest prefix Anthropic caches for `model` (its prompt caching docs)."""
    name = model.lower()
    if any(k in name for k in ("opus-4-5", "opus-4-6", "haiku-4-5")):
        return 4096
    if any(k in name for k in ("3-haiku", "3-5-haiku", "haiku-3")):
        return 2048
    return 1024


@dataclass
class Text:
    chunks: list[str]


@dataclass
class ToolUse:
    id: str
    name: str
    json_chunks: list[str] = field(default_factory=list)


@dataclass
class Thinking:
    chunks: list[str]
    signature: str


@dataclass
class RedactedThinking:
    data: str


ReplyBlock = Text | ToolUse | Thinking | RedactedThinking


@dataclass
class StreamReply:
    """A 200 SSE stream. `error_after` sends an `error` event after that many blocks;
    `cut_after` closes the connection after that many blocks, without message_stop."""

    blocks: list[ReplyBlock]
    stop_reason: str = "end_turn"
    # None: the fake's own count and cache accounting; a number: reported as scripted.
    input_tokens: int | None = None
    output_tokens: int = 5
    cache_read_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    error_after: int | None = None
    cut_after: int | None = None
    # A pause to make the client time out: before the response starts, or after that
    # many blocks when `delay_after` is set.
    delay_s: float = 0.0
    delay_after: int | None = None


@dataclass
class ErrorReply:
    status: int
    error_type: str
    message: str
    retry_after_ms: str | None = "1"


Reply = StreamReply | ErrorReply


@dataclass
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    # The fake's count of the request's input tokens (None when refused before counting).
    usage: CacheUse | None = None


class ApiRuleError(Exception):
    """A request the real API would refuse with 400 invalid_request_error."""


class FakeAnthropic:
    def __init__(
        self,
        api_key: str = API_KEY,
        *,
        context_window: int | None = None,
        min_cacheable: int | None = None,
        cache_ttl_s: float = DEFAULT_CACHE_TTL_S,
        max_request_bytes: int = MAX_REQUEST_BYTES,
    ) -> None:
        self.api_key = api_key
        self.context_window = context_window
        self.min_cacheable = min_cacheable
        self.max_request_bytes = max_request_bytes
        self.cache = PrefixCache(cache_ttl_s)
        self.requests: list[RecordedRequest] = []
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()
        # Served turns that carried thinking, by tool_use ids: they must come back unchanged.
        self._thinking_turns: dict[tuple[str, ...], list[dict[str, Any]]] = {}
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        # A short poll interval: shutdown() waits up to one interval.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def push(self, *replies: Reply) -> None:
        with self._lock:
            self._replies.extend(replies)

    def start(self) -> FakeAnthropic:
        self._thread.start()
        return self

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeAnthropic:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- request handling (runs on the server's threads) --------------------------------------
    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                headers = {k.lower(): v for k, v in self.headers.items()}
                recorded = RecordedRequest(self.path, headers, body)
                with fake._lock:
                    fake.requests.append(recorded)
                if length > fake.max_request_bytes:
                    too_large = "Request exceeds the maximum allowed number of bytes."
                    return _send_error(
                        self, ErrorReply(413, "request_too_large", too_large, retry_after_ms=None)
                    )
                fake._answer(self, recorded)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler

    def _answer(self, http: BaseHTTPRequestHandler, recorded: RecordedRequest) -> None:
        headers, body = recorded.headers, recorded.body
        if http.path != "/v1/messages":
            return _send_error(http, ErrorReply(404, "not_found_error", f"Not found: {http.path}"))
        # SDK 2.x sends the key as a bearer token; older clients send x-api-key.
        if self.api_key not in (headers.get("x-api-key"), _bearer(headers)):
            return _send_error(http, ErrorReply(401, "authentication_error", "invalid x-api-key"))
        try:
            self._check_rules(body)
            recorded.usage = self._count(body)
        except ApiRuleError as exc:
            return _send_error(http, ErrorReply(400, "invalid_request_error", str(exc)))
        with self._lock:
            reply = self._replies.popleft() if self._replies else None
        if reply is None:
            # Not retryable, so a test that under-scripts fails at once and says why.
            return _send_error(
                http,
                ErrorReply(500, "api_error", "fake: no scripted reply left"),
                {"x-should-retry": "false"},
            )
        if isinstance(reply, ErrorReply):
            return _send_error(http, reply)
        self._remember_thinking(reply)
        if reply.delay_after is None:
            time.sleep(reply.delay_s)
        try:
            _send_stream(http, reply, str(body.get("model")), recorded.usage)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test); nothing left to tell it

    def _remember_thinking(self, reply: StreamReply) -> None:
        if not any(isinstance(b, Thinking | RedactedThinking) for b in reply.blocks):
            return
        blocks = [_final_block(b) for b in reply.blocks]
        ids = tuple(b["id"] for b in blocks if b["type"] == "tool_use")
        if ids:
            with self._lock:
                self._thinking_turns[ids] = [
                    b for b in blocks if b["type"] != "text" or b["text"].strip()
                ]

    def _count(self, body: dict[str, Any]) -> CacheUse:
        """Count the request, refuse it when too long, and read and write the cache."""
        model = str(body["model"])
        found = prefixes(model, _cache_blocks(body))
        if len(found.marked) > MAX_CACHE_BREAKPOINTS:
            raise ApiRuleError(
                f"A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be "
                f"provided. Found {len(found.marked)}."
            )
        total, window = found.total, self.context_window
        if window is not None and total > window:
            raise ApiRuleError(f"prompt is too long: {total} tokens > {window} maximum")
        if window is not None and total + body["max_tokens"] > window:
            raise ApiRuleError(
                f"input length and `max_tokens` exceed context limit: {total} + "
                f"{body['max_tokens']} > {window}, decrease input length or `max_tokens` "
                "and try again"
            )
        read = 0
        for mark in found.marked:
            for index in range(mark, max(-1, mark - CACHE_LOOKBACK_BLOCKS - 1), -1):
                tokens = self.cache.hit(found.hashes[index])
                if tokens is not None:
                    read = max(read, tokens)
                    break
        minimum = self.min_cacheable or min_cacheable_tokens(model)
        written = read
        for mark in found.marked:
            tokens = found.tokens[mark]
            if tokens >= minimum and tokens > read:
                self.cache.store(found.hashes[mark], tokens)
                written = max(written, tokens)
        return CacheUse(total, read, written - read)

    def _check_rules(self, body: dict[str, Any]) -> None:
        if not isinstance(body.get("model"), str) or not body["model"]:
            raise ApiRuleError("model: Field required")
        if not isinstance(body.get("max_tokens"), int) or body["max_tokens"] < 1:
            raise ApiRuleError("max_tokens: Field required")
        if body.get("stream") is not True:
            raise ApiRuleError("fake: only streaming requests are served")
        for i, tool in enumerate(body.get("tools", [])):
            schema = tool.get("input_schema")
            if not isinstance(schema, dict) or schema.get("type") != "object":
                raise ApiRuleError(f"tools.{i}.input_schema: Input should be an object schema")
        turns = _merge_turns(body.get("messages"))
        for i, turn in enumerate(turns):
            last = i == len(turns) - 1
            if not turn["content"] and not (last and turn["role"] == "assistant"):
                raise ApiRuleError(
                    f"messages.{i}: all messages must have non-empty content except for "
                    "the optional final assistant message"
                )
            for j, block in enumerate(turn["content"]):
                if block.get("type") == "text" and not str(block.get("text", "")).strip():
                    raise ApiRuleError(
                        "messages: text content blocks must contain non-whitespace text"
                    )
                if block.get("type") == "image":
                    source = block.get("source") or {}
                    if source.get("type") != "base64":
                        raise ApiRuleError(f"messages.{i}.content.{j}.source: base64 expected")
                    problem = image_problem(source.get("media_type"), source.get("data"))
                    if problem:
                        raise ApiRuleError(f"messages.{i}.content.{j}.source: {problem}")
            previous = turns[i - 1] if i else None
            self._check_pairing(i, turn, previous, turns[i + 1] if not last else None)
        for i in range(len(turns) - 1, -1, -1):
            if turns[i]["role"] == "assistant":
                self._check_thinking_echo(i, turns[i]["content"])
                break

    @staticmethod
    def _check_pairing(
        i: int, turn: dict[str, Any], previous: dict[str, Any] | None, following: Any
    ) -> None:
        if turn["role"] == "assistant":
            uses = [b["id"] for b in turn["content"] if b.get("type") == "tool_use"]
            answered = {
                b.get("tool_use_id")
                for b in (following or {}).get("content", [])
                if b.get("type") == "tool_result"
            }
            missing = [u for u in uses if u not in answered]
            if following is not None and missing:
                raise ApiRuleError(
                    f"messages.{i}: `tool_use` ids were found without `tool_result` blocks "
                    f"immediately after: {', '.join(missing)}. Each `tool_use` block must "
                    "have a corresponding `tool_result` block in the next message."
                )
            return
        asked = {
            b.get("id") for b in (previous or {}).get("content", []) if b.get("type") == "tool_use"
        }
        for j, block in enumerate(turn["content"]):
            if block.get("type") == "tool_result" and block.get("tool_use_id") not in asked:
                raise ApiRuleError(
                    f"messages.{i}.content.{j}: unexpected `tool_use_id` found in "
                    f"`tool_result` blocks: {block.get('tool_use_id')}. Each `tool_result` "
                    "block must have a corresponding `tool_use` block in the previous message."
                )

    def _check_thinking_echo(self, i: int, content: list[dict[str, Any]]) -> None:
        ids = tuple(b["id"] for b in content if b.get("type") == "tool_use")
        with self._lock:
            served = self._thinking_turns.get(ids)
        if served is None or content == served:
            return
        if content[0].get("type") not in ("thinking", "redacted_thinking"):
            raise ApiRuleError(
                f"messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, "
                f"but found `{content[0].get('type')}`. When `thinking` is enabled, a final "
                "`assistant` message must start with a thinking block."
            )
        raise ApiRuleError(
            f"messages.{i}: `thinking` or `redacted_thinking` blocks in the latest assistant "
            "message cannot be modified. These blocks must remain as they were in the "
            "original response."
        )


def _bearer(headers: dict[str, str]) -> str | None:
    scheme, _, token = headers.get("authorization", "").partition(" ")
    return token if scheme.lower() == "bearer" else None


def _cache_blocks(body: dict[str, Any]) -> list[Block]:
    """The request as the cache sees it: tools, system, then each message's blocks."""
    blocks = [Block(tool, None, "cache_control" in tool) for tool in body.get("tools", [])]
    system = body.get("system")
    if isinstance(system, str) and system:
        blocks.append(Block({"type": "text", "text": system}))
    elif isinstance(system, list):
        blocks.extend(Block(b, None, "cache_control" in b) for b in system)
    for message in body.get("messages", []):
        blocks.extend(message_blocks(str(message.get("role")), message.get("content")))
    if body.get("cache_control") and blocks:  # automatic caching: the last block
        blocks[-1] = Block(blocks[-1].value, blocks[-1].role, True)
    return blocks


def _merge_turns(messages: Any) -> list[dict[str, Any]]:
    """Consecutive same-role messages as one turn, content as blocks, as the API reads them."""
    if not isinstance(messages, list) or not messages:
        raise ApiRuleError("messages: Field required")
    turns: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        role = message.get("role")
        if role not in ("user", "assistant"):
            raise ApiRuleError(f"messages.{i}.role: Input should be 'user' or 'assistant'")
        content = message.get("content")
        if isinstance(content, str):
            blocks = [{"type": "text", "text": content}] if content else []
        elif isinstance(content, list):
            blocks = list(content)
        else:
            raise ApiRuleError(f"messages.{i}.content: Input should be a string or a list")
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    if turns[0]["role"] != "user":
        raise ApiRuleError('messages: first message must use the "user" role')
    return turns


def _final_block(block: ReplyBlock) -> dict[str, Any]:
    """The content block as the API would return it whole (what must be echoed back)."""
    if isinstance(block, Text):
        return {"type": "text", "text": "".join(block.chunks)}
    if isinstance(block, ToolUse):
        raw = "".join(block.json_chunks)
        return {
            "type": "tool_use",
            "id": block.id,
            "name": block.name,
            "input": json.loads(raw) if raw else {},
        }
    if isinstance(block, Thinking):
        return {"type": "thinking", "thinking": "".join(block.chunks), "signature": block.signature}
    return {"type": "redacted_thinking", "data": block.data}


def _block_events(index: int, block: ReplyBlock) -> list[tuple[str, dict[str, Any]]]:
    def delta(payload: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        return "content_block_delta", {
            "type": "content_block_delta",
            "index": index,
            "delta": payload,
        }

    if isinstance(block, Text):
        start: dict[str, Any] = {"type": "text", "text": ""}
        deltas = [delta({"type": "text_delta", "text": c}) for c in block.chunks]
    elif isinstance(block, ToolUse):
        start = {"type": "tool_use", "id": block.id, "name": block.name, "input": {}}
        deltas = [delta({"type": "input_json_delta", "partial_json": c}) for c in block.json_chunks]
    elif isinstance(block, Thinking):
        start = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [delta({"type": "thinking_delta", "thinking": c}) for c in block.chunks]
        deltas.append(delta({"type": "signature_delta", "signature": block.signature}))
    else:
        start, deltas = {"type": "redacted_thinking", "data": block.data}, []
    return [
        (
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": start},
        ),
        *deltas,
        ("content_block_stop", {"type": "content_block_stop", "index": index}),
    ]


def _reported_usage(reply: StreamReply, counted: CacheUse | None) -> dict[str, Any]:
    if reply.input_tokens is not None or counted is None:
        return {
            "input_tokens": reply.input_tokens or 0,
            "cache_creation_input_tokens": reply.cache_creation_input_tokens,
            "cache_read_input_tokens": reply.cache_read_input_tokens,
        }
    return {
        "input_tokens": counted.uncached,
        "cache_creation_input_tokens": counted.write,
        "cache_read_input_tokens": counted.read,
    }


def _send_stream(
    http: BaseHTTPRequestHandler, reply: StreamReply, model: str, counted: CacheUse | None
) -> None:
    http.send_response(200)
    http.send_header("content-type", "text/event-stream; charset=utf-8")
    http.send_header("cache-control", "no-cache")
    http.send_header("request-id", f"req_{uuid.uuid4().hex[:24]}")
    http.end_headers()

    def send(event: str, data: dict[str, Any]) -> None:
        http.wfile.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())
        http.wfile.flush()

    usage: dict[str, Any] = {**_reported_usage(reply, counted), "output_tokens": 1}
    send(
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": f"msg_{uuid.uuid4().hex[:24]}",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": usage,
            },
        },
    )
    send("ping", {"type": "ping"})
    for index, block in enumerate(reply.blocks):
        if index == reply.delay_after:
            time.sleep(reply.delay_s)
        if index == reply.cut_after:
            return
        if index == reply.error_after:
            send(
                "error",
                {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            )
            return
        for event, data in _block_events(index, block):
            send(event, data)
    send(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": reply.stop_reason, "stop_sequence": None},
            # Cumulative, as the API sends it: input counts again, output now final.
            "usage": {**usage, "output_tokens": reply.output_tokens},
        },
    )
    send("message_stop", {"type": "message_stop"})


def _send_error(
    http: BaseHTTPRequestHandler, reply: ErrorReply, headers: dict[str, str] | None = None
) -> None:
    request_id = f"req_{uuid.uuid4().hex[:24]}"
    payload = json.dumps(
        {
            "type": "error",
            "error": {"type": reply.error_type, "message": reply.message},
            "request_id": request_id,
        }
    ).encode()
    http.send_response(reply.status)
    http.send_header("content-type", "application/json")
    http.send_header("content-length", str(len(payload)))
    http.send_header("request-id", request_id)
    if reply.retry_after_ms is not None:
        # The SDK waits what the server asks when it is positive, so tests retry at once.
        http.send_header("retry-after-ms", reply.retry_after_ms)
    for name, value in (headers or {}).items():
        http.send_header(name, value)
    http.end_headers()
    http.wfile.write(payload)
