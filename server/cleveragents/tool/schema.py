"""JSON Schema from Python type hints and docstrings, for the `@tool` decorator.

Two builders. A tool whose parameters are all plain JSON types (`is_plain_type`) gets the
hand-written schema below and the compiled jsonschema check (`validation.py`): the fast path,
and the schemas such tools always had. A tool with any other parameter type (a Pydantic
model, a dataclass, a TypedDict, an Enum, a `Field` constraint, a datetime...) gets its schema
and a converting validator from Pydantic (`typed_arguments.py`, imported only then).
"""

from __future__ import annotations

import enum
import inspect
import logging
import re
import sys
import types
import typing
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .reserved import RESERVED_PARAMS

if TYPE_CHECKING:
    from .typed_arguments import TypedArguments


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


_LITERAL_VALUES = (str, int, bool, type(None))


def is_plain_type(annotation: Any) -> bool:
    """Whether the hand-written builder describes `annotation` and the handler can take the
    JSON value as it is (no conversion): everything `type_to_schema` maps except Enums, and
    `Annotated` only with string descriptions (a `Field(...)` or another constraint needs
    Pydantic)."""
    try:
        if annotation in _SIMPLE:
            return True
    except TypeError:  # an unhashable annotation (Annotated with a Field, say)
        pass
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return is_plain_type(args[0]) and all(isinstance(extra, str) for extra in args[1:])
    if origin in (typing.Union, types.UnionType):
        return all(is_plain_type(a) for a in args)
    if origin is typing.Literal:
        return all(type(a) in _LITERAL_VALUES for a in args)
    if origin in (list, tuple, set, frozenset) or annotation in (list, tuple, set, dict):
        return all(a is Ellipsis or is_plain_type(a) for a in args)
    if origin is dict:
        return all(is_plain_type(a) for a in args)
    return False


_ARGS_HEADER = re.compile(r"^\s*(Args|Arguments|Parameters)\s*:\s*$")
_SECTION_HEADER = re.compile(r"^\s*[A-Z][A-Za-z ]*:\s*$")
_ARG_LINE = re.compile(r"^\s*(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")
_SPHINX_PARAM = re.compile(r"^\s*:param\s+(?:\w+\s+)?(\w+)\s*:\s*(.*)$")


# Google section titles the fast reader reads as griffe does (griffe ends the description at
# each; the first three hold the parameters). Any other title sends the docstring to griffe.
_GOOGLE_SECTIONS = frozenset(
    {
        "args",
        "arguments",
        "parameters",
        "raises",
        "exceptions",
        "returns",
        "return",
        "yields",
        "examples",
        "example",
        "note",
        "notes",
        "warning",
        "warnings",
        "see also",
        "todo",
    }
)
_SECTION_LIKE = re.compile(r"^\s*(?:[A-Z][A-Za-z ]*:\s*$|:|-{3,}\s*$)", re.M)
_NUMPY_UNDERLINE = re.compile(r"^[ \t]*-{3,}[ \t]*$", re.M)
_SPHINX_FIELD = re.compile(r"^[ \t]*:(\w+)", re.M)
# Sphinx fields the fast reader reads as griffe does (`:arg x:` or `:key x:` go to griffe).
_SIMPLE_SPHINX_FIELDS = frozenset({"param", "type", "returns", "return", "rtype", "raises"})
_GOOGLE_HEADER = re.compile(r"^([A-Z][A-Za-z ]*):[ \t]*$", re.M)


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a docstring into its description and per-parameter descriptions.

    Google (`Args:`), NumPy (`Parameters` underlined) and Sphinx (`:param x:`) styles, as
    pydantic-ai reads them: the style is inferred, then griffe parses it. A multi-line
    parameter description becomes one line. Other sections (Returns, Raises, Examples)
    are left out of both.

    griffe costs 100 to 250 ms to import here, so two shapes skip it, giving what griffe
    gives (tests/tool/test_typed_tools.py checks they agree): a docstring with no section at all
    (its text is the description), and the usual Google `Args:` or Sphinx `:param x:`
    docstring whose section titles are all ones griffe knows.
    """
    if not doc:
        return "", {}
    text = inspect.cleandoc(doc)
    if not _SECTION_LIKE.search(text):
        return text.strip(), {}
    style = docstring_style(text)
    if style != "numpy" and _simple_reader_fits(text, style):
        return _read_simple_docstring(text)
    return _read_with_griffe(text, style)


def docstring_style(text: str) -> typing.Literal["google", "numpy", "sphinx"]:
    """The style a docstring is written in, inferred as pydantic-ai does (Google if unsure)."""
    if _SPHINX_FIELD.search(text):
        return "sphinx"
    if _NUMPY_UNDERLINE.search(text):
        return "numpy"
    return "google"


def _simple_reader_fits(text: str, style: str) -> bool:
    if style == "sphinx":
        fields = _SPHINX_FIELD.findall(text)
        return not _GOOGLE_HEADER.search(text) and _SIMPLE_SPHINX_FIELDS.issuperset(fields)
    return all(title.lower() in _GOOGLE_SECTIONS for title in _GOOGLE_HEADER.findall(text))


@contextmanager
def _quiet_griffe() -> Iterator[None]:
    # griffe warns (through logging) about parameters it cannot match to a signature;
    # a tool's docstring is not API documentation, so those are noise here.
    logger = logging.getLogger("griffe")
    previous = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(previous)


def _read_with_griffe(text: str, style: str) -> tuple[str, dict[str, str]]:
    from griffe import Docstring, DocstringSectionKind, GoogleOptions

    options = GoogleOptions(returns_named_value=False) if style == "google" else None
    docstring = Docstring(text, lineno=1, parser=style, parser_options=options)  # type: ignore[arg-type]
    with _quiet_griffe():
        sections = docstring.parse()
    # Parameters and Other Parameters (Keyword Args) all describe parameters of the tool.
    parameter_sections = {
        DocstringSectionKind.parameters,
        DocstringSectionKind.other_parameters,
    }
    description = ""
    if sections and sections[0].kind is DocstringSectionKind.text:
        description = str(sections[0].value).strip()
    params: dict[str, str] = {}
    for section in sections:
        if section.kind in parameter_sections:
            for item in section.value:
                params.setdefault(item.name.lstrip("*"), _one_line(item.description))
    return description, params


def _one_line(text: str) -> str:
    return " ".join(line.strip() for line in str(text).splitlines() if line.strip())


def _read_simple_docstring(text: str) -> tuple[str, dict[str, str]]:
    """The fast reader for Google `Args:` and Sphinx `:param x:` docstrings."""
    description: list[str] = []
    params: dict[str, str] = {}
    state = "description"
    current: str | None = None
    args_indent = 0
    for line in text.splitlines():
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


@dataclass(slots=True, frozen=True)
class FunctionDescription:
    """What a tool function tells about itself: the schema, the description, the reserved
    parameters it takes, and, for a typed (Pydantic) tool, the validator that converts."""

    input_schema: dict[str, Any]
    description: str
    context_params: frozenset[str]
    typed_arguments: TypedArguments | None = None


def _is_field_default(value: Any) -> bool:
    """Whether a default is a pydantic `Field(...)` (if one exists, pydantic is imported)."""
    fields = sys.modules.get("pydantic.fields")
    return fields is not None and isinstance(value, fields.FieldInfo)


def schema_from_function(
    function: Callable[..., Any],
) -> tuple[dict[str, Any], str, frozenset[str]]:
    """Build (input schema, description, reserved params it accepts) from a function."""
    described = describe_function(function)
    return described.input_schema, described.description, described.context_params


def describe_function(function: Callable[..., Any]) -> FunctionDescription:
    """The schema, description and reserved parameters of a tool function, and for a typed
    tool its converting validator (see the module's docstring for which path a tool takes)."""
    signature = inspect.signature(function)
    try:
        hints = typing.get_type_hints(function, include_extras=True)
    except NameError as exc:
        raise TypeError(f"tool {function.__name__}: cannot resolve its type hints: {exc}") from None
    description, param_docs = parse_docstring(inspect.getdoc(function))
    offered: list[tuple[str, Any, Any]] = []
    reserved: set[str] = set()
    for name, parameter in signature.parameters.items():
        if parameter.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            raise TypeError(f"tool {function.__name__}: *args and **kwargs cannot be described")
        if parameter.kind is inspect.Parameter.POSITIONAL_ONLY:
            raise TypeError(f"tool {function.__name__}: positional-only parameter {name!r}")
        if name in RESERVED_PARAMS:
            reserved.add(name)
            continue
        offered.append((name, hints.get(name, Any), parameter.default))
    if all(is_plain_type(a) and not _is_field_default(d) for _, a, d in offered):
        schema = _plain_schema(function.__name__, offered, param_docs)
        return FunctionDescription(schema, description, frozenset(reserved))
    from .typed_arguments import Parameter, build_typed_arguments

    schema, typed = build_typed_arguments(
        function.__name__,
        [Parameter(n, a, d, param_docs.get(n)) for n, a, d in offered],
    )
    return FunctionDescription(schema, description, frozenset(reserved), typed)


def _plain_schema(
    function_name: str, offered: list[tuple[str, Any, Any]], param_docs: dict[str, str]
) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, annotation, default in offered:
        try:
            prop = type_to_schema(annotation)
        except TypeError as exc:
            raise TypeError(f"tool {function_name}, parameter {name!r}: {exc}") from None
        if name in param_docs and "description" not in prop:
            prop["description"] = param_docs[name]
        if default is inspect.Parameter.empty:
            required.append(name)
        elif default is None or isinstance(default, str | int | float | bool):
            prop["default"] = default
        properties[name] = prop
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }
