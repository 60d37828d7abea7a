"""The user's folders for cleveragents, named once for every layer."""

from __future__ import annotations

import os
import sys
from pathlib import Path

APP_FOLDER = "cleveragents"


def _user_folder(xdg_variable: str, windows_variable: str, linux_default: str) -> Path:
    """`$XDG_...` when set (absolute, as the XDG spec requires), else the platform's folder:
    the Windows variable's, `~/Library/Application Support` on macOS, `~/<linux_default>`."""
    xdg = os.environ.get(xdg_variable, "")
    if xdg and os.path.isabs(xdg):
        base = Path(xdg)
    elif sys.platform == "win32" and os.environ.get(windows_variable):
        base = Path(os.environ[windows_variable])
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path.home() / linux_default
    return base / APP_FOLDER


def user_data_dir() -> Path:
    """Where the run history and checkpoints live: `$XDG_DATA_HOME/cleveragents`, else
    `~/.local/share/cleveragents` (Linux), `~/Library/Application Support/cleveragents`
    (macOS), `%LOCALAPPDATA%\\cleveragents` (Windows)."""
    return _user_folder("XDG_DATA_HOME", "LOCALAPPDATA", ".local/share")


def user_config_dir() -> Path:
    """The user's own AGENTS.md and commands: `$XDG_CONFIG_HOME/cleveragents`, else
    `~/.config/cleveragents` (Linux), `~/Library/Application Support/cleveragents` (macOS),
    `%APPDATA%\\cleveragents` (Windows)."""
    return _user_folder("XDG_CONFIG_HOME", "APPDATA", ".config")
