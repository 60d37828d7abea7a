"""The daemon's overrides of pygls (`daemon/pygls_overrides.py`), on pygls's own code paths."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException

from cleveragents.daemon import pygls_overrides
from cleveragents.daemon.pygls_overrides import (
    CLIENT_REQUESTS,
    CUSTOM_REQUESTS,
    ClientResponse,
    CustomRequest,
    DaemonProtocol,
    DaemonServer,
    ExpectedErrors,
    daemon_converter,
    params_error,
)
from cleveragents.protocol import wire


def _protocol() -> DaemonProtocol:
    server = DaemonServer(
        "test", "0", protocol_cls=DaemonProtocol, converter_factory=daemon_converter
    )
    protocol = server.protocol
    assert isinstance(protocol, DaemonProtocol)
    return protocol


def test_pygls_structures_our_requests_strictly_into_the_wire_types() -> None:
    protocol = _protocol()
    message = protocol.structure_message(
        {"jsonrpc": "2.0", "id": 3, "method": "cleveragents/getRun", "params": {"runId": "r1"}}
    )
    assert isinstance(message, CustomRequest)
    assert message.id == 3
    assert message.params == wire.GetRunParams(run_id="r1")


def test_a_coercible_value_is_refused_with_every_bad_field_named() -> None:
    protocol = _protocol()
    with pytest.raises(JsonRpcException) as raised:
        protocol.structure_message(
            {
                "jsonrpc": "2.0",
                "id": 4,
                "method": "cleveragents/run",
                "params": {"prompt": 7, "sandboxRoot": ["/"]},
            }
        )
    problems = params_error(raised.value)
    assert problems is not None
    assert any(p.startswith("params.prompt: expected a string") for p in problems.problems)
    assert any(p.startswith("params.sandboxRoot:") for p in problems.problems)


def test_missing_params_are_required_unless_the_method_says_optional() -> None:
    protocol = _protocol()
    with pytest.raises(JsonRpcException) as raised:
        protocol.structure_message({"jsonrpc": "2.0", "id": 5, "method": "cleveragents/run"})
    problems = params_error(raised.value)
    assert problems is not None and problems.problems == ["params: required"]
    optional = next(m for m in CUSTOM_REQUESTS.values() if m.params_optional)
    message = protocol.structure_message({"jsonrpc": "2.0", "id": 6, "method": optional.name})
    assert isinstance(message, CustomRequest) and message.params is not None


def test_lsp_methods_and_server_to_client_methods_keep_pygls_types() -> None:
    protocol = _protocol()
    assert protocol.get_message_type(lsp.INITIALIZE) is lsp.InitializeRequest
    sent_by_server = [m.name for m in wire.METHODS if m.direction == "server_to_client"]
    assert sent_by_server
    for name in sent_by_server:
        assert protocol.get_message_type(name) is None


def test_lsp_params_errors_are_not_ours_and_stay_pygls_errors() -> None:
    protocol = _protocol()
    with pytest.raises(JsonRpcException) as raised:
        protocol.structure_message(
            {"jsonrpc": "2.0", "id": 7, "method": lsp.INITIALIZE, "params": {"capabilities": 1}}
        )
    assert params_error(raised.value) is None


def test_expected_errors_silence_our_params_errors_but_not_internal_errors() -> None:
    protocol = _protocol()
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    pygls_log = logging.getLogger("pygls.protocol.json_rpc")
    handler = Keep()
    handler.addFilter(ExpectedErrors())
    pygls_log.addHandler(handler)
    try:
        with pytest.raises(JsonRpcException):
            protocol.structure_message(
                {"jsonrpc": "2.0", "id": 8, "method": "cleveragents/run", "params": {"prompt": 1}}
            )
        assert records == []
        with pytest.raises(JsonRpcException):
            protocol.structure_message(
                {"jsonrpc": "2.0", "id": 9, "method": lsp.INITIALIZE, "params": {"x": 1}}
            )
        assert [r.levelno for r in records] == [logging.ERROR]
    finally:
        pygls_log.removeHandler(handler)


class _Sent:
    """A writer that keeps the messages pygls writes."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    def write(self, data: bytes) -> None:
        self.messages.append(json.loads(data.split(b"\r\n\r\n", 1)[1]))

    def close(self) -> None:
        pass


def _answer(protocol: DaemonProtocol, msg_id: str, result: Any) -> None:
    message = {"jsonrpc": "2.0", "id": msg_id, "result": result}
    protocol.handle_message(protocol.structure_message(message))


def test_answers_to_our_requests_keep_their_results_as_the_client_sent_them() -> None:
    protocol = _protocol()
    protocol.set_writer(_Sent())
    method = next(iter(sorted(CLIENT_REQUESTS)))
    assert protocol.get_result_type(method) is ClientResponse
    future = protocol.send_request(method, {"a": 1}, msg_id="ours-1")
    _answer(protocol, "ours-1", {"decision": {"nested": [1, {"x": None}]}})
    # pygls's converter alone makes objects namedtuples (`Object(decision=...)`).
    assert future.result() == {"decision": {"nested": [1, {"x": None}]}}


def test_a_withdrawn_request_is_cancelled_and_its_late_answer_is_no_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(pygls_overrides, "MAX_WITHDRAWN_KEPT", 2)
    protocol = _protocol()
    sent = _Sent()
    protocol.set_writer(sent)
    method = next(iter(sorted(CLIENT_REQUESTS)))
    futures = [protocol.send_request(method, {}, msg_id=f"ours-{n}") for n in range(3)]
    for n, future in enumerate(futures):
        assert future.cancel()
        protocol.withdraw(f"ours-{n}")
    cancels = [m["params"] for m in sent.messages if m.get("method") == lsp.CANCEL_REQUEST]
    assert cancels == [{"id": "ours-0"}, {"id": "ours-1"}, {"id": "ours-2"}]
    with caplog.at_level(logging.DEBUG, logger="pygls"):
        for n in range(3):
            _answer(protocol, f"ours-{n}", {})
    unknown = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    # Only the last MAX_WITHDRAWN_KEPT are remembered: the oldest answer is an unknown one.
    assert unknown == ['Received response to unknown message id "ours-0"']
