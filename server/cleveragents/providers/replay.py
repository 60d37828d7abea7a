"""The replay provider: plays scripted responses from a JSON file (demos, tests, bug reports).

Script format:

    {"responses": [
        {"text": "Let me look.", "tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}]},
        {"text": "Done.", "delay_ms": 50}
    ]}

The n-th LLM call of a run gets the n-th response, so one caller serves any number of runs.
`arguments` may also be a string: it is then passed on raw, as a model's invalid JSON would be.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from dataclasses import dataclass
from typing import Any

from ..tool.llm import TextSink
from ..tool.messages import LLMRequest, LLMResponse, ToolCallRequest
from ..tool.records import Usage
from ..tool.router import loads_strict


class ReplayScriptError(ValueError):
    """The script file is missing, not JSON, or not in the replay format."""


@dataclass(slots=True, frozen=True)
class ScriptedResponse:
    text: str
    tool_calls: tuple[ToolCallRequest, ...]
    delay_s: float


def _parse_call(raw: Any, where: str, index: int) -> ToolCallRequest:
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        raise ReplayScriptError(f"{where}: each tool call needs a string 'name'")
    arguments = raw.get("arguments", {})
    parse_error = None
    if isinstance(arguments, str):
        try:
            arguments = loads_strict(arguments)
        except ValueError as exc:
            parse_error = str(exc)
    call_id = raw.get("id") or f"{where.replace(' ', '_')}_call_{index}"
    return ToolCallRequest(str(call_id), raw["name"], arguments, parse_error)


def parse_script(data: Any) -> list[ScriptedResponse]:
    entries = data.get("responses") if isinstance(data, dict) else data
    if not isinstance(entries, list) or not entries:
        raise ReplayScriptError("a replay script needs a non-empty 'responses' list")
    responses: list[ScriptedResponse] = []
    for number, entry in enumerate(entries, 1):
        where = f"response {number}"
        if not isinstance(entry, dict):
            raise ReplayScriptError(f"{where}: expected an object")
        text = entry.get("text", "")
        if not isinstance(text, str):
            raise ReplayScriptError(f"{where}: 'text' must be a string")
        calls = entry.get("tool_calls", [])
        if not isinstance(calls, list):
            raise ReplayScriptError(f"{where}: 'tool_calls' must be a list")
        delay_ms = entry.get("delay_ms", 0)
        if not isinstance(delay_ms, int | float) or delay_ms < 0:
            raise ReplayScriptError(f"{where}: 'delay_ms' must be a non-negative number")
        responses.append(
            ScriptedResponse(
                text=text,
                tool_calls=tuple(_parse_call(c, where, i) for i, c in enumerate(calls, 1)),
                delay_s=float(delay_ms) / 1000.0,
            )
        )
    return responses


class ReplayCaller:
    def __init__(self, responses: list[ScriptedResponse]) -> None:
        self.responses = responses

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> ReplayCaller:
        try:
            with open(path, encoding="utf-8") as handle:
                data = json.load(handle)
        except FileNotFoundError:
            raise ReplayScriptError(f"replay script not found: {path}") from None
        except OSError as exc:
            raise ReplayScriptError(f"cannot read replay script {path}: {exc.strerror}") from None
        except json.JSONDecodeError as exc:
            raise ReplayScriptError(f"replay script {path} is not valid JSON: {exc}") from None
        return cls(parse_script(data))

    async def complete(self, request: LLMRequest, on_text: TextSink | None = None) -> LLMResponse:
        index = request.iteration - 1
        if index >= len(self.responses):
            raise ReplayScriptError(
                f"the replay script has {len(self.responses)} responses; "
                f"iteration {request.iteration} asked for another"
            )
        scripted = self.responses[index]
        if scripted.delay_s:
            await asyncio.sleep(scripted.delay_s)
        if on_text is not None:
            # Word by word, so clients see text stream as it would from a real model.
            for piece in re.findall(r"\S+\s*|\s+", scripted.text):
                on_text(piece)
        return LLMResponse(
            text=scripted.text,
            tool_calls=list(scripted.tool_calls),
            stop_reason="tool_use" if scripted.tool_calls else "end_turn",
            usage=Usage(),
        )
