"""The `cleveragents` command: hands argv to the front it asks for.

`serve --acp` is ACP mode, `serve` the JSON-RPC daemon, nothing, `chat` or options alone the
terminal session, anything else the terminal CLI. This is the one module above the fronts:
each is imported only once chosen, so ACP mode never loads pygls and the CLI loads neither
server.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["serve"]:
        return serve(argv[1:])
    if not argv or argv[0] == "chat" or _session_options(argv[0]):
        from .chat import main as chat_main

        return chat_main(argv[1:] if argv[:1] == ["chat"] else argv)
    from .cli import main as cli_main

    return cli_main(argv)


def _session_options(first: str) -> bool:
    """`cleveragents --model X`: options with no command open the terminal session too (the
    CLI's own options, --help and --version, stay the CLI's)."""
    return first.startswith("-") and first not in ("-h", "--help", "--version")


def serve(args: list[str]) -> int:
    """`cleveragents serve ...`: the daemon, or ACP mode with `--acp`."""
    if "--acp" in args:
        # ACP mode needs neither pygls nor lsprotocol: skip their import (a second of start-up).
        from .acp.server import main as acp_main

        return int(acp_main([a for a in args if a != "--acp"]))
    # The daemon parses its own options (argparse.REMAINDER would not pass `--stdio` on).
    from .daemon.startup import import_server_main

    return int(import_server_main()(args))
