"""The schema check the ACP tests rely on does reject what the protocol forbids."""

from __future__ import annotations

from typing import Any

import pytest

from support.acp_support import TO_AGENT, TO_CLIENT, check_messages

PROMPT = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "session/prompt",
    "params": {"sessionId": "s1", "prompt": [{"type": "text", "text": "hi"}]},
}


def update(payload: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": "s1", "update": payload},
    }


def answer(result: Any, msg_id: int = 2) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "result": result}


def test_a_valid_exchange_passes() -> None:
    log = [
        (TO_AGENT, PROMPT),
        (
            TO_CLIENT,
            update(
                {
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": "c1",
                    "status": "completed",
                    "_meta": {"cleveragents": {"durationMs": 1.5}},
                }
            ),
        ),
        (TO_CLIENT, answer({"stopReason": "end_turn"})),
    ]
    assert check_messages(log) == 3


@pytest.mark.parametrize(
    "log",
    [
        # A tool call status ACP does not have.
        [
            (
                TO_CLIENT,
                update({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "done"}),
            )
        ],
        # A tool_call without its title.
        [(TO_CLIENT, update({"sessionUpdate": "tool_call", "toolCallId": "c1"}))],
        # A stop reason ACP does not have.
        [(TO_AGENT, PROMPT), (TO_CLIENT, answer({"stopReason": "max_iterations"}))],
        # A prompt response shaped like another method's result.
        [(TO_AGENT, PROMPT), (TO_CLIENT, answer({"sessionId": "s1"}))],
        # A response to nothing.
        [(TO_CLIENT, answer({"stopReason": "end_turn"}, msg_id=99))],
        # An agent-side method sent by the agent.
        [(TO_CLIENT, {**PROMPT, "id": 7})],
        # A method ACP does not define.
        [(TO_AGENT, {"jsonrpc": "2.0", "id": 1, "method": "session/explode", "params": {}})],
        # No "jsonrpc": "2.0".
        [(TO_AGENT, {k: v for k, v in PROMPT.items() if k != "jsonrpc"})],
        # A permission answer with an outcome ACP does not have.
        [
            (
                TO_CLIENT,
                {
                    "jsonrpc": "2.0",
                    "id": 0,
                    "method": "session/request_permission",
                    "params": {
                        "sessionId": "s1",
                        "toolCall": {"toolCallId": "c1"},
                        "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"}],
                    },
                },
            ),
            (TO_AGENT, answer({"outcome": {"outcome": "maybe"}}, msg_id=0)),
        ],
    ],
)
def test_what_the_protocol_forbids_fails(log: list[tuple[str, dict[str, Any]]]) -> None:
    with pytest.raises(AssertionError):
        check_messages(log)
