"""The daemon's runs are traced like every front's: spans received by a real OTLP receiver."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from support.daemon_support import RawDaemon, call, write_script

pytest.importorskip("opentelemetry.sdk")

from support.otlp_receiver import TWO_CALLS, check_run_tree, otlp_receiver


async def test_a_daemon_run_with_two_tool_calls_is_traced(tmp_path: Path) -> None:
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    (sandbox / "secret.txt").write_text("the file's content\n")
    first, second = TWO_CALLS["responses"]
    script = write_script(
        tmp_path / "s.json",
        {**first, "tool_calls": [call("read_file", path="secret.txt"), call("list_dir", path=".")]},
        second,
    )
    with otlp_receiver() as (endpoint, receiver):
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_BSP_SCHEDULE_DELAY": "50"}
        daemon = await RawDaemon.start(tmp_path, env=env)
        try:
            options = {
                "provider": "replay",
                "replayScript": script,
                "model": "claude-haiku-4-5",
                "builtinTools": True,
                "pluginTools": False,
                "automationProfile": "full-auto",
            }
            await daemon.initialize(options)
            answer = await daemon.request(
                "cleveragents/run", {"prompt": "Read the secret", "sandboxRoot": str(sandbox)}
            )
            assert "result" in answer, answer
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not any(
                s.attributes.get("gen_ai.operation.name") == "invoke_agent" for s in receiver.spans
            ):
                await asyncio.sleep(0.05)
        finally:
            daemon.kill()
            await daemon.process.wait()
    [run] = [s for s in receiver.spans if s.attributes["gen_ai.operation.name"] == "invoke_agent"]
    assert run.parent_span_id == b""
    assert run.attributes["cleveragents.run_id"] == answer["result"]["runId"]
    assert run.attributes["gen_ai.request.model"] == "claude-haiku-4-5"
    check_run_tree(receiver.spans, run)
    exported = json.dumps([s.attributes for s in receiver.spans], default=str)
    assert "Read the secret" not in exported and "the file's content" not in exported
