"""The daemon starts a sandbox's MCP servers for its runs and stops them when it exits."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from cleveragents.protocol import wire
from support.daemon_support import RawDaemon, replay_options, write_script

DEMO_SERVER = str(Path(__file__).parent.parent / "mcp_fixtures" / "demo_server.py")


def mcp_config(sandbox: Path, entry: dict[str, object]) -> None:
    (sandbox / ".mcp.json").write_text(json.dumps({"mcpServers": {"demo": entry}}))


async def test_runs_use_the_sandbox_mcp_tools_and_exit_stops_the_servers(
    raw: RawDaemon, tmp_path: Path, sandbox: Path
) -> None:
    mcp_config(sandbox, {"command": sys.executable, "args": [DEMO_SERVER]})
    script = write_script(
        tmp_path / "script.json",
        {"tool_calls": [{"name": "demo__add", "arguments": {"a": 20, "b": 22}}]},
        {"tool_calls": [{"name": "demo__spawn_helper", "arguments": {}}]},
        {"text": "Done."},
    )
    await raw.initialize(replay_options(script, automationProfile="full-auto", trustWorkspace=True))
    listed = await raw.request("cleveragents/tools", {"sandboxRoot": str(sandbox)})
    sources = {t["name"]: t["source"] for t in listed["result"]["tools"]}
    assert sources["demo__add"] == "mcp:demo"
    without = await raw.request("cleveragents/tools", {})
    assert "demo__add" not in {t["name"] for t in without["result"]["tools"]}

    answer = await raw.request("cleveragents/run", {"prompt": "add", "sandboxRoot": str(sandbox)})
    history = answer["result"]["toolCallHistory"]
    assert history[0]["success"] and "42" in json.dumps(history[0]["output"])
    helper_pid = int(history[1]["output"]["helper_pid"])
    os.kill(helper_pid, 0)  # the MCP server's child is alive while the daemon is

    assert "result" in await raw.request("shutdown")
    raw.notify("exit")
    assert await raw.process.wait() == 0
    assert not os.path.exists(f"/proc/{helper_pid}") or _is_zombie(helper_pid)


async def test_an_mcp_server_that_cannot_start_is_a_clear_error(
    raw: RawDaemon, tmp_path: Path, sandbox: Path
) -> None:
    mcp_config(sandbox, {"command": "/nonexistent/mcp-server"})
    script = write_script(tmp_path / "script.json", {"text": "Done."})
    await raw.initialize(replay_options(script, trustWorkspace=True))
    answer = await raw.request("cleveragents/run", {"prompt": "x", "sandboxRoot": str(sandbox)})
    assert answer["error"]["code"] == wire.TOOLS_UNAVAILABLE
    assert "demo" in answer["error"]["message"]
    # The daemon is still there for the next request.
    assert "result" in await raw.request("cleveragents/tools", {})


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(") ", 1)[1].startswith("Z")
    except OSError:
        return True


async def test_read_only_runs_start_no_mcp_server(
    raw: RawDaemon, tmp_path: Path, sandbox: Path
) -> None:
    marker = tmp_path / "started"
    mcp_config(sandbox, {"command": "sh", "args": ["-c", f"touch {marker}; exit 1"]})
    script = write_script(tmp_path / "script.json", {"text": "Done."})
    # Trusted, even: read-only starts nothing.
    await raw.initialize(replay_options(script, automationProfile="read-only", trustWorkspace=True))
    answer = await raw.request("cleveragents/run", {"prompt": "x", "sandboxRoot": str(sandbox)})
    assert answer["result"]["content"] == "Done."
    assert not marker.exists()


async def test_a_secret_expanded_into_the_command_never_shows_in_the_error(
    tmp_path: Path, sandbox: Path
) -> None:
    mcp_config(sandbox, {"command": "sh", "args": ["-c", "exit 1", "${CA_TEST_SECRET_KEY}"]})
    raw = await RawDaemon.start(tmp_path, env={"CA_TEST_SECRET_KEY": "sk-very-secret"})
    try:
        script = write_script(tmp_path / "script.json", {"text": "Done."})
        await raw.initialize(replay_options(script, trustWorkspace=True))
        answer = await raw.request("cleveragents/run", {"prompt": "x", "sandboxRoot": str(sandbox)})
        message = answer["error"]["message"]
        assert "${CA_TEST_SECRET_KEY}" in message
        assert "sk-very-secret" not in message
    finally:
        raw.kill()
        await raw.process.wait()
