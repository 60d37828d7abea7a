"""Prompt caching: the setting, and Anthropic's cache breakpoints.

Anthropic caches a request's prefix (tools, then system, then messages) up to each block
marked `cache_control`, at most `MAX_BREAKPOINTS` marks a request; a later request that
starts with the same prefix reads it at a tenth of the input price (writing costs 1.25x).
We mark the last tool, the system prompt, and, rolling forward with the conversation, the
newest message and the one before it: the newest is written this call and read by the next,
and the one before is the spot the previous call wrote, so the read does not depend on the
API's lookback (about 20 blocks from a mark) reaching it. OpenAI-compatible servers cache a
byte-identical prefix of 1,024 tokens or more by themselves: what they need is a request
whose start never changes, which incremental conversion (`conversation.py`) gives.
"""

from __future__ import annotations

import os
from typing import Any

from ..settings_table import ENV_PROMPT_CACHING

MAX_BREAKPOINTS = 4
"""The most `cache_control` marks the Messages API accepts in one request."""

MESSAGE_BREAKPOINTS = 2
"""Marks on messages: the newest, and the newest of the previous request."""

_OFF = frozenset({"0", "false", "no", "off"})
# Blocks that cannot carry a mark themselves (a thinking block is cached with its turn).
_UNMARKABLE = frozenset({"thinking", "redacted_thinking"})


def prompt_caching_enabled(cache: bool | None = None) -> bool:
    """`cache` when given, else the environment's setting (on unless it says 0/false/no/off)."""
    if cache is not None:
        return bool(cache)
    return os.environ.get(ENV_PROMPT_CACHING, "").strip().lower() not in _OFF


def ephemeral() -> dict[str, str]:
    return {"type": "ephemeral"}


def marked_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tool list with the last tool (a copy) marked: the tools alone are a cached prefix."""
    if not tools:
        return tools
    return [*tools[:-1], {**tools[-1], "cache_control": ephemeral()}]


def marked_system(system: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": system, "cache_control": ephemeral()}]


def marked_message(message: dict[str, Any]) -> dict[str, Any] | None:
    """A copy of `message` whose last block carries a mark; None when no block can."""
    content = message.get("content")
    if isinstance(content, str):
        if not content:
            return None
        return {
            **message,
            "content": [{"type": "text", "text": content, "cache_control": ephemeral()}],
        }
    if not isinstance(content, list):
        return None
    for index in range(len(content) - 1, -1, -1):
        block = content[index]
        if isinstance(block, dict) and block.get("type") not in _UNMARKABLE:
            blocks = list(content)
            blocks[index] = {**block, "cache_control": ephemeral()}
            return {**message, "content": blocks}
    return None


def mark_messages(messages: list[dict[str, Any]], marks: int = MESSAGE_BREAKPOINTS) -> int:
    """Mark (in place in the list, on copies of the messages) the last `marks` user
    messages; returns how many were marked. The dicts themselves are never changed: they
    are shared with earlier requests."""
    marked = 0
    for index in range(len(messages) - 1, -1, -1):
        if marked >= marks:
            break
        if messages[index].get("role") != "user":
            continue
        copy = marked_message(messages[index])
        if copy is not None:
            messages[index] = copy
            marked += 1
    return marked
