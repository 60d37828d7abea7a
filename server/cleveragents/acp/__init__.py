"""The Agent Client Protocol (ACP) mode: `cleveragents serve --acp`.

The same runtime, tools, profiles, MCP servers and run history as the CLI and the JSON-RPC
daemon, behind the protocol editors such as Zed, JetBrains IDEs, Neovim and Emacs speak:

- `session/new` opens a session in the client's `cwd` (the sandbox root);
- `session/prompt` runs the tool loop, continuing the session's conversation;
- runs stream as `session/update`: `agent_message_chunk` for text, `tool_call` and
  `tool_call_update` (pending, in_progress, completed, failed) for tool calls, with our
  `durationMs`, `iteration` and `errorKind` under `_meta.cleveragents`;
- approvals are `session/request_permission` (allow once, always allow, reject);
- `session/cancel` ends the prompt with stop reason `cancelled`, the iteration limit with
  `max_turn_requests`, a full context window with `max_tokens`; the response's
  `_meta.cleveragents.usage` has the prompt's tokens and estimated cost.

`server.main` is the entry point; the ACP SDK (`agent-client-protocol`) does the JSON-RPC.
"""

from .server import main

__all__ = ["main"]
