"""A real MCP server for the tests, built with the official SDK and served over stdio.

`python demo_server.py main` serves the everyday tools; `python demo_server.py crashy` serves
one tool that kills the server mid-call, so a crash cannot disturb the other server's tools.
`--marker PATH` (anywhere in the arguments) appends the server's pid to PATH as it starts, so
a test can tell that it really was started.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

READ_ONLY = ToolAnnotations(read_only_hint=True)


def main_server() -> MCPServer:
    server = MCPServer("demo")

    @server.tool(description="Add two integers.")
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool(
        description="Repeat the text back.", annotations=READ_ONLY, structured_output=False
    )
    def echo(text: str) -> str:
        return f"echo: {text}"

    @server.tool(description="Always fails with a message.", annotations=READ_ONLY)
    def refuse(reason: str) -> str:
        raise ToolError(f"refused on purpose: {reason}")

    @server.tool(description="Where the server runs and what it was given.", annotations=READ_ONLY)
    def whereami(variable: str = "GREETING") -> dict[str, Any]:
        return {
            "cwd": os.getcwd(),
            "pid": os.getpid(),
            "variable": variable,
            "value": os.environ.get(variable),
            "argv": sys.argv[1:],
        }

    @server.tool(description="Sleep for a number of seconds.")
    async def nap(seconds: float = 30.0) -> str:
        await anyio.sleep(seconds)
        return f"slept {seconds} s"

    @server.tool(
        description="Start a long-sleeping helper process; return its pid and the server's."
    )
    def spawn_helper() -> dict[str, int]:
        helper = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(300)"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        return {"server_pid": os.getpid(), "helper_pid": helper.pid}

    return server


def crashy_server() -> MCPServer:
    server = MCPServer("crashy")

    @server.tool(description="Kill this server in the middle of the call.")
    def crash(code: int = 3) -> str:
        sys.stderr.write("crashy: giving up on purpose\n")
        sys.stderr.flush()
        os._exit(code)

    return server


def mark_start(argv: list[str]) -> list[str]:
    """Handle `--marker PATH`; the other arguments."""
    if "--marker" not in argv:
        return argv
    at = argv.index("--marker")
    with open(argv[at + 1], "a", encoding="utf-8") as marker:
        marker.write(f"{os.getpid()}\n")
    return argv[:at] + argv[at + 2 :]


if __name__ == "__main__":
    arguments = mark_start(sys.argv[1:])
    kind = arguments[0] if arguments else "main"
    (crashy_server() if kind == "crashy" else main_server()).run("stdio")
