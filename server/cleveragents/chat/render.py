"""What the terminal session shows of a turn: the model's text as it streams, the tool rows
and the plan as `cleveragents run` draws them (`display.py`), approvals asked inline, and the
one-line summaries of `/cost` and `/runs`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from ..display import (
    LineReader,
    RunDisplay,
    TerminalApprover,
    TerminalTrustAsker,
    attachment_lines,
    format_cost,
    show_file_changes,
    usage_summary,
)
from ..mcp import McpToolset
from ..service.changes import ChangedFile
from ..service.runs import RunPlan
from ..service.trust import TrustRequest
from ..settings_table import ENV_TRUST_WORKSPACE
from ..tool.events import ResponseReceived, RunEvent, RunObserver, RunStarted, TextDelta
from ..tool.instructions import describe_files
from ..tool.policy import ApprovalDecision, ApprovalRequest
from ..tool.records import ToolCallRunResult, Usage
from ..tool.registry import ToolRegistry

_STOPPED = {
    "max_iterations": "stopped at the iteration limit (--max-iterations)",
    "cancelled": "turn stopped: the session goes on",
    "context_exhausted": "stopped: the model's context window is full (/new starts afresh)",
}


class ChatDisplay(RunDisplay):
    """`RunDisplay` with the model's text streamed as it comes, instead of a panel at the end."""

    def __init__(self, console: Console) -> None:
        super().__init__(console)
        self.mid_line = False  # streamed text not yet ended by a newline

    def __call__(self, event: RunEvent) -> None:
        if isinstance(event, TextDelta):
            self.stop()
            self.console.print(Text(event.text), end="", soft_wrap=True, highlight=False)
            self.mid_line = not event.text.endswith("\n")
            return
        self.end_line()
        if isinstance(event, ResponseReceived):
            return  # its text has streamed already
        if isinstance(event, RunStarted):
            # No header per prompt (the folder and profile were said once; /runs has the
            # ids): only what this prompt's run reads besides it.
            for line in attachment_lines(event.resources):
                self.console.print(f"[dim]{escape(line)}[/]", highlight=False)
            if event.instructions:
                shown = describe_files(event.instructions)
                self.console.print(f"[dim]{escape(shown)}[/]", highlight=False)
            return
        super().__call__(event)

    def end_line(self) -> None:
        if self.mid_line:
            self.console.print()
            self.mid_line = False

    def show_turn(self, result: ToolCallRunResult, changed: list[ChangedFile]) -> None:
        """After a turn: why it stopped (when not by answering), its numbers and changes."""
        self.stop()
        self.end_line()
        reason = _STOPPED.get(result.stop_reason)
        if reason is not None:
            self.console.print(f"[yellow]{escape(reason)}[/]", highlight=False)
        summary = f"{result.iterations} iteration(s), {len(result.tool_call_history)} tool call(s)"
        summary += usage_summary(result.usage, result.cost_usd)
        self.console.print(f"[dim]{escape(summary)}[/]", highlight=False)
        if changed:
            self.console.print(f"changed {len(changed)} file(s) [dim](/undo puts them back)[/]")
            show_file_changes(self.console, changed)


class ChatSink:
    """The session's half of each run (`RunManager.run`'s sink): the streaming view, and
    approvals and workspace trust asked inline through the session's line editor (none when
    stdin is no terminal: those calls are denied, the servers not started)."""

    cannot_ask_trust = (
        "no terminal to ask at; run the session at a terminal, or pass --trust-workspace "
        f"(or set {ENV_TRUST_WORKSPACE}=1) to trust it"
    )

    def __init__(
        self,
        display: ChatDisplay,
        read_line: LineReader | None,
        always_allowed: set[str] | None = None,
    ) -> None:
        self.display = display
        self.interactive = read_line is not None
        # The tools the user said "always" to: the session's, so later prompts do not ask
        # again (as an ACP session remembers allow_always).
        self.always_allowed = always_allowed if always_allowed is not None else set()
        self._approver = TerminalApprover(display, read_line, always="this session")
        self._trust_asker = TerminalTrustAsker(display, read_line)

    @property
    def approvals(self) -> bool:
        return self.interactive

    def run_observer(self, plan: RunPlan) -> RunObserver:
        return self.display

    async def ask_approval(self, request: ApprovalRequest) -> ApprovalDecision:
        # A protected write is asked about every time: an earlier "always" does not answer it.
        if request.tool_name in self.always_allowed and not request.protected:
            return "allow_for_run"
        self.display.end_line()
        decision = await self._approver(request)
        if decision == "allow_for_run" and not request.protected:
            self.always_allowed.add(request.tool_name)
        return decision

    async def ask_trust(self, request: TrustRequest) -> bool | None:
        self.display.end_line()
        return await self._trust_asker(request) if self.interactive else None

    def run_tools(self, registry: ToolRegistry, workspace_mcp: McpToolset) -> ToolRegistry:
        for name, reason in workspace_mcp.skipped.items():
            self.display.console.print(
                f"[yellow]MCP server {escape(repr(name))} not started: {escape(reason)}[/]"
            )
        return registry


@dataclass(slots=True)
class TurnRecord:
    """One prompt's run in this session, for `/runs` and `/cost`."""

    run_id: str
    prompt: str
    status: str
    usage: Usage = field(default_factory=Usage)
    cost_usd: float | None = None


def add_costs(costs: Sequence[float | None]) -> float | None:
    """The sum of known costs; None when any is unknown (no price for a model)."""
    if any(cost is None for cost in costs):
        return None
    return sum(cost for cost in costs if cost is not None)


def cost_lines(turns: Sequence[TurnRecord]) -> list[str]:
    """`/cost`: the session's prompts, tokens (with cache reads) and cost."""
    total = Usage()
    for turn in turns:
        total.add(turn.usage)
    if not turns:
        return ["this session has run no prompt yet: no tokens, $0.0000"]
    if total.input_tokens == 0 and total.output_tokens == 0:
        return [f"this session: {len(turns)} prompt(s), no tokens reported, no cost"]
    cost = add_costs([turn.cost_usd for turn in turns])
    return [
        f"this session: {len(turns)} prompt(s){usage_summary(total, cost)}",
    ]


def runs_lines(turns: Sequence[TurnRecord], restores: Sequence[str]) -> list[str]:
    """`/runs`: each prompt's run, oldest first, with what to type to undo it."""
    if not turns:
        return ["no run yet in this session"]
    lines = []
    for number, turn in enumerate(turns, 1):
        prompt = turn.prompt if len(turn.prompt) <= 50 else turn.prompt[:49] + "…"
        lines.append(
            f"  {number}. {turn.run_id}  {turn.status:<10} {format_cost(turn.cost_usd):>9}  "
            f"{prompt!r}"
        )
    if restores:
        lines.append(f"  restores: {', '.join(restores)} (/restore 1 RESTORE_ID undoes one)")
    lines.append("`cleveragents runs show RUN_ID` shows one with its tool calls")
    return lines


def welcome_lines(sandbox_root: str, provider: str, model: str | None, profile: str) -> list[str]:
    return [
        f"cleveragents in {sandbox_root}: provider {provider}"
        + (f", model {model}" if model else "")
        + f", profile {profile}",
        "Type a prompt; /help lists the commands. Ctrl-C stops a turn, Ctrl-D leaves.",
    ]


def say(console: Console, lines: Sequence[str], style: str | None = None) -> None:
    """Plain lines (no markup read in them), in `style` when given."""
    for line in lines:
        console.print(Text(line, style=style or ""), highlight=False)
