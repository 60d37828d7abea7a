"""How an ACP session ends: signals, a closed stdin and `$/cancel_request`, as editors send them.

An editor's Ctrl+C (acpx, say) sends `session/cancel` and SIGINT together; an editor that
quits closes our stdin and may send SIGTERM right after. Whatever the order, the running
prompt is answered `cancelled` while the client still reads, the history records it as
cancelled (never "running"), and the process exits with its own code, never by the signal
and never with a traceback.
"""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, text_block

from cleveragents.service.history import RunHistory
from support.acp_support import (
    TO_AGENT,
    TO_CLIENT,
    WAIT_S,
    AgentProcess,
    RecordingClient,
    StartAgent,
    call,
    check_messages,
    replay_env,
    write_script,
)

ATTEMPTS = 4  # the race this guards against showed in 5 of 6 tries


async def start_waiting_prompt(
    home: Path, sandbox: Path
) -> tuple[AgentProcess, str, asyncio.Future[Any]]:
    """An agent whose prompt is running a tool call that waits until it is cancelled."""
    script = write_script(
        home / "script.json",
        {"text": "Waiting.", "tool_calls": [call("wait_for_file", "c_wait", name="never")]},
        {"text": "Should not get here."},
    )
    client = RecordingClient()
    agent = await AgentProcess.start(
        home, replay_env(home, script), "--tools", "acp_tools", client=client
    )
    await agent.conn.initialize(protocol_version=PROTOCOL_VERSION)
    sid = (await agent.conn.new_session(cwd=str(sandbox), mcp_servers=[])).session_id
    prompt = asyncio.ensure_future(agent.conn.prompt(session_id=sid, prompt=[text_block("Wait.")]))
    await client.wait_for_update(
        lambda u: u.session_update == "tool_call" and u.tool_call_id == "c_wait"
    )
    return agent, sid, prompt


def fresh_home(tmp_path: Path, attempt: int) -> tuple[Path, Path]:
    """A home (history, script) and a sandbox of their own for each attempt."""
    home = tmp_path / f"try{attempt}"
    sandbox = home / "sandbox"
    sandbox.mkdir(parents=True)
    return home, sandbox


def stored_statuses(home: Path) -> list[str]:
    with RunHistory(home / "history.sqlite3") as history:
        return [run.status for run in history.list_runs()]


def assert_quiet(agent: AgentProcess) -> None:
    stderr = agent.stderr.decode(errors="replace")
    assert "Traceback" not in stderr, stderr
    assert "KeyboardInterrupt" not in stderr, stderr
    assert " ERROR " not in stderr, stderr


async def finish(agent: AgentProcess) -> None:
    await agent.output_read()
    await agent.conn.close()
    agent.kill()


async def test_session_cancel_and_sigint_together_answer_cancelled_and_record_it(
    tmp_path: Path,
) -> None:
    for attempt in range(ATTEMPTS):
        home, sandbox = fresh_home(tmp_path, attempt)
        agent, sid, prompt = await start_waiting_prompt(home, sandbox)
        try:
            await agent.conn.cancel(session_id=sid)
            agent.process.send_signal(signal.SIGINT)
            response = await asyncio.wait_for(prompt, WAIT_S)
            assert response.stop_reason == "cancelled"
            assert await asyncio.wait_for(agent.process.wait(), WAIT_S) == 130
            await finish(agent)
            assert check_messages(agent.messages()) > 0
        finally:
            agent.kill()
        assert_quiet(agent)
        assert stored_statuses(home) == ["cancelled"], f"attempt {attempt}"


async def test_sigterm_right_after_stdin_closes_exits_cleanly(tmp_path: Path) -> None:
    for attempt in range(ATTEMPTS):
        home, sandbox = fresh_home(tmp_path, attempt)
        agent, _, prompt = await start_waiting_prompt(home, sandbox)
        try:
            stdin = agent.process.stdin
            assert stdin is not None
            stdin.close()
            agent.process.send_signal(signal.SIGTERM)
            code = await asyncio.wait_for(agent.process.wait(), WAIT_S)
            # Whichever the agent noticed first sets the code; never death by the signal (-15).
            assert code in (0, 128 + signal.SIGTERM), code
            await agent.output_read()
            # SIGTERM first: the prompt was answered before going. Stdin's end first: the
            # SIGTERM that followed said not to wait, so it may have gone unanswered.
            try:
                answer = await asyncio.wait_for(prompt, WAIT_S)
            except ConnectionError:
                assert code == 0
            else:
                assert answer.stop_reason == "cancelled"
        finally:
            await agent.conn.close()
            agent.kill()
        assert_quiet(agent)
        assert stored_statuses(home) == ["cancelled"], f"attempt {attempt}"


async def test_two_quick_sigints_exit_130_without_a_traceback(tmp_path: Path) -> None:
    for attempt in range(ATTEMPTS):
        home, sandbox = fresh_home(tmp_path, attempt)
        agent, _, _ = await start_waiting_prompt(home, sandbox)
        try:
            agent.process.send_signal(signal.SIGINT)
            agent.process.send_signal(signal.SIGINT)
            assert await asyncio.wait_for(agent.process.wait(), WAIT_S) == 130
            await finish(agent)
        finally:
            agent.kill()
        assert_quiet(agent)
        assert stored_statuses(home) == ["cancelled"], f"attempt {attempt}"


async def test_two_sigints_while_idle_exit_130_quietly(tmp_path: Path) -> None:
    script = write_script(tmp_path / "script.json", {"text": "Hi."})
    idle = await AgentProcess.start(tmp_path, replay_env(tmp_path, script))
    try:
        await idle.conn.initialize(protocol_version=PROTOCOL_VERSION)
        idle.process.send_signal(signal.SIGINT)
        idle.process.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(idle.process.wait(), WAIT_S) == 130
        await finish(idle)
    finally:
        idle.kill()
    assert_quiet(idle)


async def test_cancel_request_cancels_the_prompt_it_names(
    tmp_path: Path, sandbox: Path, start_agent: StartAgent
) -> None:
    script = write_script(
        tmp_path / "script.json",
        {"text": "Waiting.", "tool_calls": [call("wait_for_file", "c_wait", name="never")]},
        {"text": "Found it."},
    )
    client = RecordingClient()
    env = replay_env(tmp_path, script)
    async with start_agent(env, "--tools", "acp_tools", client=client) as agent:
        await agent.conn.initialize(protocol_version=PROTOCOL_VERSION)
        sid = (await agent.conn.new_session(cwd=str(sandbox), mcp_servers=[])).session_id
        prompt = asyncio.ensure_future(
            agent.conn.prompt(session_id=sid, prompt=[text_block("Wait.")])
        )
        await client.wait_for_update(
            lambda u: u.session_update == "tool_call" and u.tool_call_id == "c_wait"
        )
        prompt_id = next(
            m["id"]
            for d, m in agent.messages()
            if d == TO_AGENT and m.get("method") == "session/prompt"
        )
        # A request that already has its answer, and a `$/` notification nobody defined:
        # both ignored, quietly.
        agent.send_message(
            {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 0}}
        )
        agent.inject(b'{"jsonrpc": "2.0", "method": "$/progress", "params": {}}\n')
        agent.send_message(
            {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": prompt_id}}
        )
        response = await asyncio.wait_for(prompt, WAIT_S)
        assert response.stop_reason == "cancelled"
        waited = client.tool_updates(sid, "c_wait")
        assert waited[-1].status == "failed"
        run_id = (response.field_meta or {})["cleveragents"]["runId"]

        # The session goes on (the script starts over; this time the file is there).
        (sandbox / "never").write_text("here")
        again = await agent.conn.prompt(session_id=sid, prompt=[text_block("Again.")])
        assert again.stop_reason == "end_turn"
        # No error answered the notifications (a notification has no answer).
        assert not [m for d, m in agent.messages() if d == TO_CLIENT and "error" in m]
    assert_quiet(agent)
    with RunHistory(tmp_path / "history.sqlite3") as history:
        stored = history.get_run(run_id)
        assert stored is not None and stored.status == "cancelled"
