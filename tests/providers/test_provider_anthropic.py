"""AnthropicCaller against a fake Messages API server, through the real anthropic SDK."""

from __future__ import annotations

import itertools
import json
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cleveragents.providers.anthropic import DEFAULT_MODEL, AnthropicCaller
from cleveragents.providers.errors import ProviderError
from cleveragents.tool import (
    AssistantMessage,
    LLMRequest,
    Message,
    TextDelta,
    ToolCallingRuntime,
    ToolCallRequest,
    ToolError,
    ToolRegistry,
    ToolResult,
    ToolResultsMessage,
    ToolRunner,
    ToolSchema,
    UserMessage,
)
from support.fake_anthropic import (
    API_KEY,
    ErrorReply,
    FakeAnthropic,
    StreamReply,
    Text,
    Thinking,
    ToolUse,
)

READ_FILE = ToolSchema(
    "read_file",
    "Read a text file.",
    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)
MakeCaller = Callable[..., AnthropicCaller]


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        yield server


@pytest.fixture
async def make_caller(fake: FakeAnthropic) -> AsyncIterator[MakeCaller]:
    callers: list[AnthropicCaller] = []

    def make(**options: Any) -> AnthropicCaller:
        options.setdefault("api_key", API_KEY)
        options.setdefault("base_url", fake.base_url)
        options.setdefault("max_retries", 0)
        caller = AnthropicCaller(**options)
        callers.append(caller)
        return caller

    yield make
    for caller in callers:
        await caller.aclose()


def ask(text: str = "hello", **kwargs: Any) -> LLMRequest:
    return LLMRequest(messages=[UserMessage(text)], tools=kwargs.pop("tools", []), **kwargs)


# -- request shape -----------------------------------------------------------------------
async def test_request_carries_model_system_tools_and_the_whole_conversation(
    fake: FakeAnthropic, make_caller: MakeCaller
) -> None:
    fake.push(StreamReply([Text(["done"])]))
    # Without cache breakpoints, so the body is the plain translation (tests below add them).
    caller = make_caller(model="claude-test-model", max_tokens=321, cache=False)
    history: list[Message] = [
        UserMessage("Read a.txt and b.txt"),
        AssistantMessage(
            "Reading both.",
            (
                ToolCallRequest("toolu_a", "read_file", {"path": "a.txt"}),
                ToolCallRequest("toolu_b", "read_file", {"path": "b.txt"}),
            ),
        ),
        ToolResultsMessage(
            (
                ToolResult("toolu_a", "read_file", {"text": "alpha"}),
                ToolResult(
                    "toolu_b",
                    "read_file",
                    {"error": "no such file", "error_kind": "execution_error"},
                    is_error=True,
                ),
            )
        ),
    ]
    request = LLMRequest(messages=history, tools=[READ_FILE], system="Be brief.")

    await caller.complete(request)

    (sent,) = fake.requests
    assert sent.path == "/v1/messages"
    # anthropic SDK 2.x sends the key as a bearer token, not x-api-key.
    assert sent.headers["authorization"] == f"Bearer {API_KEY}"
    assert "anthropic-version" in sent.headers
    body = sent.body
    assert body["model"] == "claude-test-model"
    assert body["max_tokens"] == 321
    assert body["stream"] is True
    assert body["system"] == "Be brief."
    assert body["tools"] == [
        {
            "name": "read_file",
            "description": "Read a text file.",
            "input_schema": READ_FILE.input_schema,
        }
    ]
    assert body["messages"] == [
        {"role": "user", "content": "Read a.txt and b.txt"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading both."},
                {
                    "type": "tool_use",
                    "id": "toolu_a",
                    "name": "read_file",
                    "input": {"path": "a.txt"},
                },
                {
                    "type": "tool_use",
                    "id": "toolu_b",
                    "name": "read_file",
                    "input": {"path": "b.txt"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_a",
                    "content": json.dumps({"text": "alpha"}),
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_b",
                    "content": json.dumps(
                        {"error": "no such file", "error_kind": "execution_error"}
                    ),
                    "is_error": True,
                },
            ],
        },
    ]


async def test_system_and_tools_are_left_out_when_there_are_none(
    fake: FakeAnthropic, make_caller: MakeCaller
) -> None:
    fake.push(StreamReply([Text(["hi"])]))
    await make_caller().complete(ask())
    body = fake.requests[0].body
    assert "system" not in body and "tools" not in body
    assert body["model"] == DEFAULT_MODEL


async def test_blank_assistant_turns_are_not_sent_as_empty_content(
    fake: FakeAnthropic, make_caller: MakeCaller
) -> None:
    # A model can end a turn with no text, or with only whitespace before a tool call; the
    # API refuses both as content, and the fake enforces the same rules.
    fake.push(StreamReply([Text(["ok"])]))
    history: list[Message] = [
        UserMessage("first"),
        AssistantMessage("  \n", (ToolCallRequest("toolu_1", "read_file", {"path": "x"}),)),
        ToolResultsMessage((ToolResult("toolu_1", "read_file", {"text": "x"}),)),
        AssistantMessage(""),
        UserMessage("second"),
    ]
    response = await make_caller().complete(LLMRequest(history, [READ_FILE]))
    assert response.text == "ok"
    messages = fake.requests[0].body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "user"]
    assert messages[1]["content"] == [
        {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "x"}}
    ]


async def test_api_key_and_base_url_come_from_the_environment(
    fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
    fake.push(StreamReply([Text(["from env"])]))
    caller = AnthropicCaller(max_retries=0)
    try:
        response = await caller.complete(ask())
    finally:
        await caller.aclose()
    assert response.text == "from env"
    assert fake.requests[0].headers["authorization"] == f"Bearer {API_KEY}"


# -- streaming ---------------------------------------------------------------------------
async def test_text_streams_in_order_and_tool_calls_are_assembled(
    fake: FakeAnthropic, make_caller: MakeCaller
) -> None:
    fake.push(
        StreamReply(
            [
                Text(["Let me ", "look", " at both."]),
                ToolUse("toolu_1", "read_file", ['{"pa', 'th": "src/ma', 'in.py"}']),
                ToolUse("toolu_2", "list_dir", []),
            ],
            stop_reason="tool_use",
            input_tokens=42,
            cache_read_input_tokens=100,
            output_tokens=17,
        )
    )
    deltas: list[str] = []

    response = await make_caller().complete(ask(tools=[READ_FILE]), deltas.append)

    assert deltas == ["Let me ", "look", " at both."]
    assert response.text == "Let me look at both."
    assert response.tool_calls == [
        ToolCallRequest("toolu_1", "read_file", {"path": "src/main.py"}),
        ToolCallRequest("toolu_2", "list_dir", {}),
    ]
    assert response.stop_reason == "tool_use"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (142, 17)


async def test_text_blocks_on_both_sides_of_a_tool_call_are_joined(
    fake: FakeAnthropic, make_caller: MakeCaller
) -> None:
    fake.push(
        StreamReply(
            [Text(["one "]), ToolUse("toolu_1", "list_dir", ["{}"]), Text(["two"])],
            stop_reason="tool_use",
        )
    )
    response = await make_caller().complete(ask())
    assert response.text == "one two"
    assert response.tool_calls == [ToolCallRequest("toolu_1", "list_dir", {})]


async def test_tool_input_cut_off_at_max_tokens_is_a_parse_error_not_half_the_arguments(
    fake: FakeAnthropic, make_caller: MakeCaller
) -> None:
    fake.push(
        StreamReply(
            [ToolUse("toolu_1", "write_file", ['{"path": "a.txt", "content": "half of'])],
            stop_reason="max_tokens",
        )
    )
    response = await make_caller().complete(ask())
    (call,) = response.tool_calls
    assert call.call_id == "toolu_1" and call.tool_name == "write_file"
    assert call.arguments == '{"path": "a.txt", "content": "half of'
    assert call.parse_error is not None
    assert response.stop_reason == "max_tokens"


# -- retries and errors ------------------------------------------------------------------
async def test_429_500_and_529_are_retried_then_the_stream_succeeds(
    fake: FakeAnthropic, make_caller: MakeCaller
) -> None:
    fake.push(
        ErrorReply(429, "rate_limit_error", "Number of requests has exceeded your rate limit"),
        ErrorReply(500, "api_error", "Internal server error"),
        ErrorReply(529, "overloaded_error", "Overloaded"),
        StreamReply([Text(["made it"])]),
    )
    response = await make_caller(max_retries=3).complete(ask())
    assert response.text == "made it"
    assert len(fake.requests) == 4
    assert [r.headers.get("x-stainless-retry-count") for r in fake.requests] == ["0", "1", "2", "3"]


async def test_a_clear_error_once_retries_run_out(
    fake: FakeAnthropic, make_caller: MakeCaller
) -> None:
    fake.push(*[ErrorReply(529, "overloaded_error", "Overloaded right now")] * 3)
    with pytest.raises(ProviderError) as caught:
        await make_caller(max_retries=2).complete(ask())
    assert len(fake.requests) == 3
    error = caught.value
    assert (error.status_code, error.error_type) == (529, "overloaded_error")
    assert "529" in str(error) and "Overloaded right now" in str(error)
    assert "3 attempts" in str(error)


async def test_a_bad_request_is_not_retried_and_names_the_api_message(
    fake: FakeAnthropic, make_caller: MakeCaller
) -> None:
    fake.push(ErrorReply(400, "invalid_request_error", "max_tokens: 99999999 > 128000"))
    with pytest.raises(ProviderError) as caught:
        await make_caller(max_retries=2).complete(ask())
    assert len(fake.requests) == 1
    assert caught.value.status_code == 400
    assert "invalid_request_error" in str(caught.value)
    assert "max_tokens: 99999999 > 128000" in str(caught.value)


async def test_a_rejected_key_tells_the_user_to_check_anthropic_api_key(
    fake: FakeAnthropic, make_caller: MakeCaller
) -> None:
    with pytest.raises(ProviderError) as caught:
        await make_caller(api_key="sk-ant-wrong", max_retries=2).complete(ask())
    assert len(fake.requests) == 1
    assert caught.value.status_code == 401
    assert "invalid x-api-key" in str(caught.value)
    assert "ANTHROPIC_API_KEY" in str(caught.value)


async def test_an_unreachable_server_is_a_connection_error(make_caller: MakeCaller) -> None:
    with socket.socket() as probe:  # a port nothing listens on once the probe closes
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    caller = make_caller(base_url=f"http://127.0.0.1:{port}")
    with pytest.raises(ProviderError) as caught:
        await caller.complete(ask())
    assert "Could not connect" in str(caught.value)
    assert f"127.0.0.1:{port}" in str(caught.value)


async def test_a_server_that_does_not_answer_in_time_is_a_timeout(
    fake: FakeAnthropic, make_caller: MakeCaller
) -> None:
    fake.push(StreamReply([Text(["too late"])], delay_s=2.0))
    with pytest.raises(ProviderError) as caught:
        await make_caller(timeout=0.2).complete(ask())
    assert "did not answer within 0.2 s" in str(caught.value)
    assert len(fake.requests) == 1


async def test_a_stream_that_stalls_midway_is_a_provider_error(
    fake: FakeAnthropic, make_caller: MakeCaller
) -> None:
    fake.push(StreamReply([Text(["started"]), Text(["stalled"])], delay_s=2.0, delay_after=1))
    deltas: list[str] = []
    with pytest.raises(ProviderError) as caught:
        await make_caller(timeout=0.3).complete(ask(), deltas.append)
    assert deltas == ["started"]
    assert "stream broke off" in str(caught.value)


async def test_an_error_event_mid_stream_is_a_provider_error(
    fake: FakeAnthropic, make_caller: MakeCaller
) -> None:
    fake.push(StreamReply([Text(["partial"]), Text(["never sent"])], error_after=1))
    deltas: list[str] = []
    with pytest.raises(ProviderError) as caught:
        await make_caller().complete(ask(), deltas.append)
    assert deltas == ["partial"]
    assert caught.value.error_type == "overloaded_error"
    assert "during streaming" in str(caught.value)


async def test_a_stream_cut_before_message_stop_is_a_provider_error(
    fake: FakeAnthropic, make_caller: MakeCaller
) -> None:
    fake.push(StreamReply([Text(["partial"]), Text(["lost"])], cut_after=1))
    with pytest.raises(ProviderError) as caught:
        await make_caller().complete(ask())
    assert "message_stop" in str(caught.value)


def test_a_missing_api_key_fails_at_construction(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    for name in (
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_PROFILE",
        "ANTHROPIC_CONFIG_DIR",
        "ANTHROPIC_IDENTITY_TOKEN",
        "ANTHROPIC_IDENTITY_TOKEN_FILE",
        "ANTHROPIC_FEDERATION_RULE_ID",
        "ANTHROPIC_ORGANIZATION_ID",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no saved SDK profile to fall back on
    with pytest.raises(ProviderError, match="ANTHROPIC_API_KEY"):
        AnthropicCaller()


# -- the whole loop ----------------------------------------------------------------------
def build_runtime(
    caller: AnthropicCaller, words: list[str], *, cache: bool = True
) -> ToolCallingRuntime:
    registry = ToolRegistry()

    @registry.tool
    def count_words(text: str) -> dict[str, int]:
        """Count the words in a text."""
        words.append(text)
        return {"words": len(text.split())}

    @registry.tool
    def fetch_url(url: str) -> str:
        """Fetch a URL."""
        raise ToolError(f"network is disabled: {url}")

    return ToolCallingRuntime(
        registry, ToolRunner(registry), caller, system_prompt="Be exact.", cache=cache
    )


async def test_the_runtime_loop_runs_tools_and_sends_their_results_back(
    fake: FakeAnthropic, make_caller: MakeCaller
) -> None:
    fake.push(
        StreamReply(
            [
                Text(["Counting."]),
                ToolUse("toolu_count", "count_words", ['{"text": ', '"the quick brown fox"}']),
                ToolUse("toolu_fetch", "fetch_url", ['{"url": "http://x"}']),
            ],
            stop_reason="tool_use",
            input_tokens=30,
            output_tokens=20,
        ),
        StreamReply([Text(["There are ", "4 words."])], input_tokens=60, output_tokens=8),
    )
    words: list[str] = []
    deltas: list[str] = []
    # The runtime's setting turns the breakpoints off, so the body is the plain translation.
    runtime = build_runtime(make_caller(), words, cache=False)

    result = await runtime.arun_tool_loop(
        "How many words?",
        observers=[lambda e: deltas.append(e.text) if isinstance(e, TextDelta) else None],
    )

    assert result.content == "There are 4 words."
    assert result.iterations == 2
    assert words == ["the quick brown fox"]
    count, fetch = result.tool_call_history
    assert (count.success, count.output) == (True, {"words": 4})
    assert (fetch.success, fetch.error_kind) == (False, "execution_error")
    assert deltas == ["Counting.", "There are ", "4 words."]
    assert (result.usage.input_tokens, result.usage.output_tokens) == (90, 28)

    assert len(fake.requests) == 2
    second = fake.requests[1].body
    assert second["system"] == "Be exact."
    assert [t["name"] for t in second["tools"]] == ["count_words", "fetch_url"]
    user, assistant, results = second["messages"]
    assert user == {"role": "user", "content": "How many words?"}
    assert assistant["content"] == [
        {"type": "text", "text": "Counting."},
        {
            "type": "tool_use",
            "id": "toolu_count",
            "name": "count_words",
            "input": {"text": "the quick brown fox"},
        },
        {
            "type": "tool_use",
            "id": "toolu_fetch",
            "name": "fetch_url",
            "input": {"url": "http://x"},
        },
    ]
    ok, failed = results["content"]
    assert ok == {
        "type": "tool_result",
        "tool_use_id": "toolu_count",
        "content": json.dumps({"words": 4}),
    }
    assert "is_error" not in ok
    assert failed["tool_use_id"] == "toolu_fetch" and failed["is_error"] is True
    assert "network is disabled" in json.loads(failed["content"])["error"]


async def test_thinking_before_a_tool_call_goes_back_unchanged(
    fake: FakeAnthropic, make_caller: MakeCaller
) -> None:
    # Current models think by default; the API refuses the next request unless the latest
    # assistant turn's thinking blocks come back as they were (the fake checks this too).
    thinking = Thinking(["I should ", "count."], signature="sig-abc123")
    fake.push(
        StreamReply(
            [
                thinking,
                Text(["Counting."]),
                ToolUse("toolu_count", "count_words", ['{"text": "a b"}']),
            ],
            stop_reason="tool_use",
        ),
        StreamReply([Text(["2 words."])]),
    )
    runtime = build_runtime(make_caller(), [])

    result = await runtime.arun_tool_loop("How many words?")

    assert result.content == "2 words."
    assistant = fake.requests[1].body["messages"][1]
    assert assistant["content"] == [
        {"type": "thinking", "thinking": "I should count.", "signature": "sig-abc123"},
        {"type": "text", "text": "Counting."},
        {"type": "tool_use", "id": "toolu_count", "name": "count_words", "input": {"text": "a b"}},
    ]


async def test_thinking_survives_the_history_store_into_a_continued_run(
    fake: FakeAnthropic, make_caller: MakeCaller, tmp_path: Path
) -> None:
    # A run interrupted mid-tool-cycle and continued later by a new process: the signed
    # thinking must come back from the stored conversation, not from any in-memory cache.
    from cleveragents.service.history import RunHistory
    from cleveragents.tool.runtime import close_dangling_calls

    fake.push(
        StreamReply(
            [
                Thinking(["plan"], signature="sig-x"),
                ToolUse("toolu_a", "read_file", ['{"path": "a"}']),
            ],
            stop_reason="tool_use",
        ),
    )
    first = await make_caller().complete(ask(tools=[READ_FILE]))
    assert first.provider_data is not None
    history = RunHistory(tmp_path / "h.sqlite3")
    from cleveragents.tool.events import ResponseReceived, RunStarted

    history(RunStarted("run_a", "hello", "", None, "full-auto", 5))
    history(
        ResponseReceived(
            "run_a", 1, AssistantMessage(first.text, tuple(first.tool_calls), first.provider_data)
        )
    )
    history.close()
    stored = close_dangling_calls(RunHistory(tmp_path / "h.sqlite3").conversation("run_a"))
    fake.push(StreamReply([Text(["fine"])]))
    second = await make_caller().complete(LLMRequest([*stored, UserMessage("go on")], [READ_FILE]))
    assert second.text == "fine"
    sent = fake.requests[-1].body["messages"][1]["content"]
    assert sent[0] == {"type": "thinking", "thinking": "plan", "signature": "sig-x"}


async def test_the_fake_refuses_a_tool_turn_whose_thinking_was_dropped(
    fake: FakeAnthropic, make_caller: MakeCaller
) -> None:
    # The control for the test above: a caller that never saw the thinking cannot echo it.
    fake.push(
        StreamReply(
            [
                Thinking(["hmm"], signature="sig-1"),
                ToolUse("toolu_1", "read_file", ['{"path": "a"}']),
            ],
            stop_reason="tool_use",
        )
    )
    first = await make_caller().complete(ask(tools=[READ_FILE]))
    history: list[Message] = [
        UserMessage("hello"),
        AssistantMessage(first.text, tuple(first.tool_calls)),
        ToolResultsMessage((ToolResult("toolu_1", "read_file", {"text": "a"}),)),
    ]
    with pytest.raises(ProviderError) as caught:
        await make_caller().complete(LLMRequest(history, [READ_FILE]))
    assert caught.value.status_code == 400
    assert "Expected `thinking`" in str(caught.value)


# -- prompt caching ------------------------------------------------------------------------
PAGE = "def handler(event):\n    return {'status': 200, 'body': event}\n" * 100  # ~6 KB


def paging_runtime(caller: AnthropicCaller, *, cache: bool = True) -> ToolCallingRuntime:
    registry = ToolRegistry()

    @registry.tool
    def read_page(n: int) -> dict[str, str]:
        """Read one page of a long file."""
        return {"page": f"page {n}\n{PAGE}"}

    return ToolCallingRuntime(
        registry, ToolRunner(registry), caller, system_prompt="Be exact.", cache=cache
    )


def page_replies(pages: int) -> list[StreamReply]:
    calls = [
        StreamReply(
            [ToolUse(f"toolu_{n}", "read_page", [json.dumps({"n": n})])], stop_reason="tool_use"
        )
        for n in range(1, pages + 1)
    ]
    return [*calls, StreamReply([Text(["Read them all."])])]


def marks(body: dict[str, Any]) -> int:
    return json.dumps(body).count('"cache_control"')


async def test_breakpoints_mark_the_last_tool_the_system_and_the_newest_messages(
    fake: FakeAnthropic, make_caller: MakeCaller
) -> None:
    fake.push(*page_replies(3))
    result = await paging_runtime(make_caller()).arun_tool_loop("Read pages 1 to 3.")
    assert result.stop_reason == "final_answer"

    first, *_, last = (r.body for r in fake.requests)
    ephemeral = {"type": "ephemeral"}
    assert first["tools"][-1]["cache_control"] == ephemeral
    assert first["system"] == [{"type": "text", "text": "Be exact.", "cache_control": ephemeral}]
    assert first["messages"] == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "Read pages 1 to 3.", "cache_control": ephemeral}],
        }
    ]
    # The newest message, and the newest of the request before (which that request wrote).
    messages = last["messages"]
    assert messages[-1]["content"][-1]["cache_control"] == ephemeral
    assert messages[-3]["content"][-1]["cache_control"] == ephemeral
    assert marks({"m": messages[:-3]}) == 0 and marks({"m": messages[-2]}) == 0
    assert all(marks(r.body) <= 4 for r in fake.requests)
    assert [marks(r.body) for r in fake.requests] == [3, 4, 4, 4]


async def test_iteration_two_on_reads_the_previous_request_from_the_cache(
    fake: FakeAnthropic, make_caller: MakeCaller
) -> None:
    fake.push(*page_replies(4))
    caller = make_caller(model="claude-sonnet-4-5")
    # A prompt long enough to be cached on its own (Sonnet caches 1,024 tokens or more).
    result = await paging_runtime(caller).arun_tool_loop("Read pages 1 to 4.\n" + PAGE)

    counted = [r.usage for r in fake.requests]
    assert all(c is not None for c in counted)
    totals = [c.total for c in counted if c is not None]
    usage = result.iteration_usage
    assert [u.input_tokens for u in usage] == totals
    # The first request writes its whole prefix; each later one reads the one before and
    # writes only what it added.
    assert (usage[0].cache_read_tokens, usage[0].cache_write_tokens) == (0, totals[0])
    for n in range(1, len(usage)):
        assert usage[n].cache_read_tokens == totals[n - 1]
        assert usage[n].cache_write_tokens == totals[n] - totals[n - 1]
        assert usage[n].uncached_input_tokens == 0
    assert result.usage.cache_read_tokens == sum(totals[:-1])
    assert result.cost_usd is not None

    uncached = FakeAnthropic().start()
    try:
        uncached.push(*page_replies(4))
        off = make_caller(model="claude-sonnet-4-5", base_url=uncached.base_url, cache=False)
        plain = await paging_runtime(off).arun_tool_loop("Read pages 1 to 4.\n" + PAGE)
    finally:
        uncached.close()
    assert plain.usage.input_tokens == result.usage.input_tokens
    assert plain.usage.cache_read_tokens == plain.usage.cache_write_tokens == 0
    assert plain.cost_usd is not None and result.cost_usd < 0.6 * plain.cost_usd


@pytest.mark.parametrize("off", ["caller", "runtime", "environment"])
async def test_caching_off_sends_no_breakpoint(
    fake: FakeAnthropic,
    make_caller: MakeCaller,
    monkeypatch: pytest.MonkeyPatch,
    off: str,
) -> None:
    if off == "environment":
        monkeypatch.setenv("CLEVERAGENTS_PROMPT_CACHING", "0")
    caller = make_caller(cache=False) if off == "caller" else make_caller()
    fake.push(*page_replies(2))
    result = await paging_runtime(caller, cache=off != "runtime").arun_tool_loop(
        "Read pages 1 and 2.\n" + PAGE
    )
    assert all(marks(r.body) == 0 for r in fake.requests)
    assert fake.requests[0].body["system"] == "Be exact."
    assert result.usage.cache_read_tokens == result.usage.cache_write_tokens == 0


async def test_the_sent_prefix_is_byte_identical_from_one_request_to_the_next(
    fake: FakeAnthropic, make_caller: MakeCaller
) -> None:
    fake.push(*page_replies(3))
    await paging_runtime(make_caller(cache=False)).arun_tool_loop("Read pages 1 to 3.")
    bodies = [r.body for r in fake.requests]
    for before, after in itertools.pairwise(bodies):
        assert after["tools"] == before["tools"] and after["system"] == before["system"]
        sent = before["messages"]
        assert json.dumps(after["messages"][: len(sent)]) == json.dumps(sent)


def sdk_request(model: str, *blocks: dict[str, Any], **params: Any) -> dict[str, Any]:
    return {
        "model": model,
        "max_tokens": 100,
        "messages": [{"role": "user", "content": list(blocks)}],
        **params,
    }


def text_block(text: str, mark: bool = False) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": text}
    if mark:
        block["cache_control"] = {"type": "ephemeral"}
    return block


async def send(caller: AnthropicCaller, body: dict[str, Any]) -> Any:
    stream = await caller.client.messages.create(**body, stream=True)
    usage = None
    async with stream:
        async for event in stream:
            if event.type == "message_start":
                usage = event.message.usage
    return usage


async def test_the_fake_refuses_a_fifth_breakpoint_as_the_api_does(
    fake: FakeAnthropic, make_caller: MakeCaller
) -> None:
    from anthropic import BadRequestError

    caller = make_caller()
    body = sdk_request("claude-sonnet-4-5", *(text_block(f"part {n}", True) for n in range(5)))
    with pytest.raises(BadRequestError, match="A maximum of 4 blocks with cache_control"):
        await send(caller, body)


@pytest.mark.parametrize(("between", "read"), [(20, True), (21, False)])
async def test_the_fake_looks_back_twenty_blocks_from_a_breakpoint(
    fake: FakeAnthropic, make_caller: MakeCaller, between: int, read: bool
) -> None:
    fake.push(StreamReply([Text(["ok"])]), StreamReply([Text(["ok"])]))
    caller = make_caller()
    first = await send(caller, sdk_request("claude-sonnet-4-5", text_block(PAGE, True)))
    assert first.cache_creation_input_tokens > 1024 and first.cache_read_input_tokens == 0
    later = [text_block(f"note {n}") for n in range(between)]
    later[-1]["cache_control"] = {"type": "ephemeral"}
    second = await send(caller, sdk_request("claude-sonnet-4-5", text_block(PAGE), *later))
    expected = first.cache_creation_input_tokens if read else 0
    assert second.cache_read_input_tokens == expected


@pytest.mark.parametrize(
    ("model", "cached"), [("claude-sonnet-4-5", True), ("claude-haiku-4-5", False)]
)
async def test_the_fake_caches_only_from_the_models_minimum_length(
    fake: FakeAnthropic, make_caller: MakeCaller, model: str, cached: bool
) -> None:
    fake.push(StreamReply([Text(["ok"])]), StreamReply([Text(["ok"])]))
    caller = make_caller()
    body = sdk_request(model, text_block(PAGE, True))  # ~1,600 tokens: under Haiku 4.5's 4,096
    first, second = await send(caller, body), await send(caller, body)
    assert (first.cache_creation_input_tokens > 0) is cached
    assert (second.cache_read_input_tokens > 0) is cached
    counted = fake.requests[1].usage
    assert counted is not None
    assert second.input_tokens + second.cache_read_input_tokens == counted.total


async def test_usage_parts_are_summed_into_input_and_kept_apart(
    fake: FakeAnthropic, make_caller: MakeCaller
) -> None:
    fake.push(
        StreamReply(
            [Text(["hi"])],
            input_tokens=42,
            cache_creation_input_tokens=50,
            cache_read_input_tokens=100,
            output_tokens=7,
        )
    )
    response = await make_caller().complete(ask())
    usage = response.usage
    assert (usage.input_tokens, usage.output_tokens) == (192, 7)
    assert (usage.cache_read_tokens, usage.cache_write_tokens) == (100, 50)
    assert usage.uncached_input_tokens == 42


# -- too long ------------------------------------------------------------------------------
async def test_a_prompt_over_the_window_is_a_context_length_error(
    make_caller: MakeCaller,
) -> None:
    from cleveragents.providers.errors import ProviderContextLengthError
    from cleveragents.tool.errors import ContextLengthExceeded

    with FakeAnthropic(context_window=1000) as small:
        small.push(StreamReply([Text(["unused"])]))
        caller = make_caller(base_url=small.base_url, max_tokens=100)
        with pytest.raises(ProviderContextLengthError) as caught:
            await caller.complete(ask(PAGE))
        assert isinstance(caught.value, ContextLengthExceeded)
        assert caught.value.status_code == 400
        assert caught.value.error_type == "invalid_request_error"
        assert "prompt is too long:" in str(caught.value) and "> 1000 maximum" in str(caught.value)
        # Input that fits, but not with the answer's room: refused the same way.
        with pytest.raises(ProviderContextLengthError, match="exceed context limit"):
            await make_caller(base_url=small.base_url, max_tokens=900).complete(ask(PAGE[:1600]))
        assert len(small.requests) == 2 and small.requests[0].usage is None


async def test_a_request_over_the_size_limit_is_a_context_length_error(
    make_caller: MakeCaller,
) -> None:
    from cleveragents.providers.errors import ProviderContextLengthError

    with FakeAnthropic(max_request_bytes=4000) as small:
        with pytest.raises(ProviderContextLengthError) as caught:
            await make_caller(base_url=small.base_url).complete(ask(PAGE))
        assert caught.value.status_code == 413
        assert "request_too_large" in str(caught.value)


async def test_other_bad_requests_are_not_context_length_errors(
    fake: FakeAnthropic, make_caller: MakeCaller
) -> None:
    from cleveragents.providers.errors import ProviderContextLengthError

    fake.push(ErrorReply(400, "invalid_request_error", "tools.0.name: String should match"))
    with pytest.raises(ProviderError) as caught:
        await make_caller().complete(ask())
    assert not isinstance(caught.value, ProviderContextLengthError)


async def test_the_runtime_shrinks_and_retries_when_the_service_refuses_a_long_request(
    make_caller: MakeCaller,
) -> None:
    # The runtime believes the window is large; the service knows better and says so.
    with FakeAnthropic(context_window=6000) as small:
        small.push(*page_replies(4))
        caller = make_caller(base_url=small.base_url, max_tokens=500, context_window=100_000)
        result = await paging_runtime(caller).arun_tool_loop("Read pages 1 to 4.")
    assert result.stop_reason == "final_answer"
    refused = [r for r in small.requests if r.usage is None]
    assert len(refused) == 1
    retried = small.requests[small.requests.index(refused[0]) + 1]
    assert retried.usage is not None and retried.usage.total <= 6000 - 500
    assert "elided to fit the context" in json.dumps(retried.body["messages"])


def test_the_caller_says_its_model_output_room_and_window() -> None:
    caller = AnthropicCaller("claude-x", api_key="k", max_tokens=1234, context_window=50_000)
    assert (caller.model, caller.max_tokens, caller.context_window) == ("claude-x", 1234, 50_000)
    assert AnthropicCaller(api_key="k").context_window is None
    with pytest.raises(ValueError, match="context_window"):
        AnthropicCaller(api_key="k", context_window=0)


@pytest.mark.parametrize("flag", [True, False])
def test_the_cli_flag_turns_the_breakpoints_off(
    fake: FakeAnthropic, tmp_path: Path, flag: bool
) -> None:
    fake.push(StreamReply([Text(["Nothing to do."])]))
    env = {
        **os.environ,
        "ANTHROPIC_API_KEY": API_KEY,
        "ANTHROPIC_BASE_URL": fake.base_url,
        "CLEVERAGENTS_PROVIDER": "",
    }
    env.pop("CLEVERAGENTS_PROMPT_CACHING", None)
    command = [sys.executable, "-m", "cleveragents", "run", "hi", "--sandbox", str(tmp_path)]
    command += ["--provider", "anthropic", "--no-history", "--json"]
    completed = subprocess.run(
        [*command, *(["--no-prompt-cache"] if flag else [])],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    (sent,) = fake.requests
    assert (marks(sent.body) == 0) is flag
