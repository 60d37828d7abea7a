"""`cleveragents run`: one run through the core's pipeline (`RunManager.run`), shown live."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from typing import TYPE_CHECKING

from ..setting_flags import flag_settings, option_flag
from ..settings_table import ENV_TRUST_WORKSPACE
from .common import (
    EXIT_CANCELLED,
    EXIT_ERROR,
    EXIT_LIMIT,
    EXIT_OK,
    EXIT_USAGE,
    fail,
    sandbox_problem,
)
from .flags import FIELD_FLAGS, file_flag_of, flag_problems
from .output import output_lost, when_output_lost
from .trust import say_not_started

if TYPE_CHECKING:
    from ..display import RunDisplay
    from ..mcp import McpToolset
    from ..service.runs import RunManager, RunOutcome, RunPlan
    from ..service.trust import TrustRequest
    from ..tool.events import RunObserver
    from ..tool.policy import ApprovalDecision, ApprovalRequest
    from ..tool.registry import ToolRegistry


class TerminalSink:
    """The CLI's half of a run (`RunManager.run`'s sink): the live view, and approvals and
    workspace trust asked at the terminal (none without one: those calls are denied and the
    servers are not started)."""

    cannot_ask_trust = (
        "no terminal to ask at; run it at a terminal, or pass --trust-workspace "
        f"(or set {ENV_TRUST_WORKSPACE}=1) to trust it"
    )

    def __init__(self, display: RunDisplay, interactive: bool) -> None:
        from ..display import TerminalApprover, TerminalTrustAsker

        self.display = display
        self.interactive = interactive
        self._approver = TerminalApprover(display)
        self._trust_asker = TerminalTrustAsker(display)

    @property
    def approvals(self) -> bool:
        return self.interactive

    def run_observer(self, plan: RunPlan) -> RunObserver:
        return self.display

    async def ask_approval(self, request: ApprovalRequest) -> ApprovalDecision:
        return await self._approver(request)

    async def ask_trust(self, request: TrustRequest) -> bool | None:
        return await self._trust_asker(request) if self.interactive else None

    def run_tools(self, registry: ToolRegistry, workspace_mcp: McpToolset) -> ToolRegistry:
        say_not_started(self.display.console, workspace_mcp)
        return registry


def run_command(args: argparse.Namespace) -> int:
    from rich.console import Console

    from ..display import RunDisplay
    from ..service.errors import ErrorKind, ParamsError, ServiceError
    from ..service.history import RunHistory
    from ..service.image_inputs import ImageInput
    from ..service.runs import RunManager, RunRequest
    from ..service.settings import history_path
    from ..tool.runtime import new_run_id
    from ..toolsets import ToolLoadError, build_registry

    sandbox, problem = sandbox_problem(args.sandbox or os.getcwd())
    if problem is not None:
        here = "" if args.sandbox else " (the current folder, as no --sandbox was given)"
        return fail(problem + here, EXIT_USAGE)
    # With --json, stdout carries only the result; the live view goes to stderr.
    console = Console(stderr=args.json)
    try:
        settings = flag_settings(args)
    except ParamsError as exc:
        return fail("; ".join(option_flag(p) for p in exc.problems), EXIT_USAGE)
    try:
        registry = build_registry(
            args.tools, builtins=not args.no_builtins, command_policy=settings.command_policy
        )
    except (ToolLoadError, ValueError, RuntimeError) as exc:
        return fail(str(exc))
    history = None
    if not args.no_history:
        try:
            # --history, else the history variable, else the data folder's: as the servers.
            history = RunHistory(history_path(args.history))
        except Exception as exc:
            return fail(f"cannot open the run history: {exc}")
    elif args.continue_from:
        return fail("--continue needs the run history", EXIT_USAGE)
    if settings.provider == "offline" and not args.json:
        console.print(
            "[yellow]No LLM provider configured: using the offline model (deterministic, no "
            "network).[/] Use --provider anthropic (with ANTHROPIC_API_KEY) or --provider openai."
        )
    if output_lost():  # that notice could not be written (`> /dev/full`): spend nothing
        if history is not None:
            history.close()
        return EXIT_ERROR  # main says why, or exits 141 for a reader that left
    display = RunDisplay(console)
    # Without a terminal nobody can answer, so calls that need approval are denied.
    sink = TerminalSink(display, sys.stdin.isatty() and console.is_terminal)
    run_id = new_run_id()
    request = RunRequest(
        prompt=args.prompt,
        sandbox_root=sandbox,
        model=args.model,
        base_url=args.base_url,
        replay_script=args.replay_script,
        resources=tuple(args.files),
        images=tuple(ImageInput(path, path=path) for path in args.images),
        continue_from=args.continue_from,
        run_id=run_id,
    )

    async def go() -> RunOutcome:
        # The core's pipeline, as for the daemon and ACP mode; its checkpoints live next to
        # the history (a run that is not stored cannot be undone).
        manager = RunManager(registry, settings, history)
        loop = asyncio.get_running_loop()
        # First Ctrl-C stops the run gracefully (partial result kept); a second one kills.
        interrupts: list[bool] = []
        loop.add_signal_handler(
            signal.SIGINT, second_interrupt_kills, loop, manager, run_id, interrupts
        )
        # Output nobody can read any more: stop spending on the run, as Ctrl-C would.
        stop = lambda: loop.call_soon_threadsafe(manager.cancel, run_id)  # noqa: E731
        try:
            with when_output_lost(stop):
                return await manager.run(request, sink)
        finally:
            loop.remove_signal_handler(signal.SIGINT)
            await manager.aclose()

    try:
        outcome = asyncio.run(go())
    except ServiceError as exc:
        display.stop()
        if exc.kind is ErrorKind.INVALID_PARAMS:
            flag = lambda f: FIELD_FLAGS.get(f, file_flag_of(f, args.files))  # noqa: E731
            return fail(flag_problems(exc, flag), EXIT_USAGE)
        if exc.kind is ErrorKind.RUN_NOT_FOUND and args.continue_from:
            return fail(f"no run {args.continue_from!r} to continue")
        return fail(exc.message)
    finally:
        display.stop()
        if history is not None:
            history.close()
    result = outcome.result
    if args.json:  # the daemon's `RunResult` shape (docs/json-output.md)
        from ..protocol.converter import to_json_text
        from ..protocol.translate import run_result

        print(to_json_text(run_result(outcome, args.continue_from)))
    else:
        display.show_result(
            result.content,
            result.stop_reason,
            result.iterations,
            len(result.tool_call_history),
            result.usage,
            result.cost_usd,
        )
        display.show_changes(run_id, outcome.changed_files, outcome.checkpoint_warning)
    if result.stop_reason == "cancelled":
        return EXIT_CANCELLED
    return EXIT_LIMIT if result.terminated_by_limit else EXIT_OK


def second_interrupt_kills(
    loop: asyncio.AbstractEventLoop, manager: RunManager, run_id: str, interrupts: list[bool]
) -> None:
    if interrupts:
        loop.remove_signal_handler(signal.SIGINT)
        os.kill(os.getpid(), signal.SIGINT)
        return
    interrupts.append(True)
    print("\ncleveragents: stopping the run (Ctrl-C again to kill)", file=sys.stderr)
    manager.cancel(run_id)
