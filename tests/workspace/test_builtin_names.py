"""The built-in tools' names as a constant: what `initialize` checks client tools against
without importing the tools (tests/test_plugin_scan.py: when that is enough)."""

from __future__ import annotations

from cleveragents.toolsets import build_registry
from cleveragents.workspace.builtin_names import BUILTIN_TOOL_NAMES
from cleveragents.workspace.builtins import builtin_tools


def test_the_constant_names_every_builtin_in_registration_order() -> None:
    assert BUILTIN_TOOL_NAMES == tuple(spec.name for spec in builtin_tools())
    assert BUILTIN_TOOL_NAMES == tuple(build_registry(plugins=False).names())
