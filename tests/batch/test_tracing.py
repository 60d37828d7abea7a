"""OpenTelemetry spans of runs, received by a real OTLP/HTTP receiver (protobuf decoded)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from support.otlp_receiver import TWO_CALLS, check_run_tree, otlp_receiver

pytest.importorskip("opentelemetry.sdk")


def environment(endpoint: str, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", None)
    env.update(OTEL_EXPORTER_OTLP_ENDPOINT=endpoint, OTEL_BSP_SCHEDULE_DELAY="50", **extra)
    return env


def test_a_batch_is_one_trace_with_a_span_per_task(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "secret.txt").write_text("the file's content\n")
    (tmp_path / "two.json").write_text(json.dumps(TWO_CALLS))
    suite = tmp_path / "traced.yaml"
    suite.write_text(
        "tasks:\n"
        + "".join(
            f"  - id: t{i}\n    workspace: project\n    prompt: Read the secret\n"
            "    provider: replay\n    replay_script: two.json\n    check: 'true'\n"
            for i in range(2)
        )
    )
    with otlp_receiver() as (endpoint, receiver):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "cleveragents",
                "batch",
                str(suite),
                "--json",
                "--history",
                str(tmp_path / "h.sqlite3"),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            env=environment(endpoint),
        )
        assert done.returncode == 0, done.stderr
    spans = receiver.spans
    [batch] = [s for s in spans if s.name == "batch traced"]
    assert batch.parent_span_id == b""
    assert {s.trace_id for s in spans} == {batch.trace_id}
    tasks = [s for s in spans if s.parent_span_id == batch.span_id]
    assert sorted(s.name for s in tasks) == ["batch task t0@default", "batch task t1@default"]
    for task in tasks:
        [run] = [s for s in spans if s.parent_span_id == task.span_id]
        check_run_tree(spans, run)
    # Contents are not exported unless asked for.
    exported = json.dumps([s.attributes for s in spans], default=str)
    assert "Read the secret" not in exported and "the file's content" not in exported


def test_contents_are_exported_when_a_setting_says_so(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "secret.txt").write_text("the file's content\n")
    script = tmp_path / "two.json"
    script.write_text(json.dumps(TWO_CALLS))
    with otlp_receiver() as (endpoint, receiver):
        suite = tmp_path / "one.yaml"
        suite.write_text(
            "tasks:\n  - id: only\n    workspace: project\n    prompt: Read the secret\n"
            "    provider: replay\n    replay_script: two.json\n    check: 'true'\n"
        )
        env = environment(endpoint, OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="true")
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "cleveragents",
                "batch",
                str(suite),
                "--history",
                str(tmp_path / "h.sqlite3"),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        assert done.returncode == 0, done.stderr
    [run] = [
        s for s in receiver.spans if s.attributes.get("gen_ai.operation.name") == "invoke_agent"
    ]
    check_run_tree(receiver.spans, run)
    assert "Read the secret" in run.attributes["gen_ai.input.messages"]
    results = [s.attributes.get("gen_ai.tool.call.result", "") for s in receiver.spans]
    assert any("the file's content" in r for r in results)
