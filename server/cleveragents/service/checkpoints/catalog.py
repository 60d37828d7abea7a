"""The catalog of checkpoints: a SQLite file beside the shadow repositories."""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import cast

from .records import Checkpoint, CheckpointKind, CheckpointsUnavailable, Coverage, SkippedFile

log = logging.getLogger(__name__)

CATALOG_FILE_NAME = "catalog.sqlite3"
CATALOG_VERSION = 2


CATALOG_SCHEMA = """
CREATE TABLE IF NOT EXISTS checkpoints (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    run_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    iteration INTEGER,
    sandbox TEXT NOT NULL,
    repo TEXT NOT NULL,
    commit_id TEXT NOT NULL,
    tree_id TEXT NOT NULL,
    created_at REAL NOT NULL,
    skipped TEXT NOT NULL,
    restored_to TEXT,
    warnings TEXT NOT NULL,
    coverage TEXT NOT NULL DEFAULT '{}'
)
"""


def checkpoint_from_row(row: sqlite3.Row) -> Checkpoint:
    return Checkpoint(
        id=row["id"],
        run_id=row["run_id"],
        kind=cast(CheckpointKind, row["kind"]),
        iteration=row["iteration"],
        sandbox_root=row["sandbox"],
        commit=row["commit_id"],
        tree=row["tree_id"],
        created_at=row["created_at"],
        skipped=tuple(
            SkippedFile(item["path"], item["size"], item["reason"])
            for item in json.loads(row["skipped"])
        ),
        restored_to=row["restored_to"],
        warnings=tuple(json.loads(row["warnings"])),
        coverage=Coverage.from_json(row["coverage"]),
    )


class Catalog:
    """The checkpoints' catalog: one row per checkpoint (what git does not keep: the run, the
    kind, the real time, what was left out). A damaged file is set aside and started afresh."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._open()

    def _open(self) -> None:
        try:
            with self.connect() as conn:
                conn.execute("PRAGMA journal_mode=WAL")
                version = int(conn.execute("PRAGMA user_version").fetchone()[0])
                if version > CATALOG_VERSION:
                    raise CheckpointsUnavailable(
                        f"checkpoint catalog {self.path} has version {version}; this "
                        f"cleveragents knows up to {CATALOG_VERSION}. Upgrade cleveragents."
                    )
                conn.execute(CATALOG_SCHEMA)
                columns = {row[1] for row in conn.execute("PRAGMA table_info(checkpoints)")}
                if "coverage" not in columns:  # a version 1 catalog
                    conn.execute(
                        "ALTER TABLE checkpoints ADD COLUMN coverage TEXT NOT NULL DEFAULT '{}'"
                    )
                conn.execute("CREATE INDEX IF NOT EXISTS checkpoints_run ON checkpoints(run_id)")
                conn.execute("CREATE INDEX IF NOT EXISTS checkpoints_repo ON checkpoints(repo)")
                conn.execute(f"PRAGMA user_version = {CATALOG_VERSION}")
        except sqlite3.OperationalError:
            raise  # busy or unwritable, not damaged: keep the file
        except sqlite3.DatabaseError as exc:
            damaged = self.path.with_name(f"{CATALOG_FILE_NAME}.damaged-{int(time.time())}")
            os.replace(self.path, damaged)
            log.warning(
                "checkpoint catalog %s was damaged (%s): moved to %s and started afresh",
                self.path,
                exc,
                damaged,
            )
            self._open()

    @contextmanager
    def connect(self) -> Iterator[sqlite3.Connection]:
        with closing(sqlite3.connect(self.path, timeout=30.0)) as conn:
            conn.row_factory = sqlite3.Row
            with conn:  # one transaction, committed on success
                yield conn
