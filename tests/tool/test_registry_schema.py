"""Registering tools: schemas from type hints and docstrings, or given explicitly."""

from __future__ import annotations

import enum
from typing import Annotated, Any, Literal

import pytest

from cleveragents.tool import ToolRegistry, ToolSpec, tool
from cleveragents.tool.registry import spec_of
from cleveragents.tool.schema import parse_docstring


class Opaque:
    """A type JSON Schema has no word for."""


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


def test_schema_from_type_hints_and_google_docstring() -> None:
    @tool
    def search(
        query: str,
        limit: int = 10,
        ratio: float = 0.5,
        exact: bool = False,
        tags: list[str] | None = None,
        mode: Literal["fast", "deep"] = "fast",
        colour: Colour = Colour.RED,
        extra: dict[str, int] | None = None,
        note: Annotated[str, "free text"] = "",
    ) -> list[str]:
        """Search the index.

        Returns matches in rank order.

        Args:
            query: What to look for.
            limit: At most this many
                results.
            tags: Only entries with these tags.

        Returns:
            The matches.
        """
        return []

    spec = spec_of(search)
    assert isinstance(spec, ToolSpec)
    assert spec.name == "search"
    assert spec.description == "Search the index.\n\nReturns matches in rank order."
    schema = spec.input_schema
    assert schema["required"] == ["query"]
    assert schema["additionalProperties"] is False
    props = schema["properties"]
    assert props["query"] == {"type": "string", "description": "What to look for."}
    assert props["limit"] == {
        "type": "integer",
        "description": "At most this many results.",
        "default": 10,
    }
    assert props["ratio"]["type"] == "number" and props["exact"]["type"] == "boolean"
    assert props["tags"]["anyOf"] == [
        {"type": "array", "items": {"type": "string"}},
        {"type": "null"},
    ]
    assert props["mode"]["enum"] == ["fast", "deep"] and props["mode"]["default"] == "fast"
    assert props["colour"]["enum"] == ["red", "blue"]
    assert props["extra"]["anyOf"][0] == {
        "type": "object",
        "additionalProperties": {"type": "integer"},
    }
    assert props["note"]["description"] == "free text"
    assert search("x") == []  # still an ordinary function


def test_sphinx_docstrings() -> None:
    description, params = parse_docstring("Do it.\n\n:param path: where\n:returns: nothing")
    assert description == "Do it." and params == {"path": "where"}


def test_explicit_schema_registration() -> None:
    registry = ToolRegistry()

    def handler(**kwargs: Any) -> dict[str, Any]:
        return kwargs

    spec = registry.register(
        "raw",
        handler,
        input_schema={
            "type": "object",
            "properties": {"n": {"type": "integer"}},
            "required": ["n"],
        },
        description="Raw tool.",
        mutating=True,
    )
    assert spec.mutating and spec.description == "Raw tool."
    assert spec.input_schema["required"] == ["n"]
    # **kwargs handlers accept the reserved keys from the context.
    assert spec.context_params == {"sandbox_root", "resource_bindings"}


def test_invalid_registrations_are_clear_errors() -> None:
    registry = ToolRegistry()

    def ok(x: int) -> int:
        return x

    registry.register("ok", ok)
    with pytest.raises(ValueError, match="already registered"):
        registry.register("ok", ok)
    with pytest.raises(ValueError, match="invalid tool name"):
        registry.register("has space", ok)
    with pytest.raises(TypeError, match="callable"):
        registry.register("nope", 42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="JSON Schema object"):
        registry.register("arr", ok, input_schema={"type": "array"})
    with pytest.raises(ValueError, match="timeout_s"):
        registry.register("t", ok, timeout_s=0)

    def variadic(*args: int) -> None: ...

    with pytest.raises(TypeError, match=r"\*args"):
        registry.register("v", variadic)

    def strange(x: Opaque) -> None: ...

    with pytest.raises(TypeError, match="parameter 'x'"):
        registry.register("s", strange)

    def unresolvable(x: Missing) -> None: ...  # type: ignore[name-defined]  # noqa: F821

    with pytest.raises(TypeError, match="cannot resolve"):
        registry.register("u", unresolvable)


def test_registry_decorator_and_order() -> None:
    registry = ToolRegistry()

    @registry.tool
    def b() -> None:
        """B."""

    @registry.tool(name="a_tool", mutating=True, executes_code=True, timeout_s=5)
    def a() -> None:
        """A."""

    assert registry.names() == ["b", "a_tool"]
    spec = registry.get("a_tool")
    assert spec is not None and spec.mutating and spec.executes_code and spec.timeout_s == 5
    assert "b" in registry and len(registry) == 2
    registry.unregister("b")
    assert registry.names() == ["a_tool"]


def test_an_invalid_explicit_schema_is_refused_at_registration() -> None:
    registry = ToolRegistry()
    with pytest.raises(ValueError, match="not valid JSON Schema"):
        registry.register(
            "bad",
            lambda **kw: kw,
            input_schema={"type": "object", "properties": {"x": {"type": 7}}},
        )


def test_reserved_keys_leave_explicit_schemas_without_touching_the_callers() -> None:
    schema = {
        "type": "object",
        "properties": {"path": {"type": "string"}, "sandbox_root": {"type": "string"}},
        "required": ["path", "sandbox_root"],
    }
    spec = ToolRegistry().register("read", lambda path, sandbox_root: path, input_schema=schema)
    assert spec.input_schema["required"] == ["path"]
    assert set(spec.input_schema["properties"]) == {"path"}
    assert set(schema["properties"]) == {"path", "sandbox_root"}  # the caller's, unchanged


def test_every_built_in_tool_schema_is_valid_json_schema() -> None:
    """Built-in specs skip the metaschema check at start (`schema_checked`): it is made here."""
    from jsonschema import validators

    from cleveragents.workspace.builtins import builtin_tools

    specs = builtin_tools()
    assert len(specs) == 8
    for spec in specs:
        validators.validator_for(spec.input_schema).check_schema(spec.input_schema)
        assert spec.input_schema["type"] == "object" and spec.input_schema["properties"]
