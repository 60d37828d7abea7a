"""`cleveragents batch` throughput: tasks per second and per-task overhead, local and on Ray.

A suite of N offline tasks (default 200; the offline model reads the workspace and answers, a
check command runs confined in each copy) runs through `run_batch` exactly as the CLI runs it:
each task a fresh copy of a small workspace, a run through `RunManager.run` stored in a fresh
history, the check through the command wall, the outcome stored. Reported, per executor:

- **tasks/s**: tasks finished per second of wall time (all slots busy);
- **mean task**: a task's own time (copy, run, check), from its outcome;
- **per-task overhead**: the mean task less the mean bare run, where the bare run is
  `RunManager.run` alone on one folder (no copy, no check, no batch bookkeeping), measured
  first with the same model and tools. On Ray the task's time is measured on the worker; the
  shipping (pack, schedule, unpack, events back into the history) shows in tasks/s.

    python bench/batch_bench.py                  # 200 tasks, local (--jobs 2) and Ray
    python bench/batch_bench.py --tasks 20 --no-ray
    python bench/batch_bench.py --json

A bench reports; it never fails the build. It crashes when a task did not pass (a fast batch
that does no work scores nothing).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from cleveragents.batch.executors import Executor, LocalExecutor, RayExecutor
from cleveragents.batch.runner import run_batch
from cleveragents.batch.suite import suite_from_data
from cleveragents.batch.task import TaskSink
from cleveragents.service.history import RunHistory
from cleveragents.service.runs import RunManager, RunRequest
from cleveragents.service.settings import RunDefaults
from cleveragents.toolsets import build_registry


def make_workspace(folder: Path) -> Path:
    workspace = folder / "project"
    (workspace / "src").mkdir(parents=True)
    (workspace / "README.md").write_text("# project\n")
    for i in range(10):
        (workspace / "src" / f"m{i}.py").write_text(f"VALUE = {i}\n" * 20)
    return workspace


def suite_data(count: int) -> dict[str, Any]:
    return {
        "name": "bench",
        "defaults": {"provider": "offline", "profile": "read-only"},
        "tasks": [
            {"id": f"t{i}", "workspace": "project", "prompt": "Look around.", "check": "true"}
            for i in range(count)
        ],
    }


async def bare_runs(folder: Path, count: int) -> float:
    """Mean seconds of `RunManager.run` alone, same model and tools, on one folder."""
    manager = RunManager(build_registry(), RunDefaults(), None)
    times = []
    try:
        for _ in range(count):
            started = time.perf_counter()
            request = RunRequest(
                prompt="Look around.",
                sandbox_root=str(folder),
                provider="offline",
                automation_profile="read-only",
            )
            await manager.run(request, TaskSink())
            times.append(time.perf_counter() - started)
    finally:
        await manager.aclose()
    return statistics.mean(times)


async def one_executor(name: str, folder: Path, count: int, jobs: int) -> dict[str, Any]:
    suite = suite_from_data(suite_data(count), folder, "bench.yaml")
    history = RunHistory(folder / f"history-{name}.sqlite3")
    manager = RunManager(build_registry(), RunDefaults(), history)
    executor: Executor
    startup = 0.0
    if name == "ray":
        ray_executor = RayExecutor(history, RunDefaults(), init_options={"num_cpus": jobs})
        began = time.perf_counter()
        ray_executor.connect()  # the cluster's start is reported apart from the tasks
        startup = time.perf_counter() - began
        executor = ray_executor
    else:
        executor = LocalExecutor(manager, jobs)
    started = time.perf_counter()
    report = await run_batch(suite, executor, history, str(folder / f"work-{name}"), rerun=True)
    wall = time.perf_counter() - started
    await manager.aclose()
    history.close()
    failed = [o.key for o in report.outcomes if not o.passed]
    if len(report.outcomes) != count or failed:
        raise SystemExit(f"{name}: {len(report.outcomes)} of {count} finished; failed: {failed}")
    return {
        "executor": name,
        "tasks": count,
        "slots": jobs,
        "wall_s": wall,
        "startup_s": startup,
        "tasks_per_s": count / wall,
        "mean_task_s": statistics.mean(o.duration_s for o in report.outcomes),
    }


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="cleveragents-batch-bench-") as scratch:
        folder = Path(scratch)
        workspace = make_workspace(folder)
        bare = await bare_runs(workspace, min(args.tasks, 20))
        results = [await one_executor("local", folder, args.tasks, args.jobs)]
        if not args.no_ray:
            try:
                import ray  # noqa: F401
            except ImportError:
                print("ray is not installed: Ray skipped", file=sys.stderr)
            else:
                os.environ.pop("RAY_ADDRESS", None)
                results.append(await one_executor("ray", folder, args.tasks, args.jobs))
    for result in results:
        result["bare_run_s"] = bare
        result["overhead_s"] = result["mean_task_s"] - bare
    return {"bare_run_s": bare, "results": results}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=2, help="local jobs, and Ray CPUs")
    parser.add_argument("--no-ray", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    figures = asyncio.run(main_async(args))
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    print(f"bare run (RunManager.run alone): {figures['bare_run_s'] * 1000:.1f} ms")
    print(
        f"{'executor':<10}{'tasks':>7}{'slots':>7}{'start s':>9}{'wall s':>9}{'tasks/s':>9}"
        f"{'mean task ms':>14}{'overhead ms':>13}"
    )
    for r in figures["results"]:
        print(
            f"{r['executor']:<10}{r['tasks']:>7}{r['slots']:>7}{r['startup_s']:>9.1f}"
            f"{r['wall_s']:>9.1f}"
            f"{r['tasks_per_s']:>9.2f}{r['mean_task_s'] * 1000:>14.1f}"
            f"{r['overhead_s'] * 1000:>13.1f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
