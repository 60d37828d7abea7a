"""Importing the daemon fast: the cold start to the `initialize` reply is measured (bench/)."""

from __future__ import annotations

import gc
from collections.abc import Callable

# While importing: young collections every 5,000 allocations instead of 700, older ones rarely.
# Switching the collector off instead saved a little CPU but left ~9 MiB of import-time garbage
# (cycles pygls, lsprotocol and attrs create) in the heap for good: idle RSS is measured too.
_IMPORT_THRESHOLDS = (5000, 100, 100)


def import_server_main() -> Callable[[list[str]], int]:
    """The daemon's `main`, imported with the garbage collector running less often.

    Importing pygls and lsprotocol creates objects that live as long as the daemon; collecting
    them again and again during start-up costs tens of milliseconds for nothing. Freezing them
    afterwards also keeps later full collections from walking them again.
    """
    thresholds = gc.get_threshold()
    gc.set_threshold(*_IMPORT_THRESHOLDS)
    try:
        from .server import main
    finally:
        gc.set_threshold(*thresholds)
        gc.freeze()
    return main
