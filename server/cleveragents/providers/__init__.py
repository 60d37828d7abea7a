"""LLM providers: each is an `LLMCaller`. SDKs are imported only when a provider is created."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ..settings_table import (
    ENV_OPENAI_MODEL,
    ENV_OPENAI_VISION,
    ENV_PROVIDER,
    ENV_REPLAY_SCRIPT,
    PROVIDER_NAMES,
)
from .errors import ProviderError

if TYPE_CHECKING:  # a daemon names the providers at `initialize` without the model's types
    from ..tool.llm import LLMCaller

PROVIDERS = PROVIDER_NAMES  # the provider row's choices (settings_table.py)
DEFAULT_PROVIDER = "offline"


class ProviderConfigError(ValueError):
    """A provider name or option that cannot work; the message says how to fix it."""


def resolve_provider_name(provider: str | None) -> str:
    """The provider to use: the argument, else the provider variable, else offline; the
    message of a bad one names where it came from (the argument, or the variable)."""
    name = (provider or os.environ.get(ENV_PROVIDER) or DEFAULT_PROVIDER).strip()
    if name not in PROVIDERS:
        where = "" if provider else f"${ENV_PROVIDER}: "
        raise ProviderConfigError(
            f"{where}unknown provider {name!r}; choose one of {', '.join(PROVIDERS)}"
        )
    return name


def create_llm_caller(
    provider: str | None = None, model: str | None = None, **options: Any
) -> LLMCaller:
    """Build the named provider's `LLMCaller`.

    Options: `script` (replay: path to the JSON script), `base_url` (anthropic, openai),
    `max_retries`, `timeout`, `max_tokens`, `context_window`, `cache` (prompt caching;
    None: the prompt caching variable, on by default) and `vision` (openai: whether the
    model takes images; None: the openai vision variable). API keys come from the environment.
    """
    name = resolve_provider_name(provider)
    if name == "offline":
        from .offline import OfflineCaller

        return OfflineCaller()
    if name == "replay":
        from .replay import ReplayCaller

        script = options.get("script") or os.environ.get(ENV_REPLAY_SCRIPT)
        if not script:
            raise ProviderConfigError(
                f"the replay provider needs a script: pass --script FILE or set {ENV_REPLAY_SCRIPT}"
            )
        return ReplayCaller.from_file(script, model=model)
    passthrough = {
        k: v
        for k, v in options.items()
        if k in ("base_url", "max_retries", "timeout", "max_tokens", "context_window", "cache")
        and v is not None
    }
    if name == "anthropic":
        from .anthropic import AnthropicCaller

        if model:
            passthrough["model"] = model
        return AnthropicCaller(**passthrough)
    from .openai import OpenAICaller

    if options.get("vision") is not None:
        passthrough["vision"] = bool(options["vision"])
    if not model:
        model = os.environ.get(ENV_OPENAI_MODEL)
    if not model:
        raise ProviderConfigError(
            "the openai provider needs a model name: pass --model (e.g. gpt-4o-mini, or "
            f"llama3.1 for Ollama) or set {ENV_OPENAI_MODEL}"
        )
    return OpenAICaller(model, **passthrough)


def no_vision(provider: str, model: str | None) -> str:
    """Why a run's images cannot be sent, and what to do: said before any request."""
    if provider == "openai":
        return (
            f"the openai provider's model {model or '(unnamed)'} is not known to take images: "
            f"set {ENV_OPENAI_VISION}=1 when the server's model has vision (gpt-4o, "
            "llava...), or remove the images"
        )
    if provider == "offline":
        return (
            "the offline model cannot see images: use the anthropic provider (or openai with "
            "a vision model), or remove the images"
        )
    return f"the {provider} provider's model cannot take images; remove them"


__all__ = [
    "DEFAULT_PROVIDER",
    "PROVIDERS",
    "ProviderConfigError",
    "ProviderError",
    "create_llm_caller",
    "no_vision",
    "resolve_provider_name",
]
