"""The terminal session's loop: read a line, run it as a turn of the conversation or as a slash
command, until Ctrl-D or `/exit`.

Every turn is a run of the core's one pipeline (`RunManager.run`), continuing the session's
last run (`continue_from`, with the core's checks) so the model sees the conversation so far;
without a history the session keeps the conversation itself and hands it over, as ACP does.
Ctrl-C during a turn cancels that run through the core (its calls are recorded as cancelled,
the run is stored as cancelled) and the session reads the next line; a second Ctrl-C before
the turn has stopped ends the process, as `cleveragents run` does.
"""

from __future__ import annotations

import asyncio
import os
import signal
from dataclasses import dataclass, field

from rich.console import Console

from ..providers import PROVIDERS
from ..service.errors import RUN_FAILED, ServiceError
from ..service.runs import RunManager, RunRequest
from ..service.undo import RestoreOutcome
from ..tool.messages import Message
from ..tool.policy import check_profile
from ..tool.runtime import new_run_id
from ..workspace.names import shown_path
from ..workspace.prompt_commands import PromptCommand, load_prompt_commands
from .lines import PROMPT, LineSource
from .render import ChatDisplay, ChatSink, TurnRecord, cost_lines, runs_lines, say
from .slash import SlashCall, help_lines, parse_line

_MARKS = {"added": "+", "modified": "~", "deleted": "-"}


@dataclass(slots=True)
class SessionState:
    """What the session remembers between lines."""

    provider: str
    model: str | None
    profile: str
    # The newest run of the conversation: the next prompt continues it (None: a new one).
    last_run_id: str | None = None
    # The conversation when there is no history to continue from.
    conversation: list[Message] = field(default_factory=list)
    # The last `/undo` or `/restore`, until the next prompt: `/undo` then undoes it.
    last_restore_id: str | None = None
    turns: list[TurnRecord] = field(default_factory=list)
    restores: list[str] = field(default_factory=list)
    custom: list[PromptCommand] = field(default_factory=list)
    # Tools answered "always": not asked about again in this session (protected writes are).
    always_allowed: set[str] = field(default_factory=set)
    failed: bool = False  # a turn failed (piped sessions exit 1)


class ChatSession:
    def __init__(
        self,
        manager: RunManager,
        sandbox_root: str,
        lines: LineSource,
        console: Console,
        *,
        continue_from: str | None = None,
        echo: bool = False,
    ) -> None:
        self.manager = manager
        self.sandbox_root = sandbox_root
        self.lines = lines
        self.console = console
        self.display = ChatDisplay(console)
        self.state = SessionState(
            provider=manager.defaults.provider,
            model=manager.defaults.model,
            profile=manager.defaults.automation_profile,
            last_run_id=continue_from,
        )
        # Piped input is not on the screen: each prompt is shown before its turn.
        self.echo = echo

    @property
    def stored(self) -> bool:
        return self.manager.history is not None

    async def loop(self) -> None:
        """Read and answer lines until the input ends or `/exit`."""
        await self.refresh_commands()
        while True:
            try:
                line = await self.lines.read()
            except KeyboardInterrupt:  # Ctrl-C at the prompt: the line is dropped
                continue
            except EOFError:  # Ctrl-D, or the end of piped input
                return
            if not line.strip():
                continue
            if self.echo:
                say(self.console, [f"{PROMPT}{line}"], "bold")
            call = parse_line(line)
            if call is not None and call.builtin:
                if not await self.command(call):
                    return
                continue
            if call is not None and not any(c.name == call.name for c in self.state.custom):
                await self.refresh_commands()  # a command file written since the last prompt
                if not any(c.name == call.name for c in self.state.custom):
                    say(
                        self.console,
                        [f"unknown command /{call.name}: /help lists the commands"],
                        "yellow",
                    )
                    continue
            # The line goes to the core as typed: the core's RunManager expands a custom
            # command, once, for every front (expanding it here too would expand a command
            # whose text starts with `/` twice).
            await self.turn(line)
            await self.refresh_commands()

    async def refresh_commands(self) -> None:
        self.state.custom = await asyncio.to_thread(load_prompt_commands, self.sandbox_root)
        self.lines.offer_commands(self.state.custom)

    # -- a turn -----------------------------------------------------------------------------
    async def turn(self, prompt: str) -> None:
        """One prompt's run, continuing the conversation; Ctrl-C stops it, not the session."""
        state = self.state
        run_id = new_run_id()
        request = RunRequest(
            prompt=prompt,
            sandbox_root=self.sandbox_root,
            provider=state.provider,
            model=state.model,
            automation_profile=state.profile,
            run_id=run_id,
            continue_from=state.last_run_id if self.stored else None,
            conversation=() if self.stored else tuple(state.conversation),
        )
        sink = ChatSink(self.display, self.lines.ask, state.always_allowed)
        loop = asyncio.get_running_loop()
        interrupts: list[bool] = []
        loop.add_signal_handler(signal.SIGINT, self._interrupted, run_id, interrupts)
        try:
            outcome = await self.manager.run(request, sink)
        except ServiceError as exc:
            self.display.stop()
            self.display.end_line()
            # A conversation that cannot go on (a restore's id given to --continue, say).
            hint = " (/new starts a new conversation)" if "continue_from" in exc.message else ""
            say(self.console, [f"error: {exc.message}{hint}"], "red")
            state.failed = True
            if exc.kind is RUN_FAILED and self.stored:
                # The failed run is stored with the prompt: the conversation goes on from it.
                state.last_run_id = run_id
                state.turns.append(TurnRecord(run_id, prompt, "failed"))
            return
        finally:
            loop.remove_signal_handler(signal.SIGINT)
            self.display.stop()
        result = outcome.result
        self.display.show_turn(result, outcome.changed_files)
        if outcome.checkpoint_warning:
            say(self.console, [outcome.checkpoint_warning], "yellow")
        state.last_run_id = run_id
        state.conversation = list(result.messages)
        state.last_restore_id = None
        state.turns.append(
            TurnRecord(run_id, prompt, result.stop_reason, result.usage, result.cost_usd)
        )

    def _interrupted(self, run_id: str, interrupts: list[bool]) -> None:
        loop = asyncio.get_running_loop()
        if interrupts:
            # The second Ctrl-C: Python's own handler again, so the KeyboardInterrupt unwinds
            # the session (the history written, the MCP servers stopped) and exits 130.
            loop.remove_signal_handler(signal.SIGINT)
            os.kill(os.getpid(), signal.SIGINT)
            return
        interrupts.append(True)
        self.display.stop()
        self.display.end_line()
        say(self.console, ["stopping the turn (Ctrl-C again to quit)"], "yellow")
        self.manager.cancel(run_id)

    # -- slash commands ---------------------------------------------------------------------
    async def command(self, call: SlashCall) -> bool:
        """Run a built-in command; False when the session ends."""
        name, words, state = call.name, call.words, self.state
        if name in ("exit", "quit"):
            return False
        if name == "help":
            say(self.console, help_lines(state.custom))
        elif name == "cost":
            say(self.console, cost_lines(state.turns))
        elif name == "runs":
            say(self.console, runs_lines(state.turns, state.restores))
        elif name == "new":
            state.last_run_id = None
            state.conversation = []
            state.last_restore_id = None
            say(self.console, ["new conversation: the next prompt starts afresh"])
        elif name == "model":
            self._model(call.arguments)
        elif name == "profile":
            self._profile(call.arguments)
        elif name == "undo":
            await self._undo(words)
        elif name == "restore":
            await self._restore(words)
        return True

    def _model(self, arguments: str) -> None:
        """`/model NAME` changes the model; `/model PROVIDER [NAME]` the provider too (its
        default model without a NAME). The core checks both when the next prompt runs."""
        words = arguments.split()
        state = self.state
        if not words:
            shown = state.model or "the provider's default"
            say(
                self.console,
                [f"provider {state.provider}, model {shown} (/model [PROVIDER] NAME changes it)"],
            )
            return
        if words[0] in PROVIDERS:
            if len(words) > 2:
                say(self.console, ["use /model NAME or /model PROVIDER [NAME]"], "red")
                return
            state.provider, state.model = words[0], (words[1] if len(words) == 2 else None)
            shown = state.model or "its default model"
            say(self.console, [f"provider {state.provider}, {shown} from the next prompt on"])
            return
        state.model = arguments.strip()
        say(self.console, [f"model {state.model} from the next prompt on"])

    def _profile(self, name: str) -> None:
        if not name:
            say(self.console, [f"profile {self.state.profile} (/profile NAME changes it)"])
            return
        try:
            self.state.profile = check_profile(name)
        except ValueError as exc:
            say(self.console, [str(exc)], "red")
            return
        say(self.console, [f"profile {name} from the next prompt on"])

    async def _undo(self, words: list[str]) -> None:
        if words:
            say(
                self.console, ["/undo takes no arguments (to go back to a step: /restore N)"], "red"
            )
            return
        target = self.state.last_restore_id or self.state.last_run_id
        if target is None:
            say(self.console, ["nothing to undo yet: no prompt has run in this session"], "red")
            return
        await self._put_back(target, None)

    async def _restore(self, words: list[str]) -> None:
        if not 1 <= len(words) <= 2 or not words[0].isdigit():
            say(self.console, ["use /restore N (the step to go back before) or /restore N RUN_ID"])
            return
        run_id = words[1] if len(words) == 2 else self.state.last_run_id
        if run_id is None:
            say(self.console, ["no prompt has run in this session: /restore N RUN_ID"], "red")
            return
        await self._put_back(run_id, int(words[0]))

    async def _put_back(self, run_id: str, iteration: int | None) -> None:
        try:
            outcome = await self.manager.restore(run_id, iteration)
        except ServiceError as exc:
            say(self.console, [f"not restored: {exc.message}"], "red")
            return
        if outcome.restore_id is not None:
            self.state.last_restore_id = outcome.restore_id
            self.state.restores.append(outcome.restore_id)
        say(self.console, restored_lines(outcome))


def restored_lines(outcome: RestoreOutcome) -> list[str]:
    if not outcome.changed_files:
        return ["nothing to restore: the files are already as they were"]
    changed = outcome.changed_files
    lines = [f"restored {len(changed)} file(s):"]
    lines += [
        f"  {_MARKS[c.change]} {shown_path(c.path)}  {c.change}" for c in outcome.changed_files
    ]
    lines += [f"  kept {k.path}: an ignored or too-large file is in the way" for k in outcome.kept]
    lines.append("/undo undoes this restore")
    return lines
