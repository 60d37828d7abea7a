"""Cold import time of `cleveragents.tool`, and which heavy packages the import pulls in.

Runs `python -c "import cleveragents.tool"` in fresh subprocesses, interleaved with
`python -c pass` (the interpreter's own start-up) so both see the same machine load, and
reports wall-clock milliseconds: median, min and max, and the import's share (the difference
of the medians). Then checks, in one more fresh interpreter, whether the import loaded the
provider SDKs (it must not) or jsonschema and rich (loaded lazily, when first needed).

    python bench/import_time.py            # table and PASS/MISS lines
    python bench/import_time.py --json     # machine-readable results

A bench reports; it never fails the build: the exit status is 0 unless something crashes.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any

MODULE = "cleveragents.tool"
TARGET_MS = 150.0
PROVIDER_SDKS = ("anthropic", "openai")
LAZY_PACKAGES = ("jsonschema", "rich")
IMPORT_CODE = f"import {MODULE}"
BASELINE_CODE = "pass"


def wall_ms(python: str, code: str) -> float:
    started = time.perf_counter()
    subprocess.run([python, "-c", code], check=True)
    return (time.perf_counter() - started) * 1000.0


@dataclass(slots=True)
class Timing:
    command: str
    samples_ms: list[float]

    def summary(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "runs": len(self.samples_ms),
            "median_ms": statistics.median(self.samples_ms),
            "min_ms": min(self.samples_ms),
            "max_ms": max(self.samples_ms),
        }


def measure(python: str, runs: int) -> tuple[Timing, Timing]:
    wall_ms(python, IMPORT_CODE)  # warm the OS file cache and the bytecode cache once
    imported = Timing(f'python -c "{IMPORT_CODE}"', [])
    baseline = Timing(f'python -c "{BASELINE_CODE}"', [])
    for _ in range(runs):
        imported.samples_ms.append(wall_ms(python, IMPORT_CODE))
        baseline.samples_ms.append(wall_ms(python, BASELINE_CODE))
    return imported, baseline


def loaded_packages(python: str) -> dict[str, bool]:
    """Which of the watched packages are in sys.modules right after the import."""
    watched = (*PROVIDER_SDKS, *LAZY_PACKAGES)
    code = (
        f"import json, sys, {MODULE}; "
        f"print(json.dumps({{m: m in sys.modules for m in {watched!r}}}))"
    )
    output = subprocess.run([python, "-c", code], check=True, capture_output=True, text=True)
    loaded: dict[str, bool] = json.loads(output.stdout)
    return loaded


def import_time_by_package(python: str, runs: int, count: int) -> list[tuple[str, float]]:
    """Self time under `-X importtime`, summed by top-level package, median over runs (ms)."""
    per_package: dict[str, list[float]] = {}
    for _ in range(runs):
        output = subprocess.run(
            [python, "-X", "importtime", "-c", IMPORT_CODE],
            check=True,
            capture_output=True,
            text=True,
        )
        totals: dict[str, float] = {}
        for line in output.stderr.splitlines():
            # "import time: self [us] | cumulative | imported package"
            if not line.startswith("import time:") or "[us]" in line:
                continue
            self_us, _cumulative, name = line.removeprefix("import time:").split("|", 2)
            package = name.strip().split(".")[0]
            totals[package] = totals.get(package, 0.0) + int(self_us) / 1000.0
        for package, total in totals.items():
            per_package.setdefault(package, []).append(total)
    # A package missing from some runs counts as 0 there.
    medians = [
        (package, statistics.median(times + [0.0] * (runs - len(times))))
        for package, times in per_package.items()
    ]
    medians.sort(key=lambda item: item[1], reverse=True)
    return medians[:count]


def report(python: str, runs: int, profile_runs: int) -> dict[str, Any]:
    imported, baseline = measure(python, runs)
    import_summary = imported.summary()
    baseline_summary = baseline.summary()
    loaded = loaded_packages(python)
    share = import_summary["median_ms"] - baseline_summary["median_ms"]
    sdks = [name for name in PROVIDER_SDKS if loaded[name]]
    return {
        "environment": {
            "python": platform.python_version(),
            "executable": python,
            "cpus": os.cpu_count(),
            "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
            "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        },
        "import": import_summary,
        "baseline": baseline_summary,
        "import_share_ms": share,
        "loaded": loaded,
        "self_ms_by_package": import_time_by_package(python, profile_runs, 10),
        "verdicts": [
            {
                "label": f"median wall time of {imported.command}",
                "value": import_summary["median_ms"],
                "limit": TARGET_MS,
                "met": import_summary["median_ms"] < TARGET_MS,
            },
            {
                "label": f"importing {MODULE} loads no provider SDK",
                "value": sdks,
                "limit": [],
                "met": not sdks,
            },
        ],
    }


def render_table(result: dict[str, Any]) -> str:
    env = result["environment"]
    load = env["load_average"]
    lines = [
        f"Import time: Python {env['python']} ({env['executable']}), {env['cpus']} CPUs"
        + (f", load {load[0]:.2f}" if load else "")
        + f", {env['date']}",
        "Fresh subprocess per run, wall clock, the two commands interleaved.",
        "",
        f"{'command':<40} {'runs':>4} {'median ms':>10} {'min ms':>8} {'max ms':>8}",
    ]
    for key in ("import", "baseline"):
        row = result[key]
        lines.append(
            f"{row['command']:<40} {row['runs']:>4} {row['median_ms']:>10.1f}"
            f" {row['min_ms']:>8.1f} {row['max_ms']:>8.1f}"
        )
    share_label = "import share (difference of medians)"
    lines.append(f"{share_label:<40} {'':>4} {result['import_share_ms']:>10.1f}")
    lines.append("")
    lines.append(f"loaded by `import {MODULE}`:")
    for name, was_loaded in result["loaded"].items():
        kind = "provider SDK" if name in PROVIDER_SDKS else "loaded lazily when first used"
        lines.append(f"  {name:<11} {'yes' if was_loaded else 'no ':<4} ({kind})")
    lines.append("")
    lines.append("where the import time goes (-X importtime self time by top-level package, ms):")
    for package, self_ms in result["self_ms_by_package"]:
        lines.append(f"  {self_ms:>7.1f}  {package}")
    lines.append("")
    first, second = result["verdicts"]
    lines.append(
        f"{'PASS' if first['met'] else 'MISS'}  {first['label']}: {first['value']:.1f} ms"
        f" (target < {first['limit']:g} ms)"
    )
    loaded_sdks = ", ".join(second["value"]) or "none"
    lines.append(
        f"{'PASS' if second['met'] else 'MISS'}  {second['label']} (loaded: {loaded_sdks})"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="3 runs each (smoke test)")
    parser.add_argument("--runs", type=int, default=15, help="runs of each command (default 15)")
    parser.add_argument("--json", action="store_true", help="print machine-readable results")
    parser.add_argument(
        "--python", default=sys.executable, help="interpreter to time (default: this one)"
    )
    args = parser.parse_args(argv)
    runs = 3 if args.quick else args.runs
    if runs < 1:
        parser.error("--runs must be at least 1")
    result = report(args.python, runs, profile_runs=1 if args.quick else 5)
    print(json.dumps(result, indent=2) if args.json else render_table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
