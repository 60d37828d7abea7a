"""JSON Schema and reference tables of the protocol, generated from the wire types (`wire/`).

    python -m cleveragents.daemon.schema            # rewrite protocol/schema.json and the
                                                    # reference part of protocol/README.md
    python -m cleveragents.daemon.schema --check    # exit 1 if either is out of date

The schema lists every type under `$defs`, and the methods and error codes under the
`x-methods` and `x-errorCodes` annotations, so clients (the VS Code extension's TypeScript
types) can be generated from it.
"""

from __future__ import annotations

import argparse
import json
import sys
import types
import typing
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import attrs

from ..protocol import wire
from ..protocol.converter import camel

PROTOCOL_DIR = Path(__file__).resolve().parents[3] / "protocol"
SCHEMA_PATH = PROTOCOL_DIR / "schema.json"
README_PATH = PROTOCOL_DIR / "README.md"
REFERENCE_START = "<!-- generated reference: start (python -m cleveragents.daemon.schema) -->"
REFERENCE_END = "<!-- generated reference: end -->"
_SCALARS: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


def named_enums() -> dict[str, Any]:
    """The wire's named string enums (`StopReason = Literal[...]`, named in `wire`),
    by name: each becomes a `$defs` entry, so clients generate one named type for it instead of
    copying its values. A field's own unnamed `Literal` stays inline."""
    found: dict[str, Any] = {}
    for name, value in vars(wire).items():
        if get_origin(value) is Literal and name[:1].isupper():
            clash = next((other for other, kind in found.items() if kind == value), None)
            if clash is not None:
                raise TypeError(f"{name} and {clash} have the same values: name one of them")
            found[name] = value
    return found


class _Builder:
    def __init__(self) -> None:
        self.defs: dict[str, Any] = {}
        self.enums = named_enums()

    def enum_ref(self, kind: Any) -> dict[str, Any] | None:
        """A `$ref` to the named enum `kind` is (defined on first use), or None if unnamed."""
        name = next((name for name, value in self.enums.items() if value == kind), None)
        if name is None:
            return None
        self.defs.setdefault(name, {"type": "string", "enum": list(get_args(kind))})
        return {"$ref": f"#/$defs/{name}"}

    def ref(self, cls: type) -> dict[str, Any]:
        name = cls.__name__
        if name not in self.defs:
            self.defs[name] = {}  # reserve first: a type may refer to itself
            self.defs[name] = self.object_schema(cls)
        return {"$ref": f"#/$defs/{name}"}

    def object_schema(self, cls: type) -> dict[str, Any]:
        hints = typing.get_type_hints(cls)
        properties: dict[str, Any] = {}
        required: list[str] = []
        for field in attrs.fields(cls):
            schema = dict(self.type_schema(hints[field.name]))
            text = field.metadata.get("doc")
            if text:
                schema = {"description": text, **schema}
            if field.default is attrs.NOTHING:
                required.append(camel(field.name))
            elif field.default is not None:
                schema["default"] = field.default
            properties[camel(field.name)] = schema
        result: dict[str, Any] = {"type": "object"}
        if cls.__doc__:
            result["description"] = " ".join(cls.__doc__.split())
        result["properties"] = properties
        if required:
            result["required"] = required
        result["additionalProperties"] = False
        return result

    def type_schema(self, kind: Any) -> dict[str, Any]:
        if kind is Any:
            return {}
        if kind in _SCALARS:
            return {"type": _SCALARS[kind]}
        origin = get_origin(kind)
        if origin is Literal:
            return self.enum_ref(kind) or {"type": "string", "enum": list(get_args(kind))}
        if origin in (typing.Union, types.UnionType):
            members = get_args(kind)
            nullable = type(None) in members
            rest = [m for m in members if m is not type(None)]
            if all(m in _SCALARS for m in rest):
                names = [_SCALARS[m] for m in rest] + (["null"] if nullable else [])
                return {"type": names[0] if len(names) == 1 else names}
            options = [self.type_schema(m) for m in rest]
            if nullable:
                options.append({"type": "null"})
            return options[0] if len(options) == 1 else {"anyOf": options}
        if origin is list:
            (item,) = get_args(kind)
            return {"type": "array", "items": self.type_schema(item)}
        if origin is dict:
            key, value = get_args(kind)
            if key is not str:
                raise TypeError(f"wire dicts need string keys, not {key}")
            inner = self.type_schema(value)
            return {"type": "object", "additionalProperties": inner if inner else True}
        if attrs.has(kind):
            return self.ref(kind)
        raise TypeError(f"no JSON Schema for {kind!r}")


def build_schema() -> dict[str, Any]:
    builder = _Builder()
    methods: dict[str, Any] = {}
    for method in wire.METHODS:
        entry: dict[str, Any] = {
            "kind": method.kind,
            "direction": camel(method.direction),
            "summary": method.summary,
        }
        if method.params is not None:
            entry["params"] = builder.ref(method.params)
            entry["paramsOptional"] = method.params_optional
        if method.result is not None:
            entry["result"] = builder.ref(method.result)
        methods[method.name] = entry
    for name in wire.INITIALIZE_TYPE_NAMES:
        builder.ref(getattr(wire, name))
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "cleveragents daemon protocol",
        "description": (
            "Types of the cleveragents JSON-RPC protocol (LSP base protocol). Generated from "
            "server/cleveragents/protocol/wire/ by `python -m cleveragents.daemon.schema`; "
            "do not edit by hand. See protocol/README.md."
        ),
        "x-protocolVersion": wire.PROTOCOL_VERSION,
        "x-methods": methods,
        "x-errorCodes": [
            {"code": e.code, "name": e.name, "meaning": e.meaning} for e in wire.ERROR_CODES
        ],
        "$defs": dict(sorted(builder.defs.items())),
    }


def render() -> str:
    return json.dumps(build_schema(), indent=2, ensure_ascii=False) + "\n"


# -- the README's reference tables -----------------------------------------------------------


def _type_text(kind: Any) -> str:
    if kind is Any:
        return "any"
    if kind in _SCALARS:
        return _SCALARS[kind]
    origin = get_origin(kind)
    if origin is Literal:
        name = next((n for n, value in named_enums().items() if value == kind), None)
        if name is not None:
            return f"[{name}](#{name.lower()})"
        return " \\| ".join(json.dumps(v) for v in get_args(kind))
    if origin in (typing.Union, types.UnionType):
        return " \\| ".join(
            _type_text(m) if m is not type(None) else "null" for m in get_args(kind)
        )
    if origin is list:
        (item,) = get_args(kind)
        inner = _type_text(item)
        return f"({inner})[]" if "|" in inner else f"{inner}[]"
    if origin is dict:
        return "object"
    if attrs.has(kind):
        return f"[{kind.__name__}](#{kind.__name__.lower()})"
    raise TypeError(f"no description for {kind!r}")


def _type_section(cls: type) -> list[str]:
    hints = typing.get_type_hints(cls)
    lines = [f"#### {cls.__name__}", ""]
    if cls.__doc__:
        lines += [" ".join(cls.__doc__.split()), ""]
    fields = attrs.fields(cls)
    if not fields:
        return [*lines, "No fields.", ""]
    lines += ["| field | type | required | description |", "|---|---|---|---|"]
    for field in fields:
        required = (
            "yes"
            if field.default is attrs.NOTHING
            else ("no" if field.default is None else f"no (default `{json.dumps(field.default)}`)")
        )
        text = str(field.metadata.get("doc", "")).replace("|", "\\|")
        lines.append(
            f"| `{camel(field.name)}` | {_type_text(hints[field.name])} | {required} | {text} |"
        )
    return [*lines, ""]


def render_reference() -> str:
    """Markdown: the method table, every type's fields, the error codes."""
    builder = _Builder()
    for method in wire.METHODS:
        for cls in (method.params, method.result):
            if cls is not None:
                builder.ref(cls)
    for name in wire.INITIALIZE_TYPE_NAMES:
        builder.ref(getattr(wire, name))
    by_name = {cls.__name__: cls for cls in wire.wire_types()}
    lines = [
        "### Methods",
        "",
        "| method | kind | direction | params | result | |",
        "|---|---|---|---|---|---|",
    ]
    for method in wire.METHODS:
        direction = (
            "client → server" if method.direction == "client_to_server" else ("server → client")
        )
        params = _type_text(method.params) if method.params else "—"
        if method.params_optional:
            params += " (optional)"
        result = _type_text(method.result) if method.result else "—"
        lines.append(
            f"| `{method.name}` | {method.kind} | {direction} | {params} | {result} "
            f"| {method.summary} |"
        )
    lines += ["", "### Types", ""]
    for name in sorted(builder.defs):
        if name in builder.enums:
            values = ", ".join(f"`{v}`" for v in get_args(builder.enums[name]))
            lines += [f"#### {name}", "", f"A string, one of: {values}.", ""]
        else:
            lines += _type_section(by_name[name])
    lines += ["### Error codes", "", "| code | name | meaning |", "|---|---|---|"]
    lines += [f"| {e.code} | {e.name} | {e.meaning} |" for e in wire.ERROR_CODES]
    return "\n".join(lines) + "\n"


def readme_with_reference(readme: str) -> str:
    """The README with its generated part replaced; ValueError if the markers are missing."""
    start = readme.find(REFERENCE_START)
    end = readme.find(REFERENCE_END)
    if start < 0 or end < start:
        raise ValueError("protocol/README.md lacks the generated-reference markers")
    head = readme[: start + len(REFERENCE_START)]
    return f"{head}\n\n{render_reference()}\n{readme[end:]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Generate protocol/schema.json.")
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if the checked-in files differ from the code"
    )
    parser.add_argument("--output", type=Path, default=SCHEMA_PATH)
    parser.add_argument("--readme", type=Path, default=README_PATH)
    args = parser.parse_args(argv)
    outputs = {args.output: render()}
    if args.readme.exists():
        outputs[args.readme] = readme_with_reference(args.readme.read_text(encoding="utf-8"))
    if args.check:
        stale = [
            path
            for path, text in outputs.items()
            if not path.exists() or path.read_text(encoding="utf-8") != text
        ]
        for path in stale:
            print(
                f"{path} is out of date: run python -m cleveragents.daemon.schema", file=sys.stderr
            )
        return 1 if stale else 0
    for path, text in outputs.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
