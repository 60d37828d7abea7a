"""A run's images as the fronts hand them over, made into checked `ImageAttachment`s.

Every front goes through here: the CLI gives paths (`--image PATH`), the daemon and ACP give
base64 text with a media type. Nothing is trusted from the front: the media type comes from
the bytes (a declared one that disagrees is ignored, as the bytes are what the model gets),
and every limit of `tool/images.py` is checked here, once. A path is read only after its size
is known to be within the limit, so a huge file is refused without reading it.
"""

from __future__ import annotations

import base64
import binascii
import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..tool.images import (
    MAX_IMAGE_BYTES,
    MAX_IMAGES,
    ImageAttachment,
    ImageError,
    check_prompt_images,
    size_text,
)

Label = Callable[[int | None], str]
"""Names a request's image in a problem: index -> `images[0]`; None names the whole list."""


def core_label(index: int | None) -> str:
    return "images" if index is None else f"images[{index}]"


@dataclass(frozen=True, slots=True)
class ImageInput:
    """One image of a request: a file to read (`path`), or the bytes as base64 text
    (`data_base64`, from the daemon and ACP). `name` is what the user knows it by."""

    name: str
    path: str | None = None
    data_base64: str | None = None
    media_type: str | None = None


def check_image_count(inputs: Sequence[ImageInput], label: Label = core_label) -> list[str]:
    """The problem reading nothing can find: too many images, or one with no bytes given."""
    problems = []
    if len(inputs) > MAX_IMAGES:
        problems.append(
            f"{label(None)}: {len(inputs)} images is over the limit of {MAX_IMAGES} per prompt"
        )
    for index, given in enumerate(inputs):
        if (given.path is None) == (given.data_base64 is None):
            problems.append(f"{label(index)}: give either a path or base64 data")
    return problems


def load_images(
    inputs: Sequence[ImageInput], label: Label = core_label
) -> tuple[list[ImageAttachment], list[str]]:
    """The images, checked; or the problems (each naming its image and the limit)."""
    problems = check_image_count(inputs, label)
    if problems:
        return [], problems
    images: list[ImageAttachment] = []
    for index, given in enumerate(inputs):
        try:
            data = _bytes_of(given)
            images.append(ImageAttachment.from_bytes(data, given.name))
        except ImageError as exc:
            problems.append(f"{label(index)}: {exc}")
    if not problems:
        try:
            check_prompt_images(images)
        except ImageError as exc:
            problems.append(f"{label(None)}: {exc}")
    return (images, []) if not problems else ([], problems)


def _bytes_of(given: ImageInput) -> bytes:
    if given.path is not None:
        return _read_limited(given.path, given.name)
    text = given.data_base64 or ""
    # Base64 of the largest image allowed, and a little room for line breaks.
    if len(text) > (MAX_IMAGE_BYTES + 2) // 3 * 4 + 1024:
        raise ImageError(
            f"image {given.name!r}: over the limit of {size_text(MAX_IMAGE_BYTES)} per image"
        )
    try:
        return base64.b64decode("".join(text.split()), validate=True)
    except (binascii.Error, ValueError):
        raise ImageError(f"image {given.name!r}: the data is not valid base64") from None


def _read_limited(path: str, name: str) -> bytes:
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO or a device would block or never end
            raise ImageError(f"image {name!r}: not a regular file")
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > MAX_IMAGE_BYTES:
                raise ImageError(
                    f"image {name!r}: {size_text(size)} is over the limit of "
                    f"{size_text(MAX_IMAGE_BYTES)} per image"
                )
            # One byte more than allowed: a file that grew meanwhile is still caught.
            return handle.read(MAX_IMAGE_BYTES + 1)
    except FileNotFoundError:
        raise ImageError(f"image {name!r}: no such file") from None
    except OSError as exc:
        raise ImageError(f"image {name!r}: cannot be read: {exc.strerror or exc}") from None
