"""The service core: what every front (the JSON-RPC daemon, ACP mode, the CLI) shares.

Settings resolution, runs (start, stream to a sink, approve, cancel), the run history, the
MCP servers of each sandbox, the tool threads and the child processes tools leave behind.
Nothing here knows a wire format: fronts translate their protocol to these plain types.
"""
