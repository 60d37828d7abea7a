"""Images through the real daemon over stdio: the `images` run param reaches the fake
Anthropic server as an image block, `getRun` gives them back (checked against the schema);
bad images and a model without vision are refused (-32602) naming the image, before any
request, and the daemon goes on."""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

from PIL import Image

from support.daemon_support import RawDaemon, check_against_schema
from support.fake_anthropic import API_KEY, FakeAnthropic, StreamReply, Text


def gif(size: tuple[int, int] = (9, 7)) -> str:
    out = io.BytesIO()
    Image.new("RGB", size, (0, 0, 255)).save(out, format="GIF")
    return base64.b64encode(out.getvalue()).decode()


async def test_images_reach_anthropic_and_come_back_with_the_run(
    tmp_path: Path, sandbox: Path
) -> None:
    data = gif()
    with FakeAnthropic() as fake:
        fake.push(StreamReply([Text(["blue"])]))
        raw = await RawDaemon.start(
            tmp_path, env={"ANTHROPIC_API_KEY": API_KEY, "ANTHROPIC_BASE_URL": fake.base_url}
        )
        try:
            await raw.initialize({"provider": "anthropic", "pluginTools": False})
            params: dict[str, Any] = {
                "prompt": "which colour?",
                "sandboxRoot": str(sandbox),
                "runId": "r1",
                "images": [{"data": data, "mediaType": "image/gif", "name": "swatch.gif"}],
            }
            check_against_schema("cleveragents/run", params)
            answer = await raw.request("cleveragents/run", params)
            assert "result" in answer, answer
            detail = (await raw.request("cleveragents/getRun", {"runId": "r1"}))["result"]
            check_against_schema("cleveragents/getRun", detail, "result")
            # The run's start carries the images, so a client that did not send them (another
            # window, a log) shows them too.
            (started,) = raw.notifications("cleveragents/runStarted")
            check_against_schema("cleveragents/runStarted", started)
        finally:
            raw.kill()
            await raw.process.wait()
        (request,) = fake.requests
    assert request.body["messages"][0]["content"][0] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/gif", "data": data},
    }
    assert (
        detail["images"]
        == started["images"]
        == [
            {
                "name": "swatch.gif",
                "mediaType": "image/gif",
                "width": 9,
                "height": 7,
                "sizeBytes": len(base64.b64decode(data)),
                "data": data,
            }
        ]
    )


async def test_bad_images_and_a_blind_model_are_refused_naming_the_image(
    raw: RawDaemon, sandbox: Path
) -> None:
    await raw.initialize({"pluginTools": False})  # the offline model
    base = {"prompt": "look", "sandboxRoot": str(sandbox)}
    answer = await raw.request(
        "cleveragents/run",
        {**base, "images": [{"data": base64.b64encode(b"%PDF-1.7").decode(), "name": "a.pdf"}]},
    )
    assert answer["error"]["code"] == -32602
    assert (
        "params.images[0]: image 'a.pdf': not a PNG, JPEG, GIF or WebP image"
        in (answer["error"]["message"])
    )
    answer = await raw.request(
        "cleveragents/run", {**base, "images": [{"data": gif()} for _ in range(21)]}
    )
    assert "21 images is over the limit of 20 per prompt" in answer["error"]["message"]
    answer = await raw.request("cleveragents/run", {**base, "images": [{"data": gif()}]})
    assert answer["error"]["code"] == -32602
    assert "the offline model cannot see images" in answer["error"]["message"]
    malformed: Any
    for malformed in ("x", [{}], [{"data": {"nested": 1}}], [{"data": gif(), "name": 5}]):
        answer = await raw.request("cleveragents/run", {**base, "images": malformed})
        assert answer["error"]["code"] == -32602, (malformed, answer)
    runs = (await raw.request("cleveragents/runs", {}))["result"]
    assert runs["runs"] == []  # nothing ran
    ok = await raw.request("cleveragents/run", base)
    assert "result" in ok
