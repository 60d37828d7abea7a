"""Workspace checkpoints on a 10,000-file folder: snapshot, diff and restore times, disk used.

Builds a folder of N small source-like files (100 per sub-folder, one in ten executable, a
`.gitignore`d build folder beside them), then times, with a fresh checkpoint store each
round:

- **first snapshot**: every file hashed into the shadow repository;
- **no-change snapshot**: the same folder again (git's stat cache: nothing read, no object);
- **incremental snapshot**: 10 files edited first;
- **diff to now**: what changed since the first checkpoint (the "changed files" of a run);
- **restore**: back to the first checkpoint, after 10 edits, 5 new files and 5 deletions
  (a snapshot of the state before the restore included, as a restore always takes one);

and reports the disk the store takes after those snapshots, before and after a prune packs
it. Wall clock, median over rounds.

Then, **against plain git on the same tree** (10,000 and 100,000 files by default: `--sizes`),
each side with its own index, in alternating order:

- the first snapshot vs git's first `git add -A && git write-tree` (a fresh index);
- the unchanged snapshot vs git's no-change `git add -A && git write-tree`;
- a one-edit snapshot vs git's `git add -A && git write-tree` after one edit;

and prints each ratio with PASS/MISS against 1.5x (issue 21: checkpoints at git speed).

    python bench/checkpoint_bench.py            # table and PASS/MISS lines
    python bench/checkpoint_bench.py --json     # machine-readable results
    python bench/checkpoint_bench.py --quick    # 500 files, 1 round (smoke test)
    python bench/checkpoint_bench.py --sizes 100000 --git-rounds 4

A bench reports; it never fails the build: the exit status is 0 unless something crashes.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from cleveragents.service.checkpoints import CheckpointStore

FILES_PER_FOLDER = 100
CHANGED = 10
# Targets: a snapshot is taken before the first mutating tool call of an iteration, so the
# incremental and no-change cases add to the user's wait; a restore is a user action.
TARGETS_MS = {
    "no-change snapshot": 300.0,
    "incremental snapshot": 500.0,
    "restore": 2000.0,
    "first snapshot": 10000.0,
}


def build_workspace(root: Path, files: int) -> None:
    (root / ".gitignore").write_text("build/\n*.pyc\n")
    for i in range(files):
        folder = root / f"pkg{i // FILES_PER_FOLDER:03d}"
        folder.mkdir(exist_ok=True)
        path = folder / f"module{i % FILES_PER_FOLDER:03d}.py"
        body = f"# module {i}\n" + "".join(
            f"def function_{i}_{n}(x):\n    return x * {n} + {i}\n\n" for n in range(20)
        )
        path.write_text(body)
        if i % 10 == 0:
            path.chmod(0o755)
    build = root / "build"
    build.mkdir()
    for i in range(50):
        (build / f"artifact{i}.o").write_bytes(os.urandom(4096))


def edit_files(root: Path, files: int, tag: str) -> None:
    """Append a line to CHANGED files spread over the folder."""
    for i in range(CHANGED):
        index = i * (files // CHANGED)
        folder, module = divmod(index, FILES_PER_FOLDER)
        with (root / f"pkg{folder:03d}" / f"module{module:03d}.py").open("a") as handle:
            handle.write(f"# edited {tag}\n")


GIT_RATIO_LIMIT = 1.5


class PlainGit:
    """Plain git on the same folder: its own repository and index, no user config."""

    def __init__(self, home: Path, work_tree: Path) -> None:
        self.home = home
        self.git_dir = home / "plain.git"
        self.index = home / "plain.index"
        self.work_tree = work_tree
        self.env = {
            "PATH": os.environ.get("PATH", os.defpath),
            "HOME": str(home),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_DIR": str(self.git_dir),
            "GIT_WORK_TREE": str(work_tree),
            "GIT_INDEX_FILE": str(self.index),
        }
        home.mkdir(parents=True, exist_ok=True)
        bare = {k: v for k, v in self.env.items() if not k.startswith("GIT_") or "CONFIG" in k}
        subprocess.run(["git", "init", "-q", "--bare", str(self.git_dir)], env=bare, check=True)
        self._git("config", "core.bare", "false")

    def _git(self, *args: str) -> str:
        done = subprocess.run(
            ["git", *args],
            cwd=self.work_tree,
            env=self.env,
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout

    def add_and_write_tree(self) -> str:
        """What the issue measures: `git add -A && git write-tree`, two processes."""
        self._git("add", "-A")
        return self._git("write-tree").strip()

    def fresh(self) -> None:
        self.index.unlink(missing_ok=True)


def vs_git(workdir: Path, files: int, rounds: int) -> dict[str, Any]:
    """Our snapshots against plain git's add/write-tree on the same tree, interleaved."""
    sandbox = workdir / f"vs-git-{files}"
    sandbox.mkdir()
    build_workspace(sandbox, files)
    settle(sandbox)
    ours_ms: dict[str, list[float]] = {name: [] for name in _VS_GIT_CASES}
    git_ms: dict[str, list[float]] = {name: [] for name in _VS_GIT_CASES}
    for round_no in range(rounds):
        store = CheckpointStore(workdir / f"vs-git-data-{files}-{round_no}")
        plain = PlainGit(workdir / f"vs-git-plain-{files}-{round_no}", sandbox)
        plain.fresh()
        ours_first = round_no % 2 == 0  # alternate who reads the tree first
        sides: list[tuple[dict[str, list[float]], Callable[[], Any]]] = [
            (ours_ms, partial(store.snapshot, sandbox, "bench", 1)),
            (git_ms, plain.add_and_write_tree),
        ]
        order = sides if ours_first else sides[::-1]
        for name in ("first snapshot", "unchanged snapshot"):
            for table, action in order:
                table[name].append(timed(action)[0])
        target = sandbox / "pkg000" / "module000.py"
        for table, action in order:
            with target.open("a") as handle:  # one edit before each side's turn
                handle.write(f"# one edit, round {round_no}\n")
            table["one-edit snapshot"].append(timed(action)[0])
        # Both see the same tree (git's view of the folder).
        assert store.snapshot(sandbox, "bench", 2).tree == plain.add_and_write_tree(), "differ"
    rows = []
    for name in _VS_GIT_CASES:
        ours = statistics.median(ours_ms[name])
        git = statistics.median(git_ms[name])
        ratio = ours / git if git > 0 else float("inf")
        rows.append(
            {
                "case": name,
                "files": files,
                "ours_ms": ours,
                "git_ms": git,
                "ratio": ratio,
                "limit": GIT_RATIO_LIMIT,
                "met": ratio <= GIT_RATIO_LIMIT,
                "git_does": _VS_GIT_CASES[name],
            }
        )
    shutil.rmtree(sandbox)
    return {"files": files, "rounds": rounds, "rows": rows}


def settle(root: Path) -> None:
    """Flush the new tree to disk and read it once: neither side then pays for the other's
    writeback or a cold cache (whoever went first used to)."""
    os.sync()
    for folder, _dirs, names in os.walk(root):
        for name in names:
            Path(folder, name).read_bytes()


_VS_GIT_CASES = {
    "first snapshot": "first git add -A && git write-tree",
    "unchanged snapshot": "no-change git add -A && git write-tree",
    "one-edit snapshot": "git add -A && git write-tree after one edit",
}


def timed(action: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    value = action()
    return (time.perf_counter() - started) * 1000.0, value


def one_round(workdir: Path, files: int, round_no: int) -> dict[str, Any]:
    sandbox = workdir / f"workspace{round_no}"
    sandbox.mkdir()
    build_workspace(sandbox, files)
    store = CheckpointStore(workdir / f"data{round_no}")
    ms: dict[str, float] = {}
    ms["first snapshot"], first = timed(lambda: store.snapshot(sandbox, "bench", 1))
    ms["no-change snapshot"], same = timed(lambda: store.snapshot(sandbox, "bench", 2))
    assert same.tree == first.tree
    edit_files(sandbox, files, "a")
    ms["incremental snapshot"], _ = timed(lambda: store.snapshot(sandbox, "bench", 3))
    edit_files(sandbox, files, "b")
    for i in range(5):
        (sandbox / f"new{i}.py").write_text(f"NEW = {i}\n")
        (sandbox / f"pkg{i:03d}" / "module001.py").unlink()
    ms["diff to now"], changes = timed(lambda: store.diff(sandbox, first))
    assert len(changes) == CHANGED + 10, changes
    ms["restore"], result = timed(lambda: store.restore(sandbox, first))
    assert len(result.changed_files) == CHANGED + 10
    disk_before = store.disk_usage().total_bytes
    ms["prune (pack)"], pruned = timed(lambda: store.prune())
    workspace_bytes = sum(
        p.stat().st_size for p in sandbox.rglob("*") if p.is_file() and "build" not in p.parts
    )
    shutil.rmtree(sandbox)
    return {
        "ms": ms,
        "workspace_bytes": workspace_bytes,
        "store_bytes_loose": disk_before,
        "store_bytes_packed": pruned.bytes_after,
        "git": store.git_version,
    }


def report(
    files: int, rounds: int, sizes: list[int] | None = None, git_rounds: int = 1
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="checkpoint-bench-") as temp:
        results = [one_round(Path(temp), files, n) for n in range(rounds)]
        compared = [vs_git(Path(temp), size, git_rounds) for size in sizes or []]
    names = list(results[0]["ms"])
    rows = [
        {
            "step": name,
            "median_ms": statistics.median(r["ms"][name] for r in results),
            "min_ms": min(r["ms"][name] for r in results),
            "max_ms": max(r["ms"][name] for r in results),
        }
        for name in names
    ]
    medians = {row["step"]: row["median_ms"] for row in rows}
    verdicts = [
        {
            "label": f"{name}, {files} files",
            "value": medians[name],
            "limit": limit,
            "met": medians[name] <= limit,
        }
        for name, limit in TARGETS_MS.items()
    ]
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {
        "environment": {
            "python": platform.python_version(),
            "git": results[0]["git"],
            "cpus": os.cpu_count(),
            "load_average": list(load) if load else None,
            "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        },
        "files": files,
        "rounds": rounds,
        "rows": rows,
        "workspace_bytes": results[0]["workspace_bytes"],
        "store_bytes_loose": statistics.median(r["store_bytes_loose"] for r in results),
        "store_bytes_packed": statistics.median(r["store_bytes_packed"] for r in results),
        "verdicts": verdicts,
        "vs_git": compared,
    }


def render_table(result: dict[str, Any]) -> str:
    env = result["environment"]
    load = env["load_average"]
    lines = [
        f"Checkpoints: {result['files']} files, {result['rounds']} round(s), {env['git']},"
        f" Python {env['python']}, {env['cpus']} CPUs"
        + (f", load {load[0]:.2f}" if load else "")
        + f", {env['date']}",
        "",
        f"{'step':<24} {'median ms':>10} {'min ms':>9} {'max ms':>9}",
    ]
    for row in result["rows"]:
        lines.append(
            f"{row['step']:<24} {row['median_ms']:>10.1f} {row['min_ms']:>9.1f}"
            f" {row['max_ms']:>9.1f}"
        )
    mib = 1024 * 1024
    lines += [
        "",
        f"workspace (not ignored)   {result['workspace_bytes'] / mib:8.1f} MiB",
        f"store after 4 snapshots   {result['store_bytes_loose'] / mib:8.1f} MiB (loose objects)",
        f"store after a prune       {result['store_bytes_packed'] / mib:8.1f} MiB (packed)",
        "",
    ]
    for verdict in result["verdicts"]:
        lines.append(
            f"{'PASS' if verdict['met'] else 'MISS'}  {verdict['label']}:"
            f" {verdict['value']:.0f} ms (target <= {verdict['limit']:g} ms)"
        )
    for compared in result["vs_git"]:
        lines += [
            "",
            f"Against plain git, {compared['files']} files, {compared['rounds']} round(s):",
            f"{'case':<22} {'ours ms':>9} {'git ms':>9} {'ratio':>6}  git does",
        ]
        for row in compared["rows"]:
            lines.append(
                f"{row['case']:<22} {row['ours_ms']:>9.1f} {row['git_ms']:>9.1f}"
                f" {row['ratio']:>5.2f}x  {row['git_does']}"
            )
        for row in compared["rows"]:
            lines.append(
                f"{'PASS' if row['met'] else 'MISS'}  {row['case']}, {row['files']} files:"
                f" {row['ratio']:.2f}x git (target <= {row['limit']:g}x)"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="500 files, 1 round (smoke test)")
    parser.add_argument("--files", type=int, default=10_000, help="files (default 10000)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (default 3)")
    parser.add_argument("--json", action="store_true", help="print machine-readable results")
    parser.add_argument(
        "--sizes",
        type=int,
        nargs="*",
        default=[10_000, 100_000],
        help="files of the trees compared with plain git (default 10000 100000; none: skip)",
    )
    parser.add_argument(
        "--git-rounds",
        type=int,
        default=2,
        help="rounds of the comparison with git, each side first in turn (default 2)",
    )
    args = parser.parse_args(argv)
    files, rounds = (500, 1) if args.quick else (args.files, args.rounds)
    sizes = [500] if args.quick else args.sizes
    if files < 10 * FILES_PER_FOLDER // 2 or rounds < 1 or args.git_rounds < 1:
        parser.error("--files must be at least 500, --rounds and --git-rounds at least 1")
    if any(size < 10 * FILES_PER_FOLDER // 2 for size in sizes):
        parser.error("--sizes must each be at least 500")
    result = report(files, rounds, sizes, 1 if args.quick else args.git_rounds)
    print(json.dumps(result, indent=2) if args.json else render_table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
