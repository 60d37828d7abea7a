"""`cleveragents batch` on the local executor: the 20-task suite, re-runs, reports, Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from cleveragents.cli import main
from cleveragents.service.history import RunHistory
from support.batch_suite import EXPECTED, build_suite


def run_batch_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    code = main(["batch", *argv, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out)


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_twenty_tasks_locally_with_history_rerun_and_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = build_suite(tmp_path)
    source = snapshot(tmp_path / "project")
    history_path = tmp_path / "history.sqlite3"
    report_path = tmp_path / "report.html"
    common = ["--history", str(history_path), "--work-dir", str(tmp_path / "work")]
    code, report = run_batch_cli(
        capsys, str(suite), "--jobs", "4", *common, "--report", str(report_path)
    )
    assert code == 1  # some tasks fail, as the suite means them to
    rows = {row["task_id"]: row for row in report["tasks"]}
    assert {t: (r["status"], r["stop_reason"]) for t, r in rows.items()} == EXPECTED
    assert rows["write-0"]["tool_calls"] == 1 and rows["write-0"]["iterations"] == 2
    assert rows["read-0"]["tool_calls"] == 2
    assert rows["looping"]["iterations"] == 2
    assert rows["write-0"]["input_tokens"] == 2000
    assert rows["write-0"]["cost_usd"] == pytest.approx(2000 / 1e6 * 1 + 100 / 1e6 * 5)
    assert rows["write-wrong-0"]["check"]["exit_code"] == 1
    assert rows["offline-missing"]["check"]["missing_files"] == ["never-written.txt"]
    totals = report["totals"]
    assert (totals["tasks"], totals["passed"]) == (20, 13)
    assert totals["pass_rate"] == pytest.approx(13 / 20)
    assert totals["p50_duration_s"] <= totals["p95_duration_s"]
    # The source folder is never touched: each task ran in its own copy.
    assert snapshot(tmp_path / "project") == source
    assert (tmp_path / "work" / "twenty" / "default" / "write-3" / "out.txt").read_text() == (
        "done\n"
    )
    # Every run is in the history with its batch and task; the slow one as cancelled.
    with RunHistory(history_path) as history:
        runs = history.list_runs(limit=100, batch_id="twenty")
        assert len(runs) == 20
        by_task = {r.batch.task_id: r for r in runs if r.batch is not None}
        assert by_task["slow"].status == "cancelled"
        assert by_task["looping"].status == "limit"
        assert by_task["write-1"].run_id == rows["write-1"]["run_id"]
        assert history.list_runs(limit=5, batch_id="another") == []
    # `cleveragents runs --batch` lists them.
    assert (
        main(
            ["runs", "--history", str(history_path), "--batch", "twenty", "--limit", "50", "--json"]
        )
        == 0
    )
    listed = json.loads(capsys.readouterr().out)
    assert sorted(r["batch"]["taskId"] for r in listed) == sorted(EXPECTED)
    page = report_path.read_text()
    assert "<svg" in page and "write-wrong-2" in page and "65%" in page

    # A re-run keeps what finished; --rerun runs it again.
    code, again = run_batch_cli(capsys, str(suite), *common)
    assert all(row["skipped"] for row in again["tasks"])
    assert [r["run_id"] for r in again["tasks"]] == [r["run_id"] for r in report["tasks"]]
    code, rerun = run_batch_cli(capsys, str(suite), *common, "--rerun", "--task", "write-0")
    assert [(r["task_id"], r["skipped"], r["status"]) for r in rerun["tasks"]] == [
        ("write-0", False, "passed")
    ]
    assert rerun["tasks"][0]["run_id"] != rows["write-0"]["run_id"]


def test_a_bad_suite_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("tasks:\n  - id: x\n    prompt: p\n    check: 'true'\n")
    assert main(["batch", str(bad), "--history", str(tmp_path / "h.sqlite3")]) == 2
    assert "task 'x': 'workspace' is a required property" in capsys.readouterr().err


def test_ctrl_c_cancels_every_task_and_a_rerun_finishes_the_batch(tmp_path: Path) -> None:
    suite = build_suite(tmp_path, slow_delay_ms=60_000)
    text = suite.read_text().replace("timeout_s: 1\n", "timeout_s: 120\n")
    suite.write_text(text)
    history_path = tmp_path / "history.sqlite3"
    argv = [
        sys.executable,
        "-m",
        "cleveragents",
        "batch",
        str(suite),
        "--jobs",
        "20",
        "--json",
        "--history",
        str(history_path),
        "--work-dir",
        str(tmp_path / "work"),
    ]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Wait until the slow task's run is in the history, then interrupt.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if history_path.exists():
            with RunHistory(history_path) as history:
                running = [r for r in history.list_runs(limit=50) if r.status == "running"]
                if any(r.batch and r.batch.task_id == "slow" for r in running):
                    break
        time.sleep(0.1)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    report = json.loads(out)
    assert report["cancelled"] is True
    assert "slow" not in {row["task_id"] for row in report["tasks"]}
    with RunHistory(history_path) as history:
        slow = [r for r in history.list_runs(limit=50) if r.batch and r.batch.task_id == "slow"]
        assert [r.status for r in slow] == ["cancelled"]
        finished = {r.task_id for r in history.batch_tasks("twenty")}
    assert "slow" not in finished
    # The next run does only what did not finish.
    suite.write_text(text.replace("timeout_s: 120\n", "timeout_s: 1\n"))
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=os.environ)
    rerun = json.loads(done.stdout)
    ran = {row["task_id"] for row in rerun["tasks"] if not row["skipped"]}
    assert "slow" in ran and ran.isdisjoint(finished)
    assert len(rerun["tasks"]) == 20


def git(*argv: str, cwd: Path) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *argv],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def test_a_git_workspace_is_cloned_at_its_ref(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repository = tmp_path / "repo"
    repository.mkdir()
    git("init", "-q", "-b", "main", cwd=repository)
    (repository / "version.txt").write_text("one\n")
    git("add", ".", cwd=repository)
    git("commit", "-qm", "one", cwd=repository)
    git("tag", "v1", cwd=repository)
    (repository / "version.txt").write_text("two\n")
    git("commit", "-qam", "two", cwd=repository)
    suite = tmp_path / "git.yaml"
    suite.write_text(
        "defaults: {provider: offline, profile: read-only}\n"
        "tasks:\n"
        "  - id: tagged\n    workspace: {git: repo, ref: v1}\n    prompt: Look\n"
        "    check: grep -qx one version.txt\n"
        "  - id: head\n    workspace: {git: repo}\n    prompt: Look\n"
        "    check: grep -qx two version.txt\n"
        "  - id: no-such-ref\n    workspace: {git: repo, ref: v9}\n    prompt: Look\n"
        "    check: 'true'\n"
    )
    code, report = run_batch_cli(capsys, str(suite), "--history", str(tmp_path / "h.sqlite3"))
    rows = {row["task_id"]: row for row in report["tasks"]}
    assert (rows["tagged"]["status"], rows["head"]["status"]) == ("passed", "passed")
    assert rows["no-such-ref"]["status"] == "error"
    assert "no branch, tag or commit 'v9'" in rows["no-such-ref"]["error"]
    assert code == 1
