"""The built-in workspace tools as ToolSpecs, ready for a ToolRegistry."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import partial
from typing import Any

from cleveragents.tool.plan import plan_tool_spec
from cleveragents.tool.registry import ToolRegistry, ToolSpec, make_spec
from cleveragents.tool.schema import schema_from_function

from .command import MAX_COMMAND_TIMEOUT_S, CommandTool
from .command_policy import CommandPolicy
from .files import edit_file, list_dir, protected_write, read_file, write_file
from .protected import ProtectedPaths
from .search import MAX_GREP_RESULTS, glob, grep

# The runner's own deadline sits past the longest timeout a model may ask for, so the
# command's timeout (which reports the output so far) always fires first.
RUN_COMMAND_SPEC_TIMEOUT_S = MAX_COMMAND_TIMEOUT_S + 30.0
FILE_TOOL_TIMEOUT_S = 120.0


def _spec(
    handler: Callable[..., Any],
    *,
    constraints: dict[str, dict[str, Any]] | None = None,
    mutating: bool = False,
    executes_code: bool = False,
    timeout_s: float = FILE_TOOL_TIMEOUT_S,
    changes_paths: tuple[str, ...] = (),
) -> ToolSpec:
    """A spec whose schema comes from the type hints, plus bounds the hints cannot say."""
    schema, description, _ = schema_from_function(handler)
    for name, extra in (constraints or {}).items():
        schema["properties"][name].update(extra)
    return make_spec(
        handler,
        description=description,
        input_schema=schema,
        mutating=mutating,
        executes_code=executes_code,
        timeout_s=timeout_s,
        source="builtin",
        schema_checked=True,  # tests/tool/test_registry_schema.py checks every built-in schema
        changes_paths=changes_paths,
    )


def builtin_tools(command_policy: CommandPolicy | None = None) -> list[ToolSpec]:
    """read_file, write_file, edit_file, list_dir, glob, grep, run_command and update_plan.

    `command_policy` decides what run_command can reach; by default the environment's
    (CommandPolicy.from_environment, which raises ValueError on a malformed setting).
    """
    commands = CommandTool(command_policy)
    guard = partial(protected_write, commands.policy.protection)
    return [
        _spec(read_file, constraints={"offset": {"minimum": 1}, "limit": {"minimum": 1}}),
        replace(_spec(write_file, mutating=True, changes_paths=("path",)), write_guard=guard),
        replace(
            _spec(
                edit_file,
                constraints={"old_text": {"minLength": 1}},
                mutating=True,
                changes_paths=("path",),
            ),
            write_guard=guard,
        ),
        _spec(list_dir),
        _spec(glob, constraints={"pattern": {"minLength": 1}}),
        _spec(
            grep,
            constraints={
                "pattern": {"minLength": 1},
                "max_results": {"minimum": 1, "maximum": MAX_GREP_RESULTS},
            },
        ),
        _spec(
            commands.run_command,
            constraints={
                "command": {"minLength": 1},
                "timeout_s": {"exclusiveMinimum": 0, "maximum": MAX_COMMAND_TIMEOUT_S},
            },
            mutating=True,
            executes_code=True,
            timeout_s=RUN_COMMAND_SPEC_TIMEOUT_S,
        ),
        plan_tool_spec(),
    ]


def register_builtin_tools(
    registry: ToolRegistry,
    *,
    replace: bool = False,
    command_policy: CommandPolicy | None = None,
) -> list[ToolSpec]:
    """Add every built-in tool to `registry`; returns the specs added."""
    return [registry.add_spec(spec, replace=replace) for spec in builtin_tools(command_policy)]


def with_builtins_replaced(
    registry: ToolRegistry, handlers: Mapping[str, Callable[..., Any]]
) -> ToolRegistry:
    """A copy of `registry` whose built-in tools named in `handlers` run those instead.

    Each keeps its spec (name, schema, description, flags, timeout): the model, the approval
    rules and the history see the same tool.
    """
    swapped = ToolRegistry()
    for spec in registry.specs():
        handler = handlers.get(spec.name) if spec.source == "builtin" else None
        if handler is not None:
            spec = dataclasses.replace(
                spec, handler=handler, is_async=inspect.iscoroutinefunction(handler)
            )
        swapped.add_spec(spec)
    return swapped


def with_write_guards(registry: ToolRegistry, protection: ProtectedPaths) -> ToolRegistry:
    """A copy of `registry` whose built-in file writers guard protected paths as `protection`
    says (a run's own settings); every other spec is kept as it is."""
    guard = partial(protected_write, protection)
    guarded = ToolRegistry()
    for spec in registry.specs():
        if spec.source == "builtin" and spec.write_guard is not None:
            spec = dataclasses.replace(spec, write_guard=guard)
        guarded.add_spec(spec)
    return guarded
