"""The daemon's run methods: wire params to the core's runs, and runs' events to the wire.

Nothing here knows pygls: the server hands each run a `RunClient` (notify, request), so
tests can drive runs with a client of their own. The run logic is the core's
(`service/runs.py`); these functions translate.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol

from ..jsonrpc_errors import wire_field, wire_named
from ..protocol import wire
from ..protocol.converter import structure, unstructure
from ..protocol.translate import (
    profile,
    restore_result,
    run_detail,
    run_request,
    run_result,
    run_summary,
    tool_info,
    wire_image,
    wire_instructions,
    wire_plan,
    wire_record,
    wire_trusted_server,
    wire_usage,
)
from ..service.client_tools import ClientTool, ClientToolAnswer, ClientToolCall, MalformedAnswer
from ..service.errors import ParamsError, ServiceError
from ..service.runs import RunManager, RunPlan
from ..service.settings import ClientOptions, history_argument, settings_report
from ..tool.events import (
    IterationStarted,
    PlanUpdated,
    ResponseReceived,
    RunEvent,
    RunFailed,
    RunFinished,
    RunObserver,
    RunStarted,
    SnapshotProgress,
    SnapshotTaken,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from ..tool.policy import ApprovalDecision, ApprovalRequest
from ..tool.records import Usage
from .encoded import EncodedResult

if TYPE_CHECKING:  # Only named here: the trust code loads when a run first needs it.
    from ..service.trust import TrustRequest

log = logging.getLogger(__name__)

APPROVE_METHOD = "cleveragents/approveToolCall"
CALL_CLIENT_TOOL_METHOD = "cleveragents/callClientTool"
TRUST_METHOD = "cleveragents/trustWorkspace"


class RunClient(Protocol):
    """The connection a run talks to."""

    @property
    def approvals(self) -> bool:
        """Whether the client answers `cleveragents/approveToolCall`."""
        ...

    @property
    def trust(self) -> bool:
        """Whether the client answers `cleveragents/trustWorkspace`."""
        ...

    @property
    def client_tools(self) -> tuple[ClientTool, ...]:
        """The tools the client serves (`cleveragents/callClientTool`)."""
        ...

    def notify(self, method: str, params: Any) -> None: ...

    async def request(self, method: str, params: Any) -> Any:
        """Send a request and wait for its result; ClientRequestError on an error answer.

        Cancelling the awaiting task withdraws the request (`$/cancelRequest`).
        """
        ...


# -- the methods -----------------------------------------------------------------------------


@contextmanager
def _wire_names(name: Callable[[str], str] = wire_field) -> Iterator[None]:
    """The core's errors with the wire's names (`params.sandboxRoot`, `runId`)."""
    try:
        yield
    except ServiceError as exc:
        raise wire_named(exc, name) from exc


def _run_field(path: str) -> str:
    """A run's field as `cleveragents/settings` names it: its params sit under `params.run`."""
    field = wire_field(path)  # `params.maxIterations`, or `params` alone
    return "params.run" + field.removeprefix("params")


async def run(manager: RunManager, params: wire.RunParams, client: RunClient) -> wire.RunResult:
    """`cleveragents/run`: the run to its end, notifications streaming to `client`."""
    with _wire_names():
        result = await manager.run(run_request(params), ClientSink(client))
    return run_result(result, params.continue_from)


def plan(manager: RunManager, params: wire.RunParams) -> RunPlan:
    """Check a run's params without starting it; ServiceError names every bad value."""
    with _wire_names():
        return manager.plan(run_request(params))


def settings(
    manager: RunManager,
    params: wire.SettingsParams,
    options: ClientOptions,
    env: Mapping[str, str],
) -> wire.SettingsResult:
    """`cleveragents/settings`: the session's settings (its `options` over `env`), and with
    `run` those of a run with those params (checked by the core as a run is, not started)."""
    request = None
    if params.run is not None:
        request = run_request(params.run)
        with _wire_names(_run_field):
            manager.plan(request)
    history = manager.history
    report = settings_report(
        options,
        env,
        history=history_argument(history.path if history else None, env),
        history_level="--history",
        options_level="initializationOptions",
        run=request,
        run_level="params",
    )
    return wire.SettingsResult(
        settings=[
            wire.ResolvedSetting(
                name=row.name, variable=row.env, value=row.value, source=row.source
            )
            for row in report
        ]
    )


def cancel(manager: RunManager, params: wire.CancelParams) -> wire.CancelResult:
    return wire.CancelResult(cancelled=manager.cancel(params.run_id))


async def tools(
    manager: RunManager, params: wire.ToolsParams, client: RunClient
) -> wire.ToolsResult:
    with _wire_names():
        sink = ClientSink(client)
        specs = await manager.tools(params.sandbox_root, sink.ask_trust, sink)
    return wire.ToolsResult(tools=[tool_info(spec) for spec in specs])


async def list_commands(
    manager: RunManager, params: wire.ListCommandsParams
) -> wire.ListCommandsResult:
    with _wire_names():
        commands = await manager.prompt_commands(params.sandbox_root)
    return wire.ListCommandsResult(
        commands=[
            wire.PromptCommandInfo(
                name=command.name,
                description=command.description,
                argument_hint=command.argument_hint,
                source="user" if command.source == "user" else "workspace",
            )
            for command in commands
        ]
    )


def check_list_runs(manager: RunManager, params: wire.RunsParams) -> None:
    """Check `cleveragents/runs` params without reading the history; ServiceError if bad."""
    with _wire_names():
        manager.check_list_params(params.limit, params.offset)


async def list_runs(manager: RunManager, params: wire.RunsParams) -> wire.RunsResult:
    with _wire_names():
        summaries = await manager.list_runs(params.limit, params.offset, batch_id=params.batch_id)
    return wire.RunsResult(runs=[run_summary(s) for s in summaries])


async def get_run(manager: RunManager, params: wire.GetRunParams) -> EncodedResult:
    """`cleveragents/getRun`: read, translated and encoded on worker threads (a run can hold
    thousands of records; the event loop keeps answering meanwhile)."""
    with _wire_names():
        stored = await manager.get_run(params.run_id)
    return await manager.in_thread(lambda: EncodedResult.of(unstructure(run_detail(stored))))


async def restore(manager: RunManager, params: wire.RestoreParams) -> wire.RestoreResult:
    with _wire_names():
        outcome = await manager.restore(params.run_id, params.iteration, dry_run=params.dry_run)
    return restore_result(outcome)


# -- one run's sink --------------------------------------------------------------------------


class ClientSink:
    """A run's events as notifications to the client; its approvals, and calls of the tools
    the client serves, as requests to it."""

    def __init__(self, client: RunClient) -> None:
        self.client = client

    @property
    def approvals(self) -> bool:
        return self.client.approvals

    @property
    def client_tools(self) -> tuple[ClientTool, ...]:
        return self.client.client_tools

    async def call_client_tool(self, call: ClientToolCall) -> ClientToolAnswer:
        """`cleveragents/callClientTool`; MalformedAnswer for a result of another shape."""
        params = wire.CallClientToolParams(
            run_id=call.run_id,
            call_id=call.call_id,
            name=call.tool_name,
            arguments=call.arguments,
            iteration=call.iteration,
        )
        answer = await self.client.request(CALL_CLIENT_TOOL_METHOD, unstructure(params))
        try:
            result = structure(answer, wire.CallClientToolResult, where="result")
        except ParamsError as exc:
            raise MalformedAnswer("; ".join(exc.problems)) from None
        text = "\n".join(piece.text for piece in result.content)
        return ClientToolAnswer(text=text, is_error=result.is_error is True)

    def run_observer(self, plan: RunPlan) -> RunObserver:
        return RunStream(self.client, plan)

    async def ask_approval(self, request: ApprovalRequest) -> ApprovalDecision:
        """Ask the client; a malformed answer is a denial."""
        params = wire.ApproveToolCallParams(
            run_id=request.run_id,
            call_id=request.call_id,
            tool_name=request.tool_name,
            inputs=request.inputs,
            mutating=request.mutating,
            executes_code=request.executes_code,
            automation_profile=profile(request.automation_profile),
            iteration=request.iteration,
            note=request.note,
            protected=request.protected,
        )
        answer = await self.client.request(APPROVE_METHOD, unstructure(params))
        try:
            decision = structure(answer, wire.ApproveToolCallResult, where="result")
        except ParamsError as exc:
            log.warning("malformed approval answer (%s): denied", exc)
            return "deny"
        return decision.decision

    async def ask_trust(self, request: TrustRequest) -> bool | None:
        """Ask a client that declared `trust`; None for one that did not. A malformed answer
        is not trusted (and not remembered)."""
        if not self.client.trust:
            return None
        params = wire.TrustWorkspaceParams(
            sandbox_root=request.sandbox_root,
            config_path=request.config_path,
            config_hash=request.config_hash,
            servers=[wire_trusted_server(server) for server in request.servers],
        )
        answer = await self.client.request(TRUST_METHOD, unstructure(params))
        try:
            result = structure(answer, wire.TrustWorkspaceResult, where="result")
        except ParamsError as exc:
            log.warning("malformed trustWorkspace answer (%s): not trusted", exc)
            return None
        return result.trusted


class RunStream:
    """One run's events as notifications, numbered 1, 2, 3... (`seq`), plus `$/progress`."""

    def __init__(self, client: RunClient, plan: RunPlan) -> None:
        self.client = client
        self.plan = plan
        self.seq = 0
        self.iterations = 0
        self.tool_calls = 0
        # The run's tokens and cost so far (None once a call's price is unknown).
        # The run's totals as the runtime last counted them (zero before its first call).
        self.usage = Usage()
        self.cost_usd: float | None = 0.0

    def _send(self, method: str, params: Any) -> None:
        self.client.notify(method, unstructure(params))

    def _next(self) -> int:
        self.seq += 1
        return self.seq

    def __call__(self, event: RunEvent) -> None:
        run_id = self.plan.run_id
        if isinstance(event, TextDelta):  # first: a run sends far more of these than the rest
            self._send(
                "cleveragents/textDelta",
                wire.TextDeltaParams(
                    run_id=run_id, seq=self._next(), iteration=event.iteration, text=event.text
                ),
            )
        elif isinstance(event, RunStarted):
            self._send(
                "cleveragents/runStarted",
                wire.RunStartedParams(
                    run_id=run_id,
                    seq=self._next(),
                    prompt=event.prompt,
                    sandbox_root=event.sandbox_root or self.plan.sandbox_root,
                    automation_profile=profile(event.automation_profile),
                    max_iterations=event.max_iterations,
                    provider=self.plan.provider,
                    model=self.plan.model,
                    continued_from=self.plan.continue_from,
                    instructions=wire_instructions(event.instructions),
                    images=[wire_image(image) for image in event.images],
                ),
            )
            self._progress(
                {
                    "kind": "begin",
                    "title": "cleveragents",
                    "cancellable": True,
                    "message": _shorten(event.prompt),
                }
            )
        elif isinstance(event, IterationStarted):
            self.iterations = event.iteration
            self._send(
                "cleveragents/iterationStarted",
                wire.IterationStartedParams(
                    run_id=run_id, seq=self._next(), iteration=event.iteration
                ),
            )
            self._progress({"kind": "report", "message": f"step {event.iteration}"})
        elif isinstance(event, ResponseReceived):
            self.usage, self.cost_usd = event.total_usage, event.total_cost_usd
            self._send(
                "cleveragents/usage",
                wire.UsageParams(
                    run_id=run_id,
                    seq=self._next(),
                    iteration=event.iteration,
                    usage=wire_usage(event.usage, event.cost_usd),
                    total=wire_usage(self.usage, self.cost_usd),
                ),
            )
        elif isinstance(event, ToolCallStarted):
            self._send(
                "cleveragents/toolCallStarted",
                wire.ToolCallStartedParams(
                    run_id=run_id,
                    seq=self._next(),
                    iteration=event.iteration,
                    call_id=event.call_id,
                    tool_name=event.tool_name,
                    inputs=event.inputs,
                ),
            )
            self._progress(
                {"kind": "report", "message": f"step {event.iteration}: {event.tool_name}"}
            )
        elif isinstance(event, SnapshotProgress):
            self._send(
                "cleveragents/snapshotProgress",
                wire.SnapshotProgressParams(
                    run_id=run_id,
                    seq=self._next(),
                    iteration=event.iteration,
                    elapsed_ms=event.elapsed_ms,
                ),
            )
            self._progress(
                {
                    "kind": "report",
                    "message": f"step {event.iteration}: saving a checkpoint "
                    f"({event.elapsed_ms / 1000:.0f} s)",
                }
            )
        elif isinstance(event, SnapshotTaken):
            self._send(
                "cleveragents/snapshot",
                wire.SnapshotParams(
                    run_id=run_id,
                    seq=self._next(),
                    iteration=event.iteration,
                    duration_ms=event.duration_ms,
                    files=event.files,
                    error=event.error,
                ),
            )
        elif isinstance(event, ToolCallFinished):
            self.tool_calls += 1
            self._send(
                "cleveragents/toolCall",
                wire.ToolCallParams(
                    run_id=run_id, seq=self._next(), record=wire_record(event.record)
                ),
            )
        elif isinstance(event, PlanUpdated):
            self._send(
                "cleveragents/plan",
                wire.PlanParams(
                    run_id=run_id,
                    seq=self._next(),
                    iteration=event.iteration,
                    call_id=event.call_id,
                    steps=wire_plan(event.steps) or [],
                    explanation=event.explanation,
                ),
            )
        elif isinstance(event, RunFinished):
            result = event.result
            self._send(
                "cleveragents/runFinished",
                wire.RunFinishedParams(
                    run_id=run_id,
                    seq=self._next(),
                    stop_reason=result.stop_reason,
                    content=result.content,
                    iterations=result.iterations,
                    terminated_by_limit=result.terminated_by_limit,
                    usage=wire_usage(result.usage, result.cost_usd),
                    tool_calls=len(result.tool_call_history),
                    error=None,
                    error_type=None,
                ),
            )
            self._progress({"kind": "end", "message": result.stop_reason.replace("_", " ")})
        elif isinstance(event, RunFailed):
            self._send(
                "cleveragents/runFinished",
                wire.RunFinishedParams(
                    run_id=run_id,
                    seq=self._next(),
                    stop_reason="error",
                    content="",
                    iterations=self.iterations,
                    terminated_by_limit=False,
                    usage=wire_usage(self.usage, self.cost_usd),
                    tool_calls=self.tool_calls,
                    error=event.error,
                    error_type=event.error_type,
                ),
            )
            self._progress({"kind": "end", "message": f"failed: {_shorten(event.error)}"})

    def _progress(self, value: dict[str, Any]) -> None:
        token = self.plan.progress_token
        if token is not None:
            self.client.notify("$/progress", {"token": token, "value": value})


def _shorten(text: str, limit: int = 80) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
