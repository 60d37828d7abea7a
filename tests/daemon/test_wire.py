"""Wire types: strict structuring, camelCase, nothing omitted, and a schema that cannot drift."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import pytest

from cleveragents.daemon import schema
from cleveragents.protocol import wire
from cleveragents.protocol.converter import camel, structure, unstructure
from cleveragents.service.errors import ParamsError
from support.daemon_support import SCHEMA_FILE, check_type


def test_camel() -> None:
    assert camel("sandbox_root") == "sandboxRoot"
    assert camel("work_done_token") == "workDoneToken"
    assert camel("prompt") == "prompt"


def test_run_params_read_camel_case_and_fill_defaults() -> None:
    params = structure(
        {"prompt": "go", "sandboxRoot": "/tmp", "maxIterations": 3, "workDoneToken": "t"},
        wire.RunParams,
    )
    assert (params.prompt, params.sandbox_root, params.max_iterations) == ("go", "/tmp", 3)
    assert params.work_done_token == "t" and params.provider is None


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ({"prompt": 7, "sandboxRoot": "/"}, "params.prompt: expected a string, got a number"),
        ({"prompt": True, "sandboxRoot": "/"}, "params.prompt: expected a string, got a boolean"),
        ({"prompt": None, "sandboxRoot": "/"}, "params.prompt: expected a string, got null"),
        (
            {"prompt": "x", "sandboxRoot": "/", "maxIterations": 2.0},
            "params.maxIterations: expected an integer, got a number",
        ),
        (
            {"prompt": "x", "sandboxRoot": "/", "maxIterations": False},
            "params.maxIterations: expected an integer, got a boolean",
        ),
        (
            {"prompt": "x", "sandboxRoot": "/", "tools": "pause"},
            "params.tools: expected an array, got a string",
        ),
        (
            {"prompt": "x", "sandboxRoot": "/", "tools": ["a", {"b": 1}]},
            "params.tools[1]: expected a string, got an object",
        ),
        (
            {"prompt": "x", "sandboxRoot": "/", "workDoneToken": [1]},
            "params.workDoneToken: expected an integer or a string or null, got an array",
        ),
        ({"prompt": "x", "sandboxRoot": "/", "Prompt": "y"}, "params: unknown field 'Prompt'"),
        ({"sandboxRoot": "/"}, "params.prompt: required field missing"),
    ],
)
def test_run_params_are_never_coerced(data: dict[str, Any], problem: str) -> None:
    with pytest.raises(ParamsError) as raised:
        structure(data, wire.RunParams)
    assert problem in raised.value.problems


def test_every_problem_is_reported_at_once() -> None:
    with pytest.raises(ParamsError) as raised:
        structure({"prompt": 1, "sandboxRoot": 2, "bogus": 3}, wire.RunParams)
    assert len(raised.value.problems) == 3


def test_nested_objects_name_the_full_path() -> None:
    with pytest.raises(ParamsError) as raised:
        structure({"decision": "perhaps"}, wire.ApproveToolCallResult, where="result")
    assert raised.value.problems == [
        "result.decision: must be one of 'allow', 'deny', 'allow_for_run', 'cancel', got 'perhaps'"
    ]


def test_unstructuring_keeps_false_zero_empty_and_null() -> None:
    finished = wire.RunFinishedParams(
        run_id="r",
        seq=1,
        stop_reason="final_answer",
        content="",
        iterations=0,
        terminated_by_limit=False,
        usage=wire.Usage(
            input_tokens=0,
            output_tokens=0,
            cache_read_tokens=0,
            cache_write_tokens=0,
            cost_usd=None,
        ),
        tool_calls=0,
        error=None,
        error_type=None,
    )
    data = unstructure(finished)
    assert data == {
        "runId": "r",
        "seq": 1,
        "stopReason": "final_answer",
        "content": "",
        "iterations": 0,
        "terminatedByLimit": False,
        "usage": {
            "inputTokens": 0,
            "outputTokens": 0,
            "cacheReadTokens": 0,
            "cacheWriteTokens": 0,
            "costUsd": None,
        },
        "toolCalls": 0,
        "error": None,
        "errorType": None,
    }
    assert unstructure(wire.ToolsResult(tools=[])) == {"tools": []}
    assert unstructure(wire.RunsParams()) == {"limit": 50, "offset": 0, "batchId": None}


def test_free_form_json_passes_through_untouched() -> None:
    record = wire.ToolCallRecord(
        call_id="c",
        tool_name="t",
        inputs={"snake_key": [1, {"jsonrpc": "2.0"}]},
        output={"type_name": "kept"},
        duration_ms=1.5,
        success=True,
        error=None,
        error_kind=None,
        iteration=1,
    )
    data = unstructure(record)
    assert data["inputs"] == {"snake_key": [1, {"jsonrpc": "2.0"}]}
    assert data["output"] == {"type_name": "kept"}
    assert structure(data, wire.ToolCallRecord) == record
    check_type("ToolCallRecord", data)


# -- the schema ------------------------------------------------------------------------------


def test_the_checked_in_schema_matches_the_code() -> None:
    assert SCHEMA_FILE.read_text(encoding="utf-8") == schema.render(), (
        "protocol/schema.json is out of date: run python -m cleveragents.daemon.schema"
    )


def test_the_checked_in_readme_reference_matches_the_code() -> None:
    readme = schema.README_PATH.read_text(encoding="utf-8")
    assert readme == schema.readme_with_reference(readme), (
        "protocol/README.md's reference is out of date: run python -m cleveragents.daemon.schema"
    )
    for method in wire.METHODS:
        assert f"`{method.name}`" in readme
    for error in wire.ERROR_CODES:
        assert f"| {error.code} | {error.name} |" in readme


def test_the_drift_check_fails_on_stale_files(tmp_path: Path) -> None:
    stale = tmp_path / "schema.json"
    data = json.loads(schema.render())
    del data["$defs"]["RunParams"]["properties"]["prompt"]
    stale.write_text(json.dumps(data, indent=2) + "\n")
    readme = tmp_path / "README.md"
    readme.write_text(
        schema.README_PATH.read_text(encoding="utf-8").replace("| `sandboxRoot` |", "| `x` |")
    )
    paths = ["--output", str(stale), "--readme", str(readme)]
    assert schema.main(["--check", *paths]) == 1
    assert schema.main(paths) == 0
    assert schema.main(["--check", *paths]) == 0
    assert "| `sandboxRoot` |" in readme.read_text()


def test_the_schema_covers_every_method_type_and_field() -> None:
    generated = schema.build_schema()
    defs = generated["$defs"]
    for method in wire.METHODS:
        entry = generated["x-methods"][method.name]
        for cls in (method.params, method.result):
            if cls is None:
                continue
            assert cls.__name__ in defs
            properties = defs[cls.__name__]["properties"]
            assert list(properties) == [camel(a.name) for a in attrs.fields(cls)]
            assert all(p.get("description") for p in properties.values()), cls.__name__
        assert entry["kind"] == method.kind
    assert [e["code"] for e in generated["x-errorCodes"]] == [e.code for e in wire.ERROR_CODES]


def test_required_fields_in_the_schema_are_the_ones_without_defaults() -> None:
    defs = schema.build_schema()["$defs"]
    assert defs["RunParams"]["required"] == ["prompt", "sandboxRoot"]
    assert "required" not in defs["RunsParams"]
    assert defs["RunsParams"]["properties"]["limit"]["default"] == 50
