"""ToolCallRouter: registry specs to Anthropic and OpenAI formats and back, both ways."""

from __future__ import annotations

import json
from types import SimpleNamespace

from cleveragents.tool import (
    AssistantMessage,
    Message,
    ToolCallRecord,
    ToolCallRequest,
    ToolRegistry,
    ToolResult,
    ToolResultsMessage,
    UserMessage,
)
from cleveragents.tool.router import ToolCallRouter, result_from_record


def registry() -> ToolRegistry:
    reg = ToolRegistry()

    @reg.tool
    def read(path: str, sandbox_root: str) -> str:
        """Read a file."""
        return path

    return reg


SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string"}},
    "required": ["path"],
    "additionalProperties": False,
}


def test_schemas_out() -> None:
    specs = registry().specs()
    assert ToolCallRouter.to_anthropic_tools(specs) == [
        {"name": "read", "description": "Read a file.", "input_schema": SCHEMA}
    ]
    assert ToolCallRouter.to_openai_tools(specs) == [
        {
            "type": "function",
            "function": {"name": "read", "description": "Read a file.", "parameters": SCHEMA},
        }
    ]


def test_tool_calls_in_from_dicts_and_sdk_objects() -> None:
    block = {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a"}}
    as_object = SimpleNamespace(**block)
    for raw in (block, as_object):
        assert ToolCallRouter.from_anthropic_tool_use(raw) == ToolCallRequest(
            "toolu_1", "read", {"path": "a"}
        )
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "read", "arguments": '{"path": "a"}'},
    }
    assert ToolCallRouter.from_openai_tool_call(call) == ToolCallRequest(
        "c1", "read", {"path": "a"}
    )
    empty = ToolCallRouter.from_openai_tool_call(
        {"id": "c2", "function": {"name": "read", "arguments": ""}}
    )
    assert empty.arguments == {} and empty.parse_error is None
    broken = ToolCallRouter.from_openai_tool_call(
        {"id": "c3", "function": {"name": "read", "arguments": "{"}}
    )
    assert broken.parse_error is not None and broken.arguments == "{"


def test_results_back() -> None:
    ok = result_from_record(
        ToolCallRecord("read", {"path": "a"}, {"content": "x"}, 1.0, True, None, 1, "c1")
    )
    failed = result_from_record(
        ToolCallRecord("read", {}, {}, 1.0, False, "missing 'path'", 1, "c2", "validation_error")
    )
    assert ToolCallRouter.to_anthropic_tool_result(ok) == {
        "type": "tool_result",
        "tool_use_id": "c1",
        "content": '{"content": "x"}',
    }
    assert ToolCallRouter.to_anthropic_tool_result(failed) == {
        "type": "tool_result",
        "tool_use_id": "c2",
        "is_error": True,
        "content": json.dumps({"error": "missing 'path'", "error_kind": "validation_error"}),
    }
    assert ToolCallRouter.to_openai_tool_message(failed) == {
        "role": "tool",
        "tool_call_id": "c2",
        "content": json.dumps({"error": "missing 'path'", "error_kind": "validation_error"}),
    }


def test_whole_conversations() -> None:
    conversation: list[Message] = [
        UserMessage("go"),
        AssistantMessage("Reading.", (ToolCallRequest("c1", "read", {"path": "a"}),)),
        ToolResultsMessage((ToolResult("c1", "read", {"content": "x"}),)),
        AssistantMessage("Done."),
    ]
    assert ToolCallRouter.to_anthropic_messages(conversation) == [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading."},
                {"type": "tool_use", "id": "c1", "name": "read", "input": {"path": "a"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": '{"content": "x"}'},
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
    ]
    assert ToolCallRouter.to_openai_messages(conversation, system="Be brief.") == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": "Reading.",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "read", "arguments": '{"path": "a"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": '{"content": "x"}'},
        {"role": "assistant", "content": "Done."},
    ]
