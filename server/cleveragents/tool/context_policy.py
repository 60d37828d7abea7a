"""When the context guard clears old tool results, as a setting: its own module so the
settings (and the daemon's `initialize`, which resolves them) do not load the guard and the
message types behind it."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_CLEAR_TRIGGER_TOKENS = 100_000
"""Clear old tool results once a request passes this (Anthropic's context editing default)."""
DEFAULT_KEEP_TOOL_USES = 3
"""Tool results kept whole when clearing (Anthropic's default too)."""
DEFAULT_CLEAR_AT_LEAST_TOKENS = 20_000
"""A clearing step smaller than this is not taken: rewriting the cache would cost more."""


@dataclass(slots=True, frozen=True)
class ContextPolicy:
    """When the guard clears old tool results before the window requires it, and how much.

    Priced for prompt caching, after Anthropic's context editing (`clear_tool_uses`): once a
    request passes `trigger_tokens`, every tool result but the newest `keep_tool_uses` is
    cleared at once, but only when that clears at least `clear_at_least_tokens` (a smaller
    step would rewrite the cached prefix for little). Clearing rewrites the cache from the
    first cleared result on, so it is done rarely and in large steps, and in between the
    requests are smaller, which makes every cached read cheaper. `trigger_tokens=None` is the
    policy of eliding only when the next request would not fit (down to `ELISION_TARGET` of
    the limit). Either way the window is a hard wall: over the limit, the guard elides and
    then compacts (see `compaction.py`).
    """

    trigger_tokens: int | None = DEFAULT_CLEAR_TRIGGER_TOKENS
    keep_tool_uses: int = DEFAULT_KEEP_TOOL_USES
    clear_at_least_tokens: int = DEFAULT_CLEAR_AT_LEAST_TOKENS

    def __post_init__(self) -> None:
        for name in ("trigger_tokens", "keep_tool_uses", "clear_at_least_tokens"):
            value = getattr(self, name)
            if value is None and name == "trigger_tokens":
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name} must be an int, not {type(value).__name__}")
            least = 1 if name == "trigger_tokens" else 0
            if value < least:
                raise ValueError(f"{name} must be at least {least}, got {value}")

    @classmethod
    def at_the_limit(cls) -> ContextPolicy:
        """Elide only when the next request would not fit (the policy before caching was
        priced in)."""
        return cls(trigger_tokens=None)

    def trigger_for(self, limit: int) -> int | None:
        return None if self.trigger_tokens is None else min(self.trigger_tokens, limit)

    def clear_at_least_for(self, limit: int) -> int:
        # A small window cannot hold a large step: at most a quarter of it.
        return min(self.clear_at_least_tokens, limit // 4)
