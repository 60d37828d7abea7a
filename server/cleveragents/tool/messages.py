"""Provider-neutral conversation: what the runtime sends to an `LLMCaller` and gets back.

Providers translate these to and from their wire formats (see `router.py`); the runtime and
the run history only ever see these types.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from .images import ImageAttachment
from .records import Usage
from .serialization import register_shape


@dataclass(slots=True, frozen=True)
class ToolCallRequest:
    """A tool call the model asked for.

    `arguments` is whatever the model sent once decoded: usually a dict, but a misbehaving
    model can send a list, a string or invalid JSON. `parse_error` is set when the raw
    argument text was not valid JSON; the runner turns both cases into failed records.
    """

    call_id: str
    tool_name: str
    arguments: Any
    parse_error: str | None = None


@dataclass(slots=True, frozen=True)
class ToolResult:
    """The outcome of one call, as fed back to the model."""

    call_id: str
    tool_name: str
    content: dict[str, Any]
    is_error: bool = False


@dataclass(slots=True, frozen=True)
class UserMessage:
    text: str
    # Images attached to the prompt (`images.py`), shown to the model before the text.
    images: tuple[ImageAttachment, ...] = ()
    role: Literal["user"] = "user"


@dataclass(slots=True, frozen=True)
class AssistantMessage:
    text: str
    tool_calls: tuple[ToolCallRequest, ...] = ()
    # Opaque, JSON-serialisable data a provider needs back verbatim on later turns (Anthropic's
    # signed thinking blocks); stored with the history so a continued run can send it.
    provider_data: dict[str, Any] | None = None
    role: Literal["assistant"] = "assistant"


@dataclass(slots=True, frozen=True)
class ToolResultsMessage:
    results: tuple[ToolResult, ...]
    role: Literal["tool"] = "tool"


Message = UserMessage | AssistantMessage | ToolResultsMessage


@dataclass(slots=True, frozen=True)
class ToolSchema:
    """A tool as offered to the model: the model-facing part of a `ToolSpec`."""

    name: str
    description: str
    input_schema: dict[str, Any]
    mutating: bool = False
    executes_code: bool = False


@dataclass(slots=True)
class LLMRequest:
    messages: list[Message]
    tools: list[ToolSchema]
    system: str | None = None
    # The run's automation profile, so a model (the offline one) can choose tools it may use.
    automation_profile: str = "full-auto"
    iteration: int = 1
    # Whether the provider may mark the request for prompt caching (`ToolCallingRuntime(cache=)`).
    cache: bool = True


@dataclass(slots=True)
class LLMResponse:
    text: str = ""
    tool_calls: list[ToolCallRequest] = field(default_factory=list)
    stop_reason: str | None = None
    usage: Usage = field(default_factory=Usage)
    provider_data: dict[str, Any] | None = None


# A message as the history stores it: its role first; a user's images by reference (the bytes
# stay in the image store) and only when it has some; provider data only when there is some.
register_shape(
    UserMessage,
    order=("role", "text", "images"),
    omit_if_default=("images",),
)
register_shape(
    AssistantMessage,
    order=("role", "text", "tool_calls", "provider_data"),
    omit_if_default=("provider_data",),
)
register_shape(ToolResultsMessage, order=("role", "results"))


def message_from_dict(data: dict[str, Any]) -> Message:
    """A message from its stored data (`to_data`); raises ValueError on a malformed one."""
    role = data.get("role")
    if role == "user":
        images = tuple(
            ImageAttachment.from_reference(reference, None) for reference in data.get("images", [])
        )
        return UserMessage(text=str(data["text"]), images=images)
    if role == "assistant":
        calls = tuple(
            ToolCallRequest(
                call_id=str(c["call_id"]),
                tool_name=str(c["tool_name"]),
                arguments=c.get("arguments"),
                parse_error=c.get("parse_error"),
            )
            for c in data.get("tool_calls", [])
        )
        provider_data = data.get("provider_data")
        return AssistantMessage(
            text=str(data.get("text", "")),
            tool_calls=calls,
            provider_data=provider_data if isinstance(provider_data, dict) else None,
        )
    if role == "tool":
        results = tuple(
            ToolResult(
                call_id=str(r["call_id"]),
                tool_name=str(r["tool_name"]),
                content=dict(r["content"]),
                is_error=bool(r.get("is_error", False)),
            )
            for r in data["results"]
        )
        return ToolResultsMessage(results=results)
    raise ValueError(f"unknown message role: {role!r}")
