"""`cleveragents run` is traced like every front's run (it goes through the core's pipeline):
the spans of a run with two tool calls reach a real OTLP/HTTP receiver before the CLI exits."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk")

from support.otlp_receiver import TWO_CALLS, check_run_tree, otlp_receiver


def test_a_cli_run_with_two_tool_calls_is_traced(tmp_path: Path) -> None:
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    (sandbox / "secret.txt").write_text("the file's content\n")
    script = tmp_path / "script.json"
    script.write_text(json.dumps(TWO_CALLS))
    with otlp_receiver() as (endpoint, receiver):
        env = {
            **os.environ,
            "CLEVERAGENTS_PROVIDER": "",
            "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
            "OTEL_BSP_SCHEDULE_DELAY": "50",
        }
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "cleveragents",
                "run",
                "Read the secret",
                "--sandbox",
                str(sandbox),
                "--provider",
                "replay",
                "--script",
                str(script),
                "--profile",
                "full-auto",
                "--history",
                str(tmp_path / "history.sqlite3"),
                "--json",
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        # The CLI has exited: what it exported is all there will be.
        spans = list(receiver.spans)
    result = json.loads(done.stdout)
    [run] = [s for s in spans if s.attributes["gen_ai.operation.name"] == "invoke_agent"]
    assert run.parent_span_id == b""
    assert run.attributes["cleveragents.run_id"] == result["runId"]
    assert run.attributes["gen_ai.request.model"] == "claude-haiku-4-5"
    check_run_tree(spans, run)
    # Contents are not exported unless asked for.
    assert not any("the file's content" in json.dumps(s.attributes, default=str) for s in spans)
