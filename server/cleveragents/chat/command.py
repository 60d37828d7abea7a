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
from ..setting_flags import add_setting_flags, flag_settings, option_flag

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
        "from the last; /help lists the commands (/model and /profile change those settings "
        "for the next prompts). `cleveragents` alone does the same.",
    )
    # The settings table's flags, as `cleveragents run` takes them (--history among them).
    add_setting_flags(chat)
    chat.add_argument(
        "--continue",
        dest="continue_from",
        metavar="RUN_ID",
        help="go on with the conversation of an earlier run",
    )
    chat.add_argument(
        "--no-history",
        action="store_true",
        help="store no run (the session keeps the conversation; /undo needs the history)",
    )
    return chat


def _fail(message: str, code: int) -> int:
    print(f"cleveragents: {message}", file=sys.stderr)
    return code


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)  # a bad flag value exits 2 here, naming the flag
    from ..service.errors import ParamsError
    from ..service.history import RunHistory
    from ..service.runs import check_sandbox_root
    from ..service.settings import history_path
    from ..toolsets import ToolLoadError, build_registry

    here = os.getcwd()
    sandbox, problem = check_sandbox_root(here)
    if problem is not None:
        return _fail(f"the current folder {problem}", EXIT_USAGE)
    if args.no_history and args.continue_from:
        return _fail("--continue needs the run history", EXIT_USAGE)
    try:
        settings = flag_settings(args)  # the core's resolution, as for `cleveragents run`
    except ParamsError as exc:
        return _fail("; ".join(option_flag(p) for p in exc.problems), EXIT_USAGE)
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
