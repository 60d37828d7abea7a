"""Durable run history: every run, model response and tool call, stored as it happens.

`RunHistory` (store.py) writes and reads the SQLite file; its parts, each one job:

- `schema`: the migrations that build the database, one per version;
- `records`: what the history hands back (runs, checkpoints, restores, conversations);
- `rows`: values as the columns hold them (JSON text, storable strings);
- `owners`: which process owns a running run, and whether it is gone ("interrupted");
- `queries`: reads over one connection (the run list, a run, its conversation and chain);
- `store`: the connections, the transactions, the writes (a run observer) and the reads.

Everything callers use is re-exported here: `from cleveragents.service.history import
RunHistory`.
"""

from ...paths import default_history_path
from ..run_status import RunKind, RunStatus
from .owners import INTERRUPTED_ERROR, owner_gone, process_start_key
from .records import (
    TITLE_CHARS,
    BatchLabel,
    BatchTaskRecord,
    ConversationSummary,
    IterationUsage,
    RestoreRecord,
    RunSummary,
    StoredCheckpoint,
    StoredCheckpointKind,
    StoredRun,
)
from .schema import SCHEMA_VERSION
from .store import BUSY_TIMEOUT_S, UNSTORED_EVENTS, RunHistory

__all__ = [
    "BUSY_TIMEOUT_S",
    "INTERRUPTED_ERROR",
    "SCHEMA_VERSION",
    "TITLE_CHARS",
    "UNSTORED_EVENTS",
    "BatchLabel",
    "BatchTaskRecord",
    "ConversationSummary",
    "IterationUsage",
    "RestoreRecord",
    "RunHistory",
    "RunKind",
    "RunStatus",
    "RunSummary",
    "StoredCheckpoint",
    "StoredCheckpointKind",
    "StoredRun",
    "default_history_path",
    "owner_gone",
    "process_start_key",
]
