"""The terminal's live view of a run: a row per tool call as it starts and as it settles."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.status import Status

from .service.changes import ChangedFile
from .service.history import StoredRun
from .service.trust import TrustRequest
from .tool.events import (
    IterationStarted,
    PlanUpdated,
    ResponseReceived,
    RunEvent,
    RunFailed,
    RunFinished,
    RunStarted,
    SnapshotProgress,
    SnapshotTaken,
    ToolCallFinished,
    ToolCallStarted,
)
from .tool.images import ImageAttachment, size_text
from .tool.instructions import describe_files
from .tool.plan import PLAN_TOOL, PlanStep
from .tool.policy import ApprovalDecision, ApprovalRequest
from .tool.records import Usage
from .tool.resources import Resource
from .workspace.names import shown_path

_CHANGE_MARKS = {"added": "[green]+[/]", "modified": "[yellow]~[/]", "deleted": "[red]-[/]"}


def _model_inputs(inputs: dict[str, Any]) -> dict[str, Any]:
    # The sandbox root is the same on every call; showing it only hides what the model chose.
    return {k: v for k, v in inputs.items() if k not in ("sandbox_root", "resource_bindings")}


def _short(value: Any, limit: int = 100) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class RunDisplay:
    """A run observer that draws on a rich console (stderr when stdout carries JSON)."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.status: Status | None = None
        self.running: dict[str, str] = {}

    def _spin(self, message: str) -> None:
        if self.status is None:
            self.status = self.console.status(message, spinner="dots")
            self.status.start()
        else:
            self.status.update(message)

    def stop(self) -> None:
        if self.status is not None:
            self.status.stop()
            self.status = None

    def __call__(self, event: RunEvent) -> None:
        if isinstance(event, RunStarted):
            where = event.sandbox_root or "(no sandbox)"
            self.console.print(
                f"[bold]run[/] {event.run_id}  sandbox {escape(where)}  "
                f"profile {event.automation_profile}  limit {event.max_iterations}"
            )
            for line in attachment_lines(event.resources):
                self.console.print(f"[dim]{escape(line)}[/]")
            for image in event.images:
                self.console.print(f"[dim]image {escape(image_line(image))}[/]")
            if event.instructions:
                self.console.print(f"[dim]{escape(describe_files(event.instructions))}[/]")
        elif isinstance(event, IterationStarted):
            self._spin(f"iteration {event.iteration}: waiting for the model…")
        elif isinstance(event, ResponseReceived):
            if event.message.text and event.message.tool_calls:
                self.console.print(f"[dim]{escape(event.message.text)}[/]")
        elif isinstance(event, ToolCallStarted):
            self.running[event.call_id] = event.tool_name
            self._spin(f"running {', '.join(self.running.values())}…")
        elif isinstance(event, SnapshotProgress):
            self._spin(
                f"iteration {event.iteration}: saving a checkpoint… {event.elapsed_ms / 1000:.0f} s"
            )
        elif isinstance(event, SnapshotTaken):
            files = "" if event.files is None else f"{event.files:,} files, "
            if event.error is None:
                self.console.print(
                    f"[dim]checkpoint before iteration {event.iteration}: {files}"
                    f"{event.duration_ms:.1f} ms[/]",
                    highlight=False,
                )
            else:
                self.console.print(
                    f"[red]no checkpoint before iteration {event.iteration}[/]: "
                    f"{escape(event.error)}",
                    highlight=False,
                )
        elif isinstance(event, ToolCallFinished):
            record = event.record
            self.running.pop(record.call_id, None)
            if record.success and record.tool_name == PLAN_TOOL:
                return  # the plan itself follows (PlanUpdated): no row of JSON for it
            if record.success:
                mark, detail = "[green]✓[/]", escape(_short(record.output))
            else:
                mark = "[red]✗[/]"
                detail = f"[red]{record.error_kind}[/]: {escape(record.error or '')}"
            inputs = escape(_short(_model_inputs(record.inputs), 80))
            self.console.print(
                f"{mark} [bold]{escape(record.tool_name)}[/] {inputs} "
                f"[dim]{record.duration_ms:.1f} ms[/]\n    {detail}"
            )
            if self.running:
                self._spin(f"running {', '.join(self.running.values())}…")
        elif isinstance(event, PlanUpdated):
            self.show_plan(event.steps)
            if self.running:
                self._spin(f"running {', '.join(self.running.values())}…")
        elif isinstance(event, RunFinished):
            self.stop()
        elif isinstance(event, RunFailed):
            self.stop()

    def show_plan(self, steps: Sequence[PlanStep], title: str = "plan") -> None:
        """The plan as a compact checklist: `plan 1/3 done` and a line per step."""
        self.stop()
        for line in plan_lines(steps, title):
            self.console.print(line, highlight=False)

    def show_result(
        self,
        content: str,
        reason: str,
        iterations: int,
        calls: int,
        usage: Usage | None = None,
        cost_usd: float | None = None,
    ) -> None:
        title = {
            "final_answer": "answer",
            "max_iterations": "stopped at the iteration limit",
            "cancelled": "cancelled",
            "context_exhausted": "stopped: the model's context window is full",
        }.get(reason, reason)
        self.console.print(Panel(escape(content or "(no text)"), title=title, expand=False))
        summary = f"{iterations} iteration(s), {calls} tool call(s)"
        summary += usage_summary(usage or Usage(), cost_usd)
        self.console.print(f"[dim]{escape(summary)}[/]")

    def show_changes(self, run_id: str, changed: list[ChangedFile], warning: str | None) -> None:
        """The files the run changed, and how to undo it."""
        if warning:
            self.console.print(f"[yellow]{escape(warning)}[/]")
        if not changed:
            return
        self.console.print(f"changed {len(changed)} file(s):")
        show_file_changes(self.console, changed)
        self.console.print(
            f"[dim]undo with: cleveragents runs restore {escape(run_id)}[/]", highlight=False
        )

    def show_checkpoints(self, run: StoredRun) -> None:
        """A stored run's checkpoints and the files it changed."""
        from datetime import datetime

        console = self.console
        steps = [c for c in run.checkpoints if c.kind != "end"]
        if steps:
            console.print("checkpoints:")
        for checkpoint in steps:
            when = datetime.fromtimestamp(checkpoint.created_at).strftime("%Y-%m-%d %H:%M:%S")
            what = (
                f"before iteration {checkpoint.iteration}"
                if checkpoint.iteration is not None
                else "before the restore"
            )
            note = f"  [dim]{escape(checkpoint.note)}[/]" if checkpoint.note else ""
            console.print(f"  {what}  [dim]{when}[/]{note}")
        if run.checkpoint_warning:
            console.print(f"[yellow]{escape(run.checkpoint_warning)}[/]")
        if run.changed_files:
            console.print(f"changed {len(run.changed_files)} file(s):")
            show_file_changes(console, run.changed_files)
            hint = f"cleveragents runs restore {run.run_id}"
            if run.kind == "run" and len(steps) > 1:
                hint += " [--iteration N]"
            console.print(f"[dim]undo with: {escape(hint)}[/]", highlight=False)
        elif run.changed_files == [] and run.status != "running":
            console.print("[dim]changed no file[/]")


_PLAN_MARKS = {"done": "[green]✓[/]", "in_progress": "[yellow]▸[/]", "pending": "[dim]○[/]"}


def plan_lines(steps: Sequence[PlanStep], title: str = "plan") -> list[str]:
    """`plan 1/3 done`, then `  ✓ step` / `  ▸ step` (in progress, bold) / `  ○ step` (rich
    markup)."""
    done = sum(1 for step in steps if step.status == "done")
    lines = [f"[bold]{escape(title)}[/] [dim]{done}/{len(steps)} done[/]"]
    for step in steps:
        text = escape(step.text)
        if step.status == "in_progress":
            text = f"[bold]{text}[/]"
        elif step.status == "done":
            text = f"[dim]{text}[/]"
        lines.append(f"  {_PLAN_MARKS[step.status]} {text}")
    return lines


def show_file_changes(console: Console, changed: list[ChangedFile]) -> None:
    for change in changed:
        shown = escape(shown_path(change.path))  # a name that is not plain text, C-quoted
        console.print(
            f"  {_CHANGE_MARKS[change.change]} {shown}  [dim]{change.change}"
            f"{' (ignored by git)' if change.ignored else ''}[/]",
            highlight=False,
        )


def format_cost(cost_usd: float | None) -> str:
    """`$0.0312`, or `—` when the price is unknown."""
    return "—" if cost_usd is None else f"${cost_usd:.4f}"


def format_tokens(usage: Usage) -> str:
    """`52.3k / 1,200`: tokens in and out, short; `—` when the provider reported none."""
    if usage.input_tokens == 0 and usage.output_tokens == 0:
        return "—"
    return f"{_short_count(usage.input_tokens)} / {_short_count(usage.output_tokens)}"


def _short_count(count: int) -> str:
    if count >= 1_000_000:
        return f"{count / 1_000_000:.1f}M"
    if count >= 10_000:
        return f"{count / 1_000:.1f}k"
    return f"{count:,}"


def iteration_usage_line(iteration: int, usage: Usage, cost_usd: float | None) -> str:
    """`iteration 2: 14,020 in (12,800 from cache, 1,100 written to cache), 310 out, $0.0061`."""
    cache = [
        f"{usage.cache_read_tokens:,} from cache" if usage.cache_read_tokens else "",
        f"{usage.cache_write_tokens:,} written to cache" if usage.cache_write_tokens else "",
    ]
    detail = ", ".join(part for part in cache if part)
    return (
        f"iteration {iteration}: {usage.input_tokens:,} in"
        + (f" ({detail})" if detail else "")
        + f", {usage.output_tokens:,} out, {format_cost(cost_usd)}"
    )


def attachment_lines(resources: Sequence[Resource]) -> list[str]:
    """`attached src/app.py, lines 3-9` per attached file (with what the budget left out)."""
    lines = []
    for resource in resources:
        where = resource.path
        if resource.start_line is not None and resource.end_line is not None:
            where += f", lines {resource.start_line}-{resource.end_line}"
        if resource.from_editor:
            where += " (from the editor)"
        if resource.omitted_chars:
            where += f", {resource.omitted_chars:,} characters left out"
        lines.append(f"attached {where}")
    return lines


def image_line(image: ImageAttachment) -> str:
    """`shot.png, PNG 640x480, 12,345 bytes, ~410 tokens` (and whether it is still stored)."""
    kind = image.media_type.removeprefix("image/").upper()
    gone = "" if image.data is not None else ", no longer stored"
    return (
        f"{image.name}, {kind} {image.width}x{image.height}, {size_text(image.size)}, "
        f"~{image.tokens:,} tokens{gone}"
    )


def usage_summary(usage: Usage, cost_usd: float | None) -> str:
    """', 52,300 tokens in (41,000 from cache, 78%), 1,200 out, ~$0.0312', or that the model
    counted nothing (the offline and replay models): said, rather than shown as nothing."""
    if usage.input_tokens == 0 and usage.output_tokens == 0:
        return ", no token counts (the model reported none)"
    read = usage.cache_read_tokens
    cached = ""
    if read and usage.input_tokens:
        cached = f" ({read:,} from cache, {read / usage.input_tokens:.0%})"
    text = f", {usage.input_tokens:,} tokens in{cached}, {usage.output_tokens:,} out"
    if cost_usd is None:
        return text + ", cost unknown (no price for this model)"
    return text + f", ~${cost_usd:.4f}"


# Reads one answer at the terminal after a prompt in rich markup; EOFError for Ctrl-D,
# KeyboardInterrupt for Ctrl-C. The default reads on a thread; the terminal session
# (`chat/`) passes its line editor's, so no reader is left behind on the terminal.
LineReader = Callable[[Console, str], Awaitable[str]]


class TerminalApprover:
    """Asks at the terminal: allow, deny, or allow this tool for the rest of the run.

    Ctrl-C at the prompt stops the run (the `cancel` decision): the call does not run and is
    recorded as cancelled. The CLI's SIGINT handler usually gets there first (it cancels the
    run's token, which withdraws this question); a KeyboardInterrupt that reaches the reading
    thread means the same.
    """

    def __init__(
        self, display: RunDisplay, read_line: LineReader | None = None, always: str = "this run"
    ) -> None:
        self.display = display
        self._read_line = read_line or _read_line
        self._always = always  # how long "always" lasts, as the user is told

    async def __call__(self, request: ApprovalRequest) -> ApprovalDecision:
        self.display.stop()
        console = self.display.console
        inputs = escape(_short(_model_inputs(request.inputs), 300))
        console.print(
            f"[yellow]?[/] [bold]{escape(request.tool_name)}[/] wants to run with {inputs}"
        )
        if request.note:
            console.print(f"  [bold red]![/] {escape(request.note)}")
        # A protected write is asked about every time: no "always" to offer.
        prompt = (
            "  allow? [bold]y[/]es / [bold]n[/]o (asked each time: a protected write): "
            if request.protected
            else f"  allow? [bold]y[/]es / [bold]n[/]o / [bold]a[/]lways {self._always}: "
        )
        choices = ("y", "n") if request.protected else ("y", "n", "a")
        while True:
            try:
                answer = await self._read_line(console, prompt)
            except EOFError:  # Ctrl-D, or the terminal went away: nobody said yes
                return "deny"
            except KeyboardInterrupt:  # Ctrl-C: stop, not "no"
                return "cancel"
            choice = answer.strip().lower()[:1]
            if choice in choices:
                break
        return {"y": "allow", "n": "deny", "a": "allow_for_run"}[choice]  # type: ignore[return-value]


class TerminalTrustAsker:
    """Asks at the terminal whether a workspace's `.mcp.json` servers may start, showing the
    commands as written, the programs that will run and the variables they set (secret-looking
    values masked; those that change what runs flagged in red)."""

    def __init__(self, display: RunDisplay, read_line: LineReader | None = None) -> None:
        self.display = display
        self._read_line = read_line or _read_line

    async def __call__(self, request: TrustRequest) -> bool | None:
        self.display.stop()
        console = self.display.console
        console.print(
            "[yellow]?[/] This workspace's [bold].mcp.json[/] would start these programs, "
            "with your permissions:"
        )
        for line in request.describe():
            style = "bold red" if "[!]" in line else "bold"  # flagged: the workspace chose it
            console.print(f"    [{style}]{escape(line)}[/]")
        console.print(f"  [dim]{escape(request.config_path)}  sha256 {request.config_hash}[/]")
        while True:
            try:
                answer = await self._read_line(
                    console, "  trust this .mcp.json and start them? [bold]y[/]es / [bold]n[/]o: "
                )
            except EOFError:  # Ctrl-D: no answer, so not trusted and nothing remembered
                return None
            choice = answer.strip().lower()[:1]
            if choice in ("y", "n"):
                return choice == "y"


async def _read_line(console: Console, prompt: str) -> str:
    """console.input on a daemon thread of its own (see `read_in_daemon_thread`)."""
    return await read_in_daemon_thread(lambda: console.input(prompt))


async def read_in_daemon_thread(read: Callable[[], str]) -> str:
    """`read()` (a blocking read of the terminal or stdin) on a daemon thread of its own.

    Not the loop's default executor: that one is joined when the loop closes, so a Ctrl-C
    during the read would wait for someone to press Enter.
    """
    import asyncio
    import threading

    loop = asyncio.get_running_loop()
    future: asyncio.Future[str] = loop.create_future()

    def settle(value: str | None, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value or "")

    def work() -> None:
        try:
            value = read()
        except BaseException as exc:  # EOFError, KeyboardInterrupt: hand it to the caller
            loop.call_soon_threadsafe(settle, None, exc)
            return
        loop.call_soon_threadsafe(settle, value, None)

    threading.Thread(target=work, name="cleveragents-prompt", daemon=True).start()
    return await future
