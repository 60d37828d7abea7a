"""Tools the daemon tests load with `toolModules: ["daemon_tools"]` (a real user-tools module).

They stand in for slow, mutating and process-starting tools, so tests can watch
concurrency, approvals, cancellation and clean-up.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

from cleveragents.tool import tool


@tool
def pause(seconds: float, label: str = "") -> dict[str, object]:
    """Block a worker thread for `seconds` (a slow synchronous tool)."""
    time.sleep(seconds)
    return {"slept": seconds, "label": label}


@tool
async def wait_for_file(name: str, sandbox_root: str) -> dict[str, object]:
    """Wait until the file `name` exists in the sandbox (the test decides when a call ends)."""
    path = Path(sandbox_root) / name
    while not path.exists():
        await asyncio.sleep(0.01)
    return {"found": name}


@tool
def block_until_file(name: str, sandbox_root: str) -> dict[str, object]:
    """Hold a worker thread until the file `name` exists (a blocking synchronous tool)."""
    path = Path(sandbox_root) / name
    while not path.exists():
        time.sleep(0.01)
    return {"found": name}


@tool(mutating=True)
def write_note(name: str, text: str, sandbox_root: str) -> dict[str, object]:
    """Write a text file in the sandbox (a mutating tool: profiles gate it)."""
    path = Path(sandbox_root) / name
    path.write_text(text, encoding="utf-8")
    return {"written": name, "bytes": len(text.encode())}


@tool
def start_sleeper(sandbox_root: str) -> dict[str, object]:
    """Start a long `sleep` process and leave it running; its pid goes to sleeper.pid."""
    process = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(300)"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
    )
    Path(sandbox_root, "sleeper.pid").write_text(str(process.pid))
    return {"pid": process.pid}


@tool
def chatty() -> dict[str, object]:
    """Print to stdout (which must never reach the protocol stream) and return."""
    print("this line must not corrupt the protocol stream")
    os.write(1, b"nor this one\n")
    return {"printed": True}
