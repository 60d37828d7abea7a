"""OpenTelemetry traces of runs, for every front: `RunManager.run` adds `tracing_observer`.

Off, and free, unless `OTEL_EXPORTER_OTLP_ENDPOINT` (or `..._TRACES_ENDPOINT`) is set and the
`otel` extra is installed: nothing of OpenTelemetry is imported otherwise. Spans follow the
GenAI semantic conventions: a run is `invoke_agent`, each model call `chat`, each tool call
`execute_tool`, with the tokens (cache reads and writes too) and our estimated cost. Prompts,
answers and tool arguments and results are exported only with
`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`. Spans go over OTLP/HTTP in
batches; the process's exit flushes them. A span open when the run starts (a batch task's)
is the run's parent.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..tool.events import (
    IterationStarted,
    ResponseReceived,
    RunEvent,
    RunFailed,
    RunFinished,
    RunObserver,
    RunStarted,
    ToolCallFinished,
    ToolCallStarted,
)

if TYPE_CHECKING:
    from .runs import RunPlan

log = logging.getLogger(__name__)

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
CAPTURE_CONTENT = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_TRUE = ("1", "true", "yes", "on")

_lock = threading.Lock()
_tracer: Any = None
_tried = False


def enabled(env: Mapping[str, str] | None = None) -> bool:
    env = os.environ if env is None else env
    return any(env.get(name) for name in ENDPOINT_VARIABLES)


def tracer() -> Any:
    """The process's tracer, set up once; None when tracing is off or not installed."""
    global _tracer, _tried
    if not enabled():
        return None
    with _lock:
        if _tried:
            return _tracer
        _tried = True
        try:
            from opentelemetry import trace
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
        except ImportError:
            log.warning(
                "OTEL_EXPORTER_OTLP_ENDPOINT is set but OpenTelemetry is not installed: "
                "pip install 'cleveragents[otel]' to export traces"
            )
            return None
        current = trace.get_tracer_provider()
        if not isinstance(current, TracerProvider):  # nobody set one up: ours, global
            provider = TracerProvider(
                resource=Resource.create({"service.name": "cleveragents"}),
            )
            provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
            trace.set_tracer_provider(provider)
        _tracer = trace.get_tracer("cleveragents")
        return _tracer


@contextmanager
def span(name: str, attributes: Mapping[str, Any]) -> Iterator[None]:
    """A span around a block (a batch, a batch task), current inside it; nothing when off."""
    traced = tracer()
    if traced is None:
        yield
        return
    with traced.start_as_current_span(name, attributes=dict(attributes)):
        yield


def trace_carrier() -> dict[str, str]:
    """The current span's context as W3C headers, for a run in another process (a Ray
    worker) to continue the trace; empty when tracing is off."""
    if tracer() is None:
        return {}
    from opentelemetry import propagate

    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return carrier


@contextmanager
def continued_trace(carrier: Mapping[str, str]) -> Iterator[None]:
    """Spans started inside are children of the span `carrier` came from (`trace_carrier`);
    they are exported before the block ends (a worker process outlives the task)."""
    if not carrier or tracer() is None:
        yield
        return
    from opentelemetry import context, propagate, trace

    token = context.attach(propagate.extract(dict(carrier)))
    try:
        yield
    finally:
        context.detach(token)
        flush = getattr(trace.get_tracer_provider(), "force_flush", None)
        if flush is not None:
            flush()


def tracing_observer(plan: RunPlan, model: str | None = None) -> RunObserver | None:
    """The run's spans, or None when tracing is off; `model`: the model the run's caller
    uses (else the plan's)."""
    traced = tracer()
    if traced is None:
        return None
    capture = os.environ.get(CAPTURE_CONTENT, "").strip().lower() in _TRUE
    return RunSpans(traced, plan, capture, model if model is not None else plan.model)


class RunSpans:
    """A run observer turning the run's events into spans."""

    def __init__(self, traced: Any, plan: RunPlan, capture: bool, model: str | None) -> None:
        from opentelemetry import context

        self.tracer = traced
        self.plan = plan
        self.model = model
        self.capture = capture
        # The parent: whatever span is current where the run was started.
        self.parent = context.get_current()
        self.run: Any = None
        self.model_call: Any = None
        self.tools: dict[str, Any] = {}

    def __call__(self, event: RunEvent) -> None:
        from opentelemetry import trace

        plan = self.plan
        if isinstance(event, RunStarted):
            attributes: dict[str, Any] = {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "cleveragents",
                "gen_ai.provider.name": plan.provider,
                "gen_ai.conversation.id": event.run_id,
                "cleveragents.run_id": event.run_id,
                "cleveragents.automation_profile": event.automation_profile,
                "cleveragents.max_iterations": event.max_iterations,
            }
            if self.model:
                attributes["gen_ai.request.model"] = self.model
            if self.capture:
                attributes["gen_ai.input.messages"] = json.dumps(
                    [{"role": "user", "parts": [{"type": "text", "content": event.prompt}]}]
                )
            self.run = self.tracer.start_span(
                "invoke_agent cleveragents", context=self.parent, attributes=attributes
            )
            return
        if self.run is None:
            return
        inside = trace.set_span_in_context(self.run)
        if isinstance(event, IterationStarted):
            self._end_model_call()
            attributes = {
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": plan.provider,
                "cleveragents.iteration": event.iteration,
            }
            if self.model:
                attributes["gen_ai.request.model"] = self.model
            name = f"chat {self.model}" if self.model else "chat"
            self.model_call = self.tracer.start_span(name, context=inside, attributes=attributes)
        elif isinstance(event, ResponseReceived) and self.model_call is not None:
            usage = event.usage
            self.model_call.set_attributes(
                {
                    "gen_ai.usage.input_tokens": usage.input_tokens,
                    "gen_ai.usage.output_tokens": usage.output_tokens,
                    "gen_ai.usage.cache_read.input_tokens": usage.cache_read_tokens,
                    "gen_ai.usage.cache_creation.input_tokens": usage.cache_write_tokens,
                    "cleveragents.tool_calls_requested": len(event.message.tool_calls),
                }
            )
            if event.cost_usd is not None:
                self.model_call.set_attribute("cleveragents.cost_usd", event.cost_usd)
            if self.capture:
                self.model_call.set_attribute(
                    "gen_ai.output.messages",
                    json.dumps(
                        [
                            {
                                "role": "assistant",
                                "parts": [{"type": "text", "content": event.message.text}],
                            }
                        ]
                    ),
                )
            self._end_model_call()
        elif isinstance(event, ToolCallStarted):
            attributes = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": event.tool_name,
                "gen_ai.tool.call.id": event.call_id,
                "cleveragents.iteration": event.iteration,
            }
            if self.capture:
                attributes["gen_ai.tool.call.arguments"] = _json(event.inputs)
            self.tools[event.call_id] = self.tracer.start_span(
                f"execute_tool {event.tool_name}", context=inside, attributes=attributes
            )
        elif isinstance(event, ToolCallFinished):
            record = event.record
            tool = self.tools.pop(record.call_id, None)
            if tool is None:  # a call refused before it started (unknown tool, bad JSON)
                tool = self.tracer.start_span(
                    f"execute_tool {record.tool_name}",
                    context=inside,
                    attributes={
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": record.tool_name,
                        "gen_ai.tool.call.id": record.call_id,
                    },
                )
            if self.capture:
                tool.set_attribute("gen_ai.tool.call.result", _json(record.output))
            if not record.success:
                tool.set_attribute("error.type", record.error_kind or "tool_error")
                tool.set_status(trace.Status(trace.StatusCode.ERROR, record.error or ""))
            tool.end()
        elif isinstance(event, RunFinished):
            result = event.result
            usage = result.usage
            self.run.set_attributes(
                {
                    "gen_ai.usage.input_tokens": usage.input_tokens,
                    "gen_ai.usage.output_tokens": usage.output_tokens,
                    "gen_ai.usage.cache_read.input_tokens": usage.cache_read_tokens,
                    "gen_ai.usage.cache_creation.input_tokens": usage.cache_write_tokens,
                    "cleveragents.stop_reason": result.stop_reason,
                    "cleveragents.iterations": result.iterations,
                    "cleveragents.tool_calls": len(result.tool_call_history),
                }
            )
            if result.cost_usd is not None:
                self.run.set_attribute("cleveragents.cost_usd", result.cost_usd)
            self._end_run()
        elif isinstance(event, RunFailed):
            self.run.set_attribute("error.type", event.error_type)
            self.run.set_status(trace.Status(trace.StatusCode.ERROR, event.error))
            self._end_run()

    def _end_model_call(self) -> None:
        if self.model_call is not None:
            self.model_call.end()
            self.model_call = None

    def _end_run(self) -> None:
        self._end_model_call()
        for tool in self.tools.values():
            tool.end()
        self.tools.clear()
        self.run.end()
        self.run = None


def _json(value: Any) -> str:
    try:
        return json.dumps(value, default=str)
    except (TypeError, ValueError):
        return str(value)
