"""Stop means stop, through the real daemon over stdio, driven by a raw client.

After `cleveragents/cancel` the daemon sends no `toolCallStarted`, no `approveToolCall` and no
`trustWorkspace`; the only `toolCall` is the interrupted call's record, as cancelled; no file
changes; the run answers and is stored `cancelled`. Each order runs 20 times in one daemon
(a race hides in the 1 in 20); the seed picks the variant.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from mcp_fixtures.marked import starts, write_demo_config
from support.daemon_support import RawDaemon, call, frame, replay_options, write_script
from support.fake_anthropic import API_KEY, FakeAnthropic, StreamReply, Text

SEEDS = 20
APPROVE = "cleveragents/approveToolCall"
TRUST = "cleveragents/trustWorkspace"
ASKING = {"experimental": {"cleveragents": {"approvals": True, "trust": True}}}
# Nothing of these may reach the client once it has cancelled.
NEVER_AFTER = {"cleveragents/toolCallStarted", APPROVE, TRUST, "cleveragents/iterationStarted"}


def writes(tmp_path: Path, name: str) -> str:
    """A model that writes a new file at each step: one extra step would show."""
    return write_script(
        tmp_path / name,
        {"text": "Writing.", "tool_calls": [call("write_note", "c1", name="one.txt", text="1")]},
        {"text": "Again.", "tool_calls": [call("write_note", "c2", name="two.txt", text="2")]},
        {"text": "Should not get here."},
    )


def message(payload: dict[str, Any]) -> bytes:
    return frame(json.dumps({"jsonrpc": "2.0", **payload}))


def cancel_message(raw: RawDaemon, run_id: str) -> tuple[int, bytes]:
    msg_id = raw.new_id()
    payload = {"id": msg_id, "method": "cleveragents/cancel", "params": {"runId": run_id}}
    return msg_id, message(payload)


def answer(question: dict[str, Any], result: dict[str, Any]) -> bytes:
    return message({"id": question["id"], "result": result})


async def run_until(
    raw: RawDaemon, run_id: str, method: str, sandbox: Path, **params: Any
) -> tuple[int, dict[str, Any]]:
    """Start a run and wait for its first `method` message: (the run request's id, it)."""
    start = len(raw.received)
    run_request = raw.send_request(
        "cleveragents/run",
        {"prompt": "go", "sandboxRoot": str(sandbox), "runId": run_id, **params},
    )
    found = await raw.wait_for(lambda m: m.get("method") == method, start)
    return run_request, found


async def check_stopped(
    raw: RawDaemon, run_request: int, run_id: str, mark: int, pending: str | None
) -> dict[str, Any]:
    """What every order must leave: nothing sent after the cancel (`mark`) but the pending
    call's record, the run `cancelled` in its answer and in the history."""
    reply = await raw.response(run_request)
    assert "result" in reply, reply
    result: dict[str, Any] = reply["result"]
    assert result["stopReason"] == "cancelled"
    expected = [(pending, "cancelled")] if pending else []
    records = [(r["callId"], r["errorKind"]) for r in result["toolCallHistory"]]
    assert records == expected
    after = [
        m
        for m in raw.received[mark:]
        if m.get("method") in NEVER_AFTER or (m.get("params") or {}).get("runId") == run_id
    ]
    said = [m["method"] for m in after if "method" in m]
    assert not NEVER_AFTER & set(said), said
    finished = [m["params"]["record"] for m in after if m["method"] == "cleveragents/toolCall"]
    assert [(r["callId"], r["errorKind"]) for r in finished] == expected
    stored = await raw.request("cleveragents/getRun", {"runId": run_id})
    assert stored["result"]["status"] == "cancelled", stored
    assert [(r["callId"], r["errorKind"]) for r in stored["result"]["toolCallHistory"]] == expected
    return result


async def test_a_cancel_while_an_approval_is_open_wins_whatever_the_answer(
    raw: RawDaemon, tmp_path: Path, sandbox: Path
) -> None:
    """cleveragents/cancel while approveToolCall is open, then the approval answered (denied,
    allowed): in the same write or after the cancel's answer; or the approval answered
    `cancel` alone."""
    await raw.initialize(replay_options(writes(tmp_path, "s.json")), ASKING)
    for seed in range(SEEDS):
        rng = random.Random(seed)
        order = rng.choice(["same_write", "after_cancelled", "decision_cancel"])
        decision = rng.choice(["deny", "allow", "allow_for_run"])
        run_id = f"approval_{seed}"
        run_request, question = await run_until(
            raw, run_id, APPROVE, sandbox, automationProfile="ask"
        )
        mark = len(raw.received)
        if order == "decision_cancel":
            raw.write(answer(question, {"decision": "cancel"}))
        else:
            cancel_id, cancel = cancel_message(raw, run_id)
            if order == "same_write":
                raw.write(cancel + answer(question, {"decision": decision}))
                cancelled = await raw.response(cancel_id)
            else:
                raw.write(cancel)
                cancelled = await raw.response(cancel_id)
                raw.write(answer(question, {"decision": decision}))
            assert cancelled["result"] == {"cancelled": True}
        await check_stopped(raw, run_request, run_id, mark, "c1")
        withdrawn = [
            m
            for m in raw.received[mark:]
            if m.get("method") == "$/cancelRequest" and m["params"]["id"] == question["id"]
        ]
        # A question still open when the cancel is handled is taken back; one answered in the
        # same read (or answered `cancel`) has nothing left to take back.
        expected = {"after_cancelled": [1], "same_write": [0, 1], "decision_cancel": [0]}
        assert len(withdrawn) in expected[order], (seed, order)
        assert list(sandbox.iterdir()) == [], (seed, order)


async def test_a_cancel_during_a_tool_stops_it_and_starts_nothing_more(
    raw: RawDaemon, tmp_path: Path, sandbox: Path
) -> None:
    script = write_script(
        tmp_path / "s.json",
        {"tool_calls": [call("wait_for_file", "c1", name="never")]},
        {"text": "Again.", "tool_calls": [call("write_note", "c2", name="two.txt", text="2")]},
        {"text": "Should not get here."},
    )
    await raw.initialize(replay_options(script, automationProfile="full-auto"), ASKING)
    for seed in range(SEEDS):
        run_id = f"tool_{seed}"
        run_request, _ = await run_until(raw, run_id, "cleveragents/toolCallStarted", sandbox)
        mark = len(raw.received)
        cancel_id, cancel = cancel_message(raw, run_id)
        raw.write(cancel)
        await check_stopped(raw, run_request, run_id, mark, "c1")
        assert (await raw.response(cancel_id))["result"] == {"cancelled": True}
        assert list(sandbox.iterdir()) == []


async def test_a_cancel_during_the_model_stream_aborts_the_request(
    tmp_path: Path, sandbox: Path
) -> None:
    with FakeAnthropic() as fake:
        env = {"ANTHROPIC_API_KEY": API_KEY, "ANTHROPIC_BASE_URL": fake.base_url}
        raw = await RawDaemon.start(tmp_path, env=env)
        try:
            await raw.initialize(
                {
                    "provider": "anthropic",
                    "model": "claude-sonnet-4-5",
                    "pluginTools": False,
                    "automationProfile": "full-auto",
                },
                ASKING,
            )
            for seed in range(SEEDS):
                # The stream's second block would come ten minutes later: only an aborted
                # request lets the run answer (the ceiling is a minute).
                fake.push(
                    StreamReply(
                        [Text(["Half a "]), Text(["sentence."])], delay_s=600.0, delay_after=1
                    )
                )
                run_id = f"stream_{seed}"
                requests_before = len(fake.requests)
                run_request, _ = await run_until(
                    raw, run_id, "cleveragents/textDelta", sandbox, promptCaching=False
                )
                mark = len(raw.received)
                cancel_id, cancel = cancel_message(raw, run_id)
                raw.write(cancel)
                result = await check_stopped(raw, run_request, run_id, mark, None)
                assert (await raw.response(cancel_id))["result"] == {"cancelled": True}
                assert len(fake.requests) == requests_before + 1  # no request after it
                deltas = [
                    m for m in raw.received[mark:] if m.get("method") == "cleveragents/textDelta"
                ]
                assert deltas == [] and result["iterations"] == 1
        finally:
            raw.kill()
            await raw.process.wait()


@pytest.mark.parametrize("answered", ["never", "trusted_in_the_same_write"])
async def test_a_cancel_during_a_trust_question_withdraws_it_and_starts_nothing(
    answered: str, raw: RawDaemon, tmp_path: Path, sandbox: Path
) -> None:
    marker = tmp_path / "marker"
    write_demo_config(sandbox, marker)
    await raw.initialize(replay_options(writes(tmp_path, "s.json")), ASKING)
    for seed in range(SEEDS):
        run_id = f"trust_{seed}"
        run_request, question = await run_until(raw, run_id, TRUST, sandbox)
        mark = len(raw.received)
        cancel_id, cancel = cancel_message(raw, run_id)
        if answered == "never":
            raw.write(cancel)
        else:
            raw.write(cancel + answer(question, {"trusted": True}))
        await check_stopped(raw, run_request, run_id, mark, None)
        assert (await raw.response(cancel_id))["result"] == {"cancelled": True}
        withdrawn = [
            m
            for m in raw.received[mark:]
            if m.get("method") == "$/cancelRequest" and m["params"]["id"] == question["id"]
        ]
        # An open question is taken back; one answered in the same read is not open any more
        # (its answer loses to the cancel all the same: nothing starts, nothing is remembered).
        assert len(withdrawn) in ([1] if answered == "never" else [0, 1])
        assert starts(marker) == 0  # no server started
        assert sorted(p.name for p in sandbox.iterdir()) == [".mcp.json"]
    # Withdrawn questions are not remembered: the next run asks again.
    trust_store = tmp_path / "data" / "cleveragents" / "trusted-workspaces.json"
    assert not trust_store.exists() or str(sandbox) not in trust_store.read_text()
