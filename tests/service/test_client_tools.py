"""The core's half of a client's tools (service/client_tools.py): declarations checked, each
call a request through the host with its run and call, the answer as the record's output."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from cleveragents.service.client_tools import (
    ClientTool,
    ClientToolAnswer,
    ClientToolCall,
    MalformedAnswer,
    check_client_tools,
    registry_with_client_tools,
)
from cleveragents.service.errors import ClientRequestError, ServiceError
from cleveragents.tool.messages import ToolCallRequest
from cleveragents.tool.registry import ToolRegistry
from cleveragents.tool.runner import ToolRunner

SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
DIAGNOSTICS = ClientTool("get_diagnostics", "The editor's problems.", SCHEMA, read_only=True)


class Host:
    """A client in-process: answers with what the test queued, and keeps each call."""

    def __init__(self, *answers: ClientToolAnswer | BaseException | None) -> None:
        self.answers = list(answers)
        self.calls: list[ClientToolCall] = []
        self.withdrawn = 0

    @property
    def client_tools(self) -> Sequence[ClientTool]:
        return (DIAGNOSTICS,)

    async def call_client_tool(self, call: ClientToolCall) -> ClientToolAnswer:
        self.calls.append(call)
        answer = self.answers.pop(0)
        if answer is None:  # never answers: only a timeout or a cancel ends the wait
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.withdrawn += 1
                raise
        if isinstance(answer, BaseException):
            raise answer
        assert answer is not None
        return answer


def run_call(host: Host, tool: ClientTool = DIAGNOSTICS, **arguments: Any) -> Any:
    registry = registry_with_client_tools(ToolRegistry(), [tool], host, "run-1")
    request = ToolCallRequest("call-7", tool.name, arguments)
    return asyncio.run(ToolRunner(registry).run(request, iteration=3))


def test_a_call_names_its_run_and_call_and_the_answer_is_the_output() -> None:
    host = Host(ClientToolAnswer("a.py:1: error"))
    record = run_call(host, path="a.py")
    assert record.success and record.output == {"text": "a.py:1: error"}
    assert host.calls == [ClientToolCall("run-1", "call-7", "get_diagnostics", {"path": "a.py"}, 3)]


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (ClientToolAnswer("gone", is_error=True), "get_diagnostics failed in the client: gone"),
        (ClientRequestError(-32601, "unknown"), "the client could not run get_diagnostics"),
        (MalformedAnswer("result.content: missing"), "is not a tool result: result.content"),
    ],
)
def test_a_failed_answer_is_a_failed_record(answer: Any, message: str) -> None:
    record = run_call(Host(answer), path="a.py")
    assert not record.success and record.error_kind == "execution_error"
    assert message in (record.error or "")


def test_arguments_are_checked_against_the_declared_schema_before_the_client_is_asked() -> None:
    host = Host()
    record = run_call(host, path=5)
    assert record.error_kind == "validation_error" and host.calls == []


def test_no_answer_within_the_timeout_withdraws_the_request() -> None:
    quick = ClientTool("get_diagnostics", "x", SCHEMA, read_only=True, timeout_s=0.05)
    host = Host(None)
    record = run_call(host, quick, path="a.py")
    assert record.error_kind == "timeout" and host.withdrawn == 1


def test_read_only_decides_the_approval_class() -> None:
    writer = ClientTool("format_file", "Format.", SCHEMA)
    registry = registry_with_client_tools(ToolRegistry(), [DIAGNOSTICS, writer], Host(), "r")
    reads, writes = registry.get("get_diagnostics"), registry.get("format_file")
    assert reads is not None and not reads.mutating and not reads.executes_code
    assert writes is not None and writes.mutating and writes.executes_code
    assert writes.source == "client" and writes.context_params == frozenset()


def test_declarations_are_checked_each_naming_its_tool() -> None:
    problems = check_client_tools(
        [
            DIAGNOSTICS,
            ClientTool("read_file", "Mine.", SCHEMA),
            ClientTool("a" * 65, "Long.", SCHEMA),
            ClientTool("get_diagnostics", "Again.", SCHEMA),
            ClientTool("blank", " ", SCHEMA),
            ClientTool("list", "Not an object.", {"type": "array"}),
            ClientTool("slow", "Slow.", SCHEMA, timeout_s=601),
        ],
        taken=["read_file"],
    )
    assert [p.split(":")[0] for p in problems] == [
        "tools[1] ('read_file')",
        f"tools[2] ('{'a' * 65}')",
        "tools[3] ('get_diagnostics')",
        "tools[4] ('blank')",
        "tools[5] ('list')",
        "tools[6] ('slow')",
    ]
    assert check_client_tools([DIAGNOSTICS], taken=["read_file"]) == []


def test_a_clash_with_a_tool_of_the_run_stops_the_run_rather_than_hide_one() -> None:
    base = ToolRegistry()
    base.register("get_diagnostics", lambda path: {}, input_schema=SCHEMA, source="mcp:lint")
    with pytest.raises(ServiceError, match=r"'get_diagnostics' clashes .* mcp:lint"):
        registry_with_client_tools(base, [DIAGNOSTICS], Host(), "r")
