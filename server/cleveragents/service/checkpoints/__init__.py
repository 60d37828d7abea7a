"""Workspace checkpoints: snapshots of a sandbox folder in a shadow git repository.

`CheckpointStore` (store.py) takes, lists, diffs, restores and prunes them; its parts, each
one job:

- `records`: what the store hands back and raises (checkpoints, restores, what was left out);
- `git`: a sandbox's shadow repository and the clean git runner that works on it;
- `catalog`: the SQLite catalog of checkpoints beside the repositories;
- `files`: rules about a sandbox's files (heavy folders, modes, obstacles, sizes, the lock);
- `state`: what a snapshot holds beyond git's view, and how a restore puts it back;
- `repository`: the shadow repositories (created, repaired, locked), the catalog's reads,
  and what no snapshot may hold;
- `scanning`: what is in a folder, by git's view and beyond it;
- `snapshots`: indexes brought in line with the folder, trees and commits written, pins;
- `comparing`: what changed between two states of a folder;
- `restoring`: a folder put back as a checkpoint holds it;
- `store`: `CheckpointStore`, the public face (each layer above builds on the one before),
  with pruning.

Everything callers use is re-exported here: `from cleveragents.service.checkpoints import
CheckpointStore`.
"""

from ..changes import ChangedFile, ChangeKind
from .files import HEAVY_FOLDERS
from .records import (
    Checkpoint,
    CheckpointError,
    CheckpointKind,
    CheckpointsUnavailable,
    Coverage,
    DiskUsage,
    PruneResult,
    RestoreFailed,
    RestoreResult,
    SkippedFile,
    SkipReason,
)
from .store import (
    DEFAULT_MAX_EMPTY_FOLDERS,
    DEFAULT_MAX_FILE_BYTES,
    DEFAULT_MAX_FILES,
    DEFAULT_MAX_IGNORED_BYTES,
    DEFAULT_MAX_IGNORED_FILE_BYTES,
    DEFAULT_MAX_IGNORED_FILES,
    CheckpointStore,
    default_data_dir,
)

__all__ = [
    "DEFAULT_MAX_EMPTY_FOLDERS",
    "DEFAULT_MAX_FILES",
    "DEFAULT_MAX_FILE_BYTES",
    "DEFAULT_MAX_IGNORED_BYTES",
    "DEFAULT_MAX_IGNORED_FILES",
    "DEFAULT_MAX_IGNORED_FILE_BYTES",
    "HEAVY_FOLDERS",
    "ChangeKind",
    "ChangedFile",
    "Checkpoint",
    "CheckpointError",
    "CheckpointKind",
    "CheckpointStore",
    "CheckpointsUnavailable",
    "Coverage",
    "DiskUsage",
    "PruneResult",
    "RestoreFailed",
    "RestoreResult",
    "SkipReason",
    "SkippedFile",
    "default_data_dir",
]
