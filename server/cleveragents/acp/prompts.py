"""A `session/prompt`'s content blocks as the prompt text a run starts from.

Text blocks are the prompt; resource links (which every ACP agent must accept) and embedded
text resources (the `embeddedContext` capability we advertise) are added as references the
model can open with its tools, or as the context itself. Images, audio and binary resources
are refused: the capabilities say we do not take them.
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
                "(the agent advertises text and resources only)"
            )
    text = "\n\n".join(part for part in parts if part.strip())
    if not text.strip():
        raise UnsupportedPrompt("prompt: no text to run (the prompt is empty)")
    return text


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
