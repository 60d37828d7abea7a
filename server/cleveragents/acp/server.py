"""`cleveragents serve --acp`: the agent behind the Agent Client Protocol, on stdio.

Editors that speak ACP (Zed, JetBrains IDEs, Neovim with CodeCompanion or avante, Emacs)
start this command and exchange JSON-RPC 2.0 messages with it, one a line, on its stdin and
stdout. Settings come from the environment, exactly as for the JSON-RPC daemon:
$CLEVERAGENTS_PROVIDER, _MODEL, _PROFILE, _MAX_ITERATIONS, _BASE_URL, _REPLAY_SCRIPT,
_HISTORY and _TRUST_WORKSPACE (start every workspace's `.mcp.json` servers without asking);
API keys only from ANTHROPIC_API_KEY / OPENAI_API_KEY. Logs go to stderr; stdout
carries the protocol alone (tools' prints and child processes' output land on stderr).

The session ends when the client closes our stdin: running prompts are cancelled (and
recorded as such), MCP servers and processes tools left behind are stopped, and we exit 0
(128 + the signal's number after SIGTERM or SIGINT, 1 when the client stopped reading).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from typing import cast

from ..service.errors import ParamsError
from ..service.history import RunHistory
from ..service.processes import claim_stdio, kill_descendants
from ..service.runs import RunManager
from ..service.settings import ClientOptions, RunDefaults, open_history, session_settings
from ..tool.registry import ToolRegistry
from ..toolsets import ToolLoadError, build_registry
from .transport import StdioTransport

log = logging.getLogger(__name__)

FLUSH_TIMEOUT_S = 2.0
MAX_TOOL_WORKERS = 32


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cleveragents serve --acp",
        description="Serve the Agent Client Protocol (JSON-RPC 2.0, one message a line) on "
        "stdin and stdout, for editors such as Zed. Settings come from the CLEVERAGENTS_* "
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
        help="run history database (default: $CLEVERAGENTS_HISTORY, else history.sqlite3 in "
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
        return asyncio.run(serve(in_fd, out_fd, registry, settings.defaults, history))
    finally:
        if history is not None:
            history.close()


async def serve(
    in_fd: int,
    out_fd: int,
    registry: ToolRegistry,
    defaults: RunDefaults,
    history: RunHistory | None,
) -> int:
    """Serve one client until it closes its end, a signal arrives, or it stops reading."""
    # The SDK (its pydantic models are slow to import) loads only once we serve, so `--help`
    # and argument errors stay quick.
    from acp import Agent, run_agent

    from .agent import CleverAgentsAgent

    loop = asyncio.get_running_loop()
    stopped = asyncio.Event()
    exit_code: list[int] = []

    def stop(code: int, reason: str) -> None:
        if not exit_code:
            log.info("stopping: %s", reason)
            exit_code.append(code)
        stopped.set()

    transport = StdioTransport(
        in_fd, out_fd, on_broken=lambda: stop(1, "the client stopped reading")
    )
    manager = RunManager(registry, defaults, history, max_tool_workers=MAX_TOOL_WORKERS)
    agent = CleverAgentsAgent(manager)
    for signum in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signum, stop, 128 + signum, f"signal {signum}")
    # The agent implements the methods it serves; the SDK answers method-not-found for the rest.
    # When the connection ends, the SDK cancels the handlers still running: each prompt's run
    # records its calls as cancelled.
    serving = asyncio.ensure_future(run_agent(cast(Agent, agent), transport))
    waiting = asyncio.ensure_future(stopped.wait())
    await asyncio.wait([serving, waiting], return_when=asyncio.FIRST_COMPLETED)
    waiting.cancel()
    if not serving.done():
        serving.cancel()
    try:
        await serving
        stop(0, "the client closed the connection")
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
