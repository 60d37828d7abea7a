"""Durable run history: every run, model response and tool call, stored as it happens.

`RunHistory` is a run observer (pass it in `observers=`): each event it stores is written in
its own committed SQLite transaction, so a crash loses nothing that had finished. Clients list
and reopen past runs, and `conversation()` rebuilds a run's conversation so a follow-up prompt
can continue it:

    history = RunHistory(default_history_path())
    history.mark_interrupted()                      # at daemon start
    ...
    messages = history.conversation(previous_id)    # KeyError for an unknown run
    history.mark_continuation(new_id, previous_id)
    await runtime.arun_tool_loop(prompt, history=messages, run_id=new_id,
                                 observers=[history])

Writes are synchronous: the observer runs on the caller's thread. Each write is one small
transaction and, with `synchronous=NORMAL` in WAL mode, a commit is an append to the WAL file
without an fsync; reads use a connection of their own, so a read never waits behind a write
(ours, or another process's). An event loop should use `history_queue.QueuedHistory`: it
stores a write at once only when nothing has to wait (`store_now`), hands one that would wait
for another process's lock to a writer thread, and reads on reader threads.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import sqlite3
import sys
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, cast

# Re-exported: the data folder is paths.py's; callers of old import it from here.
from ..paths import default_history_path as default_history_path
from ..tool.events import (
    IterationStarted,
    PlanUpdated,
    ResponseReceived,
    RunEvent,
    RunFailed,
    RunFinished,
    RunStarted,
    SnapshotProgress,
    SnapshotTaken,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from ..tool.images import ImageAttachment
from ..tool.messages import (
    AssistantMessage,
    Message,
    ToolResult,
    ToolResultsMessage,
    UserMessage,
    message_from_dict,
    message_to_dict,
)
from ..tool.records import ERROR_KINDS, ErrorKind, ToolCallRecord, ToolCallRunResult, Usage
from ..tool.resources import Resource, prompt_with_resources
from ..tool.router import result_from_record
from ..tool.runtime import close_dangling_calls
from ..workspace.private import keep_private, private_file, private_folder
from .changes import CHANGE_KINDS, ChangedFile
from .image_store import DEFAULT_MAX_BYTES as DEFAULT_IMAGE_STORE_BYTES
from .image_store import ImageStore

log = logging.getLogger(__name__)

RunStatus = Literal["running", "finished", "cancelled", "limit", "failed", "interrupted"]
RunKind = Literal["run", "restore"]
StoredCheckpointKind = Literal["iteration", "end", "restore"]

# How long a write waits for another process (a second daemon) holding the write lock.
BUSY_TIMEOUT_S = 5.0
INTERRUPTED_ERROR = "the process running this run ended before the run finished"

# Tells this process apart from an earlier one that had the same pid (containers restart
# daemons with the same pid), so `mark_interrupted` can recognise that earlier one as dead.
_PROCESS_TOKEN = uuid.uuid4().hex


def process_start_key(pid: int) -> str | None:
    """What tells a process apart from any other that has had or will have its pid: the boot
    and the moment (in clock ticks since boot) the process started, from Linux's /proc. None
    where that cannot be read (another system, a process that is gone): then a run's owner
    is judged by whether its pid exists."""
    state = _process_state(pid)
    return None if state is None else state[1]


def _process_state(pid: int) -> tuple[str, str] | None:
    """A process's state letter (R, S, Z, ...) and `process_start_key`, from /proc."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as handle:
            boot = handle.read().strip()
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            stat_line = handle.read()
    except OSError:
        return None
    # pid (comm) state ppid ...: comm may hold spaces and parentheses, so split after the last.
    fields = stat_line[stat_line.rfind(")") + 2 :].split()
    if len(fields) < 20:
        return None
    return fields[0], f"{boot}:{fields[19]}"  # fields 3 and 22 of stat: state, starttime


_OWNER_STARTED = process_start_key(os.getpid())

# Migration i takes the database from user_version i to i + 1. Append, never edit: a
# database already at version n has run the first n entries. Statements run one by one in a
# single transaction (`executescript` would commit half way).
_MIGRATIONS: tuple[tuple[str, ...], ...] = (
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
        # `ImageAttachment.reference()`); the bytes are in the image store (image_store.py).
        "ALTER TABLE runs ADD COLUMN images TEXT",
    ),
)
SCHEMA_VERSION = len(_MIGRATIONS)


@dataclass(slots=True, frozen=True)
class RunSummary:
    """One row of the run list. Times are Unix epoch seconds."""

    run_id: str
    prompt: str
    status: RunStatus
    started_at: float
    finished_at: float | None
    iterations: int
    tool_call_count: int
    sandbox_root: str | None
    plan_id: str
    automation_profile: str
    continued_from: str | None
    # "restore" for a restore of a folder (see `record_restore`); it names what it restored.
    kind: RunKind
    restored_run_id: str | None
    restored_iteration: int | None
    # Tokens and estimated USD so far (None: the model's price is unknown, or an old run).
    usage: Usage
    cost_usd: float | None
    # The batch, task and configuration a `cleveragents batch` run belongs to (else None).
    batch: BatchLabel | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "prompt": self.prompt,
            "status": self.status,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "iterations": self.iterations,
            "tool_call_count": self.tool_call_count,
            "sandbox_root": self.sandbox_root,
            "plan_id": self.plan_id,
            "automation_profile": self.automation_profile,
            "continued_from": self.continued_from,
            "kind": self.kind,
            "restored_run_id": self.restored_run_id,
            "restored_iteration": self.restored_iteration,
            "usage": self.usage.to_dict(),
            "cost_usd": self.cost_usd,
            "batch": self.batch.to_dict() if self.batch is not None else None,
        }


@dataclass(slots=True, frozen=True)
class BatchLabel:
    """Which batch, task and configuration a run was started for."""

    batch_id: str
    task_id: str
    config: str

    def to_dict(self) -> dict[str, str]:
        return {"batch_id": self.batch_id, "task_id": self.task_id, "config": self.config}


@dataclass(slots=True, frozen=True)
class BatchTaskRecord:
    """A batch task's last finished outcome: `outcome` is the batch's own JSON report row."""

    batch_id: str
    task_id: str
    config: str
    fingerprint: str
    run_id: str | None
    passed: bool
    outcome: dict[str, Any]
    finished_at: float


@dataclass(slots=True, frozen=True)
class IterationUsage:
    """One model call's tokens and estimated USD (None when the price is unknown)."""

    iteration: int
    usage: Usage
    cost_usd: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "iteration": self.iteration,
            "usage": self.usage.to_dict(),
            "cost_usd": self.cost_usd,
        }


@dataclass(slots=True, frozen=True)
class StoredCheckpoint:
    """A checkpoint a run took, as the history lists it (the snapshot is in the store).

    `kind`: "iteration" (the folder before `iteration` changed it), "end" (the state the run
    left) or "restore" (the folder just before a restore: restoring it undoes the restore).
    """

    checkpoint_id: str
    kind: StoredCheckpointKind
    iteration: int | None
    created_at: float
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "checkpoint_id": self.checkpoint_id,
            "kind": self.kind,
            "iteration": self.iteration,
            "created_at": self.created_at,
            "note": self.note,
        }


@dataclass(slots=True, frozen=True)
class RestoreRecord:
    """A restore of a folder, stored as a history entry of kind "restore"."""

    restore_id: str
    sandbox_root: str
    description: str
    restored_run_id: str
    restored_iteration: int | None
    started_at: float
    finished_at: float
    status: RunStatus
    content: str
    changed_files: Sequence[ChangedFile]
    error: str | None
    # The folder as it was just before the restore (None when the restore wrote nothing).
    checkpoint: StoredCheckpoint | None


@dataclass(slots=True, frozen=True)
class StoredRun(RunSummary):
    """A whole stored run.

    `records` are in request order (as in `ToolCallRunResult.tool_call_history`), and
    `messages` is this run's own conversation: its prompt onwards, without the runs it
    continued (`RunHistory.conversation` has those too).
    """

    max_iterations: int
    content: str | None
    stop_reason: str | None
    error: str | None
    error_type: str | None
    records: list[ToolCallRecord] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    # Undo: the checkpoints, oldest first; the files it changed (None while unknown: the run
    # is going, or ended without its end checkpoint); why it cannot be wholly undone.
    checkpoints: list[StoredCheckpoint] = field(default_factory=list)
    changed_files: list[ChangedFile] | None = None
    checkpoint_warning: str | None = None
    resources: list[Resource] = field(default_factory=list)
    iteration_usage: list[IterationUsage] = field(default_factory=list)
    # The prompt's images, with their bytes while the image store has them.
    images: list[ImageAttachment] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        data = RunSummary.to_dict(self)
        data.update(
            {
                "max_iterations": self.max_iterations,
                "content": self.content,
                "stop_reason": self.stop_reason,
                "error": self.error,
                "error_type": self.error_type,
                "records": [r.to_dict() for r in self.records],
                "messages": [message_to_dict(m) for m in self.messages],
                "checkpoints": [c.to_dict() for c in self.checkpoints],
                "changed_files": (
                    None
                    if self.changed_files is None
                    else [c.to_dict() for c in self.changed_files]
                ),
                "checkpoint_warning": self.checkpoint_warning,
                "resources": [r.to_dict() for r in self.resources],
                "iteration_usage": [u.to_dict() for u in self.iteration_usage],
                "images": [i.reference() for i in self.images],
            }
        )
        return data


@dataclass(slots=True, frozen=True)
class ConversationSummary:
    """One conversation: a first run (its root) and every run continuing it, at any depth.

    `latest_run_id` is the newest of them (by start): continuing the conversation continues
    that run. `title` is the root's prompt, cut to `TITLE_CHARS`; `updated_at` is when the
    latest run finished (or started, while it runs), Unix epoch seconds. `position` orders
    conversations by their latest activity (higher is newer) and pages through them.
    """

    root_run_id: str
    latest_run_id: str
    sandbox_root: str | None
    title: str
    run_count: int
    latest_status: RunStatus
    updated_at: float
    position: int


TITLE_CHARS = 200


# Events the history does not store (text deltas: the answer is stored whole; a call is
# stored when it finishes).
# A plan is stored as its update_plan call's record (tool/plan.py reads it back).
UNSTORED_EVENTS = (TextDelta, ToolCallStarted, PlanUpdated, SnapshotProgress, SnapshotTaken)


class RunHistory:
    """A run observer that stores runs in SQLite, and reads them back.

    Thread-safe: one write connection under a lock, and a read connection per reading
    thread. Several processes (one daemon per editor window) may use the same file; WAL lets
    readers run alongside the writer. Writes are synchronous; see the module docstring.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, image_store_bytes: int = DEFAULT_IMAGE_STORE_BYTES
    ) -> None:
        self.path = Path(path)
        # The prompts' images, next to the database: the rows hold references to them.
        self.images = ImageStore(self.path.with_name(self.path.name + ".images"), image_store_bytes)
        # Prompts, outputs and file contents: the owner's alone. The default data folder is
        # ours to lock down; a folder named with --history is only created that way.
        folder = self.path.parent
        private_folder(folder, tighten=folder == default_history_path().parent)
        private_file(self.path)
        sidecars = [self.path.with_name(self.path.name + s) for s in ("-wal", "-shm", "-journal")]
        for sidecar in sidecars:  # SQLite gives new ones the database's mode; older ones:
            if sidecar.exists():
                private_file(sidecar)
        # No tool may read or rewrite the history, wherever it lives.
        keep_private(self.path, *sidecars)
        self._lock = threading.Lock()  # the write connection
        self._state_lock = threading.Lock()  # the collections below
        # A read connection per thread that reads: reads run in parallel, never behind a write.
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._closed = False
        # Continuations announced before their run's RunStarted arrives.
        self._pending_continuations: dict[str, str] = {}
        # Batch labels announced before their run's RunStarted arrives.
        self._pending_batches: dict[str, BatchLabel] = {}
        # Runs whose RunStarted this instance stored: events of any other run are skipped, so
        # a reused run id (its RunStarted insert fails) cannot add records to the old run.
        self._active_runs: set[str] = set()
        self._conn = sqlite3.connect(
            self.path,
            timeout=BUSY_TIMEOUT_S,
            isolation_level=None,  # we issue BEGIN/COMMIT ourselves
            check_same_thread=False,  # guarded by self._lock
        )
        try:
            _add_functions(self._conn)
            self._configure()
            self._migrate()
        except BaseException:
            self._conn.close()
            raise

    # -- setup -----------------------------------------------------------------------------
    def _configure(self) -> None:
        mode = self._conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            log.warning("run history %s: WAL unavailable, journal mode is %s", self.path, mode)
        # In WAL mode, NORMAL syncs at checkpoints rather than at every commit: a committed
        # transaction is in the WAL file and survives the process crashing (the OS keeps
        # the written pages); only an OS crash or power loss can lose the last commits.
        # That is the durability a run history needs, without an fsync per tool call.
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("PRAGMA foreign_keys=ON")

    def _migrate(self) -> None:
        with self._transaction(immediate=True) as conn:
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            if version > SCHEMA_VERSION:
                raise RuntimeError(
                    f"run history {self.path} has schema version {version}; this "
                    f"cleveragents knows up to {SCHEMA_VERSION}. Upgrade cleveragents."
                )
            for target, statements in enumerate(_MIGRATIONS[version:], start=version + 1):
                for statement in statements:
                    conn.execute(statement)
                # PRAGMA takes no parameters; `target` is an int we computed.
                conn.execute(f"PRAGMA user_version = {int(target)}")

    @contextmanager
    def _transaction(self, *, immediate: bool) -> Iterator[sqlite3.Connection]:
        """One transaction: IMMEDIATE ones write (taking the write lock up front), the others
        read on the read connection. Under `store_now` a write never waits for a lock."""
        if not immediate:
            with _begun(self._reader(), "BEGIN") as conn:
                yield conn
            return
        nowait = getattr(self._local, "nowait", False)
        if not self._lock.acquire(blocking=not nowait):
            raise sqlite3.OperationalError("database is locked (by a write on another thread)")
        conn = self._conn
        try:
            if nowait:  # another process's lock: SQLITE_BUSY at once instead of after 5 s
                conn.execute("PRAGMA busy_timeout = 0")
            try:
                with _begun(conn, "BEGIN IMMEDIATE"):
                    yield conn
            finally:
                if nowait:
                    conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        finally:
            self._lock.release()

    def _reader(self) -> sqlite3.Connection:
        """This thread's read connection, opened on its first read."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            with self._state_lock:
                if self._closed:
                    raise sqlite3.ProgrammingError("the run history is closed")
                conn = sqlite3.connect(
                    self.path,
                    timeout=BUSY_TIMEOUT_S,
                    isolation_level=None,
                    check_same_thread=False,  # closed by `close`, from another thread
                )
                conn.execute("PRAGMA query_only=ON")
                _add_functions(conn)
                self._readers.append(conn)
            self._local.conn = conn
        return conn

    def close(self) -> None:
        with self._state_lock:
            self._closed = True
            readers, self._readers = self._readers, []
        for conn in readers:
            conn.close()
        with self._lock:
            self._conn.close()

    def __enter__(self) -> RunHistory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing: the observer -------------------------------------------------------------
    def __call__(self, event: RunEvent) -> None:
        """Store one run event; events not listed here (text deltas, call starts) are skipped."""
        if isinstance(event, UNSTORED_EVENTS):
            return  # before the lock: a streamed response is thousands of these
        if isinstance(event, RunStarted):
            self._run_started(event)
            return
        with self._state_lock:
            active = event.run_id in self._active_runs
        if not active:
            log.debug(
                "run history: skipping %s of unstored run %s", type(event).__name__, event.run_id
            )
        elif isinstance(event, IterationStarted):
            self._execute(
                "UPDATE runs SET iterations = ? WHERE run_id = ?", (event.iteration, event.run_id)
            )
        elif isinstance(event, ResponseReceived):
            self._response_received(event)
        elif isinstance(event, ToolCallFinished):
            self._tool_call_finished(event)
        elif isinstance(event, RunFinished):
            self._run_finished(event.run_id, event.result)
        elif isinstance(event, RunFailed):
            self._execute(
                "UPDATE runs SET status = 'failed', error = ?, error_type = ?, finished_at = ? "
                "WHERE run_id = ?",
                (event.error, event.error_type, time.time(), event.run_id),
            )
        if active and isinstance(event, RunFinished | RunFailed):
            # Only once stored: a write that found the database locked is tried again.
            with self._state_lock:
                self._active_runs.discard(event.run_id)

    def store_now(self, event: RunEvent) -> None:
        """Store `event` as `self(event)` does, but without waiting: when the database is
        locked (by another process, or by a write on another thread) it raises
        sqlite3.OperationalError at once, and nothing of the event is stored."""
        self._local.nowait = True
        try:
            self(event)
        finally:
            self._local.nowait = False

    def _execute(self, sql: str, parameters: Sequence[Any]) -> None:
        storable = [_text(p) if isinstance(p, str) else p for p in parameters]
        with self._transaction(immediate=True) as conn:
            conn.execute(sql, storable)

    def _run_started(self, event: RunStarted) -> None:
        for image in event.images:  # the bytes before the row that refers to them
            self.images.put(image)
        # Taken from the pending ones only once stored: a write that failed may be retried.
        with self._state_lock:
            continued_from = self._pending_continuations.get(event.run_id)
            batch = self._pending_batches.get(event.run_id)
        self._execute(
            "INSERT INTO runs (run_id, prompt, plan_id, sandbox_root, automation_profile, "
            "max_iterations, status, started_at, continued_from, owner_host, owner_pid, "
            "owner_token, owner_started, resources, batch_id, task_id, batch_config, images) "
            "VALUES (?, ?, ?, ?, ?, ?, 'running', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                event.run_id,
                event.prompt,
                event.plan_id,
                event.sandbox_root,
                event.automation_profile,
                event.max_iterations,
                time.time(),
                continued_from,
                socket.gethostname(),
                os.getpid(),
                _PROCESS_TOKEN,
                _OWNER_STARTED,
                _dumps([r.to_dict() for r in event.resources]) if event.resources else None,
                batch.batch_id if batch else None,
                batch.task_id if batch else None,
                batch.config if batch else None,
                _dumps([i.reference() for i in event.images]) if event.images else None,
            ),
        )
        with self._state_lock:
            self._pending_continuations.pop(event.run_id, None)
            self._pending_batches.pop(event.run_id, None)
            self._active_runs.add(event.run_id)

    def _response_received(self, event: ResponseReceived) -> None:
        usage = event.usage
        with self._transaction(immediate=True) as conn:
            conn.execute(
                "INSERT INTO assistant_messages (run_id, iteration, message, received_at, "
                "usage, cost_usd) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    event.run_id,
                    event.iteration,
                    _text(_dumps(message_to_dict(event.message))),
                    time.time(),
                    _dumps(usage.to_dict()),
                    event.cost_usd,
                ),
            )
            # The run's totals grow with each call, so a run that fails keeps what it spent.
            conn.execute(
                "UPDATE runs SET input_tokens = input_tokens + ?, "
                "output_tokens = output_tokens + ?, cache_read_tokens = cache_read_tokens + ?, "
                "cache_write_tokens = cache_write_tokens + ?, "
                "cost_usd = CASE WHEN ? IS NULL THEN cost_usd ELSE COALESCE(cost_usd, 0) + ? END "
                "WHERE run_id = ?",
                (
                    usage.input_tokens,
                    usage.output_tokens,
                    usage.cache_read_tokens,
                    usage.cache_write_tokens,
                    event.cost_usd,
                    event.cost_usd,
                    event.run_id,
                ),
            )

    def _tool_call_finished(self, event: ToolCallFinished) -> None:
        record = event.record
        self._execute(
            "INSERT INTO tool_calls (run_id, iteration, call_id, tool_name, inputs, output, "
            "duration_ms, success, error, error_kind, recorded_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                event.run_id,
                record.iteration,
                record.call_id,
                record.tool_name,
                _dumps(record.inputs),
                _dumps(record.output),
                record.duration_ms,
                record.success,
                record.error,
                record.error_kind,
                time.time(),
            ),
        )

    def _run_finished(self, run_id: str, result: ToolCallRunResult) -> None:
        status: RunStatus
        if result.terminated_by_limit:
            status = "limit"
        elif result.stop_reason == "cancelled":
            status = "cancelled"
        else:
            status = "finished"
        usage = result.usage
        self._execute(
            "UPDATE runs SET status = ?, content = ?, stop_reason = ?, iterations = ?, "
            "input_tokens = ?, output_tokens = ?, cache_read_tokens = ?, cache_write_tokens = ?, "
            "cost_usd = ?, finished_at = ? WHERE run_id = ?",
            (
                status,
                result.content,
                result.stop_reason,
                result.iterations,
                usage.input_tokens,
                usage.output_tokens,
                usage.cache_read_tokens,
                usage.cache_write_tokens,
                result.cost_usd,
                time.time(),
                run_id,
            ),
        )

    # -- continuation and restart ----------------------------------------------------------
    def mark_continuation(self, run_id: str, continued_from: str) -> None:
        """Record that run `run_id` continues run `continued_from`.

        Call it before starting the run (on the instance that observes it) or after it has
        started. KeyError when `continued_from` is not stored; ValueError for a cycle.
        """
        if run_id == continued_from:
            raise ValueError(f"run {run_id!r} cannot continue itself")
        # A read first: the usual case (the run is not stored yet) never waits for the write
        # lock, which another process may hold.
        with self._transaction(immediate=False) as conn:
            if not _run_exists(conn, continued_from):
                raise KeyError(continued_from)
            stored = _run_exists(conn, run_id)
        if not stored:
            with self._state_lock:
                self._pending_continuations[run_id] = continued_from
            return
        with self._transaction(immediate=True) as conn:
            if run_id in _chain(conn, continued_from):
                raise ValueError(f"run {run_id!r} is already an ancestor of {continued_from!r}")
            conn.execute(
                "UPDATE runs SET continued_from = ? WHERE run_id = ?", (continued_from, run_id)
            )

    def mark_batch(self, run_id: str, label: BatchLabel) -> None:
        """Record that the run about to start as `run_id` is a batch task's (call it before
        the run starts, on the instance that observes it)."""
        with self._state_lock:
            self._pending_batches[run_id] = label

    def record_batch_task(self, record: BatchTaskRecord) -> None:
        """Keep a batch task's outcome, replacing an earlier one of the same task."""
        self._execute(
            "INSERT OR REPLACE INTO batch_tasks (batch_id, task_id, config, fingerprint, run_id, "
            "passed, outcome, finished_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                record.batch_id,
                record.task_id,
                record.config,
                record.fingerprint,
                record.run_id,
                record.passed,
                _dumps(record.outcome),
                record.finished_at,
            ),
        )

    def batch_tasks(self, batch_id: str) -> list[BatchTaskRecord]:
        """A batch's finished task outcomes, in the order they finished."""
        with self._transaction(immediate=False) as conn:
            rows = conn.execute(
                "SELECT batch_id, task_id, config, fingerprint, run_id, passed, outcome, "
                "finished_at FROM batch_tasks WHERE batch_id = ? ORDER BY finished_at",
                (batch_id,),
            ).fetchall()
        return [
            BatchTaskRecord(b, t, c, f, r, bool(p), json.loads(o), at)
            for b, t, c, f, r, p, o, at in rows
        ]

    def mark_interrupted(self) -> list[str]:
        """Store "interrupted" for runs whose process has died; returns their ids, oldest first.

        Every read already shows such runs as interrupted (`owner_gone`); this writes it down,
        with the time it was noticed (a daemon does it at start). Runs of live processes
        (another editor window's daemon, a CLI run, this process) are left running.
        """
        with self._transaction(immediate=True) as conn:
            rows = conn.execute(
                "SELECT run_id, owner_host, owner_pid, owner_token, owner_started FROM runs "
                "WHERE status = 'running' ORDER BY seq"
            ).fetchall()
            dead = [run_id for run_id, *owner in rows if owner_gone(*owner)]
            now = time.time()
            conn.executemany(
                "UPDATE runs SET status = 'interrupted', error = ?, finished_at = ? "
                "WHERE run_id = ?",
                [(INTERRUPTED_ERROR, now, run_id) for run_id in dead],
            )
        return dead

    # -- undo ------------------------------------------------------------------------------
    def add_checkpoint(self, run_id: str, checkpoint: StoredCheckpoint) -> None:
        """Record a checkpoint the run took (the run must be stored)."""
        self._execute(
            "INSERT OR REPLACE INTO checkpoints (checkpoint_id, run_id, kind, iteration, "
            "created_at, note) VALUES (?, ?, ?, ?, ?, ?)",
            (
                checkpoint.checkpoint_id,
                run_id,
                checkpoint.kind,
                checkpoint.iteration,
                checkpoint.created_at,
                checkpoint.note,
            ),
        )

    def set_changes(
        self, run_id: str, changed_files: Sequence[ChangedFile] | None, warning: str | None
    ) -> None:
        """Record the files a run changed (None: not known) and why it cannot be undone."""
        self._execute(
            "UPDATE runs SET changed_files = ?, checkpoint_warning = ? WHERE run_id = ?",
            (_changed_files_to_json(changed_files), warning, run_id),
        )

    def record_restore(self, record: RestoreRecord) -> None:
        """Store a restore as an entry of kind "restore", with the checkpoint that undoes it."""
        with self._transaction(immediate=True) as conn:
            conn.execute(
                "INSERT INTO runs (run_id, prompt, plan_id, sandbox_root, automation_profile, "
                "max_iterations, status, started_at, finished_at, content, error, kind, "
                "changed_files, restored_run_id, restored_iteration, owner_host, owner_pid, "
                "owner_token, owner_started) VALUES (?, ?, '', ?, '', 0, ?, ?, ?, ?, ?, "
                "'restore', ?, ?, ?, ?, ?, ?, ?)",
                (
                    record.restore_id,
                    _text(record.description),
                    _text(record.sandbox_root),
                    record.status,
                    record.started_at,
                    record.finished_at,
                    _text(record.content),
                    _text(record.error),
                    _changed_files_to_json(record.changed_files),
                    record.restored_run_id,
                    record.restored_iteration,
                    socket.gethostname(),
                    os.getpid(),
                    _PROCESS_TOKEN,
                    _OWNER_STARTED,
                ),
            )
            if record.checkpoint is not None:
                checkpoint = record.checkpoint
                conn.execute(
                    "INSERT INTO checkpoints (checkpoint_id, run_id, kind, iteration, "
                    "created_at, note) VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        checkpoint.checkpoint_id,
                        record.restore_id,
                        checkpoint.kind,
                        checkpoint.iteration,
                        checkpoint.created_at,
                        checkpoint.note,
                    ),
                )

    def running_runs(self) -> dict[str, str]:
        """Runs still going, in any live process: run id -> sandbox root."""
        self.mark_interrupted()
        with self._transaction(immediate=False) as conn:
            rows = conn.execute(
                "SELECT run_id, sandbox_root FROM runs WHERE status = 'running' "
                "AND sandbox_root IS NOT NULL"
            ).fetchall()
        return {str(run_id): str(root) for run_id, root in rows}

    def run_ids(self) -> set[str]:
        """Every run (and restore) the history holds."""
        with self._transaction(immediate=False) as conn:
            return {str(run_id) for (run_id,) in conn.execute("SELECT run_id FROM runs")}

    def runs_with_checkpoints_before(self, cutoff: float) -> list[str]:
        """Runs whose newest checkpoint was taken before `cutoff` (Unix time)."""
        with self._transaction(immediate=False) as conn:
            rows = conn.execute(
                "SELECT run_id FROM checkpoints GROUP BY run_id HAVING MAX(created_at) < ?",
                (cutoff,),
            ).fetchall()
        return [str(run_id) for (run_id,) in rows]

    def forget_checkpoints(self, run_ids: Sequence[str], reason: str) -> int:
        """Drop the checkpoint rows of these runs (their snapshots were pruned), noting why
        they can no longer be undone."""
        with self._transaction(immediate=True) as conn:
            removed = 0
            for run_id in run_ids:
                removed += conn.execute(
                    "DELETE FROM checkpoints WHERE run_id = ?", (run_id,)
                ).rowcount
                conn.execute(
                    "UPDATE runs SET checkpoint_warning = ? WHERE run_id = ?", (reason, run_id)
                )
            return removed

    # -- reading ---------------------------------------------------------------------------
    def has_run(self, run_id: str) -> bool:
        """Whether the history holds this run (cheap: nothing of it is loaded)."""
        with self._transaction(immediate=False) as conn:
            return _run_exists(conn, run_id)

    def list_runs(
        self, limit: int = 50, offset: int = 0, *, batch_id: str | None = None
    ) -> list[RunSummary]:
        """Runs, newest first; only a batch's with `batch_id`."""
        if limit < 0 or offset < 0:
            raise ValueError(f"limit and offset must not be negative, got {limit}, {offset}")
        where, parameters = (
            ("WHERE batch_id = ? ", (batch_id,)) if batch_id is not None else ("", ())
        )
        with self._transaction(immediate=False) as conn:
            rows = conn.execute(
                f"SELECT {_SUMMARY_COLUMNS} FROM runs {where}ORDER BY seq DESC LIMIT ? OFFSET ?",
                (*parameters, limit, offset),
            ).fetchall()
        return [_summary(row) for row in rows]

    def get_run(self, run_id: str) -> StoredRun | None:
        with self._transaction(immediate=False) as conn:
            row = conn.execute(
                f"SELECT {_SUMMARY_COLUMNS}, max_iterations, content, stop_reason, "
                f"CASE WHEN status != 'running' THEN error WHEN {_OWNER_GONE} THEN ? "
                "ELSE error END, "
                "error_type, resources, changed_files, checkpoint_warning, images FROM runs "
                "WHERE run_id = ?",
                (INTERRUPTED_ERROR, run_id),
            ).fetchone()
            if row is None:
                return None
            summary = _summary(row[:_SUMMARY_WIDTH])
            (
                max_iterations,
                content,
                stop_reason,
                error,
                error_type,
                resources,
                changed_files,
                checkpoint_warning,
                images,
            ) = row[_SUMMARY_WIDTH:]
            attached = _resources(resources)
            pictures = self._images(images)
            stored = _load_own_run(conn, run_id, summary.prompt, attached, pictures)
            checkpoints = _load_checkpoints(conn, run_id)
        return StoredRun(
            **{f.name: getattr(summary, f.name) for f in fields(RunSummary)},
            max_iterations=max_iterations,
            content=content,
            stop_reason=stop_reason,
            error=error,
            error_type=error_type,
            records=stored.records,
            messages=stored.messages,
            resources=attached,
            images=pictures,
            iteration_usage=stored.iteration_usage,
            checkpoints=checkpoints,
            changed_files=_changed_files_from_json(changed_files),
            checkpoint_warning=checkpoint_warning,
        )

    def conversation(self, run_id: str) -> list[Message]:
        """The run's provider-neutral conversation, with the runs it continued first.

        Earlier runs' parts go through `close_dangling_calls`, as the runtime did when it
        continued them; this run's own calls that never got a record stay dangling, for
        `close_dangling_calls` to fix up when continuing. KeyError for an unknown run.
        """
        with self._transaction(immediate=False) as conn:
            if not _run_exists(conn, run_id):
                raise KeyError(run_id)
            chain = _chain(conn, run_id)
            parts = []
            for chained_id in reversed(chain):  # oldest first
                (prompt, resources, images) = conn.execute(
                    "SELECT prompt, resources, images FROM runs WHERE run_id = ?", (chained_id,)
                ).fetchone()
                own = _load_own_run(
                    conn, chained_id, prompt, _resources(resources), self._images(images)
                )
                parts.append(own.messages)
        earlier = [message for part in parts[:-1] for message in part]
        return [*close_dangling_calls(earlier), *parts[-1]] if earlier else parts[-1]

    def _images(self, stored: str | None) -> list[ImageAttachment]:
        """A row's image references, with the bytes the store still holds."""
        return [self.images.load(reference) for reference in json.loads(stored)] if stored else []

    def chain(self, run_id: str) -> list[str]:
        """The run ids from the conversation's first run down to `run_id`; KeyError if unknown."""
        with self._transaction(immediate=False) as conn:
            if not _run_exists(conn, run_id):
                raise KeyError(run_id)
            return list(reversed(_chain(conn, run_id)))

    def list_conversations(
        self,
        *,
        sandbox_root: str | None = None,
        before: int | None = None,
        limit: int | None = None,
    ) -> list[ConversationSummary]:
        """Conversations, latest activity first; only those begun in `sandbox_root` when given,
        only those whose `position` is below `before` when given."""
        found = [
            c
            for c in self._conversations()
            if (sandbox_root is None or c.sandbox_root == sandbox_root)
            and (before is None or c.position < before)
        ]
        found.sort(key=lambda c: c.position, reverse=True)
        return found if limit is None else found[:limit]

    def get_conversation(self, root_run_id: str) -> ConversationSummary | None:
        """The conversation whose first run is `root_run_id`; None if that is no first run."""
        return next((c for c in self._conversations() if c.root_run_id == root_run_id), None)

    def _conversations(self) -> list[ConversationSummary]:
        # One pass over the runs' small columns: each run joins its parent's conversation. A
        # history holds thousands of runs, not millions, and a recursive query would scan the
        # runs once per level without an index on continued_from.
        with self._transaction(immediate=False) as conn:
            rows = conn.execute(
                # Restores are no conversations: they undo runs of one, and are no turn of it.
                "SELECT seq, run_id, continued_from, sandbox_root, substr(prompt, 1, ?), "
                f"{_STATUS}, started_at, finished_at FROM runs WHERE kind != 'restore' "
                "ORDER BY seq",
                (TITLE_CHARS,),
            ).fetchall()
        parent = {row[1]: row[2] for row in rows}
        roots: dict[str, str] = {}

        def root_of(run_id: str) -> str:
            path: list[str] = []
            node = run_id
            while node not in roots:
                above = parent.get(node)
                # A parent that is gone (SET NULL does that) or a loop ends the climb.
                if above is None or above not in parent or above == node or above in path:
                    roots[node] = node
                    break
                path.append(node)
                node = above
            for below in path:
                roots[below] = roots[node]
            return roots[run_id]

        first: dict[str, tuple[Any, ...]] = {}
        latest: dict[str, tuple[Any, ...]] = {}
        counts: dict[str, int] = {}
        for row in rows:
            root = root_of(row[1])
            if root == row[1]:
                first[root] = row
            latest[root] = row  # rows come oldest first
            counts[root] = counts.get(root, 0) + 1
        return [
            ConversationSummary(
                root_run_id=root,
                latest_run_id=latest[root][1],
                sandbox_root=row[3],
                title=row[4],
                run_count=counts[root],
                latest_status=latest[root][5],
                updated_at=latest[root][7] or latest[root][6],
                position=latest[root][0],
            )
            for root, row in first.items()
        ]


# -- helpers -------------------------------------------------------------------------------
# A run's status as every read shows it: "running" only while its owning process lives.
_OWNER_GONE = "owner_gone(owner_host, owner_pid, owner_token, owner_started)"
_STATUS = (
    f"CASE WHEN status != 'running' THEN status WHEN {_OWNER_GONE} THEN 'interrupted' "
    "ELSE status END"
)
_SUMMARY_COLUMNS = (
    f"run_id, prompt, {_STATUS}, started_at, finished_at, iterations, "
    "(SELECT COUNT(*) FROM tool_calls WHERE tool_calls.run_id = runs.run_id), "
    "sandbox_root, plan_id, automation_profile, continued_from, kind, restored_run_id, "
    "restored_iteration, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, "
    "cost_usd, batch_id, task_id, batch_config"
)
# The RunSummary fields the columns before the token counts fill, in order.
_SUMMARY_HEAD = (
    "run_id",
    "prompt",
    "status",
    "started_at",
    "finished_at",
    "iterations",
    "tool_call_count",
    "sandbox_root",
    "plan_id",
    "automation_profile",
    "continued_from",
    "kind",
    "restored_run_id",
    "restored_iteration",
)
_SUMMARY_WIDTH = len(_SUMMARY_HEAD) + 8


def _summary(row: Sequence[Any]) -> RunSummary:
    """A `_SUMMARY_COLUMNS` row as a RunSummary (the four token counts become its Usage, the
    batch columns its BatchLabel)."""
    head = dict(zip(_SUMMARY_HEAD, row[: len(_SUMMARY_HEAD)], strict=True))
    counts = row[len(_SUMMARY_HEAD) : len(_SUMMARY_HEAD) + 4]
    cost_usd, batch_id, task_id, config = row[len(_SUMMARY_HEAD) + 4 : _SUMMARY_WIDTH]
    batch = BatchLabel(batch_id, task_id, config or "") if batch_id is not None else None
    return RunSummary(**head, usage=Usage(*counts), cost_usd=cost_usd, batch=batch)


def _resources(stored: str | None) -> list[Resource]:
    return [Resource.from_dict(item) for item in json.loads(stored)] if stored else []


def _dumps(value: Any) -> str:
    # default=str: a value JSON cannot hold is stored as its text rather than losing the row;
    # ASCII escapes keep lone surrogates (non-UTF-8 file names) storable.
    return json.dumps(value, ensure_ascii=True, default=str)


def _text(value: str | None) -> str | None:
    """A string SQLite can store: lone surrogates become U+FFFD instead of failing the write."""
    if value is None:
        return None
    return value.encode("utf-8", "replace").decode("utf-8")


def _changed_files_to_json(changed_files: Sequence[ChangedFile] | None) -> str | None:
    if changed_files is None:
        return None
    return _dumps([[c.path, c.change, *([1] if c.ignored else [])] for c in changed_files])


def _changed_files_from_json(text: str | None) -> list[ChangedFile] | None:
    if text is None:
        return None
    return [
        ChangedFile(entry[0], entry[1], bool(entry[2]) if len(entry) > 2 else False)
        for entry in json.loads(text)
        if entry[1] in CHANGE_KINDS  # a kind a later version added: left out, not guessed
    ]


def _load_checkpoints(conn: sqlite3.Connection, run_id: str) -> list[StoredCheckpoint]:
    return [
        StoredCheckpoint(checkpoint_id, kind, iteration, created_at, note)
        for checkpoint_id, kind, iteration, created_at, note in conn.execute(
            "SELECT checkpoint_id, kind, iteration, created_at, note FROM checkpoints "
            "WHERE run_id = ? ORDER BY created_at, rowid",
            (run_id,),
        )
    ]


def _run_exists(conn: sqlite3.Connection, run_id: str) -> bool:
    return conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone() is not None


def _chain(conn: sqlite3.Connection, run_id: str) -> list[str]:
    """`run_id`, the run it continued, that run's predecessor, and so on."""
    chain = [run_id]
    while True:
        row = conn.execute(
            "SELECT continued_from FROM runs WHERE run_id = ?", (chain[-1],)
        ).fetchone()
        if row is None or row[0] is None or row[0] in chain:
            return chain
        chain.append(row[0])


@dataclass(slots=True)
class _OwnRun:
    records: list[ToolCallRecord]
    messages: list[Message]
    iteration_usage: list[IterationUsage]


def _load_own_run(
    conn: sqlite3.Connection,
    run_id: str,
    prompt: str,
    resources: Sequence[Resource],
    images: Sequence[ImageAttachment] = (),
) -> _OwnRun:
    """Records in request order and the conversation of this one run."""
    responses: dict[int, AssistantMessage] = {}
    usages: list[IterationUsage] = []
    for iteration, text, usage, cost_usd in conn.execute(
        "SELECT iteration, message, usage, cost_usd FROM assistant_messages WHERE run_id = ? "
        "ORDER BY iteration",
        (run_id,),
    ):
        message = message_from_dict(json.loads(text))
        if not isinstance(message, AssistantMessage):
            raise ValueError(f"run {run_id}: stored response {iteration} is not an assistant's")
        responses[iteration] = message
        if usage is not None:  # None: stored before usage was
            usages.append(IterationUsage(iteration, Usage(**json.loads(usage)), cost_usd))
    arrived = [
        ToolCallRecord(
            tool_name=tool_name,
            inputs=json.loads(inputs),
            output=json.loads(output),
            duration_ms=duration_ms,
            success=bool(success),
            error=error,
            iteration=iteration,
            call_id=call_id,
            error_kind=cast(ErrorKind, error_kind) if error_kind in ERROR_KINDS else None,
        )
        for (
            tool_name,
            inputs,
            output,
            duration_ms,
            success,
            error,
            iteration,
            call_id,
            error_kind,
        ) in conn.execute(
            "SELECT tool_name, inputs, output, duration_ms, success, error, iteration, "
            "call_id, error_kind FROM tool_calls WHERE run_id = ? ORDER BY seq",
            (run_id,),
        )
    ]
    records = _request_order(arrived, responses)
    messages: list[Message] = [UserMessage(prompt_with_resources(prompt, resources), tuple(images))]
    by_iteration: dict[int, list[ToolCallRecord]] = {}
    for record in records:
        by_iteration.setdefault(record.iteration, []).append(record)
    for iteration, response in responses.items():
        messages.append(response)
        results: list[ToolResult] = [result_from_record(r) for r in by_iteration.get(iteration, [])]
        if results:
            messages.append(ToolResultsMessage(tuple(results)))
    return _OwnRun(records, messages, usages)


def _request_order(
    arrived: list[ToolCallRecord], responses: dict[int, AssistantMessage]
) -> list[ToolCallRecord]:
    """Sort records (stored as they completed) into the order the model asked for them."""
    keys: list[tuple[int, int, int]] = []
    taken: set[tuple[int, int]] = set()
    for arrival, record in enumerate(arrived):
        calls = responses[record.iteration].tool_calls if record.iteration in responses else ()
        position = next(
            (
                index
                for index, call in enumerate(calls)
                if call.call_id == record.call_id and (record.iteration, index) not in taken
            ),
            len(calls),  # a record its response does not name goes after the named ones
        )
        taken.add((record.iteration, position))
        keys.append((record.iteration, position, arrival))
    order = sorted(range(len(arrived)), key=keys.__getitem__)
    return [arrived[i] for i in order]


def owner_gone(host: str, pid: int, token: str, started: str | None = None) -> bool:
    """Whether the process that started a run is gone, so the run can never finish: what
    every reader of the history calls a run's "interrupted" (the SQL function `owner_gone`
    in every read, and `mark_interrupted`).

    Runs of other hosts are left alone (their processes cannot be seen from here). Gone: our
    own pid with another process's token (an earlier process that had our pid), a pid that no
    longer exists (or is a zombie), or a pid that now belongs to a process started at
    another moment than the run's owner (`started`, from `process_start_key`).
    """
    if host != socket.gethostname():
        return False
    if pid == os.getpid():
        return token != _PROCESS_TOKEN
    if not _process_alive(pid):
        return True
    state = _process_state(pid)
    if state is None:  # no /proc to ask: the pid exists, so the owner is taken to live
        return False
    letter, now = state
    if letter in ("Z", "X"):  # killed, not yet reaped by its parent: it runs no more
        return True
    return started is not None and now != started


def _add_functions(conn: sqlite3.Connection) -> None:
    def gone(host: Any, pid: Any, token: Any, started: Any) -> int:
        try:
            return int(owner_gone(str(host), int(pid), str(token), started))
        except Exception:  # a read must not fail over one odd row: it stays as stored
            log.exception("run history: cannot tell whether pid %r is alive", pid)
            return 0

    conn.create_function("owner_gone", 4, gone)


def _process_alive(pid: int) -> bool:
    """Whether a process with this pid exists on this host (True when unsure)."""
    if sys.platform == "win32":
        import ctypes

        # os.kill(pid, 0) on Windows would terminate the process, so ask the kernel.
        kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
        process_query_limited_information, still_active, access_denied = 0x1000, 259, 5
        handle = kernel32.OpenProcess(process_query_limited_information, False, pid)
        if not handle:
            return bool(ctypes.get_last_error() == access_denied)
        try:
            code = ctypes.c_ulong()
            if not kernel32.GetExitCodeProcess(handle, ctypes.byref(code)):
                return True
            return bool(code.value == still_active)
        finally:
            kernel32.CloseHandle(handle)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


@contextmanager
def _begun(conn: sqlite3.Connection, begin: str) -> Iterator[sqlite3.Connection]:
    """A transaction on `conn`: committed when the block ends, rolled back if it raises."""
    conn.execute(begin)
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
