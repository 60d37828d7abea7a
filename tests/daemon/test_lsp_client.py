"""The daemon end to end through a pytest-lsp (pygls) client: streaming, concurrency,
cancellation, approvals, history and continuation."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from cleveragents.protocol import wire
from support.daemon_lsp import lsp_session
from support.daemon_support import (
    WAIT_S,
    call,
    check_against_schema,
    check_type,
    replay_options,
    write_script,
)

# -- streaming ----------------------------------------------------------------------------------


def check_stream(notes: list[tuple[str, dict[str, Any]]], run_id: str) -> None:
    """One run's notifications: schema-valid, numbered 1..n, bracketed by start and finish."""
    for method, params in notes:
        check_against_schema(method, params)
        assert params["runId"] == run_id
    assert [p["seq"] for _, p in notes] == list(range(1, len(notes) + 1))
    assert notes[0][0] == "cleveragents/runStarted"
    assert notes[-1][0] == "cleveragents/runFinished"
    assert [m for m, _ in notes].count("cleveragents/runFinished") == 1


async def test_a_run_streams_every_event_in_order_then_returns_the_whole_history(
    tmp_path: Path, sandbox: Path
) -> None:
    script = write_script(
        tmp_path / "s.json",
        {
            "text": "Pausing twice now.",
            "tool_calls": [
                call("pause", "a", seconds=0.05, label="a"),
                call("pause", "b", seconds=0, label="b"),
            ],
        },
        {"text": "Both done."},
    )
    async with lsp_session(tmp_path, replay_options(script)) as session:
        result = await session.request(
            "cleveragents/run", {"prompt": "pause twice", "sandboxRoot": str(sandbox)}
        )
        check_against_schema("cleveragents/run", result, "result")
        notes = session.run_notes(result["runId"])
        check_stream(notes, result["runId"])
        methods = [m.removeprefix("cleveragents/") for m, _ in notes]

        def where(method: str, **match: Any) -> int:
            return next(
                i
                for i, (m, p) in enumerate(notes)
                if m == f"cleveragents/{method}" and all(p.get(k) == v for k, v in match.items())
            )

        assert where("iterationStarted", iteration=1) < where("textDelta", iteration=1)
        assert where("textDelta", iteration=1) < where("toolCallStarted", callId="a")
        for call_id in ("a", "b"):
            started = where("toolCallStarted", callId=call_id)
            finished = next(
                i
                for i, (m, p) in enumerate(notes)
                if m == "cleveragents/toolCall" and p["record"]["callId"] == call_id
            )
            assert started < finished < where("iterationStarted", iteration=2)
        assert where("iterationStarted", iteration=2) < where("textDelta", iteration=2)
        assert methods.count("toolCall") == 2
        texts = {1: "", 2: ""}
        for method, params in notes:
            if method == "cleveragents/textDelta":
                texts[params["iteration"]] += params["text"]
        assert texts == {1: "Pausing twice now.", 2: "Both done."}

        records = {
            p["record"]["callId"]: p["record"] for m, p in notes if m == "cleveragents/toolCall"
        }
        assert [r["callId"] for r in result["toolCallHistory"]] == ["a", "b"]  # request order
        assert {r["callId"]: r for r in result["toolCallHistory"]} == records
        assert result["toolCallHistory"][0]["output"] == {"slept": 0.05, "label": "a"}
        run_finished = notes[-1][1]
        assert run_finished["stopReason"] == "final_answer"
        assert run_finished["toolCalls"] == 2
        assert run_finished["content"] == result["content"] == "Both done."
        run_started = notes[0][1]
        assert run_started["provider"] == "replay"
        assert run_started["sandboxRoot"] == str(sandbox.resolve())


async def test_work_done_progress_reports_the_run_when_the_client_gives_a_token(
    tmp_path: Path, sandbox: Path
) -> None:
    script = write_script(
        tmp_path / "s.json",
        {"text": "", "tool_calls": [call("pause", seconds=0)]},
        {"text": "Done."},
    )
    async with lsp_session(tmp_path, replay_options(script)) as session:
        session.client.progress_reports["tok-1"] = []
        await session.request(
            "cleveragents/run",
            {
                "prompt": "go",
                "sandboxRoot": str(sandbox),
                "workDoneToken": "tok-1",
            },
        )
        reports: list[Any] = session.client.progress_reports["tok-1"]
        kinds = [report.kind for report in reports]
        assert kinds[0] == "begin" and kinds[-1] == "end"
        assert set(kinds[1:-1]) == {"report"} and len(kinds) > 2


async def test_run_params_override_the_initialization_options(
    tmp_path: Path, sandbox: Path
) -> None:
    script = write_script(
        tmp_path / "s.json",
        {"text": "", "tool_calls": [call("pause", seconds=0)]},
        {"text": "", "tool_calls": [call("pause", seconds=0.001)]},
        {"text": "Done."},
    )
    options = replay_options(script, maxIterations=1, automationProfile="read-only")
    async with lsp_session(tmp_path, options) as session:
        limited = await session.request(
            "cleveragents/run", {"prompt": "go", "sandboxRoot": str(sandbox)}
        )
        assert limited["stopReason"] == "max_iterations" and limited["terminatedByLimit"]
        assert limited["iterations"] == 1
        full = await session.request(
            "cleveragents/run",
            {
                "prompt": "go",
                "sandboxRoot": str(sandbox),
                "maxIterations": 3,
                "automationProfile": "full-auto",
                "model": "m-1",
            },
        )
        assert full["stopReason"] == "final_answer" and full["iterations"] == 3
        started = session.run_notes(full["runId"])[0][1]
        assert (started["maxIterations"], started["automationProfile"], started["model"]) == (
            3,
            "full-auto",
            "m-1",
        )


# -- concurrency --------------------------------------------------------------------------------


async def test_a_blocked_run_delays_no_other_run_and_no_other_request(
    tmp_path: Path, sandbox: Path
) -> None:
    script = write_script(
        tmp_path / "s.json",
        {"text": "", "tool_calls": [call("block_until_file", name="release")]},
        {"text": "Done."},
    )
    async with lsp_session(tmp_path, replay_options(script)) as session:
        blocked = session.start(
            "cleveragents/run",
            {
                "prompt": "wait",
                "sandboxRoot": str(sandbox),
                "runId": "blocked",
            },
        )
        await session.wait_for_note("cleveragents/toolCallStarted", runId="blocked")
        # A second run of the same script, whose tool is released at once...
        (sandbox / "other").mkdir()
        (sandbox / "other" / "release").write_text("")
        quick = await session.request(
            "cleveragents/run",
            {
                "prompt": "quick",
                "sandboxRoot": str(sandbox / "other"),
                "runId": "quick",
            },
        )
        assert quick["stopReason"] == "final_answer"
        # ...and other requests are answered while the first run still holds its thread.
        tools = await session.request("cleveragents/tools", {})
        assert "block_until_file" in [t["name"] for t in tools["tools"]]
        runs = await session.request("cleveragents/runs", {})
        statuses = {r["runId"]: r["status"] for r in runs["runs"]}
        assert statuses == {"blocked": "running", "quick": "finished"}
        assert not blocked.done()
        (sandbox / "release").write_text("")
        result = await asyncio.wait_for(blocked, WAIT_S)
        assert result["stopReason"] == "final_answer"
        check_stream(session.run_notes("blocked"), "blocked")
        check_stream(session.run_notes("quick"), "quick")


async def test_many_runs_at_once_each_get_their_own_stream(tmp_path: Path, sandbox: Path) -> None:
    script = write_script(
        tmp_path / "s.json",
        {"text": "Waiting.", "tool_calls": [call("wait_for_file", name="go")]},
        {"text": "Done."},
    )
    async with lsp_session(tmp_path, replay_options(script)) as session:
        ids = [f"r{i}" for i in range(8)]
        tasks = [
            session.start(
                "cleveragents/run", {"prompt": "go", "sandboxRoot": str(sandbox), "runId": run_id}
            )
            for run_id in ids
        ]
        for run_id in ids:
            await session.wait_for_note("cleveragents/toolCallStarted", runId=run_id)
        assert not any(task.done() for task in tasks)
        (sandbox / "go").write_text("")
        results = await asyncio.wait_for(asyncio.gather(*tasks), WAIT_S)
        assert [r["runId"] for r in results] == ids
        for run_id in ids:
            check_stream(session.run_notes(run_id), run_id)


# -- cancellation -------------------------------------------------------------------------------


async def test_cleveragents_cancel_returns_the_partial_run_with_the_call_recorded_cancelled(
    tmp_path: Path, sandbox: Path
) -> None:
    script = write_script(
        tmp_path / "s.json",
        {"text": "First.", "tool_calls": [call("pause", "p", seconds=0)]},
        {"text": "Then wait.", "tool_calls": [call("wait_for_file", "w", name="never")]},
        {"text": "Done."},
    )
    async with lsp_session(tmp_path, replay_options(script)) as session:
        running = session.start(
            "cleveragents/run", {"prompt": "go", "sandboxRoot": str(sandbox), "runId": "c1"}
        )
        await session.wait_for_note("cleveragents/toolCallStarted", runId="c1", callId="w")
        assert await session.request("cleveragents/cancel", {"runId": "c1"}) == {"cancelled": True}
        result = await asyncio.wait_for(running, WAIT_S)
        assert result["stopReason"] == "cancelled"
        assert result["content"] == "First.\n\nThen wait."
        assert [(r["callId"], r["success"], r["errorKind"]) for r in result["toolCallHistory"]] == [
            ("p", True, None),
            ("w", False, "cancelled"),
        ]
        notes = session.run_notes("c1")
        check_stream(notes, "c1")
        assert notes[-1][1]["stopReason"] == "cancelled"
        assert await session.request("cleveragents/cancel", {"runId": "c1"}) == {"cancelled": False}
        stored = await session.request("cleveragents/getRun", {"runId": "c1"})
        assert stored["status"] == "cancelled"
        assert [r["errorKind"] for r in stored["toolCallHistory"]] == [None, "cancelled"]


async def test_cancel_request_answers_minus_32800_and_still_finishes_the_run_properly(
    tmp_path: Path, sandbox: Path
) -> None:
    script = write_script(
        tmp_path / "s.json",
        {"text": "", "tool_calls": [call("wait_for_file", "w", name="never")]},
        {"text": "Done."},
    )
    async with lsp_session(tmp_path, replay_options(script)) as session:
        protocol = session.client.protocol
        future = protocol.send_request(
            "cleveragents/run",
            {"prompt": "go", "sandboxRoot": str(sandbox), "runId": "c2"},
            msg_id="run-c2",
        )
        await session.wait_for_note("cleveragents/toolCallStarted", runId="c2")
        session.client.cancel_request(wire_cancel("run-c2"))
        with pytest.raises(JsonRpcException) as raised:
            await asyncio.wait_for(asyncio.wrap_future(future), WAIT_S)
        assert raised.value.code == wire.REQUEST_CANCELLED
        finished = await session.wait_for_note("cleveragents/runFinished", runId="c2")
        assert finished["stopReason"] == "cancelled"
        stored = await session.request("cleveragents/getRun", {"runId": "c2"})
        assert stored["status"] == "cancelled"
        assert [r["errorKind"] for r in stored["toolCallHistory"]] == ["cancelled"]


def wire_cancel(msg_id: str) -> Any:
    from lsprotocol import types

    return types.CancelParams(id=msg_id)


def _processes_with(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if marker.encode() in cmdline and stat.split(") ")[1][:1] != "Z":
                found.append(int(entry))
    return found


@pytest.mark.parametrize("how", ["cleveragents/cancel", "$/cancelRequest"])
async def test_cancelling_kills_the_running_command(
    tmp_path: Path, sandbox: Path, how: str
) -> None:
    marker = f"{3000 + os.getpid() % 5000}.{len(how)}5"
    script = write_script(
        tmp_path / "s.json",
        {"text": "", "tool_calls": [call("run_command", "cmd", command=f"sleep {marker}")]},
        {"text": "Done."},
    )
    options = replay_options(script, builtinTools=True, automationProfile="full-auto")
    async with lsp_session(tmp_path, options) as session:
        future = session.client.protocol.send_request(
            "cleveragents/run",
            {"prompt": "go", "sandboxRoot": str(sandbox), "runId": "k"},
            msg_id="run-k",
        )
        await session.wait_for_note("cleveragents/toolCallStarted", runId="k")
        await session.wait_until(lambda: _processes_with(f"sleep {marker}"))
        if how == "cleveragents/cancel":
            await session.request("cleveragents/cancel", {"runId": "k"})
            result = await asyncio.wait_for(asyncio.wrap_future(future), WAIT_S)
            assert result["toolCallHistory"][0]["errorKind"] == "cancelled"
        else:
            session.client.cancel_request(wire_cancel("run-k"))
            with pytest.raises(JsonRpcException):
                await asyncio.wait_for(asyncio.wrap_future(future), WAIT_S)
        await session.wait_for_note("cleveragents/runFinished", runId="k")
        assert _processes_with(f"sleep {marker}") == []


# -- approvals ----------------------------------------------------------------------------------


def note_script(tmp_path: Path, *names: str) -> str:
    steps = [
        {"text": "", "tool_calls": [call("write_note", name, name=name, text="hi")]}
        for name in names
    ]
    return write_script(tmp_path / "s.json", *steps, {"text": "Done."})


@pytest.mark.parametrize(
    ("decision", "written", "error_kind"),
    [
        ("allow", True, None),
        ("deny", False, "denied"),
    ],
)
async def test_the_client_approves_or_denies_a_mutating_call(
    tmp_path: Path, sandbox: Path, decision: str, written: bool, error_kind: str | None
) -> None:
    options = replay_options(note_script(tmp_path, "a.txt"), approvals=True)
    async with lsp_session(tmp_path, options) as session:
        session.decide = lambda params: {"decision": decision}
        result = await session.request(
            "cleveragents/run",
            {"prompt": "write", "sandboxRoot": str(sandbox), "automationProfile": "ask"},
        )
        (asked,) = session.approval_requests
        check_against_schema("cleveragents/approveToolCall", asked)
        assert (asked["toolName"], asked["callId"], asked["runId"]) == (
            "write_note",
            "a.txt",
            result["runId"],
        )
        assert asked["inputs"]["name"] == "a.txt" and asked["mutating"] is True
        record = result["toolCallHistory"][0]
        assert record["errorKind"] == error_kind
        assert (sandbox / "a.txt").exists() == written


async def test_allow_for_run_asks_once_per_tool_and_run(tmp_path: Path, sandbox: Path) -> None:
    options = replay_options(note_script(tmp_path, "a.txt", "b.txt"), approvals=True)
    async with lsp_session(tmp_path, options) as session:
        session.decide = lambda params: {"decision": "allow_for_run"}
        result = await session.request(
            "cleveragents/run", {"prompt": "write", "sandboxRoot": str(sandbox)}
        )
        assert len(session.approval_requests) == 1
        assert [r["success"] for r in result["toolCallHistory"]] == [True, True]
        # A new run asks again.
        await session.request("cleveragents/run", {"prompt": "again", "sandboxRoot": str(sandbox)})
        assert len(session.approval_requests) == 2


async def test_approvals_declared_in_client_capabilities_work_too(
    tmp_path: Path, sandbox: Path
) -> None:
    async with lsp_session(
        tmp_path,
        replay_options(note_script(tmp_path, "a.txt")),
        experimental={"cleveragents": {"approvals": True}},
    ) as session:
        assert session.initialize_result is not None
        experimental = session.initialize_result.capabilities.experimental
        assert experimental is not None
        capability = experimental["cleveragents"]
        check_type("ServerCapability", capability)
        assert capability["approvals"] is True
        session.decide = lambda params: {"decision": "allow"}
        result = await session.request(
            "cleveragents/run", {"prompt": "write", "sandboxRoot": str(sandbox)}
        )
        assert result["toolCallHistory"][0]["success"] is True
        assert len(session.approval_requests) == 1


async def test_a_client_that_cannot_approve_gets_denials_and_is_never_asked(
    tmp_path: Path, sandbox: Path
) -> None:
    async with lsp_session(tmp_path, replay_options(note_script(tmp_path, "a.txt"))) as session:
        result = await session.request(
            "cleveragents/run", {"prompt": "write", "sandboxRoot": str(sandbox)}
        )
        record = result["toolCallHistory"][0]
        assert record["errorKind"] == "denied"
        assert "no one is there to approve it" in record["error"]
        assert session.approval_requests == []
        assert not (sandbox / "a.txt").exists()


@pytest.mark.parametrize(
    "answer", [{"decision": "maybe"}, {"decision": "allow", "extra": 1}, "allow", None]
)
async def test_a_malformed_approval_answer_is_a_denial(
    tmp_path: Path, sandbox: Path, answer: Any
) -> None:
    options = replay_options(note_script(tmp_path, "a.txt"), approvals=True)
    async with lsp_session(tmp_path, options) as session:
        session.decide = lambda params: answer
        result = await session.request(
            "cleveragents/run", {"prompt": "write", "sandboxRoot": str(sandbox)}
        )
        assert len(session.approval_requests) == 1
        assert result["toolCallHistory"][0]["errorKind"] == "denied"
        assert not (sandbox / "a.txt").exists()


async def test_an_error_answer_to_an_approval_is_a_denial(tmp_path: Path, sandbox: Path) -> None:
    options = replay_options(note_script(tmp_path, "a.txt"), approvals=True)
    async with lsp_session(tmp_path, options) as session:

        def refuse(params: Any) -> Any:
            raise JsonRpcException("the dialog broke", -32001)

        session.decide = refuse
        result = await session.request(
            "cleveragents/run", {"prompt": "write", "sandboxRoot": str(sandbox)}
        )
        assert result["toolCallHistory"][0]["errorKind"] == "denied"


async def test_cancelling_a_run_withdraws_its_pending_approval(
    tmp_path: Path, sandbox: Path
) -> None:
    options = replay_options(note_script(tmp_path, "a.txt"), approvals=True)
    async with lsp_session(tmp_path, options) as session:
        never: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        session.decide = lambda params: never  # the user never clicks
        running = session.start(
            "cleveragents/run", {"prompt": "write", "sandboxRoot": str(sandbox), "runId": "pending"}
        )
        await session.wait_until(lambda: session.approval_requests)
        await session.request("cleveragents/cancel", {"runId": "pending"})
        result = await asyncio.wait_for(running, WAIT_S)
        assert result["stopReason"] == "cancelled"
        assert result["toolCallHistory"][0]["errorKind"] == "cancelled"
        # The daemon withdrew its question ($/cancelRequest), so the client's prompt closed.
        await session.wait_until(never.cancelled)


@pytest.mark.parametrize(
    ("profile", "asked", "success"),
    [
        ("auto-edit", 0, True),
        ("read-only", 0, False),
        ("full-auto", 0, True),
        ("ask", 1, True),
    ],
)
async def test_profiles_decide_who_is_asked(
    tmp_path: Path, sandbox: Path, profile: str, asked: int, success: bool
) -> None:
    options = replay_options(note_script(tmp_path, "a.txt"), approvals=True)
    async with lsp_session(tmp_path, options) as session:
        session.decide = lambda params: {"decision": "allow"}
        result = await session.request(
            "cleveragents/run",
            {"prompt": "write", "sandboxRoot": str(sandbox), "automationProfile": profile},
        )
        assert len(session.approval_requests) == asked
        assert result["toolCallHistory"][0]["success"] is success


# -- history and continuation ---------------------------------------------------------------


async def test_history_reads_runs_back_and_a_run_can_continue_another(
    tmp_path: Path, sandbox: Path
) -> None:
    from support.fake_openai import FakeOpenAIServer, text_reply, tool_call_reply

    with FakeOpenAIServer() as fake:
        fake.enqueue(tool_call_reply("call_1", "pause", '{"seconds": 0, "label": "one"}'))
        fake.enqueue(text_reply("First answer."))
        fake.enqueue(text_reply("Second answer."))
        options = {
            "provider": "openai",
            "model": "fake-model",
            "baseUrl": fake.base_url,
            "toolModules": ["daemon_tools"],
            "builtinTools": False,
        }
        async with lsp_session(tmp_path, options, env={"OPENAI_API_KEY": "sk-test"}) as session:
            first = await session.request(
                "cleveragents/run",
                {"prompt": "Pause once.", "sandboxRoot": str(sandbox), "runId": "first"},
            )
            assert first["content"] == "First answer."
            second = await session.request(
                "cleveragents/run",
                {"prompt": "And then?", "sandboxRoot": str(sandbox), "continueFrom": "first"},
            )
            assert second["continuedFrom"] == "first"
            assert second["content"] == "Second answer."

            sent = fake.requests[-1].body["messages"]
            said = [(m["role"], m.get("content")) for m in sent if m["role"] != "system"]
            assert said[0] == ("user", "Pause once.")
            assert said[-2:] == [("assistant", "First answer."), ("user", "And then?")]
            assert any(m["role"] == "tool" and m.get("tool_call_id") == "call_1" for m in sent)

            runs = (await session.request("cleveragents/runs", {}))["runs"]
            check_against_schema("cleveragents/runs", {"runs": runs}, "result")
            assert [r["runId"] for r in runs] == [second["runId"], "first"]
            assert runs[0]["continuedFrom"] == "first"
            assert [
                r["runId"]
                for r in (await session.request("cleveragents/runs", {"limit": 1, "offset": 1}))[
                    "runs"
                ]
            ] == ["first"]

            stored = await session.request("cleveragents/getRun", {"runId": "first"})
            check_against_schema("cleveragents/getRun", stored, "result")
            assert stored["status"] == "finished"
            assert stored["toolCallHistory"] == first["toolCallHistory"]
            assert [m["role"] for m in stored["messages"]] == [
                "user",
                "assistant",
                "tool",
                "assistant",
            ]
            assert stored["messages"][1]["toolCalls"][0]["callId"] == "call_1"


async def test_history_errors_have_their_own_codes(tmp_path: Path, sandbox: Path) -> None:
    script = write_script(
        tmp_path / "s.json",
        {"text": "", "tool_calls": [call("wait_for_file", name="go")]},
        {"text": "Done."},
    )
    async with lsp_session(tmp_path, replay_options(script)) as session:
        running = session.start(
            "cleveragents/run", {"prompt": "go", "sandboxRoot": str(sandbox), "runId": "busy"}
        )
        await session.wait_for_note("cleveragents/runStarted", runId="busy")

        async def code_of(method: str, params: dict[str, Any]) -> int:
            with pytest.raises(JsonRpcException) as raised:
                await session.request(method, params)
            return int(raised.value.code)

        base = {"prompt": "go", "sandboxRoot": str(sandbox)}
        assert await code_of("cleveragents/run", {**base, "continueFrom": "busy"}) == (
            wire.RUN_STILL_RUNNING
        )
        assert await code_of("cleveragents/run", {**base, "continueFrom": "nope"}) == (
            wire.RUN_NOT_FOUND
        )
        assert await code_of("cleveragents/run", {**base, "runId": "busy"}) == wire.RUN_ID_IN_USE
        assert await code_of("cleveragents/getRun", {"runId": "nope"}) == wire.RUN_NOT_FOUND
        (sandbox / "go").write_text("")
        await asyncio.wait_for(running, WAIT_S)
        assert await code_of("cleveragents/run", {**base, "runId": "busy"}) == wire.RUN_ID_IN_USE


async def test_a_failing_provider_fails_the_run_with_its_own_code_and_a_final_notification(
    tmp_path: Path, sandbox: Path
) -> None:
    # One response only: the second LLM call of the run has nothing to replay.
    script = write_script(
        tmp_path / "s.json", {"text": "", "tool_calls": [call("pause", "p", seconds=0)]}
    )
    async with lsp_session(tmp_path, replay_options(script)) as session:
        with pytest.raises(JsonRpcException) as raised:
            await session.request(
                "cleveragents/run", {"prompt": "go", "sandboxRoot": str(sandbox), "runId": "f"}
            )
        assert raised.value.code == wire.RUN_FAILED
        assert raised.value.data == {"runId": "f", "errorType": "ReplayScriptError"}
        notes = session.run_notes("f")
        check_stream(notes, "f")
        assert notes[-1][1]["stopReason"] == "error"
        assert notes[-1][1]["errorType"] == "ReplayScriptError"
        stored = await session.request("cleveragents/getRun", {"runId": "f"})
        assert stored["status"] == "failed"
        assert [r["callId"] for r in stored["toolCallHistory"]] == ["p"]
        with pytest.raises(JsonRpcException) as unavailable:
            await session.request(
                "cleveragents/run",
                {
                    "prompt": "go",
                    "sandboxRoot": str(sandbox),
                    "replayScript": str(tmp_path / "missing.json"),
                },
            )
        assert unavailable.value.code == wire.PROVIDER_UNAVAILABLE
        assert "missing.json" in unavailable.value.message


async def test_the_tools_request_lists_the_registry(tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", {"text": "Done."})
    async with lsp_session(tmp_path, replay_options(script, builtinTools=True)) as session:
        tools = await session.request("cleveragents/tools", None)
        check_against_schema("cleveragents/tools", tools, "result")
        by_name = {t["name"]: t for t in tools["tools"]}
        assert by_name["write_note"]["mutating"] is True
        assert by_name["run_command"]["executesCode"] is True
        assert by_name["read_file"]["source"] == "builtin"
        assert by_name["pause"]["source"] == "daemon_tools"
        assert "sandbox_root" not in by_name["write_note"]["inputSchema"]["properties"]


async def test_a_run_can_offer_a_subset_of_the_tools(tmp_path: Path, sandbox: Path) -> None:
    script = write_script(
        tmp_path / "s.json",
        {"text": "", "tool_calls": [call("write_note", name="x", text="y")]},
        {"text": "Done."},
    )
    async with lsp_session(tmp_path, replay_options(script)) as session:
        result = await session.request(
            "cleveragents/run",
            {
                "prompt": "go",
                "sandboxRoot": str(sandbox),
                "tools": ["pause"],
                "automationProfile": "full-auto",
            },
        )
        assert result["toolCallHistory"][0]["errorKind"] == "unknown_tool"
