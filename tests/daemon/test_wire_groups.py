"""The wire types load by group: each group's list is its module's types, and a daemon
answering `initialize` builds `initialize`'s group alone (issue 21's cold start)."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import attrs
import pytest

from cleveragents.protocol import wire


@pytest.mark.parametrize("group", sorted(wire.TYPE_GROUPS))
def test_each_group_lists_exactly_the_types_its_module_defines(group: str) -> None:
    module = importlib.import_module(f"{wire.__name__}.{group}")
    defined = {
        name
        for name, value in vars(module).items()
        if isinstance(value, type) and attrs.has(value) and value.__module__ == module.__name__
    }
    assert defined == set(wire.TYPE_GROUPS[group])


def test_a_type_named_through_the_package_is_its_groups_class() -> None:
    from cleveragents.protocol.wire.history import RunDetail

    assert wire.RunDetail is RunDetail
    assert "RunDetail" in dir(wire)
    assert wire.METHODS_BY_NAME["cleveragents/getRun"].result is RunDetail


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="NoSuchType"):
        _ = wire.NoSuchType
    assert not hasattr(wire, "no_such_name")


def test_the_schema_sees_every_group() -> None:
    names = {cls.__name__ for cls in wire.wire_types()}
    assert names == {name for names in wire.TYPE_GROUPS.values() for name in names}
    assert len(names) == sum(len(names) for names in wire.TYPE_GROUPS.values())


# In a fresh interpreter: what the daemon's modules and its `initialize` translation load.
_INITIALIZE_ONLY = """
import json, sys
import cleveragents.daemon.server
from cleveragents.daemon.config import initialization_settings
initialization_settings(
    {"provider": "replay", "automationProfile": "full-auto", "commandLimits": {"processes": 64},
     "prices": {"m": {"input": 1.0, "output": 2.0}}},
    {},
    capabilities_experimental={"cleveragents": {"tools": [{"name": "t", "description": "d",
        "inputSchema": {"type": "object"}}]}},
)
print(json.dumps(sorted(m for m in sys.modules if m.startswith("cleveragents.protocol.wire"))))
"""


def test_the_daemon_and_initialize_build_only_the_initialize_group() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _INITIALIZE_ONLY], capture_output=True, text=True, check=True
    )
    loaded = json.loads(done.stdout)
    assert loaded == [
        "cleveragents.protocol.wire",
        "cleveragents.protocol.wire.common",
        "cleveragents.protocol.wire.initialize",
    ]
