"""Lazy package exports: `from package import Name` works, but only imports Name's module then.

A package `__init__` that imports every submodule makes importing any one of them pay for all
(the daemon's cold start is measured: bench/daemon_bench.py). Such a package lists its exports
here instead, and repeats the imports under `TYPE_CHECKING` for type checkers.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(module: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` for `module` (a package or a plain module): `exports` maps a
    name to the module it comes from, relative to the package (".x")."""

    def __getattr__(name: str) -> Any:
        source = exports.get(name)
        if source is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(source, sys.modules[module].__package__), name)
        setattr(sys.modules[module], name, value)  # Found directly next time.
        return value

    return __getattr__
