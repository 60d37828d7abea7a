"""MCP tools: the stdio servers of a sandbox's `.mcp.json`, offered as `server__tool` tools.

Importing this package is cheap; the MCP SDK is loaded only when a server is to be started.
"""

from .config import (
    CONFIG_FILE,
    DEFAULT_STARTUP_TIMEOUT_S,
    McpConfig,
    McpServerConfig,
    read_mcp_config,
)
from .errors import McpConfigError, McpError, McpStartError
from .pool import McpToolsetPool
from .toolset import McpToolset, add_mcp_tools, registry_name, registry_with_mcp_tools

__all__ = [
    "CONFIG_FILE",
    "DEFAULT_STARTUP_TIMEOUT_S",
    "McpConfig",
    "McpConfigError",
    "McpError",
    "McpServerConfig",
    "McpStartError",
    "McpToolset",
    "McpToolsetPool",
    "add_mcp_tools",
    "read_mcp_config",
    "registry_name",
    "registry_with_mcp_tools",
]
