"""Tools typed with Pydantic models, dataclasses, TypedDicts, Enums and `Field` constraints.

A tool whose every parameter is plain JSON (str, int, float, bool, None, Any, Literal, lists,
tuples, sets and dicts of those, unions of those) keeps the hand-written schema and the
compiled jsonschema check (`schema.py`, `validation.py`). Any other parameter type makes the
whole signature a `TypedArguments`: one pydantic-core validator, built once at registration
over a TypedDict of the parameters, that checks the model's arguments and converts them (a
model instance, a dataclass, an Enum member, a datetime) before the handler sees them.

Pydantic is imported here only; this module is imported only when a tool needs it, so
`import cleveragents.tool` and plain tools never pay for it.

The schema sent to the model is Pydantic's JSON Schema made self-contained for both
providers: every `$ref` is replaced by a copy of its definition and `$defs` dropped (a
recursive type, which cannot be inlined, is refused at registration), the `title` keywords
Pydantic adds are dropped (the peers drop them too; a property *named* title stays), and
`discriminator` (an OpenAPI keyword whose mapping points at the dropped `$defs`) is dropped,
its `oneOf` kept.
"""

from __future__ import annotations

import copy
import inspect
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, NotRequired, Required

from pydantic import ConfigDict, TypeAdapter, ValidationError
from pydantic.errors import PydanticSchemaGenerationError, PydanticUserError
from pydantic.fields import FieldInfo
from pydantic_core import PydanticSerializationError, to_jsonable_python
from typing_extensions import TypedDict

from .validation import MAX_REPORTED_ERRORS

# Keywords whose value is a map of name to subschema: the names are data, not keywords (a
# property called "title" must survive the clean-up).
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions"})
_DROPPED = frozenset({"title", "discriminator"})
# Keywords whose value is data (a default of {"title": ...} is not a schema to clean).
_DATA = frozenset({"default", "const", "enum", "examples"})


@dataclass(slots=True, frozen=True)
class Parameter:
    """One model-facing parameter of a tool function."""

    name: str
    annotation: Any
    default: Any  # inspect.Parameter.empty when required
    description: str | None


class RecursiveTypeError(TypeError):
    """A parameter type refers to itself: its schema cannot be made self-contained."""


class TypedArguments:
    """Validates and converts one tool's arguments with a compiled pydantic-core validator.

    `problems` has the interface of `validation.ArgumentValidator`, so a typed spec's
    `validator` answers like a plain one; the runner calls `convert`, which validates and
    converts in the same pass.
    """

    __slots__ = ("_fill", "_validate", "schema")

    def __init__(
        self,
        validate: Callable[[Any], Any],
        schema: dict[str, Any],
        fill: Mapping[str, FieldInfo],
    ) -> None:
        self._validate = validate
        self.schema = schema
        # Parameters whose Python default is a pydantic `Field(...)`: when the model leaves
        # one out, the handler gets the Field's default, not the FieldInfo object.
        self._fill = dict(fill)

    def convert(self, arguments: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
        """(None, converted keyword arguments) when valid, else (what is wrong, {})."""
        try:
            converted: dict[str, Any] = self._validate(arguments)
        except ValidationError as exc:
            return describe_pydantic_errors(exc), {}
        if self._fill:
            for name, info in self._fill.items():
                if name not in converted:
                    converted[name] = info.get_default(
                        call_default_factory=True, validated_data=converted
                    )
        return None, converted

    def problems(self, arguments: Any) -> str | None:
        if not isinstance(arguments, dict):
            return f"arguments must be a JSON object, got {type(arguments).__name__}"
        return self.convert(arguments)[0]

    @property
    def compiled(self) -> bool:
        return True


# Pydantic's error types for a field left out and one not asked for (models and TypedDicts
# say "missing" / "extra_forbidden"; dataclasses speak of arguments).
_MISSING = frozenset(
    {
        "missing",
        "missing_argument",
        "missing_keyword_only_argument",
        "missing_positional_only_argument",
    }
)
_UNEXPECTED = frozenset(
    {"extra_forbidden", "unexpected_keyword_argument", "unexpected_positional_argument"}
)


def describe_pydantic_errors(error: ValidationError) -> str:
    """The first few errors as one message, each naming the field path and the rule.

    `address.zip_code: string should match pattern '^\\d{5}$'`; a missing or unexpected
    field is worded as the plain tools' are (`missing required argument 'address.city'`).
    """
    parts: list[str] = []
    for item in error.errors(include_url=False)[:MAX_REPORTED_ERRORS]:
        path = ".".join(str(part) for part in item["loc"])
        kind = item["type"]
        if kind in _MISSING:
            parts.append(f"missing required argument '{path}'")
        elif kind in _UNEXPECTED:
            parts.append(f"unexpected argument '{path}'")
        else:
            message = _lower_first(item["msg"])
            parts.append(f"{path}: {message}" if path else message)
    return "; ".join(parts)


def _lower_first(text: str) -> str:
    # "String should match..." reads as a clause after the path; "URL ..." keeps its case.
    if len(text) > 1 and text[0].isupper() and not text[1].isupper():
        return text[0].lower() + text[1:]
    return text


def build_typed_arguments(
    function_name: str, parameters: list[Parameter]
) -> tuple[dict[str, Any], TypedArguments]:
    """The input schema and the validator for a tool's parameters (TypeError when a type
    cannot be described)."""
    fields: dict[str, Any] = {}
    fill: dict[str, FieldInfo] = {}
    for parameter in parameters:
        annotation = parameter.annotation
        required = parameter.default is inspect.Parameter.empty
        if isinstance(parameter.default, FieldInfo):
            # `def f(n: int = Field(ge=1))`, as pydantic's validate_call reads it.
            info = parameter.default
            annotation = Annotated[annotation, info]
            required = info.is_required()
            if not required:
                fill[parameter.name] = info
        fields[parameter.name] = Required[annotation] if required else NotRequired[annotation]
    # typing_extensions' TypedDict: Pydantic refuses typing's before Python 3.12.
    make_typed_dict: Any = TypedDict
    arguments_type: Any = make_typed_dict(f"{function_name}_arguments", fields)
    # Unknown top-level keys are refused, as the plain tools' additionalProperties: false does.
    arguments_type.__pydantic_config__ = ConfigDict(extra="forbid")
    try:
        adapter: TypeAdapter[Any] = TypeAdapter(arguments_type)
        generated = adapter.json_schema(mode="validation")
    except (PydanticSchemaGenerationError, PydanticUserError) as exc:
        raise _which_parameter(function_name, parameters, exc) from None
    schema = _tool_schema(function_name, parameters, generated)
    return schema, TypedArguments(adapter.validator.validate_python, schema, fill)


def _which_parameter(
    function_name: str, parameters: list[Parameter], error: Exception
) -> TypeError:
    """The error naming the parameter whose type Pydantic cannot describe (the slow path)."""
    for parameter in parameters:
        try:
            TypeAdapter(parameter.annotation).json_schema()
        except (PydanticSchemaGenerationError, PydanticUserError) as exc:
            # Pydantic's first line says why (an unknown class; typing.TypedDict before
            # Python 3.12, where typing_extensions.TypedDict is needed).
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            return TypeError(
                f"tool {function_name}, parameter {parameter.name!r}: cannot build a JSON "
                f"Schema for type {parameter.annotation!r}" + (f" ({reason})" if reason else "")
            )
    return TypeError(f"tool {function_name}: cannot build a JSON Schema: {error}")


def _tool_schema(
    function_name: str, parameters: list[Parameter], generated: dict[str, Any]
) -> dict[str, Any]:
    """Pydantic's schema of the TypedDict, as the tool's self-contained input schema."""
    definitions: dict[str, Any] = generated.get("$defs", {})
    generated_properties: dict[str, Any] = generated.get("properties", {})
    properties: dict[str, Any] = {}
    required: list[str] = []
    for parameter in parameters:
        prop = dict(generated_properties.get(parameter.name, {}))
        # The docstring's words, unless the annotation's Field gave its own; set beside a
        # `$ref` they win over the referenced type's docstring once inlined.
        described = _annotated_text(parameter.annotation) or parameter.description
        if described and "description" not in prop:
            prop["description"] = described
        if parameter.default is inspect.Parameter.empty:
            required.append(parameter.name)
        elif isinstance(parameter.default, FieldInfo):
            if parameter.default.is_required():
                required.append(parameter.name)
        elif "default" not in prop:
            try:
                prop["default"] = to_jsonable_python(parameter.default, bytes_mode="base64")
            except (PydanticSerializationError, ValueError):
                pass  # a default JSON cannot show is simply not shown
        try:
            properties[parameter.name] = _self_contained(prop, definitions, ())
        except TypeError as exc:
            raise TypeError(f"tool {function_name}, parameter {parameter.name!r}: {exc}") from None
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def _annotated_text(annotation: Any) -> str | None:
    """`Annotated[T, "words"]`: the words describe the parameter, as on the plain path."""
    if typing.get_origin(annotation) is not Annotated:
        return None
    texts = [extra for extra in typing.get_args(annotation)[1:] if isinstance(extra, str)]
    return texts[-1] if texts else None


def _self_contained(schema: Any, definitions: dict[str, Any], seen: tuple[str, ...]) -> Any:
    """A copy of `schema` with every `$ref` inlined and Pydantic's `title`s dropped."""
    if isinstance(schema, list):
        return [_self_contained(item, definitions, seen) for item in schema]
    if not isinstance(schema, dict):
        return schema
    reference = schema.get("$ref")
    if isinstance(reference, str):
        name = reference.rsplit("/", 1)[-1]
        if name not in definitions:
            raise TypeError(f"reference {reference!r} has no definition in the schema")
        if name in seen:
            raise RecursiveTypeError(
                f"type {name} refers to itself; a recursive type has no self-contained JSON "
                "Schema (give the tool an explicit input_schema, or bound the depth with "
                "separate types)"
            )
        # The referenced definition, then the keywords written beside the $ref (a field's
        # description or default), which are about this use of the type and win.
        merged = copy.deepcopy(definitions[name])
        merged.update({k: v for k, v in schema.items() if k != "$ref"})
        return _self_contained(merged, definitions, (*seen, name))
    cleaned: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _DROPPED or key == "$defs":
            continue
        if key in _DATA:
            cleaned[key] = value
        elif key in _SCHEMA_MAPS and isinstance(value, dict):
            cleaned[key] = {
                name: _self_contained(sub, definitions, seen) for name, sub in value.items()
            }
        elif isinstance(value, dict | list):
            cleaned[key] = _self_contained(value, definitions, seen)
        else:
            cleaned[key] = value
    return cleaned


def structured_to_json(value: Any) -> Any:
    """A tool's return value as JSON-able data: models in their JSON mode, dataclasses,
    Enums (their value), datetimes and dates (ISO 8601), Paths (text), sets (lists) and
    bytes (URL-safe base64, padded; a model's bytes fields follow its own `ser_json_bytes`).

    Raises ValueError (PydanticSerializationError) for a value it has no JSON form for.
    """
    return to_jsonable_python(value, bytes_mode="base64")
