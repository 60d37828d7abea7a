"""Images through the one run pipeline and the real SDKs, to the fake Anthropic and OpenAI
servers: each gets the image block in its own format; a model without vision gets nothing."""

from __future__ import annotations

import base64
import io
from pathlib import Path

import pytest
from PIL import Image

from cleveragents.service.errors import ServiceError
from cleveragents.service.image_inputs import ImageInput
from cleveragents.service.runs import RunManager, RunRequest
from cleveragents.service.settings import RunDefaults
from cleveragents.tool import ToolRegistry
from support.fake_anthropic import API_KEY, FakeAnthropic, StreamReply, Text
from support.fake_openai import FakeOpenAIServer, text_reply
from support.fake_tokens import image_problem
from support.sinks import Sink


def picture(tmp_path: Path, kind: str = "PNG", name: str = "shot.png") -> Path:
    out = io.BytesIO()
    Image.new("RGB", (32, 24), (10, 200, 30)).save(out, format=kind)
    path = tmp_path / name
    path.write_bytes(out.getvalue())
    return path


async def run_once(defaults: RunDefaults, request: RunRequest) -> None:
    manager = RunManager(ToolRegistry(), defaults, None)
    try:
        await manager.run(request, Sink())
    finally:
        await manager.aclose()


async def test_anthropic_gets_a_base64_image_block_before_the_text(
    tmp_path: Path, sandbox: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    image = picture(tmp_path, "JPEG", "photo.png")  # a JPEG, whatever its name says
    with FakeAnthropic() as fake:
        fake.push(StreamReply([Text(["a green rectangle"])]))
        await run_once(
            RunDefaults(provider="anthropic", base_url=fake.base_url),
            RunRequest(
                "what is this?", str(sandbox), images=(ImageInput("photo", path=str(image)),)
            ),
        )
        (request,) = fake.requests
    content = request.body["messages"][0]["content"]
    assert content[0] == {
        "type": "image",
        "source": {
            "type": "base64",
            "media_type": "image/jpeg",
            "data": base64.b64encode(image.read_bytes()).decode(),
        },
    }
    assert content[-1]["type"] == "text" and content[-1]["text"].endswith("what is this?")


async def test_openai_gets_an_image_url_part_when_the_setting_says_the_model_sees(
    tmp_path: Path, sandbox: Path
) -> None:
    image = picture(tmp_path, "WEBP", "shot.webp")
    with FakeOpenAIServer() as fake:
        fake.enqueue(text_reply("a green rectangle"))
        await run_once(
            RunDefaults(
                provider="openai", model="gpt-4o", base_url=fake.base_url, openai_vision=True
            ),
            RunRequest("describe", str(sandbox), images=(ImageInput("shot", path=str(image)),)),
        )
        (body,) = fake.bodies
    user = next(m for m in body["messages"] if m["role"] == "user")
    encoded = base64.b64encode(image.read_bytes()).decode()
    assert {"type": "image_url", "image_url": {"url": f"data:image/webp;base64,{encoded}"}} in (
        user["content"]
    )
    assert user["content"][0]["type"] == "text"


async def test_images_alone_are_a_prompt_each_provider_gets_without_a_blank_text(
    tmp_path: Path, sandbox: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    image = picture(tmp_path)
    encoded = base64.b64encode(image.read_bytes()).decode()
    attached = (ImageInput("shot", path=str(image)),)
    with FakeAnthropic() as fake:
        fake.push(StreamReply([Text(["a green rectangle"])]))
        await run_once(
            RunDefaults(provider="anthropic", base_url=fake.base_url),
            RunRequest("", str(sandbox), images=attached),
        )
        (request,) = fake.requests
    # The one block (which carries the cache breakpoint then) is the image.
    (block,) = request.body["messages"][0]["content"]
    assert block["type"] == "image"
    assert block["source"] == {"type": "base64", "media_type": "image/png", "data": encoded}
    with FakeOpenAIServer() as openai_fake:
        openai_fake.enqueue(text_reply("a green rectangle"))
        await run_once(
            RunDefaults(
                provider="openai", model="gpt-4o", base_url=openai_fake.base_url, openai_vision=True
            ),
            RunRequest("  ", str(sandbox), images=attached),
        )
        (body,) = openai_fake.bodies
    user = next(m for m in body["messages"] if m["role"] == "user")
    assert user["content"] == [
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{encoded}"}}
    ]
    # Without images an empty prompt is still refused, before any request.
    with pytest.raises(ServiceError) as refused:
        await run_once(RunDefaults(provider="offline"), RunRequest(" ", str(sandbox)))
    assert "prompt: must not be empty (unless images are attached)" in str(refused.value)


async def test_openai_without_the_vision_setting_is_refused_before_any_request(
    tmp_path: Path, sandbox: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CLEVERAGENTS_OPENAI_VISION", raising=False)
    image = picture(tmp_path)
    with FakeOpenAIServer() as fake:
        fake.enqueue(text_reply("never sent"))
        with pytest.raises(ServiceError) as refused:
            await run_once(
                RunDefaults(provider="openai", model="llama3.1", base_url=fake.base_url),
                RunRequest("look", str(sandbox), images=(ImageInput("shot", path=str(image)),)),
            )
        assert fake.requests == []
    assert "CLEVERAGENTS_OPENAI_VISION=1" in str(refused.value)
    assert "llama3.1" in str(refused.value)


def test_the_fakes_refuse_an_image_whose_bytes_are_not_its_declared_type() -> None:
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 20).decode()
    assert image_problem("image/png", png) is None
    assert image_problem("image/jpeg", png) == (
        "Image does not match the provided media type image/jpeg"
    )
    assert image_problem("image/bmp", png) is not None
