"""What the runtime knows about models by name: context windows and prices.

Both tables cover the Claude and GPT families as their vendors published them at the time
of writing (Anthropic's and OpenAI's pricing and model pages). A name matches a row when it
is the row's name, optionally with a provider prefix (`openai/`, `anthropic.`, `us.anthropic.`)
and a date or version suffix (`-20250514`, `-2024-08-06`, `-latest`, `-v1:0`, `@20241022`).
Anything else is unknown: its window falls back to a setting (or `DEFAULT_CONTEXT_WINDOW`),
and its price is None, so no cost is shown rather than a wrong one. Prices change: override
them with `ToolCallingRuntime(prices=...)`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .records import Usage

DEFAULT_CONTEXT_WINDOW = 128_000
"""Tokens assumed for a model in no table when nothing is configured: the common size of
today's hosted models (GPT-4o, Llama 3.1, Qwen 2.5, Mistral Large). A local model served with a
smaller context needs `context_window` set, or its server will cut or reject requests."""

CLAUDE_CONTEXT_WINDOW = 200_000
"""Every Claude model since Claude 2.1 reads 200k tokens (more only with a beta header)."""

TOKENS_PER_PRICE_UNIT = 1_000_000


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """USD per million tokens. `input` is uncached input; OpenAI has no cache-write surcharge,
    so its rows repeat the input price there."""

    input: float
    output: float
    cache_write: float
    cache_read: float

    def cost(self, usage: Usage) -> float:
        """USD for `usage`: each kind of token at its own rate."""
        return (
            usage.uncached_input_tokens * self.input
            + usage.cache_write_tokens * self.cache_write
            + usage.cache_read_tokens * self.cache_read
            + usage.output_tokens * self.output
        ) / TOKENS_PER_PRICE_UNIT

    @classmethod
    def from_value(cls, value: ModelPrice | Mapping[str, Any]) -> ModelPrice:
        """A price from a mapping {input, output, cache_write?, cache_read?} (camelCase too).

        A missing cache rate is taken as the input rate: never cheaper than the truth for a
        provider that does not discount cached tokens.
        """
        if isinstance(value, ModelPrice):
            return value
        if not isinstance(value, Mapping):
            raise TypeError(f"a model price must be a mapping, not {type(value).__name__}")
        known = {"input", "output", "cache_write", "cache_read", "cacheWrite", "cacheRead"}
        unknown = sorted(set(value) - known)
        if unknown:
            raise ValueError(f"unknown price field(s) {', '.join(unknown)}; use {sorted(known)}")

        def rate(*names: str, default: float | None = None) -> float:
            for name in names:
                if name in value and value[name] is not None:
                    number = value[name]
                    if isinstance(number, bool) or not isinstance(number, int | float):
                        raise TypeError(f"price {name} must be a number, not {number!r}")
                    if number < 0 or number != number or number == float("inf"):
                        raise ValueError(f"price {name} must be a finite number >= 0, got {number}")
                    return float(number)
            if default is None:
                raise ValueError(f"a model price needs {names[0]!r} (USD per million tokens)")
            return default

        input_rate = rate("input")
        return cls(
            input=input_rate,
            output=rate("output"),
            cache_write=rate("cache_write", "cacheWrite", default=input_rate),
            cache_read=rate("cache_read", "cacheRead", default=input_rate),
        )


def _anthropic(input_rate: float, output_rate: float) -> ModelPrice:
    # Anthropic's rule: a 5-minute cache write costs 1.25x input, a cache read 0.1x.
    return ModelPrice(
        input_rate, output_rate, round(input_rate * 1.25, 6), round(input_rate * 0.1, 6)
    )


def _openai(input_rate: float, output_rate: float, cached: float) -> ModelPrice:
    return ModelPrice(input_rate, output_rate, input_rate, cached)


MODEL_PRICES: dict[str, ModelPrice] = {
    # Anthropic (platform.claude.com/docs/en/about-claude/pricing)
    "claude-opus-4-6": _anthropic(5.0, 25.0),
    "claude-opus-4-5": _anthropic(5.0, 25.0),
    "claude-opus-4-1": _anthropic(15.0, 75.0),
    "claude-opus-4-0": _anthropic(15.0, 75.0),
    "claude-opus-4": _anthropic(15.0, 75.0),
    "claude-sonnet-4-6": _anthropic(3.0, 15.0),
    "claude-sonnet-4-5": _anthropic(3.0, 15.0),
    "claude-sonnet-4-0": _anthropic(3.0, 15.0),
    "claude-sonnet-4": _anthropic(3.0, 15.0),
    "claude-3-7-sonnet": _anthropic(3.0, 15.0),
    "claude-3-5-sonnet": _anthropic(3.0, 15.0),
    "claude-haiku-4-5": _anthropic(1.0, 5.0),
    "claude-3-5-haiku": _anthropic(0.8, 4.0),
    "claude-3-opus": _anthropic(15.0, 75.0),
    "claude-3-haiku": ModelPrice(0.25, 1.25, 0.30, 0.03),
    # OpenAI (platform.openai.com/docs/pricing): cached input is the cache-read rate.
    "gpt-5": _openai(1.25, 10.0, 0.125),
    "gpt-5-mini": _openai(0.25, 2.0, 0.025),
    "gpt-5-nano": _openai(0.05, 0.40, 0.005),
    "gpt-4.1": _openai(2.0, 8.0, 0.50),
    "gpt-4.1-mini": _openai(0.40, 1.60, 0.10),
    "gpt-4.1-nano": _openai(0.10, 0.40, 0.025),
    "gpt-4o": _openai(2.50, 10.0, 1.25),
    "gpt-4o-mini": _openai(0.15, 0.60, 0.075),
    "o3": _openai(2.0, 8.0, 0.50),
    "o4-mini": _openai(1.10, 4.40, 0.275),
    "o3-mini": _openai(1.10, 4.40, 0.55),
    "o1": _openai(15.0, 60.0, 7.50),
}

MODEL_CONTEXT_WINDOWS: dict[str, int] = {
    # Claude: every listed model reads 200k tokens; see also the "claude-" family rule.
    **{name: CLAUDE_CONTEXT_WINDOW for name in MODEL_PRICES if name.startswith("claude-")},
    # GPT-5: 400k in all, of which at most 272k input; the input limit is what binds here.
    "gpt-5": 272_000,
    "gpt-5-mini": 272_000,
    "gpt-5-nano": 272_000,
    "gpt-4.1": 1_047_576,
    "gpt-4.1-mini": 1_047_576,
    "gpt-4.1-nano": 1_047_576,
    "gpt-4o": 128_000,
    "gpt-4o-mini": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385,
    "o3": 200_000,
    "o4-mini": 200_000,
    "o3-mini": 200_000,
    "o1": 200_000,
}

# Vertex spells a date as "@20241022"; Bedrock appends "-v1:0"; OpenAI "-2024-08-06" or "-0613".
_VERSION_SUFFIX = re.compile(
    r"(?:-(?:\d{8}|\d{4}-\d{2}-\d{2}|\d{4}|latest))?(?:-v\d+(?::\d+)?)?(?:@[\w.-]+)?$"
)
_CLOUD_PREFIX = re.compile(r"^(?:[a-z]{2,4}\.)?anthropic\.")


def model_key(model: str) -> str:
    """`model` as the tables spell it: lower case, without provider prefix or version suffix."""
    name = model.strip().lower().rsplit("/", 1)[-1]
    name = _CLOUD_PREFIX.sub("", name)
    return _VERSION_SUFFIX.sub("", name, count=1)


def _lookup(table: Mapping[str, Any], model: str) -> Any:
    name = model.strip().lower()
    if name in table:
        return table[name]
    return table.get(model_key(model))


def context_window_for(model: str | None) -> int | None:
    """The model's context window in tokens, or None when the tables do not know it."""
    if not model:
        return None
    window: int | None = _lookup(MODEL_CONTEXT_WINDOWS, model)
    if window is None and model_key(model).startswith("claude-"):
        window = CLAUDE_CONTEXT_WINDOW
    return window


def price_for(
    model: str | None, overrides: Mapping[str, ModelPrice] | None = None
) -> ModelPrice | None:
    """The model's price (an override first, then the table), or None when unknown."""
    if not model:
        return None
    if overrides:
        found: ModelPrice | None = _lookup(overrides, model)
        if found is not None:
            return found
    price: ModelPrice | None = _lookup(MODEL_PRICES, model)
    return price


def normalise_prices(
    prices: Mapping[str, ModelPrice | Mapping[str, Any]] | None,
) -> dict[str, ModelPrice]:
    """User price overrides keyed by `model_key`, each checked (ValueError/TypeError if bad)."""
    if prices is None:
        return {}
    if not isinstance(prices, Mapping):
        raise TypeError(f"prices must be a mapping of model name to price, not {type(prices)}")
    table: dict[str, ModelPrice] = {}
    for model, value in prices.items():
        if not isinstance(model, str) or not model.strip():
            raise ValueError(f"a price needs a model name, got {model!r}")
        try:
            price = ModelPrice.from_value(value)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"price for {model!r}: {exc}") from None
        table[model.strip().lower()] = price
        table.setdefault(model_key(model), price)
    return table
