"""`cleveragents` alone, and `cleveragents chat`: the options, the checks, then the session.

The folder is the current one, refused by the core's rule as `run --sandbox` is (`/`, a
folder holding the home folder, credential folders): a usage error, exit 2, one line.
Exit 0 when the session ends (Ctrl-D, `/exit`, the end of piped input); 1 when piped input
had a turn that failed, so a script can tell.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from typing import TYPE_CHECKING

from rich.console import Console

from ..paths import default_prompt_history_path
from ..providers import PROVIDERS
from ..settings_table import ENV_MAX_ITERATIONS, ENV_PROFILE, ENV_PROVIDER, ENV_TRUST_WORKSPACE
from ..tool.policy import AUTOMATION_PROFILES

if TYPE_CHECKING:
    from ..service.history import RunHistory
    from ..service.settings import RunDefaults
    from ..tool.registry import ToolRegistry

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_CANCELLED = 130


def parser() -> argparse.ArgumentParser:
    chat = argparse.ArgumentParser(
        prog="cleveragents chat",
        description="A conversation with the agent in the current folder: each prompt goes on "
        "from the last; /help lists the commands. `cleveragents` alone does the same.",
    )
    chat.add_argument(
        "--provider",
        choices=PROVIDERS,
        help=f"LLM provider (default: ${ENV_PROVIDER}, else offline)",
    )
    chat.add_argument("--model", help="model name for the provider (/model changes it)")
    chat.add_argument("--base-url", help="provider base URL (OpenAI-compatible servers, proxies)")
    chat.add_argument("--script", metavar="FILE", help="replay provider: the JSON script to play")
    chat.add_argument(
        "--profile",
        choices=AUTOMATION_PROFILES,
        help=f"what may run without asking (default: ${ENV_PROFILE}, else ask; /profile "
        "changes it)",
    )
    chat.add_argument(
        "--max-iterations",
        type=_max_iterations,
        metavar="N",
        help=f"model calls per prompt (default: ${ENV_MAX_ITERATIONS}, else 25)",
    )
    chat.add_argument(
        "--continue",
        dest="continue_from",
        metavar="RUN_ID",
        help="go on with the conversation of an earlier run",
    )
    chat.add_argument("--history", metavar="PATH", help="run history database")
    chat.add_argument(
        "--no-history",
        action="store_true",
        help="store no run (the session keeps the conversation; /undo needs the history)",
    )
    chat.add_argument(
        "--trust-workspace",
        action="store_true",
        help=f"start the folder's .mcp.json servers without asking (also {ENV_TRUST_WORKSPACE}=1)",
    )
    return chat


def _max_iterations(text: str) -> int:
    """The core's check, so a bad value exits 2 naming the flag."""
    from ..service.settings import check_setting
    from ..settings_table import setting

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    problem = check_setting(setting("max_iterations"), value)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return value


def _fail(message: str, code: int) -> int:
    print(f"cleveragents: {message}", file=sys.stderr)
    return code


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    from ..service.errors import ParamsError
    from ..service.history import RunHistory
    from ..service.runs import check_sandbox_root
    from ..service.settings import ClientOptions, history_path, session_settings
    from ..toolsets import ToolLoadError, build_registry

    here = os.getcwd()
    sandbox, problem = check_sandbox_root(here)
    if problem is not None:
        return _fail(f"the current folder {problem}", EXIT_USAGE)
    if args.no_history and args.continue_from:
        return _fail("--continue needs the run history", EXIT_USAGE)
    try:
        settings = session_settings(
            ClientOptions(
                provider=args.provider,
                model=args.model,
                automation_profile=args.profile,
                max_iterations=args.max_iterations,
                base_url=args.base_url,
                replay_script=args.script,
                trust_workspace=True if args.trust_workspace else None,
            ),
            os.environ,
            options_name="option",
        ).defaults
    except ParamsError as exc:
        return _fail("; ".join(exc.problems), EXIT_USAGE)
    try:
        registry = build_registry([], command_policy=settings.command_policy)
    except (ToolLoadError, ValueError, RuntimeError) as exc:
        return _fail(str(exc), EXIT_ERROR)
    history = None
    if not args.no_history:
        try:
            history = RunHistory(history_path(args.history))
        except Exception as exc:
            return _fail(f"cannot open the run history: {exc}", EXIT_ERROR)
        if args.continue_from and history.get_run(args.continue_from) is None:
            history.close()
            return _fail(f"--continue: no run {args.continue_from!r} in the history", EXIT_USAGE)
    try:
        return asyncio.run(_session(settings, registry, history, sandbox, args.continue_from))
    except KeyboardInterrupt:  # Ctrl-C while piped input was awaited: leave, as a shell would
        return EXIT_CANCELLED
    finally:
        if history is not None:
            history.close()


async def _session(
    settings: RunDefaults,
    registry: ToolRegistry,
    history: RunHistory | None,
    sandbox: str,
    continue_from: str | None,
) -> int:
    from ..service.runs import RunManager
    from .lines import LineSource, PipedLines
    from .render import say, welcome_lines
    from .session import ChatSession

    console = Console()
    interactive = sys.stdin.isatty() and console.is_terminal
    lines: LineSource = PipedLines()
    if interactive:
        from .editor import TerminalLines  # prompt_toolkit: only where a line is edited

        lines = TerminalLines(default_prompt_history_path(), console)
    manager = RunManager(registry, settings, history)
    defaults = manager.defaults
    say(
        console,
        welcome_lines(sandbox, defaults.provider, defaults.model, defaults.automation_profile),
        "dim",
    )
    if defaults.provider == "offline":
        say(
            console,
            [
                "No LLM provider configured: using the offline model (deterministic, no "
                "network). Use --provider anthropic (with ANTHROPIC_API_KEY) or --provider openai."
            ],
            "yellow",
        )
    session = ChatSession(
        manager, sandbox, lines, console, continue_from=continue_from, echo=not interactive
    )
    try:
        await session.loop()
    finally:
        await manager.aclose()
    return EXIT_ERROR if session.state.failed and not interactive else EXIT_OK
