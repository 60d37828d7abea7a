"""The user's folders for cleveragents, named once for every layer."""

from __future__ import annotations

import os
import sys
from pathlib import Path

APP_FOLDER = "cleveragents"


def user_config_dir() -> Path:
    """The user's configuration folder: their own AGENTS.md (and, later, commands) live here.

    `$XDG_CONFIG_HOME/cleveragents` when that is set (absolute, as the XDG spec requires),
    else the platform's: `~/.config/cleveragents` on Linux, `~/Library/Application
    Support/cleveragents` on macOS, `%APPDATA%\\cleveragents` on Windows.
    """
    xdg = os.environ.get("XDG_CONFIG_HOME", "")
    if xdg and os.path.isabs(xdg):
        base = Path(xdg)
    elif sys.platform == "win32" and os.environ.get("APPDATA"):
        base = Path(os.environ["APPDATA"])
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path.home() / ".config"
    return base / APP_FOLDER
