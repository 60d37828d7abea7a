"""Errors of the MCP toolset; they are ToolLoadErrors, so callers that load tools catch them too."""

from __future__ import annotations

from ..toolsets import ToolLoadError


class McpError(ToolLoadError):
    """MCP tools could not be offered; the message names the file or server and the cause."""


class McpConfigError(McpError):
    """`.mcp.json` is unreadable or malformed, or one of its entries is."""


class McpStartError(McpError):
    """An MCP server could not be started, or did not answer its handshake in time."""
