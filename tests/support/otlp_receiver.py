"""A real OTLP/HTTP trace receiver for tests: decodes each export's protobuf into spans."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


@dataclass
class Span:
    name: str
    span_id: bytes
    parent_span_id: bytes
    trace_id: bytes
    attributes: dict[str, Any]
    error: bool


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


class Receiver:
    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.lock = threading.Lock()

    def take(self, body: bytes) -> None:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        with self.lock:
            for resource_spans in request.resource_spans:
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        self.spans.append(
                            Span(
                                span.name,
                                span.span_id,
                                span.parent_span_id,
                                span.trace_id,
                                {a.key: _value(a.value) for a in span.attributes},
                                span.status.code == 2,
                            )
                        )


@contextmanager
def otlp_receiver() -> Iterator[tuple[str, Receiver]]:
    """The endpoint (for OTEL_EXPORTER_OTLP_ENDPOINT) and what it received."""
    receiver = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            if self.path == "/v1/traces":
                receiver.take(body)
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", receiver
    finally:
        server.shutdown()
        server.server_close()


TWO_CALLS: dict[str, Any] = {
    "model": "claude-haiku-4-5",
    "responses": [
        {
            "text": "Looking.",
            "tool_calls": [
                {"name": "read_file", "arguments": {"path": "secret.txt"}},
                {"name": "list_dir", "arguments": {"path": "."}},
            ],
            "usage": {"input_tokens": 1200, "output_tokens": 40, "cache_read_tokens": 1000},
        },
        {"text": "All read.", "usage": {"input_tokens": 1300, "output_tokens": 10}},
    ],
}


def check_run_tree(spans: list[Span], run: Span) -> None:
    """A run with two model calls and two tool calls, as the GenAI conventions name them."""
    children = [s for s in spans if s.parent_span_id == run.span_id]
    chats = [s for s in children if s.attributes["gen_ai.operation.name"] == "chat"]
    tools = [s for s in children if s.attributes["gen_ai.operation.name"] == "execute_tool"]
    assert len(chats) == 2 and len(tools) == 2 and len(children) == 4
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["gen_ai.usage.input_tokens"] == 2500
    assert run.attributes["gen_ai.usage.output_tokens"] == 50
    assert run.attributes["cleveragents.stop_reason"] == "final_answer"
    assert run.attributes["cleveragents.cost_usd"] > 0
    first = next(c for c in chats if c.attributes["cleveragents.iteration"] == 1)
    assert first.attributes["gen_ai.usage.input_tokens"] == 1200
    assert first.attributes["gen_ai.usage.cache_read.input_tokens"] == 1000
    assert first.attributes["gen_ai.usage.output_tokens"] == 40
    assert "cleveragents.cost_usd" in first.attributes
    assert sorted(t.attributes["gen_ai.tool.name"] for t in tools) == ["list_dir", "read_file"]
    assert all(t.attributes["gen_ai.tool.call.id"] for t in tools)
    assert all(not t.error for t in tools)
