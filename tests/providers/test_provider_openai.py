"""The `openai` provider against a fake Chat Completions server, through the real SDK."""

from __future__ import annotations

import itertools
import json
import socket
import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from cleveragents.providers.errors import ProviderError
from cleveragents.providers.openai import LOCAL_SERVER_API_KEY, OpenAICaller
from cleveragents.tool import (
    AssistantMessage,
    LLMCaller,
    LLMRequest,
    Message,
    RunEvent,
    TextDelta,
    ToolCallingRuntime,
    ToolCallRequest,
    ToolRegistry,
    ToolResult,
    ToolResultsMessage,
    ToolRunner,
    ToolSchema,
    UserMessage,
)
from support.fake_openai import (
    ChunkScript,
    DropConnection,
    ErrorReply,
    FakeOpenAIServer,
    Stall,
    openai_error,
    text_reply,
    tool_call_reply,
)

WEATHER = ToolSchema(
    name="get_weather",
    description="Current weather for a city.",
    input_schema={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
)


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture
async def caller(server: FakeOpenAIServer) -> AsyncIterator[OpenAICaller]:
    llm = OpenAICaller("fake-model", base_url=server.base_url, max_retries=2)
    yield llm
    await llm.aclose()


def ask(text: str, tools: list[ToolSchema] | None = None) -> LLMRequest:
    return LLMRequest(messages=[UserMessage(text)], tools=list(tools or []))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def weather_registry(calls: list[str]) -> ToolRegistry:
    registry = ToolRegistry()

    def get_weather(city: str) -> dict[str, Any]:
        """Current weather for a city."""
        calls.append(city)
        return {"city": city, "temperature_c": len(city) + 10}

    registry.register("get_weather", get_weather)
    return registry


# -- request shape -------------------------------------------------------------------------


async def test_request_carries_tools_history_and_results_in_openai_format(
    server: FakeOpenAIServer, caller: OpenAICaller
) -> None:
    server.enqueue(text_reply("Done."))
    history: list[Message] = [
        UserMessage("Weather in Paris and Oslo?"),
        AssistantMessage(
            "Checking.",
            (
                ToolCallRequest("call_a", "get_weather", {"city": "Paris"}),
                ToolCallRequest("call_b", "get_weather", {"town": "Oslo"}),
            ),
        ),
        ToolResultsMessage(
            (
                ToolResult("call_a", "get_weather", {"city": "Paris", "temperature_c": 18}),
                ToolResult(
                    "call_b",
                    "get_weather",
                    {"error": "missing required argument 'city'", "error_kind": "validation_error"},
                    is_error=True,
                ),
            )
        ),
    ]
    request = LLMRequest(messages=history, tools=[WEATHER], system="Be brief.")

    await caller.complete(request)

    assert len(server.requests) == 1
    sent = server.requests[0]
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {LOCAL_SERVER_API_KEY}"
    body = sent.body
    assert body["model"] == "fake-model"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Current weather for a city.",
                "parameters": WEATHER.input_schema,
            },
        }
    ]
    messages = body["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "tool"]
    assert messages[0] == {"role": "system", "content": "Be brief."}
    assert messages[1] == {"role": "user", "content": "Weather in Paris and Oslo?"}
    assistant = messages[2]
    assert assistant["content"] == "Checking."
    assert [c["id"] for c in assistant["tool_calls"]] == ["call_a", "call_b"]
    for call in assistant["tool_calls"]:
        assert call["type"] == "function"
        assert call["function"]["name"] == "get_weather"
        assert isinstance(call["function"]["arguments"], str)  # JSON text, not an object
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {"city": "Paris"}
    assert json.loads(assistant["tool_calls"][1]["function"]["arguments"]) == {"town": "Oslo"}
    ok, failed = messages[3], messages[4]
    assert ok["tool_call_id"] == "call_a"
    assert json.loads(ok["content"]) == {"city": "Paris", "temperature_c": 18}
    assert failed["tool_call_id"] == "call_b"
    assert json.loads(failed["content"]) == {
        "error": "missing required argument 'city'",
        "error_kind": "validation_error",
    }


async def test_tools_are_left_out_when_there_are_none(
    server: FakeOpenAIServer, caller: OpenAICaller
) -> None:
    server.enqueue(text_reply("Hi."))
    await caller.complete(ask("Hello"))
    assert "tools" not in server.bodies[0]
    assert server.bodies[0]["messages"] == [{"role": "user", "content": "Hello"}]


async def test_an_api_key_is_sent_as_a_bearer_token(server: FakeOpenAIServer) -> None:
    server.enqueue(text_reply("Hi."))
    llm = OpenAICaller("fake-model", base_url=server.base_url, api_key="sk-test-123")
    try:
        await llm.complete(ask("Hello"))
    finally:
        await llm.aclose()
    assert server.requests[0].headers["authorization"] == "Bearer sk-test-123"


# -- streaming -----------------------------------------------------------------------------


async def test_text_deltas_stream_in_order_and_usage_comes_from_the_last_chunk(
    server: FakeOpenAIServer, caller: OpenAICaller
) -> None:
    server.enqueue(
        ChunkScript().text("Hel", "lo", ", wor", "ld").finish("stop").usage(42, 7).reply()
    )
    deltas: list[str] = []

    response = await caller.complete(ask("Say hello"), deltas.append)

    assert deltas == ["Hel", "lo", ", wor", "ld"]
    assert response.text == "Hello, world"
    assert response.tool_calls == []
    assert response.stop_reason == "stop"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (42, 7)


async def test_tool_call_arguments_split_over_chunks_are_assembled(
    server: FakeOpenAIServer, caller: OpenAICaller
) -> None:
    script = (
        ChunkScript()
        .tool_call_start(0, "call_w1", "get_weather")
        .tool_arguments(0, '{"ci', 'ty": "Par', 'is"', "}")
        .finish("tool_calls")
        .usage(30, 12)
    )
    server.enqueue(script.reply())

    response = await caller.complete(ask("Weather in Paris?", [WEATHER]))

    assert response.stop_reason == "tool_calls"
    assert response.text == ""
    assert response.tool_calls == [
        ToolCallRequest("call_w1", "get_weather", {"city": "Paris"}, parse_error=None)
    ]


async def test_two_parallel_tool_calls_in_one_response(
    server: FakeOpenAIServer, caller: OpenAICaller
) -> None:
    # Fragments of the two calls interleave, as they do when a server streams both at once.
    script = (
        ChunkScript()
        .text("Checking both.")
        .tool_call_start(0, "call_p", "get_weather", '{"city"')
        .tool_call_start(1, "call_o", "get_weather")
        .tool_arguments(1, '{"city": ')
        .tool_arguments(0, ': "Paris"}')
        .tool_arguments(1, '"Oslo"}')
        .finish("tool_calls")
        .usage(30, 20)
    )
    server.enqueue(script.reply())

    response = await caller.complete(ask("Paris and Oslo?", [WEATHER]))

    assert response.text == "Checking both."
    assert [(c.call_id, c.tool_name, c.arguments) for c in response.tool_calls] == [
        ("call_p", "get_weather", {"city": "Paris"}),
        ("call_o", "get_weather", {"city": "Oslo"}),
    ]


async def test_servers_that_repeat_names_or_reuse_an_index_are_understood(
    server: FakeOpenAIServer, caller: OpenAICaller
) -> None:
    # Seen in the wild: the id and name repeated on every fragment of one call, and a
    # second parallel call sent under the same index 0 with its own id.
    script = (
        ChunkScript()
        .tool_call_start(0, "call_x", "get_weather", '{"city": ')
        .tool_call_start(0, "call_x", "get_weather", '"Rome"}')
        .tool_call_start(0, "call_y", "get_weather", '{"city": "Oslo"}')
        .finish("tool_calls")
    )
    server.enqueue(script.reply())

    response = await caller.complete(ask("Rome and Oslo?", [WEATHER]))

    assert [(c.call_id, c.tool_name, c.arguments) for c in response.tool_calls] == [
        ("call_x", "get_weather", {"city": "Rome"}),
        ("call_y", "get_weather", {"city": "Oslo"}),
    ]
    assert response.usage.input_tokens == 0  # no usage chunk: nothing reported


async def test_invalid_json_arguments_become_a_request_with_a_parse_error(
    server: FakeOpenAIServer, caller: OpenAICaller
) -> None:
    server.enqueue(tool_call_reply("call_bad", "get_weather", '{"city": "Par'))

    response = await caller.complete(ask("Weather?", [WEATHER]))

    [call] = response.tool_calls
    assert call.call_id == "call_bad"
    assert call.arguments == '{"city": "Par'
    assert call.parse_error is not None


async def test_an_error_event_in_the_stream_is_a_provider_error(
    server: FakeOpenAIServer, caller: OpenAICaller
) -> None:
    reply = ChunkScript().text("Partial").reply(done=False)
    reply.chunks.append({"error": {"message": "the model crashed", "type": "server_error"}})
    server.enqueue(reply)

    with pytest.raises(ProviderError, match="the model crashed"):
        await caller.complete(ask("Hello"))


async def test_a_stream_cut_off_midway_is_a_provider_error(
    server: FakeOpenAIServer, caller: OpenAICaller
) -> None:
    reply = ChunkScript().text("one", "two", "three").finish("stop").reply(drop_after=2)
    server.enqueue(reply)
    deltas: list[str] = []

    with pytest.raises(ProviderError, match="broke off while streaming"):
        await caller.complete(ask("Count"), deltas.append)
    assert deltas == ["one"]  # what arrived before the cut was streamed
    assert len(server.requests) == 1  # a stream that started is not retried


async def test_a_server_that_never_answers_times_out(server: FakeOpenAIServer) -> None:
    server.enqueue(Stall())
    llm = OpenAICaller("fake-model", base_url=server.base_url, max_retries=0, timeout=0.2)
    try:
        with pytest.raises(ProviderError, match=r"timed out \(timeout 0\.2s, 1 attempt\)"):
            await llm.complete(ask("Hello"))
    finally:
        await llm.aclose()


# -- errors and retries --------------------------------------------------------------------


async def test_429_and_500_are_retried_then_the_answer_comes_through(
    server: FakeOpenAIServer, caller: OpenAICaller
) -> None:
    server.enqueue(
        openai_error(
            429,
            "Rate limit reached",
            error_type="requests",
            code="rate_limit_exceeded",
            headers={"retry-after-ms": "5"},
        ),
        openai_error(
            500,
            "The server had an error",
            error_type="server_error",
            headers={"retry-after": "0.005"},
        ),
        text_reply("Finally."),
    )

    response = await caller.complete(ask("Hello"))

    assert response.text == "Finally."
    assert len(server.requests) == 3
    assert [r.headers["x-stainless-retry-count"] for r in server.requests] == ["0", "1", "2"]
    assert server.bodies[0] == server.bodies[2]  # the same request, resent


async def test_rate_limit_after_retries_run_out_is_a_clear_provider_error(
    server: FakeOpenAIServer, caller: OpenAICaller
) -> None:
    limit = openai_error(
        429,
        "Rate limit reached for requests",
        error_type="requests",
        code="rate_limit_exceeded",
        headers={"retry-after-ms": "5"},
    )
    server.enqueue(limit, limit, limit, text_reply("never sent"))

    with pytest.raises(ProviderError) as raised:
        await caller.complete(ask("Hello"))

    message = str(raised.value)
    assert "429" in message
    assert "Rate limit reached for requests" in message
    assert "3 attempts" in message
    assert len(server.requests) == 3  # the first try and max_retries=2 retries
    assert server.pending == 1


async def test_server_errors_after_retries_run_out(
    server: FakeOpenAIServer, caller: OpenAICaller
) -> None:
    failure = openai_error(
        503, "Model is loading", error_type="server_error", headers={"retry-after": "0.005"}
    )
    server.enqueue(failure, failure, failure)

    with pytest.raises(ProviderError, match=r"503: Model is loading.*after 3 attempts"):
        await caller.complete(ask("Hello"))
    assert len(server.requests) == 3


async def test_a_client_error_is_not_retried_and_keeps_the_servers_words(
    server: FakeOpenAIServer, caller: OpenAICaller
) -> None:
    server.enqueue(openai_error(400, "fake-model does not support tools"))

    with pytest.raises(ProviderError) as raised:
        await caller.complete(ask("Weather?", [WEATHER]))

    assert "400: fake-model does not support tools" in str(raised.value)
    assert "supports tool calling" in str(raised.value)
    assert len(server.requests) == 1


async def test_an_unknown_model_names_the_model(
    server: FakeOpenAIServer, caller: OpenAICaller
) -> None:
    server.enqueue(openai_error(404, "model 'fake-model' not found", error_type="not_found_error"))

    with pytest.raises(ProviderError, match=r"404: model 'fake-model' not found.*ollama pull"):
        await caller.complete(ask("Hello"))


async def test_an_error_without_a_body_still_names_the_status(
    server: FakeOpenAIServer, caller: OpenAICaller
) -> None:
    server.enqueue(ErrorReply(404, ""))

    with pytest.raises(ProviderError, match=r"answered 404: no details in the response"):
        await caller.complete(ask("Hello"))


async def test_a_plain_text_error_body_is_reported(
    server: FakeOpenAIServer, caller: OpenAICaller
) -> None:
    server.enqueue(ErrorReply(401, "Unauthorized: bad token"))

    with pytest.raises(ProviderError, match=r"401: Unauthorized: bad token.*OPENAI_API_KEY"):
        await caller.complete(ask("Hello"))


async def test_a_dropped_connection_is_retried(
    server: FakeOpenAIServer,
) -> None:
    server.enqueue(DropConnection(), text_reply("Back."))
    llm = OpenAICaller("fake-model", base_url=server.base_url, max_retries=1)
    try:
        response = await llm.complete(ask("Hello"))
    finally:
        await llm.aclose()
    assert response.text == "Back."
    assert len(server.requests) == 2


async def test_connection_refused_asks_whether_the_local_server_runs() -> None:
    base_url = f"http://127.0.0.1:{free_port()}/v1"
    llm = OpenAICaller("llama3.2", base_url=base_url, max_retries=0)
    try:
        with pytest.raises(ProviderError) as raised:
            await llm.complete(ask("Hello"))
    finally:
        await llm.aclose()
    message = str(raised.value)
    assert f"could not connect to {base_url}" in message
    assert f"running at {base_url}?" in message
    assert "1 attempt" in message


async def test_connection_refused_on_ollamas_port_names_ollama() -> None:
    # Port 11434 is Ollama's; nothing listens there on a test machine, or this test would
    # talk to it, so check first.
    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", 11434)) == 0:
            pytest.skip("something is listening on 127.0.0.1:11434")
    llm = OpenAICaller("llama3.2", base_url="http://127.0.0.1:11434/v1", max_retries=0)
    try:
        with pytest.raises(
            ProviderError, match=r"is Ollama running at http://127\.0\.0\.1:11434/v1"
        ):
            await llm.complete(ask("Hello"))
    finally:
        await llm.aclose()


# -- configuration -------------------------------------------------------------------------


def test_no_key_and_no_base_url_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ProviderError, match=r"OPENAI_API_KEY.*OPENAI_BASE_URL"):
        OpenAICaller("gpt-4o-mini")


async def test_base_url_and_key_come_from_the_environment(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    server.enqueue(text_reply("Hi."))
    llm = OpenAICaller("fake-model")
    try:
        assert llm.base_url == server.base_url
        await llm.complete(ask("Hello"))
    finally:
        await llm.aclose()
    assert server.requests[0].headers["authorization"] == "Bearer sk-from-env"


def test_official_openai_needs_no_base_url_when_a_key_is_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    llm = OpenAICaller("gpt-4o-mini", api_key="sk-test")
    assert llm.base_url == "https://api.openai.com/v1"


def test_a_missing_sdk_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)  # makes `import openai` fail
    with pytest.raises(ProviderError, match=r"pip install 'cleveragents\[openai\]'"):
        OpenAICaller("gpt-4o-mini", api_key="sk-test")


def test_a_model_name_is_required() -> None:
    with pytest.raises(ValueError, match="model name"):
        OpenAICaller("  ", api_key="sk-test")


def test_it_is_an_llm_caller() -> None:
    assert isinstance(OpenAICaller("gpt-4o-mini", api_key="sk-test"), LLMCaller)


# -- the whole loop ------------------------------------------------------------------------


async def test_full_loop_tool_call_runs_and_its_result_goes_back(
    server: FakeOpenAIServer, caller: OpenAICaller
) -> None:
    calls: list[str] = []
    registry = weather_registry(calls)
    runtime = ToolCallingRuntime(registry, ToolRunner(registry), caller, max_iterations=5)
    server.enqueue(
        ChunkScript()
        .text("Let me check.")
        .tool_call_start(0, "call_1", "get_weather")
        .tool_arguments(0, '{"city":', ' "Lisbon"}')
        .finish("tool_calls")
        .usage(50, 10)
        .reply(),
        ChunkScript().text("Lisbon is ", "16 °C.").finish("stop").usage(80, 6).reply(),
    )
    events: list[RunEvent] = []

    result = await runtime.arun_tool_loop("Weather in Lisbon?", observers=[events.append])

    assert calls == ["Lisbon"]
    assert result.content == "Lisbon is 16 °C."
    assert result.stop_reason == "final_answer"
    assert result.iterations == 2
    [record] = result.tool_call_history
    assert record.success
    assert record.call_id == "call_1"
    assert record.output == {"city": "Lisbon", "temperature_c": 16}
    assert (result.usage.input_tokens, result.usage.output_tokens) == (130, 16)
    assert [e.text for e in events if isinstance(e, TextDelta)] == [
        "Let me check.",
        "Lisbon is ",
        "16 °C.",
    ]

    first, second = server.bodies
    assert first["tools"][0]["function"]["name"] == "get_weather"
    assert first["tools"][0]["function"]["parameters"]["required"] == ["city"]
    sent = second["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool"]
    assert sent[1]["tool_calls"][0]["id"] == "call_1"
    assert json.loads(sent[1]["tool_calls"][0]["function"]["arguments"]) == {"city": "Lisbon"}
    assert sent[2]["tool_call_id"] == "call_1"
    assert json.loads(sent[2]["content"]) == {"city": "Lisbon", "temperature_c": 16}


async def test_full_loop_invalid_json_arguments_fail_the_call_and_the_model_is_told(
    server: FakeOpenAIServer, caller: OpenAICaller
) -> None:
    calls: list[str] = []
    registry = weather_registry(calls)
    runtime = ToolCallingRuntime(registry, ToolRunner(registry), caller, max_iterations=5)
    server.enqueue(
        tool_call_reply("call_bad", "get_weather", '{"city": "Lisbon"'),
        tool_call_reply("call_good", "get_weather", '{"city": "Lisbon"}'),
        text_reply("It is 16 °C in Lisbon."),
    )

    result = await runtime.arun_tool_loop("Weather in Lisbon?")

    assert result.content == "It is 16 °C in Lisbon."
    assert calls == ["Lisbon"]  # the broken call never ran
    bad, good = result.tool_call_history
    assert not bad.success
    assert bad.error_kind == "invalid_arguments"
    assert bad.error is not None and "not valid JSON" in bad.error
    assert good.success

    second = server.bodies[1]["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "tool"]
    # The broken arguments go back as a valid JSON object so servers accept the history.
    assert json.loads(second[1]["tool_calls"][0]["function"]["arguments"]) == {}
    told = json.loads(second[2]["content"])
    assert second[2]["tool_call_id"] == "call_bad"
    assert told["error_kind"] == "invalid_arguments"
    assert "not valid JSON" in told["error"]


async def test_full_loop_provider_failure_propagates(
    server: FakeOpenAIServer, caller: OpenAICaller
) -> None:
    registry = weather_registry([])
    runtime = ToolCallingRuntime(registry, ToolRunner(registry), caller)
    server.enqueue(openai_error(401, "Incorrect API key provided", error_type="invalid_api_key"))

    with pytest.raises(ProviderError, match="Incorrect API key provided"):
        await runtime.arun_tool_loop("Weather in Lisbon?")


# -- prompt caching and the window ---------------------------------------------------------
PAGE = "def handler(event):\n    return {'status': 200, 'body': event}\n" * 100  # ~6 KB


def paging_registry() -> ToolRegistry:
    registry = ToolRegistry()

    def read_page(n: int) -> dict[str, str]:
        """Read one page of a long file."""
        return {"page": f"page {n}\n{PAGE}"}

    registry.register("read_page", read_page)
    return registry


def page_replies(pages: int) -> list[Any]:
    calls = [
        tool_call_reply(f"call_{n}", "read_page", json.dumps({"n": n})) for n in range(1, pages + 1)
    ]
    return [*calls, text_reply("Read them all.")]


async def test_each_request_starts_with_the_previous_one_byte_for_byte(
    server: FakeOpenAIServer, caller: OpenAICaller
) -> None:
    registry = paging_registry()
    runtime = ToolCallingRuntime(registry, ToolRunner(registry), caller, system_prompt="Be exact.")
    server.enqueue(*page_replies(3))
    await runtime.arun_tool_loop("Read pages 1 to 3.")
    bodies = server.bodies
    assert len(bodies) == 4
    for before, after in itertools.pairwise(bodies):
        assert json.dumps(after["tools"]) == json.dumps(before["tools"])
        sent = before["messages"]
        assert json.dumps(after["messages"][: len(sent)]) == json.dumps(sent)
    assert bodies[0]["messages"][0] == {"role": "system", "content": "Be exact."}


async def test_cached_tokens_are_reported_from_the_second_request_on(
    server: FakeOpenAIServer, caller: OpenAICaller
) -> None:
    registry = paging_registry()
    runtime = ToolCallingRuntime(registry, ToolRunner(registry), caller, system_prompt="Be exact.")
    server.enqueue(*page_replies(3))
    result = await runtime.arun_tool_loop("Read pages 1 to 3.\n" + PAGE)

    counted = [r.usage for r in server.requests]
    usage = result.iteration_usage
    assert [u.input_tokens for u in usage] == [c.total for c in counted if c is not None]
    assert usage[0].cache_read_tokens == 0
    for n in range(1, len(usage)):
        previous = usage[n - 1].input_tokens
        # OpenAI caches from 1,024 tokens on, in steps of 128.
        assert previous - 128 < usage[n].cache_read_tokens <= previous
        assert (usage[n].cache_read_tokens - 1024) % 128 == 0
    assert result.usage.cache_write_tokens == 0


async def test_cached_and_cache_write_tokens_are_parsed_from_the_usage_chunk(
    server: FakeOpenAIServer, caller: OpenAICaller
) -> None:
    server.enqueue(
        ChunkScript().text("hi").finish("stop").usage(2000, 9, cached_tokens=1536).reply()
    )
    usage = (await caller.complete(ask("hello"))).usage
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens) == (2000, 9, 1536)
    assert usage.uncached_input_tokens == 464


async def test_a_request_over_the_window_is_a_context_length_error(caller: OpenAICaller) -> None:
    from cleveragents.providers.errors import ProviderContextLengthError
    from cleveragents.tool.errors import ContextLengthExceeded

    with FakeOpenAIServer(context_window=1000) as small:
        small.enqueue(text_reply("unused"))
        llm = OpenAICaller("fake-model", base_url=small.base_url, max_retries=0)
        try:
            with pytest.raises(ProviderContextLengthError) as caught:
                await llm.complete(ask(PAGE))
        finally:
            await llm.aclose()
        assert small.pending == 1  # refused before a reply was served
    assert isinstance(caught.value, ContextLengthExceeded)
    assert caught.value.status_code == 400
    assert "maximum context length is 1000 tokens" in str(caught.value)


@pytest.mark.parametrize(
    "refusal",
    [
        # vLLM
        ErrorReply(
            400,
            {
                "object": "error",
                "message": "This model's maximum context length is 4096 tokens. However, you "
                "requested 5000 tokens (4000 in the messages, 1000 in the completion).",
                "type": "BadRequestError",
                "param": None,
                "code": 400,
            },
        ),
        # llama.cpp's server
        ErrorReply(
            400,
            {
                "error": {
                    "code": 400,
                    "message": "the request exceeds the available context size, try increasing it",
                    "type": "exceed_context_size_error",
                    "n_prompt_tokens": 5000,
                    "n_ctx": 4096,
                }
            },
        ),
        # vLLM v1
        openai_error(
            400, "The decoder prompt (length 5000) is longer than the maximum model length of 4096."
        ),
        # Ollama
        openai_error(400, "the input length exceeds the context length"),
        # a LiteLLM gateway
        openai_error(400, "litellm.ContextWindowExceededError: prompt has 300000 tokens"),
    ],
)
async def test_local_servers_too_long_answers_are_context_length_errors(
    server: FakeOpenAIServer, caller: OpenAICaller, refusal: ErrorReply
) -> None:
    from cleveragents.providers.errors import ProviderContextLengthError

    server.enqueue(refusal)
    with pytest.raises(ProviderContextLengthError):
        await caller.complete(ask("hello"))


async def test_max_tokens_is_sent_under_the_servers_name(server: FakeOpenAIServer) -> None:
    server.enqueue(text_reply("a"))
    llm = OpenAICaller("fake-model", base_url=server.base_url, max_tokens=256, context_window=8192)
    try:
        await llm.complete(ask("hello"))
    finally:
        await llm.aclose()
    assert server.bodies[0]["max_tokens"] == 256
    assert (llm.max_tokens, llm.context_window) == (256, 8192)
    official = OpenAICaller("gpt-4o", api_key="sk-test")
    assert "max_completion_tokens" not in official.request_params(ask("x"))
    official.max_tokens = 100
    assert official.request_params(ask("x"))["max_completion_tokens"] == 100


async def test_other_bad_requests_are_not_context_length_errors(
    server: FakeOpenAIServer, caller: OpenAICaller
) -> None:
    from cleveragents.providers.errors import ProviderContextLengthError

    server.enqueue(openai_error(400, "'messages' must contain the word 'json'"))
    with pytest.raises(ProviderError) as caught:
        await caller.complete(ask("hello"))
    assert not isinstance(caught.value, ProviderContextLengthError)
    assert caught.value.status_code == 400
