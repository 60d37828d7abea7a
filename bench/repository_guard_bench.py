"""The repository guard's cost per command on a large tree (100,000 files by default).

Builds a folder of N small files (10 per leaf folder by default, folders 3 deep), a git
repository at its root with one commit, a `node_modules` of a tenth of the files, and times
(`workspace/repository_guard.py`):

- **first scan**: every folder listed (a daemon's first command in that sandbox);
- **later scan**: nothing changed since (each folder only stat'ed: ctime unchanged);
- **around a command**: a later scan before, the command's changes (10 new files in 10
  folders, one new nested repository with a hook), a scan after that finds and diffs what
  it wrote.

Each figure is the median over rounds, wall clock, with the folder in the page cache (a cold
disk adds its reads, as it would to `git status`).

    python bench/repository_guard_bench.py             # 100,000 files, 5 rounds
    python bench/repository_guard_bench.py --json
    python bench/repository_guard_bench.py --quick     # 2,000 files, 1 round (smoke test)

A bench reports; it never fails the build: the exit status is 0 unless something crashes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from cleveragents.workspace import repository_guard
from cleveragents.workspace.repository_guard import RepositoryGuard

GIT = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid"]


def build(root: Path, files: int, per_folder: int) -> int:
    """N files, `per_folder` per folder, folders 3 deep; a tenth of them in node_modules.
    Returns the number of leaf folders."""
    folders = 0
    for index in range(0, files, per_folder):
        group = index // per_folder
        top = "node_modules" if group % 10 == 0 else "src"
        folder = root / top / f"a{group % 7}" / f"b{group % 13}" / f"c{group}"
        folder.mkdir(parents=True, exist_ok=True)
        folders += 1
        for number in range(min(per_folder, files - index)):
            (folder / f"f{number}.txt").write_bytes(b"x\n")
    subprocess.run([*GIT, "init", "-q"], cwd=root, check=True)
    subprocess.run([*GIT, "add", "-A"], cwd=root, check=True)
    subprocess.run([*GIT, "commit", "-q", "-m", "bench"], cwd=root, check=True)
    return folders


def forget(root: Path) -> None:
    """Drop the guard's memory of this tree: the next scan is a first one."""
    with repository_guard._trees_lock:
        repository_guard._trees.pop(os.path.realpath(root), None)


def timed(action: object) -> float:
    started = time.perf_counter()
    action()  # type: ignore[operator]
    return time.perf_counter() - started


def run(files: int, rounds: int, per_folder: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="cleveragents-guard-bench-") as folder:
        root = Path(folder)
        folders = build(root, files, per_folder)
        guard = RepositoryGuard(str(root))
        first, later, around = [], [], []
        found = 0
        for number in range(rounds):
            forget(root)
            first.append(timed(guard.scan))
            time.sleep(2.1)  # past the racy window: folders are trusted from now on
            guard.scan()
            later.append(timed(guard.scan))
            before = guard.scan()

            def command(step: int = number) -> None:
                for index in range(10):
                    target = root / "src" / f"a{index % 7}" / f"new{step}_{index}.txt"
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_text("new\n")
                nested = root / "src" / f"nested{step}"
                nested.mkdir()
                subprocess.run(["git", "init", "-q"], cwd=nested, check=True)
                (nested / ".git" / "hooks" / "pre-commit").write_text("#!/bin/sh\n")

            command()
            started = time.perf_counter()
            changes, _ = guard.changes_since(before)
            around.append(time.perf_counter() - started)
            found = len(changes)
            shutil.rmtree(root / "src" / f"nested{number}")
    return {
        "files": files,
        "folders": folders,
        "rounds": rounds,
        "first_scan_s": statistics.median(first),
        "later_scan_s": statistics.median(later),
        "scan_after_a_command_s": statistics.median(around),
        "protected_writes_found_per_round": found,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--per-folder", type=int, default=10, help="files per leaf folder")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    files, rounds = (2_000, 1) if options.quick else (options.files, options.rounds)
    result = run(files, rounds, options.per_folder)
    if options.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"repository guard, {result['files']:,} files in {result['folders']:,} leaf folders")
    for key, label in (
        ("first_scan_s", "first scan"),
        ("later_scan_s", "later scan, nothing changed"),
        ("scan_after_a_command_s", "scan and diff after a command"),
    ):
        value = result[key]
        assert isinstance(value, float)
        print(f"  {label:32} {value * 1000:8.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
