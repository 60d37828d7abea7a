"""Importing the daemon fast: the cold start to the `initialize` reply is measured (bench/)."""

from __future__ import annotations

import gc
from collections.abc import Callable


def import_server_main() -> Callable[[list[str]], int]:
    """The daemon's `main`, imported with the garbage collector paused.

    Importing pygls and lsprotocol creates objects that live as long as the daemon; collecting
    them during start-up costs tens of milliseconds for nothing. Freezing them afterwards also
    keeps later full collections from walking them again.
    """
    gc.disable()
    try:
        from .server import main
    finally:
        gc.freeze()
        gc.enable()
    return main
