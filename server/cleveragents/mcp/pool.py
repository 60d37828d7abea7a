"""The daemon's MCP servers: one toolset per sandbox root, shared by that root's runs.

Servers are slow to start (an `npx` server takes seconds), so the daemon keeps them until it
shuts down instead of starting them for every run. A run leases its root's toolset for its
duration; when `.mcp.json` has changed (or its expanded variables have) or a server has died,
the next lease starts a fresh toolset, and the old one stops once its last lease ends.

A lease can be given an `admit` step (workspace trust): it sees the config just read and
returns the one to start, so what is started is exactly what was admitted. A config with its
servers withheld gets a toolset of its own with nothing running, for that lease alone, and
retires the root's running toolset (trust taken back stops what the earlier answer started).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

from ..tool.registry import DEFAULT_TOOL_TIMEOUT_S
from .config import DEFAULT_STARTUP_TIMEOUT_S, McpConfig, read_mcp_config
from .errors import McpError
from .toolset import McpToolset

Admit = Callable[[McpConfig], Awaitable[McpConfig]]


@dataclass(slots=True)
class _Lease:
    toolset: McpToolset
    config: McpConfig
    users: int = 0
    retired: bool = False


class McpToolsetPool:
    """Toolsets by sandbox root, leased by runs, all stopped by `close`."""

    def __init__(
        self,
        *,
        startup_timeout_s: float = DEFAULT_STARTUP_TIMEOUT_S,
        tool_timeout_s: float = DEFAULT_TOOL_TIMEOUT_S,
    ) -> None:
        self.startup_timeout_s = startup_timeout_s
        self.tool_timeout_s = tool_timeout_s
        self._current: dict[str, _Lease] = {}
        self._retired: dict[int, _Lease] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._closed = False

    @asynccontextmanager
    async def lease(
        self, sandbox_root: str, admit: Admit | None = None
    ) -> AsyncIterator[McpToolset]:
        """The running toolset of `sandbox_root` for the length of the block.

        `admit` (awaited under the root's lock, so concurrent runs wait for one answer) gets
        the config as read and returns the one to start. Raises McpConfigError or
        McpStartError when the servers cannot be offered; a failed start is not remembered,
        so the next run tries again.
        """
        lease = await self._acquire(os.path.realpath(sandbox_root), admit)
        try:
            yield lease.toolset
        finally:
            await self._release(lease)

    def toolset(self, sandbox_root: str) -> McpToolset | None:
        """The current toolset of a root, if one was started (for listing its tools)."""
        lease = self._current.get(os.path.realpath(sandbox_root))
        return lease.toolset if lease is not None else None

    async def _acquire(self, root: str, admit: Admit | None) -> _Lease:
        if self._closed:
            raise McpError("the MCP servers have been shut down")
        lock = self._locks.setdefault(root, asyncio.Lock())
        async with lock:
            config = await asyncio.to_thread(read_mcp_config, root)  # a file the workspace chose
            lease = self._current.get(root)
            if lease is not None and (
                lease.config.digest != config.digest or not lease.toolset.alive
            ):
                del self._current[root]
                await self._retire(lease)
                lease = None
            if admit is not None:
                config = await admit(config)
                if config.untrusted and not config.servers:
                    if lease is not None:
                        # Started under an earlier answer that has since been taken back: a
                        # declined file keeps nothing running, not even what was trusted.
                        del self._current[root]
                        await self._retire(lease)
                    # Nothing to start: a toolset of this lease's own, closed when it ends.
                    toolset = McpToolset(root, config=config)
                    await toolset.open()
                    return _Lease(toolset, config, users=1, retired=True)
            if lease is not None and lease.config == config and lease.toolset.alive:
                lease.users += 1
                return lease
            if lease is not None:
                del self._current[root]
                await self._retire(lease)
            toolset = McpToolset(
                root,
                startup_timeout_s=self.startup_timeout_s,
                tool_timeout_s=self.tool_timeout_s,
                config=config,
            )
            await toolset.open()
            if self._closed:  # shut down while this one was starting
                await toolset.close()
                raise McpError("the MCP servers have been shut down")
            lease = _Lease(toolset, config, users=1)
            self._current[root] = lease
            return lease

    async def _release(self, lease: _Lease) -> None:
        lease.users -= 1
        if lease.retired and lease.users == 0:
            self._retired.pop(id(lease), None)
            await lease.toolset.close()

    async def _retire(self, lease: _Lease) -> None:
        lease.retired = True
        if lease.users == 0:
            await lease.toolset.close()
        else:
            self._retired[id(lease)] = lease

    async def close(self) -> None:
        """Stop every server of every root, leased or not."""
        self._closed = True
        leases = [*self._current.values(), *self._retired.values()]
        self._current.clear()
        self._retired.clear()
        await asyncio.gather(*(lease.toolset.close() for lease in leases))
