"""Where cleveragents keeps its files: the bottom of the layers, importing nothing of ours.

One data folder holds the run history, the checkpoints (`checkpoints/`), the workspace-trust
answers and the remote daemons' files; one configuration folder holds the user's own AGENTS.md
and prompt commands. Lower layers (the command wall hides the data folder from commands) and
the service (which writes there) both ask here.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

APP_FOLDER = "cleveragents"
HISTORY_FILE_NAME = "history.sqlite3"
TRUST_FILE_NAME = "trusted-workspaces.json"
CHECKPOINTS_FOLDER_NAME = "checkpoints"
PROMPT_HISTORY_FILE_NAME = "prompt-history"


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


def data_folder() -> Path:
    """The user's cleveragents data folder: `$XDG_DATA_HOME/cleveragents`, else
    `~/.local/share/cleveragents` (Linux), `~/Library/Application Support/cleveragents`
    (macOS), `%LOCALAPPDATA%\\cleveragents` (Windows)."""
    return _user_folder("XDG_DATA_HOME", "LOCALAPPDATA", ".local/share")


def user_config_dir() -> Path:
    """The user's own AGENTS.md and commands: `$XDG_CONFIG_HOME/cleveragents`, else
    `~/.config/cleveragents` (Linux), `~/Library/Application Support/cleveragents` (macOS),
    `%APPDATA%\\cleveragents` (Windows)."""
    return _user_folder("XDG_CONFIG_HOME", "APPDATA", ".config")


def default_history_path() -> Path:
    """The history database in the user's data folder."""
    return data_folder() / HISTORY_FILE_NAME


def default_trust_path() -> Path:
    """The remembered workspace-trust answers."""
    return data_folder() / TRUST_FILE_NAME


def default_checkpoint_folder() -> Path:
    """The shadow repositories of every sandbox's checkpoints."""
    return data_folder() / CHECKPOINTS_FOLDER_NAME


def default_prompt_history_path() -> Path:
    """The terminal session's input history (Up recalls earlier prompts): private like the
    run history, so kept in the data folder the command wall hides."""
    return data_folder() / PROMPT_HISTORY_FILE_NAME
