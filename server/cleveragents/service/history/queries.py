"""Reads over one connection: the run list, a stored run, a run's conversation and chain."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any, cast

from ...tool.images import ImageAttachment
from ...tool.messages import (
    AssistantMessage,
    Message,
    ToolResult,
    ToolResultsMessage,
    UserMessage,
    message_from_dict,
)
from ...tool.records import ERROR_KINDS, ErrorKind, ToolCallRecord, Usage
from ...tool.resources import Resource, prompt_with_resources
from .owners import INTERRUPTED_ERROR
from .records import (
    TITLE_CHARS,
    BatchLabel,
    ConversationSummary,
    IterationUsage,
    RunSummary,
    StoredCheckpoint,
    StoredRun,
)
from .rows import changed_files_from_json, resources_from_json

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


def load_checkpoints(conn: sqlite3.Connection, run_id: str) -> list[StoredCheckpoint]:
    return [
        StoredCheckpoint(checkpoint_id, kind, iteration, created_at, note)
        for checkpoint_id, kind, iteration, created_at, note in conn.execute(
            "SELECT checkpoint_id, kind, iteration, created_at, note FROM checkpoints "
            "WHERE run_id = ? ORDER BY created_at, rowid",
            (run_id,),
        )
    ]


def run_exists(conn: sqlite3.Connection, run_id: str) -> bool:
    return conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone() is not None


def run_chain(conn: sqlite3.Connection, run_id: str) -> list[str]:
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
class OwnRun:
    records: list[ToolCallRecord]
    messages: list[Message]
    iteration_usage: list[IterationUsage]


def load_own_run(
    conn: sqlite3.Connection,
    run_id: str,
    prompt: str,
    resources: Sequence[Resource],
    images: Sequence[ImageAttachment] = (),
) -> OwnRun:
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
    from ...tool.router import result_from_record  # the loop's code: not at start-up

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
    return OwnRun(records, messages, usages)


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


# A row's image references -> the images (the store holds their bytes).
ImageLoader = Callable[[str | None], list[ImageAttachment]]


def list_runs(
    conn: sqlite3.Connection, limit: int, offset: int, batch_id: str | None
) -> list[RunSummary]:
    """Runs, newest first; only a batch's with `batch_id`."""
    where, parameters = ("WHERE batch_id = ? ", (batch_id,)) if batch_id is not None else ("", ())
    rows = conn.execute(
        f"SELECT {_SUMMARY_COLUMNS} FROM runs {where}ORDER BY seq DESC LIMIT ? OFFSET ?",
        (*parameters, limit, offset),
    ).fetchall()
    return [_summary(row) for row in rows]


def get_run(conn: sqlite3.Connection, run_id: str, load_images: ImageLoader) -> StoredRun | None:
    """One run with everything stored of it; None for an unknown run."""
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
    attached = resources_from_json(resources)
    pictures = load_images(images)
    stored = load_own_run(conn, run_id, summary.prompt, attached, pictures)
    checkpoints = load_checkpoints(conn, run_id)
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
        changed_files=changed_files_from_json(changed_files),
        checkpoint_warning=checkpoint_warning,
    )


def conversation_parts(
    conn: sqlite3.Connection, run_id: str, load_images: ImageLoader
) -> list[list[Message]]:
    """Each run's own conversation down the chain to `run_id`, oldest first; KeyError for an
    unknown run."""
    if not run_exists(conn, run_id):
        raise KeyError(run_id)
    chain = run_chain(conn, run_id)
    parts = []
    for chained_id in reversed(chain):  # oldest first
        (prompt, resources, images) = conn.execute(
            "SELECT prompt, resources, images FROM runs WHERE run_id = ?", (chained_id,)
        ).fetchone()
        own = load_own_run(
            conn, chained_id, prompt, resources_from_json(resources), load_images(images)
        )
        parts.append(own.messages)
    return parts


def conversation_rows(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
    """The small columns `conversations_from_rows` groups, oldest run first."""
    # One pass over the runs' small columns: each run joins its parent's conversation. A
    # history holds thousands of runs, not millions, and a recursive query would scan the
    # runs once per level without an index on continued_from.
    rows: list[tuple[Any, ...]] = conn.execute(
        # Restores are no conversations: they undo runs of one, and are no turn of it.
        "SELECT seq, run_id, continued_from, sandbox_root, substr(prompt, 1, ?), "
        f"{_STATUS}, started_at, finished_at FROM runs WHERE kind != 'restore' "
        "ORDER BY seq",
        (TITLE_CHARS,),
    ).fetchall()
    return rows


def conversations_from_rows(rows: Sequence[tuple[Any, ...]]) -> list[ConversationSummary]:
    """Each run joins its parent's conversation; one summary per conversation."""
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
