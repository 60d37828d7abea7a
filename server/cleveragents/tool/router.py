"""ToolCallRouter: provider formats in and out, and each call on to the `ToolRunner`.

Providers call the translation methods (schemas out, tool calls in, results back); the runtime
calls `route`. Inputs may be plain dicts or SDK objects (read by attribute).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from .context import ToolActorContext
from .images import anthropic_block, openai_part
from .messages import (
    AssistantMessage,
    Message,
    ToolCallRequest,
    ToolResult,
    ToolSchema,
    UserMessage,
)
from .records import ToolCallRecord
from .registry import ToolSpec
from .result_budget import DEFAULT_RESULT_BUDGET_CHARS, fit_with_size
from .runner import ThreadBudget, ToolRunner

if TYPE_CHECKING:
    from .policy import Authorizer


ANTHROPIC_CONTENT = "anthropic_content"
"""Key in `provider_data` for an assistant turn's content blocks as the API sent them."""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def loads_strict(text: str) -> Any:
    """json.loads without NaN and Infinity, which Python accepts and JSON clients reject."""
    return json.loads(text, parse_constant=_reject_constant)


def _field(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _schema(tool: ToolSpec | ToolSchema) -> ToolSchema:
    return tool.to_schema() if isinstance(tool, ToolSpec) else tool


def result_from_record(
    record: ToolCallRecord, budget_chars: int | None = DEFAULT_RESULT_BUDGET_CHARS
) -> ToolResult:
    """What the model is told about a call: its output, or the error and its kind.

    Cut to `budget_chars` characters of JSON (see `result_budget.py`); the record keeps all.
    """
    return sized_result_from_record(record, budget_chars)[0]


def sized_result_from_record(
    record: ToolCallRecord, budget_chars: int | None = DEFAULT_RESULT_BUDGET_CHARS
) -> tuple[ToolResult, int]:
    """`result_from_record` and the length of the result's JSON text (the context guard's
    measure), computed together so a result is encoded once."""
    if record.success:
        content, size = fit_with_size(record.tool_name, record.output, budget_chars)
        return ToolResult(record.call_id, record.tool_name, content, is_error=False), size
    error = {"error": record.error or "tool call failed", "error_kind": record.error_kind}
    content, size = fit_with_size(record.tool_name, error, budget_chars)
    return ToolResult(record.call_id, record.tool_name, content, is_error=True), size


def _result_text(result: ToolResult) -> str:
    return json.dumps(result.content, ensure_ascii=False, default=str)


class ToolCallRouter:
    def __init__(self, runner: ToolRunner) -> None:
        if not isinstance(runner, ToolRunner):
            raise TypeError(f"runner must be a ToolRunner, not {type(runner).__name__}")
        self.runner = runner

    async def route(
        self,
        request: ToolCallRequest,
        context: ToolActorContext | None,
        iteration: int,
        authorizer: Authorizer | None = None,
        budget: ThreadBudget | None = None,
    ) -> ToolCallRecord:
        return await self.runner.run(request, context, iteration, authorizer, budget)

    # -- Anthropic Messages API ------------------------------------------------------------
    @staticmethod
    def to_anthropic_tools(tools: Iterable[ToolSpec | ToolSchema]) -> list[dict[str, Any]]:
        return [
            {"name": s.name, "description": s.description, "input_schema": s.input_schema}
            for s in map(_schema, tools)
        ]

    @staticmethod
    def from_anthropic_tool_use(block: Any) -> ToolCallRequest:
        """A `tool_use` content block (dict or SDK object) as a request."""
        return ToolCallRequest(
            call_id=str(_field(block, "id", "")),
            tool_name=str(_field(block, "name", "")),
            arguments=_field(block, "input", {}),
        )

    @staticmethod
    def to_anthropic_tool_result(result: ToolResult) -> dict[str, Any]:
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": result.call_id,
            "content": _result_text(result),
        }
        if result.is_error:
            block["is_error"] = True
        return block

    @classmethod
    def to_anthropic_message(cls, message: Message) -> dict[str, Any] | None:
        """One message in the Messages API's format; None for a blank assistant turn, which
        the API would refuse (its neighbouring user turns then merge)."""
        if isinstance(message, UserMessage):
            if message.images:  # images first, as Anthropic advises, then the text
                shown = [anthropic_block(image) for image in message.images]
                # The API refuses a blank text block: images alone are sent alone.
                if message.text.strip():
                    shown.append({"type": "text", "text": message.text})
                return {"role": "user", "content": shown}
            return {"role": "user", "content": message.text}
        if isinstance(message, AssistantMessage):
            received = (message.provider_data or {}).get(ANTHROPIC_CONTENT)
            if isinstance(received, list) and received:
                # Signed thinking blocks must go back exactly as they came.
                return {"role": "assistant", "content": list(received)}
            blocks: list[dict[str, Any]] = []
            # The API rejects whitespace-only text blocks and empty messages anywhere but last.
            if message.text.strip():
                blocks.append({"type": "text", "text": message.text})
            for call in message.tool_calls:
                arguments = call.arguments if isinstance(call.arguments, dict) else {}
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": call.call_id,
                        "name": call.tool_name,
                        "input": arguments,
                    }
                )
            return {"role": "assistant", "content": blocks} if blocks else None
        return {
            "role": "user",
            "content": [cls.to_anthropic_tool_result(r) for r in message.results],
        }

    @classmethod
    def to_anthropic_messages(cls, messages: Sequence[Message]) -> list[dict[str, Any]]:
        converted = (cls.to_anthropic_message(m) for m in messages)
        return [m for m in converted if m is not None]

    # -- OpenAI Chat Completions ----------------------------------------------------------
    @staticmethod
    def to_openai_tools(tools: Iterable[ToolSpec | ToolSchema]) -> list[dict[str, Any]]:
        return [
            {
                "type": "function",
                "function": {
                    "name": s.name,
                    "description": s.description,
                    "parameters": s.input_schema,
                },
            }
            for s in map(_schema, tools)
        ]

    @staticmethod
    def from_openai_tool_call(call: Any) -> ToolCallRequest:
        """A `tool_calls[i]` entry (dict or SDK object); its arguments arrive as JSON text."""
        function = _field(call, "function", {})
        raw = _field(function, "arguments", "")
        arguments: Any = {}
        parse_error: str | None = None
        if isinstance(raw, str):
            if raw.strip():
                try:
                    arguments = loads_strict(raw)
                except ValueError as exc:
                    arguments, parse_error = raw, str(exc)
        else:
            arguments = raw
        return ToolCallRequest(
            call_id=str(_field(call, "id", "")),
            tool_name=str(_field(function, "name", "")),
            arguments=arguments,
            parse_error=parse_error,
        )

    @staticmethod
    def to_openai_tool_message(result: ToolResult) -> dict[str, Any]:
        return {"role": "tool", "tool_call_id": result.call_id, "content": _result_text(result)}

    @classmethod
    def to_openai_message(cls, message: Message) -> list[dict[str, Any]]:
        """One message as Chat Completions messages: a results message is one per result."""
        if isinstance(message, UserMessage):
            if message.images:
                # Images alone are a prompt; a blank text part is left out.
                parts = [{"type": "text", "text": message.text}] if message.text.strip() else []
                parts.extend(openai_part(image) for image in message.images)
                return [{"role": "user", "content": parts}]
            return [{"role": "user", "content": message.text}]
        if isinstance(message, AssistantMessage):
            # null content only beside tool calls: Ollama rejects it otherwise.
            content = message.text or (None if message.tool_calls else "")
            entry: dict[str, Any] = {"role": "assistant", "content": content}
            if message.tool_calls:
                # Arguments that were not a JSON object go back as "{}": Ollama rejects the
                # whole request otherwise ("invalid tool call arguments"), and the tool
                # result already tells the model what was wrong with them.
                entry["tool_calls"] = [
                    {
                        "id": c.call_id,
                        "type": "function",
                        "function": {
                            "name": c.tool_name,
                            "arguments": json.dumps(
                                c.arguments if isinstance(c.arguments, dict) else {}
                            ),
                        },
                    }
                    for c in message.tool_calls
                ]
            return [entry]
        return [cls.to_openai_tool_message(r) for r in message.results]

    @classmethod
    def to_openai_messages(
        cls, messages: Sequence[Message], system: str | None = None
    ) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
        for message in messages:
            out.extend(cls.to_openai_message(message))
        return out
