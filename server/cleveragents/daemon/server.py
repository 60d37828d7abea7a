"""`cleveragents serve`: the JSON-RPC daemon (LSP base protocol and lifecycle, on pygls).

Bytes come in through our own framing reader (`jsonrpc_io.py`) and each message passes the
checks pygls has no place for (ARCHITECTURE.md, "The daemon and pygls"): the envelope
(-32600), the lifecycle (-32002 before `initialize`, -32600 after `shutdown`) and methods
pygls would not answer (-32601). Then pygls structures it (our methods strictly, through
`pygls_overrides.py`: -32602 naming every field), dispatches it to the `@server.feature`
handlers below, owns their tasks (so `$/cancelRequest` cancels them), answers, and runs
`shutdown` and `exit`. Handlers stay thin: the work is the core's (`service/`), reached
through `runs.py`, which translates."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import inspect
import json
import logging
import os
import signal
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer

from .. import __version__
from ..jsonrpc_errors import as_jsonrpc, wire_field
from ..jsonrpc_io import (
    Frame,
    FrameError,
    FrameParser,
    StreamWriterAdapter,
    ThreadedWriter,
    start_fd_reader,
)
from ..protocol import wire
from ..protocol.converter import structure_partial, unstructure, without_problems_at
from ..providers import PROVIDERS
from ..service.errors import ErrorKind, ParamsError, ServiceError
from ..service.history_on_demand import HistoryOnDemand
from ..service.processes import claim_stdio, kill_descendants
from ..service.settings import ClientOptions, SessionSettings
from ..tool.policy import AUTOMATION_PROFILES
from ..tool.registry import ToolRegistry
from ..toolsets import ToolLoadError, build_registry, names_without_loading
from .config import (
    client_options,
    declared_client_tools,
    initialization_settings,
    parse_initialization_options,
)
from .connection import Connection
from .encoded import EncodedResult
from .options import parse_serve_options
from .pygls_overrides import (
    CUSTOM_REQUESTS,
    DaemonProtocol,
    DaemonServer,
    ExpectedErrors,
    daemon_converter,
    params_error,
)

if TYPE_CHECKING:
    from ..service.runs import RunManager

log = logging.getLogger(__name__)

State = Literal["new", "initializing", "initialized", "shutdown"]

STOP_GRACE_S = 5.0
FLUSH_TIMEOUT_S = 2.0
_MISSING = object()


class Daemon:
    """One client session: framing in, checks, pygls dispatch, runs."""

    def __init__(
        self,
        writer: ThreadedWriter | StreamWriterAdapter,
        history: HistoryOnDemand,
        env: dict[str, str] | None = None,
    ) -> None:
        self.history = history
        self.env = dict(os.environ) if env is None else env
        self.state: State = "new"
        # Built by the first request that needs it (`_manager`), from what `initialize` set:
        # `initialize` answers without importing the run machinery or the tools (issue 21).
        self.manager: RunManager | None = None
        self._make_manager: Callable[[], RunManager] | None = None
        # What `initialize` set, for `cleveragents/settings` (which names each level).
        self.client_options = ClientOptions()
        self.exit_code: int | None = None
        self.stopped = asyncio.Event()
        self.parser = FrameParser()
        self.server = DaemonServer(
            "cleveragents",
            __version__,
            text_document_sync_kind=lsp.TextDocumentSyncKind.None_,
            protocol_cls=DaemonProtocol,
            converter_factory=daemon_converter,
        )
        self.protocol: DaemonProtocol = self.server.protocol  # type: ignore[assignment]
        self.protocol.set_writer(writer, include_headers=True)
        self.connection = Connection(writer, self.protocol)
        self._register_features()

    # -- bytes in ----------------------------------------------------------------------------
    def feed(self, data: bytes) -> None:
        """Bytes from the client; b"" at the end of the stream."""
        items = self.parser.feed(data) if data else self.parser.eof()
        for item in items:
            self._on_item(item)
        if not data:
            self.stop(0 if self.state == "shutdown" else 1, "the client closed the connection")

    def _on_item(self, item: Frame | FrameError) -> None:
        if isinstance(item, FrameError):
            self.connection.send_error(None, wire.PARSE_ERROR, f"parse error: {item.message}")
            return
        try:
            message = json.loads(item.body)
        except (ValueError, RecursionError) as exc:
            self.connection.send_error(
                None, wire.PARSE_ERROR, f"parse error: the body is not valid JSON: {exc}"
            )
            return
        try:
            self._dispatch(message)
        except Exception as exc:  # a bug of ours must not take the session down
            log.exception("failed to handle a message")
            msg_id = message.get("id") if isinstance(message, dict) else None
            if isinstance(message, dict) and "method" in message and _valid_id(msg_id):
                self.connection.send_error(msg_id, wire.INTERNAL_ERROR, f"internal error: {exc}")

    # -- checks ------------------------------------------------------------------------------
    def _dispatch(self, message: Any) -> None:
        reply = self.connection.send_error
        if isinstance(message, list):
            reply(None, wire.INVALID_REQUEST, "invalid request: batches are not supported")
            return
        if not isinstance(message, dict):
            reply(None, wire.INVALID_REQUEST, "invalid request: a message must be a JSON object")
            return
        has_id = "id" in message
        msg_id = message.get("id")
        reply_id = msg_id if _valid_id(msg_id) else None
        if message.get("jsonrpc") != "2.0":
            reply(reply_id, wire.INVALID_REQUEST, 'invalid request: "jsonrpc" must be "2.0"')
            return
        if "method" not in message:
            if has_id and _valid_id(msg_id) and (("result" in message) != ("error" in message)):
                if self.state == "shutdown":  # nothing waits any more; pygls would warn
                    log.debug("ignoring a response to %r after shutdown", msg_id)
                else:
                    self.connection.answered(message)  # pygls settles our request's future
                return
            reply(
                reply_id,
                wire.INVALID_REQUEST,
                'invalid request: a message needs "method", or "id" with "result" or "error"',
            )
            return
        method = message["method"]
        if not isinstance(method, str) or not method:
            reply(reply_id, wire.INVALID_REQUEST, 'invalid request: "method" must be a string')
            return
        if has_id and not _valid_id(msg_id):
            reply(
                None, wire.INVALID_REQUEST, 'invalid request: "id" must be an integer or a string'
            )
            return
        params = message.get("params", _MISSING)
        if params is None:  # not JSON-RPC 2.0, but what some clients send for "no params"
            params = _MISSING
        if params is not _MISSING and not isinstance(params, dict | list):
            reply(
                reply_id,
                wire.INVALID_REQUEST,
                'invalid request: "params" must be an object or an array',
            )
            return
        if has_id:
            assert msg_id is not None
            self._on_request(msg_id, method, message)
        else:
            self._on_notification(method, message)

    def _on_request(self, msg_id: int | str, method: str, message: dict[str, Any]) -> None:
        reply = self.connection.send_error
        if method == lsp.INITIALIZE:
            if self.state != "new":
                reply(msg_id, wire.INVALID_REQUEST, "invalid request: already initialized")
                return
            self.state = "initializing"
            if not self._to_pygls(message, msg_id):
                self.state = "new"
            return
        if self.state in ("new", "initializing"):
            reply(
                msg_id,
                wire.SERVER_NOT_INITIALIZED,
                f"server not initialized: send initialize before {method}",
            )
            return
        if self.state == "shutdown":
            reply(
                msg_id,
                wire.INVALID_REQUEST,
                f"invalid request: the server is shutting down ({method})",
            )
            return
        custom = wire.METHODS_BY_NAME.get(method)
        if custom is not None and method not in CUSTOM_REQUESTS:
            reply(
                msg_id,
                wire.METHOD_NOT_FOUND,
                f"method not found: {method} is sent by the server, not to it",
            )
            return
        if method == lsp.SHUTDOWN:
            self.state = "shutdown"
        if not self._pygls_handles(method):
            reply(msg_id, wire.METHOD_NOT_FOUND, f"method not found: {method}")
            return
        self._to_pygls(message, msg_id)

    def _on_notification(self, method: str, message: dict[str, Any]) -> None:
        # `exit` (its code: 0 after `shutdown`, else 1) and `$/cancelRequest` are pygls's.
        if method in (lsp.EXIT, lsp.CANCEL_REQUEST):
            self._to_pygls(message, None)
            return
        if self.state in ("new", "initializing"):
            log.warning("ignoring notification %s before initialize", method)
            return
        if method in wire.METHODS_BY_NAME:
            log.warning("ignoring %s sent as a notification; it is a request", method)
            return
        if self._pygls_handles(method):
            self._to_pygls(message, None)
        elif not method.startswith("$/"):
            log.info("ignoring unknown notification %s", method)

    def _value_problems(self, method: str, params: Any, cls: type) -> list[str]:
        """Bad values among the params that did fit their types, so one -32602 names them all."""
        check = _VALUE_CHECKS.get(method)
        partial, bad = structure_partial(params, cls)
        if check is None or partial is None or self._make_manager is None:
            return []
        try:
            check(self._manager(), partial)
        except ServiceError as exc:
            if exc.kind is ErrorKind.INVALID_PARAMS:
                return without_problems_at(exc.renamed(wire_field).problems, bad)
        except ParamsError as exc:
            return without_problems_at(exc.problems, bad)
        return []

    def _pygls_handles(self, method: str) -> bool:
        features = self.protocol.fm
        return method in features.builtin_features or method in features.features

    def _to_pygls(self, message: dict[str, Any], msg_id: int | str | None) -> bool:
        """Structure an LSP message (top level only) and let pygls dispatch it."""
        if "params" in message and message["params"] is None:
            message = {k: v for k, v in message.items() if k != "params"}
        try:
            structured = self.protocol.structure_message(message)
        except JsonRpcException as exc:
            strict = params_error(exc)
            if strict is not None and msg_id is not None:
                custom = CUSTOM_REQUESTS[message["method"]]
                problems = strict.problems
                if "params" in message and custom.params is not None:
                    problems = problems + self._value_problems(
                        custom.name, message["params"], custom.params
                    )
                self.connection.send_error(
                    msg_id,
                    wire.INVALID_PARAMS,
                    "invalid params: " + "; ".join(problems),
                    {"problems": problems},
                )
            elif msg_id is not None:
                code = wire.INVALID_PARAMS
                self.connection.send_error(msg_id, code, f"invalid params: {exc.message}")
            else:
                log.warning("ignoring malformed %s: %s", message.get("method"), exc.message)
            return False
        try:
            self.protocol.handle_message(structured)
        except SystemExit as exc:
            # pygls ends the session with `sys.exit(0 or 1)` in `lsp_exit`; its code is the
            # exit code, and the daemon winds down (runs, MCP servers, the writer) first.
            self.stop(exc.code if isinstance(exc.code, int) else 1, "exit")
        return True

    # -- handlers ----------------------------------------------------------------------------
    def _register_features(self) -> None:
        server = self.server

        @server.feature(lsp.INITIALIZE)
        async def initialize(ls: LanguageServer, params: lsp.InitializeParams) -> None:
            self._initialize(params)

        @server.feature(lsp.SHUTDOWN)
        async def shutdown(ls: LanguageServer, params: Any) -> None:
            await self.wind_down()

        @server.feature(lsp.WINDOW_WORK_DONE_PROGRESS_CANCEL)
        def cancel_progress(ls: LanguageServer, params: lsp.WorkDoneProgressCancelParams) -> None:
            if self.manager is not None:
                self.manager.cancel_by_token(params.token)

        @server.feature("cleveragents/run")
        async def run(ls: LanguageServer, params: wire.RunParams) -> Any:
            return await self._call(lambda m: _runs().run(m, params, self.connection))

        @server.feature("cleveragents/cancel")
        async def cancel(ls: LanguageServer, params: wire.CancelParams) -> Any:
            return await self._call(lambda m: _runs().cancel(m, params))

        @server.feature("cleveragents/tools")
        async def tools(ls: LanguageServer, params: wire.ToolsParams) -> Any:
            return await self._call(lambda m: _runs().tools(m, params, self.connection))

        @server.feature("cleveragents/listCommands")
        async def list_commands(ls: LanguageServer, params: wire.ListCommandsParams) -> Any:
            return await self._call(lambda m: _runs().list_commands(m, params))

        @server.feature("cleveragents/runs")
        async def list_runs(ls: LanguageServer, params: wire.RunsParams) -> Any:
            return await self._call(lambda m: _runs().list_runs(m, params))

        @server.feature("cleveragents/getRun")
        async def get_run(ls: LanguageServer, params: wire.GetRunParams) -> Any:
            return await self._call(lambda m: _runs().get_run(m, params))

        @server.feature("cleveragents/settings")
        async def settings(ls: LanguageServer, params: wire.SettingsParams) -> Any:
            return await self._call(
                lambda m: _runs().settings(m, params, self.client_options, self.env)
            )

        @server.feature("cleveragents/restore")
        async def restore(ls: LanguageServer, params: wire.RestoreParams) -> Any:
            return await self._call(lambda m: _runs().restore(m, params))

    async def _call(self, work: Callable[[RunManager], Any]) -> Any:
        """A handler's work (a value or an awaitable) as wire data; ServiceError as its error."""
        try:
            value = work(self._manager())
            if inspect.isawaitable(value):
                value = await value
            return value if isinstance(value, EncodedResult) else unstructure(value)
        except ServiceError as exc:
            code, message, data = as_jsonrpc(exc)
            raise JsonRpcException(message, code, data) from None

    def _initialize(self, params: lsp.InitializeParams) -> None:
        try:
            settings = initialization_settings(
                params.initialization_options,
                self.env,
                capabilities_experimental=params.capabilities.experimental,
            )
            tools = settings.tools
            names = names_without_loading(
                tools.modules, builtins=tools.builtins, plugins=tools.plugins
            )
            # Tool modules or plugins: built now, so one that fails to load is this answer's
            # error. Built-ins alone: their names are known, the first request builds them.
            registry = self._registry(settings) if names is None else None
            taken = registry.names() if registry is not None else list(names or ())
            client_tools = declared_client_tools(params.capabilities.experimental, taken)
        except ParamsError as exc:
            self.state = "new"  # the client may fix its options and try again
            raise JsonRpcException(
                f"invalid params: {exc}", wire.INVALID_PARAMS, {"problems": exc.problems}
            ) from None
        except Exception:
            self.state = "new"
            raise
        self._make_manager = lambda: self._new_manager(settings, registry)
        self.client_options = client_options(
            parse_initialization_options(params.initialization_options)
        )
        self.connection.approvals = settings.approvals
        self.connection.trust = settings.trust_prompts
        self.connection.client_tools = tuple(client_tools)
        self.protocol.capability = unstructure(
            wire.ServerCapability(
                protocol_version=wire.PROTOCOL_VERSION,
                server_version=__version__,
                providers=list(PROVIDERS),
                automation_profiles=list(AUTOMATION_PROFILES),
                approvals=settings.approvals,
                trust=settings.trust_prompts,
                client_tools=[tool.name for tool in client_tools],
            )
        )
        self.state = "initialized"
        # What start-up built lives as long as the daemon: out of the collector's way, a full
        # collection (while a large run is read back, say) does not walk it every time.
        gc.freeze()

    def _manager(self) -> RunManager:
        """The session's RunManager, built on the first request that needs it."""
        if self.manager is None:
            assert self._make_manager is not None  # requests before initialize never get here
            self.manager = self._make_manager()
            gc.freeze()  # as at `initialize`: what it built lives as long as the daemon
        return self.manager

    def _new_manager(self, settings: SessionSettings, registry: ToolRegistry | None) -> RunManager:
        from ..service.runs import RunManager

        if registry is None:  # `initialize` found no plugins: none is looked for again
            registry = self._registry(settings, plugins=False)
        return RunManager(registry, settings.defaults, self.history.get())

    @staticmethod
    def _registry(settings: SessionSettings, *, plugins: bool = True) -> ToolRegistry:
        tools = settings.tools
        try:
            return build_registry(
                tools.modules,
                builtins=tools.builtins,
                plugins=tools.plugins and plugins,
                command_policy=settings.defaults.command_policy,
            )
        except ToolLoadError as exc:
            raise ParamsError([f"initializationOptions.toolModules: {exc}"]) from None
        except ImportError as exc:
            raise ParamsError([f"initializationOptions.builtinTools: {exc}"]) from None

    # -- ending ------------------------------------------------------------------------------
    def stop(self, code: int, reason: str) -> None:
        if self.exit_code is None:
            log.info("stopping: %s", reason)
            self.exit_code = code
        self.stopped.set()

    async def wind_down(self) -> None:
        """Stop every run and wait (a while) for them to record their end."""
        if self.manager is None:
            return
        self.manager.cancel_all()
        if not await self.manager.wait_idle(STOP_GRACE_S):
            log.warning(
                "runs still going after %g s: %s",
                STOP_GRACE_S,
                ", ".join(self.manager.active_run_ids),
            )

    async def close(self) -> None:
        await self.wind_down()
        self.connection.fail_pending("the daemon is stopping")
        if self.manager is not None:
            await self.manager.aclose()  # MCP servers stop cleanly before the sweep below
        kill_descendants()
        await asyncio.get_running_loop().run_in_executor(
            None, self.connection.writer.flush, FLUSH_TIMEOUT_S
        )


def _runs() -> types.ModuleType:
    """The run methods' translation (`runs.py`), imported by the first method that needs it:
    `initialize` does not, so a cold start does not pay for it (issue 21)."""
    from . import runs

    return runs


def _valid_id(value: Any) -> bool:
    return isinstance(value, int | str) and not isinstance(value, bool)


# Value checks of a method's params, run on the fields that fit when others did not.
_VALUE_CHECKS: dict[str, Callable[[RunManager, Any], object]] = {
    "cleveragents/run": lambda manager, params: _runs().plan(manager, params),
    "cleveragents/runs": lambda manager, params: _runs().check_list_runs(manager, params),
}


# -- entry points ----------------------------------------------------------------------------


async def serve_stdio(in_fd: int, out_fd: int, history: HistoryOnDemand) -> int:
    loop = asyncio.get_running_loop()
    daemon: Daemon | None = None

    def broken() -> None:
        loop.call_soon_threadsafe(_stop, daemon, 1, "the client stopped reading")

    writer = ThreadedWriter(out_fd, on_broken=broken)
    daemon = Daemon(writer, history)
    start_fd_reader(in_fd, loop, daemon.feed)
    _handle_signals(loop, daemon)
    await daemon.stopped.wait()
    _ignore_signals(loop)
    await daemon.close()
    writer.close()
    return daemon.exit_code or 0


def _stop(daemon: Daemon | None, code: int, reason: str) -> None:
    if daemon is not None:
        daemon.stop(code, reason)


async def serve_stream(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    received: bytes,
    history: HistoryOnDemand,
) -> int:
    """Serve one client admitted on a TCP port or a Unix socket (`remote.py`), then exit.

    `received` is what admitting it has already read: its `initialize`, maybe more.
    """
    daemon = Daemon(StreamWriterAdapter(writer), history)
    _handle_signals(asyncio.get_running_loop(), daemon)

    async def pump() -> None:
        if received:
            daemon.feed(received)
        while True:
            try:
                chunk = await reader.read(65536)
            except (ConnectionError, OSError):
                chunk = b""
            daemon.feed(chunk)
            if not chunk:
                return

    pumping = asyncio.ensure_future(pump())
    await daemon.stopped.wait()
    _ignore_signals(asyncio.get_running_loop())
    pumping.cancel()
    await daemon.close()
    with contextlib.suppress(Exception):
        await writer.drain()
    writer.close()
    return daemon.exit_code or 0


def _handle_signals(loop: asyncio.AbstractEventLoop, daemon: Daemon) -> None:
    for signum in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signum, daemon.stop, 128 + signum, f"signal {signum}")


def _ignore_signals(loop: asyncio.AbstractEventLoop) -> None:
    """Once stopping, the exit code is decided and a signal changes nothing: ignored for the
    rest of the process's life. Left to the loop, its handlers would be removed when it closes
    (the default action back), and an editor's SIGTERM right after it closed our stdin would
    kill the process by the signal while it winds down."""
    for signum in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.remove_signal_handler(signum)
        with contextlib.suppress(ValueError, OSError):  # not the main thread: nothing to do
            signal.signal(signum, signal.SIG_IGN)


def _configure_logging(level_name: str) -> None:
    level = getattr(logging, level_name.upper())
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("cleveragents %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # pygls logs every message body at INFO; only a debugging session wants that.
    logging.getLogger("pygls").setLevel(level if level <= logging.DEBUG else logging.WARNING)
    logging.getLogger("pygls.protocol.json_rpc").addFilter(ExpectedErrors())


def main(args: list[str]) -> int:
    """`cleveragents serve [--stdio | --tcp HOST:PORT | --socket PATH] [--history PATH]
    [--log-level L]`."""
    options = parse_serve_options(args)
    if options.acp:  # the launcher (`cleveragents serve --acp`) starts ACP mode, not this
        print("cleveragents: --acp: run `cleveragents serve --acp`", file=sys.stderr)
        return 2
    _configure_logging(options.log_level)
    if options.tcp or options.socket:
        return _serve_listener(options.tcp, options.socket, options.history)
    history = HistoryOnDemand(options.history)
    try:
        in_fd, out_fd = claim_stdio()
        return asyncio.run(serve_stdio(in_fd, out_fd, history))
    finally:
        history.close()


def _serve_listener(tcp: str | None, socket_path: str | None, history_path: str | None) -> int:
    """`--tcp` or `--socket`: the listener and its lock are `remote.py`'s."""
    from . import remote  # only now: stdio start-up does not pay for it

    try:
        endpoint: remote.Endpoint = (
            remote.parse_tcp_address(tcp) if tcp else remote.SocketEndpoint(Path(socket_path or ""))
        )
    except ValueError as exc:
        print(f"cleveragents: {exc}", file=sys.stderr)
        return 2
    history = HistoryOnDemand(history_path)

    async def session(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter, received: bytes
    ) -> int:
        return await serve_stream(reader, writer, received, history)

    try:
        return asyncio.run(remote.serve_endpoint(endpoint, session))
    except (remote.RemoteError, OSError) as exc:
        print(f"cleveragents: {exc}", file=sys.stderr)
        return 2
    finally:
        history.close()
