"""Output limits shared by the workspace tools, so no tool result can swamp a model's context."""

from __future__ import annotations

MAX_OUTPUT_BYTES = 1024 * 1024
"""Anything a tool returns (file content, grep lines, command output) is cut past 1 MiB."""

MAX_LINE_CHARS = 500
"""grep shows at most this many characters of one matching line."""


def cut_utf8(data: bytes, limit: int) -> tuple[bytes, bool]:
    """`data` cut to at most `limit` bytes without splitting a UTF-8 sequence; (bytes, was_cut)."""
    if len(data) <= limit:
        return data, False
    end = limit
    # Step back over continuation bytes (10xxxxxx) so the cut lands on a character boundary.
    while end > 0 and (data[end] & 0xC0) == 0x80:
        end -= 1
    return data[:end], True


def shorten_line(text: str, limit: int = MAX_LINE_CHARS) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"… [{len(text) - limit} more characters]"
