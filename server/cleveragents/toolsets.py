"""Where a registry's tools come from: built-ins, user modules and installed entry points."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import sys
from collections.abc import Iterable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING

from .tool.registry import ToolRegistry, ToolSpec, spec_of
from .workspace.builtin_names import BUILTIN_TOOL_NAMES

if TYPE_CHECKING:
    from .workspace.command_policy import CommandPolicy

ENTRY_POINT_GROUP = "cleveragents.tools"


class ToolLoadError(RuntimeError):
    """A user tool module or entry point could not be loaded; the message says which."""


def _import(module_name: str) -> ModuleType:
    """A module by dotted name (the current folder on the path, as `python -m` has it) or by
    the path of a `.py` file."""
    if module_name.endswith(".py") or os.sep in module_name:
        path = os.path.abspath(module_name)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"no such file: {path}")
        name = os.path.splitext(os.path.basename(path))[0]
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"{path} is not a Python module")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    return importlib.import_module(module_name)


def tools_in_module(module_name: str) -> list[ToolSpec]:
    """Every `@tool`-decorated function (or ToolSpec) defined at the top of a module."""
    try:
        module = _import(module_name)
    except Exception as exc:
        raise ToolLoadError(
            f"cannot import tool module {module_name!r}: {type(exc).__name__}: {exc} "
            "(give a dotted module name importable from here or PYTHONPATH, or a .py file)"
        ) from exc
    specs: list[ToolSpec] = []
    for _, value in inspect.getmembers(module):
        spec = value if isinstance(value, ToolSpec) else spec_of(value)
        if spec is not None and spec not in specs:
            specs.append(spec if spec.source != "python" else _with_source(spec, module_name))
    if not specs:
        raise ToolLoadError(f"module {module_name!r} defines no @tool functions")
    return specs


def _with_source(spec: ToolSpec, source: str) -> ToolSpec:
    from dataclasses import replace

    return replace(spec, source=source)


def tools_from_entry_points() -> list[ToolSpec]:
    """Tools that installed packages advertise in the `cleveragents.tools` group.

    An entry point names a module (all its @tool functions), a @tool function, or a ToolSpec.
    """
    if not may_declare_tools():
        return []
    # importlib.metadata is imported here: scanning installed packages is start-up cost.
    from importlib.metadata import entry_points

    specs: list[ToolSpec] = []
    for point in entry_points(group=ENTRY_POINT_GROUP):
        try:
            target = point.load()
        except Exception as exc:
            raise ToolLoadError(
                f"entry point {point.name!r} ({point.value}) failed to load: {exc}"
            ) from exc
        if inspect.ismodule(target):
            specs.extend(tools_in_module(target.__name__))
            continue
        spec = target if isinstance(target, ToolSpec) else spec_of(target)
        if spec is None:
            raise ToolLoadError(
                f"entry point {point.name!r} ({point.value}) is not a @tool function, "
                "a ToolSpec or a module"
            )
        specs.append(_with_source(spec, f"entry-point:{point.name}"))
    return specs


def may_declare_tools() -> bool:
    """Whether an installed package may declare `cleveragents.tools` entry points.

    A quick look before importlib.metadata (which imports email, zipfile and csv and parses
    every package's metadata): in each folder on sys.path, the entry_points.txt of every
    `.dist-info` and `.egg-info`, read only for the group's header. True (look properly)
    whenever something on sys.path is not a plain folder, or a file cannot be read.
    """
    header = f"[{ENTRY_POINT_GROUP}]"
    for entry in sys.path:
        folder = entry or "."
        try:
            names = os.listdir(folder)
        except NotADirectoryError:
            return True  # a zip file on sys.path: only importlib.metadata reads that
        except OSError:
            continue  # a folder that does not exist holds no packages
        for name in names:
            if not name.endswith((".dist-info", ".egg-info")):
                continue
            try:
                with open(os.path.join(folder, name, "entry_points.txt"), encoding="utf-8") as f:
                    if header in f.read():
                        return True
            except FileNotFoundError:
                continue
            except (OSError, UnicodeDecodeError):
                return True
    return False


def with_command_policy(registry: ToolRegistry, policy: CommandPolicy) -> ToolRegistry:
    """A copy of `registry` whose built-in run_command reaches what `policy` allows (a run's
    own command settings); `registry` itself when it has no built-in run_command."""
    from .workspace.builtins import with_builtins_replaced, with_write_guards
    from .workspace.command import CommandTool

    spec = registry.get("run_command")
    if spec is None or spec.source != "builtin":
        return registry
    swapped = with_builtins_replaced(registry, {"run_command": CommandTool(policy).run_command})
    # The file tools' protected-path guard follows the same settings.
    return with_write_guards(swapped, policy.protection)


def names_without_loading(
    tool_modules: Sequence[str] = (), *, builtins: bool = True, plugins: bool = True
) -> tuple[str, ...] | None:
    """The names `build_registry` would register with these arguments, when they are known
    without importing a tool: no tool modules and no installed package declaring plugin tools
    (the built-ins' names are a constant). None when only a build can tell, and report a
    module or plugin that fails to load.

    A caller that builds later with these names must pass `plugins=False`: a package
    installed meanwhile would add names nobody checked."""
    if tool_modules or (plugins and may_declare_tools()):
        return None
    return BUILTIN_TOOL_NAMES if builtins else ()


def build_registry(
    tool_modules: Iterable[str] = (),
    *,
    builtins: bool = True,
    plugins: bool = True,
    command_policy: CommandPolicy | None = None,
) -> ToolRegistry:
    """The registry a CLI run or the daemon offers: built-ins, then plugins, then modules.

    `command_policy` is what run_command may reach (default: from the environment).
    """
    registry = ToolRegistry()
    if builtins:
        from .workspace.builtins import register_builtin_tools

        register_builtin_tools(registry, command_policy=command_policy)
    extra: list[ToolSpec] = tools_from_entry_points() if plugins else []
    for module_name in tool_modules:
        extra.extend(tools_in_module(module_name))
    for spec in extra:
        if spec.name in registry:
            raise ToolLoadError(
                f"tool {spec.name!r} from {spec.source} clashes with one already registered "
                f"(from {registry.get(spec.name).source})"  # type: ignore[union-attr]
            )
        registry.add_spec(spec)
    return registry
