"""cattrs for the wire: camelCase fields, no coercion, errors that name the field.

Structuring is strict where cattrs is lenient by default: `"7"` is not an int, `7` is not a
string, a string is not a list, `true` is not a number, and unknown fields are rejected (a
misspelt option should fail loudly rather than be ignored). Unstructuring never omits a
field, so `false`, `0` and `[]` stay on the wire.
"""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Callable
from functools import cache
from typing import Any, Literal, TypeVar, cast, get_args, get_origin

import attrs
import cattrs
from cattrs.cols import is_mapping, is_sequence, list_structure_factory
from cattrs.errors import (
    ClassValidationError,
    ForbiddenExtraKeysError,
    IterableValidationError,
)
from cattrs.gen import (
    make_dict_structure_fn,
    make_dict_unstructure_fn,
    make_mapping_structure_fn,
    override,
)

from ..service.errors import ParamsError

T = TypeVar("T")

_JSON_NAMES = {
    str: "a string",
    int: "an integer",
    float: "a number",
    bool: "a boolean",
    list: "an array",
    dict: "an object",
    type(None): "null",
}


def camel(name: str) -> str:
    """snake_case to camelCase: `sandbox_root` -> `sandboxRoot`."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def json_type_name(value: Any) -> str:
    """How a JSON value's type reads in an error message."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return _JSON_NAMES.get(type(value), type(value).__name__)


class WireTypeError(TypeError):
    """A value of the wrong JSON type; the message is shown to the client as is."""


def _expect(kind: type, description: str) -> Callable[[Any, Any], Any]:
    def structure(value: Any, _: Any) -> Any:
        if isinstance(value, bool) and kind is not bool:
            raise WireTypeError(f"expected {description}, got a boolean")
        if not isinstance(value, kind):
            raise WireTypeError(f"expected {description}, got {json_type_name(value)}")
        return value

    return structure


def _structure_float(value: Any, _: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise WireTypeError(f"expected a number, got {json_type_name(value)}")
    return float(value)


def _is_literal(kind: Any) -> bool:
    return get_origin(kind) is Literal


def _literal_hook(kind: Any) -> Callable[[Any, Any], Any]:
    allowed = get_args(kind)
    listing = ", ".join(repr(a) for a in allowed)

    def structure(value: Any, _: Any) -> Any:
        if isinstance(value, bool) or value not in allowed:
            raise WireTypeError(f"must be one of {listing}, got {value!r}")
        return value

    return structure


def _is_union(kind: Any) -> bool:
    return get_origin(kind) in (typing.Union, types.UnionType)


def _union_hook(converter: cattrs.Converter) -> Callable[[Any], Callable[[Any, Any], Any]]:
    def factory(kind: Any) -> Callable[[Any, Any], Any]:
        members = get_args(kind)
        optional = type(None) in members
        rest = [m for m in members if m is not type(None)]

        def structure(value: Any, _: Any) -> Any:
            if value is None:
                if optional:
                    return None
                raise WireTypeError(f"expected {describe(kind)}, got null")
            if len(rest) == 1:
                return converter.structure(value, rest[0])
            for member in rest:  # scalar unions only (int | str): the first exact match wins
                if (
                    member in _JSON_NAMES
                    and isinstance(value, member)
                    and not (isinstance(value, bool) and member is not bool)
                ):
                    return value
            raise WireTypeError(f"expected {describe(kind)}, got {json_type_name(value)}")

        return structure

    return factory


def describe(kind: Any) -> str:
    """A type as an error message names it."""
    if kind in _JSON_NAMES:
        return _JSON_NAMES[kind]
    if _is_union(kind):
        return " or ".join(describe(a) for a in get_args(kind))
    if _is_literal(kind):
        return "one of " + ", ".join(repr(a) for a in get_args(kind))
    origin = get_origin(kind)
    if origin in (list, dict):
        return _JSON_NAMES[origin]
    if attrs.has(kind):
        return "an object"
    return "any JSON value"


def make_converter() -> cattrs.Converter:
    """The wire converter; one per process is enough (it caches generated functions)."""
    converter = cattrs.Converter(detailed_validation=True, forbid_extra_keys=True)
    converter.register_structure_hook(str, _expect(str, "a string"))
    converter.register_structure_hook(int, _expect(int, "an integer"))
    converter.register_structure_hook(bool, _expect(bool, "a boolean"))
    converter.register_structure_hook(float, _structure_float)
    converter.register_structure_hook(Any, lambda value, _: value)
    converter.register_structure_hook_factory(_is_literal, _literal_hook)
    converter.register_structure_hook_factory(_is_union, _union_hook(converter))

    def list_factory(kind: Any) -> Callable[[Any, Any], Any]:
        inner = list_structure_factory(kind, converter)

        def structure(value: Any, target: Any) -> Any:
            if not isinstance(value, list):
                raise WireTypeError(f"expected an array, got {json_type_name(value)}")
            return inner(value, target)

        return structure

    def mapping_factory(kind: Any) -> Callable[[Any, Any], Any]:
        inner = make_mapping_structure_fn(kind, converter)

        def structure(value: Any, target: Any) -> Any:
            if not isinstance(value, dict):
                raise WireTypeError(f"expected an object, got {json_type_name(value)}")
            return inner(value, target)

        return structure

    converter.register_structure_hook_factory(is_sequence, list_factory)
    converter.register_structure_hook_factory(is_mapping, mapping_factory)

    def attrs_structure(cls: Any) -> Callable[[Any, Any], Any]:
        renames: dict[str, Any] = {
            a.name: override(rename=camel(a.name)) for a in attrs.fields(cls)
        }
        inner = make_dict_structure_fn(cls, converter, _cattrs_forbid_extra_keys=True, **renames)

        def structure(value: Any, target: Any) -> Any:
            if not isinstance(value, dict):
                raise WireTypeError(f"expected an object, got {json_type_name(value)}")
            return inner(value, target)

        return structure

    def attrs_unstructure(cls: Any) -> Callable[[Any], Any]:
        renames: dict[str, Any] = {
            a.name: override(rename=camel(a.name)) for a in attrs.fields(cls)
        }
        return make_dict_unstructure_fn(cls, converter, _cattrs_omit_if_default=False, **renames)

    converter.register_structure_hook_factory(attrs.has, attrs_structure)
    converter.register_unstructure_hook_factory(attrs.has, attrs_unstructure)
    return converter


@cache
def wire_converter() -> cattrs.Converter:
    return make_converter()


def structure(data: Any, cls: type[T], where: str = "params") -> T:
    """`data` as a `cls`; ParamsError naming each bad field (`params.prompt: ...`)."""
    try:
        return wire_converter().structure(data, cls)
    except (ClassValidationError, IterableValidationError, WireTypeError) as exc:
        raise ParamsError(_problems(exc, where)) from None


def unstructure(value: Any) -> Any:
    """A wire object as plain JSON data (dicts with camelCase keys)."""
    return wire_converter().unstructure(value)


def _problems(exc: BaseException, path: str) -> list[str]:
    if isinstance(exc, ClassValidationError):
        problems: list[str] = []
        with_notes, without = exc.group_exceptions()
        for sub, note in with_notes:
            problems.extend(_problems_for_field(sub, f"{path}.{camel(note.name)}", note.type))
        for sub in without:
            problems.extend(_problems(sub, path))
        return problems
    if isinstance(exc, IterableValidationError):
        problems = []
        iter_notes, iter_without = exc.group_exceptions()
        for sub, inote in iter_notes:
            problems.extend(_problems(sub, f"{path}[{inote.index!r}]"))
        for sub in iter_without:
            problems.extend(_problems(sub, path))
        return problems
    if isinstance(exc, ForbiddenExtraKeysError):
        extras = ", ".join(repr(k) for k in sorted(exc.extra_fields))
        return [
            f"{path}: unknown field {extras}"
            if len(exc.extra_fields) == 1
            else f"{path}: unknown fields {extras}"
        ]
    return [f"{path}: {exc}"]  # WireTypeError and the like: the message says it all


def _problems_for_field(exc: BaseException, path: str, kind: Any) -> list[str]:
    if isinstance(exc, KeyError):
        return [f"{path}: required field missing"]
    if isinstance(
        exc,
        ClassValidationError | IterableValidationError | WireTypeError | ForbiddenExtraKeysError,
    ):
        return _problems(exc, path)
    return [f"{path}: expected {describe(kind)} ({exc})"]


def structure_partial(data: Any, cls: type[T], where: str = "params") -> tuple[T | None, set[str]]:
    """After `structure` failed: a `cls` from the fields that do fit, and the paths of the rest.

    A field that does not fit takes its default (a required one, an empty value of its type),
    so the caller can still check the values of the others and name every bad field at once.
    None when `data` is not an object at all.
    """
    if not isinstance(data, dict) or not attrs.has(cls):
        return None, set()
    attrs.resolve_types(cls)
    converter = wire_converter()
    values: dict[str, Any] = {}
    bad: set[str] = set()
    for field in attrs.fields(cls):
        key = camel(field.name)
        if key in data:
            try:
                values[field.name] = converter.structure(data[key], field.type)
                continue
            except (ClassValidationError, IterableValidationError, WireTypeError):
                bad.add(f"{where}.{key}")
        else:
            if field.default is not attrs.NOTHING:
                continue
            bad.add(f"{where}.{key}")
        if field.default is attrs.NOTHING:
            values[field.name] = _empty(field.type)
    return cast(T, cls(**values)), bad


def _empty(kind: Any) -> Any:
    origin = get_origin(kind) or kind
    return {str: "", int: 0, float: 0.0, bool: False, list: [], dict: {}}.get(origin)


def without_problems_at(problems: list[str], paths: set[str]) -> list[str]:
    """`problems` less those about a field under one of `paths` (already named otherwise)."""
    return [
        problem
        for problem in problems
        if not any(problem.startswith(path) and problem[len(path)] in ":[." for path in paths)
    ]


def to_json_text(value: Any) -> str:
    """A wire object (or a list of them) as the indented JSON the CLI's `--json` prints: the
    same camelCase shapes the daemon sends (docs/json-output.md)."""
    return json.dumps(unstructure(value), indent=2, ensure_ascii=False)
