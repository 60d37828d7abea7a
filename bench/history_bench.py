"""The run history and the daemon's event loop: pings during a large getRun, runs under a lock.

Drives the real daemon (`python -m cleveragents serve --stdio`) over real pipes with the raw
client of `daemon_client.py`:

- **a large getRun**: a run of 5,000 tool-call records is written into a fresh history file
  (through `RunHistory`, as a daemon stores it), the daemon starts on that file, and
  `cleveragents/getRun` of the run is sent several times; while each one is in flight a ping
  (`cleveragents/cancel` of an unknown run, the cheapest request) goes out every 5 ms.
  Reported: getRun's time, a ping alone, and the longest ping the daemon answered while it was
  reading and encoding the run (answers that reached us before getRun's). The answers of pings
  sent while getRun's result (about 12 MB) was on its way come after it on the ordered stream:
  their wait is the time to carry and parse that result, reported apart.
- **a locked history**: another process takes the history's write lock (`BEGIN IMMEDIATE`) and
  holds it for 3 s; meanwhile a run of 10 `list_dir` calls is started and a ping goes out every
  20 ms. Reported: the run's wall time (beside the same run with no lock held) and the longest
  ping. Once the lock is released, `getRun` must show every record of the run (else the bench
  crashes: a fast daemon that loses records scores nothing).

    python bench/history_bench.py            # table and PASS/MISS lines
    python bench/history_bench.py --json     # machine-readable results
    python bench/history_bench.py --quick    # tiny sizes (smoke test)

Targets: the longest ping answered while a getRun is served, and while the lock is held, at
most 50 ms (a daemon that answers none while serving the getRun misses); the run under the
lock at most 1 s slower than without it (it must not wait for the lock).
A bench reports; it never fails the build: the exit status is 0 unless something crashes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cleveragents.service.history import RunHistory
from cleveragents.tool.events import (
    IterationStarted,
    ResponseReceived,
    RunFinished,
    RunStarted,
    ToolCallFinished,
)
from cleveragents.tool.messages import AssistantMessage, ToolCallRequest
from cleveragents.tool.records import ToolCallRecord, ToolCallRunResult
from daemon_client import RawClient

PING_TARGET_MS = 50.0
LOCKED_RUN_EXTRA_TARGET_MS = 1000.0
WAIT_S = 120.0  # a ceiling against a hung daemon, not a measurement
BIG_RUN_ID = "big-run"
CALLS_PER_ITERATION = 10
OPTIONS: dict[str, Any] = {"provider": "replay", "automationProfile": "full-auto"}

# Holds the write lock of a history file until told to let go (a line on stdin) or `hold`
# seconds pass, printing "locked" once it has it.
LOCK_HOLDER = """
import sqlite3, sys, time, select
conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
select.select([sys.stdin], [], [], float(sys.argv[2]))
conn.execute("COMMIT")
print("released", flush=True)
"""


@dataclass(frozen=True, slots=True)
class Plan:
    records: int
    get_runs: int
    ping_interval_s: float
    lock_hold_s: float
    locked_run_calls: int
    lock_ping_interval_s: float
    lone_pings: int


FULL = Plan(
    records=5000,
    get_runs=5,
    ping_interval_s=0.005,
    lock_hold_s=3.0,
    locked_run_calls=10,
    lock_ping_interval_s=0.02,
    lone_pings=200,
)
QUICK = Plan(
    records=200,
    get_runs=1,
    ping_interval_s=0.005,
    lock_hold_s=0.5,
    locked_run_calls=3,
    lock_ping_interval_s=0.02,
    lone_pings=10,
)


@dataclass(slots=True)
class Results:
    records: int
    ping_alone_ms: dict[str, float] = field(default_factory=dict)
    get_run_ms: list[float] = field(default_factory=list)
    get_run_bytes: int = 0
    pings_during_get_run: int = 0
    median_ping_during_get_run_ms: float = 0.0
    longest_ping_during_get_run_ms: float = 0.0
    pings_behind_get_run: int = 0
    longest_ping_behind_get_run_ms: float = 0.0
    lock_hold_s: float = 0.0
    run_unlocked_ms: float = 0.0
    run_locked_ms: float = 0.0
    pings_during_lock: int = 0
    longest_ping_during_lock_ms: float = 0.0
    records_after_release: int = 0
    # Other work on the machine moves every figure here: the 1-minute load average, before
    # and after.
    load_average: list[float] = field(default_factory=list)
    verdicts: list[dict[str, Any]] = field(default_factory=list)


# -- the environment ---------------------------------------------------------------------------


@dataclass(slots=True)
class Workspace:
    root: Path

    @property
    def env(self) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("CLEVERAGENTS_", "ANTHROPIC_", "OPENAI_"))
        }
        env["XDG_DATA_HOME"] = str(self.root / "data")
        return env

    @property
    def history(self) -> Path:
        return self.root / "history.sqlite3"

    @property
    def sandbox(self) -> Path:
        sandbox = self.root / "sandbox"
        sandbox.mkdir(exist_ok=True)
        return sandbox

    def script(self, name: str, calls: int) -> str:
        """A replay script: `calls` iterations of one distinct `list_dir` each, then an answer."""
        for index in range(1, calls + 1):
            (self.sandbox / f"d{index}").mkdir(exist_ok=True)
        responses: list[dict[str, Any]] = [
            {"tool_calls": [{"name": "list_dir", "arguments": {"path": f"d{i}"}}]}
            for i in range(1, calls + 1)
        ]
        responses.append({"text": "Done."})
        path = self.root / name
        path.write_text(json.dumps({"responses": responses}), encoding="utf-8")
        return str(path)


@contextlib.contextmanager
def workspace() -> Iterator[Workspace]:
    root = Path(tempfile.mkdtemp(prefix="cleveragents-history-bench-"))
    try:
        yield Workspace(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def write_big_run(path: Path, records: int) -> None:
    """A finished run of `records` read_file-like records, stored as a daemon stores one."""
    content = "".join(f"line {n}: some source text of a plausible length\n" for n in range(20))
    with RunHistory(path) as history:
        history(RunStarted(BIG_RUN_ID, "read everything", "bench", "/tmp", "full-auto", 1000))
        iterations = (records + CALLS_PER_ITERATION - 1) // CALLS_PER_ITERATION
        made = 0
        for iteration in range(1, iterations + 1):
            history(IterationStarted(BIG_RUN_ID, iteration))
            count = min(CALLS_PER_ITERATION, records - made)
            calls = tuple(
                ToolCallRequest(f"c{iteration}_{i}", "read_file", {"path": f"src/f{made + i}.py"})
                for i in range(count)
            )
            history(ResponseReceived(BIG_RUN_ID, iteration, AssistantMessage("Reading.", calls)))
            for i, call in enumerate(calls):
                history(
                    ToolCallFinished(
                        BIG_RUN_ID,
                        ToolCallRecord(
                            tool_name="read_file",
                            inputs=dict(call.arguments),
                            output={"path": f"src/f{made + i}.py", "content": content},
                            duration_ms=0.4,
                            success=True,
                            iteration=iteration,
                            call_id=call.call_id,
                        ),
                    )
                )
            made += count
        result = ToolCallRunResult("Read.", [], iterations, run_id=BIG_RUN_ID)
        history(RunFinished(BIG_RUN_ID, result))


async def started(ws: Workspace) -> RawClient:
    command = [sys.executable, "-m", "cleveragents", "serve", "--stdio", "--history"]
    client = await RawClient.spawn([*command, str(ws.history)], ws.env, ws.root / "daemon.log")
    await asyncio.wait_for(client.initialize(OPTIONS), WAIT_S)
    client.notify("initialized", {})
    return client


async def ping(client: RawClient) -> float:
    """One round trip of the cheapest request, in ms."""
    start = time.perf_counter()
    answer = await asyncio.wait_for(
        client.request("cleveragents/cancel", {"runId": "none"}), WAIT_S
    )
    if answer != {"cancelled": False}:
        raise RuntimeError(f"unexpected ping answer {answer!r}")
    return (time.perf_counter() - start) * 1000


async def pings_while(
    client: RawClient, busy: asyncio.Future[Any], interval_s: float
) -> tuple[list[float], list[float]]:
    """Ping every `interval_s` (each on its own, overlapping) until `busy` is done: the pings
    answered before `busy` was, and those answered after it, in ms."""
    pending: list[asyncio.Task[float]] = []
    while not busy.done():
        pending.append(asyncio.ensure_future(ping(client)))
        await asyncio.wait([busy], timeout=interval_s)
    before = [task.result() for task in pending if task.done()]
    after = [task for task in pending if not task.done()]
    return before, list(await asyncio.gather(*after))


# -- the measurements --------------------------------------------------------------------------


async def measure_get_run(client: RawClient, plan: Plan, results: Results) -> None:
    lone = [await ping(client) for _ in range(plan.lone_pings)]
    results.ping_alone_ms = {"median": statistics.median(lone), "max": max(lone)}
    served: list[float] = []
    for _ in range(plan.get_runs):
        start = time.perf_counter()
        get_run = client.request_future("cleveragents/getRun", {"runId": BIG_RUN_ID})
        during, behind = await pings_while(client, get_run, plan.ping_interval_s)
        detail = await get_run
        results.get_run_ms.append((time.perf_counter() - start) * 1000)
        if len(detail["toolCallHistory"]) != plan.records:
            raise RuntimeError(f"getRun returned {len(detail['toolCallHistory'])} records")
        results.get_run_bytes = len(json.dumps(detail, separators=(",", ":")))
        served.extend(during)
        results.pings_behind_get_run += len(behind)
        results.longest_ping_behind_get_run_ms = max(
            [results.longest_ping_behind_get_run_ms, *behind]
        )
    results.pings_during_get_run = len(served)
    results.median_ping_during_get_run_ms = statistics.median(served) if served else 0.0
    results.longest_ping_during_get_run_ms = max(served, default=0.0)


async def timed_run(client: RawClient, ws: Workspace, name: str, calls: int) -> tuple[str, float]:
    script = ws.script(f"{name}.json", calls)
    start = time.perf_counter()
    answer = await asyncio.wait_for(
        client.request(
            "cleveragents/run",
            {"prompt": name, "sandboxRoot": str(ws.sandbox), "replayScript": script},
        ),
        WAIT_S,
    )
    elapsed = (time.perf_counter() - start) * 1000
    records = answer["toolCallHistory"]
    if len(records) != calls or not all(r["success"] for r in records):
        raise RuntimeError(f"run {name} did not make its {calls} calls: {records!r}")
    return str(answer["runId"]), elapsed


async def measure_lock(client: RawClient, ws: Workspace, plan: Plan, results: Results) -> None:
    results.lock_hold_s = plan.lock_hold_s
    # The daemon's first run also starts its tool threads and checkpoint store: not timed.
    await timed_run(client, ws, "warm-up", plan.locked_run_calls)
    _, results.run_unlocked_ms = await timed_run(client, ws, "unlocked", plan.locked_run_calls)
    holder = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        LOCK_HOLDER,
        str(ws.history),
        str(plan.lock_hold_s),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert holder.stdout is not None
    if await asyncio.wait_for(holder.stdout.readline(), WAIT_S) != b"locked\n":
        raise RuntimeError("the lock holder did not take the lock")
    run = asyncio.ensure_future(timed_run(client, ws, "locked", plan.locked_run_calls))
    lock_over = asyncio.ensure_future(holder.wait())
    before, after = await pings_while(client, lock_over, plan.lock_ping_interval_s)
    during = before + after
    run_id, results.run_locked_ms = await run
    results.pings_during_lock = len(during)
    results.longest_ping_during_lock_ms = max(during) if during else 0.0
    detail = await asyncio.wait_for(
        client.request("cleveragents/getRun", {"runId": run_id}), WAIT_S
    )
    results.records_after_release = len(detail["toolCallHistory"])
    if results.records_after_release != plan.locked_run_calls or detail["status"] != "finished":
        raise RuntimeError(f"records lost under the lock: {detail['status']}, {detail!r:.300}")


def verdicts(results: Results) -> list[dict[str, Any]]:
    lock_extra = results.run_locked_ms - results.run_unlocked_ms
    answered = results.pings_during_get_run > 0
    # A daemon whose loop is busy with the getRun answers no ping while serving it: every
    # ping then waits behind the result, which is a miss, not an empty maximum.
    get_run_figure = (
        f"{results.longest_ping_during_get_run_ms:.1f} ms"
        if answered
        else f"none answered; all waited behind it, up to "
        f"{results.longest_ping_behind_get_run_ms:.0f} ms"
    )
    return [
        {
            "name": f"longest ping answered while a {results.records:,}-record getRun was served",
            "figure": get_run_figure,
            "target": f"<= {PING_TARGET_MS:g} ms",
            "met": answered and results.longest_ping_during_get_run_ms <= PING_TARGET_MS,
        },
        {
            "name": f"longest ping while another process holds the lock {results.lock_hold_s:g} s",
            "figure": f"{results.longest_ping_during_lock_ms:.1f} ms",
            "target": f"<= {PING_TARGET_MS:g} ms",
            "met": results.longest_ping_during_lock_ms <= PING_TARGET_MS,
        },
        {
            "name": "a run under the lock, beyond the same run without it",
            "figure": f"{lock_extra:+.0f} ms",
            "target": f"<= {LOCKED_RUN_EXTRA_TARGET_MS:g} ms",
            "met": lock_extra <= LOCKED_RUN_EXTRA_TARGET_MS,
        },
    ]


def report(results: Results) -> str:
    def row(label: str, figure: str) -> str:
        return f"{label:<52} {figure}"

    get_run = results.get_run_ms
    megabytes = results.get_run_bytes / 1e6
    lines = [
        row(
            f"getRun of a {results.records:,}-record run",
            f"median {statistics.median(get_run):8.1f} ms   max {max(get_run):8.1f} ms",
        ),
        row(
            "ping alone",
            f"median {results.ping_alone_ms['median']:8.1f} ms   "
            f"max {results.ping_alone_ms['max']:8.1f} ms",
        ),
        row(
            "pings answered while getRun was served",
            f"median {results.median_ping_during_get_run_ms:8.1f} ms   "
            f"max {results.longest_ping_during_get_run_ms:8.1f} ms   "
            f"({results.pings_during_get_run} pings)",
        ),
        row(
            f"longest ping behind getRun's result ({megabytes:.0f} MB)",
            f"{results.longest_ping_behind_get_run_ms:8.1f} ms   "
            f"({results.pings_behind_get_run} pings)",
        ),
        row("run, no lock held", f"{results.run_unlocked_ms:8.1f} ms"),
        row(
            f"run, another process holding the lock {results.lock_hold_s:g} s",
            f"{results.run_locked_ms:8.1f} ms",
        ),
        row(
            "longest ping while the lock is held",
            f"{results.longest_ping_during_lock_ms:8.1f} ms   ({results.pings_during_lock} pings)",
        ),
        row("records of the locked run, after the release", str(results.records_after_release)),
        row(
            "load average (1 min), before and after",
            " / ".join(f"{load:.1f}" for load in results.load_average),
        ),
        "",
    ]
    for verdict in results.verdicts:
        tag = "PASS" if verdict["met"] else "MISS"
        lines.append(f"{tag} {verdict['name']}: {verdict['figure']} (target {verdict['target']})")
    return "\n".join(lines)


async def measure(plan: Plan) -> Results:
    results = Results(records=plan.records)
    results.load_average.append(os.getloadavg()[0])
    with workspace() as ws:
        write_big_run(ws.history, plan.records)
        client = await started(ws)
        try:
            await measure_get_run(client, plan, results)
            await measure_lock(client, ws, plan, results)
        finally:
            await client.stop()
    results.load_average.append(os.getloadavg()[0])
    results.verdicts = verdicts(results)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--quick", action="store_true", help="tiny sizes (a smoke test)")
    args = parser.parse_args(argv)
    results = asyncio.run(measure(QUICK if args.quick else FULL))
    print(json.dumps(asdict(results), indent=2) if args.json else report(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
