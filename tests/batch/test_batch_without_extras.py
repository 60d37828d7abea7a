"""Without the `ray` and `otel` extras the package still imports and batches still run:
tracing is off (with one warning when an endpoint is set), `--ray` says what to install."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

# Runs the CLI with `ray` and `opentelemetry` unimportable, as on a machine without the extras.
WITHOUT_EXTRAS = """
import sys

class Missing:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("ray", "opentelemetry"):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return None

sys.meta_path.insert(0, Missing())
from cleveragents.cli import main
sys.exit(main(sys.argv[1:]))
"""


def cli(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_EXTRAS, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )


def test_a_batch_runs_without_ray_or_opentelemetry(tmp_path: Path) -> None:
    (tmp_path / "project").mkdir()
    suite = tmp_path / "plain.yaml"
    suite.write_text(
        "tasks:\n  - id: t\n    workspace: project\n    prompt: Look\n    provider: offline\n"
        "    profile: read-only\n    check: 'true'\n"
    )
    history = str(tmp_path / "h.sqlite3")
    done = cli(tmp_path, "batch", str(suite), "--history", history, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["totals"]["passed"] == 1
    assert "pip install 'cleveragents[otel]'" in done.stderr
    on_ray = cli(tmp_path, "batch", str(suite), "--history", history, "--ray", "--rerun")
    assert on_ray.returncode == 1
    assert "--ray needs Ray: pip install 'cleveragents[ray]'" in on_ray.stderr
