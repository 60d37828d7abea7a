"""How the fake LLM servers count tokens and serve their prompt caches.

The estimate is fixed so tests and benches can predict it: a request is a sequence of blocks
(tool definitions, then the system prompt, then each message's content blocks; a string
content is one text block), and each block costs ceil(len(its canonical JSON) / 4) tokens,
plus 4 for each message it starts. Canonical JSON is `json.dumps(block, sort_keys=True,
ensure_ascii=False, separators=(",", ":"))` without any `cache_control` key, so a cache mark
changes neither the count nor the prefix. Real tokenizers differ (about 3 to 4 characters a
token for code and English); what matters here is that the count is deterministic and grows
with the request as a real one does.

A prefix is identified by a hash chained over its blocks (and their message roles), starting
from the model name: two requests share a prefix up to a block exactly when every block up to
it is identical.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import threading
import time
from dataclasses import dataclass
from typing import Any

CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD_TOKENS = 4


def canonical(block: Any) -> str:
    if isinstance(block, dict) and "cache_control" in block:
        block = {k: v for k, v in block.items() if k != "cache_control"}
    return json.dumps(block, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def text_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


# The magic bytes each image type the APIs take starts with (what they check the declared
# media type against).
IMAGE_MAGIC = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "image/webp": (b"RIFF",),
}


def image_problem(media_type: Any, data: Any) -> str | None:
    """Why an image the APIs would refuse is refused: an unsupported media type, data that
    is not base64, or bytes that are not of the declared type; None when it is fine."""
    if media_type not in IMAGE_MAGIC:
        return (
            "Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'; "
            f"got {media_type!r}"
        )
    try:
        raw = base64.b64decode(str(data), validate=True)
    except ValueError:
        return "Image data is not valid base64"
    if not raw.startswith(IMAGE_MAGIC[media_type]) or (
        media_type == "image/webp" and raw[8:12] != b"WEBP"
    ):
        return f"Image does not match the provided media type {media_type}"
    return None


@dataclass(frozen=True)
class Block:
    """One block of a request as the cache sees it."""

    value: Any
    role: str | None = None  # set on the first block of a message
    marked: bool = False  # carries cache_control


@dataclass
class Prefixes:
    """A request's blocks with the tokens and the hash of the prefix ending at each."""

    tokens: list[int]  # cumulative
    hashes: list[bytes]
    marked: list[int]  # indices of blocks with cache_control

    @property
    def total(self) -> int:
        return self.tokens[-1] if self.tokens else 0


def prefixes(model: str, blocks: list[Block]) -> Prefixes:
    digest = hashlib.sha256(model.encode()).digest()
    total = 0
    tokens: list[int] = []
    hashes: list[bytes] = []
    marked: list[int] = []
    for index, block in enumerate(blocks):
        text = canonical(block.value)
        total += text_tokens(text)
        head = ""
        if block.role is not None:
            total += MESSAGE_OVERHEAD_TOKENS
            head = f"<{block.role}>"
        digest = hashlib.sha256(digest + head.encode() + text.encode()).digest()
        tokens.append(total)
        hashes.append(digest)
        if block.marked:
            marked.append(index)
    return Prefixes(tokens, hashes, marked)


def message_blocks(role: str, content: Any) -> list[Block]:
    """A message's content as blocks: a string is one text block; the first carries the role."""
    if isinstance(content, str):
        items: list[Any] = [{"type": "text", "text": content}]
    elif isinstance(content, list) and content:
        items = content
    else:
        items = [content]
    return [
        Block(
            item,
            role if i == 0 else None,
            isinstance(item, dict) and "cache_control" in item,
        )
        for i, item in enumerate(items)
    ]


@dataclass(frozen=True)
class CacheUse:
    """One request's input tokens: all of them, and the parts read from and written to the
    cache (the rest is uncached input)."""

    total: int
    read: int = 0
    write: int = 0

    @property
    def uncached(self) -> int:
        return self.total - self.read - self.write


class PrefixCache:
    """Cached prefixes by hash, each with its token count and expiry (refreshed on a hit)."""

    def __init__(self, ttl_s: float) -> None:
        self.ttl_s = ttl_s
        self._entries: dict[bytes, tuple[int, float]] = {}
        self._lock = threading.Lock()

    def hit(self, digest: bytes) -> int | None:
        now = time.monotonic()
        with self._lock:
            entry = self._entries.get(digest)
            if entry is None or entry[1] < now:
                return None
            self._entries[digest] = (entry[0], now + self.ttl_s)
            return entry[0]

    def store(self, digest: bytes, tokens: int) -> None:
        with self._lock:
            self._entries[digest] = (tokens, time.monotonic() + self.ttl_s)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
