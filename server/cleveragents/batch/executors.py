"""Where a batch's tasks run: here, N at once (`LocalExecutor`), or as Ray tasks (`RayExecutor`).

Both run `task.run_job` on a fresh copy of each task's workspace and hand each outcome to the
batch as it finishes; the results are the same on both. Ray is imported only when chosen.
"""

from __future__ import annotations

import asyncio
import io
import logging
import os
import shutil
import sqlite3
import tarfile
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from ..service import tracing
from ..service.history import BatchLabel, RunHistory
from ..service.runs import RunManager
from ..service.settings import RunDefaults
from ..tool.serialization import to_data
from .suite import Job
from .task import TaskOutcome, TaskSink, prepare_workspace, run_job

DEFAULT_MAX_WORKSPACE_BYTES = 100 * 2**20

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class WorkItem:
    """A job, and the folder its fresh copy goes to (on this machine, or a shared path)."""

    job: Job
    sandbox: str


Done = Callable[[TaskOutcome], Awaitable[None]]


def task_attributes(job: Job) -> dict[str, str]:
    return {"cleveragents.task_id": job.task.id, "cleveragents.batch_config": job.config}


class Executor(Protocol):
    name: str

    async def run(self, items: Sequence[WorkItem], batch_id: str, done: Done) -> None:
        """Run every item of batch `batch_id`, awaiting `done` with each outcome as it comes;
        cancelling stops every task (their runs are recorded as cancelled)."""
        ...


class LocalExecutor:
    """Up to `jobs` tasks at once in this process, through one RunManager."""

    name = "local"

    def __init__(self, manager: RunManager, jobs: int = 1) -> None:
        if jobs < 1:
            raise ValueError(f"jobs must be at least 1, got {jobs}")
        self.manager = manager
        self.jobs = jobs

    async def run(self, items: Sequence[WorkItem], batch_id: str, done: Done) -> None:
        slots = asyncio.Semaphore(self.jobs)

        async def one(item: WorkItem) -> None:
            async with slots:
                with tracing.span(f"batch task {item.job.key}", task_attributes(item.job)):
                    outcome = await run_job(self.manager, item.job, item.sandbox, batch_id)
            await done(outcome)

        async with asyncio.TaskGroup() as group:
            for item in items:
                group.create_task(one(item))


class WorkspaceTooLarge(ValueError):
    pass


class RayExecutor:
    """Each task a Ray task on a cluster (`address`; None: RAY_ADDRESS, else a local one).

    The workspace travels with the task, packed (at most `max_workspace_bytes`), unless
    `shared` is set: the copies are then made on that path, which every node must see, and
    the runs work there (so they can be undone from here). A task's run events come back
    and are stored in this machine's history; a task whose worker dies is run once more, and
    its outcome says so.
    """

    name = "ray"

    def __init__(
        self,
        history: RunHistory | None,
        defaults: RunDefaults,
        *,
        address: str | None = None,
        tool_modules: Sequence[str] = (),
        shared: bool = False,
        max_workspace_bytes: int = DEFAULT_MAX_WORKSPACE_BYTES,
        init_options: dict[str, Any] | None = None,
    ) -> None:
        self.history = history
        self.defaults = defaults
        self.address = address
        self.tool_modules = tuple(tool_modules)
        self.shared = shared
        self.max_workspace_bytes = max_workspace_bytes
        self.init_options = init_options or {}

    def connect(self) -> Any:
        """Ray, connected to the cluster (started here when there is none to join)."""
        try:
            import ray
        except ImportError:
            raise RuntimeError("--ray needs Ray: pip install 'cleveragents[ray]'") from None
        if not ray.is_initialized():
            address = self.address or os.environ.get("RAY_ADDRESS") or None
            ray.init(
                address=address,
                ignore_reinit_error=True,
                log_to_driver=False,
                **self.init_options,
            )
        return ray

    async def run(self, items: Sequence[WorkItem], batch_id: str, done: Done) -> None:
        ray = self.connect()
        remote = ray.remote(max_retries=0)(ray_task)
        crashed = _worker_death_errors(ray)

        async def one(item: WorkItem) -> None:
            # The task's span covers its attempts; the worker's run continues its trace.
            with tracing.span(f"batch task {item.job.key}", task_attributes(item.job)):
                await attempts(item)

        async def attempts(item: WorkItem) -> None:
            try:
                spec = await asyncio.to_thread(self._spec, item, batch_id)
            except Exception as exc:  # the copy failed, or is too large to ship
                await done(
                    TaskOutcome(
                        item.job.task.id,
                        item.job.config,
                        "error",
                        error=f"cannot ship the workspace: {exc}",
                        executor=self.name,
                    )
                )
                return
            options: dict[str, Any] = {"num_cpus": item.job.settings.num_cpus or 1}
            if item.job.settings.memory_mb:
                options["memory"] = item.job.settings.memory_mb * 2**20
            retried: str | None = None
            attempts = 0
            while True:
                attempts += 1
                ref = remote.options(**options).remote(spec)
                try:
                    answer = await ref
                    break
                except asyncio.CancelledError:
                    ray.cancel(ref, force=True)
                    raise
                except crashed as exc:
                    reason = f"the Ray worker died ({type(exc).__name__})"
                    if attempts == 1:
                        retried = f"{reason}; run once more"
                        continue
                    outcome = TaskOutcome(
                        item.job.task.id,
                        item.job.config,
                        "error",
                        error=f"{reason} twice",
                        executor=self.name,
                        attempts=attempts,
                        retried=retried,
                    )
                    await done(outcome)
                    return
            outcome = TaskOutcome.from_dict(answer["outcome"])
            outcome.attempts, outcome.retried = attempts, retried
            try:
                await asyncio.to_thread(self._store, item.job, batch_id, answer["events"])
            except sqlite3.Error as exc:  # the outcome is still reported
                log.warning("batch %s: run of %s not stored: %s", batch_id, item.job.key, exc)
            await done(outcome)

        async with asyncio.TaskGroup() as group:
            for item in items:
                group.create_task(one(item))

    def _spec(self, item: WorkItem, batch_id: str) -> dict[str, Any]:
        """What the worker gets: the job, the workspace (packed, or its shared path), the
        replay script's text, the session's settings."""
        job = item.job
        prepare_workspace(job.task.workspace, item.sandbox)
        spec: dict[str, Any] = {
            "job": job,
            "batch_id": batch_id,
            "defaults": self.defaults,
            "tool_modules": self.tool_modules,
            "sandbox": item.sandbox if self.shared else None,
            "archive": None,
            "script": None,
            "trace": tracing.trace_carrier(),
        }
        if not self.shared:
            spec["archive"] = pack(item.sandbox, self.max_workspace_bytes)
            shutil.rmtree(item.sandbox, ignore_errors=True)
        if job.settings.replay_script is not None:
            spec["script"] = Path(job.settings.replay_script).read_bytes()
        return spec

    def _store(self, job: Job, batch_id: str, events: list[Any]) -> None:
        """The worker's run, in this machine's history, as if it had run here."""
        if self.history is None or not events:
            return
        run_id = events[0].run_id
        self.history.mark_batch(run_id, BatchLabel(batch_id, job.task.id, job.config))
        for event in events:
            self.history(event)


def _worker_death_errors(ray: Any) -> tuple[type[BaseException], ...]:
    names = ("WorkerCrashedError", "NodeDiedError", "LocalRayletDiedError")
    found = [getattr(ray.exceptions, name, None) for name in names]
    return tuple(error for error in found if isinstance(error, type))


def pack(folder: str, max_bytes: int) -> bytes:
    """The folder as a gzipped tar; WorkspaceTooLarge past `max_bytes` (before or after)."""
    total = 0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                continue
            if total > max_bytes:
                raise WorkspaceTooLarge(
                    f"workspace {folder} holds more than {max_bytes // 2**20} MiB: raise "
                    "--ray-max-workspace-mb or use --ray-shared-dir"
                )
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        archive.add(folder, arcname=".")
    return buffer.getvalue()


def ray_task(spec: dict[str, Any]) -> dict[str, Any]:
    """A batch task on a Ray worker: unpack, run through a RunManager of its own, check."""
    return asyncio.run(_ray_task(spec))


async def _ray_task(spec: dict[str, Any]) -> dict[str, Any]:
    from ..toolsets import build_registry

    job: Job = spec["job"]
    defaults: RunDefaults = spec["defaults"]
    scratch = tempfile.mkdtemp(prefix="cleveragents-batch-")
    try:
        sandbox = spec["sandbox"]
        if sandbox is None:
            sandbox = os.path.join(scratch, "workspace")
            os.mkdir(sandbox)
            with tarfile.open(fileobj=io.BytesIO(spec["archive"]), mode="r:gz") as archive:
                archive.extractall(sandbox, filter="data")
        if spec["script"] is not None:
            script = os.path.join(scratch, "replay-script.json")
            Path(script).write_bytes(spec["script"])
            job = replace(job, settings=replace(job.settings, replay_script=script))
        registry = build_registry(spec["tool_modules"], command_policy=defaults.command_policy)
        manager = RunManager(registry, defaults, None)
        sink = TaskSink(keep_events=True)
        try:
            with tracing.continued_trace(spec["trace"]):
                outcome = await run_job(
                    manager,
                    job,
                    sandbox,
                    spec["batch_id"],
                    sink=sink,
                    executor="ray",
                    prepare=False,
                )
        finally:
            await manager.aclose()
        outcome.workspace = sandbox if spec["sandbox"] is not None else None
        return {"outcome": to_data(outcome), "events": sink.events}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
