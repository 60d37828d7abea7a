"""Putting a runtime together from user settings: shared by the CLI and the daemon."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .tool.llm import LLMCaller
from .tool.registry import ToolRegistry
from .tool.runner import ToolRunner
from .tool.runtime import DEFAULT_MAX_ITERATIONS, ToolCallingRuntime

SYSTEM_PROMPT = """\
You are cleveragents, a coding agent working inside one project folder (the sandbox). \
Use the tools to inspect and change files there; paths are relative to the project root and \
nothing outside it can be reached. Prefer reading before writing, make focused changes, and \
when a tool call fails read its error and correct the call instead of repeating it. \
When the task is done, answer with a short summary of what you did and found."""


def build_runtime(
    llm_caller: LLMCaller,
    registry: ToolRegistry,
    *,
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
    system_prompt: str | None = SYSTEM_PROMPT,
    runner: ToolRunner | None = None,
    **kwargs: Any,
) -> ToolCallingRuntime:
    return ToolCallingRuntime(
        registry=registry,
        runner=runner or ToolRunner(registry),
        llm_caller=llm_caller,
        max_iterations=max_iterations,
        system_prompt=system_prompt,
        **kwargs,
    )


def tool_rows(registry: ToolRegistry) -> Sequence[dict[str, Any]]:
    """The registry as plain data, for `cleveragents tools` and the daemon's tools request."""
    return [
        {
            "name": spec.name,
            "description": spec.description,
            "source": spec.source,
            "mutating": spec.mutating,
            "executes_code": spec.executes_code,
            "input_schema": spec.input_schema,
        }
        for spec in registry.specs()
    ]
