"""The schema's field docs of settings come from the settings table (issue 18, item 2).

Every row with a wire option is a field of `RunParams` (run level) and of
`InitializationOptions` (daemon level), `commandLimits.*` a field of `CommandLimits`; each
such field's description in the checked-in protocol/schema.json is the one made from its
row, and begins with the row's doc line. A field that is a setting but documented by hand, a
row whose option names no field, or a schema.json left stale all fail here.
"""

from __future__ import annotations

import json
import typing
from typing import Any

import attrs
import pytest

from cleveragents.protocol import wire
from cleveragents.protocol.converter import camel
from cleveragents.protocol.wire.common import setting_description
from cleveragents.settings_table import BY_NAME, SETTINGS, Level, Setting
from support.daemon_support import SCHEMA_FILE

WIRE_ROWS = [row for row in SETTINGS if row.option]
LEVEL_CLASSES = {Level.RUN: "RunParams", Level.DAEMON: "InitializationOptions"}


def _schema() -> dict[str, Any]:
    return typing.cast(dict[str, Any], json.loads(SCHEMA_FILE.read_text(encoding="utf-8")))


def _field_of(class_name: str, option: str) -> tuple[type, attrs.Attribute[Any]]:
    """The wire class and field an option names (`commandLimits.processes` goes inside)."""
    cls: type = getattr(wire, class_name)
    *outer, last = option.split(".")
    for name in outer:
        field = _named_field(cls, name)
        cls = next(
            a for a in typing.get_args(typing.get_type_hints(cls)[field.name]) if attrs.has(a)
        )
    return cls, _named_field(cls, last)


def _named_field(cls: type, option: str) -> attrs.Attribute[Any]:
    fields: dict[str, attrs.Attribute[Any]] = {camel(f.name): f for f in attrs.fields(cls)}
    assert option in fields, f"{cls.__name__} has no field {option!r}"
    return fields[option]


def _cases() -> list[tuple[Setting, Level]]:
    return [(row, level) for row in WIRE_ROWS for level in LEVEL_CLASSES if level in row.levels]


@pytest.mark.parametrize(
    ("row", "level"), _cases(), ids=[f"{r.name}-{lv.name}" for r, lv in _cases()]
)
def test_a_setting_fields_schema_description_is_its_rows(row: Setting, level: Level) -> None:
    cls, field = _field_of(LEVEL_CLASSES[level], str(row.option))
    # A nested class (CommandLimits) serves both levels: its text is the session's.
    run = level is Level.RUN and cls is wire.RunParams
    expected = setting_description(row, run=run)
    properties = _schema()["$defs"][cls.__name__]["properties"]
    assert properties[camel(field.name)].get("description") == expected
    first_sentence = row.doc.split("[")[0]  # links are re-pointed from docs/ to protocol/
    assert expected.startswith(first_sentence)
    assert field.metadata.get("setting") == row.name


def test_the_fields_marked_as_settings_are_exactly_the_rows_fields() -> None:
    marked = {
        (cls.__name__, field.name, field.metadata["setting"])
        for cls in wire.wire_types()
        for field in attrs.fields(cls)
        if "setting" in field.metadata
    }
    from_rows = set()
    for row, level in _cases():
        cls, field = _field_of(LEVEL_CLASSES[level], str(row.option))
        from_rows.add((cls.__name__, field.name, row.name))
    assert marked == from_rows


def test_links_point_from_the_protocol_folder_into_docs() -> None:
    text = setting_description(BY_NAME["prompt_caching"], run=False)
    assert "](../docs/tokens.md)" in text and "](tokens.md)" not in text
    assert "$CLEVERAGENTS_PROMPT_CACHING" in text
    assert "Accepts" not in text  # a yes/no is a JSON boolean on the wire, not `1`/`0`


def test_each_setting_fields_default_is_its_value_not_a_pointer() -> None:
    """A setting's schema doc says its default from the row (`else 4096.`), not where to read
    about it (the limits once said `else see security.md`)."""
    for row, level in _cases():
        cls, field = _field_of(LEVEL_CLASSES[level], str(row.option))
        text = _schema()["$defs"][cls.__name__]["properties"][camel(field.name)]["description"]
        assert "else see" not in text, (cls.__name__, field.name)
    limits = _schema()["$defs"]["CommandLimits"]["properties"]
    assert (
        "Default: `$CLEVERAGENTS_COMMAND_MAX_PROCESSES`, else 4096."
        in (limits["processes"]["description"])
    )
    assert limits["memoryBytes"]["description"].endswith(", else 3/4 of RAM.")
