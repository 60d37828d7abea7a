"""`cleveragents serve --acp`: the agent behind the Agent Client Protocol, on stdio.

Editors that speak ACP (Zed, JetBrains IDEs, Neovim with CodeCompanion or avante, Emacs)
start this command and exchange JSON-RPC 2.0 messages with it, one a line, on its stdin and
stdout. Settings come from the environment, exactly as for the JSON-RPC daemon (the
variables of `settings_table.py`, listed in docs/settings.md), and `session/new`'s
`_meta.cleveragents`; API keys only from ANTHROPIC_API_KEY / OPENAI_API_KEY. Logs go
to stderr; stdout carries the protocol alone (tools' prints and child processes' output land
on stderr).

The session ends when the client closes our stdin, on SIGINT or SIGTERM, or when the client
stops reading. Each way, running prompts are cancelled, answered with stop reason `cancelled`
(when the client still reads) and recorded as cancelled; then MCP servers and processes tools
left behind are stopped. Exit code: 0 when the client closed our stdin first, 128 + the
signal's number after SIGINT (130) or SIGTERM (143), 1 when the client stopped reading.
The signal handlers stay for the whole life of the process, so a signal during start-up or
shut-down (an editor's SIGTERM right after it closed our stdin, a second Ctrl+C) ends it the
same clean way, never by the signal's default action or a KeyboardInterrupt traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from collections.abc import Callable
from types import FrameType
from typing import cast

from ..service.errors import ParamsError
from ..service.history import RunHistory
from ..service.processes import claim_stdio, kill_descendants
from ..service.runs import RunManager
from ..service.settings import ClientOptions, RunDefaults, open_history, session_settings
from ..settings_table import ENV_HISTORY, ENV_PREFIX
from ..tool.registry import ToolRegistry
from ..toolsets import ToolLoadError, build_registry
from .transport import StdioTransport

log = logging.getLogger(__name__)

FLUSH_TIMEOUT_S = 2.0
MAX_TOOL_WORKERS = 32
# How long running prompts get to wind down, answer and record their end when we stop.
STOP_GRACE_S = 5.0


class StopSignals:
    """SIGINT and SIGTERM, handled from `install()` until the process exits.

    Process-level handlers rather than the event loop's: those exist only while the loop
    runs (closing it restores the default actions), which left windows at start-up and
    shut-down where SIGTERM killed the process and SIGINT raised KeyboardInterrupt.
    """

    def __init__(self) -> None:
        self.first: int | None = None
        self._target: Callable[[int], None] | None = None

    def install(self) -> None:
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, self._handle)

    def attach(self, loop: asyncio.AbstractEventLoop, stop: Callable[[int, str], None]) -> None:
        """Route signals to `stop` on `loop` (one that came before is delivered now)."""

        def deliver(signum: int) -> None:
            name = signal.Signals(signum).name
            try:
                loop.call_soon_threadsafe(stop, 128 + signum, name)
            except RuntimeError:  # the loop has closed: we are exiting anyway
                pass

        self._target = deliver
        if self.first is not None:
            deliver(self.first)

    def detach(self) -> None:
        """Stop routing: the exit code is decided, so a signal from now on is ignored (left
        to Python, the handlers would be reset to the default action while the interpreter
        shuts down, and a SIGTERM then would kill the process by the signal)."""
        self._target = None
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, signal.SIG_IGN)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.first is None:
            self.first = signum
        target = self._target
        if target is not None:
            target(signum)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cleveragents serve --acp",
        description="Serve the Agent Client Protocol (JSON-RPC 2.0, one message a line) on "
        f"stdin and stdout, for editors such as Zed. Settings come from the {ENV_PREFIX}* "
        "environment variables.",
    )
    parser.add_argument(
        "--tools",
        action="append",
        default=[],
        metavar="MODULE",
        help="a Python module whose @tool functions to add (repeatable)",
    )
    parser.add_argument(
        "--no-builtins", action="store_true", help="do not offer the built-in tools"
    )
    parser.add_argument(
        "--no-plugins", action="store_true", help="do not load tools from installed plugins"
    )
    parser.add_argument(
        "--history",
        metavar="PATH",
        help=f"run history database (default: ${ENV_HISTORY}, else history.sqlite3 in "
        "the user data folder)",
    )
    parser.add_argument("--no-history", action="store_true", help="do not store the runs")
    parser.add_argument(
        "--log-level",
        default="WARNING",
        type=str.upper,
        choices=("DEBUG", "INFO", "WARNING", "ERROR"),
        help="stderr log level (default: WARNING)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """`cleveragents serve --acp [--tools MODULE]... [--history PATH] [--log-level L]`."""
    options = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    signals = StopSignals()
    signals.install()
    _configure_logging(options.log_level)
    try:
        settings = session_settings(ClientOptions(), os.environ)
    except ParamsError as exc:
        print(f"cleveragents: {exc}", file=sys.stderr)
        return 2
    try:
        registry = build_registry(
            options.tools, builtins=not options.no_builtins, plugins=not options.no_plugins
        )
    except ToolLoadError as exc:
        print(f"cleveragents: {exc}", file=sys.stderr)
        return 1
    history = None if options.no_history else open_history(options.history)
    in_fd, out_fd = claim_stdio()
    try:
        return asyncio.run(serve(in_fd, out_fd, registry, settings.defaults, history, signals))
    finally:
        signals.detach()
        if history is not None:
            history.close()


async def serve(
    in_fd: int,
    out_fd: int,
    registry: ToolRegistry,
    defaults: RunDefaults,
    history: RunHistory | None,
    signals: StopSignals | None = None,
) -> int:
    """Serve one client until it closes its end, a signal arrives, or it stops reading."""
    # The SDK (its pydantic models are slow to import) loads only once we serve, so `--help`
    # and argument errors stay quick.
    from acp import Agent, run_agent

    from .agent import CleverAgentsAgent

    loop = asyncio.get_running_loop()
    stopped = asyncio.Event()
    hurry = asyncio.Event()  # a second reason to stop: no more waiting for prompts
    exit_code: list[int] = []

    def decide(code: int, reason: str, *, urges: bool) -> None:
        """The first reason to stop sets the exit code; a later urgent one (a second signal)
        cuts the waiting for prompts short."""
        if not exit_code:
            log.info("stopping: %s", reason)
            exit_code.append(code)
        elif urges and not hurry.is_set():
            log.info("stopping now: %s", reason)
            hurry.set()

    def stop(code: int, reason: str) -> None:
        decide(code, reason, urges=True)
        stopped.set()

    manager = RunManager(registry, defaults, history, max_tool_workers=MAX_TOOL_WORKERS)
    agent = CleverAgentsAgent(manager)

    async def wind_down() -> None:
        """Cancel running prompts; wait (a while) until each is answered and recorded."""
        agent.cancel_all()
        answered = asyncio.ensure_future(transport.prompts_answered())
        hurried = asyncio.ensure_future(hurry.wait())
        done, _ = await asyncio.wait(
            [answered, hurried], timeout=STOP_GRACE_S, return_when=asyncio.FIRST_COMPLETED
        )
        answered.cancel()
        hurried.cancel()
        if answered not in done:
            log.warning("prompts still running when stopping: %s", ", ".join(agent.busy()))

    async def client_closed() -> None:
        # The SDK hears of the end only after this: prompts can still answer (the client may
        # read our stdout after closing our stdin).
        decide(0, "the client closed the connection", urges=False)
        await wind_down()

    transport = StdioTransport(
        in_fd,
        out_fd,
        on_broken=lambda: stop(1, "the client stopped reading"),
        on_cancel_prompt=agent.cancel_prompt,
        on_end=client_closed,
    )
    if signals is not None:
        signals.attach(loop, stop)
    # The agent implements the methods it serves; the SDK answers method-not-found for the rest.
    serving = asyncio.ensure_future(run_agent(cast(Agent, agent), transport))
    waiting = asyncio.ensure_future(stopped.wait())
    await asyncio.wait([serving, waiting], return_when=asyncio.FIRST_COMPLETED)
    waiting.cancel()
    if not serving.done():
        # A signal, or a client that stopped reading: answer the prompts, then let go. The SDK
        # cancels the handlers still running after that; their runs record their end anyway.
        await wind_down()
        serving.cancel()
    try:
        await serving
    except asyncio.CancelledError:
        pass
    except Exception as exc:
        log.error("the ACP connection failed: %s: %s", type(exc).__name__, exc)
        stop(1, "connection failure")
    await agent.aclose()
    await manager.aclose()  # the MCP servers, then the tool threads
    kill_descendants()
    await loop.run_in_executor(None, transport.writer.flush, FLUSH_TIMEOUT_S)
    transport.writer.close()
    return exit_code[0] if exit_code else 0


def _configure_logging(level_name: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("cleveragents %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(getattr(logging, level_name))
