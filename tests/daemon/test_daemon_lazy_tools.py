"""When the daemon builds its tools, through the real daemon over stdio (issue 21: cold start).

Built-ins alone: `initialize` checks the client's tools against the built-ins' constant names
and imports neither a tool nor the run machinery; the first request that needs them builds
them. Tool modules or plugins: built at `initialize`, so one that fails to load, or that
clashes with a client's tool, is that answer's error, as it always was.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from cleveragents.protocol import wire
from cleveragents.workspace.builtin_names import BUILTIN_TOOL_NAMES
from support.daemon_support import RawDaemon, call, daemon_env, only_record, write_script

DIAGNOSTICS = {
    "name": "get_diagnostics",
    "description": "The editor's problems for a file.",
    "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
    "readOnly": True,
}
# `python -X importtime` on stderr, one line per module the daemon imported.
IMPORT_TIMES = {"PYTHONPROFILEIMPORTTIME": "1"}
# What the first request loads, not `initialize`: the tools, the runs, the history's SQLite,
# the context guard (the settings need only its policy, tool/context_policy.py), the type-hint
# reader (client tools come with their schemas).
LAZY_MODULES = (
    "cleveragents.workspace.builtins",
    "cleveragents.service.runs",
    "sqlite3",
    "cleveragents.tool.context_guard",
    "cleveragents.tool.schema",
)


def declaring(*tools: dict[str, Any]) -> dict[str, Any]:
    return {"experimental": {"cleveragents": {"tools": list(tools)}}}


def builtins_only(script: str, **extra: Any) -> dict[str, Any]:
    return {"provider": "replay", "replayScript": script, "pluginTools": False, **extra}


def imported(raw: RawDaemon, module: str) -> bool:
    return re.search(rf"\|\s*{re.escape(module)}$", raw.stderr.decode(), re.MULTILINE) is not None


async def initialize(raw: RawDaemon, options: Any, capabilities: Any) -> dict[str, Any]:
    msg_id = raw.send_request(
        "initialize",
        {"processId": None, "capabilities": capabilities, "initializationOptions": options},
    )
    return await raw.response(msg_id)


async def test_builtins_alone_are_checked_by_name_and_built_by_the_first_request(
    tmp_path: Path, sandbox: Path
) -> None:
    (sandbox / "a.txt").write_text("x\n")
    script = write_script(
        tmp_path / "script.json",
        {"text": "Listing.", "tool_calls": [call("list_dir", "c1", path=".")]},
        {"text": "Done."},
    )
    # Only `initialize`: a client tool named like a built-in is refused, a good one taken,
    # and nothing of the tools or the runs is imported.
    raw = await RawDaemon.start(tmp_path, env=IMPORT_TIMES)
    try:
        clash = {**DIAGNOSTICS, "name": "grep"}
        refused = await initialize(raw, builtins_only(script), declaring(clash))
        assert refused["error"]["code"] == wire.INVALID_PARAMS, refused
        assert refused["error"]["data"]["problems"] == [
            "capabilities.experimental.cleveragents.tools[0] ('grep'): "
            "the daemon already has a tool named 'grep'; a client's tool cannot replace it: "
            "rename it"
        ]
        taken = await initialize(raw, builtins_only(script), declaring(DIAGNOSTICS))
        assert taken["result"]["capabilities"]["experimental"]["cleveragents"]["clientTools"] == [
            "get_diagnostics"
        ]
        raw.notify("initialized", {})
        await raw.request("shutdown")
    finally:
        await raw.close()
    assert [m for m in LAZY_MODULES if imported(raw, m)] == []

    # The first request builds the built-ins: the ones `initialize` named, and they run.
    raw = await RawDaemon.start(tmp_path, env=IMPORT_TIMES)
    try:
        await initialize(raw, builtins_only(script), declaring(DIAGNOSTICS))
        raw.notify("initialized", {})
        listed = await raw.request("cleveragents/tools", {})
        names = [tool["name"] for tool in listed["result"]["tools"]]
        assert names == [*BUILTIN_TOOL_NAMES, "get_diagnostics"]
        run = raw.send_request("cleveragents/run", {"prompt": "ls", "sandboxRoot": str(sandbox)})
        record = await only_record(raw, run, "c1")
        assert record["success"] is True, record
        assert "a.txt" in str(record["output"])
    finally:
        raw.kill()
        await raw.close()
    assert [m for m in LAZY_MODULES if imported(raw, m)] == list(LAZY_MODULES)


def plugin_site(tmp_path: Path, entry_points: str) -> dict[str, str]:
    """A folder holding an installed package that declares `cleveragents.tools` entry
    points (and the module `plugged_tools` with one @tool), first on the daemon's path."""
    site = tmp_path / "site"
    (site / "plugged-1.0.dist-info").mkdir(parents=True)
    (site / "plugged-1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: plugged\nVersion: 1.0\n"
    )
    (site / "plugged-1.0.dist-info" / "entry_points.txt").write_text(
        f"[cleveragents.tools]\n{entry_points}"
    )
    (site / "plugged_tools.py").write_text(
        "from cleveragents.tool import tool\n\n"
        "@tool\n"
        "def shout(text: str) -> str:\n"
        '    """Say it louder."""\n'
        "    return text.upper()\n"
    )
    path = os.pathsep.join([str(site), daemon_env(tmp_path)["PYTHONPATH"]])
    return {"PYTHONPATH": path}


async def test_a_plugin_is_loaded_at_initialize_and_its_failure_is_that_answers_error(
    tmp_path: Path,
) -> None:
    script = write_script(tmp_path / "script.json", {"text": "Done."})
    options = {"provider": "replay", "replayScript": script}
    raw = await RawDaemon.start(
        tmp_path, env=plugin_site(tmp_path, "shout = plugged_tools:shout\n")
    )
    try:
        clash = {**DIAGNOSTICS, "name": "shout"}
        refused = await initialize(raw, options, declaring(clash))
        assert refused["error"]["data"]["problems"] == [
            "capabilities.experimental.cleveragents.tools[0] ('shout'): "
            "the daemon already has a tool named 'shout'; a client's tool cannot replace it: "
            "rename it"
        ]
    finally:
        raw.kill()
        await raw.close()

    broken = plugin_site(tmp_path / "broken", "gone = no_such_plugin_module:gone\n")
    raw = await RawDaemon.start(tmp_path, env=broken)
    try:
        failed = await initialize(raw, options, {})
        assert failed["error"]["code"] == wire.INVALID_PARAMS, failed
        assert "entry point 'gone' (no_such_plugin_module:gone) failed to load" in str(
            failed["error"]["message"]
        )
    finally:
        raw.kill()
        await raw.close()


async def test_a_tool_module_is_loaded_at_initialize_and_its_failure_is_that_answers_error(
    tmp_path: Path,
) -> None:
    script = write_script(tmp_path / "script.json", {"text": "Done."})
    raw = await RawDaemon.start(tmp_path, env=IMPORT_TIMES)
    try:
        failed = await initialize(raw, builtins_only(script, toolModules=["no_such_mod"]), {})
        assert failed["error"]["code"] == wire.INVALID_PARAMS, failed
        assert "initializationOptions.toolModules" in failed["error"]["message"]
        taken = await initialize(raw, builtins_only(script, toolModules=["daemon_tools"]), {})
        assert "result" in taken, taken
        await raw.request("shutdown")
    finally:
        await raw.close()
    # The registry was built at `initialize`, built-ins and all. (`-X importtime` does not
    # see `daemon_tools` itself: importlib.import_module bypasses it.)
    assert imported(raw, "cleveragents.workspace.builtins")
