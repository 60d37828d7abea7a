"""Requests built incrementally: each message is converted to a provider's format once.

A run resends its whole conversation on every model call. Converting all of it each time
costs time that grows with the run (quadratic over a run), and a prefix rebuilt from scratch
is only byte-stable if every conversion is. `MessageConverter` keeps each conversation's
converted messages and, on the next call, converts only what is new: the messages appended
since, and any older message the runtime replaced (its context guard swaps in elided copies
and compaction notes; a replaced message is a different object, so it is converted anew).
Messages compaction drops are just left out: the rest keep their conversions. Converted dicts are
shared between requests and must never be mutated; a provider that marks a message (a cache
breakpoint) marks a copy.

Conversations are told apart by the identity of their first message, and a bounded number of
them are kept (several runs may share one caller); a conversation that ended is forgotten.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from ..tool.messages import Message, ToolSchema

WireMessage = dict[str, Any]
ConvertOne = Callable[[Message], Sequence[WireMessage]]

MAX_CONVERSATIONS = 32
"""Conversations kept at once: more runs than this at once on one caller still work, but
convert their messages more than once."""


class _Conversation:
    __slots__ = ("parts", "sources", "wire")

    def __init__(self) -> None:
        self.sources: list[Message] = []
        self.parts: list[Sequence[WireMessage]] = []
        self.wire: list[WireMessage] = []


class MessageConverter:
    """`convert(messages)` equals `[w for m in messages for w in convert_one(m)]`, computed
    once per message object."""

    def __init__(self, convert_one: ConvertOne, max_conversations: int = MAX_CONVERSATIONS) -> None:
        self.convert_one = convert_one
        self.max_conversations = max_conversations
        self._conversations: OrderedDict[int, _Conversation] = OrderedDict()
        self.conversions = 0
        """Messages converted so far (a measure for tests: it grows by the new messages)."""

    def convert(self, messages: Sequence[Message]) -> list[WireMessage]:
        """The conversation in wire format: a new list each time; its dicts are shared."""
        if not messages:
            return []
        conversation = self._conversation(messages[0])
        known = len(conversation.sources)
        if len(messages) >= known and conversation.sources == list(messages[:known]):
            # The usual case: the same objects as last time, and some more. (List equality
            # tests identity first, so this costs a pointer compare per message.)
            for message in messages[known:]:
                self._append(conversation, message)
        else:
            self._rebuild(conversation, messages)
        return list(conversation.wire)

    def forget(self, messages: Sequence[Message]) -> None:
        """Drop a conversation that has ended (its converted messages are no longer needed)."""
        if messages:
            self._conversations.pop(id(messages[0]), None)

    def _conversation(self, first: Message) -> _Conversation:
        key = id(first)
        conversation = self._conversations.get(key)
        # The id of a message that was garbage collected can come back for another object:
        # the stored first message (kept alive by the entry) tells them apart.
        if conversation is None or conversation.sources[0] is not first:
            conversation = _Conversation()
            self._conversations[key] = conversation
            while len(self._conversations) > self.max_conversations:
                self._conversations.popitem(last=False)
        else:
            self._conversations.move_to_end(key)
        return conversation

    def _convert(self, message: Message) -> Sequence[WireMessage]:
        self.conversions += 1
        return tuple(self.convert_one(message))

    def _append(self, conversation: _Conversation, message: Message) -> None:
        parts = self._convert(message)
        conversation.sources.append(message)
        conversation.parts.append(parts)
        conversation.wire.extend(parts)

    def _rebuild(self, conversation: _Conversation, messages: Sequence[Message]) -> None:
        """Some older message was replaced, or some were dropped (compaction), or the list is
        another conversation's with the same start: keep every conversion whose message is
        still there, wherever it moved (the old sources keep their objects alive, so an id
        seen here is the same object)."""
        known = {
            id(message): part
            for message, part in zip(conversation.sources, conversation.parts, strict=True)
        }
        new_parts: list[Sequence[WireMessage]] = []
        for message in messages:
            part = known.get(id(message))
            new_parts.append(part if part is not None else self._convert(message))
        conversation.sources = list(messages)
        conversation.parts = new_parts
        conversation.wire = list(itertools.chain.from_iterable(new_parts))


class ToolsConverter:
    """A tool list in wire format, converted again only when the list changes."""

    def __init__(self, convert: Callable[[Sequence[ToolSchema]], list[WireMessage]]) -> None:
        self.convert = convert
        self._tools: list[ToolSchema] = []
        self._wire: list[WireMessage] = []

    def __call__(self, tools: Sequence[ToolSchema]) -> list[WireMessage]:
        current = list(tools)
        if current != self._tools:  # identity first, then by value: a few tools only
            self._tools = current
            self._wire = self.convert(tools)
        return list(self._wire)
