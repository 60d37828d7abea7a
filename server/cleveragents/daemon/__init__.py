"""The cleveragents daemon: `cleveragents serve --stdio`, a JSON-RPC (LSP base protocol) server.

See `protocol/README.md` at the repository root for the protocol; `protocol/wire/` holds its types.
"""
