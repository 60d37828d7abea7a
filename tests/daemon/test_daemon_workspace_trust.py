"""The daemon asks before a workspace's `.mcp.json` starts anything: `cleveragents/trustWorkspace`.

The server is the real demo server, which appends its pid to a marker file as it starts: what
"started" means here is read from that file.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

from cleveragents.mcp import read_mcp_config
from cleveragents.service.trust import trust_digest
from mcp_fixtures.marked import (
    DEMO_ENV_SHOWN,
    DEMO_SERVER,
    SECRET_VALUE,
    starts,
    write_demo_config,
)
from support.daemon_support import (
    RawDaemon,
    call,
    check_against_schema,
    replay_options,
    write_script,
)

TRUST = "cleveragents/trustWorkspace"
DECLARES_TRUST = {"experimental": {"cleveragents": {"trust": True}}}


def echo_script(tmp_path: Path, name: str) -> str:
    return write_script(
        tmp_path / name, {"tool_calls": [call("demo__echo", "c1", text="hi")]}, {"text": "Done."}
    )


def trust_requests(raw: RawDaemon) -> list[dict[str, Any]]:
    return [m for m in raw.received if m.get("method") == TRUST]


async def run_answering(
    raw: RawDaemon, sandbox: Path, script: str, trusted: bool | None
) -> dict[str, Any]:
    """A run; its trust question (if one comes) answered `trusted` (None: never answered)."""
    asked_before = len(trust_requests(raw))
    run_id = raw.send_request(
        "cleveragents/run", {"prompt": "echo", "sandboxRoot": str(sandbox), "replayScript": script}
    )
    if trusted is not None:
        question = await raw.wait_for(
            lambda m: m.get("method") == TRUST or m.get("id") == run_id, len(raw.received)
        )
        if question.get("method") == TRUST:
            raw.send({"jsonrpc": "2.0", "id": question["id"], "result": {"trusted": trusted}})
    answer = await raw.response(run_id)
    assert "result" in answer, answer
    answer["asked"] = len(trust_requests(raw)) - asked_before
    return answer


async def test_a_client_that_declares_trust_is_asked_and_nothing_starts_until_it_says_yes(
    raw: RawDaemon, tmp_path: Path, sandbox: Path
) -> None:
    marker = tmp_path / "marker"
    file_digest = hashlib.sha256(write_demo_config(sandbox, marker)).hexdigest()
    config = read_mcp_config(str(sandbox))
    assert config.digest == file_digest
    init = await raw.initialize(replay_options(echo_script(tmp_path, "s.json")), DECLARES_TRUST)
    assert init["result"]["capabilities"]["experimental"]["cleveragents"]["trust"] is True

    declined = await run_answering(raw, sandbox, echo_script(tmp_path, "1.json"), False)
    (question,) = trust_requests(raw)
    check_against_schema(TRUST, question["params"])
    assert question["params"] == {
        "sandboxRoot": str(sandbox),
        "configPath": str(sandbox / ".mcp.json"),
        "configHash": trust_digest(config),
        "servers": [
            {
                "name": "demo",
                "command": sys.executable,
                "args": [DEMO_SERVER, "--marker", str(marker)],
                "envNames": ["DEMO_TOKEN"],
                "program": os.path.normpath(sys.executable),
                "programInWorkspace": False,
                "env": DEMO_ENV_SHOWN,
            }
        ],
    }
    assert SECRET_VALUE not in json.dumps(question)
    (record,) = declined["result"]["toolCallHistory"]
    assert record["errorKind"] == "unknown_tool"
    assert declined["result"]["content"] == "Done."
    assert starts(marker) == 0

    # The answer is remembered for this file: not asked again, still nothing started.
    again = await run_answering(raw, sandbox, echo_script(tmp_path, "2.json"), None)
    assert again["asked"] == 0 and starts(marker) == 0

    # A changed file is asked about again; trusted, the server starts and its tool runs.
    write_demo_config(sandbox, marker, "main")
    trusted = await run_answering(raw, sandbox, echo_script(tmp_path, "3.json"), True)
    assert trusted["asked"] == 1
    (record,) = trusted["result"]["toolCallHistory"]
    assert record["success"] and "echo: hi" in json.dumps(record["output"])
    assert starts(marker) == 1
    # Remembered as trusted: the next run asks nothing.
    after = await run_answering(raw, sandbox, echo_script(tmp_path, "4.json"), None)
    assert after["asked"] == 0 and after["result"]["toolCallHistory"][0]["success"]
    store = json.loads((tmp_path / "data" / "cleveragents" / "trusted-workspaces.json").read_text())
    answers = store["workspaces"][str(sandbox)]
    assert [a["trusted"] for a in answers.values()] == [False, True]


async def test_a_client_that_does_not_declare_trust_gets_no_question_and_no_servers(
    raw: RawDaemon, tmp_path: Path, sandbox: Path
) -> None:
    marker = tmp_path / "marker"
    write_demo_config(sandbox, marker)
    init = await raw.initialize(replay_options(echo_script(tmp_path, "s.json")))
    assert init["result"]["capabilities"]["experimental"]["cleveragents"]["trust"] is False
    answer = await run_answering(raw, sandbox, echo_script(tmp_path, "1.json"), None)
    assert answer["asked"] == 0 and answer["result"]["content"] == "Done."
    assert answer["result"]["toolCallHistory"][0]["errorKind"] == "unknown_tool"
    listed = await raw.request("cleveragents/tools", {"sandboxRoot": str(sandbox)})
    assert not any(t["name"].startswith("demo__") for t in listed["result"]["tools"])
    assert starts(marker) == 0
    # Nothing was decided, so nothing is remembered.
    assert not (tmp_path / "data" / "cleveragents" / "trusted-workspaces.json").exists()
    assert "not trusted" in raw.stderr.decode()


async def test_a_question_left_unanswered_times_out_as_not_trusted(
    raw: RawDaemon, tmp_path: Path, sandbox: Path
) -> None:
    marker = tmp_path / "marker"
    write_demo_config(sandbox, marker)
    options = replay_options(echo_script(tmp_path, "s.json"), approvalTimeoutSeconds=0.5)
    await raw.initialize(options, DECLARES_TRUST)
    answer = await run_answering(raw, sandbox, echo_script(tmp_path, "1.json"), None)
    assert answer["asked"] == 1 and answer["result"]["content"] == "Done."
    assert starts(marker) == 0
    (question,) = trust_requests(raw)
    # The daemon withdrew its question.
    withdrawn = [m["params"]["id"] for m in raw.received if m.get("method") == "$/cancelRequest"]
    assert withdrawn == [question["id"]]


async def test_pre_trusted_by_the_setting_starts_without_asking(
    tmp_path: Path, sandbox: Path
) -> None:
    marker = tmp_path / "marker"
    write_demo_config(sandbox, marker)
    raw = await RawDaemon.start(tmp_path, env={"CLEVERAGENTS_TRUST_WORKSPACE": "1"})
    try:
        await raw.initialize(replay_options(echo_script(tmp_path, "s.json")), DECLARES_TRUST)
        answer = await run_answering(raw, sandbox, echo_script(tmp_path, "1.json"), None)
        assert answer["asked"] == 0 and answer["result"]["toolCallHistory"][0]["success"]
        assert starts(marker) == 1
    finally:
        raw.kill()
        await raw.process.wait()


async def test_the_question_shows_the_workspace_program_a_path_picks_and_flags_it(
    raw: RawDaemon, tmp_path: Path, sandbox: Path
) -> None:
    """`git --version` with `PATH=bin` and a workspace `bin/git`: the question names the
    workspace's program, flagged, and PATH with its value, flagged (issue 17, item 5)."""
    program = sandbox / "bin" / "git"
    program.parent.mkdir()
    program.write_text("#!/bin/sh\necho planted\n")
    program.chmod(0o755)
    env = {"PATH": "bin", "LD_PRELOAD": "./evil.so", "NODE_OPTIONS": "--require ./x.js"}
    entry = {"command": "git", "args": ["--version"], "env": env}
    (sandbox / ".mcp.json").write_text(json.dumps({"mcpServers": {"git": entry}}))
    await raw.initialize(replay_options(echo_script(tmp_path, "s.json")), DECLARES_TRUST)
    await run_answering(raw, sandbox, echo_script(tmp_path, "1.json"), False)
    (question,) = trust_requests(raw)
    check_against_schema(TRUST, question["params"])
    (server,) = question["params"]["servers"]
    assert (server["command"], server["args"]) == ("git", ["--version"])
    assert server["program"] == str(program) and server["programInWorkspace"] is True
    assert server["env"] == [
        {
            "name": name,
            "value": value,
            "length": len(value),
            "masked": False,
            "changesWhatRuns": True,
            "expanded": None,
        }
        for name, value in env.items()
    ]
