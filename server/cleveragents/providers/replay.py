"""The replay provider: plays scripted responses from a JSON file (demos, tests, bug reports).

Script format:

    {"model": "claude-sonnet-4-5",
     "responses": [
        {"text": "Let me look.", "tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}],
         "usage": {"input_tokens": 1200, "output_tokens": 40, "cache_write_tokens": 1000}},
        {"text": "Done.", "delay_ms": 50}
    ]}

The n-th LLM call of a run gets the n-th response, so one caller serves any number of runs.
`arguments` may also be a string: it is then passed on raw, as a model's invalid JSON would be.
`usage` is what the response reports (`input_tokens` counts all input, cache reads and
writes included, as `Usage` does; absent: all zero). `model` (optional; a `--model` given to
the provider wins) is the model the script stands for: its price and window apply to the run.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from dataclasses import dataclass, field, replace
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
    usage: Usage = field(default_factory=Usage)


_USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


def _parse_usage(raw: Any, where: str) -> Usage:
    if raw is None:
        return Usage()
    if not isinstance(raw, dict):
        raise ReplayScriptError(f"{where}: 'usage' must be an object")
    unknown = sorted(set(raw) - set(_USAGE_FIELDS))
    if unknown:
        raise ReplayScriptError(
            f"{where}: unknown usage field(s) {', '.join(unknown)}; use {', '.join(_USAGE_FIELDS)}"
        )
    counts: dict[str, int] = {}
    for name in _USAGE_FIELDS:
        value = raw.get(name, 0)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ReplayScriptError(f"{where}: usage {name} must be a whole number >= 0")
        counts[name] = value
    if counts["cache_read_tokens"] + counts["cache_write_tokens"] > counts["input_tokens"]:
        raise ReplayScriptError(
            f"{where}: usage input_tokens counts all input, cache reads and writes included, "
            "so it cannot be less than their sum"
        )
    return Usage(**counts)


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
                usage=_parse_usage(entry.get("usage"), where),
            )
        )
    return responses


def script_model(data: Any) -> str | None:
    """The script's `model`, if it names one."""
    model = data.get("model") if isinstance(data, dict) else None
    if model is not None and (not isinstance(model, str) or not model.strip()):
        raise ReplayScriptError("a replay script's 'model' must be a non-empty string")
    return model


class ReplayCaller:
    def __init__(self, responses: list[ScriptedResponse], model: str | None = None) -> None:
        self.responses = responses
        # Read by the runtime (prices, window) like a real provider's model name.
        self.model = model
        # A script answers whatever it is sent, images included (scripted runs with them).
        self.vision = True

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], model: str | None = None) -> ReplayCaller:
        try:
            with open(path, encoding="utf-8") as handle:
                data = json.load(handle)
        except FileNotFoundError:
            raise ReplayScriptError(f"replay script not found: {path}") from None
        except OSError as exc:
            raise ReplayScriptError(f"cannot read replay script {path}: {exc.strerror}") from None
        except json.JSONDecodeError as exc:
            raise ReplayScriptError(f"replay script {path} is not valid JSON: {exc}") from None
        return cls(parse_script(data), model or script_model(data))

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
            # A fresh one per response: one script serves many runs, each keeping its own.
            usage=replace(scripted.usage),
        )
