"""Runs: start, stream, approve, cancel and read back runs, for every front.

`RunManager.run` is the only way a run starts, whichever front asks: the daemon, ACP mode
and the CLI each hand it a `RunRequest` and a `RunSink` (where the run's events go, how the
user is asked about approvals and workspace trust, and, optionally, the front's own tools)
and translate the plain outcome back. The manager validates, resolves settings, checks the
continuation rules, holds the active-run registry (cancel, and restores that must not race a
run), trust, checkpoints and the history. Nothing here knows a wire: problems name the core's
fields (`sandbox_root`) and errors carry a kind (`errors.py`); each front renders its own.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable
from urllib.parse import unquote, urlparse

from ..providers import ProviderConfigError, create_llm_caller, no_vision
from ..settings_table import Level, rows_for
from ..tool.cancel import CancelToken, unless_cancelled
from ..tool.context import ToolActorContext
from ..tool.events import RunObserver
from ..tool.images import ImageAttachment, supports_vision
from ..tool.llm import LLMCaller
from ..tool.messages import Message, UserMessage
from ..tool.policy import ApprovalDecision, ApprovalRequest, Approver
from ..tool.records import ToolCallRunResult
from ..tool.registry import ToolRegistry, ToolSpec
from ..toolsets import with_command_policy
from ..workspace.command_policy import CommandPolicy
from ..workspace.prompt_commands import PromptCommand, expand_prompt_command, load_prompt_commands
from ..workspace.sandbox import refused_root
from .changes import ChangedFile
from .client_tools import ClientToolHost, client_tool_specs, registry_with_client_tools
from .errors import (
    PROVIDER_UNAVAILABLE,
    RUN_FAILED,
    RUN_ID_IN_USE,
    RUN_NOT_FOUND,
    RUN_STILL_RUNNING,
    TOOLS_UNAVAILABLE,
    ClientRequestError,
    ServiceError,
    invalid_params,
)
from .history import BatchLabel, RunHistory, RunSummary, StoredCheckpoint, StoredRun
from .image_inputs import ImageInput, check_image_count, load_images
from .settings import CommandSettings, RunDefaults, check_setting, command_policy, run_settings
from .threads import DaemonThreadPool

if TYPE_CHECKING:
    from ..mcp import McpToolset, McpToolsetPool
    from ..tool.runner import ToolRunner
    from .history_queue import QueuedHistory
    from .resources import ResourceRequest
    from .trust import TrustAsker, TrustRequest, TrustStore
    from .undo import RestoreOutcome, Undo

log = logging.getLogger(__name__)

_RUN_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")

T = TypeVar("T")
LLMFactory = Callable[..., LLMCaller]
ProgressToken = int | str


@dataclass(frozen=True, slots=True)
class RunRequest:
    """What a client asked for; None leaves a setting to the session's defaults."""

    prompt: str
    sandbox_root: str
    provider: str | None = None
    model: str | None = None
    max_iterations: int | None = None
    automation_profile: str | None = None
    continue_from: str | None = None
    run_id: str | None = None
    system_prompt: str | None = None
    tools: tuple[str, ...] | None = None
    base_url: str | None = None
    replay_script: str | None = None
    max_tokens: int | None = None
    tool_result_budget: int | None = None
    context_window: int | None = None
    prompt_caching: bool | None = None
    project_instructions: bool | None = None
    # Files attached to the prompt; the first message shows them.
    resources: tuple[ResourceRequest, ...] = ()
    # A layer of run_command settings for this run only, over the session's.
    command: CommandSettings = field(default_factory=CommandSettings)
    # The front's handle for the run (the LSP work-done token): `cancel_by_token` finds it.
    progress_token: ProgressToken | None = None
    # The conversation to go on from when there is no stored run to continue (a front whose
    # history is off keeps it itself); with `continue_from`, the stored one is used.
    conversation: tuple[Message, ...] = ()
    # The batch task this run is (`cleveragents batch`): stored with the run.
    batch: BatchLabel | None = None
    # Images attached to the prompt (`image_inputs.py`); the model must have vision.
    images: tuple[ImageInput, ...] = ()


class RunSink(Protocol):
    """The front's half of one run: where its events go, and who approves its tool calls."""

    @property
    def approvals(self) -> bool:
        """Whether `ask_approval` may be used (else calls that need approval are denied)."""
        ...

    def run_observer(self, plan: RunPlan) -> RunObserver:
        """The observer of this run's events (called once, before the run starts)."""
        ...

    async def ask_approval(self, request: ApprovalRequest) -> ApprovalDecision:
        """The user's answer; ClientRequestError when the client answered with an error.

        Cancelling the awaiting task withdraws the question.
        """
        ...

    async def ask_trust(self, request: TrustRequest) -> bool | None:
        """Whether the user trusts the workspace's `.mcp.json` (see `service/trust.py`);
        None when this client cannot be asked. Cancelling withdraws the question."""
        ...


@runtime_checkable
class FrontTools(Protocol):
    """A sink that adds tools of its own to each run (optional): ACP adds the editor's files
    and terminals and the client's MCP servers; the CLI shows the servers not started."""

    def run_tools(self, registry: ToolRegistry, workspace_mcp: McpToolset) -> ToolRegistry:
        """The registry the run uses: `registry` (the manager's tools and the workspace's
        trusted MCP tools, never to be changed in place) with the front's own. Called once
        the workspace's MCP servers are up, before the run starts."""
        ...


@runtime_checkable
class TrustExplainer(Protocol):
    """A sink that words why nobody could be asked about workspace trust (optional)."""

    @property
    def cannot_ask_trust(self) -> str: ...


@dataclass(slots=True)
class ActiveRun:
    run_id: str
    sandbox_root: str
    cancel: CancelToken
    progress_token: ProgressToken | None


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """A run's result, and what it changed in its folder (from its checkpoints).

    `checkpoint_warning` says why the run cannot be (wholly) undone, when it cannot;
    `checkpoints` are those it took, oldest first (as `RunHistory` stores them).
    """

    result: ToolCallRunResult
    changed_files: list[ChangedFile]
    checkpoint_warning: str | None
    checkpoints: list[StoredCheckpoint]


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
    progress_token: ProgressToken | None
    result_budget_chars: int
    context_window: int | None
    prompt_caching: bool
    resources: tuple[ResourceRequest, ...] = ()
    # Whether AGENTS.md files reach the model (workspace/instructions.py).
    project_instructions: bool = True
    # run_command's reach for this run when its params change it; None: the session's.
    command_policy: CommandPolicy | None = None
    # The batch task this run is (`cleveragents batch`): stored with the run.
    batch: BatchLabel | None = None
    images: tuple[ImageInput, ...] = ()

    def runtime_options(self, defaults: RunDefaults) -> dict[str, Any]:
        """The runtime's token settings for this run (`build_runtime` keyword arguments)."""
        return {
            "result_budget_chars": self.result_budget_chars,
            "context_window": self.context_window,
            "prices": defaults.prices,
            "cache": self.prompt_caching,
            "context_policy": defaults.context_policy,
            "compaction_summary": defaults.compaction_summary,
            "project_instructions": self.project_instructions,
        }


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
        trust_store: TrustStore | None = None,
        undo: Undo | None = None,
    ) -> None:
        self.registry = registry
        self.defaults = defaults
        self.history = history
        # What follows is built on first use, not here: `initialize` answers without loading
        # the checkpoints, MCP or trust code and without starting their threads (the daemon's
        # cold start is measured, bench/daemon_bench.py).
        self._stored: QueuedHistory | None = None
        self._undo = undo
        if undo is not None:
            undo.schedule_housekeeping()
        self.llm_factory = llm_factory
        # One pool for every run's sync tools: never the event loop's default executor.
        self.executor = DaemonThreadPool(max_tool_workers, "cleveragents-tool")
        self._runner_of_registry: ToolRunner | None = None
        self._mcp: McpToolsetPool | None = None
        self._trust_store = trust_store
        self._active: dict[str, ActiveRun] = {}
        self._idle = asyncio.Event()
        self._idle.set()

    @property
    def stored(self) -> QueuedHistory | None:
        """What the event loop uses: writes on a writer thread, reads on reader threads."""
        if self._stored is None and self.history is not None:
            from .history_queue import QueuedHistory

            self._stored = QueuedHistory(self.history)
        return self._stored

    @property
    def undo(self) -> Undo:
        """Checkpoints of every run, kept next to the history; restores. Once a day,
        checkpoints of runs the history dropped are pruned and the rest packed, on a
        checkpoint thread (scheduled when first needed)."""
        if self._undo is None:
            from .undo import Undo

            self._undo = Undo(self.history, queue=self.stored)
            self._undo.schedule_housekeeping()
        return self._undo

    @property
    def _runner(self) -> ToolRunner:
        if self._runner_of_registry is None:
            from ..tool.runner import ToolRunner

            self._runner_of_registry = ToolRunner(self.registry, executor=self.executor)
        return self._runner_of_registry

    @property
    def mcp(self) -> McpToolsetPool:
        """MCP servers per sandbox root, shared by that root's runs, stopped by `aclose`."""
        if self._mcp is None:
            from ..mcp import McpToolsetPool

            self._mcp = McpToolsetPool()
        return self._mcp

    @property
    def trust_store(self) -> TrustStore:
        """Remembered workspace-trust answers (the user data folder's, unless given)."""
        if self._trust_store is None:
            from .trust import TrustStore

            self._trust_store = TrustStore()
        return self._trust_store

    # -- starting a run ----------------------------------------------------------------------
    def plan(self, params: RunRequest) -> RunPlan:
        """Validate and resolve a run request; ServiceError when it cannot run."""
        problems: list[str] = []
        defaults = self.defaults
        # An image is a prompt of its own ("what is wrong in this screenshot?" is often all
        # there is to say): both providers take a user turn of images alone.
        if not params.prompt.strip() and not params.images:
            problems.append("prompt: must not be empty (unless images are attached)")
        sandbox_root, problem = check_sandbox_root(params.sandbox_root)
        if problem:
            problems.append(f"sandbox_root: {problem}")
        # Each setting a run may set, checked as its row says (the session's were at start).
        for row in rows_for(Level.RUN):
            value = getattr(params, row.name, None)
            problem = check_setting(row, value) if value is not None else None
            if problem:
                problems.append(f"{row.name}: {problem}")
        if params.run_id is not None and not _RUN_ID.match(params.run_id):
            problems.append("run_id: use 1 to 64 letters, digits, '_', '-', '.' or ':'")
        problems.extend(check_image_count(params.images))
        if params.resources and _root_ok(sandbox_root, problems):
            from .resources import check_resources

            problems.extend(check_resources(params.resources, sandbox_root, resource_label))
        policy = None
        if params.command:
            base = defaults.command_policy or CommandPolicy.from_environment()
            policy, more = command_policy(base, params.command, "params")
            problems.extend(more)
        if params.tools is not None:
            for index, name in enumerate(params.tools):
                # `server__tool` names are MCP tools: checked once the servers are up.
                if name not in self.registry and "__" not in name:
                    problems.append(
                        f"tools[{index}]: unknown tool {name!r}; available: "
                        f"{', '.join(self.registry.names()) or 'none'}"
                    )
        if problems:
            raise invalid_params(problems)
        from ..tool.runtime import new_run_id

        run_id = params.run_id or new_run_id()
        if run_id in self._active:
            raise _run_id_taken(run_id)
        run = run_settings(defaults, params)
        options = run.provider_options()
        options["cache"] = run.prompt_caching  # said even when on (the provider's default)
        return RunPlan(
            run_id=run_id,
            prompt=params.prompt,
            sandbox_root=sandbox_root,
            provider=run.provider,
            model=run.model,
            automation_profile=run.automation_profile,
            max_iterations=run.max_iterations,
            system_prompt=run.system_prompt,
            continue_from=params.continue_from,
            tools=tuple(params.tools) if params.tools is not None else None,
            provider_options=options,
            progress_token=params.progress_token,
            result_budget_chars=run.result_budget_chars,
            context_window=run.context_window,
            prompt_caching=run.prompt_caching,
            resources=tuple(params.resources),
            command_policy=policy,
            project_instructions=run.project_instructions,
            batch=params.batch,
            images=tuple(params.images),
        )

    async def _check_stored(self, plan: RunPlan) -> None:
        """What only the history can tell: the run id is new, the run to continue can be."""
        if self.stored is None:
            if plan.continue_from is not None:
                self._check_continuable(plan.continue_from)
            return
        if await self.stored.has_run(plan.run_id):
            raise _run_id_taken(plan.run_id)
        if plan.continue_from is not None:
            continue_from = plan.continue_from
            await self.stored.read(lambda _: self._check_continuable(continue_from))

    def _check_continuable(self, run_id: str) -> None:
        if run_id in self._active:
            raise ServiceError(
                RUN_STILL_RUNNING, f"run {run_id!r} is still running", {"run_id": run_id}
            )
        stored = self.history.get_run(run_id) if self.history is not None else None
        if stored is None:
            raise ServiceError(
                RUN_NOT_FOUND, f"no run {run_id!r} in the history", {"run_id": run_id}
            )
        if stored.status == "running":
            raise ServiceError(
                RUN_STILL_RUNNING,
                f"run {run_id!r} is still running (in another daemon)",
                {"run_id": run_id},
            )
        if stored.kind == "restore":
            raise invalid_params(
                [f"continue_from: {run_id!r} is a restore, not a run with a conversation"]
            )

    async def run(self, params: RunRequest, sink: RunSink) -> RunOutcome:
        """Run to the end, streaming events to `sink`; the outcome, or ServiceError.

        The folder is snapshotted before each iteration that may change it and when the run
        ends, whatever ends it. Cancelling the awaiting task cancels the run (its calls are
        recorded as cancelled, the sink sees it finish) and re-raises CancelledError.
        """
        plan = self.plan(params)
        # Active from here (no await before): a cancel or a restore that comes while the run
        # is still being set up finds it.
        active = ActiveRun(plan.run_id, plan.sandbox_root, CancelToken(), plan.progress_token)
        self._active[plan.run_id] = active
        self._idle.clear()
        try:
            return await self._run(plan, sink, active, params.conversation)
        finally:
            del self._active[plan.run_id]
            if not self._active:
                self._idle.set()

    async def _run(
        self, plan: RunPlan, sink: RunSink, active: ActiveRun, given: Sequence[Message]
    ) -> RunOutcome:
        from ..assembly import build_runtime
        from ..mcp import McpError
        from .resources import load_resources
        from .tracing import tracing_observer
        from .trust import CANNOT_ASK, with_untrusted_note

        await self._check_stored(plan)
        # `/name arguments` of a custom command: the model gets the command's prompt, whichever
        # front sent it (the history keeps what the model got).
        if plan.prompt.lstrip().startswith("/"):
            expanded = await asyncio.to_thread(
                expand_prompt_command, plan.prompt, plan.sandbox_root
            )
            if expanded is not None:
                plan = replace(plan, prompt=expanded)
        resources, problems = await asyncio.to_thread(
            load_resources, plan.resources, plan.sandbox_root, resource_label
        )
        if problems:
            raise invalid_params(problems)
        images: list[ImageAttachment] = []
        if plan.images:
            images, problems = await asyncio.to_thread(load_images, plan.images)
            if problems:
                raise invalid_params(problems)
        llm = self.llm_caller(plan.provider, plan.model, plan.provider_options)
        conversation: list[Message] = list(given)
        if plan.continue_from is not None:
            assert self.stored is not None  # _check_continuable found the run there
            try:
                conversation = await self.stored.conversation(plan.continue_from)
            except KeyError:
                raise _not_in_history(plan.continue_from) from None
        # Before any request: a model that cannot see is never sent an image, neither the
        # new ones nor those of the conversation it continues.
        if (images or any(_has_images(m) for m in conversation)) and not supports_vision(llm):
            raise invalid_params([f"images: {no_vision(plan.provider, plan.model)}"])
        if plan.continue_from is not None:
            assert self.stored is not None
            try:
                await self.stored.mark_continuation(plan.run_id, plan.continue_from)
            except KeyError:
                raise _not_in_history(plan.continue_from) from None
        if plan.batch is not None and self.stored is not None:
            self.stored.mark_batch(plan.run_id, plan.batch)
        context = ToolActorContext(
            sandbox_root=plan.sandbox_root, automation_profile=plan.automation_profile
        )
        observers: list[RunObserver] = [sink.run_observer(plan)]
        # OpenTelemetry spans, when an endpoint is set; the model the caller settled on (the
        # provider's default or a script's) when the request named none.
        caller_model = getattr(llm, "model", None)
        traced = tracing_observer(
            plan, caller_model if isinstance(caller_model, str) and caller_model else plan.model
        )
        if traced is not None:
            observers.append(traced)
        if self.stored is not None:
            # The history first: a record the client has seen is queued, and a read waits
            # for what is queued.
            observers.insert(0, self.stored)
        approver = make_approver(sink, self.defaults.approval_timeout_s) if sink.approvals else None
        cannot_ask = sink.cannot_ask_trust if isinstance(sink, TrustExplainer) else CANNOT_ASK
        checkpoints = self.undo.track(plan.run_id, plan.sandbox_root)
        try:
            async with self.sandbox_mcp(
                plan.sandbox_root,
                plan.automation_profile,
                withdrawn_on_cancel(sink, active.cancel),
                cannot_ask,
            ) as mcp_tools:
                registry, runner = self._tools_for(plan.tools, mcp_tools)
                if plan.command_policy is not None:
                    registry = with_command_policy(registry, plan.command_policy)
                    runner = self.runner_for(registry)
                if isinstance(sink, ClientToolHost) and sink.client_tools:
                    # Beside every tool of the run, whatever `tools` subset it names.
                    registry = registry_with_client_tools(
                        registry, sink.client_tools, sink, plan.run_id
                    )
                    runner = self.runner_for(registry)
                if isinstance(sink, FrontTools):
                    registry = sink.run_tools(registry, mcp_tools)
                    runner = self.runner_for(registry)
                runtime = build_runtime(
                    llm,
                    registry,
                    max_iterations=plan.max_iterations,
                    # The model is told which workspace servers were not trusted.
                    system_prompt=with_untrusted_note(plan.system_prompt, mcp_tools.config),
                    runner=runner,
                    **plan.runtime_options(self.defaults),
                )
                result = await runtime.arun_tool_loop(
                    plan.prompt,
                    context,
                    history=conversation,
                    observers=observers,
                    approver=approver,
                    cancel=active.cancel,
                    run_id=plan.run_id,
                    resources=resources,
                    images=images,
                    before_mutation=checkpoints.before_mutation,
                )
        except asyncio.CancelledError:
            raise
        except McpError as exc:
            raise ServiceError(
                TOOLS_UNAVAILABLE, str(exc), {"sandbox_root": plan.sandbox_root}
            ) from exc
        except ServiceError:  # bad params found once the MCP tools are known: as they are
            raise
        except Exception as exc:
            log.warning("run %s failed: %s: %s", plan.run_id, type(exc).__name__, exc)
            raise ServiceError(
                RUN_FAILED,
                f"the run failed: {type(exc).__name__}: {exc}",
                {"run_id": plan.run_id, "error_type": type(exc).__name__},
            ) from exc
        finally:
            # Still active until the state it left is recorded: no restore comes between.
            await checkpoints.finish()
        return RunOutcome(
            result, checkpoints.changed_files, checkpoints.warning, checkpoints.checkpoints
        )

    def llm_caller(self, provider: str, model: str | None, options: dict[str, Any]) -> LLMCaller:
        """The provider's caller; ServiceError (provider unavailable) when it cannot be made."""
        try:
            return self.llm_factory(provider, model, **options)
        except (ProviderConfigError, ValueError, RuntimeError, ImportError, OSError) as exc:
            raise ServiceError(
                PROVIDER_UNAVAILABLE,
                f"provider {provider!r} is unavailable: {exc}",
                {"provider": provider},
            ) from exc

    async def in_thread(self, work: Callable[[], T]) -> T:
        """Work too long for the event loop (encoding a large result), on the tool threads."""
        return await asyncio.wrap_future(self.executor.submit(work))

    def runner_for(self, registry: ToolRegistry) -> ToolRunner:
        """A runner for `registry` whose sync tools use the shared tool threads."""
        from ..tool.runner import ToolRunner

        if registry is self.registry:
            return self._runner
        return ToolRunner(registry, executor=self.executor)

    def sandbox_mcp(
        self,
        sandbox_root: str,
        automation_profile: str,
        ask: TrustAsker | None,
        cannot_ask: str | None = None,
    ) -> AbstractAsyncContextManager[McpToolset]:
        """The sandbox's `.mcp.json` servers for a run: started only once trusted (`ask` asks
        the user, see `service/trust.py`), and never under read-only, which promises nothing
        runs that could change anything. `cannot_ask` says why nobody could be asked (the
        trust module's words by default)."""
        from ..mcp import McpToolset
        from .trust import CANNOT_ASK, WorkspaceTrust

        if automation_profile == "read-only":
            return nullcontext(McpToolset(sandbox_root))
        trust = WorkspaceTrust(
            self.trust_store,
            pre_trusted=self.defaults.trust_workspace,
            timeout_s=self.defaults.approval_timeout_s,
            ask=ask,
            cannot_ask=CANNOT_ASK if cannot_ask is None else cannot_ask,
        )
        return self.mcp.lease(sandbox_root, admit=lambda c: trust.admit(sandbox_root, c))

    def _tools_for(
        self, names: Sequence[str] | None, mcp_tools: McpToolset
    ) -> tuple[ToolRegistry, ToolRunner]:
        """The run's registry: the daemon's tools plus its sandbox's MCP tools, or a subset."""
        from ..mcp import registry_with_mcp_tools

        if names is None and not mcp_tools.specs:
            return self.registry, self._runner
        available = registry_with_mcp_tools(self.registry, mcp_tools)
        if names is None:
            return available, self.runner_for(available)
        unknown = [
            f"tools[{i}]: unknown tool {n!r}; available: {', '.join(available.names())}"
            for i, n in enumerate(names)
            if n not in available
        ]
        if unknown:
            raise invalid_params(unknown)
        subset = ToolRegistry()
        for name in dict.fromkeys(names):
            subset.add_spec(available.get(name))  # type: ignore[arg-type]
        return subset, self.runner_for(subset)

    # -- live runs ---------------------------------------------------------------------------
    def cancel(self, run_id: str) -> bool:
        """Ask a live run to stop; False when no such run is going."""
        active = self._active.get(run_id)
        if active is None:
            return False
        active.cancel.cancel()
        return True

    def cancel_by_token(self, token: ProgressToken) -> bool:
        """Cancel the runs started with this progress token; False when there is none."""
        matches = [a for a in self._active.values() if a.progress_token == token]
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
        """Stop the MCP servers, then the tool threads; write what the history has queued."""
        if self._mcp is not None:
            await self._mcp.close()
        self.executor.shutdown(wait=False, cancel_futures=True)
        if self._undo is not None:
            self._undo.close()
        if self._stored is not None:
            await self._stored.aclose()

    # -- undo --------------------------------------------------------------------------------
    async def restore(
        self, run_id: str, iteration: int | None = None, *, dry_run: bool = False
    ) -> RestoreOutcome:
        """Restore a run's folder to before `iteration` (None: undo the run); see `Undo.restore`.

        Refused (RunActive) while a run of this process, or of another one the history
        knows, is active in that folder.
        """
        active = {run.run_id: run.sandbox_root for run in self._active.values()}
        if self.stored is not None:
            await self.stored.settled()  # the checkpoints of a run that just ended are stored
        return await self.undo.in_thread(
            lambda: self.undo.restore(run_id, iteration, dry_run=dry_run, active=active)
        )

    # -- reading -----------------------------------------------------------------------------
    async def prompt_commands(self, sandbox_root: str) -> list[PromptCommand]:
        """The custom commands a run in `sandbox_root` can be sent (`/name arguments`)."""
        root, problem = check_sandbox_root(sandbox_root)
        if problem:
            raise invalid_params([f"sandbox_root: {problem}"])
        return await asyncio.to_thread(load_prompt_commands, root)

    async def tools(
        self,
        sandbox_root: str | None = None,
        ask: TrustAsker | None = None,
        client: ClientToolHost | None = None,
    ) -> list[ToolSpec]:
        """Every tool a run may use; with a sandbox root, its `.mcp.json` tools too (once
        trusted: `ask` asks the user); with a client that serves tools, those last."""
        specs = await self._own_tools(sandbox_root, ask)
        if client is not None:
            specs.extend(client_tool_specs(client.client_tools, client, run_id=""))
        return specs

    async def _own_tools(self, sandbox_root: str | None, ask: TrustAsker | None) -> list[ToolSpec]:
        from ..mcp import McpError, registry_with_mcp_tools

        registry = self.registry
        if sandbox_root is not None:
            root, problem = check_sandbox_root(sandbox_root)
            if problem:
                raise invalid_params([f"sandbox_root: {problem}"])
            try:
                profile = self.defaults.automation_profile
                async with self.sandbox_mcp(root, profile, ask) as mcp_tools:
                    registry = registry_with_mcp_tools(self.registry, mcp_tools)
            except McpError as exc:
                raise ServiceError(TOOLS_UNAVAILABLE, str(exc), {"sandbox_root": root}) from exc
        return list(registry.specs())

    @staticmethod
    def check_list_params(limit: int, offset: int) -> None:
        problems = []
        if not 1 <= limit <= 1000:
            problems.append(f"limit: must be between 1 and 1000, got {limit}")
        if offset < 0:
            problems.append(f"offset: must not be negative, got {offset}")
        if problems:
            raise invalid_params(problems)

    async def list_runs(
        self, limit: int, offset: int, *, batch_id: str | None = None
    ) -> list[RunSummary]:
        self.check_list_params(limit, offset)
        if self.stored is None:
            return []
        return await self.stored.list_runs(limit, offset, batch_id=batch_id)

    async def get_run(self, run_id: str) -> StoredRun:
        stored = await self.stored.get_run(run_id) if self.stored is not None else None
        if stored is None:
            raise ServiceError(
                RUN_NOT_FOUND, f"no run {run_id!r} in the history", {"run_id": run_id}
            )
        return stored


def _not_in_history(run_id: str) -> ServiceError:
    return ServiceError(RUN_NOT_FOUND, f"no run {run_id!r} in the history", {"run_id": run_id})


def _has_images(message: Message) -> bool:
    return isinstance(message, UserMessage) and bool(message.images)


def _run_id_taken(run_id: str) -> ServiceError:
    return ServiceError(RUN_ID_IN_USE, f"run id {run_id!r} is already taken", {"run_id": run_id})


def make_approver(sink: RunSink, timeout_s: float) -> Approver:
    """Ask through the sink; a timeout or an error answer is a denial."""

    async def approve(request: ApprovalRequest) -> ApprovalDecision:
        try:
            return await asyncio.wait_for(sink.ask_approval(request), timeout_s)
        except TimeoutError:
            log.warning("no approval for %s within %g s: denied", request.tool_name, timeout_s)
            return "deny"
        except ClientRequestError as exc:
            log.warning("approval request for %s failed: %s; denied", request.tool_name, exc)
            return "deny"

    return approve


def withdrawn_on_cancel(sink: RunSink, cancel: CancelToken) -> TrustAsker:
    """The sink's trust question, withdrawn when the run is cancelled while it is open (no
    answer: not trusted, not remembered) and never asked once the run is cancelled."""

    async def ask(request: TrustRequest) -> bool | None:
        return await unless_cancelled(cancel, sink.ask_trust(request))

    return ask


def _root_ok(sandbox_root: str, problems: Sequence[str]) -> bool:
    """Whether the sandbox root checked out, so paths can be checked against it."""
    return not any(p.startswith("sandbox_root:") for p in problems)


def check_sandbox_root(value: str) -> tuple[str, str | None]:
    """The sandbox root as a real absolute path, or a problem with it: the one check every
    front (daemon, ACP's `cwd`, the CLI's `--sandbox`, the library's `Sandbox`) refuses the
    same folders with: not a folder, `/`, a folder holding the home folder, every user's
    homes, or a folder the tools may never see (`~/.ssh`, `~/.aws`, the data folder...)."""
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
    problem = refused_root(resolved)
    if problem is not None:
        return value, f"{value!r} {problem}"
    return resolved, None


def resource_label(index: int | None, field: str) -> str:
    """Names an attached file's field in a problem: `resources[0].path` (`resources`)."""
    return "resources" if index is None else f"resources[{index}].{field}"
