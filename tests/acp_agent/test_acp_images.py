"""Image content blocks in `session/prompt`, through the real agent and the ACP SDK's client:
advertised (`promptCapabilities.image`), sent to the fake Anthropic and OpenAI servers in
their formats, replayed by `session/load`, and refused before any request when the model
cannot see. Every message is checked against the ACP schema by the fixture."""

from __future__ import annotations

import base64
import io
from pathlib import Path

import pytest
from acp import PROTOCOL_VERSION, RequestError, image_block, text_block
from PIL import Image

from support.acp_support import RecordingClient, StartAgent, agent_env
from support.fake_anthropic import API_KEY, FakeAnthropic, StreamReply, Text
from support.fake_openai import FakeOpenAIServer, text_reply


def png(size: tuple[int, int] = (20, 10)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, (250, 0, 0)).save(out, format="PNG")
    return out.getvalue()


async def test_an_image_block_reaches_anthropic_and_is_replayed_on_load(
    tmp_path: Path, sandbox: Path, start_agent: StartAgent
) -> None:
    data = base64.b64encode(png()).decode()
    with FakeAnthropic() as fake:
        fake.push(StreamReply([Text(["a red bar"])]))
        env = agent_env(
            tmp_path,
            CLEVERAGENTS_PROVIDER="anthropic",
            CLEVERAGENTS_BASE_URL=fake.base_url,
            ANTHROPIC_API_KEY=API_KEY,
        )
        async with start_agent(env) as agent:
            init = await agent.conn.initialize(protocol_version=PROTOCOL_VERSION)
            assert init.agent_capabilities is not None
            caps = init.agent_capabilities.prompt_capabilities
            assert caps is not None and caps.image is True and caps.audio is False
            sid = (await agent.conn.new_session(cwd=str(sandbox), mcp_servers=[])).session_id
            done = await agent.conn.prompt(
                session_id=sid,
                prompt=[text_block("what is this?"), image_block(data, "image/png")],
            )
            assert done.stop_reason == "end_turn"
        (request,) = fake.requests
        client = RecordingClient()
        async with start_agent(env, client=client) as again:
            await again.conn.initialize(protocol_version=PROTOCOL_VERSION)
            await again.conn.load_session(cwd=str(sandbox), session_id=sid, mcp_servers=[])
            replayed = [
                u.content
                for u in client.session_updates(sid)
                if u.session_update == "user_message_chunk"
            ]
    assert request.body["messages"][0]["content"][0] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": data},
    }
    assert [c.type for c in replayed] == ["text", "image"]
    assert (replayed[1].data, replayed[1].mime_type) == (data, "image/png")


async def test_an_image_block_reaches_openai_with_the_vision_setting(
    tmp_path: Path, sandbox: Path, start_agent: StartAgent
) -> None:
    data = base64.b64encode(png()).decode()
    with FakeOpenAIServer() as fake:
        fake.enqueue(text_reply("red"))
        env = agent_env(
            tmp_path,
            CLEVERAGENTS_PROVIDER="openai",
            CLEVERAGENTS_MODEL="gpt-4o",
            CLEVERAGENTS_BASE_URL=fake.base_url,
            CLEVERAGENTS_OPENAI_VISION="1",
            OPENAI_API_KEY="sk-test",
        )
        async with start_agent(env) as agent:
            await agent.conn.initialize(protocol_version=PROTOCOL_VERSION)
            sid = (await agent.conn.new_session(cwd=str(sandbox), mcp_servers=[])).session_id
            await agent.conn.prompt(
                session_id=sid, prompt=[image_block(data, "image/png"), text_block("colour?")]
            )
        (body,) = fake.bodies
    user = [m for m in body["messages"] if m["role"] == "user"][-1]
    assert {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}} in (
        user["content"]
    )


async def test_an_image_block_alone_is_a_prompt(
    tmp_path: Path, sandbox: Path, start_agent: StartAgent
) -> None:
    data = base64.b64encode(png()).decode()
    with FakeAnthropic() as fake:
        fake.push(StreamReply([Text(["a red bar"])]))
        env = agent_env(
            tmp_path,
            CLEVERAGENTS_PROVIDER="anthropic",
            CLEVERAGENTS_BASE_URL=fake.base_url,
            ANTHROPIC_API_KEY=API_KEY,
        )
        async with start_agent(env) as agent:
            await agent.conn.initialize(protocol_version=PROTOCOL_VERSION)
            sid = (await agent.conn.new_session(cwd=str(sandbox), mcp_servers=[])).session_id
            done = await agent.conn.prompt(session_id=sid, prompt=[image_block(data, "image/png")])
            assert done.stop_reason == "end_turn"
            with pytest.raises(RequestError) as empty:
                await agent.conn.prompt(session_id=sid, prompt=[text_block("  ")])
            assert "the prompt is empty" in str(empty.value.data)
        (request,) = fake.requests
    (block,) = request.body["messages"][0]["content"]
    assert (block["type"], block["source"]["data"]) == ("image", data)


async def test_the_offline_model_refuses_an_image_block_and_the_session_goes_on(
    tmp_path: Path, sandbox: Path, start_agent: StartAgent
) -> None:
    async with start_agent(agent_env(tmp_path)) as agent:
        await agent.conn.initialize(protocol_version=PROTOCOL_VERSION)
        sid = (await agent.conn.new_session(cwd=str(sandbox), mcp_servers=[])).session_id
        data = base64.b64encode(png()).decode()
        with pytest.raises(RequestError) as refused:
            await agent.conn.prompt(
                session_id=sid, prompt=[text_block("see"), image_block(data, "image/png")]
            )
        assert refused.value.code == -32602
        assert "the offline model cannot see images" in str(refused.value.data)
        with pytest.raises(RequestError) as bad:
            await agent.conn.prompt(
                session_id=sid,
                prompt=[text_block("see"), image_block("aGVsbG8=", "image/png", uri="x.png")],
            )
        assert "image 'x.png': not a PNG, JPEG, GIF or WebP image" in str(bad.value.data)
        done = await agent.conn.prompt(session_id=sid, prompt=[text_block("just text")])
        assert done.stop_reason == "end_turn"
