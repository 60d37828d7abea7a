"""Images attached to a prompt: what they are, what they may be, what they cost, how they are sent.

An image's media type and size come from its header bytes, never from its file name (a
`.png` holding a JPEG is a JPEG; a text file named `.png` is refused). The limits are the
strictest of the providers': Anthropic takes at most 5 MB of base64 per image (3.75 MiB of
bytes), 8000 px a side and 20 images a request; OpenAI 20 MiB a request. The token estimate
is Anthropic's documented one (width x height / 750, after the API scales an image whose long
edge is over 1568 px or that would cost over about 1,600 tokens), which the context guard adds
to the prompt's text. The provider formats are here too, so the two routers share them.
"""

from __future__ import annotations

import base64
import hashlib
import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .serialization import register_shape

MIB = 1024 * 1024
MAX_IMAGE_BYTES = MIB * 15 // 4
"""One image's bytes: 3.75 MiB, which is Anthropic's 5 MB once base64-encoded."""
MAX_IMAGE_SIDE = 8000
"""Pixels on either side of one image."""
MAX_IMAGES = 20
"""Images one prompt may attach."""
MAX_TOTAL_BYTES = 20 * MIB
"""All of one prompt's images together."""

MEDIA_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")

# Anthropic scales an image down before the model sees it when its long edge is over this,
# or when it would cost more than about MAX_IMAGE_TOKENS (1.15 megapixels).
SCALED_LONG_EDGE = 1568
MAX_IMAGE_TOKENS = 1600
PIXELS_PER_TOKEN = 750


class ImageError(ValueError):
    """An image that cannot be attached; the message names it and the limit it broke."""


def sniff(data: bytes) -> tuple[str, int, int]:
    """(media type, width, height) read from the header; ImageError for anything else."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        if len(data) < 24 or data[12:16] != b"IHDR":
            raise ImageError("a PNG without its IHDR header (the file is cut short)")
        width, height = struct.unpack(">II", data[16:24])
        return "image/png", width, height
    if data[:6] in (b"GIF87a", b"GIF89a"):
        if len(data) < 10:
            raise ImageError("a GIF cut short before its size")
        width, height = struct.unpack("<HH", data[6:10])
        return "image/gif", width, height
    if data.startswith(b"\xff\xd8\xff"):
        width, height = _jpeg_size(data)
        return "image/jpeg", width, height
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        width, height = _webp_size(data)
        return "image/webp", width, height
    raise ImageError("not a PNG, JPEG, GIF or WebP image (judged by its bytes, not its name)")


# JPEG start-of-frame markers (the ones that carry the size): C0-CF but DHT, JPG and DAC.
_SOF_MARKERS = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


def _jpeg_size(data: bytes) -> tuple[int, int]:
    index = 2
    while index + 4 <= len(data):
        if data[index] != 0xFF:
            break
        marker = data[index + 1]
        if marker == 0xFF:  # fill byte
            index += 1
            continue
        if marker in (0x01, *range(0xD0, 0xD8)):  # markers without a length
            index += 2
            continue
        (length,) = struct.unpack(">H", data[index + 2 : index + 4])
        if marker in _SOF_MARKERS:
            if index + 9 > len(data):
                break
            height, width = struct.unpack(">HH", data[index + 5 : index + 9])
            return width, height
        if marker == 0xDA or length < 2:  # image data before any frame header
            break
        index += 2 + length
    raise ImageError("a JPEG without a frame header giving its size")


def _webp_size(data: bytes) -> tuple[int, int]:
    chunk = data[12:16]
    if chunk == b"VP8 " and len(data) >= 30 and data[23:26] == b"\x9d\x01\x2a":
        width, height = struct.unpack("<HH", data[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if chunk == b"VP8L" and len(data) >= 25 and data[20] == 0x2F:
        (bits,) = struct.unpack("<I", data[21:25])
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X" and len(data) >= 30:
        width = int.from_bytes(data[24:27], "little") + 1
        height = int.from_bytes(data[27:30], "little") + 1
        return width, height
    raise ImageError("a WebP whose header gives no size (unknown or cut-short chunk)")


def size_text(size: int) -> str:
    return f"{size / MIB:.2f} MiB" if size >= MIB // 10 else f"{size:,} bytes"


@dataclass(frozen=True, slots=True)
class ImageAttachment:
    """One image of a prompt. `name` is what the user knows it by (a path, "pasted image");
    `data` is None for an image the history refers to but no longer holds (evicted)."""

    name: str
    media_type: str
    width: int
    height: int
    size: int
    sha256: str
    data: bytes | None

    @classmethod
    def from_bytes(cls, data: bytes, name: str) -> ImageAttachment:
        """The image in `data`, checked against the per-image limits; ImageError naming
        `name` and the limit otherwise."""
        if len(data) > MAX_IMAGE_BYTES:
            raise ImageError(
                f"image {name!r}: {size_text(len(data))} is over the limit of "
                f"{size_text(MAX_IMAGE_BYTES)} per image"
            )
        try:
            media_type, width, height = sniff(data)
        except ImageError as exc:
            raise ImageError(f"image {name!r}: {exc}") from None
        if width < 1 or height < 1:
            raise ImageError(f"image {name!r}: its header says {width}x{height} pixels")
        if max(width, height) > MAX_IMAGE_SIDE:
            raise ImageError(
                f"image {name!r}: {width}x{height} pixels is over the limit of "
                f"{MAX_IMAGE_SIDE} pixels a side"
            )
        digest = hashlib.sha256(data).hexdigest()
        return cls(name, media_type, width, height, len(data), digest, data)

    @property
    def tokens(self) -> int:
        return image_tokens(self.width, self.height)

    def base64(self) -> str:
        return base64.b64encode(self.data or b"").decode("ascii")

    def data_url(self) -> str:
        return f"data:{self.media_type};base64,{self.base64()}"

    @classmethod
    def from_reference(cls, reference: dict[str, Any], data: bytes | None) -> ImageAttachment:
        """An image from its reference (`to_data`), with the bytes when the store still has
        them; ValueError on a malformed reference."""
        return cls(
            name=str(reference["name"]),
            media_type=str(reference["media_type"]),
            width=int(reference["width"]),
            height=int(reference["height"]),
            size=int(reference["size"]),
            sha256=str(reference["sha256"]),
            data=data,
        )

    def missing_note(self) -> str:
        """What the model is told in place of an image the store no longer holds."""
        return f"[image {self.name!r} ({self.width}x{self.height}) is no longer stored]"


def check_prompt_images(images: Sequence[ImageAttachment]) -> None:
    """The limits on a prompt's images together; ImageError naming the limit."""
    if len(images) > MAX_IMAGES:
        raise ImageError(f"{len(images)} images is over the limit of {MAX_IMAGES} per prompt")
    total = sum(image.size for image in images)
    if total > MAX_TOTAL_BYTES:
        raise ImageError(
            f"the images together are {size_text(total)}, over the limit of "
            f"{size_text(MAX_TOTAL_BYTES)} per prompt"
        )


def image_tokens(width: int, height: int) -> int:
    """Anthropic's estimate of what an image costs: width x height / 750, after the API
    scales it down (aspect kept) so the long edge is at most 1568 px and it costs at most
    about 1,600 tokens. OpenAI's tiles cost less for these sizes, so this is the bound."""
    if width < 1 or height < 1:
        return 0
    scale = min(1.0, SCALED_LONG_EDGE / max(width, height))
    scale = min(scale, math.sqrt(MAX_IMAGE_TOKENS * PIXELS_PER_TOKEN / (width * height)))
    scaled_w, scaled_h = max(1, int(width * scale)), max(1, int(height * scale))
    return min(MAX_IMAGE_TOKENS, math.ceil(scaled_w * scaled_h / PIXELS_PER_TOKEN))


def anthropic_block(image: ImageAttachment) -> dict[str, Any]:
    """The Messages API's image content block."""
    if image.data is None:
        return {"type": "text", "text": image.missing_note()}
    return {
        "type": "image",
        "source": {"type": "base64", "media_type": image.media_type, "data": image.base64()},
    }


def openai_part(image: ImageAttachment) -> dict[str, Any]:
    """Chat Completions' image content part, the image as a data URL."""
    if image.data is None:
        return {"type": "text", "text": image.missing_note()}
    return {"type": "image_url", "image_url": {"url": image.data_url()}}


def supports_vision(caller: object) -> bool:
    """Whether an `LLMCaller` takes images: its `vision` attribute (callers without one
    are assumed not to, so no image is sent where it cannot be read)."""
    return getattr(caller, "vision", False) is True


# What the history keeps of an image, its reference: everything but its bytes (the image
# store holds those under `sha256`).
register_shape(ImageAttachment, omit=("data",))
