"""Provider-neutral conversation: what the runtime sends to an `LLMCaller` and gets back.

Providers translate these to and from their wire formats (see `router.py`); the runtime and
the run history only ever see these types.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, cast

from .images import ImageAttachment
from .records import Usage


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


class _Serialisable:
    """`to_dict()` on every message: records serialise a conversation without importing us."""

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        return message_to_dict(cast(Message, self))


@dataclass(slots=True, frozen=True)
class UserMessage(_Serialisable):
    text: str
    # Images attached to the prompt (`images.py`), shown to the model before the text.
    images: tuple[ImageAttachment, ...] = ()
    role: Literal["user"] = "user"


@dataclass(slots=True, frozen=True)
class AssistantMessage(_Serialisable):
    text: str
    tool_calls: tuple[ToolCallRequest, ...] = ()
    # Opaque, JSON-serialisable data a provider needs back verbatim on later turns (Anthropic's
    # signed thinking blocks); stored with the history so a continued run can send it.
    provider_data: dict[str, Any] | None = None
    role: Literal["assistant"] = "assistant"


@dataclass(slots=True, frozen=True)
class ToolResultsMessage(_Serialisable):
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


def message_to_dict(message: Message) -> dict[str, Any]:
    if isinstance(message, UserMessage):
        user: dict[str, Any] = {"role": "user", "text": message.text}
        if message.images:  # by reference: the bytes stay in the image store
            user["images"] = [image.reference() for image in message.images]
        return user
    if isinstance(message, AssistantMessage):
        data: dict[str, Any] = {
            "role": "assistant",
            "text": message.text,
            "tool_calls": [
                {
                    "call_id": c.call_id,
                    "tool_name": c.tool_name,
                    "arguments": c.arguments,
                    "parse_error": c.parse_error,
                }
                for c in message.tool_calls
            ],
        }
        if message.provider_data is not None:
            data["provider_data"] = message.provider_data
        return data
    return {
        "role": "tool",
        "results": [
            {
                "call_id": r.call_id,
                "tool_name": r.tool_name,
                "content": r.content,
                "is_error": r.is_error,
            }
            for r in message.results
        ],
    }


def message_from_dict(data: dict[str, Any]) -> Message:
    """Inverse of `message_to_dict`; raises ValueError on a malformed message."""
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
