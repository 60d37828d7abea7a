"""Images in prompts, the core: header parsing of real images (made here with Pillow), the
limits, the token estimate, the provider formats, the image store, the history, and the
vision check before any request."""

from __future__ import annotations

import base64
import io
import os
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from cleveragents.service.errors import ServiceError
from cleveragents.service.history import RunHistory
from cleveragents.service.image_inputs import ImageInput, load_images
from cleveragents.service.image_store import ImageStore
from cleveragents.service.runs import RunManager, RunRequest, RunSink
from cleveragents.service.settings import ClientOptions, RunDefaults, session_settings
from cleveragents.tool import LLMRequest, LLMResponse, ToolRegistry, UserMessage
from cleveragents.tool.context_guard import message_chars
from cleveragents.tool.images import (
    MAX_IMAGE_BYTES,
    MAX_IMAGE_SIDE,
    MAX_IMAGES,
    MAX_TOTAL_BYTES,
    ImageAttachment,
    ImageError,
    image_tokens,
    size_text,
    sniff,
)
from cleveragents.tool.llm import FunctionLLMCaller
from cleveragents.tool.messages import message_from_dict
from cleveragents.tool.router import ToolCallRouter
from cleveragents.tool.serialization import to_data
from support.sinks import Sink


def encoded(kind: str, size: tuple[int, int] = (3, 2), **options: Any) -> bytes:
    """A real image file of `kind` (a Pillow format name), `size` pixels."""
    mode = "RGBA" if options.pop("alpha", False) else "RGB"
    picture = Image.new(mode, size, (200, 30, 60, 128)[: len(mode)])
    out = io.BytesIO()
    picture.save(out, format=kind, **options)
    return out.getvalue()


# -- the header says what it is ----------------------------------------------------------
@pytest.mark.parametrize(
    ("kind", "options", "media_type"),
    [
        ("PNG", {}, "image/png"),
        ("JPEG", {}, "image/jpeg"),
        ("JPEG", {"progressive": True}, "image/jpeg"),
        ("GIF", {}, "image/gif"),
        ("WEBP", {}, "image/webp"),  # lossy: a VP8 chunk
        ("WEBP", {"lossless": True}, "image/webp"),  # VP8L
        ("WEBP", {"alpha": True}, "image/webp"),  # VP8X with an alpha chunk
    ],
)
def test_the_media_type_and_size_come_from_the_header(
    kind: str, options: dict[str, Any], media_type: str
) -> None:
    for size in ((3, 2), (517, 33)):
        data = encoded(kind, size, **dict(options))
        assert sniff(data) == (media_type, *size)


def test_the_name_does_not_decide_the_type() -> None:
    jpeg = encoded("JPEG", (40, 30))
    image = ImageAttachment.from_bytes(jpeg, "screenshot.png")
    assert (image.media_type, image.width, image.height) == ("image/jpeg", 40, 30)
    with pytest.raises(ImageError, match=r"image 'notes.png': not a PNG, JPEG, GIF or WebP"):
        ImageAttachment.from_bytes(b"just some text, named like an image", "notes.png")


def test_a_cut_short_header_is_refused_clearly() -> None:
    png = encoded("PNG")
    with pytest.raises(ImageError, match="cut short"):
        ImageAttachment.from_bytes(png[:14], "half.png")
    with pytest.raises(ImageError, match="frame header"):
        ImageAttachment.from_bytes(encoded("JPEG")[:20], "half.jpg")


# -- limits ------------------------------------------------------------------------------
def test_one_image_over_the_byte_limit_is_refused_naming_it_and_the_limit() -> None:
    padded = encoded("PNG") + b"\0" * MAX_IMAGE_BYTES
    with pytest.raises(ImageError) as refused:
        ImageAttachment.from_bytes(padded, "big.png")
    assert "image 'big.png'" in str(refused.value)
    assert "over the limit of 3.75 MiB per image" in str(refused.value)


def test_a_side_over_8000_pixels_is_refused() -> None:
    wide = encoded("PNG", (MAX_IMAGE_SIDE + 1, 1))
    with pytest.raises(ImageError, match=r"'wide.png': 8001x1 pixels .* limit of 8000 pixels"):
        ImageAttachment.from_bytes(wide, "wide.png")
    assert ImageAttachment.from_bytes(encoded("PNG", (MAX_IMAGE_SIDE, 1)), "ok.png").width == 8000


def test_a_prompt_takes_at_most_20_images_and_20_mib(tmp_path: Path) -> None:
    png = base64.b64encode(encoded("PNG")).decode()
    many = [ImageInput(f"i{n}.png", data_base64=png) for n in range(MAX_IMAGES + 1)]
    images, problems = load_images(many)
    assert images == [] and problems == ["images: 21 images is over the limit of 20 per prompt"]
    images, problems = load_images(many[:MAX_IMAGES])
    assert len(images) == MAX_IMAGES and problems == []
    # Six images of 3.5 MiB each: each is allowed, together they are not.
    heavy = encoded("PNG") + b"\0" * (MAX_TOTAL_BYTES // 6 + 1)
    assert len(heavy) <= MAX_IMAGE_BYTES
    path = tmp_path / "heavy.png"
    path.write_bytes(heavy)
    images, problems = load_images([ImageInput(f"h{n}", path=str(path)) for n in range(6)])
    assert images == []
    assert problems == [
        f"images: the images together are {size_text(6 * len(heavy))}, over the limit of "
        "20.00 MiB per prompt"
    ]


def test_inputs_that_are_not_images_are_refused_each_by_name(tmp_path: Path) -> None:
    (tmp_path / "folder").mkdir()
    os.mkfifo(tmp_path / "pipe")
    images, problems = load_images(
        [
            ImageInput("missing.png", path=str(tmp_path / "missing.png")),
            ImageInput("folder", path=str(tmp_path / "folder")),
            ImageInput("pipe", path=str(tmp_path / "pipe")),
            ImageInput("pasted", data_base64="not base64!"),
            ImageInput("both", path="x", data_base64="eA=="),
        ]
    )
    assert images == []
    assert problems == ["images[4]: give either a path or base64 data"]
    images, problems = load_images(
        [
            ImageInput("missing.png", path=str(tmp_path / "missing.png")),
            ImageInput("folder", path=str(tmp_path / "folder")),
            ImageInput("pipe", path=str(tmp_path / "pipe")),
            ImageInput("pasted", data_base64="not base64!"),
        ]
    )
    assert problems == [
        "images[0]: image 'missing.png': no such file",
        "images[1]: image 'folder': not a regular file",
        "images[2]: image 'pipe': not a regular file",
        "images[3]: image 'pasted': the data is not valid base64",
    ]


# -- cost --------------------------------------------------------------------------------
def test_the_token_estimate_is_anthropics() -> None:
    assert image_tokens(200, 200) == 54  # 40,000 / 750, rounded up
    assert image_tokens(1000, 1000) == 1334
    # Anthropic's table: 1092x1092 is about 1,590 tokens, the most a square image costs.
    assert image_tokens(1092, 1092) == 1590
    # Larger images are scaled down first: never more than about 1,600 tokens.
    assert image_tokens(8000, 8000) <= 1600
    assert image_tokens(8000, 100) <= 1600
    assert image_tokens(4000, 2000) == image_tokens(2000, 1000)


def test_the_context_guard_counts_an_images_tokens() -> None:
    image = ImageAttachment.from_bytes(encoded("PNG", (1000, 1000)), "a.png")
    plain = message_chars(UserMessage("look"))
    with_image = message_chars(UserMessage("look", (image,)))
    assert with_image - plain == pytest.approx(1334 * 3.5, abs=1)


# -- formats -----------------------------------------------------------------------------
def test_each_provider_gets_its_own_format() -> None:
    data = encoded("GIF", (5, 4))
    image = ImageAttachment.from_bytes(data, "a.gif")
    message = UserMessage("what is this?", (image,))
    anthropic = ToolCallRouter.to_anthropic_message(message)
    assert anthropic == {
        "role": "user",
        "content": [
            {
                "type": "image",
                "source": {
                    "type": "base64",
                    "media_type": "image/gif",
                    "data": base64.b64encode(data).decode(),
                },
            },
            {"type": "text", "text": "what is this?"},
        ],
    }
    (openai,) = ToolCallRouter.to_openai_message(message)
    assert openai == {
        "role": "user",
        "content": [
            {"type": "text", "text": "what is this?"},
            {
                "type": "image_url",
                "image_url": {"url": "data:image/gif;base64," + base64.b64encode(data).decode()},
            },
        ],
    }


def test_a_message_serialises_its_images_by_reference() -> None:
    image = ImageAttachment.from_bytes(encoded("PNG"), "a.png")
    stored = to_data(UserMessage("hi", (image,)))
    assert stored["images"] == [
        {
            "name": "a.png",
            "media_type": "image/png",
            "width": image.width,
            "height": image.height,
            "size": image.size,
            "sha256": image.sha256,
        }
    ]
    assert "data" not in str(stored["images"])
    back = message_from_dict(stored)
    assert isinstance(back, UserMessage) and back.images[0].sha256 == image.sha256
    assert back.images[0].data is None  # the bytes live in the image store
    assert to_data(UserMessage("plain")) == {"role": "user", "text": "plain"}


# -- the store ---------------------------------------------------------------------------
def test_the_store_keeps_one_copy_and_evicts_the_least_recently_used(tmp_path: Path) -> None:
    images = [
        ImageAttachment.from_bytes(encoded("PNG") + bytes([n]) * 1000, f"{n}.png") for n in range(3)
    ]
    store = ImageStore(tmp_path / "images", max_bytes=2 * images[0].size + 10)
    store.put(images[0])
    store.put(images[0])
    assert store.total_bytes() == images[0].size  # one copy per digest
    os.utime(store.folder / images[0].sha256, (1, 1))
    store.put(images[1])
    os.utime(store.folder / images[1].sha256, (2, 2))
    assert store.get(images[0].sha256) == images[0].data  # read: now the most recent
    store.put(images[2])  # over the cap: the least recently used (images[1]) goes
    assert store.get(images[1].sha256) is None
    assert store.get(images[0].sha256) == images[0].data
    assert store.get(images[2].sha256) == images[2].data
    assert store.total_bytes() <= store.max_bytes
    assert oct(store.folder.stat().st_mode & 0o777) == "0o700"
    assert store.get("../../etc/passwd") is None


# -- runs --------------------------------------------------------------------------------
def seeing_model(seen: list[LLMRequest]) -> Any:
    def answer(request: LLMRequest) -> LLMResponse:
        seen.append(request)
        return LLMResponse(text="a red square")

    caller = FunctionLLMCaller(answer)
    caller.vision = True  # type: ignore[attr-defined]
    return caller


async def test_a_runs_images_are_stored_by_reference_and_shown_again(tmp_path: Path) -> None:
    sandbox = tmp_path / "work"
    sandbox.mkdir()
    picture = tmp_path / "shot.webp"
    picture.write_bytes(encoded("WEBP", (64, 48)))
    seen: list[LLMRequest] = []
    with RunHistory(tmp_path / "history.db") as history:
        manager = RunManager(
            ToolRegistry(), RunDefaults(), history, llm_factory=lambda *a, **k: seeing_model(seen)
        )
        sink: RunSink = Sink()
        request = RunRequest(
            "what is in the picture?",
            str(sandbox),
            images=(ImageInput("shot.webp", path=str(picture)),),
        )
        outcome = await manager.run(request, sink)
        again = await manager.run(
            RunRequest("and now?", str(sandbox), continue_from=outcome.result.run_id), sink
        )
        await manager.aclose()
        first = seen[0].messages[0]
        assert isinstance(first, UserMessage) and first.images[0].media_type == "image/webp"
        # The continued run sends the earlier image again, read back from the store.
        assert isinstance(seen[1].messages[0], UserMessage)
        assert seen[1].messages[0].images[0].data == picture.read_bytes()
        stored = history.get_run(outcome.result.run_id)
        assert stored is not None
        assert [(i.name, i.width, i.height) for i in stored.images] == [("shot.webp", 64, 48)]
        assert stored.images[0].data == picture.read_bytes()
        assert to_data(stored)["images"][0]["sha256"] == stored.images[0].sha256
        # Evicted: the run still loads, and the model is told the image is gone.
        history.images.folder.joinpath(stored.images[0].sha256).unlink()
        (message, *_) = history.conversation(again.result.run_id)
        assert isinstance(message, UserMessage) and message.images[0].data is None
        text = ToolCallRouter.to_anthropic_message(message)["content"][0]["text"]  # type: ignore[index]
        assert "no longer stored" in text


async def test_a_model_without_vision_is_refused_before_any_request(tmp_path: Path) -> None:
    sandbox = tmp_path / "work"
    sandbox.mkdir()
    png = base64.b64encode(encoded("PNG")).decode()
    with RunHistory(tmp_path / "history.db") as history:
        manager = RunManager(ToolRegistry(), RunDefaults(provider="offline"), history)
        with pytest.raises(ServiceError) as refused:
            await manager.run(
                RunRequest("see", str(sandbox), images=(ImageInput("p", data_base64=png),)),
                Sink(),
            )
        await manager.aclose()
        assert "the offline model cannot see images" in str(refused.value)
        assert history.list_runs(10, 0) == []  # nothing ran, nothing stored


def test_the_openai_vision_setting_is_resolved_with_the_others() -> None:
    settings = session_settings(ClientOptions(), {"CLEVERAGENTS_OPENAI_VISION": "1"})
    assert settings.defaults.openai_vision is True
    assert settings.defaults.provider_options()["vision"] is True
    assert "vision" not in session_settings(ClientOptions(), {}).defaults.provider_options()
    assert session_settings(ClientOptions(), {}).defaults.openai_vision is False
    with pytest.raises(Exception, match="CLEVERAGENTS_OPENAI_VISION"):
        session_settings(ClientOptions(), {"CLEVERAGENTS_OPENAI_VISION": "maybe"})
