"""An ACP session and its prompt turns: what the client sees of each run, in order.

A session is one conversation in one sandbox (the client's `cwd`): every prompt runs the tool
loop with the conversation so far, so the second prompt continues the first. A `PromptTurn`
is one prompt's run as seen from the client, and the run's sink in the core's pipeline
(`RunManager.run`, as for every front): it observes the run's events and turns them into
`session/update` notifications, sent strictly in the order they happened (and all of them
before a permission request or the prompt's response), asks the client for approvals and
workspace trust, and adds the editor's tools (its files, its terminals, the client's MCP
servers) to the run's.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from acp import Client
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    RequestPermissionResponse,
    ToolCallProgress,
    ToolCallStart,
    ToolCallStatus,
)

from ..mcp import McpToolset, registry_with_mcp_tools
from ..service.runs import RunPlan
from ..service.trust import TrustRequest
from ..tool.events import (
    PlanUpdated,
    RunEvent,
    RunObserver,
    RunStarted,
    SnapshotProgress,
    SnapshotTaken,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from ..tool.messages import Message
from ..tool.policy import ApprovalDecision, ApprovalRequest, verdict
from ..tool.registry import ToolRegistry
from ..workspace.file_access import FileAccess, with_file_access
from ..workspace.terminal import TerminalHost, with_terminal
from .permissions import (
    decision_from,
    permission_options,
    permission_tool_call,
    trust_answered,
    trust_call,
    trust_options,
    trust_tool_call,
    trusted_from,
    turn_cancelled,
)
from .updates import (
    call_finished,
    call_running,
    call_started,
    call_terminal,
    instructions_note,
    message_chunk,
    plan_update,
    snapshot_saving,
    snapshot_taken,
)

log = logging.getLogger(__name__)

SessionUpdate = (
    AgentMessageChunk | ToolCallStart | ToolCallProgress | AgentPlanUpdate | AgentThoughtChunk
)
COMMAND_TOOL = "run_command"


@dataclass(slots=True)
class AcpSession:
    session_id: str
    sandbox_root: str
    automation_profile: str
    # The MCP servers the client asked for in `session/new`, running for the session's life.
    client_mcp: McpToolset | None = None
    conversation: list[Message] = field(default_factory=list)
    # The session's newest stored run: the next prompt's run continues it. None until the
    # first prompt's run (whose run id is the session id) is stored.
    last_run_id: str | None = None
    # The session's last `/undo` or `/restore`, until its next prompt: `/undo` then undoes it.
    last_restore_id: str | None = None
    # Tools the user chose "always allow" for: later prompts of the session do not ask again.
    always_allowed: set[str] = field(default_factory=set)
    turn: PromptTurn | None = None
    # The editor's view of the files, when the client offers `fs/*`: file tools go through it.
    files: FileAccess | None = None
    # The editor's terminals, when the client offers them: run_command shows its output there.
    terminals: TerminalHost | None = None

    # The token settings `session/new` chose in `_meta.cleveragents` (`RunRequest` fields:
    # tool_result_budget, context_window, prompt_caching), over the environment's.
    run_options: dict[str, Any] = field(default_factory=dict)


class UpdateStream:
    """The `session/update` notifications of one prompt turn, sent one at a time, in order."""

    def __init__(self, client: Client, session_id: str) -> None:
        self._client = client
        self._session_id = session_id
        self._queue: asyncio.Queue[SessionUpdate] = asyncio.Queue()
        self._pump = asyncio.ensure_future(self._send_all())

    def put(self, update: SessionUpdate) -> None:
        self._queue.put_nowait(update)

    async def flush(self) -> None:
        """Wait until every update put so far has been sent."""
        await self._queue.join()

    async def close(self) -> None:
        await self.flush()
        self.abandon()

    def abandon(self) -> None:
        """Stop sending (the connection is going away); what is queued is dropped."""
        self._pump.cancel()

    async def _send_all(self) -> None:
        while True:
            update = await self._queue.get()
            try:
                await self._client.session_update(self._session_id, update)
            except Exception as exc:  # the connection closed under us: nobody to tell
                log.warning("session/update not sent: %s: %s", type(exc).__name__, exc)
            finally:
                self._queue.task_done()


class PromptTurn:
    """One prompt's run, seen from the client: its updates, its approvals, its cancelling;
    the run's `RunSink` (see `service/runs.py`)."""

    approvals = True

    def __init__(
        self,
        client: Client,
        session: AcpSession,
        run_id: str,
        cancel_run: Callable[[str], bool],
    ) -> None:
        self.client = client
        self.session = session
        self.run_id = run_id
        # The run manager's cancel: the run is stopped through the core's registry of runs.
        self._cancel_run = cancel_run
        # Whether the client cancelled the turn (it then answers `cancelled`).
        self.cancelled = False
        # Fixed for the run: `session/set_mode` during it applies to the next prompt.
        self.automation_profile = session.automation_profile
        # The run's tools, once its MCP servers are up (for tool kinds and approval rules).
        self.registry = ToolRegistry()
        self.updates = UpdateStream(client, session.session_id)
        # Whether the run got as far as starting (and so into the history, when there is one).
        self.run_started = False
        # run_command calls started and not finished (one at a time: it changes the workspace,
        # so a response's calls run in order), and the terminals that show them.
        self._commands: list[str] = []
        self._terminals: dict[str, str] = {}
        # Checkpoints shown in progress: (run id, iteration) of each, until it is saved.
        self._snapshots_shown: set[tuple[str, int]] = set()

    def stop(self) -> None:
        """The client cancelled the turn: stop its run."""
        self.cancelled = True
        self._cancel_run(self.run_id)

    # -- the run's sink ----------------------------------------------------------------------
    def run_observer(self, plan: RunPlan) -> RunObserver:
        return self.observe

    def run_tools(self, registry: ToolRegistry, workspace_mcp: McpToolset) -> ToolRegistry:
        """The run's tools with the editor's: the client's MCP servers, and its files and
        terminals where it offers them (the file tools and run_command then go through it)."""
        session = self.session
        if session.client_mcp is not None:
            registry = registry_with_mcp_tools(registry, session.client_mcp)
        if session.files is not None:
            registry = with_file_access(registry, session.files)
        if session.terminals is not None:
            registry = with_terminal(registry, session.terminals)
        self.registry = registry
        return registry

    async def ask_approval(self, request: ApprovalRequest) -> ApprovalDecision:
        return await self.approve(request)

    def observe(self, event: RunEvent) -> None:
        """A run observer: events the client shows become `session/update`s."""
        if isinstance(event, RunStarted):
            self.run_started = True
            if event.instructions:
                self.updates.put(instructions_note(event.run_id, event.instructions))
        elif isinstance(event, PlanUpdated):
            self.updates.put(plan_update(event.steps, event.call_id))
        elif isinstance(event, TextDelta):
            self.updates.put(message_chunk(event))
        elif isinstance(event, ToolCallStarted):
            spec = self.registry.get(event.tool_name)
            rule = verdict(self.automation_profile, spec) if spec is not None else "deny"
            runs_outright = rule == "allow" or (
                rule == "ask" and event.tool_name in self.session.always_allowed
            )
            status: ToolCallStatus = "in_progress" if runs_outright else "pending"
            self.updates.put(call_started(event, spec, self.session.sandbox_root, status))
            if event.tool_name == COMMAND_TOOL:
                self._commands.append(event.call_id)
        elif isinstance(event, ToolCallFinished):
            call_id = event.record.call_id
            if call_id in self._commands:
                self._commands.remove(call_id)
            shown = self._terminals.pop(call_id, None) is not None
            self.updates.put(call_finished(event.record, in_terminal=shown))
        elif isinstance(event, SnapshotProgress):
            key = (event.run_id, event.iteration)
            self.updates.put(snapshot_saving(event, first=key not in self._snapshots_shown))
            self._snapshots_shown.add(key)
        elif isinstance(event, SnapshotTaken):
            key = (event.run_id, event.iteration)
            shown = key in self._snapshots_shown
            self._snapshots_shown.discard(key)
            self.updates.put(snapshot_taken(event, shown=shown))

    def show_terminal(self, terminal_id: str) -> None:
        """Embed a terminal in the run_command call now running (see `terminals.py`)."""
        if not self._commands:
            log.warning("terminal %s started with no run_command call running", terminal_id)
            return
        call_id = self._commands[-1]
        self._terminals[call_id] = terminal_id
        self.updates.put(call_terminal(call_id, terminal_id))

    async def approve(self, request: ApprovalRequest) -> ApprovalDecision:
        """Ask the client with `session/request_permission` (the core times the question out:
        the manager's approver cancels this, which withdraws it)."""
        # A protected write (code that could run later, outside every wall) is asked about
        # every time: an earlier "always allow" of the tool does not answer it.
        if request.tool_name in self.session.always_allowed and not request.protected:
            return "allow_for_run"
        # The client must know the call (its `tool_call`) before it is asked about it.
        await self.updates.flush()
        tool_call = permission_tool_call(
            request, self.registry.get(request.tool_name), self.session.sandbox_root
        )
        try:
            response = await self.client.request_permission(
                self.session.session_id,
                tool_call,
                permission_options(request.tool_name, protected=request.protected),
            )
        except Exception as exc:  # an error answer, a malformed one, or a closed connection
            log.warning("permission request for %s failed (%s): denied", request.tool_name, exc)
            return "deny"
        if turn_cancelled(response):
            # The client cancelled the prompt turn; its session/cancel may still be on its way
            # (or never come): the run stops here either way, and the call is cancelled.
            self.stop()
            return "cancel"
        decision = decision_from(response)
        if decision == "allow_for_run" and not request.protected:
            self.session.always_allowed.add(request.tool_name)
        if decision != "deny":
            self.updates.put(call_running(request.call_id))
        return decision

    async def ask_trust(self, request: TrustRequest) -> bool | None:
        """Ask whether the workspace's `.mcp.json` servers may start (`service/trust.py`), as
        a pending call of its own; None when the client gave no answer (not remembered)."""
        self.updates.put(trust_call(request))
        trusted: bool | None = None
        try:
            # The core never asks once the run is cancelled, and a cancel meanwhile withdraws
            # the question (service/runs.py `withdrawn_on_cancel`; ACP cannot take a request
            # back: the client's late answer is ignored).
            response = await self._ask_trust(request)
        except Exception as exc:  # an error answer, a malformed one, or a closed connection
            log.warning("workspace-trust request failed (%s): not trusted", exc)
        else:
            if turn_cancelled(response):
                self.stop()  # as for approvals: the client cancelled the turn
            trusted = trusted_from(response)
        finally:
            # Also when the question times out (the caller cancels us): the call ends.
            self.updates.put(trust_answered(request, trusted))
        return trusted

    async def _ask_trust(self, request: TrustRequest) -> RequestPermissionResponse:
        await self.updates.flush()  # the client knows the call before it is asked about it
        return await self.client.request_permission(
            self.session.session_id, trust_tool_call(request), trust_options()
        )

    async def finish(self) -> None:
        """Send what is left; the prompt's response may go out after this."""
        await self.updates.close()

    def abandon(self) -> None:
        self.updates.abandon()
