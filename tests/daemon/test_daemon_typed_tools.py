"""The daemon offers typed (Pydantic) tools: its tool list shows their nested schemas, and a
run converts their arguments and words their validation errors as the runtime does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from support.daemon_support import RawDaemon, call, replay_options, write_script

TYPED_TOOLS = str(Path(__file__).resolve().parents[1] / "support" / "typed_tools.py")

ORDER: dict[str, Any] = {
    "address": {"street": "1 Main St", "zip_code": "12345"},
    "parcel": {"weight_kg": 2.5},
    "colour": "blue",
    "lines": [{"sku": "a", "qty": 2}],
}


async def test_the_tool_list_and_a_run_with_typed_tools(
    raw: RawDaemon, tmp_path: Path, sandbox: Path
) -> None:
    bad = {**ORDER, "lines": [{"sku": "a", "qty": 0}]}
    script = write_script(
        tmp_path / "script.json",
        {"text": "", "tool_calls": [call("ship_order", **ORDER), call("ship_order", **bad)]},
        {"text": "Done."},
    )
    await raw.initialize(replay_options(script, toolModules=[TYPED_TOOLS]))
    listed = await raw.request("cleveragents/tools", {})
    tools = {t["name"]: t for t in listed["result"]["tools"]}
    schema = tools["ship_order"]["inputSchema"]
    address = schema["properties"]["address"]
    # Nested property names are data: they reach the client exactly as written.
    assert list(address["properties"]) == ["street", "zip_code", "title"]
    assert address["properties"]["zip_code"]["pattern"] == "^\\d{5}$"
    assert schema["properties"]["lines"]["items"]["properties"]["qty"] == {
        "minimum": 1,
        "type": "integer",
    }
    assert schema["properties"]["parcel"]["properties"]["weight_kg"]["exclusiveMinimum"] == 0

    answer = await raw.request("cleveragents/run", {"prompt": "go", "sandboxRoot": str(sandbox)})
    good, failed = answer["result"]["toolCallHistory"]
    assert good["success"] is True
    assert good["output"]["to"] == {"street": "1 Main St", "zip_code": "12345", "title": ""}
    assert good["output"]["colour"] == "blue"
    assert failed["errorKind"] == "validation_error"
    assert failed["error"] == (
        "invalid arguments for ship_order: lines.0.qty: input should be greater than or equal to 1"
    )
