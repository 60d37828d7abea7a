"""The daemon driven by vscode-jsonrpc, the Node library under vscode-languageclient.

Needs Node and `npm ci --prefix tests/daemon/node` (the test is skipped without them).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from cleveragents.protocol import wire
from support.daemon_support import (
    DAEMON_TESTS,
    call,
    check_against_schema,
    daemon_command,
    daemon_env,
    replay_options,
    write_script,
)

NODE_DIR = DAEMON_TESTS / "node"
NODE = shutil.which("node")

pytestmark = pytest.mark.skipif(
    NODE is None or not (NODE_DIR / "node_modules" / "vscode-jsonrpc").is_dir(),
    reason="needs node and `npm ci --prefix tests/daemon/node`",
)


def test_vscode_jsonrpc_runs_approves_cancels_and_shuts_down(tmp_path: Path, sandbox: Path) -> None:
    script = write_script(
        tmp_path / "s.json",
        {"text": "Writing.", "tool_calls": [call("write_note", "n1", name="n.txt", text="hi")]},
        {"text": "Done."},
    )
    wait = write_script(
        tmp_path / "wait.json",
        {"text": "", "tool_calls": [call("wait_for_file", "w", name="never")]},
    )
    env = daemon_env(tmp_path)
    env.update(
        DAEMON_COMMAND=json.dumps(daemon_command(tmp_path / "history.sqlite3")),
        INIT_OPTIONS=json.dumps(replay_options(script)),
        SANDBOX=str(sandbox),
        WAIT_SCRIPT=wait,
    )
    assert NODE is not None
    done = subprocess.run(
        [NODE, str(NODE_DIR / "client.mjs")], env=env, capture_output=True, timeout=120
    )
    assert done.returncode == 0, done.stderr.decode()
    seen = json.loads(done.stdout)

    ours = seen["initialize"]["capabilities"]["experimental"]["cleveragents"]
    assert ours["protocolVersion"] == wire.PROTOCOL_VERSION and ours["approvals"] is True

    result = seen["result"]
    check_against_schema("cleveragents/run", result, "result")
    assert result["content"] == "Done."
    assert result["toolCallHistory"][0]["success"] is True
    assert (sandbox / "n.txt").read_text() == "hi"
    assert [a["callId"] for a in seen["approvals"]] == ["n1"]

    for run_id in ("node-1", "node-2"):
        notes = [(m, p) for m, p in seen["notes"] if p["runId"] == run_id]
        for method, params in notes:
            check_against_schema(f"cleveragents/{method}", params)
        assert [p["seq"] for _, p in notes] == list(range(1, len(notes) + 1))
        assert notes[0][0] == "runStarted" and notes[-1][0] == "runFinished"

    assert seen["cancelError"]["code"] == wire.REQUEST_CANCELLED
    assert seen["stored"]["status"] == "cancelled"
    assert seen["stored"]["toolCallHistory"][0]["errorKind"] == "cancelled"
    assert seen["badParams"]["code"] == wire.INVALID_PARAMS
    assert "params.prompt" in seen["badParams"]["message"]
    assert seen["exitCode"] == 0
