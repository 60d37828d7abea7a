"""The ACP agent: initialize, session/new, session/set_mode, session/prompt, session/cancel.

Each prompt is one run of the same runtime the CLI and the JSON-RPC daemon use (registry,
provider, automation profiles, run history, the sandbox's `.mcp.json` servers), with the
session's `cwd` as the sandbox root and the session's conversation so far as its history.

- The automation profile is the session's mode (`read-only`, `ask`, `auto-edit`,
  `full-auto`): `$CLEVERAGENTS_PROFILE` (default `ask`), `_meta.cleveragents.automationProfile`
  in `session/new`, or `session/set_mode` later.
- MCP servers: the sandbox's `.mcp.json` ones, as for every run (once the user trusts that
  file: asked with `session/request_permission`; never under `read-only`), plus the stdio
  servers the client lists in `session/new`, which run while the session lives. HTTP and SSE
  servers are not advertised (`mcpCapabilities`) and are skipped.
- Errors: a prompt whose provider cannot be set up, whose tools cannot start, or whose run
  fails (the provider gave up) is answered with a JSON-RPC error, with the daemon's codes.
"""

from __future__ import annotations

import logging
import os
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
    McpCapabilities,
    McpServerStdio,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    SessionMode,
    SessionModeState,
    SetSessionModeResponse,
    SseMcpServer,
)

from .. import __version__
from ..assembly import build_runtime
from ..mcp import (
    McpConfig,
    McpError,
    McpServerConfig,
    McpToolset,
    add_mcp_tools,
    registry_with_mcp_tools,
)
from ..service.errors import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    RUN_FAILED,
    TOOLS_UNAVAILABLE,
    ServiceError,
)
from ..service.runs import RunManager
from ..service.settings import RunDefaults
from ..service.trust import with_untrusted_note
from ..tool.context import ToolActorContext
from ..tool.events import RunObserver
from ..tool.llm import LLMCaller
from ..tool.policy import AUTOMATION_PROFILES
from ..tool.records import ToolCallRunResult
from ..tool.runtime import new_run_id
from .commands import advertise_commands, run_slash_command, slash_command
from .prompts import ContentBlock, UnsupportedPrompt, prompt_text
from .session import AcpSession, PromptTurn
from .updates import META_KEY, stop_reason

log = logging.getLogger(__name__)

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


class CleverAgentsAgent:
    """The agent side of one ACP connection (the SDK routes requests to these methods)."""

    def __init__(self, manager: RunManager) -> None:
        # The core's run manager: settings, tools, history, MCP servers and tool threads.
        self.manager = manager
        self.sessions: dict[str, AcpSession] = {}
        self._client: Client | None = None

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
        defaults = self.manager.defaults
        return InitializeResponse(
            # Version 1 is the only one we speak; a client that wants another disconnects.
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                load_session=False,
                prompt_capabilities=PromptCapabilities(
                    image=False, audio=False, embedded_context=True
                ),
                mcp_capabilities=McpCapabilities(http=False, sse=False),
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
        sandbox_root = _sandbox_root(cwd)
        if additional_directories:
            raise invalid_params(
                "additionalDirectories: not supported; the sandbox is the session's cwd alone"
            )
        profile = _requested_profile(kwargs.get(META_KEY), self.manager.defaults)
        client_mcp = await _start_client_mcp(sandbox_root, mcp_servers or ())
        session_id = f"sess_{os.urandom(12).hex()}"
        self.sessions[session_id] = AcpSession(
            session_id=session_id,
            sandbox_root=sandbox_root,
            automation_profile=profile,
            client_mcp=client_mcp,
        )
        log.info("session %s in %s, profile %s", session_id, sandbox_root, profile)
        advertise_commands(self.client, session_id)  # `/undo`, `/restore N`: sent after this
        return NewSessionResponse(session_id=session_id, modes=_modes(profile))

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
        llm = self._llm_caller()
        turn = PromptTurn(self.client, session, self.manager.defaults.approval_timeout_s)
        session.turn = turn
        run_id = new_run_id()
        try:
            result = await self._run(session, turn, llm, text, run_id)
        except BaseException:
            turn.abandon()
            raise
        finally:
            session.turn = None
        session.conversation = list(result.messages)
        session.last_run_id = run_id
        session.last_restore_id = None
        # A run that ended on its own just as the client cancelled still answers `cancelled`:
        # ACP clients rely on it to confirm the cancellation.
        reason = "cancelled" if turn.cancel.cancelled else stop_reason(result)
        return PromptResponse(stop_reason=reason, field_meta=_result_meta(result))

    async def _run(
        self, session: AcpSession, turn: PromptTurn, llm: LLMCaller, text: str, run_id: str
    ) -> ToolCallRunResult:
        manager = self.manager
        defaults = manager.defaults
        history = manager.stored
        observers: list[RunObserver] = [turn.observe]
        if history is not None:
            # The history first: a record the client has seen is queued, and a read waits
            # for what is queued.
            observers.insert(0, history)
            if session.last_run_id is not None:
                try:
                    await history.mark_continuation(run_id, session.last_run_id)
                except Exception as exc:  # the earlier run was not stored: keep going
                    log.warning("run %s not linked to %s: %s", run_id, session.last_run_id, exc)
        checkpoints = manager.undo.track(run_id, session.sandbox_root)
        try:
            async with manager.sandbox_mcp(
                session.sandbox_root, turn.automation_profile, turn.ask_trust
            ) as sandbox_mcp:
                registry = registry_with_mcp_tools(manager.registry, sandbox_mcp)
                if session.client_mcp is not None:
                    add_mcp_tools(registry, session.client_mcp)
                turn.registry = registry
                runtime = build_runtime(
                    llm,
                    registry,
                    max_iterations=defaults.max_iterations,
                    system_prompt=with_untrusted_note(defaults.system_prompt, sandbox_mcp.config),
                    runner=manager.runner_for(registry),
                )
                result = await runtime.arun_tool_loop(
                    text,
                    ToolActorContext(
                        sandbox_root=session.sandbox_root,
                        automation_profile=turn.automation_profile,
                    ),
                    history=session.conversation,
                    observers=observers,
                    approver=turn.approve,
                    cancel=turn.cancel,
                    run_id=run_id,
                    before_mutation=checkpoints.before_mutation,
                )
        except McpError as exc:
            await turn.finish()
            raise request_error(
                TOOLS_UNAVAILABLE, str(exc), sandboxRoot=session.sandbox_root
            ) from exc
        except Exception as exc:
            log.warning("run %s failed: %s: %s", run_id, type(exc).__name__, exc)
            await turn.finish()
            raise request_error(
                RUN_FAILED,
                f"the run failed: {type(exc).__name__}: {exc}",
                runId=run_id,
                errorType=type(exc).__name__,
            ) from exc
        finally:
            await checkpoints.finish()  # the state the run left, whatever ended it
        await turn.finish()
        return result

    def _llm_caller(self) -> LLMCaller:
        defaults = self.manager.defaults
        try:
            return self.manager.llm_caller(
                defaults.provider, defaults.model, defaults.provider_options()
            )
        except ServiceError as exc:
            raise request_error(exc.code, exc.message, **(exc.data or {})) from exc

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        """`session/cancel`: the running prompt stops and answers `cancelled`."""
        session = self.sessions.get(session_id)
        if session is None:
            log.warning("session/cancel for unknown session %s", session_id)
            return
        if session.turn is not None:
            session.turn.cancel.cancel()

    # -- ending ------------------------------------------------------------------------------
    async def aclose(self) -> None:
        """Stop every prompt and the servers the clients' sessions started."""
        for session in self.sessions.values():
            if session.turn is not None:
                session.turn.cancel.cancel()
        for session in self.sessions.values():
            if session.client_mcp is not None:
                try:
                    await session.client_mcp.close()
                except Exception:
                    log.exception("stopping the MCP servers of session %s", session.session_id)

    def _session(self, session_id: str) -> AcpSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise invalid_params(f"sessionId: no session {session_id!r} (send session/new)")
        return session


def _sandbox_root(cwd: str) -> str:
    if not os.path.isabs(cwd):
        raise invalid_params(f"cwd: must be an absolute path, got {cwd!r}")
    root = os.path.realpath(cwd)
    if not os.path.isdir(root):
        raise invalid_params(f"cwd: no such folder: {cwd!r}")
    return root


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
            "usage": {
                "inputTokens": result.usage.input_tokens,
                "outputTokens": result.usage.output_tokens,
            },
        }
    }
