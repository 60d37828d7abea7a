"""The CLI's `--json` and the daemon speak the same shapes (docs/json-output.md).

The same scripted run goes through the daemon (over stdio) and through the CLI (a subprocess);
`run --json`, `runs --json`, `runs show --json` and `runs restore --json` must carry exactly
the field names of the daemon's `cleveragents/run`, `cleveragents/runs`,
`cleveragents/getRun` and `cleveragents/restore` answers, at every depth, and each must be
valid against protocol/schema.json.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from support.daemon_support import RawDaemon, call, check_type, daemon_env, write_script

PROMPTS = ("Write the notes.", "And again.")


def scripted_run(path: Path) -> str:
    """Two model calls that fill every part of the shapes: a plan, a file written (so a
    checkpoint and a changed file), a failed call, tokens."""
    plan = [{"text": "Write the notes", "status": "in_progress"}]
    return write_script(
        path,
        {
            "text": "Planning, then writing.",
            "tool_calls": [
                call("update_plan", "c_plan", steps=plan),
                call("write_file", "c_notes", path="notes/today.md", content="# Today\n"),
                call("read_file", "c_absent", path="no/such/file.txt"),
            ],
            "usage": {"input_tokens": 300, "output_tokens": 20, "cache_read_tokens": 100},
        },
        {"text": "Written.", "usage": {"input_tokens": 350, "output_tokens": 5}},
    )


def key_paths(value: Any, at: str = "") -> set[str]:
    """Every object key in `value`, as a path (`usage.costUsd`, `toolCallHistory[].callId`)."""
    if isinstance(value, dict):
        paths: set[str] = set()
        for key, inner in value.items():
            path = f"{at}.{key}" if at else key
            paths |= {path} | key_paths(inner, path)
        return paths
    if isinstance(value, list):
        return set().union(*(key_paths(item, f"{at}[]") for item in value))
    return set()


async def daemon_answers(home: Path) -> dict[str, Any]:
    sandbox = home / "sandbox"
    sandbox.mkdir(parents=True)
    script = scripted_run(home / "script.json")
    daemon = await RawDaemon.start(home)
    try:
        await daemon.initialize(
            {"provider": "replay", "replayScript": script, "pluginTools": False}
        )
        results: list[dict[str, Any]] = []
        for prompt in PROMPTS:
            params: dict[str, Any] = {
                "prompt": prompt,
                "sandboxRoot": str(sandbox),
                "automationProfile": "full-auto",
            }
            if results:
                params["continueFrom"] = results[-1]["runId"]
            answer = await daemon.request("cleveragents/run", params)
            results.append(answer["result"])
        first = results[0]["runId"]
        runs = (await daemon.request("cleveragents/runs", {}))["result"]["runs"]
        detail = (await daemon.request("cleveragents/getRun", {"runId": first}))["result"]
        restore = await daemon.request(
            "cleveragents/restore", {"runId": first, "iteration": None, "dryRun": True}
        )
        return {
            "run": results,
            "runs": runs,
            "show": detail,
            "restore": restore["result"],
        }
    finally:
        daemon.kill()
        await daemon.process.wait()


def cli_answers(home: Path) -> dict[str, Any]:
    sandbox = home / "sandbox"
    sandbox.mkdir(parents=True)
    script = scripted_run(home / "script.json")
    history = str(home / "history.sqlite3")
    env = daemon_env(home)

    def cli(*args: str) -> Any:
        done = subprocess.run(
            [sys.executable, "-m", "cleveragents", *args, "--history", history, "--json"],
            capture_output=True,
            text=True,
            env=env,
            cwd=home,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    replayed = f"--sandbox={sandbox} --provider=replay --script={script} --profile=full-auto"
    results: list[dict[str, Any]] = []
    for prompt in PROMPTS:
        more = [f"--continue={results[-1]['runId']}"] if results else []
        results.append(cli("run", prompt, *replayed.split(" "), *more))
    first = results[0]["runId"]
    return {
        "run": results,
        "runs": cli("runs"),
        "show": cli("runs", "show", first),
        "restore": cli("runs", "restore", first, "--dry-run"),
    }


async def test_a_json_consumer_and_the_daemon_see_the_same_field_names(tmp_path: Path) -> None:
    daemon = await daemon_answers(tmp_path / "daemon")
    cli = cli_answers(tmp_path / "cli")
    for daemon_run, cli_run in zip(daemon["run"], cli["run"], strict=True):
        assert key_paths(cli_run) == key_paths(daemon_run)
        check_type("RunResult", cli_run)
    assert daemon["run"][0]["checkpoints"], "a run that wrote a file carries its checkpoints"
    assert daemon["show"]["plan"] and daemon["show"]["changedFiles"]
    assert key_paths(cli["runs"]) == key_paths(daemon["runs"])
    for row in cli["runs"]:
        check_type("RunSummary", row)
    assert key_paths(cli["show"]) == key_paths(daemon["show"])
    check_type("RunDetail", cli["show"])
    assert key_paths(cli["restore"]) == key_paths(daemon["restore"])
    check_type("RestoreResult", cli["restore"])
    # The same run, the same totals: what the daemon answered and the CLI printed agree.
    assert [r["usage"] for r in cli["run"]] == [r["usage"] for r in daemon["run"]]
    assert cli["show"]["checkpoints"] == cli["run"][0]["checkpoints"]
