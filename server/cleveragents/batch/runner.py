"""A batch: every job of a suite, on an executor, kept in the history, skippable on a re-run.

    report = await run_batch(suite, LocalExecutor(manager, jobs=4), history, work_dir)

Each finished task's outcome is stored in the history (`batch_tasks`) with a fingerprint of
the task and its settings; a re-run skips a task whose fingerprint is unchanged and whose
outcome is stored (`rerun=True` runs everything again). Cancelling stops every task; the
report then holds what finished and says it was cancelled, and nothing unfinished is kept,
so the next run of the batch picks up the rest.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..service import tracing
from ..service.history import BatchTaskRecord, RunHistory
from ..tool.serialization import register_shape, to_data
from .executors import Executor, WorkItem
from .suite import Job, Suite
from .task import TaskOutcome

log = logging.getLogger(__name__)


@dataclass(slots=True)
class BatchReport:
    batch_id: str
    suite: str
    executor: str
    # In suite order (task by task, configuration by configuration); only what finished.
    outcomes: list[TaskOutcome] = field(default_factory=list)
    configurations: list[str] = field(default_factory=list)
    planned: int = 0
    cancelled: bool = False
    duration_s: float = 0.0

    def totals(self, config: str | None = None) -> dict[str, Any]:
        """Pass rate, cost and durations over the outcomes (of one configuration, if named)."""
        rows = [o for o in self.outcomes if config is None or o.config == config]
        costs = [o.cost_usd for o in rows if o.cost_usd is not None]
        durations = sorted(o.duration_s for o in rows)
        passed = sum(o.passed for o in rows)
        return {
            "tasks": len(rows),
            "passed": passed,
            "failed": len(rows) - passed,
            "pass_rate": passed / len(rows) if rows else None,
            # None when no run's price is known: an unknown cost is not zero.
            "total_cost_usd": sum(costs) if costs else None,
            "mean_cost_usd": sum(costs) / len(costs) if costs else None,
            "p50_duration_s": percentile(durations, 50),
            "p95_duration_s": percentile(durations, 95),
            "input_tokens": sum(o.input_tokens for o in rows),
            "output_tokens": sum(o.output_tokens for o in rows),
            "retried": sum(o.retried is not None for o in rows),
            "skipped": sum(o.skipped for o in rows),
        }


# The JSON report: the batch, its totals and each configuration's, then every task's row.
register_shape(
    BatchReport,
    rename={"outcomes": "tasks"},
    extra={
        "totals": lambda report: report.totals(),
        "configurations": lambda report: {c: report.totals(c) for c in report.configurations},
    },
    order=(
        "batch_id",
        "suite",
        "executor",
        "planned",
        "cancelled",
        "duration_s",
        "totals",
        "configurations",
        "tasks",
    ),
)


def percentile(sorted_values: Sequence[float], pct: float) -> float | None:
    """The nearest-rank percentile of sorted values; None for none."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(pct / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


def work_folder(work_dir: str, batch_id: str, job: Job) -> str:
    """Where a job's copy of its workspace lives (kept after the run: it can be reopened,
    continued and undone like any run's folder)."""
    return os.path.join(work_dir, batch_id, job.config, job.task.id)


async def run_batch(
    suite: Suite,
    executor: Executor,
    history: RunHistory | None,
    work_dir: str,
    *,
    rerun: bool = False,
    on_outcome: Callable[[TaskOutcome], None] | None = None,
    on_plan: Callable[[int, int], None] | None = None,
) -> BatchReport:
    """Run the suite's jobs not finished before (all with `rerun`); see the module doc.

    `on_plan(to_run, skipped)` is told once, `on_outcome` each outcome as it comes.
    """
    started = time.monotonic()
    jobs = list(suite.jobs())
    report = BatchReport(
        suite.name,
        suite.path,
        executor.name,
        configurations=[c.name for c in suite.configurations],
        planned=len(jobs),
    )
    earlier: dict[tuple[str, str], BatchTaskRecord] = {}
    if history is not None and not rerun:
        records = await asyncio.to_thread(history.batch_tasks, suite.name)
        earlier = {(r.task_id, r.config): r for r in records}
    done: dict[str, TaskOutcome] = {}
    fingerprints = {job.key: job.fingerprint() for job in jobs}
    to_run: list[WorkItem] = []
    for job in jobs:
        record = earlier.get((job.task.id, job.config))
        if record is not None and record.fingerprint == fingerprints[job.key]:
            outcome = TaskOutcome.from_dict(record.outcome)
            outcome.skipped = True
            done[job.key] = outcome
        else:
            to_run.append(WorkItem(job, work_folder(work_dir, suite.name, job)))
    if on_plan is not None:
        on_plan(len(to_run), len(done))
    for outcome in done.values():
        if on_outcome is not None:
            on_outcome(outcome)

    async def finished(outcome: TaskOutcome) -> None:
        done[outcome.key] = outcome
        if history is not None:
            record = BatchTaskRecord(
                suite.name,
                outcome.task_id,
                outcome.config,
                fingerprints[outcome.key],
                outcome.run_id,
                outcome.passed,
                to_data(outcome),
                time.time(),
            )
            try:
                await asyncio.to_thread(history.record_batch_task, record)
            except sqlite3.Error as exc:  # the report still has it; a re-run does it again
                log.warning("batch %s: outcome of %s not stored: %s", suite.name, outcome.key, exc)
        if on_outcome is not None:
            on_outcome(outcome)

    try:
        attributes = {"cleveragents.batch_id": suite.name, "cleveragents.executor": executor.name}
        with tracing.span(f"batch {suite.name}", attributes):
            await executor.run(to_run, suite.name, finished)
    except asyncio.CancelledError:
        report.cancelled = True
    report.outcomes = [done[job.key] for job in jobs if job.key in done]
    report.duration_s = time.monotonic() - started
    return report
