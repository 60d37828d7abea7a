"""Where cleveragents keeps its data: the bottom of the layers, importing nothing of ours.

One data folder holds the run history, the checkpoints (`checkpoints/`), the workspace-trust
answers and the remote daemons' files. Lower layers (the command wall hides the folder from
commands) and the service (which writes there) both ask here.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

HISTORY_FILE_NAME = "history.sqlite3"
TRUST_FILE_NAME = "trusted-workspaces.json"
CHECKPOINTS_FOLDER_NAME = "checkpoints"


def data_folder() -> Path:
    """The user's cleveragents data folder.

    `$XDG_DATA_HOME` when set (absolute, as the XDG spec requires), else the platform's
    data folder: `~/.local/share` on Linux, `~/Library/Application Support` on macOS,
    `%LOCALAPPDATA%` on Windows.
    """
    xdg = os.environ.get("XDG_DATA_HOME", "")
    if xdg and os.path.isabs(xdg):
        base = Path(xdg)
    elif sys.platform == "win32" and os.environ.get("LOCALAPPDATA"):
        base = Path(os.environ["LOCALAPPDATA"])
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path.home() / ".local" / "share"
    return base / "cleveragents"


def default_history_path() -> Path:
    """The history database in the user's data folder."""
    return data_folder() / HISTORY_FILE_NAME


def default_trust_path() -> Path:
    """The remembered workspace-trust answers."""
    return data_folder() / TRUST_FILE_NAME


def default_checkpoint_folder() -> Path:
    """The shadow repositories of every sandbox's checkpoints."""
    return data_folder() / CHECKPOINTS_FOLDER_NAME
