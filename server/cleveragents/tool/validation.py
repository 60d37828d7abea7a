"""Checking a tool's arguments against its input schema.

Two validators per schema, both built on first use and kept with the tool's spec:

- a compiled one (fastjsonschema generates a Python function per schema: ~1 us a call where
  jsonschema takes tens), trusted only to say "valid";
- jsonschema, the reference: when the compiled check rejects the arguments (the rare path) it
  decides, and its errors make the message, so the messages name the fields exactly as before.

The compiled check is used only for schemas whose every keyword means the same to both
libraries (`_fast_path_fits`); any other schema (`$ref`, `prefixItems`, `multipleOf`, ...)
goes to jsonschema alone. A compiled check that wrongly rejects costs one jsonschema run; one
that wrongly accepted would change behaviour, which is what the keyword list prevents. Every
keyword on it is monotone (a stricter part can only make the whole stricter): fastjsonschema
is stricter in places (it reads `$` in a pattern as end of text only), and under `not`,
`oneOf` or `if` a stricter part would accept what jsonschema rejects, so those are left out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

MAX_REPORTED_ERRORS = 5

# Keywords whose meaning is the same in draft 6, 7, 2019-09 and 2020-12 and in both libraries.
_SUBSCHEMA = frozenset({"additionalProperties", "items", "propertyNames"})
_SUBSCHEMA_MAPS = frozenset({"properties"})
_SUBSCHEMA_LISTS = frozenset({"anyOf", "allOf"})
_PLAIN = frozenset(
    {
        "type",
        "required",
        "enum",
        "const",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minLength",
        "maxLength",
        "pattern",
        "minItems",
        "maxItems",
        "minProperties",
        "maxProperties",
        # Annotations: neither checks them (fastjsonschema is compiled with formats off, and
        # jsonschema checks formats only when given a format checker, which the runner is not).
        "format",
        "title",
        "description",
        "default",
        "examples",
        "$comment",
        "readOnly",
        "writeOnly",
        "deprecated",
    }
)
# Drafts in which the keywords above mean what they mean in the default (2020-12); draft 4
# differs (a boolean exclusiveMinimum, no `const`), so its schemas skip the compiled check.
_SAME_MEANING_DRAFTS = ("draft-06", "draft-07", "draft/2019-09", "draft/2020-12")


def _fast_path_fits(schema: Any, top: bool = True) -> bool:
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, dict):
        return False
    for key, value in schema.items():
        if key in _PLAIN:
            continue
        if key == "$schema" and top:
            if not (isinstance(value, str) and any(d in value for d in _SAME_MEANING_DRAFTS)):
                return False
        elif key in _SUBSCHEMA:
            if key == "items" and not isinstance(value, bool | dict):  # tuple form: drafts differ
                return False
            if not _fast_path_fits(value, top=False):
                return False
        elif key in _SUBSCHEMA_MAPS:
            if not isinstance(value, dict) or not all(
                _fast_path_fits(v, top=False) for v in value.values()
            ):
                return False
        elif key in _SUBSCHEMA_LISTS:
            if not isinstance(value, list) or not all(_fast_path_fits(v, top=False) for v in value):
                return False
        else:
            return False
    return True


def _compile_fast(schema: dict[str, Any]) -> Callable[[Any], Any] | None:
    """fastjsonschema's function for `schema`, or None when it is absent or does not fit."""
    if not _fast_path_fits(schema):
        return None
    try:
        import fastjsonschema
    except ImportError:  # an optional speed-up: jsonschema alone gives the same answers
        return None
    try:
        # use_default=False: never fill in defaults (it would edit the arguments). Detailed
        # exceptions stay on: without them `const` does not compile, and they cost nothing
        # until a check fails.
        code = fastjsonschema.compile_to_code(schema, use_default=False, use_formats=False)
    except Exception:  # a schema it cannot compile (a regex it rewrites badly, say)
        return None
    # jsonschema's "array" is a list; fastjsonschema's also takes a tuple. Arguments decoded
    # from JSON are never tuples, but a Python caller's may be: keep jsonschema's meaning.
    code = code.replace("(list, tuple)", "(list,)")
    namespace: dict[str, Any] = {}
    try:
        exec(compile(code, "<fastjsonschema>", "exec"), namespace)
    except Exception:
        return None
    check: Callable[[Any], Any] = namespace["validate"]
    return check


def format_validation_error(error: Any) -> str:
    """One jsonschema error as a sentence that names the offending field."""
    field = ".".join(str(p) for p in error.absolute_path)
    if error.validator == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        where = f"{field}." if field else ""
        return f"missing required argument '{where}{missing}'"
    if error.validator == "additionalProperties" and not error.absolute_path:
        extras = sorted(set(error.instance) - set(error.schema.get("properties", {})))
        return "unexpected argument " + ", ".join(f"'{e}'" for e in extras)
    if field:
        return f"argument '{field}': {error.message}"
    return str(error.message)


def describe_errors(errors: Iterable[Any]) -> str | None:
    """The first few jsonschema errors, in field order, as one message; None when none."""
    ordered = sorted(errors, key=lambda e: list(map(str, e.path)))
    if not ordered:
        return None
    return "; ".join(format_validation_error(e) for e in ordered[:MAX_REPORTED_ERRORS])


_UNBUILT: Any = object()


class ArgumentValidator:
    """Validates arguments against one input schema; both validators are built on first use.

    Built lazily so that defining and registering tools imports neither library (start-up
    time); after the first call every check reuses them.
    """

    __slots__ = ("_fast", "_reference", "schema")

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema
        self._fast: Callable[[Any], Any] | None = _UNBUILT
        self._reference: Any = None

    def problems(self, arguments: Any) -> str | None:
        """None when the arguments are valid, else what is wrong with them, field by field.

        An exception means the schema itself cannot be used (jsonschema raised on it).
        """
        fast = self._fast
        if fast is _UNBUILT:
            fast = self._fast = _compile_fast(self.schema)
        if fast is not None:
            try:
                fast(arguments)
            except Exception:  # rejected (or it tripped on the value): jsonschema decides
                pass
            else:
                return None
        return describe_errors(self.reference().iter_errors(arguments))

    @property
    def compiled(self) -> bool:
        """Whether valid arguments pass a compiled check (known after the first call)."""
        return self._fast is not _UNBUILT and self._fast is not None

    def reference(self) -> Any:
        """The jsonschema validator for the schema (draft from `$schema`, else 2020-12)."""
        if self._reference is None:
            # Imported here: jsonschema costs tens of milliseconds to import.
            from jsonschema import validators

            self._reference = validators.validator_for(self.schema)(self.schema)
        return self._reference
