"""The history database's schema: the migrations that build it, one per version."""

from __future__ import annotations

# Migration i takes the database from user_version i to i + 1. Append, never edit: a
# database already at version n has run the first n entries. Statements run one by one in a
# single transaction (`executescript` would commit half way).
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """
        CREATE TABLE runs (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            run_id TEXT NOT NULL UNIQUE,
            prompt TEXT NOT NULL,
            plan_id TEXT NOT NULL,
            sandbox_root TEXT,
            automation_profile TEXT NOT NULL,
            max_iterations INTEGER NOT NULL,
            status TEXT NOT NULL,
            started_at REAL NOT NULL,
            finished_at REAL,
            iterations INTEGER NOT NULL DEFAULT 0,
            content TEXT,
            stop_reason TEXT,
            error TEXT,
            error_type TEXT,
            input_tokens INTEGER NOT NULL DEFAULT 0,
            output_tokens INTEGER NOT NULL DEFAULT 0,
            continued_from TEXT REFERENCES runs (run_id) ON DELETE SET NULL,
            owner_host TEXT NOT NULL,
            owner_pid INTEGER NOT NULL,
            owner_token TEXT NOT NULL
        )
        """,
        "CREATE INDEX runs_by_status ON runs (status)",
        """
        CREATE TABLE assistant_messages (
            run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
            iteration INTEGER NOT NULL,
            message TEXT NOT NULL,
            received_at REAL NOT NULL,
            PRIMARY KEY (run_id, iteration)
        )
        """,
        """
        CREATE TABLE tool_calls (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
            iteration INTEGER NOT NULL,
            call_id TEXT NOT NULL,
            tool_name TEXT NOT NULL,
            inputs TEXT NOT NULL,
            output TEXT NOT NULL,
            duration_ms REAL NOT NULL,
            success INTEGER NOT NULL,
            error TEXT,
            error_kind TEXT,
            recorded_at REAL NOT NULL
        )
        """,
        "CREATE INDEX tool_calls_by_run ON tool_calls (run_id, seq)",
    ),
    (
        # Undo: restores are listed with the runs; each run keeps its checkpoints (the
        # snapshots themselves are in the checkpoint store) and the files it changed.
        "ALTER TABLE runs ADD COLUMN kind TEXT NOT NULL DEFAULT 'run'",
        "ALTER TABLE runs ADD COLUMN changed_files TEXT",
        "ALTER TABLE runs ADD COLUMN checkpoint_warning TEXT",
        "ALTER TABLE runs ADD COLUMN restored_run_id TEXT",
        "ALTER TABLE runs ADD COLUMN restored_iteration INTEGER",
        """
        CREATE TABLE checkpoints (
            checkpoint_id TEXT PRIMARY KEY,
            run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
            kind TEXT NOT NULL,
            iteration INTEGER,
            created_at REAL NOT NULL,
            note TEXT
        )
        """,
        "CREATE INDEX checkpoints_by_run ON checkpoints (run_id, created_at)",
    ),
    (
        # Usage and cost: the cache tokens and estimated USD of each run (summed as its model
        # calls come, so a failed run keeps what it spent) and of each model call; and the
        # files attached to a run's prompt (its first message shows them).
        "ALTER TABLE runs ADD COLUMN cache_read_tokens INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE runs ADD COLUMN cache_write_tokens INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE runs ADD COLUMN cost_usd REAL",
        "ALTER TABLE runs ADD COLUMN resources TEXT",
        "ALTER TABLE assistant_messages ADD COLUMN usage TEXT",
        "ALTER TABLE assistant_messages ADD COLUMN cost_usd REAL",
    ),
    (
        # When the owning process started (`process_start_key`), so a run whose pid now
        # belongs to another process is seen as dead. NULL: unknown (older rows, or a system
        # that does not say): then only whether the pid exists counts.
        "ALTER TABLE runs ADD COLUMN owner_started TEXT",
    ),
    (
        # Batches (`cleveragents batch`): each run names its batch, task and configuration;
        # each task's outcome (its check, its attempts) is kept so a re-run can skip it.
        "ALTER TABLE runs ADD COLUMN batch_id TEXT",
        "ALTER TABLE runs ADD COLUMN task_id TEXT",
        "ALTER TABLE runs ADD COLUMN batch_config TEXT",
        "CREATE INDEX runs_by_batch ON runs (batch_id, seq)",
        """
        CREATE TABLE batch_tasks (
            batch_id TEXT NOT NULL,
            task_id TEXT NOT NULL,
            config TEXT NOT NULL,
            fingerprint TEXT NOT NULL,
            run_id TEXT,
            passed INTEGER NOT NULL,
            outcome TEXT NOT NULL,
            finished_at REAL NOT NULL,
            PRIMARY KEY (batch_id, task_id, config)
        )
        """,
    ),
    (
        # Images attached to a run's prompt, by reference (JSON list of
        # `to_data(image)`); the bytes are in the image store (image_store.py).
        "ALTER TABLE runs ADD COLUMN images TEXT",
    ),
)
SCHEMA_VERSION = len(MIGRATIONS)
