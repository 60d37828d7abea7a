"""The ACP agent: initialize, session/new, session/load, session/list, session/set_mode,
session/prompt, session/cancel.

Each prompt is one run of the core's pipeline, `RunManager.run`, exactly as the JSON-RPC
daemon and the CLI start theirs (registry, provider, automation profiles, run history,
checkpoints, the sandbox's `.mcp.json` servers, the active-run registry), with the session's
`cwd` as the sandbox root. The prompt turn (`session.py`) is the run's sink: it shows the
events, asks for approvals and trust, and adds the editor's files and terminals. A session's
next prompt continues its last run (`continue_from`, with the core's checks: not a run still
running, not a restore); without a history, the session keeps its conversation itself.

- The automation profile is the session's mode (`read-only`, `ask`, `auto-edit`,
  `full-auto`): the profile variable (default `ask`), `_meta.cleveragents.automationProfile`
  in `session/new`, or `session/set_mode` later.
- MCP servers: the sandbox's `.mcp.json` ones, as for every run (once the user trusts that
  file: asked with `session/request_permission`; never under `read-only`), plus the stdio
  servers the client lists in `session/new`, which run while the session lives. HTTP and SSE
  servers are not advertised (`mcpCapabilities`) and are skipped.
- Sessions last: each is a conversation of the run history (see `stored_sessions.py`), so
  `session/list` lists them and `session/load` replays one and continues it. Both need the
  history (`--no-history` turns them off, and the capabilities say so).
- Errors: a prompt whose provider cannot be set up, whose tools cannot start, or whose run
  fails (the provider gave up) is answered with a JSON-RPC error, with the daemon's codes.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Sequence
from typing import Any

from acp import PROTOCOL_VERSION, Client, RequestError
from acp.schema import (
    AcpMcpServer,
    AgentCapabilities,
    ClientCapabilities,
    HttpMcpServer,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    McpServerStdio,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    SessionCapabilities,
    SessionListCapabilities,
    SessionMode,
    SessionModeState,
    SetSessionModeResponse,
    SseMcpServer,
)

from .. import __version__
from ..jsonrpc_errors import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    RUN_STILL_RUNNING,
    TOOLS_UNAVAILABLE,
    as_jsonrpc,
    wire_field,
)
from ..mcp import McpConfig, McpError, McpServerConfig, McpToolset
from ..service.errors import ServiceError
from ..service.history import RunHistory, StoredRun
from ..service.runs import RunManager, RunRequest, check_sandbox_root
from ..service.settings import (
    ClientOptions,
    RunDefaults,
    check_setting,
    history_argument,
    settings_report,
)
from ..settings_table import Level, rows_for
from ..tool.policy import AUTOMATION_PROFILES
from ..tool.records import ToolCallRunResult
from ..tool.runtime import new_run_id
from ..tool.serialization import to_data
from .commands import advertise_commands, run_slash_command, slash_command
from .files import EditorFiles
from .prompts import ContentBlock, UnsupportedPrompt, prompt_images, prompt_text
from .session import AcpSession, PromptTurn
from .stored_sessions import BadCursor, replay, session_page
from .terminals import EditorTerminals
from .updates import META_KEY, stop_reason, usage_meta

log = logging.getLogger(__name__)

# ACP's "resource not found" (its ErrorCode list): a session id that names no session.
RESOURCE_NOT_FOUND = -32002

# The ids `session/new` gives; its first prompt's run takes the id as its own.
NEW_SESSION_ID = re.compile(r"sess_[0-9a-f]{24}")

McpServer = HttpMcpServer | SseMcpServer | AcpMcpServer | McpServerStdio
CLIENT_MCP_CONFIG = "session/new mcpServers"

MODE_DESCRIPTIONS = {
    "read-only": "Read and search the project; every change is refused.",
    "ask": "Read freely; ask before every change or command.",
    "auto-edit": "Read and edit files freely; ask before running commands.",
    "full-auto": "Run every tool without asking.",
}


def request_error(code: int, message: str, **data: Any) -> RequestError:
    return RequestError(code, message, data or None)


def invalid_params(problem: str) -> RequestError:
    return request_error(INVALID_PARAMS, f"invalid params: {problem}", problems=[problem])


# The core's field names as ACP names them (the rest as JSON-RPC params, as the daemon does).
_ACP_FIELDS = {"sandbox_root": "cwd"}


def service_error(error: ServiceError) -> RequestError:
    """A core error as ACP answers it: the JSON-RPC code of its kind, ACP's field names."""
    code, message, data = as_jsonrpc(error, lambda f: _ACP_FIELDS.get(f) or wire_field(f))
    return RequestError(code, message, data if isinstance(data, dict) and data else None)


class CleverAgentsAgent:
    """The agent side of one ACP connection (the SDK routes requests to these methods)."""

    def __init__(self, manager: RunManager) -> None:
        # The core's run manager: settings, tools, history, MCP servers and tool threads.
        self.manager = manager
        self.sessions: dict[str, AcpSession] = {}
        self._client: Client | None = None
        # What the client offers us (`fs/*`, terminals), from `initialize`.
        self.client_capabilities: ClientCapabilities | None = None

    def on_connect(self, conn: Client) -> None:
        self._client = conn

    @property
    def client(self) -> Client:
        if self._client is None:
            raise RuntimeError("the agent is not connected to a client")
        return self._client

    # -- set-up ------------------------------------------------------------------------------
    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        if client_info is not None:
            log.info(
                "client %s %s, protocol %d", client_info.name, client_info.version, protocol_version
            )
        self.client_capabilities = client_capabilities
        defaults = self.manager.defaults
        stored = self.manager.history is not None
        return InitializeResponse(
            # Version 1 is the only one we speak; a client that wants another disconnects.
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                load_session=stored,
                prompt_capabilities=PromptCapabilities(
                    image=True, audio=False, embedded_context=True
                ),
                mcp_capabilities=McpCapabilities(http=False, sse=False),
                session_capabilities=SessionCapabilities(
                    list=SessionListCapabilities() if stored else None
                ),
            ),
            auth_methods=[],
            agent_info=Implementation(
                name="cleveragents", title="CleverAgents", version=__version__
            ),
            field_meta={
                META_KEY: {
                    "provider": defaults.provider,
                    "model": defaults.model,
                    "maxIterations": defaults.max_iterations,
                }
            },
        )

    async def new_session(
        self,
        cwd: str,
        mcp_servers: Sequence[McpServer] | None = None,
        additional_directories: list[str] | None = None,
        **kwargs: Any,
    ) -> NewSessionResponse:
        sandbox_root = _sandbox_root(cwd, additional_directories)
        profile = _requested_profile(kwargs.get(META_KEY), self.manager.defaults)
        run_options = _requested_run_options(kwargs.get(META_KEY))
        client_mcp = await _start_client_mcp(sandbox_root, mcp_servers or ())
        session_id = f"sess_{os.urandom(12).hex()}"  # as NEW_SESSION_ID matches
        self.sessions[session_id] = AcpSession(
            session_id=session_id,
            sandbox_root=sandbox_root,
            automation_profile=profile,
            client_mcp=client_mcp,
            run_options=run_options,
        )
        self._offer_editor(self.sessions[session_id])
        log.info("session %s in %s, profile %s", session_id, sandbox_root, profile)
        # `/undo`, `/restore N` and the custom commands: sent after this answer.
        advertise_commands(self.client, session_id, sandbox_root)
        meta = kwargs.get(META_KEY)
        report = None
        if isinstance(meta, dict) and meta.get("reportSettings") is True:
            report = {
                META_KEY: {"settings": self._settings_report(meta, run_options, sandbox_root)}
            }
        return NewSessionResponse(session_id=session_id, modes=_modes(profile), field_meta=report)

    def _settings_report(
        self, meta: dict[str, Any], run_options: dict[str, Any], sandbox_root: str
    ) -> list[dict[str, Any]]:
        """Every setting as this session's runs resolve it (its `_meta` over the agent's
        environment), with its source: `_meta.cleveragents.reportSettings` asks for it."""
        requested = dict(run_options)
        if meta.get("automationProfile") is not None:
            requested["automation_profile"] = meta["automationProfile"]
        history = self.manager.history
        report = settings_report(
            ClientOptions(),
            os.environ,
            history=history_argument(history.path if history else None, os.environ),
            history_level="--history",
            run=RunRequest(prompt="", sandbox_root=sandbox_root, **requested),
            run_level="_meta",
        )
        return list(to_data(report))

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        """`session/list`: the history's conversations, latest first, `cwd`'s alone if given."""
        history = self._history("session/list")
        root = None
        if cwd is not None:
            if not os.path.isabs(cwd):
                raise invalid_params(f"cwd: must be an absolute path, got {cwd!r}")
            root = os.path.realpath(cwd)
        try:
            return session_page(history, root, cursor)
        except BadCursor as exc:
            raise invalid_params(str(exc)) from None

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: Sequence[McpServer] | None = None,
        additional_directories: list[str] | None = None,
        **kwargs: Any,
    ) -> LoadSessionResponse:
        """`session/load`: replay the stored conversation, then continue it on the next prompt."""
        sandbox_root = _sandbox_root(cwd, additional_directories)
        history = self._history("session/load")
        open_session = self.sessions.get(session_id)
        if open_session is not None and open_session.turn is not None:
            raise request_error(
                INVALID_REQUEST,
                "invalid request: a prompt is running in this session (send session/cancel first)",
                sessionId=session_id,
            )
        runs = _stored_session(history, session_id, sandbox_root, open_session)
        profile = _requested_profile(kwargs.get(META_KEY), self.manager.defaults)
        client_mcp = await _start_client_mcp(sandbox_root, mcp_servers or ())
        # Every update before the response: the client shows the conversation, then goes on.
        for update in replay(runs, self.manager.registry, sandbox_root):
            await self.client.session_update(session_id, update)
        if open_session is not None and open_session.client_mcp is not None:
            await open_session.client_mcp.close()
        latest = runs[-1].run_id if runs else None
        self.sessions[session_id] = AcpSession(
            session_id=session_id,
            sandbox_root=sandbox_root,
            automation_profile=profile,
            client_mcp=client_mcp,
            last_run_id=latest,
        )
        self._offer_editor(self.sessions[session_id])
        log.info("session %s loaded (%d runs), profile %s", session_id, len(runs), profile)
        advertise_commands(self.client, session_id, sandbox_root)
        return LoadSessionResponse(modes=_modes(profile))

    async def set_session_mode(
        self, session_id: str, mode_id: str, **kwargs: Any
    ) -> SetSessionModeResponse:
        """Change the automation profile; a prompt already running keeps the one it began with."""
        session = self._session(session_id)
        if mode_id not in AUTOMATION_PROFILES:
            raise invalid_params(
                f"modeId: unknown mode {mode_id!r}; choose one of {', '.join(AUTOMATION_PROFILES)}"
            )
        session.automation_profile = mode_id
        return SetSessionModeResponse()

    # -- prompts -----------------------------------------------------------------------------
    async def prompt(
        self, session_id: str, prompt: list[ContentBlock], **kwargs: Any
    ) -> PromptResponse:
        session = self._session(session_id)
        try:
            text = prompt_text(prompt, session.sandbox_root)
        except UnsupportedPrompt as exc:
            raise invalid_params(str(exc)) from None
        if session.turn is not None:
            raise request_error(
                INVALID_REQUEST,
                "invalid request: a prompt is already running in this session "
                "(send session/cancel first)",
                sessionId=session_id,
            )
        command = slash_command(text)
        if command is not None:
            return await run_slash_command(self.manager, self.client, session, command)
        # The session's first stored run carries its id: that is how the history knows it.
        run_id = session.session_id if session.last_run_id is None else new_run_id()
        turn = PromptTurn(self.client, session, run_id, self.manager.cancel)
        # The turn holds the session before the first await: a second prompt is refused and a
        # session/cancel reaches this turn, also while the run is being set up.
        session.turn = turn
        stored = self.manager.history is not None
        try:
            # A custom command's `/name arguments` is expanded by the core (RunManager.run).
            if turn.cancelled:  # cancelled before its run could start: nothing runs
                await turn.finish()
                return PromptResponse(stop_reason="cancelled")
            request = RunRequest(
                prompt=text,
                sandbox_root=session.sandbox_root,
                automation_profile=turn.automation_profile,
                run_id=run_id,
                # Stored: the core continues the session's last run (and checks it may); else
                # the session's own conversation goes on.
                continue_from=session.last_run_id if stored else None,
                conversation=() if stored else tuple(session.conversation),
                images=prompt_images(prompt),
                **session.run_options,
            )
            try:
                outcome = await self.manager.run(request, turn)
            except ServiceError as exc:
                await turn.finish()  # what the client saw of the run, before the error
                raise service_error(exc) from exc
        except BaseException:
            turn.abandon()
            if turn.run_started and stored:
                # A failed run is part of the conversation the history keeps: the next
                # prompt continues it, as a load of the session would.
                session.last_run_id = run_id
            raise
        finally:
            session.turn = None
        await turn.finish()
        result = outcome.result
        session.conversation = list(result.messages)
        session.last_run_id = run_id
        session.last_restore_id = None
        # A run that ended on its own just as the client cancelled still answers `cancelled`:
        # ACP clients rely on it to confirm the cancellation.
        reason = "cancelled" if turn.cancelled else stop_reason(result)
        return PromptResponse(stop_reason=reason, field_meta=_result_meta(result))

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        """`session/cancel`: the running prompt stops and answers `cancelled`."""
        if session_id not in self.sessions:
            log.warning("session/cancel for unknown session %s", session_id)
            return
        self.cancel_prompt(session_id)

    def cancel_prompt(self, session_id: str) -> None:
        """Stop the session's running prompt, if any; it answers `cancelled`."""
        session = self.sessions.get(session_id)
        if session is not None and session.turn is not None:
            session.turn.stop()

    def cancel_all(self) -> None:
        for session_id in self.sessions:
            self.cancel_prompt(session_id)

    def busy(self) -> list[str]:
        """The sessions with a prompt running."""
        return [sid for sid, session in self.sessions.items() if session.turn is not None]

    # -- ending ------------------------------------------------------------------------------
    async def aclose(self) -> None:
        """Stop every prompt and the servers the clients' sessions started."""
        self.cancel_all()
        for session in self.sessions.values():
            if session.client_mcp is not None:
                try:
                    await session.client_mcp.close()
                except Exception:
                    log.exception("stopping the MCP servers of session %s", session.session_id)

    def _offer_editor(self, session: AcpSession) -> None:
        """The editor's files and terminals, for the session's tools, where the client offers."""
        capabilities = self.client_capabilities
        session.files = EditorFiles.offered(self.client, session.session_id, capabilities)
        session.terminals = EditorTerminals.offered(
            self.client, session.session_id, capabilities, lambda: session.turn
        )

    def _history(self, method: str) -> RunHistory:
        history = self.manager.history
        if history is None:
            raise request_error(
                INVALID_REQUEST,
                f"invalid request: {method} needs the run history, which is off "
                "(--no-history, or its file could not be opened)",
            )
        return history

    def _session(self, session_id: str) -> AcpSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise invalid_params(f"sessionId: no session {session_id!r} (send session/new)")
        return session


def _sandbox_root(cwd: str, additional_directories: list[str] | None) -> str:
    if additional_directories:
        raise invalid_params(
            "additionalDirectories: not supported; the sandbox is the session's cwd alone"
        )
    # The core's check, as the daemon's sandboxRoot and the CLI's --sandbox get it.
    root, problem = check_sandbox_root(cwd)
    if problem is not None or cwd.startswith("file:"):
        raise invalid_params(f"cwd: {problem or f'must be an absolute path, got {cwd!r}'}")
    return root


def _stored_session(
    history: RunHistory, session_id: str, sandbox_root: str, open_session: AcpSession | None
) -> list[StoredRun]:
    """The runs of the stored session, first to newest; a RequestError when it cannot load."""
    conversation = history.get_conversation(session_id)
    if conversation is None:
        if open_session is not None and open_session.last_run_id is None:
            return []  # opened here, nothing stored yet: nothing to replay
        if NEW_SESSION_ID.fullmatch(session_id) and not history.has_run(session_id):
            # A `session/new` session not prompted yet, opened by another agent process (a
            # client such as acpx starts one per command): an empty session to go on with.
            return []
        raise request_error(
            RESOURCE_NOT_FOUND,
            f"no session {session_id!r} in the run history (session/list lists them)",
            sessionId=session_id,
        )
    if conversation.sandbox_root != sandbox_root:
        raise invalid_params(
            f"cwd: session {session_id!r} ran in {conversation.sandbox_root!r}, "
            f"not {sandbox_root!r}"
        )
    if conversation.latest_status == "running":
        raise request_error(
            RUN_STILL_RUNNING,
            f"session {session_id!r} has a prompt running (in another agent)",
            sessionId=session_id,
            runId=conversation.latest_run_id,
        )
    runs = [history.get_run(run_id) for run_id in history.chain(conversation.latest_run_id)]
    return [run for run in runs if run is not None]


def _requested_profile(meta: Any, defaults: RunDefaults) -> str:
    """`_meta.cleveragents.automationProfile` of `session/new`, else the default."""
    requested = meta.get("automationProfile") if isinstance(meta, dict) else None
    if requested is None:
        return defaults.automation_profile
    if requested not in AUTOMATION_PROFILES:
        raise invalid_params(
            f"_meta.{META_KEY}.automationProfile: unknown profile {requested!r}; choose one "
            f"of {', '.join(AUTOMATION_PROFILES)}"
        )
    return str(requested)


def _requested_run_options(meta: Any) -> dict[str, Any]:
    """The run settings the settings table lets `session/new`'s `_meta.cleveragents` set
    (beside `automationProfile`), as `RunRequest` fields; RequestError naming a bad one."""
    if not isinstance(meta, dict):
        return {}
    options: dict[str, Any] = {}
    for row in rows_for(Level.ACP):
        value = meta.get(row.option) if row.option else None
        if value is None or row.name == "automation_profile":
            continue
        where = f"_meta.{META_KEY}.{row.option}"
        if row.kind == "yes/no":
            if not isinstance(value, bool):
                raise invalid_params(f"{where}: expected true or false, got {value!r}")
        else:
            if isinstance(value, bool) or not isinstance(value, int):
                raise invalid_params(f"{where}: expected an integer, got {value!r}")
            problem = check_setting(row, value)  # the core's, as for the other fronts
            if problem:
                raise invalid_params(f"{where}: {problem}")
        options[row.name] = value
    return options


def _modes(current: str) -> SessionModeState:
    return SessionModeState(
        current_mode_id=current,
        available_modes=[
            SessionMode(id=profile, name=profile, description=MODE_DESCRIPTIONS.get(profile))
            for profile in AUTOMATION_PROFILES
        ],
    )


async def _start_client_mcp(sandbox_root: str, servers: Sequence[McpServer]) -> McpToolset | None:
    """Start the stdio MCP servers a client listed; RequestError when one does not start."""
    stdio: list[McpServerConfig] = []
    for server in servers:
        if not isinstance(server, McpServerStdio):
            log.warning("MCP server %r skipped: only stdio servers are supported", server.name)
            continue
        stdio.append(
            McpServerConfig(
                name=server.name,
                command=server.command,
                args=tuple(server.args),
                env={variable.name: variable.value for variable in server.env},
                config_path=CLIENT_MCP_CONFIG,
            )
        )
    if not stdio:
        return None
    toolset = McpToolset(sandbox_root, config=McpConfig(CLIENT_MCP_CONFIG, tuple(stdio)))
    try:
        await toolset.open()
    except McpError as exc:
        raise request_error(TOOLS_UNAVAILABLE, str(exc), servers=[s.name for s in stdio]) from exc
    return toolset


def _result_meta(result: ToolCallRunResult) -> dict[str, Any]:
    return {
        META_KEY: {
            "runId": result.run_id,
            "iterations": result.iterations,
            "toolCalls": len(result.tool_call_history),
            "usage": usage_meta(result.usage, result.cost_usd),
        }
    }
