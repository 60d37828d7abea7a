"""`cleveragents batch --ray` on a real local Ray cluster: the same results as the local
executor, task by task; a worker killed mid-task is retried once and says so."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cleveragents.cli import main
from cleveragents.service.history import RunHistory
from support.batch_suite import EXPECTED, build_suite, comparable
from support.otlp_receiver import Receiver, otlp_receiver

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def cluster() -> Iterator[Receiver | None]:
    """A local Ray cluster; with OpenTelemetry installed, it and this process export spans to
    a real OTLP receiver (the workers inherit the endpoint)."""
    os.environ.pop("RAY_ADDRESS", None)
    with contextlib.ExitStack() as stack:
        receiver = None
        if importlib.util.find_spec("opentelemetry.sdk") is not None:
            endpoint, receiver = stack.enter_context(otlp_receiver())
            patch = stack.enter_context(pytest.MonkeyPatch.context())
            patch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
            patch.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        try:
            yield receiver
        finally:
            ray.shutdown()


def batch(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    code = main(["batch", *argv, "--json"])
    # stdout holds the report alone, even when Ray's raylet reports a dead worker.
    return code, json.loads(capsys.readouterr().out)


def test_ray_and_local_agree_task_by_task(
    cluster: Receiver | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = build_suite(tmp_path)
    history_path = tmp_path / "history.sqlite3"
    common = ["--history", str(history_path), "--rerun"]
    _, local = batch(capsys, str(suite), "--jobs", "4", *common, "--work-dir", str(tmp_path / "l"))
    _, on_ray = batch(capsys, str(suite), "--ray", *common, "--work-dir", str(tmp_path / "r"))
    assert on_ray["executor"] == "ray"
    assert {t: (r[0], r[1]) for t, r in comparable(on_ray).items()} == EXPECTED
    assert comparable(on_ray) == comparable(local)
    assert all(row["executor"] == "ray" and row["attempts"] == 1 for row in on_ray["tasks"])
    # The workers' runs came back into this machine's history, with their records.
    with RunHistory(history_path) as history:
        for row in on_ray["tasks"]:
            stored = history.get_run(row["run_id"])
            assert stored is not None and stored.batch is not None
            assert stored.batch.task_id == row["task_id"]
            assert len(stored.records) == row["tool_calls"]
    if cluster is not None:
        check_one_trace(cluster)


def check_one_trace(receiver: Receiver) -> None:
    """The Ray batch is one trace: a span per task, the worker's run span beneath it."""
    from opentelemetry import trace

    trace.get_tracer_provider().force_flush()  # type: ignore[attr-defined]
    spans = receiver.spans
    [batch] = [s for s in spans if s.attributes.get("cleveragents.executor") == "ray"]
    tasks = [s for s in spans if s.parent_span_id == batch.span_id]
    assert len(tasks) == 20
    for task in tasks:
        runs = [s for s in spans if s.parent_span_id == task.span_id]
        assert [r.attributes["gen_ai.operation.name"] for r in runs] == ["invoke_agent"]
        assert runs[0].trace_id == batch.trace_id


def ray_task_pids() -> list[int]:
    """Worker processes running a batch task (Ray names a busy worker after its function)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if cmdline.startswith(b"ray::ray_task"):
            pids.append(int(entry))
    return pids


def test_a_worker_killed_mid_task_is_retried_once(
    cluster: Receiver | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    script = tmp_path / "slow.json"
    script.write_text(
        json.dumps({"responses": [{"text": "thinking", "delay_ms": 3000}, {"text": "done"}]})
    )
    suite = tmp_path / "kill.yaml"
    suite.write_text(
        "tasks:\n  - id: victim\n    workspace: project\n    prompt: p\n    provider: replay\n"
        "    replay_script: slow.json\n    check: 'true'\n"
    )
    killed: list[int] = []

    def kill_first_worker() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not killed:
            for pid in ray_task_pids():
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_first_worker)
    killer.start()
    history_path = tmp_path / "history.sqlite3"
    code, report = batch(capsys, str(suite), "--ray", "--history", str(history_path))
    killer.join()
    assert killed, "no Ray worker was seen running the task"
    assert code == 0
    [row] = report["tasks"]
    assert (row["status"], row["attempts"]) == ("passed", 2)
    assert row["retried"].startswith("the Ray worker died")
    with RunHistory(history_path) as history:
        [stored] = history.batch_tasks("kill")
        assert stored.outcome["attempts"] == 2 and stored.outcome["retried"] == row["retried"]


def test_a_shared_path_keeps_the_copies_where_the_history_names_them(
    cluster: Receiver | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = build_suite(tmp_path)
    shared = tmp_path / "shared"
    history_path = tmp_path / "history.sqlite3"
    code, report = batch(
        capsys,
        str(suite),
        "--ray",
        "--ray-shared-dir",
        str(shared),
        "--task",
        "write-0",
        "--history",
        str(history_path),
    )
    assert code == 0
    [row] = report["tasks"]
    copy = shared / "twenty" / "default" / "write-0"
    assert row["workspace"] == str(copy)
    assert (copy / "out.txt").read_text() == "done\n"
    with RunHistory(history_path) as history:
        stored = history.get_run(row["run_id"])
        assert stored is not None and stored.sandbox_root == str(copy)
