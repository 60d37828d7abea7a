"""Tools the ACP tests load with `--tools acp_tools` (a real user-tools module)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from cleveragents.tool import tool


@tool
async def wait_for_file(name: str, sandbox_root: str) -> dict[str, object]:
    """Wait until the file `name` exists in the sandbox (the test decides when a call ends)."""
    path = Path(sandbox_root) / name
    while not path.exists():
        await asyncio.sleep(0.01)
    return {"found": name}


@tool
def shout(text: str) -> dict[str, object]:
    """Print to stdout, and have a child process print too (stdout must stay the protocol's)."""
    print(f"shouting {text}")
    subprocess.run([sys.executable, "-c", f"print('child says {text}')"], check=True)
    return {"shouted": text}
