"""What the sweep after an unconfined command costs, with many processes on the machine.

Each round starts a real command tree the way run_command does (a shell leading its own
session, tagged in its environment) that daemonises a grandchild (double fork, `setsid`,
sleeping), then times one sweep that must kill it:

- full scan: `sweep_by_environment`, reading `/proc/*/environ` of every process (the fallback,
  and what every unconfined command paid before);
- subreaper walk: `sweep_descendants`, the daemon as child subreaper walking
  `/proc/PID/task/*/children` from the shell and its adopted orphans;
- cgroup: the command's own cgroup killed through `cgroup.procs` (where the daemon can make one).

Other processes are filled up to `--processes` first (sleepers under a parent of their own, not
the bench's children), so the scan has a machine's worth to read. Prints a table and the ratio;
no target, it never fails.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

from cleveragents.workspace.cgroups import CommandCgroup
from cleveragents.workspace.command_policy import COMMAND_TAG_VARIABLE
from cleveragents.workspace.process_sweep import (
    become_subreaper,
    sweep_by_environment,
    sweep_descendants,
)


def process_count() -> int:
    return sum(name.isdigit() for name in os.listdir("/proc"))


def fill_processes(total: int) -> subprocess.Popen[bytes] | None:
    """Sleepers under one parent of their own until the machine runs about `total` processes."""
    missing = total - process_count()
    if missing <= 0:
        return None
    filler = subprocess.Popen(
        ["bash", "-c", f"for i in $(seq {missing}); do sleep 600 & done; wait"],
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while process_count() < total and time.monotonic() < deadline:
        time.sleep(0.05)
    return filler


def start_command(folder: str, tag: str, procs_files: list[str]) -> tuple[int, str]:
    """A tagged shell (own session) that daemonises a sleeping grandchild; returns (pid, ready)."""
    ready = os.path.join(folder, secrets.token_hex(6))
    join = "".join(f"echo $$ > {procs}; " for procs in procs_files)
    script = (
        f"{join}( setsid bash -c 'touch {ready}; exec sleep 600' < /dev/null > /dev/null 2>&1 & ); "
        "sleep 600"
    )
    shell = subprocess.Popen(
        ["bash", "-c", script],
        env={**os.environ, COMMAND_TAG_VARIABLE: tag},
        start_new_session=True,
    )
    deadline = time.monotonic() + 30
    while not os.path.exists(ready) and time.monotonic() < deadline:
        time.sleep(0.005)
    return shell.pid, ready


def measure(rounds: int, sweep: Callable[[int, str, CommandCgroup | None], int]) -> list[float]:
    """Milliseconds per sweep; `sweep` returns how many processes it killed (at least 1)."""
    times: list[float] = []
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(rounds):
            tag = secrets.token_hex(16)
            cgroup = CommandCgroup.create(tag, None, None) if sweep is sweep_cgroup else None
            pid, _ = start_command(folder, tag, cgroup.procs_files if cgroup else [])
            start = time.perf_counter()
            killed = sweep(pid, tag, cgroup)
            times.append((time.perf_counter() - start) * 1000)
            os.killpg(pid, 9)
            os.waitpid(pid, 0)
            if cgroup is not None:
                asyncio.run(cgroup.destroy())
            if killed < 1:
                raise SystemExit("a sweep killed nothing: the grandchild escaped")
    return times


def sweep_full_scan(pid: int, tag: str, cgroup: CommandCgroup | None) -> int:
    return len(sweep_by_environment(tag))


def sweep_subreaper(pid: int, tag: str, cgroup: CommandCgroup | None) -> int:
    return len(sweep_descendants(pid, tag))


def sweep_cgroup(pid: int, tag: str, cgroup: CommandCgroup | None) -> int:
    assert cgroup is not None
    found = len(cgroup.pids())
    cgroup.kill_all()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few rounds, few processes")
    parser.add_argument("--processes", type=int, default=None, help="fill the machine to this")
    parser.add_argument("--rounds", type=int, default=None)
    args = parser.parse_args()
    if not sys.platform.startswith("linux"):
        raise SystemExit("the sweep walks /proc: Linux only")
    total = args.processes or (150 if args.quick else 600)
    rounds = args.rounds or (3 if args.quick else 20)
    if not become_subreaper():
        raise SystemExit("this kernel has no PR_SET_CHILD_SUBREAPER or no children files")
    filler = fill_processes(total)
    try:
        print(f"processes on the machine: {process_count()}; {rounds} rounds each")
        print(f"{'sweep':<40} {'median ms':>10} {'min ms':>8} {'max ms':>8}")
        rows = [
            ("full scan of /proc/*/environ (before)", sweep_full_scan),
            ("subreaper walk from the shell (after)", sweep_subreaper),
        ]
        probe = CommandCgroup.create(secrets.token_hex(8), None, None)
        if probe is not None:
            asyncio.run(probe.destroy())
            rows.append(("the command's cgroup (after)", sweep_cgroup))
        medians: dict[str, float] = {}
        for label, sweep in rows:
            times = measure(rounds, sweep)
            medians[label] = statistics.median(times)
            print(f"{label:<40} {medians[label]:>10.2f} {min(times):>8.2f} {max(times):>8.2f}")
        if probe is None:
            print("the command's cgroup: not available here (no writable cgroup)")
        before = medians[rows[0][0]]
        for label, _ in rows[1:]:
            print(f"INFO {label}: {medians[label] / before:.3f}x the full scan")
    finally:
        if filler is not None:
            os.killpg(filler.pid, 9)
            filler.wait()


if __name__ == "__main__":
    main()
