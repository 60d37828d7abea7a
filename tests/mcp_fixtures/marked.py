"""A `.mcp.json` that starts the demo server with a start marker, for the workspace-trust tests.

The demo server appends its pid to the marker file as it starts, so "started" is read from
that file, never from our own state.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

DEMO_SERVER = str(Path(__file__).resolve().parent / "demo_server.py")
SECRET_VALUE = "s3cret-value"


def write_demo_config(sandbox: Path, marker: Path, *extra: str) -> bytes:
    """`.mcp.json` with one server, `demo` (setting DEMO_TOKEN); the file's bytes.

    `extra` arguments make another file (the same server, other bytes)."""
    entry = {
        "command": sys.executable,
        "args": [DEMO_SERVER, "--marker", str(marker), *extra],
        "env": {"DEMO_TOKEN": SECRET_VALUE},
    }
    data = json.dumps({"mcpServers": {"demo": entry}}).encode()
    (sandbox / ".mcp.json").write_bytes(data)
    return data


# DEMO_TOKEN as the workspace-trust question shows it: masked, its length only.
DEMO_ENV_SHOWN = [
    {
        "name": "DEMO_TOKEN",
        "value": None,
        "length": len(SECRET_VALUE),
        "masked": True,
        "changesWhatRuns": False,
        "expanded": None,
    }
]


def starts(marker: Path) -> int:
    """How many times the server started."""
    return len(marker.read_text().splitlines()) if marker.exists() else 0
