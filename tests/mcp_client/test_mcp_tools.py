"""MCP tools: real servers (tests/mcp_fixtures, built with the SDK) started from `.mcp.json`.

Nothing here is mocked: each test starts real server processes over stdio, and the loop tests
drive them through `ToolCallingRuntime` with the offline model.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp.types import (
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from cleveragents.assembly import build_runtime, tool_rows
from cleveragents.mcp import (
    McpConfigError,
    McpStartError,
    McpToolset,
    McpToolsetPool,
    add_mcp_tools,
    read_mcp_config,
    registry_name,
    registry_with_mcp_tools,
)
from cleveragents.mcp.results import output_of
from cleveragents.providers.offline import OfflineCaller
from cleveragents.tool import ToolActorContext
from cleveragents.tool.errors import ToolError
from cleveragents.tool.messages import ToolCallRequest
from cleveragents.tool.policy import verdict
from cleveragents.tool.records import ToolCallRecord
from cleveragents.tool.registry import ToolRegistry
from cleveragents.tool.runner import ToolRunner
from cleveragents.toolsets import ToolLoadError

DEMO_SERVER = str(Path(__file__).resolve().parents[1] / "mcp_fixtures" / "demo_server.py")
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
# A guard against hangs only: every operation under it finishes in seconds when it works.
HANG_GUARD_S = 60.0


def demo_entry(
    kind: str = "main", *extra: str, env: dict[str, str] | None = None
) -> dict[str, Any]:
    entry: dict[str, Any] = {"command": sys.executable, "args": [DEMO_SERVER, kind, *extra]}
    if env is not None:
        entry["env"] = env
    return entry


def write_config(root: Path, servers: dict[str, Any]) -> None:
    (root / ".mcp.json").write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")


def process_running(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie waiting to be reaped is not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rfind(")") + 2 :].split()[0] != "Z"


async def wait_until_gone(pids: list[int]) -> list[int]:
    """The pids still running once they had a few seconds to go (normally none, at once)."""
    for _ in range(500):
        alive = [pid for pid in pids if process_running(pid)]
        if not alive:
            return []
        await asyncio.sleep(0.02)
    return alive


async def guarded(awaitable: Awaitable[Any]) -> Any:
    async with asyncio.timeout(HANG_GUARD_S):
        return await awaitable


def records_by_tool(records: list[ToolCallRecord]) -> dict[str, ToolCallRecord]:
    return {record.tool_name: record for record in records}


async def call(runner: ToolRunner, name: str, **arguments: Any) -> ToolCallRecord:
    return await runner.run(ToolCallRequest(f"call_{name}", name, arguments))


# -- the full loop -----------------------------------------------------------------------------
async def test_full_loop_with_offline_model_records_every_mcp_tool(sandbox: Path) -> None:
    write_config(sandbox, {"demo": demo_entry(), "crashy": demo_entry("crashy")})
    registry = ToolRegistry()
    async with McpToolset(str(sandbox), tool_timeout_s=3.0) as toolset:
        add_mcp_tools(registry, toolset)
        server_pids = [pid for pid in toolset.pids.values() if pid is not None]
        runtime = build_runtime(OfflineCaller(), registry)
        context = ToolActorContext(sandbox_root=str(sandbox), automation_profile="full-auto")
        result = await guarded(runtime.arun_tool_loop("Try every MCP tool", context))
        runtime.runner.shutdown()

    assert len(server_pids) == 2
    records = records_by_tool(result.tool_call_history)
    assert set(records) == {
        "demo__add",
        "demo__echo",
        "demo__refuse",
        "demo__whereami",
        "demo__nap",
        "demo__spawn_helper",
        "crashy__crash",
    }
    assert result.stop_reason == "final_answer"
    # Structured content is the output as the server shaped it; text content comes as text.
    assert records["demo__add"].success and records["demo__add"].output == {"result": 2}
    assert records["demo__echo"].output == {"text": "echo: example"}
    where = records["demo__whereami"].output
    assert where["cwd"] == os.path.realpath(sandbox)
    # isError results fail the record with the server's own message.
    refuse = records["demo__refuse"]
    assert not refuse.success and refuse.error_kind == "execution_error"
    assert refuse.error is not None and "refused on purpose: example" in refuse.error
    # A call that outlives the tool timeout fails as a timeout and leaves the server usable.
    assert records["demo__nap"].error_kind == "timeout"
    assert records["demo__spawn_helper"].success
    # The crash kills its server mid-call: a failed record naming the exit code and stderr.
    crash = records["crashy__crash"]
    assert not crash.success and crash.error is not None
    assert "MCP server 'crashy' exited (code 3)" in crash.error
    assert "crashy: giving up on purpose" in crash.error
    # The model was told about the failures and summed up.
    assert "failed" in result.content
    # Closing the toolset stopped both servers and the helper one of them started.
    helper_pid = records["demo__spawn_helper"].output["helper_pid"]
    assert await wait_until_gone([*server_pids, helper_pid]) == []


async def test_tools_have_server_names_sources_schemas_and_effects(sandbox: Path) -> None:
    write_config(sandbox, {"demo": demo_entry()})
    registry = ToolRegistry()
    async with McpToolset(str(sandbox)) as toolset:
        add_mcp_tools(registry, toolset)
        rows = {row["name"]: row for row in tool_rows(registry)}
    assert all(TOOL_NAME.match(name) for name in rows)
    assert all(row["source"] == "mcp:demo" for row in rows.values())
    add = rows["demo__add"]
    assert add["description"] == "Add two integers."
    assert add["input_schema"]["required"] == ["a", "b"]
    assert add["input_schema"]["properties"]["a"]["type"] == "integer"
    # readOnlyHint makes a tool a reader; without it a tool may do anything.
    assert (rows["demo__echo"]["mutating"], rows["demo__echo"]["executes_code"]) == (False, False)
    assert (add["mutating"], add["executes_code"]) == (True, True)
    assert verdict("auto-edit", registry.get("demo__add")) == "ask"  # type: ignore[arg-type]
    assert verdict("auto-edit", registry.get("demo__echo")) == "allow"  # type: ignore[arg-type]


async def test_calls_validate_arguments_before_reaching_the_server(sandbox: Path) -> None:
    write_config(sandbox, {"demo": demo_entry()})
    registry = ToolRegistry()
    async with McpToolset(str(sandbox)) as toolset:
        add_mcp_tools(registry, toolset)
        runner = ToolRunner(registry)
        bad = await guarded(call(runner, "demo__add", a=1, b="two"))
        good = await guarded(call(runner, "demo__add", a=40, b=2))
        runner.shutdown()
    assert bad.error_kind == "validation_error"
    assert good.output == {"result": 42}


async def test_env_expansion_minimal_environment_and_cwd(
    sandbox: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CA_MCP_GREETING", "hello from the test")
    monkeypatch.setenv("CA_MCP_NOT_INHERITED", "secret")
    monkeypatch.delenv("CA_MCP_UNSET", raising=False)
    entry = demo_entry(
        "main",
        "${CA_MCP_GREETING}",
        env={"GREETING": "${CA_MCP_GREETING}", "FALLBACK": "${CA_MCP_UNSET:-fallback}"},
    )
    write_config(sandbox, {"demo": entry})
    registry = ToolRegistry()
    async with McpToolset(str(sandbox)) as toolset:
        add_mcp_tools(registry, toolset)
        runner = ToolRunner(registry)
        greeting = await guarded(call(runner, "demo__whereami", variable="GREETING"))
        fallback = await guarded(call(runner, "demo__whereami", variable="FALLBACK"))
        hidden = await guarded(call(runner, "demo__whereami", variable="CA_MCP_NOT_INHERITED"))
        runner.shutdown()
    assert greeting.output["value"] == "hello from the test"
    assert greeting.output["argv"] == ["main", "hello from the test"]
    assert greeting.output["cwd"] == os.path.realpath(sandbox)
    assert fallback.output["value"] == "fallback"
    # Servers get the entry's env over a minimal environment, not everything cleveragents has.
    assert hidden.success and hidden.output["value"] is None


# -- configuration -----------------------------------------------------------------------------
def test_missing_config_means_no_servers(sandbox: Path) -> None:
    config = read_mcp_config(str(sandbox))
    assert config.servers == () and dict(config.skipped) == {}


async def test_missing_config_opens_an_empty_toolset(sandbox: Path) -> None:
    async with McpToolset(str(sandbox)) as toolset:
        assert toolset.specs == [] and toolset.servers == [] and toolset.alive


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{not json", "is not valid JSON"),
        ("[]", "must hold a JSON object"),
        ('{"mcpServers": []}', "'mcpServers' must be an object"),
        ('{"mcpServers": {"x": "python"}}', "MCP server 'x' must be an object"),
        ('{"mcpServers": {"x": {"args": []}}}', "MCP server 'x' needs a 'command'"),
        ('{"mcpServers": {"x": {"command": "p", "args": "a b"}}}', "'args' must be a list"),
        ('{"mcpServers": {"x": {"command": "p", "env": {"A": 1}}}}', "'env' must map names"),
        ('{"mcpServers": {"x": {"command": "${CA_MCP_UNSET}"}}}', "${CA_MCP_UNSET}"),
    ],
)
def test_malformed_config_names_the_file_and_server(
    sandbox: Path, monkeypatch: pytest.MonkeyPatch, text: str, expected: str
) -> None:
    monkeypatch.delenv("CA_MCP_UNSET", raising=False)
    (sandbox / ".mcp.json").write_text(text, encoding="utf-8")
    with pytest.raises(McpConfigError) as caught:
        read_mcp_config(str(sandbox))
    message = str(caught.value)
    assert str(sandbox / ".mcp.json") in message
    assert expected in message


@pytest.mark.parametrize("kind", ["fifo", "device", "huge"])
def test_a_config_that_is_no_small_regular_file_is_refused_without_reading_it(
    sandbox: Path, kind: str
) -> None:
    """A hostile workspace: a FIFO would block the read forever, /dev/zero fill memory."""
    config = sandbox / ".mcp.json"
    if kind == "fifo":
        os.mkfifo(config)
        expected = "is not a regular file"
    elif kind == "device":
        config.symlink_to("/dev/zero")
        expected = "is not a regular file"
    else:
        config.write_text('{"mcpServers": {}}' + " " * 2_000_000, encoding="utf-8")
        expected = "is larger than 1024 KiB"
    with pytest.raises(McpConfigError, match=expected):
        read_mcp_config(str(sandbox))


async def test_malformed_config_fails_the_toolset(sandbox: Path) -> None:
    (sandbox / ".mcp.json").write_text('{"mcpServers": {"x": {}}}', encoding="utf-8")
    with pytest.raises(McpConfigError, match="MCP server 'x' needs a 'command'"):
        async with McpToolset(str(sandbox)):
            pass


def test_other_transports_and_disabled_servers_are_skipped_with_a_reason(sandbox: Path) -> None:
    write_config(
        sandbox,
        {
            "web": {"type": "http", "url": "http://127.0.0.1:9/mcp"},
            "old": {"url": "http://127.0.0.1:9/sse"},
            "off": {"command": "python", "disabled": True},
            "demo": demo_entry(),
        },
    )
    config = read_mcp_config(str(sandbox))
    assert [server.name for server in config.servers] == ["demo"]
    assert "'http' is not supported" in config.skipped["web"]
    assert "'url' is not supported" in config.skipped["old"]
    assert config.skipped["off"] == "disabled in the config"


# -- servers that do not start -----------------------------------------------------------------
async def test_unknown_command_fails_clearly(sandbox: Path) -> None:
    write_config(sandbox, {"ghost": {"command": "/nonexistent/mcp-server", "args": ["--x"]}})
    with pytest.raises(McpStartError) as caught:
        await guarded(McpToolset(str(sandbox)).__aenter__())
    message = str(caught.value)
    assert "MCP server 'ghost'" in message
    assert "'/nonexistent/mcp-server' was not found" in message
    assert "command: /nonexistent/mcp-server --x" in message
    # The start error is a tool-loading error, so code that loads tools reports it as such.
    assert isinstance(caught.value, ToolLoadError)


async def test_server_exiting_at_once_reports_exit_code_and_stderr(sandbox: Path) -> None:
    script = "import sys; sys.stderr.write('boom: no config file\\n'); sys.exit(4)"
    write_config(sandbox, {"quitter": {"command": sys.executable, "args": ["-c", script]}})
    with pytest.raises(McpStartError) as caught:
        await guarded(McpToolset(str(sandbox)).__aenter__())
    message = str(caught.value)
    assert "MCP server 'quitter'" in message and "failed to start" in message
    assert "exited (code 4)" in message
    assert "boom: no config file" in message
    assert sys.executable in message


async def test_silent_server_times_out_and_is_stopped(sandbox: Path) -> None:
    script = (
        "import sys, time; print('waiting forever', file=sys.stderr, flush=True); time.sleep(600)"
    )
    write_config(sandbox, {"mute": {"command": sys.executable, "args": ["-c", script]}})
    toolset = McpToolset(str(sandbox), startup_timeout_s=1.0)
    with pytest.raises(McpStartError) as caught:
        await guarded(toolset.open())
    message = str(caught.value)
    assert "did not complete the MCP handshake within 1 s" in message
    assert "waiting forever" in message
    pid = toolset.pids["mute"]
    assert pid is not None and await wait_until_gone([pid]) == []


async def test_one_failing_server_stops_the_others(sandbox: Path) -> None:
    write_config(
        sandbox,
        {"demo": demo_entry(), "ghost": {"command": "/nonexistent/mcp-server"}},
    )
    toolset = McpToolset(str(sandbox))
    with pytest.raises(McpStartError, match="'ghost'"):
        await guarded(toolset.open())
    demo_pid = toolset.pids["demo"]
    assert demo_pid is not None and await wait_until_gone([demo_pid]) == []
    assert toolset.specs == [] and not toolset.alive


# -- stopping ----------------------------------------------------------------------------------
async def test_cancelling_a_run_mid_call_stops_the_servers(sandbox: Path) -> None:
    write_config(sandbox, {"demo": demo_entry()})
    started = asyncio.Event()
    pids: list[int] = []

    async def body() -> None:
        async with McpToolset(str(sandbox)) as toolset:
            pids.extend(pid for pid in toolset.pids.values() if pid is not None)
            nap = {spec.name: spec for spec in toolset.specs}["demo__nap"]
            started.set()
            await nap.handler(seconds=600)

    task = asyncio.create_task(body())
    await guarded(started.wait())
    await asyncio.sleep(0.2)  # let the call reach the server
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await guarded(task)
    assert len(pids) == 1 and await wait_until_gone(pids) == []


async def test_calls_after_close_fail_clearly(sandbox: Path) -> None:
    write_config(sandbox, {"demo": demo_entry()})
    async with McpToolset(str(sandbox)) as toolset:
        add = {spec.name: spec for spec in toolset.specs}["demo__add"]
    with pytest.raises(ToolError, match="MCP server 'demo' has been stopped"):
        await guarded(add.handler(a=1, b=2))


# -- registries --------------------------------------------------------------------------------
async def test_name_clash_with_a_registered_tool_adds_nothing(sandbox: Path) -> None:
    write_config(sandbox, {"demo": demo_entry()})
    registry = ToolRegistry()

    def demo__add(a: int) -> int:
        return a

    registry.add(demo__add)
    async with McpToolset(str(sandbox)) as toolset:
        with pytest.raises(McpConfigError, match="'demo__add' from mcp:demo clashes"):
            add_mcp_tools(registry, toolset)
        assert registry.names() == ["demo__add"]
        base = ToolRegistry()

        def local_tool(x: int) -> int:
            return x

        base.add(local_tool)
        combined = registry_with_mcp_tools(base, toolset)
    assert base.names() == ["local_tool"]
    assert combined.names()[0] == "local_tool" and "demo__echo" in combined


def test_registry_names_are_safe_short_and_unique() -> None:
    taken: set[str] = set()
    assert registry_name("my.server", "do thing", taken) == "my_server__do_thing"
    clash = registry_name("my server", "do.thing", taken)
    assert clash != "my_server__do_thing" and clash.startswith("my_server__do_thing_")
    long_a = registry_name("s" * 40, "t" * 40 + "a", taken)
    long_b = registry_name("s" * 40, "t" * 40 + "b", taken)
    assert long_a != long_b
    assert all(TOOL_NAME.match(name) for name in taken)
    # The same config gives the same names every time.
    assert registry_name("s" * 40, "t" * 40 + "a", set()) == long_a


# -- the daemon's pool -------------------------------------------------------------------------
@asynccontextmanager
async def pool_for_test() -> AsyncIterator[McpToolsetPool]:
    pool = McpToolsetPool()
    try:
        yield pool
    finally:
        await pool.close()


async def test_pool_shares_servers_and_restarts_them_when_needed(sandbox: Path) -> None:
    write_config(sandbox, {"demo": demo_entry(), "crashy": demo_entry("crashy")})
    async with pool_for_test() as pool:
        async with pool.lease(str(sandbox)) as first:
            first_pids = dict(first.pids)
            async with pool.lease(str(sandbox)) as again:
                assert again is first  # concurrent runs share the servers
        async with pool.lease(str(sandbox)) as later:
            assert later is first and later.alive
            crash = {spec.name: spec for spec in later.specs}["crashy__crash"]
            with pytest.raises(ToolError, match="exited"):
                await guarded(crash.handler())
            assert not later.alive
        # A dead server means a fresh toolset for the next run, and the old one is stopped.
        async with pool.lease(str(sandbox)) as restarted:
            assert restarted is not first and restarted.alive
            old_demo = first_pids["demo"]
            assert old_demo is not None and await wait_until_gone([old_demo]) == []
            # A changed .mcp.json replaces the toolset too, once its run lets go of it.
            write_config(sandbox, {"demo": demo_entry(env={"GREETING": "changed"})})
            async with pool.lease(str(sandbox)) as changed:
                assert changed is not restarted and changed.servers == ["demo"]
                old_pids = [pid for pid in restarted.pids.values() if pid is not None]
                assert all(process_running(pid) for pid in old_pids)  # still leased
            final_pids = [pid for pid in changed.pids.values() if pid is not None]
        assert await wait_until_gone(old_pids) == []
    # Closing the pool stops whatever is still running.
    assert await wait_until_gone(final_pids) == []


async def test_pool_does_not_remember_a_failed_start(sandbox: Path) -> None:
    write_config(sandbox, {"ghost": {"command": "/nonexistent/mcp-server"}})
    async with pool_for_test() as pool:
        with pytest.raises(McpStartError):
            async with pool.lease(str(sandbox)):
                pass
        write_config(sandbox, {"demo": demo_entry()})
        async with pool.lease(str(sandbox)) as toolset:
            assert toolset.servers == ["demo"] and toolset.alive


# -- results -----------------------------------------------------------------------------------
def test_results_map_text_structured_errors_and_other_content() -> None:
    label = "MCP tool 'x' of server 's'"
    text = CallToolResult(content=[TextContent(text="one"), TextContent(text="two")])
    assert output_of(text, label) == {"text": "one\ntwo"}
    structured = CallToolResult(content=[TextContent(text='{"n": 1}')], structured_content={"n": 1})
    assert output_of(structured, label) == {"n": 1}
    scalar = CallToolResult(content=[], structured_content=[1, 2])
    assert output_of(scalar, label) == {"result": [1, 2]}
    assert output_of(CallToolResult(content=[]), label) == {}
    mixed = CallToolResult(
        content=[
            TextContent(text="see attached"),
            ImageContent(data="aGVsbG8=", mime_type="image/png"),
            ResourceLink(uri="file:///a.txt", name="a.txt", mime_type="text/plain"),
            EmbeddedResource(resource=TextResourceContents(uri="file:///b.md", text="# B")),
            EmbeddedResource(resource=BlobResourceContents(uri="file:///c.bin", blob="AAEC")),
        ]
    )
    assert output_of(mixed, label) == {
        "text": "see attached",
        "attachments": [
            {"type": "image", "mime_type": "image/png", "bytes": 5},
            {
                "type": "resource_link",
                "uri": "file:///a.txt",
                "name": "a.txt",
                "mime_type": "text/plain",
            },
            {"type": "resource", "uri": "file:///b.md", "text": "# B"},
            {"type": "resource", "uri": "file:///c.bin", "bytes": 3},
        ],
    }
    failed = CallToolResult(content=[TextContent(text="disk full")], is_error=True)
    with pytest.raises(ToolError, match="MCP tool 'x' of server 's' failed: disk full"):
        output_of(failed, label)
    silent = CallToolResult(content=[], is_error=True)
    with pytest.raises(ToolError, match="gave no error message"):
        output_of(silent, label)
