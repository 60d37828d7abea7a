"""Argument checks: the compiled fast path never changes an answer or a message."""

from __future__ import annotations

import decimal
from typing import Any, Literal

import pytest
from jsonschema import validators

from cleveragents.tool import ToolCallRequest, ToolRegistry, ToolRunner, tool
from cleveragents.tool.registry import spec_of
from cleveragents.tool.validation import ArgumentValidator, describe_errors


@tool
def typical(
    path: str,
    count: int = 1,
    ratio: float = 0.5,
    flags: list[str] | None = None,
    mode: Literal["fast", "deep"] = "fast",
    pair: tuple[int, str] | None = None,
) -> None:
    """A tool with the usual argument types."""


TYPICAL = spec_of(typical).input_schema  # type: ignore[union-attr]

SCHEMAS: dict[str, dict[str, Any]] = {
    "typical": TYPICAL,
    "bounds": {
        "type": "object",
        "properties": {
            "n": {"type": "integer", "minimum": 1, "exclusiveMaximum": 10},
            "s": {"type": "string", "minLength": 2, "maxLength": 4, "pattern": "^a.*z$"},
            "xs": {"type": "array", "items": {"type": "number"}, "minItems": 1},
            "o": {
                "type": "object",
                "properties": {"k": {"const": 1}},
                "required": ["k"],
                "additionalProperties": {"type": "boolean"},
            },
            "e": {"enum": [1, "one", None, [1], {"a": 1}]},
        },
        "required": ["n"],
        "additionalProperties": False,
    },
    "negated": {
        "type": "object",
        "properties": {"s": {"not": {"pattern": "^a$"}}, "t": {"oneOf": [{"type": "integer"}]}},
    },
    "draft-07": {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"n": {"type": "integer"}, "xs": {"type": "array", "items": [{}]}},
    },
    "draft-04": {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "object",
        "properties": {"n": {"type": "integer", "minimum": 1, "exclusiveMinimum": True}},
    },
    "refs": {
        "type": "object",
        "$defs": {"pos": {"type": "integer", "minimum": 1}},
        "properties": {"n": {"$ref": "#/$defs/pos", "maximum": 5}},
    },
}

INSTANCES: list[Any] = [
    {},
    {"path": "a"},
    {"path": "a", "count": True},
    {"path": "a", "count": 1.0},
    {"path": "a", "count": 1.5},
    {"path": "a", "count": "1"},
    {"path": "a", "ratio": decimal.Decimal("0.5")},
    {"path": "a", "ratio": 1 + 2j},
    {"path": "a", "flags": ("x", "y")},
    {"path": "a", "flags": ["x", 2]},
    {"path": "a", "mode": "slow", "extra": 1, "more": 2},
    {"path": "a", "pair": [1, "b"]},
    {"path": "a", "pair": ["b", 1]},
    {"path": 7, "count": None},
    {"n": 0},
    {"n": 1},
    {"n": 10},
    {"n": 9.0, "s": "az"},
    {"n": 2, "s": "a\nz"},
    {"n": 2, "s": "az\n"},
    {"n": 2, "s": "abcdz"},
    {"n": 2, "xs": []},
    {"n": 2, "xs": (1.5,)},
    {"n": 2, "xs": [1.5, True]},
    {"n": 2, "o": {"k": 1, "x": False}},
    {"n": 2, "o": {"k": True}},
    {"n": 2, "o": {"k": 1.0, "x": 0}},
    {"n": 2, "e": True},
    {"n": 2, "e": 1.0},
    {"n": 2, "e": (1,)},
    {"n": 2, "e": {"a": True}},
    {"n": True},
    {"n": 6},
    {"s": "a\n"},
    {"s": "a"},
    {"t": 1, "xs": [1, 2]},
]


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_every_answer_and_message_is_jsonschemas(name: str) -> None:
    schema = SCHEMAS[name]
    reference = validators.validator_for(schema)(schema)
    checker = ArgumentValidator(schema)
    for instance in INSTANCES:
        expected = describe_errors(reference.iter_errors(instance))
        assert checker.problems(instance) == expected, (name, instance)


def test_plain_schemas_get_the_compiled_check_and_the_rest_do_not() -> None:
    used = {}
    for name, schema in SCHEMAS.items():
        checker = ArgumentValidator(schema)
        checker.problems({})
        used[name] = checker.compiled
    assert used == {
        "typical": False,  # tuple[int, str] becomes prefixItems, which drafts read differently
        "bounds": True,
        "negated": False,
        "draft-07": False,  # items as a list is a tuple in draft 7 only
        "draft-04": False,
        "refs": False,
    }
    without_tuple = {**TYPICAL, "properties": dict(TYPICAL["properties"])}
    del without_tuple["properties"]["pair"]
    checker = ArgumentValidator(without_tuple)
    assert checker.problems({"path": "a"}) is None
    assert checker.compiled


async def test_the_runner_words_errors_as_before_on_the_compiled_path() -> None:
    registry = ToolRegistry()

    @registry.tool
    def add(a: int, b: int = 0) -> int:
        """Add."""
        return a + b

    runner = ToolRunner(registry)
    try:
        good = await runner.run(ToolCallRequest("c1", "add", {"a": 2, "b": 3}))
        bad = await runner.run(ToolCallRequest("c2", "add", {"b": "x", "c": 1}))
    finally:
        runner.shutdown()
    assert registry.get("add").validator.compiled  # type: ignore[union-attr]
    assert good.success and good.output == {"result": 5}
    assert bad.error_kind == "validation_error"
    assert bad.error == (
        "invalid arguments for add: missing required argument 'a'; "
        "unexpected argument 'c'; argument 'b': 'x' is not of type 'integer'"
    )
