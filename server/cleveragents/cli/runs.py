"""`cleveragents runs`: list, show and restore past runs, and look after the checkpoints."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from .common import EXIT_OK, EXIT_USAGE, fail
from .flags import FIELD_FLAGS, flag_problems

if TYPE_CHECKING:
    from ..service.history import RunHistory
    from ..service.undo import RestoreOutcome, Undo


def open_history(path: str | None) -> RunHistory:
    """--history, else the history variable, else the data folder's (as every front)."""
    from ..service.history import RunHistory
    from ..service.settings import history_path

    return RunHistory(history_path(path))


def restore_json(outcome: RestoreOutcome) -> str:
    """A restore as `cleveragents/restore` answers it (docs/json-output.md)."""
    from ..protocol.converter import to_json_text
    from ..protocol.translate import restore_result

    return to_json_text(restore_result(outcome))


def runs_command(args: argparse.Namespace) -> int:
    from datetime import datetime

    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    try:
        history = open_history(args.history)
    except Exception as exc:
        return fail(f"cannot open the run history: {exc}")
    with history:
        if args.action in ("restore", "disk", "prune-checkpoints"):
            return checkpoints_command(args, history)
        if args.action == "show":
            if not args.run_id:
                return fail("runs show needs a RUN_ID", EXIT_USAGE)
            run = history.get_run(args.run_id)
            if run is None:
                return fail(f"no run {args.run_id!r} in {history.path}")
            if args.json:  # the daemon's `cleveragents/getRun` shape (docs/json-output.md)
                from ..protocol.converter import to_json_text
                from ..protocol.translate import run_detail

                print(to_json_text(run_detail(run)))
                return EXIT_OK
            from ..display import RunDisplay, attachment_lines, image_line, iteration_usage_line
            from ..tool.events import ToolCallFinished
            from ..tool.plan import last_plan

            console = Console()
            console.print(f"[bold]{run.run_id}[/] {run.status}  {run.sandbox_root}\n{run.prompt}")
            display = RunDisplay(console)
            for line in attachment_lines(run.resources):
                console.print(f"[dim]{escape(line)}[/]", highlight=False)
            for image in run.images:
                console.print(f"[dim]image {escape(image_line(image))}[/]", highlight=False)
            for record in run.records:
                display(ToolCallFinished(run.run_id, record))
            plan = last_plan(run.records)
            if plan is not None:
                display.show_plan(plan, "last plan")
            for entry in run.iteration_usage:
                console.print(
                    f"[dim]{iteration_usage_line(entry.iteration, entry.usage, entry.cost_usd)}[/]",
                    highlight=False,
                )
            display.show_result(
                run.content or run.error or "",
                run.stop_reason or run.status,
                run.iterations,
                len(run.records),
                run.usage,
                run.cost_usd,
            )
            display.show_checkpoints(run)
            return EXIT_OK
        rows = history.list_runs(limit=args.limit, batch_id=args.batch)
    if args.json:
        # `cleveragents/runs`' `RunSummary` shape (docs/json-output.md)
        from ..protocol.converter import to_json_text
        from ..protocol.translate import run_summary

        print(to_json_text([run_summary(r) for r in rows]))
        return EXIT_OK
    from ..display import format_cost, format_tokens

    # The id and the cost whole, on narrow terminals too; the other columns wrap.
    width = max((len(row.run_id) for row in rows), default=3)
    table = Table()
    table.add_column("run", no_wrap=True, min_width=width)
    table.add_column("cost", no_wrap=True)
    for name in ("started", "status", "calls", "tokens", "prompt"):
        table.add_column(name)
    for row in rows:
        started = datetime.fromtimestamp(row.started_at).strftime("%Y-%m-%d %H:%M")
        table.add_row(
            row.run_id,
            format_cost(row.cost_usd),
            started,
            row.status,
            str(row.tool_call_count),
            format_tokens(row.usage),
            # A batch run says which task it was: its prompt is the task's.
            escape(
                f"[{row.batch.task_id}@{row.batch.config}] {row.prompt}"[:60]
                if row.batch is not None
                else row.prompt[:60]
            ),
        )
    Console().print(table)
    return EXIT_OK


def checkpoints_command(args: argparse.Namespace, history: RunHistory) -> int:
    """`runs restore`, `runs disk` and `runs prune-checkpoints`."""
    from ..service.errors import ErrorKind, ServiceError
    from ..service.undo import Undo

    undo = Undo(history)
    try:
        if args.action == "restore":
            return restore_command(args, undo)
        if args.action == "disk":
            return disk_command(args, undo)
        return prune_command(args, undo)
    except ServiceError as exc:
        if exc.kind is ErrorKind.INVALID_PARAMS:
            return fail(flag_problems(exc, lambda f: FIELD_FLAGS.get(f, f)), EXIT_USAGE)
        return fail(exc.message)
    finally:
        undo.close()


def restore_command(args: argparse.Namespace, undo: Undo) -> int:
    from rich.console import Console

    from ..display import show_file_changes

    if not args.run_id:
        return fail("runs restore needs a RUN_ID", EXIT_USAGE)
    console = Console(stderr=args.json)
    preview = undo.restore(args.run_id, args.iteration, dry_run=True)
    what = (
        f"before iteration {args.iteration} of {args.run_id}"
        if args.iteration is not None
        else f"before {args.run_id}"
    )
    if not preview.changed_files:
        if args.json:
            print(restore_json(preview))
        console.print(f"{preview.sandbox_root} is already as it was {what}: nothing to restore")
        return EXIT_OK
    console.print(f"Restoring {preview.sandbox_root} to how it was {what} changes:")
    show_file_changes(console, preview.changed_files)
    if args.dry_run:
        if args.json:
            print(restore_json(preview))
        console.print("[dim]dry run: nothing was changed[/]")
        return EXIT_OK
    if not args.yes:
        if not sys.stdin.isatty():
            return fail(
                "runs restore changes files: pass --yes to confirm (there is no terminal to "
                "ask at); nothing was changed",
                EXIT_USAGE,
            )
        try:
            answer = input(f"Restore these {len(preview.changed_files)} file(s)? [y/N] ")
        except EOFError:
            answer = ""
        if answer.strip().lower() not in ("y", "yes"):
            return fail("not restored: nothing was changed")
    outcome = undo.restore(args.run_id, args.iteration)
    if args.json:
        print(restore_json(outcome))
        return EXIT_OK
    console.print(f"Restored {len(outcome.changed_files)} file(s) in {outcome.sandbox_root}.")
    for kept in outcome.kept:
        console.print(f"[yellow]kept {kept.path}[/]: an ignored or too-large file is in the way")
    if outcome.restore_id is not None:
        console.print(
            f"Undo this restore with: cleveragents runs restore {outcome.restore_id}",
            highlight=False,
        )
    return EXIT_OK


def disk_command(args: argparse.Namespace, undo: Undo) -> int:
    usage = undo.disk_usage()
    if args.json:
        print(json.dumps({"total_bytes": usage.total_bytes, "by_sandbox": usage.by_sandbox}))
        return EXIT_OK
    # An in-memory history has no data folder (nor checkpoints on disk).
    where = undo.data_dir / "checkpoints" if undo.data_dir is not None else "no folder"
    print(f"checkpoints take {size_text(usage.total_bytes)} in {where}")
    for folder, size in sorted(usage.by_sandbox.items(), key=lambda item: -item[1]):
        print(f"  {size_text(size):>10}  {folder}")
    return EXIT_OK


def prune_command(args: argparse.Namespace, undo: Undo) -> int:
    import time

    if args.older_than is not None and args.older_than < 0:
        return fail("--older-than must not be negative", EXIT_USAGE)
    cutoff = time.time() - args.older_than * 86400 if args.older_than is not None else None
    result = undo.prune(cutoff)
    if args.json:
        print(
            json.dumps(
                {
                    "removed_checkpoints": result.removed_checkpoints,
                    "removed_repositories": result.removed_repositories,
                    "bytes_before": result.bytes_before,
                    "bytes_after": result.bytes_after,
                }
            )
        )
        return EXIT_OK
    print(
        f"removed {result.removed_checkpoints} checkpoint(s); checkpoints take "
        f"{size_text(result.bytes_after)} (were {size_text(result.bytes_before)})"
    )
    return EXIT_OK


def size_text(count: int) -> str:
    if count < 1024:
        return f"{count} B"
    size = count / 1024
    for unit in ("KiB", "MiB"):
        if size < 1024:
            return f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"
