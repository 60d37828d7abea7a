"""McpToolset: the MCP servers of one sandbox, started together and offered as ToolSpecs.

    async with McpToolset(sandbox_root) as toolset:
        add_mcp_tools(registry, toolset)
        ...  # run the loop; the servers stop when the block ends, also on cancellation

The SDK (a second of imports) is loaded only when `.mcp.json` lists a server to start.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ..tool.registry import DEFAULT_TOOL_TIMEOUT_S, ToolRegistry, ToolSpec, make_spec
from .config import DEFAULT_STARTUP_TIMEOUT_S, McpConfig, read_mcp_config
from .errors import McpConfigError, McpStartError

if TYPE_CHECKING:
    from mcp.types import Tool

    from .connection import McpServerConnection

_UNSAFE_NAME_CHARS = re.compile(r"[^a-zA-Z0-9_-]")
_MAX_NAME = 64


def registry_name(server: str, tool: str, taken: set[str]) -> str:
    """`server__tool` as a name every provider accepts (^[a-zA-Z0-9_-]{1,64}$), unique in `taken`.

    Names that had to be cut, or that collide after unsafe characters became '_', end in a
    short hash of the full name, so the same config always yields the same names.
    """
    full = f"{server}__{tool}"
    name = _UNSAFE_NAME_CHARS.sub("_", full)
    if len(name) > _MAX_NAME or name in taken:
        digest = hashlib.sha256(full.encode("utf-8")).hexdigest()[:8]
        name = f"{name[: _MAX_NAME - 9]}_{digest}"
    base, counter = name, 2
    while name in taken:
        suffix = f"_{counter}"
        name, counter = base[: _MAX_NAME - len(suffix)] + suffix, counter + 1
    taken.add(name)
    return name


class McpToolset:
    """Every stdio server of `<sandbox_root>/.mcp.json`, running while the toolset is open.

    `open` starts them all at once and fails with McpStartError (after stopping the others)
    when any of them does not start; `close` stops them all and what they left running.
    """

    def __init__(
        self,
        sandbox_root: str,
        *,
        startup_timeout_s: float = DEFAULT_STARTUP_TIMEOUT_S,
        tool_timeout_s: float = DEFAULT_TOOL_TIMEOUT_S,
        config: McpConfig | None = None,
    ) -> None:
        if startup_timeout_s <= 0 or tool_timeout_s <= 0:
            raise ValueError("MCP timeouts must be positive")
        self.sandbox_root = os.path.realpath(sandbox_root)
        self.startup_timeout_s = startup_timeout_s
        self.tool_timeout_s = tool_timeout_s
        self.config = config
        self.specs: list[ToolSpec] = []
        self._connections: list[McpServerConnection] = []
        self._opened = False
        self._closed = False

    async def __aenter__(self) -> McpToolset:
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    @property
    def servers(self) -> list[str]:
        return [connection.name for connection in self._connections]

    @property
    def skipped(self) -> Mapping[str, str]:
        """Servers listed but not started (other transports, disabled), with the reason."""
        return self.config.skipped if self.config is not None else {}

    @property
    def untrusted(self) -> tuple[str, ...]:
        """Servers withheld because the workspace is not trusted."""
        return self.config.untrusted if self.config is not None else ()

    @property
    def pids(self) -> dict[str, int | None]:
        return {connection.name: connection.pid for connection in self._connections}

    @property
    def alive(self) -> bool:
        """Open, and every server still running (true for a sandbox without servers)."""
        return (
            self._opened
            and not self._closed
            and all(connection.alive for connection in self._connections)
        )

    async def open(self) -> None:
        if self._opened:
            raise RuntimeError("this MCP toolset was already opened")
        self._opened = True
        if self.config is None:
            self.config = read_mcp_config(self.sandbox_root)
        if not self.config.servers:
            return
        from .connection import McpServerConnection

        self._connections = [
            McpServerConnection(server, self.sandbox_root, startup_timeout_s=self.startup_timeout_s)
            for server in self.config.servers
        ]
        try:
            outcomes = await asyncio.gather(
                *(connection.start() for connection in self._connections),
                return_exceptions=True,
            )
            failures = [str(o) for o in outcomes if isinstance(o, BaseException)]
            if failures:
                raise McpStartError("\n".join(failures))
            taken: set[str] = set()
            for connection, tools in zip(self._connections, outcomes, strict=True):
                assert isinstance(tools, list)
                self.specs.extend(self._spec(connection, tool, taken) for tool in tools)
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        """Stop every server; waits until they are gone, even when the caller is cancelled."""
        if self._closed:
            return
        self._closed = True
        if self._connections:
            # gather waits for every stop before it lets a cancellation through.
            await asyncio.gather(*(connection.stop() for connection in self._connections))

    def _spec(self, connection: McpServerConnection, tool: Tool, taken: set[str]) -> ToolSpec:
        hints = tool.annotations
        # Only a declared read-only tool is taken at its word; anything else may do anything,
        # so `auto-edit` asks before it runs.
        read_only = hints is not None and hints.read_only_hint is True
        description = tool.description or tool.title or (hints.title if hints else None)
        try:
            spec = make_spec(
                _caller(connection, tool.name),
                name=registry_name(connection.name, tool.name, taken),
                description=description or f"{tool.name} (from MCP server {connection.name!r})",
                input_schema=tool.input_schema,
                mutating=not read_only,
                executes_code=not read_only,
                timeout_s=self.tool_timeout_s,
                source=f"mcp:{connection.name}",
            )
        except ValueError as exc:
            raise McpStartError(
                f"MCP server {connection.name!r}: its tool {tool.name!r} cannot be offered: {exc}"
            ) from None
        # The model's arguments go to the server as they are: no context keys injected.
        return replace(spec, context_params=frozenset())


def _caller(
    connection: McpServerConnection, tool_name: str
) -> Callable[..., Awaitable[dict[str, Any]]]:
    async def call_mcp_tool(**arguments: Any) -> dict[str, Any]:
        return await connection.call(tool_name, arguments)

    return call_mcp_tool


def add_mcp_tools(registry: ToolRegistry, toolset: McpToolset) -> list[ToolSpec]:
    """Register the toolset's tools; McpConfigError (nothing added) when a name is taken."""
    for spec in toolset.specs:
        existing = registry.get(spec.name)
        if existing is not None:
            where = toolset.config.path if toolset.config is not None else ".mcp.json"
            raise McpConfigError(
                f"MCP tool {spec.name!r} from {spec.source} clashes with a tool already "
                f"registered (from {existing.source}); rename the server in {where}"
            )
    for spec in toolset.specs:
        registry.add_spec(spec)
    return list(toolset.specs)


def registry_with_mcp_tools(base: ToolRegistry, toolset: McpToolset) -> ToolRegistry:
    """A new registry: `base`'s tools, then the toolset's (for one run of a shared daemon)."""
    registry = ToolRegistry()
    for spec in base.specs():
        registry.add_spec(spec)
    add_mcp_tools(registry, toolset)
    return registry
