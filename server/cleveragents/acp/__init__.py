"""The Agent Client Protocol (ACP) mode: `cleveragents serve --acp`.

The same runtime, tools, profiles, MCP servers and run history as the CLI and the JSON-RPC
daemon, behind the protocol editors such as Zed, JetBrains IDEs, Neovim and Emacs speak:

- `session/new` opens a session in the client's `cwd` (the sandbox root);
- `session/prompt` runs the tool loop, continuing the session's conversation;
- runs stream as `session/update`: `agent_message_chunk` for text, `tool_call` and
  `tool_call_update` (pending, in_progress, completed, failed) for tool calls, with our
  `durationMs`, `iteration` and `errorKind` under `_meta.cleveragents`;
- approvals are `session/request_permission` (allow once, always allow, reject);
- `session/cancel` (or `$/cancel_request` naming the prompt) ends the prompt with stop reason
  `cancelled`, the iteration limit with `max_turn_requests`;
- sessions last: `session/list` and `session/load` (replay, then continue) read the run
  history, where a session is a conversation (`stored_sessions.py`);
- an editor that offers `fs/*` has the file tools read and write through it, one that offers
  terminals shows `run_command`'s output in one (`files.py`, `terminals.py`);
- SIGINT, SIGTERM and a closed stdin cancel running prompts, answer them and record them as
  cancelled before the process exits (`server.py`);
- a full context window ends the prompt with `max_tokens`; the response's
  `_meta.cleveragents.usage` has the prompt's tokens and estimated cost.

`server.main` is the entry point; the ACP SDK (`agent-client-protocol`) does the JSON-RPC.
"""

from .server import main

__all__ = ["main"]
