"""A `session/prompt`'s content blocks as the prompt text a run starts from.

Text blocks are the prompt; resource links (which every ACP agent must accept) and embedded
text resources (the `embeddedContext` capability we advertise) are added as references the
model can open with its tools, or as the context itself. Image blocks (the `image` capability
we advertise) go to the core as images (`service/image_inputs.py` checks them, and the run
is refused when its model cannot see). Audio and binary resources are refused: the
capabilities say we do not take them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from urllib.parse import unquote, urlparse

from acp.schema import (
    AudioContentBlock,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
)

from ..service.image_inputs import ImageInput

ContentBlock = (
    TextContentBlock
    | ImageContentBlock
    | AudioContentBlock
    | ResourceContentBlock
    | EmbeddedResourceContentBlock
)


class UnsupportedPrompt(ValueError):
    """A prompt the agent cannot take; the message says which block and why."""


def prompt_text(blocks: Sequence[ContentBlock], sandbox_root: str) -> str:
    """The prompt for the run; UnsupportedPrompt for an empty prompt or a refused block."""
    parts: list[str] = []
    for index, block in enumerate(blocks):
        if isinstance(block, TextContentBlock):
            parts.append(block.text)
        elif isinstance(block, ImageContentBlock):
            continue  # `prompt_images`
        elif isinstance(block, ResourceContentBlock):
            parts.append(f"Referenced: {_where(block.uri, sandbox_root)}")
        elif isinstance(block, EmbeddedResourceContentBlock):
            resource = block.resource
            if not isinstance(resource, TextResourceContents):
                raise UnsupportedPrompt(
                    f"prompt[{index}]: binary embedded resources are not supported"
                )
            where = _where(resource.uri, sandbox_root)
            parts.append(f"Context from {where}:\n```\n{resource.text}\n```")
        else:
            raise UnsupportedPrompt(
                f"prompt[{index}]: {block.type} content is not supported "
                "(the agent advertises text, images and resources only)"
            )
    text = "\n\n".join(part for part in parts if part.strip())
    if not text.strip() and not any(isinstance(b, ImageContentBlock) for b in blocks):
        # Images alone are a prompt (the core checks them).
        raise UnsupportedPrompt("prompt: no text to run (the prompt is empty)")
    return text


def prompt_images(blocks: Sequence[ContentBlock]) -> tuple[ImageInput, ...]:
    """The prompt's image blocks, for the core to check: named by their URI when they have
    one, else by their place in the prompt."""
    return tuple(
        ImageInput(
            block.uri or f"prompt[{index}]",
            data_base64=block.data,
            media_type=block.mime_type,
        )
        for index, block in enumerate(blocks)
        if isinstance(block, ImageContentBlock)
    )


def _where(uri: str, sandbox_root: str) -> str:
    """A file URI inside the sandbox as its project-relative path (what the tools take)."""
    parsed = urlparse(uri)
    if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
        return uri
    path = os.path.realpath(unquote(parsed.path))
    root = os.path.realpath(sandbox_root)
    if os.path.commonpath([path, root]) != root:
        return path
    return os.path.relpath(path, root)
