"""Sessions that last: `session/list` and `session/load` against the run history.

One agent process holds a conversation and exits; another, on the same history, lists it,
loads it (the client sees the conversation replayed, in order, before the load answer) and
continues it: the model sees every earlier turn, and the history links the new run on.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, RequestError, text_block
from acp.schema import ClientCapabilities, Implementation

from cleveragents import jsonrpc_errors as codes
from cleveragents.service.history import RunHistory
from cleveragents.tool import (
    FunctionLLMCaller,
    LLMResponse,
    RunStarted,
    ToolActorContext,
    ToolCallingRuntime,
    ToolRegistry,
    ToolRunner,
)
from support.acp_support import (
    TO_AGENT,
    TO_CLIENT,
    RecordingClient,
    StartAgent,
    agent_env,
    replay_env,
    write_script,
)

RESOURCE_NOT_FOUND = -32002


def openai_env(home: Path, base_url: str, **settings: str) -> dict[str, str]:
    return agent_env(
        home,
        CLEVERAGENTS_PROVIDER="openai",
        CLEVERAGENTS_MODEL="fake-model",
        CLEVERAGENTS_BASE_URL=base_url,
        OPENAI_API_KEY="sk-test",
        **settings,
    )


async def initialize(conn: Any) -> Any:
    return await conn.initialize(
        protocol_version=PROTOCOL_VERSION,
        client_capabilities=ClientCapabilities(),
        client_info=Implementation(name="acp-tests", version="1"),
    )


REPLAYED = ("user_message_chunk", "agent_message_chunk", "tool_call")


def conversation_updates(client: RecordingClient, session_id: str) -> list[Any]:
    """The session's updates that redraw the conversation (not its slash commands, say)."""
    return [
        u
        for u in client.session_updates(session_id)
        if u.session_update in (*REPLAYED, "tool_call_update")
    ]


def shape(update: Any) -> tuple[Any, ...]:
    """What a replayed update says, in a form a test can compare."""
    kind = update.session_update
    if kind in ("user_message_chunk", "agent_message_chunk"):
        return (kind, update.content.text)
    return (kind, update.tool_call_id, update.status)


async def test_a_session_lists_loads_with_its_replay_and_continues(
    tmp_path: Path, sandbox: Path, start_agent: StartAgent
) -> None:
    from support.fake_openai import ChunkScript, FakeOpenAIServer, text_reply

    (sandbox / "notes.txt").write_text("the notes\n")
    with FakeOpenAIServer() as fake:
        fake.enqueue(
            ChunkScript()
            .text("Let me look.")
            .tool_call_start(0, "c_read", "read_file", '{"path": "notes.txt"}')
            .tool_call_start(1, "c_gone", "read_file", '{"path": "gone.txt"}')
            .finish("tool_calls")
            .reply(),
            text_reply("The notes say hi."),
            text_reply("Second answer."),
            text_reply("Third answer, with everything before in view."),
        )
        env = openai_env(tmp_path, fake.base_url, CLEVERAGENTS_PROFILE="full-auto")

        # The first agent: a session of two prompts, then the editor quits.
        first_client = RecordingClient()
        async with start_agent(env, client=first_client) as first:
            await initialize(first.conn)
            sid = (await first.conn.new_session(cwd=str(sandbox), mcp_servers=[])).session_id
            one = await first.conn.prompt(session_id=sid, prompt=[text_block("Read the notes.")])
            two = await first.conn.prompt(session_id=sid, prompt=[text_block("And then?")])
            assert (one.stop_reason, two.stop_reason) == ("end_turn", "end_turn")
            live = [shape(u) for u in conversation_updates(first_client, sid)]
        run_one = (one.field_meta or {})["cleveragents"]["runId"]
        run_two = (two.field_meta or {})["cleveragents"]["runId"]
        assert run_one == sid  # the session's first run carries its id

        # The second agent, on the same history.
        client = RecordingClient()
        async with start_agent(env, client=client) as second:
            init = await initialize(second.conn)
            caps = init.agent_capabilities
            assert caps.load_session is True
            assert caps.session_capabilities.list is not None

            listed = await second.conn.list_sessions(cwd=str(sandbox))
            (info,) = listed.sessions
            assert info.session_id == sid and info.cwd == str(sandbox)
            assert info.title == "Read the notes."
            assert info.updated_at and info.updated_at.endswith("Z")
            assert listed.next_cursor is None

            loaded = await second.conn.load_session(
                cwd=str(sandbox), session_id=sid, mcp_servers=[]
            )
            assert loaded.modes is not None and loaded.modes.current_mode_id == "full-auto"
            replayed = conversation_updates(client, sid)
            assert [shape(u) for u in replayed] == [
                ("user_message_chunk", "Read the notes."),
                ("agent_message_chunk", "Let me look."),
                ("tool_call", "c_read", "completed"),
                ("tool_call", "c_gone", "failed"),
                ("agent_message_chunk", "The notes say hi."),
                ("user_message_chunk", "And then?"),
                ("agent_message_chunk", "Second answer."),
            ]
            # Agent text and final tool statuses are what the first client saw live.
            finals = {s[1]: s for s in live if s[0] == "tool_call_update"}
            assert finals["c_read"][2] == "completed" and finals["c_gone"][2] == "failed"
            read = replayed[2]
            assert read.kind == "read" and read.title == "read_file: notes.txt"
            assert read.raw_input == {"path": "notes.txt"}
            assert "the notes" in json.dumps(read.raw_output)
            assert read.locations[0].path == str(sandbox / "notes.txt")
            assert read.field_meta["cleveragents"]["toolName"] == "read_file"
            assert replayed[3].field_meta["cleveragents"]["errorKind"] == "execution_error"
            assert replayed[0].field_meta["cleveragents"]["runId"] == run_one
            # Every replayed update went out before the load's answer.
            wire = second.messages()
            load_id = next(
                m["id"] for d, m in wire if d == TO_AGENT and m.get("method") == "session/load"
            )
            answered = next(
                i for i, (d, m) in enumerate(wire) if d == TO_CLIENT and m.get("id") == load_id
            )
            last_update = max(
                i
                for i, (d, m) in enumerate(wire)
                if m.get("method") == "session/update"
                and m["params"]["update"]["sessionUpdate"] in REPLAYED
            )
            assert last_update < answered

            # It continues: the model sees every earlier turn, and the history links the run.
            three = await second.conn.prompt(session_id=sid, prompt=[text_block("Anything else?")])
            assert three.stop_reason == "end_turn"
            sent = fake.requests[-1].body["messages"]
            said = [(m["role"], m.get("content")) for m in sent if m["role"] != "system"]
            assert said[0] == ("user", "Read the notes.")
            assert ("assistant", "The notes say hi.") in said
            assert ("user", "And then?") in said and ("assistant", "Second answer.") in said
            assert said[-1] == ("user", "Anything else?")
            assert [m.get("tool_call_id") for m in sent if m["role"] == "tool"] == [
                "c_read",
                "c_gone",
            ]
            run_three = (three.field_meta or {})["cleveragents"]["runId"]

            listed_again = await second.conn.list_sessions()
            assert [s.session_id for s in listed_again.sessions] == [sid]
            assert (listed_again.sessions[0].field_meta or {})["cleveragents"]["runs"] == 3

    with RunHistory(tmp_path / "history.sqlite3") as history:
        assert history.chain(run_three) == [run_one, run_two, run_three]


def store_conversations(history_file: Path, roots: dict[str, Path]) -> None:
    """Conversations made by the real runtime in this process (another front, say)."""
    registry = ToolRegistry()
    with RunHistory(history_file) as history:
        runtime = ToolCallingRuntime(
            registry,
            ToolRunner(registry),
            FunctionLLMCaller(lambda request: LLMResponse(text="ok")),
            observers=[history],
        )
        for run_id, root in roots.items():
            runtime.run_tool_loop(
                f"question {run_id}\nmore lines",
                ToolActorContext(sandbox_root=str(root)),
                run_id=run_id,
            )
        # One conversation of two runs, continued the way the daemon's continueFrom does it.
        history.mark_continuation("run_follow_up", "run_00")
        runtime.run_tool_loop(
            "follow-up",
            ToolActorContext(sandbox_root=str(roots["run_00"])),
            history=history.conversation("run_00"),
            run_id="run_follow_up",
        )
        # One still running in a live process (this one): it cannot be loaded meanwhile.
        history(RunStarted("run_busy", "busy", "", str(roots["run_00"]), "ask", 5))


async def test_list_filters_by_cwd_pages_and_load_refuses_what_it_cannot_continue(
    tmp_path: Path, sandbox: Path, start_agent: StartAgent
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    roots = {f"run_{n:02d}": sandbox for n in range(53)}
    roots.update({f"run_other_{n}": other for n in range(3)})
    store_conversations(tmp_path / "history.sqlite3", roots)
    script = write_script(tmp_path / "script.json", {"text": "Continued."})
    client = RecordingClient()
    async with start_agent(replay_env(tmp_path, script), client=client) as agent:
        await initialize(agent.conn)

        first = await agent.conn.list_sessions(cwd=str(sandbox))
        assert len(first.sessions) == 50 and first.next_cursor
        second = await agent.conn.list_sessions(cwd=str(sandbox), cursor=first.next_cursor)
        assert second.next_cursor is None
        ids = [s.session_id for s in [*first.sessions, *second.sessions]]
        # Latest activity first: the busy run, then the continued conversation, then the rest.
        assert ids[:2] == ["run_busy", "run_00"]
        assert sorted(ids) == sorted(["run_busy", *(f"run_{n:02d}" for n in range(53))])
        assert all(s.cwd == str(sandbox) for s in first.sessions)
        assert first.sessions[1].title == "question run_00"
        everywhere = await agent.conn.list_sessions()
        assert {s.cwd for s in everywhere.sessions} == {str(sandbox), str(other)}
        with pytest.raises(RequestError) as bad_cursor:
            await agent.conn.list_sessions(cursor="not-ours")
        assert bad_cursor.value.code == codes.INVALID_PARAMS
        with pytest.raises(RequestError) as relative:
            await agent.conn.list_sessions(cwd="relative/dir")
        assert relative.value.code == codes.INVALID_PARAMS

        # A conversation begun elsewhere loads and continues like any other.
        await agent.conn.load_session(cwd=str(sandbox), session_id="run_00", mcp_servers=[])
        assert [shape(u) for u in conversation_updates(client, "run_00")] == [
            ("user_message_chunk", "question run_00\nmore lines"),
            ("agent_message_chunk", "ok"),
            ("user_message_chunk", "follow-up"),
            ("agent_message_chunk", "ok"),
        ]
        answer = await agent.conn.prompt(session_id="run_00", prompt=[text_block("Go on.")])
        assert answer.stop_reason == "end_turn"
        new_run = (answer.field_meta or {})["cleveragents"]["runId"]

        for session_id, cwd, code in (
            ("run_nope", sandbox, RESOURCE_NOT_FOUND),
            ("run_follow_up", sandbox, RESOURCE_NOT_FOUND),  # not a first run
            ("run_01", other, codes.INVALID_PARAMS),  # it ran elsewhere
            ("run_busy", sandbox, codes.RUN_STILL_RUNNING),
        ):
            with pytest.raises(RequestError) as refused:
                await agent.conn.load_session(cwd=str(cwd), session_id=session_id, mcp_servers=[])
            assert refused.value.code == code, session_id
    with RunHistory(tmp_path / "history.sqlite3") as history:
        assert history.chain(new_run) == ["run_00", "run_follow_up", new_run]


async def test_without_a_history_sessions_neither_list_nor_load(
    tmp_path: Path, sandbox: Path, start_agent: StartAgent
) -> None:
    script = write_script(tmp_path / "script.json", {"text": "Hi."})
    async with start_agent(replay_env(tmp_path, script), "--no-history") as agent:
        init = await initialize(agent.conn)
        assert init.agent_capabilities.load_session is False
        assert init.agent_capabilities.session_capabilities.list is None
        with pytest.raises(RequestError) as refused:
            await agent.conn.list_sessions()
        assert refused.value.code == codes.INVALID_REQUEST
        assert "history" in str(refused.value)
        sid = (await agent.conn.new_session(cwd=str(sandbox), mcp_servers=[])).session_id
        first = await agent.conn.prompt(session_id=sid, prompt=[text_block("Hi")])
        second = await agent.conn.prompt(session_id=sid, prompt=[text_block("Again")])
        ids = [(r.field_meta or {})["cleveragents"]["runId"] for r in (first, second)]
        assert ids[0] == sid and ids[1] != sid
    assert not os.path.exists(tmp_path / "history.sqlite3")
