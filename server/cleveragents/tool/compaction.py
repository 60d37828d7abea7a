"""Compaction: when eliding is not enough, the oldest turns leave the conversation as blocks.

Eliding keeps every turn and empties old results; in a long run the turns themselves (each
assistant message, each call and its result note) still add up, and a run of small calls
would end with `context_exhausted` after a couple of thousand iterations. The context guard
then drops the oldest turns, each one whole: an assistant message together with the results
of its calls (so no call loses its result and no result its call: both providers refuse
either), older user messages of a continued conversation one by one. The first message and
the run's own prompt are never dropped, nor the newest assistant turn and what follows it.

In their place goes one note, a user message right after the pinned head of the
conversation, saying what the dropped turns did: the files read and changed, the commands
run with their exit codes, the other tools called and the failures, the user's older
messages and the model's last words before that point. It is derived from the messages as
they were appended (the results as the budget left them, whose small fields such as `path`
and `exit_code` are never cut), so it is deterministic and needs no model; each compaction
adds to the same ledger and writes the note again. Its lists keep their newest entries and
count the rest, so the note stays short however long the run.

Only the model's view changes: the run's records, its `messages` and the history keep every
turn.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from .messages import AssistantMessage, Message, ToolResult, ToolResultsMessage, UserMessage

NOTE_MARKER = "[Earlier in this conversation"
"""How every compaction note starts (what tells it from a user's own message)."""

READ_TOOLS = frozenset({"read_file"})
CHANGE_TOOLS = frozenset({"write_file", "edit_file"})
COMMAND_TOOLS = frozenset({"run_command"})

MAX_FILES_SHOWN = 30
MAX_COMMANDS_SHOWN = 12
MAX_OTHER_TOOLS_SHOWN = 12
MAX_USER_TEXTS_SHOWN = 3
MAX_QUOTE_CHARS = 300
MAX_COMMAND_CHARS = 160
MAX_PATH_CHARS = 200


def is_note(message: Message) -> TypeGuard[UserMessage]:
    return isinstance(message, UserMessage) and message.text.startswith(NOTE_MARKER)


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _quote(text: str) -> str:
    return '"' + _clip(text, MAX_QUOTE_CHARS).replace('"', "'") + '"'


@dataclass(slots=True)
class Ledger:
    """What the dropped turns did, added to at each compaction (insertion ordered)."""

    mutating_tools: frozenset[str] = frozenset()
    turns: int = 0
    calls: int = 0
    files_read: dict[str, int] = field(default_factory=dict)
    files_changed: dict[str, str] = field(default_factory=dict)
    commands: list[tuple[str, str]] = field(default_factory=list)
    commands_total: int = 0
    other_tools: Counter[str] = field(default_factory=Counter)
    failures: Counter[str] = field(default_factory=Counter)
    user_texts: list[str] = field(default_factory=list)
    user_texts_total: int = 0
    last_words: str = ""

    def add(self, messages: Iterable[Message]) -> None:
        """Take in dropped messages, oldest first."""
        calls: dict[str, tuple[str, Any]] = {}
        for message in messages:
            if isinstance(message, AssistantMessage):
                self.turns += 1
                if message.text.strip():
                    self.last_words = message.text
                for call in message.tool_calls:
                    calls[call.call_id] = (call.tool_name, call.arguments)
            elif isinstance(message, ToolResultsMessage):
                for result in message.results:
                    name, arguments = calls.pop(result.call_id, (result.tool_name, None))
                    self._add_call(name, arguments, result)
            elif not is_note(message):
                self.user_texts_total += 1
                self.user_texts = [*self.user_texts, message.text][-MAX_USER_TEXTS_SHOWN:]

    def _add_call(self, name: str, arguments: Any, result: ToolResult) -> None:
        self.calls += 1
        content = result.content
        args = arguments if isinstance(arguments, dict) else {}
        path = args.get("path")
        path = _clip(path, MAX_PATH_CHARS) if isinstance(path, str) else None
        if result.is_error:
            kind = content.get("error_kind")
            self.failures[kind if isinstance(kind, str) and kind else "error"] += 1
        if name in COMMAND_TOOLS:
            command = args.get("command")
            self.commands_total += 1
            self.commands.append(
                (
                    _clip(str(command) if command is not None else "?", MAX_COMMAND_CHARS),
                    _outcome(result),
                )
            )
            del self.commands[:-MAX_COMMANDS_SHOWN]
        elif name in READ_TOOLS and path is not None:
            if not result.is_error:  # a failed one is counted with the failures
                self.files_read[path] = self.files_read.pop(path, 0) + 1
        elif (name in CHANGE_TOOLS or name in self.mutating_tools) and path is not None:
            if not result.is_error:
                self.files_changed.pop(path, None)  # the newest change last
                self.files_changed[path] = name
        else:
            self.other_tools[name] += 1

    def render(self) -> str:
        """The note: short, factual, and bounded however many turns it covers."""
        head = f"{NOTE_MARKER}: {self.turns:,} assistant turn(s) with {self.calls:,} tool call(s)"
        if self.user_texts_total:
            head += f" and {self.user_texts_total:,} older user message(s)"
        lines = [
            head + " were removed from this conversation to fit the context window. The run's "
            "records keep them all. What they did:]"
        ]
        if self.files_read:
            lines.append("- Files read: " + _listing(list(self.files_read), MAX_FILES_SHOWN))
        if self.files_changed:
            changed = [f"{path} ({tool})" for path, tool in self.files_changed.items()]
            lines.append("- Files changed: " + _listing(changed, MAX_FILES_SHOWN))
        if self.commands:
            shown = "; ".join(f"`{command}` -> {outcome}" for command, outcome in self.commands)
            more = self.commands_total - len(self.commands)
            lines.append(
                "- Commands run: " + (f"{more:,} earlier, then " if more > 0 else "") + shown
            )
        if self.other_tools:
            common = self.other_tools.most_common(MAX_OTHER_TOOLS_SHOWN)
            rest = len(self.other_tools) - len(common)
            lines.append(
                "- Other calls: "
                + ", ".join(f"{name} x{count:,}" for name, count in common)
                + (f" and {rest:,} other tool(s)" if rest > 0 else "")
            )
        if self.failures:
            kinds = ", ".join(f"{kind} {count:,}" for kind, count in sorted(self.failures.items()))
            lines.append(f"- Failed calls: {sum(self.failures.values()):,} ({kinds})")
        if self.user_texts:
            quoted = "; ".join(_quote(text) for text in self.user_texts)
            lines.append(f"- The user said earlier: {quoted}")
        if self.last_words.strip():
            lines.append(f"- Your last words before this point: {_quote(self.last_words)}")
        lines.append(
            "Files may have changed since they were read: read one again before relying on "
            "its content. Earlier tool results are not available in this conversation any more."
        )
        return "\n".join(lines)


def _outcome(result: ToolResult) -> str:
    content = result.content
    code = content.get("exit_code")
    if isinstance(code, int) and not isinstance(code, bool):
        return f"exit {code}"
    if result.is_error:
        kind = content.get("error_kind")
        return str(kind) if kind else "failed"
    if "elided" in content:
        return "result elided"
    return "done"


def _listing(items: Sequence[str], limit: int) -> str:
    """The newest `limit` items, with a count of the older ones."""
    if len(items) <= limit:
        return ", ".join(items)
    return f"{len(items) - limit:,} more, then " + ", ".join(items[-limit:])


def droppable_units(
    view: Sequence[Message], start: int, stop: int, pinned: set[int]
) -> Iterable[tuple[int, int]]:
    """(first, end) index ranges of whole turns in `view[start:stop]`, oldest first, that may be
    dropped: an assistant message with the results message after it, a lone results message,
    or a user message that is not pinned. A turn that would reach `stop` is not offered."""
    index = start
    while index < stop:
        message = view[index]
        if id(message) in pinned:
            index += 1
            continue
        end = index + 1
        if (
            isinstance(message, AssistantMessage)
            and end < len(view)
            and isinstance(view[end], ToolResultsMessage)
        ):
            end += 1
        if end > stop:
            return
        yield index, end
        index = end


# -- the model-written summary (a setting, off by default) ------------------------------------
SUMMARY_SYSTEM = (
    "You condense part of a coding agent's conversation that is being removed to save room. "
    "Write a short summary (at most 200 words) that lets the agent carry on without it: the "
    "goal as understood, what was found (facts, file names, line numbers, decisions), what "
    "was changed, what failed and why, and what was still to do. Plain sentences; no "
    "preamble; do not invent anything that is not in the text."
)
MAX_SUMMARY_CHARS = 2_000
MAX_TRANSCRIPT_CHARS = 60_000
_TRANSCRIPT_ITEM_CHARS = 600


def transcript(messages: Sequence[Message], previous: str, limit: int) -> str:
    """The dropped turns as plain text for the summary request (at most `limit` characters:
    the oldest and the newest of them, around a marker), after the summary so far."""
    parts: list[str] = []
    for message in messages:
        if isinstance(message, AssistantMessage):
            if message.text.strip():
                parts.append("assistant: " + _clip(message.text, _TRANSCRIPT_ITEM_CHARS))
            for call in message.tool_calls:
                arguments = json.dumps(call.arguments, ensure_ascii=False, default=str)
                parts.append(f"call {call.tool_name} {_clip(arguments, _TRANSCRIPT_ITEM_CHARS)}")
        elif isinstance(message, ToolResultsMessage):
            for result in message.results:
                content = json.dumps(result.content, ensure_ascii=False, default=str)
                kind = "error" if result.is_error else "result"
                parts.append(
                    f"{kind} of {result.tool_name}: {_clip(content, _TRANSCRIPT_ITEM_CHARS)}"
                )
        elif not is_note(message):
            parts.append("user: " + _clip(message.text, _TRANSCRIPT_ITEM_CHARS))
    text = "\n".join(parts)
    if len(text) > limit:
        half = max(0, limit // 2 - 40)
        text = f"{text[:half]}\n[... {len(text) - 2 * half:,} characters left out ...]\n" + (
            text[-half:] if half else ""
        )
    head = f"Summary so far:\n{previous}\n\n" if previous.strip() else ""
    return f"{head}Conversation being removed:\n{text}\n\nWrite the summary now."
