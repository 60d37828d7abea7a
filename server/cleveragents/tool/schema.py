"""JSON Schema from Python type hints and docstrings, for the `@tool` decorator."""

from __future__ import annotations

import enum
import inspect
import re
import types
import typing
from collections.abc import Callable
from typing import Any

RESERVED_PARAMS = frozenset({"sandbox_root", "resource_bindings"})
"""Inputs the runtime supplies from the context; never offered to (or settable by) the model."""

_SIMPLE: dict[Any, dict[str, Any]] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    type(None): {"type": "null"},
    Any: {},
    object: {},
}


def type_to_schema(annotation: Any) -> dict[str, Any]:
    """Map one annotation to a JSON Schema fragment; unsupported types are a TypeError."""
    if annotation in _SIMPLE:
        return dict(_SIMPLE[annotation])
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        described = type_to_schema(args[0])
        for extra in args[1:]:
            if isinstance(extra, str):
                described["description"] = extra
        return described
    if origin in (typing.Union, types.UnionType):
        non_null = [a for a in args if a is not type(None)]
        if len(non_null) == 1 and len(args) == 2:
            inner = type_to_schema(non_null[0])
            return {"anyOf": [inner, {"type": "null"}]}
        return {"anyOf": [type_to_schema(a) for a in args]}
    if origin is typing.Literal:
        return {"enum": list(args)}
    if origin in (list, typing.List, tuple, set, frozenset) or annotation in (list, tuple, set):  # noqa: UP006
        schema: dict[str, Any] = {"type": "array"}
        if origin is tuple and args and args[-1] is not Ellipsis:
            schema["prefixItems"] = [type_to_schema(a) for a in args]
            schema["minItems"] = schema["maxItems"] = len(args)
        elif args:
            schema["items"] = type_to_schema(args[0])
        return schema
    if origin is dict or annotation is dict:
        schema = {"type": "object"}
        if len(args) == 2:
            schema["additionalProperties"] = type_to_schema(args[1])
        return schema
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return {"enum": [member.value for member in annotation]}
    raise TypeError(f"cannot build a JSON Schema for type {annotation!r}")


_ARGS_HEADER = re.compile(r"^\s*(Args|Arguments|Parameters)\s*:\s*$")
_SECTION_HEADER = re.compile(r"^\s*[A-Z][A-Za-z ]*:\s*$")
_ARG_LINE = re.compile(r"^\s*(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")
_SPHINX_PARAM = re.compile(r"^\s*:param\s+(?:\w+\s+)?(\w+)\s*:\s*(.*)$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a docstring into its description and per-parameter descriptions.

    Understands Google style (`Args:` sections) and Sphinx style (`:param x:`). Other
    sections (Returns:, Raises:, Examples:) are left out of both.
    """
    if not doc:
        return "", {}
    description: list[str] = []
    params: dict[str, str] = {}
    state = "description"
    current: str | None = None
    args_indent = 0
    for line in inspect.cleandoc(doc).splitlines():
        indent = len(line) - len(line.lstrip())
        sphinx = _SPHINX_PARAM.match(line)
        if sphinx:
            state, current = "sphinx", sphinx.group(1)
            params[current] = sphinx.group(2).strip()
        elif line.lstrip().startswith(":"):
            state, current = "other", None
        elif _ARGS_HEADER.match(line):
            state, current = "args", None
        elif indent == 0 and _SECTION_HEADER.match(line):
            state, current = "other", None
        elif state == "description":
            description.append(line)
        elif state == "args" and line.strip():
            match = _ARG_LINE.match(line)
            if match and (current is None or indent <= args_indent):
                current = match.group(1).lstrip("*")
                args_indent = indent
                params[current] = match.group(3).strip()
            elif current is not None:
                params[current] = (params[current] + " " + line.strip()).strip()
        elif state == "sphinx" and current is not None and line.strip():
            params[current] = (params[current] + " " + line.strip()).strip()
    return "\n".join(description).strip(), params


def schema_from_function(
    function: Callable[..., Any],
) -> tuple[dict[str, Any], str, frozenset[str]]:
    """Build (input schema, description, reserved params it accepts) from a function."""
    signature = inspect.signature(function)
    try:
        hints = typing.get_type_hints(function, include_extras=True)
    except NameError as exc:
        raise TypeError(f"tool {function.__name__}: cannot resolve its type hints: {exc}") from None
    description, param_docs = parse_docstring(inspect.getdoc(function))
    properties: dict[str, Any] = {}
    required: list[str] = []
    reserved: set[str] = set()
    for name, parameter in signature.parameters.items():
        if parameter.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            raise TypeError(f"tool {function.__name__}: *args and **kwargs cannot be described")
        if parameter.kind is inspect.Parameter.POSITIONAL_ONLY:
            raise TypeError(f"tool {function.__name__}: positional-only parameter {name!r}")
        if name in RESERVED_PARAMS:
            reserved.add(name)
            continue
        annotation = hints.get(name, Any)
        try:
            prop = type_to_schema(annotation)
        except TypeError as exc:
            raise TypeError(f"tool {function.__name__}, parameter {name!r}: {exc}") from None
        if name in param_docs and "description" not in prop:
            prop["description"] = param_docs[name]
        if parameter.default is inspect.Parameter.empty:
            required.append(name)
        elif parameter.default is None or isinstance(parameter.default, str | int | float | bool):
            prop["default"] = parameter.default
        properties[name] = prop
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }
    return schema, description, frozenset(reserved)
