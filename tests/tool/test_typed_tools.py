"""Typed tools (Pydantic models, dataclasses, TypedDicts, Enums, Field constraints) through
the real runtime with scripted models; plain-typed tools unchanged byte for byte."""

from __future__ import annotations

import base64
import dataclasses
import datetime
import enum
import json
import os
import subprocess
import sys
import typing
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from jsonschema import validators
from pydantic import BaseModel, Field

from cleveragents.tool import (
    LLMRequest,
    LLMResponse,
    ToolCallingRuntime,
    ToolCallRecord,
    ToolCallRequest,
    ToolRegistry,
    ToolRunner,
    ToolSpec,
    tool,
)
from cleveragents.tool.registry import spec_of
from cleveragents.tool.schema import _read_simple_docstring, _read_with_griffe, parse_docstring
from cleveragents.tool.validation import ArgumentValidator
from support import ROOT, typed_tools
from support.typed_tools import Address, Colour, Line, Parcel

SNAPSHOT = Path(__file__).parent / "snapshots" / "plain_tool_schemas.json"


def spec(function: Any) -> ToolSpec:
    found = spec_of(function)
    assert found is not None
    return found


def registry_of(*functions: Any) -> ToolRegistry:
    registry = ToolRegistry()
    for function in functions:
        registry.add(function)
    return registry


def walk_keys(schema: Any, in_map: bool = False) -> set[str]:
    """Every keyword used in a schema (property names excluded: they are data)."""
    found: set[str] = set()
    if isinstance(schema, list):
        for item in schema:
            found |= walk_keys(item)
    elif isinstance(schema, dict):
        for key, value in schema.items():
            if not in_map:
                found.add(key)
            found |= walk_keys(value, in_map=key == "properties" and not in_map)
    return found


def run_loop(registry: ToolRegistry, *calls: dict[str, Any]) -> tuple[Any, list[LLMRequest]]:
    """One scripted model turn asking for `calls`, then an answer; returns the run and what
    the model was sent each time."""
    seen: list[LLMRequest] = []

    def model(request: LLMRequest) -> LLMResponse:
        seen.append(request)
        if request.iteration == 1:
            return LLMResponse(
                tool_calls=[
                    ToolCallRequest(f"c{i}", call["name"], call["arguments"])
                    for i, call in enumerate(calls)
                ]
            )
        return LLMResponse(text="done")

    runner = ToolRunner(registry)
    try:
        result = ToolCallingRuntime(registry, runner, model, max_iterations=3).run_tool_loop("go")
    finally:
        runner.shutdown()
    return result, seen


GOOD_ORDER: dict[str, Any] = {
    "address": {"street": "1 Main St", "zip_code": "12345", "title": "Dr"},
    "parcel": {"weight_kg": 2.5},
    "colour": "blue",
    "lines": [{"sku": "a", "qty": 2}, {"sku": "b", "qty": 1}],
    "options": {"express": True, "note": "ring"},
    "labels": {"front": "red"},
    "when": "2026-12-03",
}


# -- plain tools: today's schemas, byte for byte ---------------------------------------------


def test_plain_tools_keep_their_schemas_byte_for_byte() -> None:
    from cleveragents.tool.registry import make_spec
    from cleveragents.workspace.builtins import builtin_tools
    from support import plain_tool_signatures

    snapshot = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    current: dict[str, ToolSpec] = {
        s.name: s for s in map(make_spec, plain_tool_signatures.SIGNATURES)
    }
    current.update({"builtin:" + s.name: s for s in builtin_tools()})
    assert sorted(current) == sorted(snapshot)
    for name, found in current.items():
        as_json = json.dumps({"description": found.description, "input_schema": found.input_schema})
        assert as_json == json.dumps(snapshot[name]), name
        assert found.typed_arguments is None and isinstance(found.validator, ArgumentValidator)


def test_plain_tools_and_the_built_ins_load_neither_pydantic_nor_griffe() -> None:
    code = (
        "import sys\n"
        "from support import plain_tool_signatures\n"
        "from cleveragents.tool import ToolRegistry\n"
        "from cleveragents.workspace.builtins import register_builtin_tools\n"
        "registry = ToolRegistry()\n"
        "for f in plain_tool_signatures.SIGNATURES: registry.add(f)\n"
        "register_builtin_tools(registry)\n"
        "print(sorted(m for m in ('pydantic', 'griffe') if m in sys.modules))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tests")}  # `support`, as pytest finds it
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"


# -- typed tools: the schema ------------------------------------------------------------------


def test_a_typed_tools_schema_is_self_contained_and_pinned() -> None:
    schema = spec(typed_tools.ship_order).input_schema
    assert schema == {
        "type": "object",
        "properties": {
            "address": {
                "description": "Where it goes.",
                "properties": {
                    "street": {"type": "string"},
                    "zip_code": {
                        "description": "Five digits.",
                        "pattern": "^\\d{5}$",
                        "type": "string",
                    },
                    "title": {"default": "", "type": "string"},
                },
                "required": ["street", "zip_code"],
                "type": "object",
            },
            "parcel": {
                "additionalProperties": False,
                "properties": {
                    "weight_kg": {"exclusiveMinimum": 0, "maximum": 30, "type": "number"},
                    "fragile": {"default": False, "type": "boolean"},
                },
                "required": ["weight_kg"],
                "type": "object",
                "description": "The box.",
            },
            "colour": {
                "enum": ["red", "blue"],
                "type": "string",
                "description": "Wrapping colour.",
            },
            "lines": {
                "items": {
                    "properties": {
                        "sku": {"type": "string"},
                        "qty": {"minimum": 1, "type": "integer"},
                    },
                    "required": ["sku", "qty"],
                    "type": "object",
                },
                "type": "array",
                "description": "What is in it.",
            },
            "options": {
                "anyOf": [
                    {
                        "additionalProperties": False,
                        "properties": {
                            "express": {"type": "boolean"},
                            "note": {"type": "string"},
                        },
                        "required": ["express", "note"],
                        "type": "object",
                    },
                    {"type": "null"},
                ],
                "description": "Delivery options.",
                "default": None,
            },
            "speed": {"enum": ["slow", "fast"], "type": "string", "default": "slow"},
            "labels": {
                "anyOf": [
                    {
                        "additionalProperties": {"enum": ["red", "blue"], "type": "string"},
                        "type": "object",
                    },
                    {"type": "null"},
                ],
                "default": None,
            },
            "copies": {
                "description": "Printed copies.",
                "maximum": 5,
                "minimum": 1,
                "type": "integer",
                "default": 1,
            },
            "when": {
                "anyOf": [{"format": "date", "type": "string"}, {"type": "null"}],
                "default": None,
            },
        },
        "required": ["address", "parcel", "colour", "lines"],
        "additionalProperties": False,
    }
    for function in (typed_tools.ship_order, typed_tools.label, typed_tools.stamp):
        found = spec(function).input_schema
        validators.Draft202012Validator.check_schema(found)
        assert not walk_keys(found) & {"$ref", "$defs", "title", "discriminator"}


class Cat(BaseModel):
    kind: Literal["cat"]
    meows: int


class Dog(BaseModel):
    kind: Literal["dog"]
    barks: int


class Node(BaseModel):
    value: int
    children: list[Node] = []


class Opaque:
    pass


class StdlibTypedDict(typing.TypedDict):
    a: int


def test_shared_and_discriminated_types_are_inlined() -> None:
    def adopt(
        first: Annotated[Cat | Dog, Field(discriminator="kind")], home: Address, work: Address
    ) -> None:
        """Adopt."""

    found = ToolRegistry().register("adopt", adopt).input_schema
    assert not walk_keys(found) & {"$ref", "$defs", "title", "discriminator"}
    assert found["properties"]["home"] == found["properties"]["work"]
    kinds = [branch["properties"]["kind"] for branch in found["properties"]["first"]["oneOf"]]
    assert kinds == [{"const": "cat", "type": "string"}, {"const": "dog", "type": "string"}]


class Page(BaseModel):
    meta: dict[str, str] = {"title": "Home", "description": "kept"}
    layout: Literal["title"] = "title"


def test_defaults_and_constants_are_data_and_stay_as_written() -> None:
    def publish(page: Page) -> None:
        """Publish."""

    found = ToolRegistry().register("publish", publish).input_schema
    properties = found["properties"]["page"]["properties"]
    assert properties["meta"]["default"] == {"title": "Home", "description": "kept"}
    assert properties["layout"] == {"const": "title", "default": "title", "type": "string"}


def test_types_that_cannot_be_described_are_refused_at_registration_with_the_reason() -> None:
    def tree(root: Node) -> None: ...

    with pytest.raises(TypeError, match=r"tool tree, parameter 'root': type Node refers to itself"):
        ToolRegistry().register("tree", tree)

    def odd(x: int, thing: Opaque) -> None: ...

    with pytest.raises(TypeError, match=r"parameter 'thing': cannot build a JSON Schema"):
        ToolRegistry().register("odd", odd)

    if sys.version_info < (3, 12):

        def old_typed_dict(p: StdlibTypedDict) -> None: ...

        with pytest.raises(TypeError, match=r"typing_extensions\.TypedDict"):
            ToolRegistry().register("old", old_typed_dict)


# -- conversion, validation and returns through the runtime ---------------------------------


def test_the_handler_receives_instances_and_the_record_keeps_the_json() -> None:
    result, _ = run_loop(
        registry_of(typed_tools.ship_order), {"name": "ship_order", "arguments": GOOD_ORDER}
    )
    [record] = result.tool_call_history
    assert record.success, record.error
    seen = typed_tools.SEEN["ship_order"]
    assert seen["address"] == Address(street="1 Main St", zip_code="12345", title="Dr")
    assert seen["parcel"] == Parcel(weight_kg=2.5) and isinstance(seen["parcel"], Parcel)
    assert seen["colour"] is Colour.BLUE
    assert seen["lines"] == [Line(sku="a", qty=2), Line(sku="b", qty=1)]
    assert seen["options"] == {"express": True, "note": "ring"}
    assert seen["labels"] == {"front": Colour.RED}
    assert seen["copies"] == 1  # left out: the function's own default
    assert seen["when"] == datetime.date(2026, 12, 3)
    assert record.inputs == GOOD_ORDER  # the record keeps what the model sent
    # A model return value is recorded in its JSON form.
    assert record.output == {
        "to": {"street": "1 Main St", "zip_code": "12345", "title": "Dr"},
        "colour": "blue",
        "lines": [{"sku": "a", "qty": 2}, {"sku": "b", "qty": 1}],
        "total_kg": 2.5,
        "when": "2026-12-03",
    }


BAD_ORDERS: list[tuple[dict[str, Any], str]] = [
    (
        {**GOOD_ORDER, "address": {"street": "x", "zip_code": "1234"}},
        "address.zip_code: string should match pattern '^\\d{5}$'",
    ),
    ({**GOOD_ORDER, "address": {"street": "x"}}, "missing required argument 'address.zip_code'"),
    (
        {**GOOD_ORDER, "parcel": {"weight_kg": 31, "size": 2}},
        "parcel.weight_kg: input should be less than or equal to 30; "
        "unexpected argument 'parcel.size'",
    ),
    (
        {**GOOD_ORDER, "parcel": {"weight_kg": 0}},
        "parcel.weight_kg: input should be greater than 0",
    ),
    ({**GOOD_ORDER, "colour": "green"}, "colour: input should be 'red' or 'blue'"),
    (
        {**GOOD_ORDER, "lines": [{"sku": "a", "qty": 1}, {"sku": "b", "qty": 0}]},
        "lines.1.qty: input should be greater than or equal to 1",
    ),
    ({**GOOD_ORDER, "copies": 6}, "copies: input should be less than or equal to 5"),
    ({**GOOD_ORDER, "speed": "warp"}, "speed: input should be 'slow' or 'fast'"),
    ({**GOOD_ORDER, "labels": {"x": "pink"}}, "labels.x: input should be 'red' or 'blue'"),
    ({**GOOD_ORDER, "surprise": 1}, "unexpected argument 'surprise'"),
    (
        {k: v for k, v in GOOD_ORDER.items() if k != "lines"},
        "missing required argument 'lines'",
    ),
]


def test_bad_arguments_are_failed_records_naming_the_field_path_and_the_rule() -> None:
    calls = [{"name": "ship_order", "arguments": args} for args, _ in BAD_ORDERS]
    typed_tools.SEEN.pop("ship_order", None)
    result, seen = run_loop(registry_of(typed_tools.ship_order), *calls)
    records: list[ToolCallRecord] = result.tool_call_history
    assert [r.error_kind for r in records] == ["validation_error"] * len(BAD_ORDERS)
    for record, (arguments, message) in zip(records, BAD_ORDERS, strict=True):
        assert record.error == f"invalid arguments for ship_order: {message}"
        assert record.inputs == arguments
    assert "ship_order" not in typed_tools.SEEN  # the handler never ran
    # The words go back to the model, which can act on them.
    results = seen[1].messages[-1].results  # type: ignore[union-attr]
    assert results[0].content["error"].endswith(BAD_ORDERS[0][1])


def test_a_field_default_and_numpy_docstrings() -> None:
    label = spec(typed_tools.label)
    assert label.description == "Print a label."
    assert label.input_schema["properties"]["size"]["description"] == "Font size, in points."
    result, _ = run_loop(
        registry_of(typed_tools.label),
        {"name": "label", "arguments": {"colour": "red"}},
        {"name": "label", "arguments": {"colour": "red", "size": 10}},
    )
    ok, bad = result.tool_call_history
    assert typed_tools.SEEN["label"] == {"colour": Colour.RED, "size": 3}
    assert ok.output == {"result": "red"}  # an Enum return value: its value
    assert bad.error == "invalid arguments for label: size: input should be less than or equal to 9"


def test_structured_returns_are_sent_as_json() -> None:
    result, seen = run_loop(
        registry_of(typed_tools.stamp, typed_tools.parcel_of),
        {
            "name": "stamp",
            "arguments": {"when": "2026-12-03T10:00:00Z", "folder": "/srv/a", "text": "hi"},
        },
        {"name": "parcel_of", "arguments": {"weight_kg": 1.5}},
    )
    stamped, parcel = result.tool_call_history
    when = typed_tools.SEEN["stamp"]["when"]
    assert when == datetime.datetime(2026, 12, 3, 10, tzinfo=datetime.UTC)
    assert typed_tools.SEEN["stamp"]["folder"] == Path("/srv/a")
    assert stamped.output == {
        "when": "2026-12-03T10:00:00Z",
        "folder": "/srv/a/stamped",
        "payload": base64.urlsafe_b64encode(b"hi\xff").decode(),
    }
    assert parcel.output == {"weight_kg": 1.5, "fragile": False}  # a dataclass: its fields
    assert spec(typed_tools.parcel_of).typed_arguments is None  # a plain float parameter
    sent = seen[1].messages[-1].results  # type: ignore[union-attr]
    assert [json.loads(json.dumps(r.content)) for r in sent] == [stamped.output, parcel.output]


def test_every_structured_return_kind() -> None:
    class Size(enum.Enum):
        S = "s"

    @dataclasses.dataclass
    class Point:
        x: int
        y: int

    class Pair(BaseModel):
        left: Point
        when: datetime.datetime

    returns: dict[str, tuple[Any, dict[str, Any]]] = {
        "model": (
            Pair(left=Point(1, 2), when=datetime.datetime(2026, 1, 2, 3, 4, 5)),
            {"left": {"x": 1, "y": 2}, "when": "2026-01-02T03:04:05"},
        ),
        "dataclass": (Point(3, 4), {"x": 3, "y": 4}),
        "enum": (Size.S, {"result": "s"}),
        "date_time": (datetime.datetime(2026, 1, 2), {"result": "2026-01-02T00:00:00"}),
        "path": (Path("/a/b"), {"result": "/a/b"}),
        "raw_bytes": (b"\x00\xfb\xff", {"result": "APv_"}),
        "listed": ([Point(0, 1)], {"result": [{"x": 0, "y": 1}]}),
    }
    registry = ToolRegistry()
    for name, (value, _) in returns.items():
        registry.register(name, lambda value=value: value, description=name)
    result, _ = run_loop(registry, *({"name": n, "arguments": {}} for n in returns))
    for record in result.tool_call_history:
        assert record.success, record.error
        assert record.output == returns[record.tool_name][1], record.tool_name


def test_a_value_with_no_json_form_is_still_an_invalid_output() -> None:
    class Holder(BaseModel):
        value: float

    registry = ToolRegistry()
    registry.register("opaque", lambda: {"x": object()}, description="o")
    registry.register("nan_model", lambda: Holder(value=float("nan")), description="n")
    result, _ = run_loop(
        registry, {"name": "opaque", "arguments": {}}, {"name": "nan_model", "arguments": {}}
    )
    opaque, nan_model = result.tool_call_history
    assert opaque.error_kind == nan_model.error_kind == "invalid_output"
    assert opaque.error == (
        "opaque returned a value that is not JSON-serialisable: "
        "Object of type object is not JSON serializable"
    )
    assert nan_model.error is not None and "not JSON-serialisable" in nan_model.error


async def test_reserved_context_parameters_still_reach_a_typed_tool(tmp_path: Path) -> None:
    from cleveragents.tool import ToolActorContext

    got: dict[str, Any] = {}

    @tool
    def where(colour: Colour, sandbox_root: str) -> str:
        """Where."""
        got.update(colour=colour, root=sandbox_root)
        return sandbox_root

    runner = ToolRunner(registry_of(where))
    try:
        record = await runner.run(
            ToolCallRequest("c", "where", {"colour": "red", "sandbox_root": "/evil"}),
            ToolActorContext(plan_id="p", phase="x", sandbox_root=str(tmp_path)),
        )
    finally:
        runner.shutdown()
    assert record.success, record.error
    assert got == {"colour": Colour.RED, "root": str(tmp_path)}
    assert record.inputs == {"colour": "red", "sandbox_root": str(tmp_path)}
    assert "sandbox_root" not in spec(where).input_schema["properties"]


# -- docstrings -------------------------------------------------------------------------------

DOCSTRINGS = {
    "google": """Search the index.

    Returns matches in rank order.

    Args:
        query: What to look for.
        limit (int): At most this many
            results.
        *extra: More.

    Returns:
        The matches.
    """,
    "sphinx": """Do it.

    :param path: where
        exactly
    :param int n: how many
    :returns: nothing
    """,
    "google with a note": """Move a file.

    Note:
        Never across devices.

    Args:
        source: From here.
    """,
}


def test_the_fast_reader_gives_what_griffe_gives() -> None:
    """The docstrings read without griffe (to spare its import) read the same with it."""
    import inspect

    from cleveragents.tool.schema import _simple_reader_fits, docstring_style
    from cleveragents.workspace.builtins import builtin_tools
    from support import plain_tool_signatures

    corpus = list(DOCSTRINGS.values())
    corpus += [inspect.getdoc(s.handler) or "" for s in builtin_tools()]
    corpus += [inspect.getdoc(f) or "" for f in plain_tool_signatures.SIGNATURES]
    checked = 0
    for doc in corpus:
        text = inspect.cleandoc(doc)
        style = docstring_style(text)
        if style != "numpy" and _simple_reader_fits(text, style):
            assert _read_simple_docstring(text) == _read_with_griffe(text, style), text
            checked += 1
    assert checked >= 10


def test_google_numpy_and_sphinx_docstrings() -> None:
    assert parse_docstring(DOCSTRINGS["google"]) == (
        "Search the index.\n\nReturns matches in rank order.",
        {"query": "What to look for.", "limit": "At most this many results.", "extra": "More."},
    )
    assert parse_docstring(DOCSTRINGS["sphinx"]) == (
        "Do it.",
        {"path": "where exactly", "n": "how many"},
    )
    assert parse_docstring(DOCSTRINGS["google with a note"]) == (
        "Move a file.",
        {"source": "From here."},
    )
    numpy = """Convert a temperature.

    Longer words.

    Parameters
    ----------
    celsius : float
        Degrees Celsius,
        any value.
    digits : int, optional
        Rounding.

    Returns
    -------
    float
        Degrees Fahrenheit.
    """
    assert parse_docstring(numpy) == (
        "Convert a temperature.\n\nLonger words.",
        {"celsius": "Degrees Celsius, any value.", "digits": "Rounding."},
    )
    # A Google section title griffe knows but the fast reader does not take: griffe reads it.
    keyword = """Find things.

    Keyword Args:
        depth: How deep.
    """
    assert parse_docstring(keyword) == ("Find things.", {"depth": "How deep."})
    params = "Find things.\n\nParams:\n    depth: How deep.\n"
    assert parse_docstring(params) == ("Find things.", {"depth": "How deep."})
    sphinx_arg = "Find things.\n\n:arg depth: How deep.\n:type depth: int\n"
    assert parse_docstring(sphinx_arg) == ("Find things.", {"depth": "How deep."})

    @tool
    def convert(celsius: float, digits: int = 1) -> float:
        """Convert a temperature.

        Parameters
        ----------
        celsius : float
            Degrees Celsius.
        digits : int
            Rounding.
        """
        return round(celsius * 9 / 5 + 32, digits)

    properties = spec(convert).input_schema["properties"]
    assert properties["celsius"]["description"] == "Degrees Celsius."
    assert properties["digits"] == {"type": "integer", "description": "Rounding.", "default": 1}


# -- the provider formats, through the real SDKs ------------------------------------------


def check_provider_schema(schema: dict[str, Any]) -> None:
    """What both Anthropic's input_schema and OpenAI's parameters take: a self-contained
    object schema (no reference a provider would have to resolve), valid JSON Schema."""
    assert schema["type"] == "object"
    validators.Draft202012Validator.check_schema(schema)
    assert not walk_keys(schema) & {"$ref", "$defs", "definitions", "title", "discriminator"}


async def run_through(registry: ToolRegistry, caller: Any) -> Any:
    """One run of the real runtime with a provider's caller (closed afterwards)."""
    runner = ToolRunner(registry)
    try:
        return await ToolCallingRuntime(registry, runner, caller).arun_tool_loop("ship")
    finally:
        runner.shutdown()
        await caller.aclose()


async def test_anthropic_takes_the_schemas_and_the_loop_runs_through_the_sdk() -> None:
    from cleveragents.providers.anthropic import AnthropicCaller
    from support.fake_anthropic import API_KEY, FakeAnthropic, StreamReply, Text, ToolUse

    registry = registry_of(typed_tools.ship_order, typed_tools.label)
    with FakeAnthropic() as fake:
        caller = AnthropicCaller(api_key=API_KEY, base_url=fake.base_url, max_retries=0)
        bad = {**GOOD_ORDER, "address": {"street": "x", "zip_code": "1"}}
        fake.push(
            StreamReply(
                [
                    ToolUse("toolu_1", "ship_order", [json.dumps(GOOD_ORDER)]),
                    ToolUse("toolu_2", "ship_order", [json.dumps(bad)]),
                ],
                stop_reason="tool_use",
            ),
            StreamReply([Text(["Shipped."])]),
        )
        result = await run_through(registry, caller)
        first, second = (r.body for r in fake.requests)
    assert result.content == "Shipped."
    assert [t["input_schema"] for t in first["tools"]] == [s.input_schema for s in registry]
    for sent in first["tools"]:
        check_provider_schema(sent["input_schema"])
    good, failed = result.tool_call_history
    assert good.success and good.output["to"]["zip_code"] == "12345"
    assert failed.error_kind == "validation_error"
    results = second["messages"][-1]["content"]
    assert json.loads(results[0]["content"]) == good.output
    assert results[1]["is_error"] is True
    assert "address.zip_code: string should match pattern" in results[1]["content"]


async def test_openai_takes_the_schemas_and_the_loop_runs_through_the_sdk() -> None:
    from cleveragents.providers.openai import OpenAICaller
    from support.fake_openai import ChunkScript, FakeOpenAIServer

    registry = registry_of(typed_tools.ship_order, typed_tools.stamp)
    with FakeOpenAIServer() as server:
        caller = OpenAICaller("fake-model", base_url=server.base_url, max_retries=0)
        server.enqueue(
            ChunkScript()
            .tool_call_start(0, "call_1", "ship_order")
            .tool_arguments(0, json.dumps(GOOD_ORDER))
            .finish("tool_calls")
            .usage(10, 5)
            .reply(),
            ChunkScript().text("Shipped.").finish("stop").usage(20, 2).reply(),
        )
        result = await run_through(registry, caller)
        first, second = server.bodies
    assert result.content == "Shipped."
    sent = [t["function"]["parameters"] for t in first["tools"]]
    assert sent == [s.input_schema for s in registry]
    for schema in sent:
        check_provider_schema(schema)
    [record] = result.tool_call_history
    assert record.success, record.error
    assert json.loads(second["messages"][-1]["content"]) == record.output


# -- the fronts show the nested schemas ------------------------------------------------------


def test_cleveragents_tools_lists_the_nested_schemas() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "cleveragents",
            "tools",
            "--tools",
            typed_tools.__file__,
            "--json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    listed = {row["name"]: row for row in json.loads(done.stdout)}
    for function in (typed_tools.ship_order, typed_tools.label, typed_tools.stamp):
        found = spec(function)
        assert listed[found.name]["input_schema"] == found.input_schema
    address = listed["ship_order"]["input_schema"]["properties"]["address"]
    assert address["properties"]["zip_code"]["pattern"] == "^\\d{5}$"
