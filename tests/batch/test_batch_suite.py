"""The suite format: what loads, and how a bad suite is named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cleveragents.batch.suite import SuiteError, load_suite


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


def test_a_matrix_runs_every_task_under_every_configuration(tmp_path: Path) -> None:
    (tmp_path / "repo").mkdir()
    write(tmp_path, "script.json", json.dumps({"responses": [{"text": "ok"}]}))
    suite = load_suite(
        write(
            tmp_path,
            "evals.yaml",
            """
defaults: {provider: offline, max_iterations: 7, timeout_s: 60}
matrix:
  - name: small
    model: claude-haiku-4-5
  - name: terse
    system_prompt: Be brief.
    tools: [read_file]
tasks:
  - id: one
    workspace: repo
    prompt: Fix it
    check: make test
    model: gpt-5
    provider: replay
    replay_script: script.json
    tags: [a]
  - id: two
    workspace: {git: repo, ref: main}
    prompt: Fix that
    expected_files: [x.txt]
""",
        )
    )
    assert suite.name == "evals"
    jobs = {job.key: job for job in suite.jobs()}
    assert list(jobs) == ["one@small", "one@terse", "two@small", "two@terse"]
    # The configuration wins over the task, the task over the defaults.
    assert jobs["one@small"].settings.model == "claude-haiku-4-5"
    assert jobs["one@terse"].settings.model == "gpt-5"
    assert jobs["one@terse"].settings.tools == ("read_file",)
    assert jobs["two@small"].settings.provider == "offline"
    assert jobs["one@small"].settings.provider == "replay"
    assert jobs["one@small"].settings.max_iterations == 7
    assert jobs["one@small"].settings.replay_script == str(tmp_path / "script.json")
    assert jobs["two@small"].task.workspace.git == str(tmp_path / "repo")
    assert jobs["two@small"].task.workspace.ref == "main"
    # A changed script is a changed task: its earlier result no longer stands.
    before = jobs["one@small"].fingerprint()
    write(tmp_path, "script.json", json.dumps({"responses": [{"text": "changed"}]}))
    assert jobs["one@small"].fingerprint() != before
    assert suite.select(tags={"a"}).tasks[0].id == "one"


def test_every_problem_is_named_by_task_and_field(tmp_path: Path) -> None:
    (tmp_path / "repo").mkdir()
    path = write(
        tmp_path,
        "bad.yaml",
        """
matrix:
  - name: a
    colour: red
tasks:
  - id: t1
    workspace: repo
    prompt: hi
    check: "true"
    max_iterations: 0
  - id: t2
    workspace: missing
    prompt: hi
    check: "true"
    replay_script: nowhere.json
  - id: t3
    workspace: repo
    prompt: hi
  - id: t1
    workspace: repo
    prompt: again
    check: "true"
  - workspace: repo
    prompt: ""
    profile: yolo
""",
    )
    with pytest.raises(SuiteError) as caught:
        load_suite(path)
    problems = caught.value.problems
    assert "matrix 'a': unknown field(s): colour" in problems
    assert any(p.startswith("task 't1': max_iterations: 0") for p in problems)
    assert any(p.startswith("tasks[4]: 'id' is a required") for p in problems)
    assert any(p.startswith("tasks[4]: prompt:") for p in problems)
    assert any(p.startswith("tasks[4]: profile: 'yolo'") for p in problems)
    # Checked only once the shape is right: the schema's problems come first.
    path.write_text(
        path.read_text().replace("    max_iterations: 0\n", "").split("  - workspace")[0]
    )
    with pytest.raises(SuiteError) as caught:
        load_suite(path)
    problems = caught.value.problems
    assert "matrix 'a': unknown field(s): colour" in problems
    path.write_text(path.read_text().replace("    colour: red\n", ""))
    with pytest.raises(SuiteError) as caught:
        load_suite(path)
    problems = caught.value.problems
    assert f"task 't2': workspace: no such folder: {tmp_path / 'missing'}" in problems
    assert f"task 't2': replay_script: no such file: {tmp_path / 'nowhere.json'}" in problems
    assert "task 't3': give a check command or expected_files (or both)" in problems
    assert "tasks: 't1' is used more than once" in problems


def test_unreadable_and_malformed_suites_say_where(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match="cannot read the suite"):
        load_suite(tmp_path / "none.yaml")
    with pytest.raises(SuiteError, match="line 3, column 1: not valid YAML"):
        load_suite(write(tmp_path, "broken.yaml", "tasks:\n  - id: [\n"))
    with pytest.raises(SuiteError, match="line 2: not JSON"):
        load_suite(write(tmp_path, "broken.jsonl", '{"id": "a"}\n{nope\n'))
    with pytest.raises(SuiteError, match=r"the suite: .* is not of type 'object'"):
        load_suite(write(tmp_path, "list.yaml", "- 1\n- 2\n"))


def test_json_lines_is_a_list_of_tasks(tmp_path: Path) -> None:
    (tmp_path / "repo").mkdir()
    line = {"id": "a", "workspace": "repo", "prompt": "p", "check": "true"}
    suite = load_suite(write(tmp_path, "tasks.jsonl", json.dumps(line) + "\n\n"))
    assert [job.key for job in suite.jobs()] == ["a@default"]
    assert suite.name == "tasks"
