"""Run management: start, stream, approve, cancel and read back runs.

Nothing here knows pygls: the server hands each run a `RunClient` (notify, request), so
tests can drive runs with a client of their own.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, Protocol, cast
from urllib.parse import unquote, urlparse

from ..assembly import build_runtime
from ..mcp import McpError, McpToolset, McpToolsetPool, registry_with_mcp_tools
from ..providers import PROVIDERS, ProviderConfigError, create_llm_caller
from ..service.history import RunHistory, StoredRun
from ..service.threads import DaemonThreadPool
from ..tool.context import ToolActorContext
from ..tool.events import (
    IterationStarted,
    RunEvent,
    RunFailed,
    RunFinished,
    RunObserver,
    RunStarted,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from ..tool.llm import LLMCaller
from ..tool.messages import AssistantMessage, Message, UserMessage
from ..tool.policy import ApprovalDecision, ApprovalRequest, Approver
from ..tool.records import ToolCallRecord, ToolCallRunResult
from ..tool.registry import ToolRegistry
from ..tool.runner import ToolRunner
from ..tool.runtime import CancelToken, new_run_id
from . import wire
from .config import RunDefaults, check_max_iterations
from .converter import ParamsError, structure, unstructure

log = logging.getLogger(__name__)

_RUN_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")
APPROVE_METHOD = "cleveragents/approveToolCall"

LLMFactory = Callable[..., LLMCaller]


class DaemonError(Exception):
    """A request that cannot be served; becomes a JSON-RPC error response."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


def invalid_params(problems: list[str]) -> DaemonError:
    return DaemonError(
        wire.INVALID_PARAMS, "invalid params: " + "; ".join(problems), {"problems": problems}
    )


class ClientRequestError(Exception):
    """The client answered a server-to-client request with an error."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"{message} ({code})")
        self.code = code


class RunClient(Protocol):
    """The connection a run talks to."""

    @property
    def approvals(self) -> bool:
        """Whether the client answers `cleveragents/approveToolCall`."""
        ...

    def notify(self, method: str, params: Any) -> None: ...

    async def request(self, method: str, params: Any) -> Any:
        """Send a request and wait for its result; ClientRequestError on an error answer.

        Cancelling the awaiting task withdraws the request (`$/cancelRequest`).
        """
        ...


@dataclass(slots=True)
class ActiveRun:
    run_id: str
    cancel: CancelToken
    work_done_token: wire.ProgressToken | None


@dataclass(frozen=True, slots=True)
class RunPlan:
    """A validated run request with every setting resolved."""

    run_id: str
    prompt: str
    sandbox_root: str
    provider: str
    model: str | None
    automation_profile: str
    max_iterations: int
    system_prompt: str | None
    continue_from: str | None
    tools: tuple[str, ...] | None
    provider_options: dict[str, Any]
    work_done_token: wire.ProgressToken | None


class RunManager:
    """Every run of one daemon: starts them, tracks the live ones, reads the history."""

    def __init__(
        self,
        registry: ToolRegistry,
        defaults: RunDefaults,
        history: RunHistory | None,
        *,
        llm_factory: LLMFactory = create_llm_caller,
        max_tool_workers: int = 32,
    ) -> None:
        self.registry = registry
        self.defaults = defaults
        self.history = history
        self.llm_factory = llm_factory
        # One pool for every run's sync tools: never the event loop's default executor.
        self._executor = DaemonThreadPool(max_tool_workers, "cleveragents-tool")
        self._runner = ToolRunner(registry, executor=self._executor)
        # MCP servers per sandbox root, shared by that root's runs, stopped by `aclose`.
        self.mcp = McpToolsetPool()
        self._active: dict[str, ActiveRun] = {}
        self._idle = asyncio.Event()
        self._idle.set()

    # -- starting a run ----------------------------------------------------------------------
    def plan(self, params: wire.RunParams) -> RunPlan:
        """Validate and resolve a run request; DaemonError when it cannot run."""
        problems: list[str] = []
        defaults = self.defaults
        if not params.prompt.strip():
            problems.append("params.prompt: must not be empty")
        sandbox_root, problem = _sandbox_root(params.sandbox_root)
        if problem:
            problems.append(f"params.sandboxRoot: {problem}")
        provider = params.provider if params.provider is not None else defaults.provider
        if provider not in PROVIDERS:
            problems.append(
                f"params.provider: unknown provider {provider!r}; choose one of "
                f"{', '.join(PROVIDERS)}"
            )
        max_iterations = (
            params.max_iterations if params.max_iterations is not None else defaults.max_iterations
        )
        problem = check_max_iterations(max_iterations)
        if problem:
            problems.append(f"params.maxIterations: {problem}")
        if params.max_tokens is not None and params.max_tokens < 1:
            problems.append("params.maxTokens: must be at least 1")
        if params.run_id is not None and not _RUN_ID.match(params.run_id):
            problems.append("params.runId: use 1 to 64 letters, digits, '_', '-', '.' or ':'")
        if params.tools is not None:
            for index, name in enumerate(params.tools):
                # `server__tool` names are MCP tools: checked once the servers are up.
                if name not in self.registry and "__" not in name:
                    problems.append(
                        f"params.tools[{index}]: unknown tool {name!r}; available: "
                        f"{', '.join(self.registry.names()) or 'none'}"
                    )
        if problems:
            raise invalid_params(problems)
        run_id = params.run_id or new_run_id()
        if run_id in self._active or (
            self.history is not None and self.history.get_run(run_id) is not None
        ):
            raise DaemonError(
                wire.RUN_ID_IN_USE, f"run id {run_id!r} is already taken", {"runId": run_id}
            )
        if params.continue_from is not None:
            self._check_continuable(params.continue_from)
        options: dict[str, Any] = {
            "base_url": params.base_url if params.base_url is not None else defaults.base_url,
            "script": (
                params.replay_script if params.replay_script is not None else defaults.replay_script
            ),
            "max_tokens": params.max_tokens
            if params.max_tokens is not None
            else defaults.max_tokens,
        }
        return RunPlan(
            run_id=run_id,
            prompt=params.prompt,
            sandbox_root=sandbox_root,
            provider=provider,
            model=params.model if params.model is not None else defaults.model,
            automation_profile=params.automation_profile or defaults.automation_profile,
            max_iterations=max_iterations,
            system_prompt=(
                params.system_prompt if params.system_prompt is not None else defaults.system_prompt
            ),
            continue_from=params.continue_from,
            tools=tuple(params.tools) if params.tools is not None else None,
            provider_options={k: v for k, v in options.items() if v is not None},
            work_done_token=params.work_done_token,
        )

    def _check_continuable(self, run_id: str) -> None:
        if run_id in self._active:
            raise DaemonError(
                wire.RUN_STILL_RUNNING, f"run {run_id!r} is still running", {"runId": run_id}
            )
        stored = self.history.get_run(run_id) if self.history is not None else None
        if stored is None:
            raise DaemonError(
                wire.RUN_NOT_FOUND, f"no run {run_id!r} in the history", {"runId": run_id}
            )
        if stored.status == "running":
            raise DaemonError(
                wire.RUN_STILL_RUNNING,
                f"run {run_id!r} is still running (in another daemon)",
                {"runId": run_id},
            )

    async def run(self, params: wire.RunParams, client: RunClient) -> wire.RunResult:
        """Run to the end, streaming notifications to `client`; the result, or DaemonError.

        Cancelling the awaiting task cancels the run (its calls are recorded as cancelled,
        `runFinished` is sent) and re-raises CancelledError.
        """
        plan = self.plan(params)
        llm = self._llm_caller(plan)
        conversation: list[Message] = []
        if plan.continue_from is not None:
            assert self.history is not None  # _check_continuable found the run there
            try:
                conversation = self.history.conversation(plan.continue_from)
                self.history.mark_continuation(plan.run_id, plan.continue_from)
            except KeyError:
                raise DaemonError(
                    wire.RUN_NOT_FOUND,
                    f"no run {plan.continue_from!r} in the history",
                    {"runId": plan.continue_from},
                ) from None
        context = ToolActorContext(
            sandbox_root=plan.sandbox_root, automation_profile=plan.automation_profile
        )
        stream = RunStream(client, plan)
        observers: list[RunObserver] = [stream]
        if self.history is not None:
            # The history first: a record the client has seen is already stored.
            observers.insert(0, self.history)
        approver = (
            make_approver(client, self.defaults.approval_timeout_s) if client.approvals else None
        )
        active = ActiveRun(plan.run_id, CancelToken(), plan.work_done_token)
        self._active[plan.run_id] = active
        self._idle.clear()
        try:
            async with self._mcp_for(plan) as mcp_tools:
                registry, runner = self._tools_for(plan.tools, mcp_tools)
                runtime = build_runtime(
                    llm,
                    registry,
                    max_iterations=plan.max_iterations,
                    system_prompt=plan.system_prompt,
                    runner=runner,
                )
                result = await runtime.arun_tool_loop(
                    plan.prompt,
                    context,
                    history=conversation,
                    observers=observers,
                    approver=approver,
                    cancel=active.cancel,
                    run_id=plan.run_id,
                )
        except asyncio.CancelledError:
            raise
        except McpError as exc:
            raise DaemonError(
                wire.TOOLS_UNAVAILABLE, str(exc), {"sandboxRoot": plan.sandbox_root}
            ) from exc
        except DaemonError:  # bad params found once the MCP tools are known: -32602 as is
            raise
        except Exception as exc:
            log.warning("run %s failed: %s: %s", plan.run_id, type(exc).__name__, exc)
            raise DaemonError(
                wire.RUN_FAILED,
                f"the run failed: {type(exc).__name__}: {exc}",
                {"runId": plan.run_id, "errorType": type(exc).__name__},
            ) from exc
        finally:
            del self._active[plan.run_id]
            if not self._active:
                self._idle.set()
        return run_result(result, plan.continue_from)

    def _llm_caller(self, plan: RunPlan) -> LLMCaller:
        try:
            return self.llm_factory(plan.provider, plan.model, **plan.provider_options)
        except (ProviderConfigError, ValueError, RuntimeError, ImportError, OSError) as exc:
            raise DaemonError(
                wire.PROVIDER_UNAVAILABLE,
                f"provider {plan.provider!r} is unavailable: {exc}",
                {"provider": plan.provider},
            ) from exc

    def _mcp_for(self, plan: RunPlan) -> AbstractAsyncContextManager[McpToolset]:
        # Starting a `.mcp.json` server runs a program the workspace names: never under
        # read-only, which promises nothing runs that could change anything.
        if plan.automation_profile == "read-only":
            return nullcontext(McpToolset(plan.sandbox_root))
        return self.mcp.lease(plan.sandbox_root)

    def _tools_for(
        self, names: Sequence[str] | None, mcp_tools: McpToolset
    ) -> tuple[ToolRegistry, ToolRunner]:
        """The run's registry: the daemon's tools plus its sandbox's MCP tools, or a subset."""
        if names is None and not mcp_tools.specs:
            return self.registry, self._runner
        available = registry_with_mcp_tools(self.registry, mcp_tools)
        if names is None:
            return available, ToolRunner(available, executor=self._executor)
        unknown = [
            f"params.tools[{i}]: unknown tool {n!r}; available: {', '.join(available.names())}"
            for i, n in enumerate(names)
            if n not in available
        ]
        if unknown:
            raise invalid_params(unknown)
        subset = ToolRegistry()
        for name in dict.fromkeys(names):
            subset.add_spec(available.get(name))  # type: ignore[arg-type]
        return subset, ToolRunner(subset, executor=self._executor)

    # -- live runs ---------------------------------------------------------------------------
    def cancel(self, run_id: str) -> bool:
        """Ask a live run to stop; False when no such run is going."""
        active = self._active.get(run_id)
        if active is None:
            return False
        active.cancel.cancel()
        return True

    def cancel_by_token(self, token: wire.ProgressToken) -> bool:
        """`window/workDoneProgress/cancel` for a run's work-done token."""
        matches = [a for a in self._active.values() if a.work_done_token == token]
        for active in matches:
            active.cancel.cancel()
        return bool(matches)

    def cancel_all(self) -> None:
        for active in list(self._active.values()):
            active.cancel.cancel()

    @property
    def active_run_ids(self) -> list[str]:
        return list(self._active)

    async def wait_idle(self, timeout: float) -> bool:
        """Wait until no run is live; False on timeout."""
        try:
            await asyncio.wait_for(self._idle.wait(), timeout)
        except TimeoutError:
            return False
        return True

    async def aclose(self) -> None:
        """Stop the MCP servers, then the tool threads."""
        await self.mcp.close()
        self._executor.shutdown(wait=False, cancel_futures=True)

    # -- reading -----------------------------------------------------------------------------
    async def tools(self, sandbox_root: str | None = None) -> wire.ToolsResult:
        registry = self.registry
        if sandbox_root is not None:
            root, problem = _sandbox_root(sandbox_root)
            if problem:
                raise invalid_params([f"params.sandboxRoot: {problem}"])
            try:
                async with self.mcp.lease(root) as mcp_tools:
                    registry = registry_with_mcp_tools(self.registry, mcp_tools)
            except McpError as exc:
                raise DaemonError(wire.TOOLS_UNAVAILABLE, str(exc), {"sandboxRoot": root}) from exc
        return wire.ToolsResult(
            tools=[
                wire.ToolInfo(
                    name=spec.name,
                    description=spec.description,
                    input_schema=spec.input_schema,
                    mutating=spec.mutating,
                    executes_code=spec.executes_code,
                    source=spec.source,
                )
                for spec in registry.specs()
            ]
        )

    def list_runs(self, params: wire.RunsParams) -> wire.RunsResult:
        problems = []
        if not 1 <= params.limit <= 1000:
            problems.append(f"params.limit: must be between 1 and 1000, got {params.limit}")
        if params.offset < 0:
            problems.append(f"params.offset: must not be negative, got {params.offset}")
        if problems:
            raise invalid_params(problems)
        if self.history is None:
            return wire.RunsResult(runs=[])
        return wire.RunsResult(
            runs=[
                wire.RunSummary(**_summary_fields(s))
                for s in self.history.list_runs(params.limit, params.offset)
            ]
        )

    def get_run(self, params: wire.GetRunParams) -> wire.RunDetail:
        stored = self.history.get_run(params.run_id) if self.history is not None else None
        if stored is None:
            raise DaemonError(
                wire.RUN_NOT_FOUND,
                f"no run {params.run_id!r} in the history",
                {"runId": params.run_id},
            )
        return run_detail(stored)


# -- streaming -------------------------------------------------------------------------------


class RunStream:
    """One run's events as notifications, numbered 1, 2, 3... (`seq`), plus `$/progress`."""

    def __init__(self, client: RunClient, plan: RunPlan) -> None:
        self.client = client
        self.plan = plan
        self.seq = 0
        self.iterations = 0
        self.tool_calls = 0

    def _send(self, method: str, params: Any) -> None:
        self.client.notify(method, unstructure(params))

    def _next(self) -> int:
        self.seq += 1
        return self.seq

    def __call__(self, event: RunEvent) -> None:
        run_id = self.plan.run_id
        if isinstance(event, RunStarted):
            self._send(
                "cleveragents/runStarted",
                wire.RunStartedParams(
                    run_id=run_id,
                    seq=self._next(),
                    prompt=event.prompt,
                    sandbox_root=event.sandbox_root or self.plan.sandbox_root,
                    automation_profile=_profile(event.automation_profile),
                    max_iterations=event.max_iterations,
                    provider=self.plan.provider,
                    model=self.plan.model,
                    continued_from=self.plan.continue_from,
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
        elif isinstance(event, TextDelta):
            self._send(
                "cleveragents/textDelta",
                wire.TextDeltaParams(
                    run_id=run_id, seq=self._next(), iteration=event.iteration, text=event.text
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
        elif isinstance(event, ToolCallFinished):
            self.tool_calls += 1
            self._send(
                "cleveragents/toolCall",
                wire.ToolCallParams(
                    run_id=run_id, seq=self._next(), record=wire_record(event.record)
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
                    usage=_usage(result),
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
                    usage=wire.Usage(input_tokens=0, output_tokens=0),
                    tool_calls=self.tool_calls,
                    error=event.error,
                    error_type=event.error_type,
                ),
            )
            self._progress({"kind": "end", "message": f"failed: {_shorten(event.error)}"})

    def _progress(self, value: dict[str, Any]) -> None:
        token = self.plan.work_done_token
        if token is not None:
            self.client.notify("$/progress", {"token": token, "value": value})


def make_approver(client: RunClient, timeout_s: float) -> Approver:
    """Ask the client; a timeout, an error answer or a malformed one is a denial."""

    async def approve(request: ApprovalRequest) -> ApprovalDecision:
        params = wire.ApproveToolCallParams(
            run_id=request.run_id,
            call_id=request.call_id,
            tool_name=request.tool_name,
            inputs=request.inputs,
            mutating=request.mutating,
            executes_code=request.executes_code,
            automation_profile=_profile(request.automation_profile),
            iteration=request.iteration,
        )
        try:
            answer = await asyncio.wait_for(
                client.request(APPROVE_METHOD, unstructure(params)), timeout_s
            )
        except TimeoutError:
            log.warning("no approval for %s within %g s: denied", request.tool_name, timeout_s)
            return "deny"
        except ClientRequestError as exc:
            log.warning("approval request for %s failed: %s; denied", request.tool_name, exc)
            return "deny"
        try:
            decision = structure(answer, wire.ApproveToolCallResult, where="result")
        except ParamsError as exc:
            log.warning("malformed approval answer (%s): denied", exc)
            return "deny"
        return decision.decision

    return approve


# -- conversions -----------------------------------------------------------------------------


def wire_record(record: ToolCallRecord) -> wire.ToolCallRecord:
    return wire.ToolCallRecord(
        call_id=record.call_id,
        tool_name=record.tool_name,
        inputs=record.inputs,
        output=record.output,
        duration_ms=record.duration_ms,
        success=record.success,
        error=record.error,
        error_kind=record.error_kind,
        iteration=record.iteration,
    )


def _usage(result: ToolCallRunResult) -> wire.Usage:
    return wire.Usage(
        input_tokens=result.usage.input_tokens, output_tokens=result.usage.output_tokens
    )


def run_result(result: ToolCallRunResult, continued_from: str | None) -> wire.RunResult:
    return wire.RunResult(
        run_id=result.run_id,
        content=result.content,
        stop_reason=result.stop_reason,
        iterations=result.iterations,
        terminated_by_limit=result.terminated_by_limit,
        usage=_usage(result),
        tool_call_history=[wire_record(r) for r in result.tool_call_history],
        continued_from=continued_from,
    )


def _summary_fields(summary: Any) -> dict[str, Any]:
    return {
        "run_id": summary.run_id,
        "prompt": summary.prompt,
        "status": summary.status,
        "started_at": summary.started_at,
        "finished_at": summary.finished_at,
        "iterations": summary.iterations,
        "tool_call_count": summary.tool_call_count,
        "sandbox_root": summary.sandbox_root,
        "automation_profile": summary.automation_profile,
        "continued_from": summary.continued_from,
    }


def run_detail(stored: StoredRun) -> wire.RunDetail:
    return wire.RunDetail(
        **_summary_fields(stored),
        max_iterations=stored.max_iterations,
        content=stored.content,
        stop_reason=stored.stop_reason,
        error=stored.error,
        error_type=stored.error_type,
        usage=wire.Usage(
            input_tokens=stored.usage.input_tokens, output_tokens=stored.usage.output_tokens
        ),
        tool_call_history=[wire_record(r) for r in stored.records],
        messages=[wire_message(m) for m in stored.messages],
    )


def wire_message(message: Message) -> wire.ConversationMessage:
    if isinstance(message, UserMessage):
        return wire.ConversationMessage(
            role="user", text=message.text, tool_calls=None, results=None
        )
    if isinstance(message, AssistantMessage):
        return wire.ConversationMessage(
            role="assistant",
            text=message.text,
            tool_calls=[
                wire.RequestedToolCall(
                    call_id=c.call_id,
                    tool_name=c.tool_name,
                    arguments=c.arguments,
                    parse_error=c.parse_error,
                )
                for c in message.tool_calls
            ],
            results=None,
        )
    return wire.ConversationMessage(
        role="tool",
        text=None,
        tool_calls=None,
        results=[
            wire.ToolResultContent(
                call_id=r.call_id, tool_name=r.tool_name, content=r.content, is_error=r.is_error
            )
            for r in message.results
        ],
    )


def _profile(value: str) -> wire.AutomationProfile:
    # The runtime checked the name against AUTOMATION_PROFILES before the run began.
    return cast(wire.AutomationProfile, value)


def _shorten(text: str, limit: int = 80) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _sandbox_root(value: str) -> tuple[str, str | None]:
    """The sandbox root as a real absolute path, or a problem with it."""
    path = value
    if value.startswith("file:"):
        parsed = urlparse(value)
        if parsed.netloc not in ("", "localhost"):
            return value, f"a file URI on another host is not a local folder: {value!r}"
        path = unquote(parsed.path)
        if os.name == "nt" and re.match(r"^/[A-Za-z]:", path):
            path = path[1:]
    if not path or not os.path.isabs(path):
        return value, f"must be an absolute path, got {value!r}"
    if "\0" in path:
        return value, "must not contain a NUL character"
    resolved = os.path.realpath(path)
    if not os.path.isdir(resolved):
        return value, f"no such folder: {value!r}"
    return resolved, None
