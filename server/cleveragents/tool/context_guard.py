"""The context guard: no request goes to the model larger than the model's window.

Before each model call the runtime asks the guard whether the request fits. The estimate is
characters / `CHARS_PER_TOKEN` (3.5: English prose runs about 4 characters a token, code and
JSON nearer 3) over the system prompt, the tool definitions and every message as the
provider will send it, times a calibration factor. The factor starts at 1 and only ever grows:
after each call it becomes the ratio of the tokens the provider reported to the estimate
when that ratio is higher (requests under `CALIBRATION_MIN_TOKENS` are too small to say
much, and a ratio above `MAX_CALIBRATION` is taken as a bad report, not a real ratio).

A request fits when its estimate is at most the window minus the answer's room (the caller's
`max_tokens`) minus a margin (`margin_tokens`). When it does not, the guard elides, in the
messages sent only: first the oldest tool results (each result message stays, answering its
calls, with a short "elided to fit the context: N characters" note as content), then the text
and large arguments of older assistant turns. A tool call and its result are never
separated, the prompt is never touched, and the newest assistant turn keeps its text. It
elides down to `ELISION_TARGET` of the limit, not just under it, so the conversation's prefix
(what a provider's prompt cache holds) changes once every several iterations, not every
turn. Sizes are counted once per message as it arrives, so a check costs O(1) until an
elision is due.

Before the window requires anything, a `ContextPolicy` priced for prompt caching may clear
old tool results early and in one large step (see its docstring); when eliding is not enough,
the oldest turns are dropped whole and described in a note (`compaction.py`). The rules and
the measured bills: docs/tokens.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .compaction import MAX_SUMMARY_CHARS, Ledger, droppable_units
from .context_policy import (
    ContextPolicy,
)
from .messages import (
    AssistantMessage,
    LLMRequest,
    Message,
    ToolCallRequest,
    ToolResult,
    ToolResultsMessage,
    ToolSchema,
    UserMessage,
)
from .result_budget import approx_chars, json_chars

CHARS_PER_TOKEN = 3.5
CALIBRATION_MIN_TOKENS = 1_000
MAX_CALIBRATION = 4.0
ELISION_TARGET = 0.6
"""Elide down to this share of the limit, so the next elision is several iterations away."""
DEFAULT_OUTPUT_RESERVE_TOKENS = 8_192
"""Room kept for the answer when the caller does not say its `max_tokens` (at most 1/8 of
the window, so a small local model keeps most of its window for input)."""
ELIDE_MIN_CHARS = 256
"""Results and texts shorter than this are kept: eliding them would save nothing."""
ELIDED_RESULT_CHARS = 200
"""About what an elided result's note takes (its JSON), for pricing a clearing step."""

# What a provider's wire format adds around each piece (role, block types, a ~30-character id).
MESSAGE_OVERHEAD_CHARS = 16
BLOCK_OVERHEAD_CHARS = 80
TOOL_OVERHEAD_CHARS = 32


def margin_tokens(window: int) -> int:
    """Slack for the estimate's error and the provider's own framing: 2% of the window,
    at least 1,024 tokens."""
    return max(1_024, window // 50)


def estimate_tokens(chars: int, factor: float = 1.0) -> int:
    return math.ceil(chars / CHARS_PER_TOKEN * factor)


def tools_chars(tools: Sequence[ToolSchema]) -> int:
    return sum(
        TOOL_OVERHEAD_CHARS + len(t.name) + len(t.description) + json_chars(t.input_schema)
        for t in tools
    )


def message_chars(message: Message, content_chars: Sequence[int] | None = None) -> int:
    """The characters `message` adds to a request; `content_chars` are a results message's
    content sizes when the caller measured them already. Ids are counted in the overhead."""
    if isinstance(message, ToolResultsMessage):
        results = message.results
        if content_chars is None:
            content_chars = [approx_chars(r.content) for r in results]
        return MESSAGE_OVERHEAD_CHARS + BLOCK_OVERHEAD_CHARS * len(results) + sum(content_chars)
    if isinstance(message, AssistantMessage):
        size = MESSAGE_OVERHEAD_CHARS + len(message.text)
        for call in message.tool_calls:
            size += BLOCK_OVERHEAD_CHARS + len(call.tool_name) + approx_chars(call.arguments)
        if message.provider_data:
            # Sent instead of text and calls when present (signed thinking blocks).
            size = max(size, MESSAGE_OVERHEAD_CHARS + approx_chars(message.provider_data))
        return size
    # An image costs tokens, not characters: counted as the characters those tokens are.
    images = sum(image.tokens for image in message.images)
    return MESSAGE_OVERHEAD_CHARS + len(message.text) + math.ceil(images * CHARS_PER_TOKEN)


def request_chars(request: LLMRequest) -> int:
    """The whole request measured from scratch (the guard keeps this sum incrementally)."""
    return (
        len(request.system or "")
        + tools_chars(request.tools)
        + sum(message_chars(m) for m in request.messages)
    )


def estimate_request_tokens(request: LLMRequest, factor: float = 1.0) -> int:
    return estimate_tokens(request_chars(request), factor)


def _clear_gain(message: ToolResultsMessage, content_chars: Sequence[int] | None) -> int:
    """Characters eliding a results message would save."""
    if content_chars is None:
        content_chars = [approx_chars(r.content) for r in message.results]
    gain = 0
    for size in content_chars:
        if size >= ELIDE_MIN_CHARS:
            gain += size - ELIDED_RESULT_CHARS
    return gain


def elision_note(chars: int) -> str:
    return f"elided to fit the context: {chars:,} characters"


def elided_results(message: ToolResultsMessage) -> ToolResultsMessage:
    """The message with each large result's content replaced by a short note (the same
    message when nothing in it is large)."""
    results = []
    changed = False
    for result in message.results:
        size = json_chars(result.content)
        if size < ELIDE_MIN_CHARS:
            results.append(result)
            continue
        note = (
            f"{elision_note(size)} of this result; call {result.tool_name} again, asking for "
            "less, if you still need it"
        )
        results.append(
            ToolResult(result.call_id, result.tool_name, {"elided": note}, result.is_error)
        )
        changed = True
    return ToolResultsMessage(tuple(results)) if changed else message


def _elided_arguments(arguments: Any) -> Any:
    if not isinstance(arguments, dict) or json_chars(arguments) < ELIDE_MIN_CHARS:
        return arguments
    return {
        key: value
        if json_chars(value) < ELIDE_MIN_CHARS // 2
        else f"[{elision_note(json_chars(value))}]"
        for key, value in arguments.items()
    }


def elided_assistant(message: AssistantMessage) -> AssistantMessage:
    """An older assistant turn with its long text and large call arguments replaced by notes.

    Its calls keep their ids and names (their results still answer them); provider data
    (signed thinking blocks) is dropped, which providers allow for turns before the last.
    """
    text = message.text
    if len(text) >= ELIDE_MIN_CHARS:
        text = f"[{elision_note(len(text))}]"
    calls = tuple(
        ToolCallRequest(c.call_id, c.tool_name, _elided_arguments(c.arguments), c.parse_error)
        for c in message.tool_calls
    )
    if text == message.text and calls == message.tool_calls and message.provider_data is None:
        return message
    return AssistantMessage(text, calls, None)


@dataclass(slots=True, frozen=True)
class ContextLimits:
    """How many tokens a request may hold: the window less the answer's room and a margin."""

    window: int
    max_output: int
    margin: int

    @property
    def input_limit(self) -> int:
        return self.window - self.max_output - self.margin

    @classmethod
    def for_window(cls, window: int, max_output: int | None) -> ContextLimits:
        reserve = (
            max_output
            if max_output is not None
            else min(DEFAULT_OUTPUT_RESERVE_TOKENS, window // 8)
        )
        return cls(window, reserve, margin_tokens(window))


class ContextGuard:
    """The messages the model is sent (`view`), kept within the limits as a run grows."""

    def __init__(
        self,
        limits: ContextLimits,
        fixed_chars: int,
        policy: ContextPolicy | None = None,
        mutating_tools: frozenset[str] = frozenset(),
    ) -> None:
        self.limits = limits
        self.policy = policy if policy is not None else ContextPolicy.at_the_limit()
        self.view: list[Message] = []
        self._sizes: list[int] = []
        # What each view message was when appended (the ledger describes dropped turns from
        # these: a result's small fields, path and exit_code, are never elided there).
        self._originals: list[Message] = []
        # Characters clearing each message would save (0: nothing left to clear).
        self._gains: list[int] = []
        self._fixed = fixed_chars
        self.chars = fixed_chars
        self.factor = 1.0
        limit = limits.input_limit
        trigger = self.policy.trigger_for(limit)
        # Below this many tokens a check has nothing to do (the trigger, else the limit).
        self._quiet_tokens = limit if trigger is None else trigger
        self._quiet_chars = 0.0
        self._set_quiet()
        self.elided_messages = 0
        self.compactions = 0
        self.ledger = Ledger(mutating_tools)
        # The model-written summary (runtime setting `compaction_summary`): what it has said
        # so far, and the turns dropped since it last did (kept only when asked for).
        self.summary = ""
        self.keep_dropped = False
        self.dropped_since_summary: list[Message] = []
        self._pinned: set[int] = set()  # ids of messages never dropped
        self._note_at: int | None = None
        self._results_from = 0  # no result before this index can be elided further
        self._texts_from = 0

    # -- accounting ----------------------------------------------------------------------
    def append(self, message: Message, content_chars: Sequence[int] | None = None) -> None:
        size = message_chars(message, content_chars)
        self.view.append(message)
        self._originals.append(message)
        self._sizes.append(size)
        self._gains.append(
            _clear_gain(message, content_chars) if type(message) is ToolResultsMessage else 0
        )
        self.chars += size
        if len(self.view) == 1:
            self.pin(message)

    def pin(self, message: Message) -> None:
        """Never drop `message` (the first message and the run's prompt are pinned)."""
        self._pinned.add(id(message))

    def estimate(self) -> int:
        """Tokens the next request is estimated at, calibration included."""
        return estimate_tokens(self.chars, self.factor)

    def _chars_for(self, tokens: int) -> float:
        return tokens * CHARS_PER_TOKEN / self.factor

    def _replace(self, index: int, message: Message) -> None:
        if message is self.view[index]:
            return
        size = message_chars(message)
        self.chars += size - self._sizes[index]
        self._sizes[index] = size
        self._gains[index] = 0
        self.view[index] = message
        self.elided_messages += 1

    # -- the check -----------------------------------------------------------------------
    def fit(self) -> bool:
        """Clear, elide or compact what it takes for the next request to fit; False when
        nothing can.

        Past the policy's trigger: all but the newest tool results, in one step worth
        taking. Over the limit, in order, until the request is down to `ELISION_TARGET` of
        the limit: older tool results, oldest first; older assistant turns' text and large
        arguments; the oldest turns, dropped whole and described in a note (compaction);
        and only if it still does not fit, the newest results (the note tells the model to
        ask for less).
        """
        if self.chars <= self._quiet_chars:  # the usual case: one comparison
            return True
        limit = self.limits.input_limit
        trigger = self.policy.trigger_for(limit)
        if trigger is not None and self.estimate() > trigger:
            self._clear_old_results(limit, trigger)
        if self.estimate() <= limit:
            return True
        goal = self._chars_for(int(limit * ELISION_TARGET))
        newest = self.view[-1] if self.view else None
        fresh = len(self.view) - 1 if isinstance(newest, ToolResultsMessage) else len(self.view)
        self._elide_results(goal, fresh)
        if self.estimate() > limit:
            self._elide_texts(goal)
        if self.estimate() > limit:
            self._compact(goal)
        if self.estimate() > limit and self.view and isinstance(self.view[-1], ToolResultsMessage):
            self._replace(len(self.view) - 1, elided_results(self.view[-1]))
        return self.estimate() <= limit

    def _clear_old_results(self, limit: int, trigger: int) -> None:
        """The policy's step: every result but the newest `keep_tool_uses`, and more of those
        (oldest first, never the newest message) while the request is above `ELISION_TARGET`
        of the trigger, so the next step is far away even in a small window; taken only
        when it clears at least `clear_at_least_tokens`."""
        if not self.view:
            return
        keep = self.policy.keep_tool_uses
        start = self._results_from
        stop = len(self.view)
        while stop > start and keep > 0:
            stop -= 1
            message = self.view[stop]
            if isinstance(message, ToolResultsMessage):
                keep -= len(message.results)
        fresh = len(self.view) - 1 if isinstance(self.view[-1], ToolResultsMessage) else stop
        goal = self._chars_for(int(trigger * ELISION_TARGET))
        gain = sum(self._gains[start:stop])
        while self.chars - gain > goal and stop < fresh:
            gain += self._gains[stop]
            stop += 1
        if estimate_tokens(gain, self.factor) < self.policy.clear_at_least_for(limit):
            return
        for index in range(start, stop):
            message = self.view[index]
            if isinstance(message, ToolResultsMessage) and self._gains[index]:
                self._replace(index, elided_results(message))
        self._results_from = stop

    def _elide_results(self, goal: float, stop: int) -> None:
        self._results_from = self._elide(
            self._results_from, stop, goal, ToolResultsMessage, elided_results
        )

    def _elide_texts(self, goal: float) -> None:
        newest = max(
            (i for i, m in enumerate(self.view) if isinstance(m, AssistantMessage)), default=-1
        )
        self._texts_from = self._elide(
            self._texts_from, newest, goal, AssistantMessage, elided_assistant
        )

    def _elide(
        self,
        start: int,
        stop: int,
        goal: float,
        kind: type[Message],
        elide: Callable[[Any], Message],
    ) -> int:
        """Elide the `kind` messages from `start` on until the goal is met or `stop` is
        reached; returns where to start next time (nothing before it can shrink further)."""
        index = start
        while index < stop and self.chars > goal:
            message = self.view[index]
            if isinstance(message, kind):
                self._replace(index, elide(message))
            index += 1
        return index

    def _compact(self, goal: float) -> None:
        """Drop the oldest whole turns until the goal is met (see `compaction.py`), keeping
        the pinned messages, the newest assistant turn and what follows it."""
        view = self.view
        newest = max((i for i, m in enumerate(view) if isinstance(m, AssistantMessage)), default=-1)
        note_at = self._note_at
        start = 1 if note_at is None else note_at + 1
        if newest < start:
            return
        saved = 0
        kept: list[int] = []  # pinned messages passed over: they stay, before the note
        resume = start
        dropped: list[int] = []
        for first, end in droppable_units(view, start, newest, self._pinned):
            if self.chars - saved <= goal:
                break
            kept.extend(range(resume, first))  # pinned ones skipped over
            dropped.extend(range(first, end))
            saved += sum(self._sizes[first:end])
            resume = end
        if not dropped:
            return
        self.ledger.add(self._originals[i] for i in dropped)
        if self.keep_dropped:
            self.dropped_since_summary.extend(self._originals[i] for i in dropped)
        note = UserMessage(self._note_text())
        head = start - 1 if note_at is not None else start  # the old note is replaced
        order = [*range(head), *kept]
        new_note_at = len(order)
        self.view = [view[i] for i in order] + [note] + view[resume:]
        self._sizes = [self._sizes[i] for i in order] + [message_chars(note)] + self._sizes[resume:]
        self._originals = [self._originals[i] for i in order] + [note] + self._originals[resume:]
        self._gains = [self._gains[i] for i in order] + [0] + self._gains[resume:]
        self.chars = self._fixed + sum(self._sizes)
        self._note_at = new_note_at
        shift = new_note_at + 1 - resume
        self._results_from = max(new_note_at + 1, self._results_from + shift)
        self._texts_from = max(new_note_at + 1, self._texts_from + shift)
        self.compactions += 1

    def _note_text(self) -> str:
        text = self.ledger.render()
        if self.summary:
            text += f"\nSummary of the removed turns, written by you earlier:\n{self.summary}"
        return text

    def set_summary(self, summary: str) -> bool:
        """Put the model's summary in the note (cut to `MAX_SUMMARY_CHARS`); False, and the
        note left as it was, when there is no note or the request would no longer fit."""
        note_at = self._note_at
        if note_at is None or not summary.strip():
            return False
        previous = self.summary
        self.summary = summary.strip()[:MAX_SUMMARY_CHARS]
        note = UserMessage(self._note_text())
        size = message_chars(note)
        if estimate_tokens(self.chars + size - self._sizes[note_at], self.factor) > (
            self.limits.input_limit
        ):
            self.summary = previous
            return False
        self.chars += size - self._sizes[note_at]
        self._sizes[note_at] = size
        self.view[note_at] = note
        self._originals[note_at] = note
        return True

    # -- learning from the provider ------------------------------------------------------
    def calibrate(self, sent_chars: int, reported_tokens: int) -> None:
        """Tighten the estimate when the provider counted more tokens than we did."""
        estimated = sent_chars / CHARS_PER_TOKEN
        if reported_tokens <= 0 or estimated < CALIBRATION_MIN_TOKENS:
            return
        ratio = reported_tokens / estimated
        if self.factor < ratio <= MAX_CALIBRATION:
            self.factor = ratio
            self._set_quiet()

    def rejected(self, sent_chars: int) -> None:
        """The provider refused a request of `sent_chars` as too long: it held more tokens
        than the window leaves for input, so the estimate was at least that far off."""
        estimated = max(1.0, sent_chars / CHARS_PER_TOKEN)
        needed = (self.limits.window - self.limits.max_output) / estimated * 1.05
        self.factor = max(self.factor * 1.25, needed)
        self._set_quiet()

    def _set_quiet(self) -> None:
        self._quiet_chars = self._chars_for(self._quiet_tokens) - 1
