"""The offline model: deterministic, no network, no key.

It exercises the tools it is given with arguments synthesised from their schemas (and from
what earlier calls returned), read-only tools first and mutating ones only where the run's
automation profile may allow them, then answers with a summary of what it saw. Given a prompt
of several steps ("..., then ...", a numbered or bulleted list) and the `update_plan` tool, it
keeps a plan of its phases (look around, read, change) as it goes. Everything is derived from
the conversation in the request, so one instance serves any number of runs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from ..tool.llm import TextSink
from ..tool.messages import (
    AssistantMessage,
    LLMRequest,
    LLMResponse,
    ToolCallRequest,
    ToolResult,
    ToolResultsMessage,
    ToolSchema,
    UserMessage,
)
from ..tool.plan import PLAN_TOOL
from ..tool.records import Usage

NOTICE = "[offline model: no LLM provider configured, so this run is deterministic and local]"
REPORT_FILE = "cleveragents-offline-report.md"
REPORT_TITLE = "# cleveragents offline report"

_PATH_KEYS = ("path", "file_path", "file", "filename", "filepath")
_DIR_KEYS = ("directory", "dir", "cwd")
_CONTENT_KEYS = ("content", "contents", "text", "data")
_OLD_KEYS = ("old_string", "old_text", "old", "search")
_NEW_KEYS = ("new_string", "new_text", "new", "replacement", "replace")
_PATTERN_KEYS = ("pattern", "regex", "query", "glob")
_COMMAND_KEYS = ("command", "cmd")


def _allowed(tool: ToolSchema, profile: str) -> bool:
    if not tool.mutating:
        return True
    if profile == "read-only":
        return False
    # Commands only where nobody has to be asked; file edits go through approval.
    return not tool.executes_code or profile == "full-auto"


class _Observations:
    """What earlier tool results revealed: file paths and words worth searching for."""

    def __init__(self, prompt: str, results: Iterable[ToolResult]) -> None:
        self.files: list[str] = []
        self.matches: list[str] = []
        self.prompt = prompt
        for result in results:
            if not result.is_error:
                self._collect(result.content, depth=0)

    def _collect(self, value: Any, depth: int) -> None:
        if depth > 4 or len(self.files) >= 50:
            return
        if isinstance(value, dict):
            kind = value.get("type") or value.get("kind")
            path = value.get("path") or value.get("name")
            if isinstance(path, str) and kind in ("file", None) and _looks_like_file(path):
                self._add(path)
            for item in value.values():
                self._collect(item, depth + 1)
        elif isinstance(value, list):
            for item in value:
                self._collect(item, depth + 1)
        elif isinstance(value, str) and "\n" not in value:
            match = _MATCH_LINE.match(value)
            if match:  # a search hit, "path:line:text"
                self._add(match.group(1))
                if len(self.matches) < 20 and value not in self.matches:
                    self.matches.append(value)
            elif _looks_like_file(value):
                self._add(value)

    def _add(self, path: str) -> None:
        if path not in self.files and not path.endswith(REPORT_FILE):
            self.files.append(path)

    def best_file(self) -> str | None:
        # A file a search hit first, else a README, else source: whatever tells the most.
        hit = {m.split(":", 1)[0] for m in self.matches}
        ranked = sorted(
            self.files,
            key=lambda p: (
                p not in hit,
                not re.search(r"readme", p, re.I),
                not p.endswith(".py"),
                len(p),
                p,
            ),
        )
        return ranked[0] if ranked else None

    def search_pattern(self) -> str:
        """A regex for the prompt's most telling word: a marker like TODO, else the longest."""
        markers: list[str] = re.findall(r"\b([A-Z]{3,})s?\b", self.prompt)
        if markers:
            return markers[0]
        words: list[str] = re.findall(r"[A-Za-z_][A-Za-z0-9_]{3,}", self.prompt)
        if not words:
            return "TODO"
        word = max(words, key=len)
        return "(?i)" + (word[:-1] + "s?" if word.endswith("s") else word)


_MATCH_LINE = re.compile(r"^([\w./-]+\.\w{1,8}):\d+:")


def _looks_like_file(text: str) -> bool:
    return bool(re.fullmatch(r"[\w./-]{1,200}\.\w{1,8}", text)) and ".." not in text


def _first_key(properties: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        if key in properties:
            return key
    return None


def synthesise(schema: dict[str, Any], name: str = "") -> Any:
    """A value that satisfies a JSON Schema fragment: its default, first enum, or a minimum."""
    if "default" in schema:
        return schema["default"]
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            return synthesise(schema[key][0], name)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "string":
        text = "example"
        return text.ljust(int(schema.get("minLength", 0)), "x")
    if kind == "integer":
        return int(schema.get("minimum", 1))
    if kind == "number":
        return float(schema.get("minimum", 1))
    if kind == "boolean":
        return False
    if kind == "array":
        count = int(schema.get("minItems", 0))
        return [synthesise(schema.get("items", {}), name) for _ in range(count)]
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties", {})
        return {key: synthesise(properties.get(key, {}), key) for key in schema.get("required", [])}
    if kind == "null":
        return None
    return "example"


class OfflineCaller:
    """Deterministic model: a tool at a time where order matters, then a summary."""

    vision = False  # it reads text only: a run with images is refused before it starts

    async def complete(self, request: LLMRequest, on_text: TextSink | None = None) -> LLMResponse:
        prompt, calls, results = _conversation(request)
        seen = _Observations(prompt, results.values())
        called = {c.tool_name for c in calls}
        tools = [t for t in request.tools if t.name != PLAN_TOOL]
        response = self._next_calls(request, tools, seen, called)
        if len(tools) < len(request.tools) and _several_steps(prompt):
            response = _with_plan(response, tools, request, calls)
        if response is None:
            response = LLMResponse(text=_summary(prompt, calls, results), stop_reason="end_turn")
        if on_text is not None and response.text:
            for piece in re.findall(r"\S+\s*|\s+", response.text):
                on_text(piece)
        response.usage = Usage()
        return response

    def _next_calls(
        self, request: LLMRequest, tools: list[ToolSchema], seen: _Observations, called: set[str]
    ) -> LLMResponse | None:
        waiting = [t for t in tools if t.name not in called]
        allowed = [t for t in waiting if _allowed(t, request.automation_profile)]
        read_only = [t for t in allowed if not t.mutating]
        # Discovery first (tools that need no file name), then readers fed by what was found.
        ready = [t for t in read_only if not _needs_file(t)]
        if not ready:
            ready = [t for t in read_only if seen.best_file() is not None]
        if not ready and read_only:
            ready = read_only
        if ready:
            calls = [self._call(t, seen, request.iteration, i) for i, t in enumerate(ready)]
            names = ", ".join(t.name for t in ready)
            return LLMResponse(f"Looking at the workspace with {names}.", calls, "tool_use")
        mutating = [t for t in allowed if t.mutating]
        if mutating:
            # One at a time: an edit must see the file an earlier write created.
            tool = mutating[0]
            call = self._call(tool, seen, request.iteration, 0)
            return LLMResponse(f"Next, {tool.name}.", [call], "tool_use")
        return None

    def _call(
        self, tool: ToolSchema, seen: _Observations, iteration: int, index: int
    ) -> ToolCallRequest:
        schema = tool.input_schema
        properties: dict[str, Any] = schema.get("properties", {})
        required = set(schema.get("required", []))
        arguments: dict[str, Any] = {}
        for key in required:
            arguments[key] = synthesise(properties.get(key, {}), key)
        path_key = _first_key(properties, _PATH_KEYS)
        if path_key and path_key in required:
            if tool.mutating:
                arguments[path_key] = REPORT_FILE
            else:
                arguments[path_key] = seen.best_file() or "."
        pattern_key = _first_key(properties, _PATTERN_KEYS)
        if pattern_key and pattern_key in required:
            is_glob = "glob" in tool.name or pattern_key == "glob"
            arguments[pattern_key] = "**/*" if is_glob else seen.search_pattern()
        content_key = _first_key(properties, _CONTENT_KEYS)
        if content_key and content_key in required and tool.mutating:
            arguments[content_key] = _report(seen)
        old_key = _first_key(properties, _OLD_KEYS)
        new_key = _first_key(properties, _NEW_KEYS)
        if old_key in required and new_key in required and old_key and new_key:
            arguments[old_key] = REPORT_TITLE
            arguments[new_key] = REPORT_TITLE + " (checked)"
        command_key = _first_key(properties, _COMMAND_KEYS)
        if command_key and command_key in required:
            arguments[command_key] = "ls"
        for key in _DIR_KEYS:
            if key in required:
                arguments[key] = "."
        return ToolCallRequest(f"offline_{iteration}_{index}", tool.name, arguments)


_STEP_BREAK = re.compile(r"\bthen\b|;|\n\s*(?:\d+[.)]|[-*])\s+", re.IGNORECASE)
_PHASES = (
    ("look", "Look around the workspace"),
    ("read", "Read what looks most relevant"),
    ("change", "Make the changes"),
)


def _several_steps(prompt: str) -> bool:
    """Whether the prompt asks for more than one thing in a row (then; a list)."""
    parts = [part for part in _STEP_BREAK.split(prompt) if re.search(r"[^\W\d_]{3,}", part)]
    return len(parts) > 1


def _phase_of(call: ToolCallRequest, tools: dict[str, ToolSchema]) -> str:
    tool = tools.get(call.tool_name)
    if tool is None or tool.mutating:
        return "change"
    return "read" if _needs_file(tool) else "look"


def _with_plan(
    response: LLMResponse | None,
    tools: list[ToolSchema],
    request: LLMRequest,
    calls: list[ToolCallRequest],
) -> LLMResponse | None:
    """`response` with an update_plan call first when its phase changes the plan (and, once
    nothing is left to do, a response that marks every step done)."""
    by_name = {t.name: t for t in tools}
    profile = request.automation_profile
    present = {
        "look": any(not t.mutating and not _needs_file(t) for t in tools),
        "read": any(not t.mutating and _needs_file(t) for t in tools),
        "change": any(t.mutating and _allowed(t, profile) for t in tools),
    }
    phases = [(key, text) for key, text in _PHASES if present[key]]
    keys = [key for key, _ in phases]
    if response is None:
        current = len(phases)  # every step done
    else:
        found = {_phase_of(c, by_name) for c in response.tool_calls}
        current = max((keys.index(k) for k in found if k in keys), default=-1)
        if current < 0:
            return response
    steps = [
        {
            "text": text,
            "status": "done" if i < current else "in_progress" if i == current else "pending",
        }
        for i, (_, text) in enumerate(phases)
    ]
    sent = [c.arguments.get("steps") for c in calls if c.tool_name == PLAN_TOOL]
    if not steps or (sent and sent[-1] == steps):
        return response
    plan = ToolCallRequest(f"offline_{request.iteration}_plan", PLAN_TOOL, {"steps": steps})
    if response is None:
        return LLMResponse("Every step is done.", [plan], "tool_use")
    return LLMResponse(response.text, [plan, *response.tool_calls], response.stop_reason)


def _needs_file(tool: ToolSchema) -> bool:
    required = set(tool.input_schema.get("required", []))
    return any(k in required for k in _PATH_KEYS)


def _conversation(
    request: LLMRequest,
) -> tuple[str, list[ToolCallRequest], dict[str, ToolResult]]:
    """The latest prompt, and the calls and results made since it."""
    prompt = ""
    calls: list[ToolCallRequest] = []
    results: dict[str, ToolResult] = {}
    for message in request.messages:
        if isinstance(message, UserMessage):
            prompt, calls, results = message.text, [], {}
        elif isinstance(message, AssistantMessage):
            calls.extend(message.tool_calls)
        elif isinstance(message, ToolResultsMessage):
            results.update({r.call_id: r for r in message.results})
    return prompt, calls, results


def _report(seen: _Observations) -> str:
    lines = [REPORT_TITLE, "", f"Prompt: {seen.prompt}", "", "Files seen:"]
    lines += [f"- {path}" for path in seen.files[:20]] or ["- (none)"]
    if seen.matches:
        lines += ["", "Search hits:"] + [f"- {m.strip()}" for m in seen.matches]
    return "\n".join(lines) + "\n"


def _brief(content: dict[str, Any], limit: int = 160) -> str:
    text = json.dumps(content, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _summary(prompt: str, calls: list[ToolCallRequest], results: dict[str, ToolResult]) -> str:
    if not calls:
        return f"{NOTICE}\nNo tools were available, so there was nothing to do for: {prompt}"
    ok = sum(1 for c in calls if c.call_id in results and not results[c.call_id].is_error)
    lines = [
        NOTICE,
        f"I made {len(calls)} tool call(s) for the prompt {prompt!r}: "
        f"{ok} succeeded, {len(calls) - ok} failed.",
    ]
    for call in calls:
        result = results.get(call.call_id)
        if result is None:
            lines.append(f"- {call.tool_name}: no result")
        elif result.is_error:
            lines.append(f"- {call.tool_name} failed: {result.content.get('error')}")
        else:
            lines.append(f"- {call.tool_name}: {_brief(result.content)}")
    return "\n".join(lines)
