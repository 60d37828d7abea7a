"""An MCP `CallToolResult` as a tool record's output, or a ToolError for `isError` results."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from mcp.types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from ..tool.errors import ToolError
from ..workspace.limits import MAX_OUTPUT_BYTES, cut_utf8


def output_of(result: CallToolResult, tool_label: str) -> dict[str, Any]:
    """Structured content when the tool gave some, else its text (other content summarised).

    `tool_label` names the tool in error messages, e.g. "MCP tool 'demo/add'".
    """
    if result.is_error:
        text = _joined_text(result)
        raise ToolError(f"{tool_label} failed: {text or 'the server gave no error message'}")
    if result.structured_content is not None:
        value = result.structured_content
        return value if isinstance(value, dict) else {"result": value}
    output: dict[str, Any] = {}
    text = _joined_text(result)
    if text:
        data, was_cut = cut_utf8(text.encode("utf-8"), MAX_OUTPUT_BYTES)
        output["text"] = data.decode("utf-8")
        if was_cut:
            output["truncated"] = True
    others = [_summary(block) for block in result.content if not isinstance(block, TextContent)]
    if others:
        output["attachments"] = others
    return output


def _joined_text(result: CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


def _summary(block: Any) -> dict[str, Any]:
    """A non-text content block described without its payload, which a model cannot use."""
    if isinstance(block, ImageContent | AudioContent):
        return {
            "type": block.type,
            "mime_type": block.mime_type,
            "bytes": _decoded_size(block.data),
        }
    if isinstance(block, ResourceLink):
        link: dict[str, Any] = {"type": "resource_link", "uri": str(block.uri), "name": block.name}
        if block.mime_type:
            link["mime_type"] = block.mime_type
        return link
    if isinstance(block, EmbeddedResource):
        resource = block.resource
        embedded: dict[str, Any] = {"type": "resource", "uri": str(resource.uri)}
        if resource.mime_type:
            embedded["mime_type"] = resource.mime_type
        if isinstance(resource, TextResourceContents):
            data, was_cut = cut_utf8(resource.text.encode("utf-8"), MAX_OUTPUT_BYTES)
            embedded["text"] = data.decode("utf-8")
            if was_cut:
                embedded["truncated"] = True
        elif isinstance(resource, BlobResourceContents):
            embedded["bytes"] = _decoded_size(resource.blob)
        return embedded
    return {"type": str(getattr(block, "type", type(block).__name__))}


def _decoded_size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        return len(data)
