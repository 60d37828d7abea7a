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
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ...paths import default_history_path
from ...tool.events import (
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
from ...tool.images import ImageAttachment
from ...tool.messages import Message
from ...tool.records import ToolCallRunResult
from ...tool.serialization import to_data
from ...workspace.private import keep_private, private_file, private_folder
from ..changes import ChangedFile
from ..image_store import DEFAULT_MAX_BYTES as DEFAULT_IMAGE_STORE_BYTES
from ..image_store import ImageStore
from ..run_status import RunStatus
from . import queries
from .owners import INTERRUPTED_ERROR, OWNER_STARTED, PROCESS_TOKEN, add_sql_functions, owner_gone
from .queries import (
    run_chain,
    run_exists,
)
from .records import (
    BatchLabel,
    BatchTaskRecord,
    ConversationSummary,
    RestoreRecord,
    RunSummary,
    StoredCheckpoint,
    StoredRun,
)
from .rows import (
    changed_files_to_json,
    dumps_json,
    storable_text,
)
from .schema import MIGRATIONS, SCHEMA_VERSION

log = logging.getLogger(__name__)

# How long a write waits for another process (a second daemon) holding the write lock.
BUSY_TIMEOUT_S = 5.0


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
            add_sql_functions(self._conn)
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
            for target, statements in enumerate(MIGRATIONS[version:], start=version + 1):
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
                add_sql_functions(conn)
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
        storable = [storable_text(p) if isinstance(p, str) else p for p in parameters]
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
                PROCESS_TOKEN,
                OWNER_STARTED,
                dumps_json(to_data(event.resources)) if event.resources else None,
                batch.batch_id if batch else None,
                batch.task_id if batch else None,
                batch.config if batch else None,
                dumps_json(to_data(event.images)) if event.images else None,
            ),
        )
        with self._state_lock:
            self._pending_continuations.pop(event.run_id, None)
            self._pending_batches.pop(event.run_id, None)
            self._active_runs.add(event.run_id)

    def _response_received(self, event: ResponseReceived) -> None:
        usage, total = event.usage, event.total_usage
        with self._transaction(immediate=True) as conn:
            conn.execute(
                "INSERT INTO assistant_messages (run_id, iteration, message, received_at, "
                "usage, cost_usd) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    event.run_id,
                    event.iteration,
                    storable_text(dumps_json(to_data(event.message))),
                    time.time(),
                    dumps_json(to_data(usage)),
                    event.cost_usd,
                ),
            )
            # The run's totals so far, as the runtime counted them (never summed here), so a
            # run that fails keeps what it spent; its end (`_run_finished`) writes the last.
            conn.execute(
                "UPDATE runs SET input_tokens = ?, output_tokens = ?, cache_read_tokens = ?, "
                "cache_write_tokens = ?, cost_usd = ? WHERE run_id = ?",
                (
                    total.input_tokens,
                    total.output_tokens,
                    total.cache_read_tokens,
                    total.cache_write_tokens,
                    event.total_cost_usd,
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
                dumps_json(record.inputs),
                dumps_json(record.output),
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
            if not run_exists(conn, continued_from):
                raise KeyError(continued_from)
            stored = run_exists(conn, run_id)
        if not stored:
            with self._state_lock:
                self._pending_continuations[run_id] = continued_from
            return
        with self._transaction(immediate=True) as conn:
            if run_id in run_chain(conn, continued_from):
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
                dumps_json(record.outcome),
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
            (changed_files_to_json(changed_files), warning, run_id),
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
                    storable_text(record.description),
                    storable_text(record.sandbox_root),
                    record.status,
                    record.started_at,
                    record.finished_at,
                    storable_text(record.content),
                    storable_text(record.error),
                    changed_files_to_json(record.changed_files),
                    record.restored_run_id,
                    record.restored_iteration,
                    socket.gethostname(),
                    os.getpid(),
                    PROCESS_TOKEN,
                    OWNER_STARTED,
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
            return run_exists(conn, run_id)

    def list_runs(
        self, limit: int = 50, offset: int = 0, *, batch_id: str | None = None
    ) -> list[RunSummary]:
        """Runs, newest first; only a batch's with `batch_id`."""
        if limit < 0 or offset < 0:
            raise ValueError(f"limit and offset must not be negative, got {limit}, {offset}")
        with self._transaction(immediate=False) as conn:
            return queries.list_runs(conn, limit, offset, batch_id)

    def get_run(self, run_id: str) -> StoredRun | None:
        with self._transaction(immediate=False) as conn:
            return queries.get_run(conn, run_id, self._images)

    def conversation(self, run_id: str) -> list[Message]:
        """The run's provider-neutral conversation, with the runs it continued first.

        Earlier runs' parts go through `close_dangling_calls`, as the runtime did when it
        continued them; this run's own calls that never got a record stay dangling, for
        `close_dangling_calls` to fix up when continuing. KeyError for an unknown run.
        """
        with self._transaction(immediate=False) as conn:
            parts = queries.conversation_parts(conn, run_id, self._images)
        earlier = [message for part in parts[:-1] for message in part]
        from ...tool.runtime import close_dangling_calls  # the loop's code: not at start-up

        return [*close_dangling_calls(earlier), *parts[-1]] if earlier else parts[-1]

    def _images(self, stored: str | None) -> list[ImageAttachment]:
        """A row's image references, with the bytes the store still holds."""
        return [self.images.load(reference) for reference in json.loads(stored)] if stored else []

    def chain(self, run_id: str) -> list[str]:
        """The run ids from the conversation's first run down to `run_id`; KeyError if unknown."""
        with self._transaction(immediate=False) as conn:
            if not queries.run_exists(conn, run_id):
                raise KeyError(run_id)
            return list(reversed(queries.run_chain(conn, run_id)))

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
        with self._transaction(immediate=False) as conn:
            rows = queries.conversation_rows(conn)
        return queries.conversations_from_rows(rows)


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
