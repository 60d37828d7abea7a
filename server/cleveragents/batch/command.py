"""`cleveragents batch SUITE`: run a suite's tasks (here, or on Ray) and report them.

Exit codes: 0 every task passed, 1 some failed (or a task could not run), 2 a bad suite or
flag (named), 130 cancelled (Ctrl-C; what finished is kept, a re-run does the rest).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
from typing import Any

from ..tool.serialization import to_data

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_CANCELLED = 130


def add_batch_parser(commands: Any) -> None:
    """The `batch` subcommand's flags (the CLI's parser calls this)."""
    batch = commands.add_parser(
        "batch",
        help="run a suite of tasks (a workspace, a prompt, a check) and report pass rate and cost",
        description="Each task runs in a fresh copy of its workspace, through the same walls as "
        "any run, recorded in the history with its batch and task; a re-run skips tasks "
        "finished before (same task and configuration) unless --rerun. Suite format: "
        "docs/batch.md.",
    )
    batch.add_argument("suite", metavar="SUITE", help="the suite file (.yaml, .json or .jsonl)")
    batch.add_argument(
        "--jobs", "-j", type=_positive, default=2, metavar="N", help="tasks at once (default 2)"
    )
    batch.add_argument(
        "--ray",
        nargs="?",
        const="",
        default=None,
        metavar="ADDRESS",
        help="run each task as a Ray task: on the cluster at ADDRESS, else $RAY_ADDRESS, else a "
        "local one (needs cleveragents[ray])",
    )
    batch.add_argument(
        "--ray-shared-dir",
        metavar="DIR",
        help="with --ray: make the copies in DIR, a folder every node sees, instead of "
        "shipping each workspace packed",
    )
    batch.add_argument(
        "--ray-max-workspace-mb",
        type=_positive,
        default=100,
        metavar="MB",
        help="with --ray: the largest workspace shipped packed (default 100)",
    )
    batch.add_argument("--rerun", action="store_true", help="run finished tasks again too")
    batch.add_argument(
        "--task",
        dest="tasks",
        action="append",
        default=[],
        metavar="ID",
        help="run only this task (repeatable)",
    )
    batch.add_argument(
        "--tag",
        dest="tags",
        action="append",
        default=[],
        metavar="TAG",
        help="run only tasks with this tag (repeatable)",
    )
    batch.add_argument("--json", action="store_true", help="print the report as JSON")
    batch.add_argument(
        "--report", metavar="FILE", help="write the report to FILE (.html: HTML, else Markdown)"
    )
    batch.add_argument(
        "--history", metavar="PATH", help="run history database (default: in the user data folder)"
    )
    batch.add_argument(
        "--work-dir",
        metavar="DIR",
        help="where the tasks' copies go (default: batches/ beside the history)",
    )
    batch.add_argument(
        "--tools",
        action="append",
        default=[],
        metavar="MODULE",
        help="a Python module whose @tool functions to add (repeatable)",
    )
    batch.add_argument(
        "--trust-workspace",
        action="store_true",
        help="start the workspaces' .mcp.json servers (a batch has nobody to ask)",
    )


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def batch_main(args: argparse.Namespace) -> int:
    from .suite import SuiteError, load_suite

    try:
        suite = load_suite(args.suite)
    except SuiteError as exc:
        print(f"cleveragents: bad suite {exc.path}:", file=sys.stderr)
        for problem in exc.problems:
            print(f"  - {problem}", file=sys.stderr)
        return EXIT_USAGE
    if args.tasks or args.tags:
        unknown = sorted(set(args.tasks) - {t.id for t in suite.tasks})
        if unknown:
            print(f"cleveragents: --task: no such task: {', '.join(unknown)}", file=sys.stderr)
            return EXIT_USAGE
        suite = suite.select(set(args.tasks) or None, set(args.tags) or None)
    if args.ray_shared_dir and args.ray is None:
        print("cleveragents: --ray-shared-dir needs --ray", file=sys.stderr)
        return EXIT_USAGE
    return asyncio.run(_batch(args, suite))


async def _batch(args: argparse.Namespace, suite: Any) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from ..service.errors import ParamsError
    from ..service.runs import RunManager
    from ..service.settings import ClientOptions, history_path, open_history, session_settings
    from ..toolsets import ToolLoadError, build_registry
    from .executors import Executor, LocalExecutor, RayExecutor
    from .report import print_report, report_file_text
    from .runner import run_batch

    try:
        options = ClientOptions(trust_workspace=True if args.trust_workspace else None)
        defaults = session_settings(options, os.environ, options_name="the command line").defaults
        registry = build_registry(args.tools, command_policy=defaults.command_policy)
    except ParamsError as exc:
        print(f"cleveragents: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (ToolLoadError, ImportError) as exc:
        print(f"cleveragents: --tools: {exc}", file=sys.stderr)
        return EXIT_USAGE
    history = open_history(args.history)
    work_dir = (
        args.work_dir or args.ray_shared_dir or str(history_path(args.history).parent / "batches")
    )
    manager = RunManager(registry, defaults, history)
    executor: Executor
    if args.ray is not None:
        executor = RayExecutor(
            history,
            defaults,
            address=args.ray or None,
            tool_modules=args.tools,
            shared=bool(args.ray_shared_dir),
            max_workspace_bytes=args.ray_max_workspace_mb * 2**20,
        )
    else:
        executor = LocalExecutor(manager, args.jobs)
    err = Console(stderr=True)
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=err,
        transient=True,
        disable=not err.is_terminal,
    )
    bar = progress.add_task(f"batch {suite.name}", total=None)

    def planned(to_run: int, skipped: int) -> None:
        progress.update(bar, total=to_run + skipped)
        if skipped:
            err.print(f"{skipped} task(s) finished before: kept (--rerun runs them again)")

    def finished(outcome: Any) -> None:
        progress.advance(bar)
        progress.update(bar, description=f"{outcome.key}: {outcome.status}")

    loop = asyncio.get_running_loop()
    work = asyncio.create_task(
        run_batch(
            suite,
            executor,
            history,
            work_dir,
            rerun=args.rerun,
            on_outcome=finished,
            on_plan=planned,
        )
    )
    try:
        loop.add_signal_handler(signal.SIGINT, work.cancel)
        handled = True
    except (ValueError, RuntimeError, NotImplementedError):  # not the main thread; Windows
        handled = False
    try:
        # stdout is the report's alone: what else prints while tasks run (Ray's raylet, when
        # a worker dies) goes to stderr.
        with progress, contextlib.redirect_stdout(sys.stderr):
            report = await work
    except (RuntimeError, ValueError) as exc:  # Ray missing or unreachable, a huge workspace
        print(f"cleveragents: {exc}", file=sys.stderr)
        return EXIT_FAILED
    finally:
        if handled:
            loop.remove_signal_handler(signal.SIGINT)
        await manager.aclose()
        if history is not None:
            history.close()
    if args.report:
        try:
            with open(args.report, "w", encoding="utf-8") as handle:
                handle.write(report_file_text(report, args.report))
        except OSError as exc:
            print(f"cleveragents: cannot write {args.report}: {exc}", file=sys.stderr)
            return EXIT_FAILED
    if args.json:
        print(json.dumps(to_data(report), indent=2))
    else:
        print_report(report, Console())
    if report.cancelled:
        return EXIT_CANCELLED
    return EXIT_OK if all(o.passed for o in report.outcomes) else EXIT_FAILED
