"""One run pipeline under every front: the same scripted runs through the daemon (over stdio),
ACP mode (the ACP SDK's client over stdio) and the CLI (a subprocess), each with a history of
its own, leave the same rows in the history, field by field, ids and times aside."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, text_block

from cleveragents.service.history import RunHistory
from cleveragents.tool.serialization import to_data
from support.acp_support import AgentProcess, agent_env, call, write_script

# The daemon's raw client lives with the daemon tests.
from support.daemon_support import RawDaemon

PROMPTS = ("Write the notes.", "And again.")
# Ids and times differ by nature; where the run happened differs by design.
IGNORED = {
    "run_id",
    "started_at",
    "finished_at",
    "created_at",
    "checkpoint_id",
    "duration_ms",
    "sandbox_root",
    "continued_from",
}


def scripted_run(path: Path) -> str:
    return write_script(
        path,
        {
            "text": "Writing the notes.",
            "tool_calls": [
                call("write_file", "c_write", path="notes.txt", content="one\ntwo\n"),
                call("read_file", "c_missing", path="absent.txt"),
            ],
            "usage": {"input_tokens": 120, "output_tokens": 12},
        },
        {"text": "Done.", "usage": {"input_tokens": 180, "output_tokens": 4}},
    )


def home_of(tmp_path: Path, front: str) -> tuple[Path, Path]:
    home = tmp_path / front
    sandbox = home / "sandbox"
    sandbox.mkdir(parents=True)
    return home, sandbox


def stored_rows(history_file: Path, sandbox: Path) -> list[dict[str, Any]]:
    """Every run of the history, oldest first, as comparable data."""
    with RunHistory(history_file) as history:
        summaries = sorted(history.list_runs(limit=10), key=lambda s: s.started_at)
        runs = [history.get_run(s.run_id) for s in summaries]
    rows = []
    for run in runs:
        assert run is not None
        row = _without_ids(to_data(run), str(sandbox))
        row["continues_a_run"] = run.continued_from is not None
        row["checkpoint_count"] = len(run.checkpoints)
        rows.append(row)
    return rows


def _without_ids(value: Any, sandbox: str) -> Any:
    if isinstance(value, dict):
        return {k: _without_ids(v, sandbox) for k, v in value.items() if k not in IGNORED}
    if isinstance(value, list):
        return [_without_ids(v, sandbox) for v in value]
    if isinstance(value, str):
        return value.replace(sandbox, "<sandbox>")
    return value


async def through_the_daemon(tmp_path: Path) -> list[dict[str, Any]]:
    home, sandbox = home_of(tmp_path, "daemon")
    script = scripted_run(home / "script.json")
    daemon = await RawDaemon.start(home)
    try:
        await daemon.initialize(
            {"provider": "replay", "replayScript": script, "pluginTools": False}
        )
        previous = None
        for prompt in PROMPTS:
            params: dict[str, Any] = {
                "prompt": prompt,
                "sandboxRoot": str(sandbox),
                "automationProfile": "full-auto",
            }
            if previous is not None:
                params["continueFrom"] = previous
            answer = await daemon.request("cleveragents/run", params)
            assert "result" in answer, answer
            previous = answer["result"]["runId"]
        assert "result" in await daemon.request("shutdown")
        daemon.notify("exit")
        assert await daemon.close() == 0, daemon.stderr.decode()
    finally:
        daemon.kill()
    return stored_rows(home / "history.sqlite3", sandbox)


async def through_acp(tmp_path: Path) -> list[dict[str, Any]]:
    home, sandbox = home_of(tmp_path, "acp")
    script = scripted_run(home / "script.json")
    env = agent_env(
        home,
        CLEVERAGENTS_PROVIDER="replay",
        CLEVERAGENTS_REPLAY_SCRIPT=script,
        CLEVERAGENTS_PROFILE="full-auto",
    )
    agent = await AgentProcess.start(home, env, "--no-plugins")
    try:
        await agent.conn.initialize(protocol_version=PROTOCOL_VERSION)
        session = await agent.conn.new_session(cwd=str(sandbox), mcp_servers=[])
        for prompt in PROMPTS:
            response = await agent.conn.prompt(
                session_id=session.session_id, prompt=[text_block(prompt)]
            )
            assert response.stop_reason == "end_turn"
        assert await agent.close() == 0, agent.stderr.decode()
    finally:
        agent.kill()
    return stored_rows(home / "history.sqlite3", sandbox)


def through_the_cli(tmp_path: Path) -> list[dict[str, Any]]:
    home, sandbox = home_of(tmp_path, "cli")
    script = scripted_run(home / "script.json")
    history = home / "history.sqlite3"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("CLEVERAGENTS_")},
        "XDG_DATA_HOME": str(home / "data"),
    }
    previous: str | None = None
    for prompt in PROMPTS:
        command = [
            sys.executable,
            "-m",
            "cleveragents",
            "run",
            prompt,
            "--sandbox",
            str(sandbox),
            "--provider",
            "replay",
            "--script",
            script,
            "--profile",
            "full-auto",
            "--history",
            str(history),
            "--json",
        ]
        if previous is not None:
            command += ["--continue", previous]
        done = subprocess.run(
            command, capture_output=True, text=True, env=env, cwd=home, timeout=120, check=False
        )
        assert done.returncode == 0, done.stderr
        previous = json.loads(done.stdout)["runId"]
    return stored_rows(history, sandbox)


async def test_the_same_run_leaves_the_same_history_through_every_front(tmp_path: Path) -> None:
    daemon = await through_the_daemon(tmp_path)
    acp = await through_acp(tmp_path)
    cli = through_the_cli(tmp_path)

    # What the runs did, checked once: two runs, the second continuing the first.
    assert [row["status"] for row in daemon] == ["finished", "finished"]
    assert [row["continues_a_run"] for row in daemon] == [False, True]
    first = daemon[0]
    assert [(r["tool_name"], r["success"]) for r in first["records"]] == [
        ("write_file", True),
        ("read_file", False),
    ]
    assert first["usage"]["input_tokens"] == 300 and first["usage"]["output_tokens"] == 16
    assert [c["path"] for c in first["changed_files"]] == ["notes.txt"]
    assert first["checkpoint_count"] >= 2

    # ...and every front stored exactly the same, field by field.
    for front, rows in (("ACP", acp), ("CLI", cli)):
        assert len(rows) == len(daemon), front
        for ours, theirs in zip(rows, daemon, strict=True):
            for name in sorted(set(ours) | set(theirs)):
                assert ours.get(name) == theirs.get(name), f"{front}: {name}"
