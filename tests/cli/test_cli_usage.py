"""The `cleveragents` command with tokens and cost: the run's summary and JSON, `runs list` and
`runs show`, attached files (`--file`), the token and command flags, and bad values (exit 2)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

CLI = [sys.executable, "-m", "cleveragents"]
SONNET = "claude-sonnet-4-5"
# 2,000 uncached x $3 + 10,000 written x $3.75 + 100 out x $15 = $0.0450 for the first call;
# 2,500 uncached x $3 + 10,000 read x $0.30 + 50 out x $15 = $0.01125 for the second.
FIRST = {"input_tokens": 12_000, "output_tokens": 100, "cache_write_tokens": 10_000}
SECOND = {"input_tokens": 12_500, "output_tokens": 50, "cache_read_tokens": 10_000}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "app.py").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    return tmp_path


def env(home: Path, **extra: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("CLEVERAGENTS_")}
    return {**clean, "XDG_DATA_HOME": str(home / "data"), "COLUMNS": "100", **extra}


def cli(home: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, timeout=120, env=env(home, **extra)
    )


def script(home: Path, model: str | None = SONNET) -> str:
    data: dict[str, Any] = {
        "responses": [
            {
                "text": "Reading.",
                "tool_calls": [{"name": "read_file", "arguments": {"path": "app.py"}}],
                "usage": FIRST,
            },
            {"text": "Done.", "usage": SECOND},
        ]
    }
    if model:
        data["model"] = model
    path = home / f"script-{model}.json"
    path.write_text(json.dumps(data))
    return str(path)


def run(home: Path, *args: str, model: str | None = SONNET, **extra: str) -> Any:
    return cli(
        home,
        "run",
        "Explain",
        "--sandbox",
        str(home / "ws"),
        "--provider",
        "replay",
        "--script",
        script(home, model),
        "--profile",
        "full-auto",
        "--history",
        str(home / "h.sqlite3"),
        *args,
        **extra,
    )


def test_the_summary_json_list_and_show_carry_tokens_and_cost(home: Path) -> None:
    done = run(home)
    assert done.returncode == 0, done.stderr
    assert "24,500 tokens in (10,000 from cache, 41%), 150 out, ~$0.0563" in done.stdout
    as_json = run(home, "--json", model="my-model")
    assert as_json.returncode == 0, as_json.stderr
    result = json.loads(as_json.stdout)
    assert result["usage"]["costUsd"] is None and result["usage"]["cacheWriteTokens"] == 10_000
    listed = cli(home, "runs", "list", "--history", str(home / "h.sqlite3"))
    assert listed.returncode == 0, listed.stderr
    newest, oldest = [line for line in listed.stdout.splitlines() if "run_" in line]
    assert "24.5k / 150" in oldest and "$0.0563" in oldest
    assert "24.5k / 150" in newest and "—" in newest and "$" not in newest
    rows = json.loads(cli(home, "runs", "--json", "--history", str(home / "h.sqlite3")).stdout)
    assert [r["usage"]["costUsd"] for r in rows] == [None, pytest.approx(0.05625)]
    shown = cli(home, "runs", "show", rows[1]["runId"], "--history", str(home / "h.sqlite3"))
    assert shown.returncode == 0, shown.stderr
    assert "iteration 1: 12,000 in (10,000 written to cache), 100 out, $0.0450" in shown.stdout
    assert "iteration 2: 12,500 in (10,000 from cache), 50 out, $0.0112" in shown.stdout
    assert "~$0.0563" in shown.stdout


def test_prices_from_a_file_and_from_the_environment(home: Path) -> None:
    prices = home / "prices.json"
    prices.write_text(json.dumps({"my-model": {"input": 1, "output": 10}}))
    by_file = run(home, "--json", "--prices", str(prices), model="my-model")
    assert by_file.returncode == 0, by_file.stderr
    # 24,500 in x $1 + 150 out x $10 per million (cache rates default to the input rate)
    assert json.loads(by_file.stdout)["usage"]["costUsd"] == pytest.approx(0.026)
    by_env = run(
        home,
        "--json",
        model="my-model",
        CLEVERAGENTS_PRICES=json.dumps({"my-model": {"input": 2, "output": 0}}),
    )
    assert json.loads(by_env.stdout)["usage"]["costUsd"] == pytest.approx(0.049)


def test_attached_files_reach_the_first_message(home: Path) -> None:
    (home / "ws" / "notes.md").write_text("# Notes\n")
    done = run(home, "--json", "--file", "app.py:2-3", "--file", "notes.md")
    assert done.returncode == 0, done.stderr
    run_id = json.loads(done.stdout)["runId"]
    shown = cli(home, "runs", "show", run_id, "--json", "--history", str(home / "h.sqlite3"))
    first = json.loads(shown.stdout)["messages"][0]["text"]
    assert "`app.py`, lines 2-3 of 10:\n```\nline 2\nline 3\n```" in first
    assert "`notes.md`, the whole file (1 lines):\n```\n# Notes\n```" in first
    assert first.endswith("\n\nExplain")
    assert "attached app.py, lines 2-3" in done.stderr  # the live view, on stderr with --json


@pytest.mark.parametrize(
    ("args", "extra", "message"),
    [
        (["--file", "../outside.txt"], {}, "--file ../outside.txt: path '../outside.txt'"),
        (["--file", "app.py:40-45"], {}, "--file app.py:40-45: line 40 is past the end"),
        (["--file", "app.py:5-2"], {}, "END may not come before START"),
        (["--tool-result-budget", "5"], {}, "--tool-result-budget: must be between"),
        (["--context-window", "ten"], {}, "argument --context-window: expected a whole number"),
        (["--command-limit", "memory=8G"], {}, "argument --command-limit: expected NAME=VALUE"),
        (["--command-limit", "processes=many"], {}, "'many' is not a valid limit"),
        (["--command-env", "A=B"], {}, "not a variable name or pattern"),
        (["--command-read-path", "rel"], {}, "must be absolute or start with ~"),
        ([], {"CLEVERAGENTS_CONTEXT_WINDOW": "abc"}, "$CLEVERAGENTS_CONTEXT_WINDOW: expected"),
        ([], {"CLEVERAGENTS_PROMPT_CACHING": "perhaps"}, "$CLEVERAGENTS_PROMPT_CACHING"),
        ([], {"CLEVERAGENTS_COMMAND_MAX_PROCESSES": "x"}, "CLEVERAGENTS_COMMAND_MAX_PROCESSES"),
    ],
)
def test_bad_values_exit_2_naming_the_flag_or_variable(
    home: Path, args: list[str], extra: dict[str, str], message: str
) -> None:
    (home / "outside.txt").write_text("secret")
    done = run(home, *args, **extra)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert "secret" not in done.stderr + done.stdout


def test_a_bad_prices_file_exits_2(home: Path) -> None:
    prices = home / "prices.json"
    prices.write_text(json.dumps({"m": {"output": 1}}))
    done = run(home, "--prices", str(prices))
    assert done.returncode == 2
    assert "argument --prices: " in done.stderr and "needs 'input'" in done.stderr


def test_a_window_too_small_for_the_attached_file_stops_before_any_call(home: Path) -> None:
    (home / "ws" / "big.txt").write_text("word " * 20_000)
    done = run(home, "--json", "--context-window", "4096", "--file", "big.txt")
    assert done.returncode == 3, done.stderr  # stopped at a limit
    result = json.loads(done.stdout)
    assert result["stopReason"] == "context_exhausted" and result["iterations"] == 0


def test_doctor_shows_the_command_flags(home: Path) -> None:
    done = cli(
        home,
        "doctor",
        "--sandbox",
        str(home / "ws"),
        "--json",
        "--command-env",
        "NODE_*",
        "--command-limit",
        "processes=77",
        "--command-limit",
        "memory-bytes=unlimited",
        CLEVERAGENTS_COMMAND_ENV="FROM_ENV",
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["environment"]["listed"] == ["FROM_ENV", "NODE_*"]
    limits = {limit["name"]: limit["value"] for limit in report["limits"]}
    assert limits["max_processes"] == 77 and limits["max_memory"] is None
