"""`cleveragents serve --acp` driven by the ACP Python SDK's client over real stdio.

Every test runs the real agent process; on the way out the `start_agent` fixture closes it as
an editor does (exit code 0) and checks every message that crossed the pipes, both ways,
against the published ACP JSON Schema.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, RequestError, text_block
from acp.schema import PermissionOption, ToolCallUpdate

from cleveragents import jsonrpc_errors as codes
from cleveragents.service.history import RunHistory
from support.acp_support import (
    TO_AGENT,
    TO_CLIENT,
    RecordingClient,
    StartAgent,
    agent_env,
    call,
    open_session,
    ours,
    replay_env,
    write_script,
)


def statuses(updates: list[Any]) -> list[tuple[str, str | None]]:
    return [(u.session_update, u.status) for u in updates]


# -- the full loop -------------------------------------------------------------------------


async def test_a_prompt_streams_tool_calls_with_statuses_and_asks_before_changes(
    tmp_path: Path, sandbox: Path, start_agent: StartAgent
) -> None:
    (sandbox / "notes.txt").write_text("hello from the sandbox\n")
    script = write_script(
        tmp_path / "script.json",
        {"text": "Let me read it.", "tool_calls": [call("read_file", "c_read", path="notes.txt")]},
        {"tool_calls": [call("write_file", "c_yes", path="out.txt", content="written")]},
        {"tool_calls": [call("write_file", "c_no", path="nope.txt", content="refused")]},
        {"text": "All done."},
    )
    client = RecordingClient()
    asked: list[str] = []

    async def answer(tool_call: ToolCallUpdate, options: list[PermissionOption]) -> str:
        asked.append(tool_call.tool_call_id)
        kinds = {o.option_id: o.kind for o in options}
        assert kinds == {
            "allow": "allow_once",
            "allow_for_run": "allow_always",
            "deny": "reject_once",
        }
        return "allow" if tool_call.tool_call_id == "c_yes" else "deny"

    client.answer = answer
    async with start_agent(replay_env(tmp_path, script), client=client) as agent:
        init = await agent.conn.initialize(protocol_version=PROTOCOL_VERSION)
        assert init.protocol_version == PROTOCOL_VERSION
        assert init.agent_info is not None and init.agent_info.name == "cleveragents"
        session = await agent.conn.new_session(cwd=str(sandbox), mcp_servers=[])
        assert session.modes is not None and session.modes.current_mode_id == "ask"
        sid = session.session_id

        response = await agent.conn.prompt(
            session_id=sid, prompt=[text_block("Copy the notes, please.")]
        )

        assert response.stop_reason == "end_turn"
        run_id = ours(response)["runId"]
        assert ours(response)["toolCalls"] == 3
        assert client.text(sid) == "Let me read it.All done."

        # A read runs at once; the client sees it in progress, then completed with its output.
        read = client.tool_updates(sid, "c_read")
        assert statuses(read) == [("tool_call", "in_progress"), ("tool_call_update", "completed")]
        assert read[0].kind == "read"
        assert read[0].title == "read_file: notes.txt"
        assert read[0].raw_input == {"path": "notes.txt"}
        assert read[0].locations[0].path == str(sandbox / "notes.txt")
        assert "hello from the sandbox" in json.dumps(read[1].raw_output)
        assert "hello from the sandbox" in read[1].content[0].content.text
        meta = ours(read[1])
        assert meta["toolName"] == "read_file"
        assert meta["iteration"] == 1
        assert meta["errorKind"] is None
        assert isinstance(meta["durationMs"], float) and meta["durationMs"] >= 0

        # A change waits for permission: pending, asked, allowed, in progress, completed.
        assert asked == ["c_yes", "c_no"]
        allowed = client.tool_updates(sid, "c_yes")
        assert statuses(allowed) == [
            ("tool_call", "pending"),
            ("tool_call_update", "in_progress"),
            ("tool_call_update", "completed"),
        ]
        assert allowed[0].kind == "edit"
        assert (sandbox / "out.txt").read_text() == "written"
        assert ours(allowed[2])["iteration"] == 2

        # Rejected: pending, asked, failed as denied, and nothing written.
        denied = client.tool_updates(sid, "c_no")
        assert statuses(denied) == [("tool_call", "pending"), ("tool_call_update", "failed")]
        assert ours(denied[1])["errorKind"] == "denied"
        assert denied[1].raw_output["error_kind"] == "denied"
        assert not (sandbox / "nope.txt").exists()

        # On the wire: each permission request comes after its tool_call, and every update
        # of the prompt before its response.
        wire_order = agent.messages()
        position = {
            key: index
            for index, (direction, message) in enumerate(wire_order)
            for key in _keys(direction, message)
        }
        for call_id in ("c_yes", "c_no"):
            assert position[("tool_call", call_id)] < position[("permission", call_id)]
        prompt_id = next(
            m["id"] for d, m in wire_order if d == TO_AGENT and m.get("method") == "session/prompt"
        )
        last_update = max(
            i for i, (d, m) in enumerate(wire_order) if m.get("method") == "session/update"
        )
        assert last_update < position[("response", prompt_id)]

    with RunHistory(tmp_path / "history.sqlite3") as history:
        stored = history.get_run(run_id)
        assert stored is not None and stored.status == "finished"
        assert stored.sandbox_root == str(sandbox)
        assert [(r.call_id, r.success, r.error_kind) for r in stored.records] == [
            ("c_read", True, None),
            ("c_yes", True, None),
            ("c_no", False, "denied"),
        ]


def _keys(direction: str, message: dict[str, Any]) -> list[tuple[str, Any]]:
    params = message.get("params") or {}
    if message.get("method") == "session/update":
        update = params["update"]
        if update["sessionUpdate"] == "tool_call":
            return [("tool_call", update["toolCallId"])]
    if message.get("method") == "session/request_permission":
        return [("permission", params["toolCall"]["toolCallId"])]
    if direction == TO_CLIENT and "id" in message and "method" not in message:
        return [("response", message["id"])]
    return []


async def test_always_allow_lasts_the_session_and_the_second_prompt_continues_the_first(
    tmp_path: Path, sandbox: Path, start_agent: StartAgent
) -> None:
    from support.fake_openai import FakeOpenAIServer, text_reply, tool_call_reply

    client = RecordingClient()

    async def always(tool_call: ToolCallUpdate, options: list[PermissionOption]) -> str:
        return "allow_for_run"

    client.answer = always
    with FakeOpenAIServer() as fake:
        fake.enqueue(
            tool_call_reply("call_1", "write_file", '{"path": "a.txt", "content": "one"}'),
            text_reply("Wrote a.txt."),
            tool_call_reply("call_2", "write_file", '{"path": "b.txt", "content": "two"}'),
            text_reply("Wrote b.txt too."),
            tool_call_reply("call_3", "write_file", '{"path": "c.txt", "content": "three"}'),
            text_reply("Could not."),
        )
        env = agent_env(
            tmp_path,
            CLEVERAGENTS_PROVIDER="openai",
            CLEVERAGENTS_MODEL="fake-model",
            CLEVERAGENTS_BASE_URL=fake.base_url,
            OPENAI_API_KEY="sk-test",
        )
        async with start_agent(env, client=client) as agent:
            sid = await open_session(agent.conn, sandbox)
            first = await agent.conn.prompt(session_id=sid, prompt=[text_block("Write a.txt.")])
            assert first.stop_reason == "end_turn"
            second = await agent.conn.prompt(session_id=sid, prompt=[text_block("And b.txt?")])
            assert second.stop_reason == "end_turn"

            # Asked once; "always allow" covered the same tool in the next prompt.
            assert [tc.tool_call_id for _, tc, _ in client.permission_requests] == ["call_1"]
            assert statuses(client.tool_updates(sid, "call_2")) == [
                ("tool_call", "in_progress"),
                ("tool_call_update", "completed"),
            ]
            assert (sandbox / "a.txt").read_text() == "one"
            assert (sandbox / "b.txt").read_text() == "two"

            # The model saw the first prompt's whole exchange when answering the second.
            sent = fake.requests[2].body["messages"]
            said = [(m["role"], m.get("content")) for m in sent if m["role"] != "system"]
            assert said[0] == ("user", "Write a.txt.")
            assert ("assistant", "Wrote a.txt.") in said
            assert said[-1] == ("user", "And b.txt?")
            assert any(m["role"] == "tool" and m.get("tool_call_id") == "call_1" for m in sent)
            first_run, second_run = ours(first)["runId"], ours(second)["runId"]

            # "Always allow" does not outrank a read-only mode: the write is refused unasked.
            await agent.conn.set_session_mode(session_id=sid, mode_id="read-only")
            third = await agent.conn.prompt(session_id=sid, prompt=[text_block("And c.txt?")])
            assert third.stop_reason == "end_turn"
            refused = client.tool_updates(sid, "call_3")
            assert statuses(refused) == [("tool_call", "pending"), ("tool_call_update", "failed")]
            assert ours(refused[1])["errorKind"] == "denied"
            assert len(client.permission_requests) == 1
            assert not (sandbox / "c.txt").exists()

    with RunHistory(tmp_path / "history.sqlite3") as history:
        stored = history.get_run(second_run)
        assert stored is not None and stored.continued_from == first_run


# -- cancel and the limit ------------------------------------------------------------------


async def test_cancel_mid_run_answers_cancelled_and_the_session_goes_on(
    tmp_path: Path, sandbox: Path, start_agent: StartAgent
) -> None:
    script = write_script(
        tmp_path / "script.json",
        {"text": "Waiting.", "tool_calls": [call("wait_for_file", "c_wait", name="never")]},
        {"text": "Should not get here."},
    )
    client = RecordingClient()
    env = replay_env(tmp_path, script)
    async with start_agent(env, "--tools", "acp_tools", client=client) as agent:
        sid = await open_session(agent.conn, sandbox)
        prompt = asyncio.ensure_future(
            agent.conn.prompt(session_id=sid, prompt=[text_block("Wait for a file.")])
        )
        await client.wait_for_update(
            lambda u: u.session_update == "tool_call" and u.tool_call_id == "c_wait"
        )
        await agent.conn.cancel(session_id=sid)
        response = await asyncio.wait_for(prompt, 60)

        assert response.stop_reason == "cancelled"
        waited = client.tool_updates(sid, "c_wait")
        assert statuses(waited) == [("tool_call", "in_progress"), ("tool_call_update", "failed")]
        assert ours(waited[1])["errorKind"] == "cancelled"
        assert "Should not get here." not in client.text(sid)

        # The session is still there: the next prompt runs (the script starts over).
        (sandbox / "never").write_text("now it exists")
        again = await agent.conn.prompt(session_id=sid, prompt=[text_block("Try again.")])
        assert again.stop_reason == "end_turn"
    with RunHistory(tmp_path / "history.sqlite3") as history:
        assert history.get_run(ours(response)["runId"]).status == "cancelled"  # type: ignore[union-attr]


async def test_cancel_while_asking_for_permission(
    tmp_path: Path, sandbox: Path, start_agent: StartAgent
) -> None:
    script = write_script(
        tmp_path / "script.json",
        {"tool_calls": [call("write_file", "c_ask", path="x.txt", content="x")]},
        {"text": "Should not get here."},
    )
    client = RecordingClient()
    cancelled = asyncio.Event()

    async def after_cancel(tool_call: ToolCallUpdate, options: list[PermissionOption]) -> None:
        await agent.conn.cancel(session_id=sid)
        cancelled.set()
        return None  # ACP: a pending permission request is answered `cancelled`

    client.answer = after_cancel
    async with start_agent(replay_env(tmp_path, script), client=client) as agent:
        sid = await open_session(agent.conn, sandbox)
        response = await agent.conn.prompt(session_id=sid, prompt=[text_block("Write x.")])
        assert cancelled.is_set()
        assert response.stop_reason == "cancelled"
        updates = client.tool_updates(sid, "c_ask")
        assert statuses(updates) == [("tool_call", "pending"), ("tool_call_update", "failed")]
        assert ours(updates[1])["errorKind"] == "cancelled"
        assert not (sandbox / "x.txt").exists()


async def test_the_iteration_limit_is_max_turn_requests(
    tmp_path: Path, sandbox: Path, start_agent: StartAgent
) -> None:
    script = write_script(
        tmp_path / "script.json",
        *[{"tool_calls": [call("list_dir", f"c_{n}", path=".")]} for n in range(1, 4)],
    )
    env = replay_env(tmp_path, script, CLEVERAGENTS_MAX_ITERATIONS="2")
    client = RecordingClient()
    async with start_agent(env, client=client) as agent:
        sid = await open_session(agent.conn, sandbox)
        response = await agent.conn.prompt(session_id=sid, prompt=[text_block("Look around.")])
        assert response.stop_reason == "max_turn_requests"
        assert ours(response)["iterations"] == 2
        # The last allowed response's calls still ran and were reported.
        assert statuses(client.tool_updates(sid, "c_2"))[-1] == ("tool_call_update", "completed")
        assert client.tool_updates(sid, "c_3") == []


# -- profiles ------------------------------------------------------------------------------


async def test_the_profile_comes_from_meta_env_or_set_mode(
    tmp_path: Path, sandbox: Path, start_agent: StartAgent
) -> None:
    script = write_script(
        tmp_path / "script.json",
        {"tool_calls": [call("write_file", "c_w", path="w.txt", content="w")]},
        {"text": "Done."},
    )
    client = RecordingClient()  # any permission request fails the test
    env = replay_env(tmp_path, script, CLEVERAGENTS_PROFILE="full-auto")
    async with start_agent(env, client=client) as agent:
        # From the environment: full-auto writes without asking.
        sid = await open_session(agent.conn, sandbox)
        await agent.conn.prompt(session_id=sid, prompt=[text_block("Write.")])
        assert statuses(client.tool_updates(sid, "c_w"))[-1] == ("tool_call_update", "completed")

        # From _meta: read-only refuses the write, without asking either.
        read_only = await agent.conn.new_session(
            cwd=str(sandbox), mcp_servers=[], cleveragents={"automationProfile": "read-only"}
        )
        assert read_only.modes is not None and read_only.modes.current_mode_id == "read-only"
        await agent.conn.prompt(session_id=read_only.session_id, prompt=[text_block("Write.")])
        refused = client.tool_updates(read_only.session_id, "c_w")
        assert statuses(refused) == [("tool_call", "pending"), ("tool_call_update", "failed")]
        assert ours(refused[1])["errorKind"] == "denied"

        # session/set_mode switches it back for the next prompt.
        await agent.conn.set_session_mode(session_id=read_only.session_id, mode_id="full-auto")
        await agent.conn.prompt(session_id=read_only.session_id, prompt=[text_block("Again.")])
        assert statuses(client.tool_updates(read_only.session_id, "c_w"))[-1] == (
            "tool_call_update",
            "completed",
        )
        assert client.permission_requests == []

        with pytest.raises(RequestError) as bad_mode:
            await agent.conn.set_session_mode(session_id=sid, mode_id="yolo")
        assert bad_mode.value.code == codes.INVALID_PARAMS


# -- errors --------------------------------------------------------------------------------


async def test_a_provider_error_is_a_json_rpc_error_and_the_session_survives(
    tmp_path: Path, sandbox: Path, start_agent: StartAgent
) -> None:
    from support.fake_openai import FakeOpenAIServer, openai_error, text_reply

    with FakeOpenAIServer() as fake:
        fake.enqueue(openai_error(400, "this model does not exist"), text_reply("Fine now."))
        env = agent_env(
            tmp_path,
            CLEVERAGENTS_PROVIDER="openai",
            CLEVERAGENTS_MODEL="fake-model",
            CLEVERAGENTS_BASE_URL=fake.base_url,
            OPENAI_API_KEY="sk-test",
        )
        client = RecordingClient()
        async with start_agent(env, client=client) as agent:
            sid = await open_session(agent.conn, sandbox)
            with pytest.raises(RequestError) as failed:
                await agent.conn.prompt(session_id=sid, prompt=[text_block("Hello?")])
            assert failed.value.code == codes.RUN_FAILED
            assert "this model does not exist" in str(failed.value)
            assert failed.value.data is not None and failed.value.data["errorType"]
            answer = await agent.conn.prompt(session_id=sid, prompt=[text_block("Hello again?")])
            assert answer.stop_reason == "end_turn"
            assert client.text(sid) == "Fine now."


async def test_an_unusable_provider_is_a_json_rpc_error(
    tmp_path: Path, sandbox: Path, start_agent: StartAgent
) -> None:
    env = replay_env(tmp_path, str(tmp_path / "missing-script.json"))
    async with start_agent(env) as agent:
        sid = await open_session(agent.conn, sandbox)
        with pytest.raises(RequestError) as failed:
            await agent.conn.prompt(session_id=sid, prompt=[text_block("Hello?")])
        assert failed.value.code == codes.PROVIDER_UNAVAILABLE
        assert "missing-script.json" in str(failed.value)


async def test_bad_requests_get_errors_and_the_agent_keeps_serving(
    tmp_path: Path, sandbox: Path, start_agent: StartAgent
) -> None:
    script = write_script(tmp_path / "script.json", {"text": "Hi."})
    async with start_agent(replay_env(tmp_path, script)) as agent:
        await agent.conn.initialize(protocol_version=PROTOCOL_VERSION)
        for cwd in ("relative/path", str(sandbox / "missing")):
            with pytest.raises(RequestError) as bad_cwd:
                await agent.conn.new_session(cwd=cwd, mcp_servers=[])
            assert bad_cwd.value.code == codes.INVALID_PARAMS
            assert "cwd" in str(bad_cwd.value.data)
        with pytest.raises(RequestError) as bad_profile:
            await agent.conn.new_session(
                cwd=str(sandbox), mcp_servers=[], cleveragents={"automationProfile": "yolo"}
            )
        assert bad_profile.value.code == codes.INVALID_PARAMS

        with pytest.raises(RequestError) as no_session:
            await agent.conn.prompt(session_id="sess_nope", prompt=[text_block("Hi")])
        assert no_session.value.code == codes.INVALID_PARAMS

        sid = (await agent.conn.new_session(cwd=str(sandbox), mcp_servers=[])).session_id
        with pytest.raises(RequestError) as empty:
            await agent.conn.prompt(session_id=sid, prompt=[text_block("   ")])
        assert empty.value.code == codes.INVALID_PARAMS

        # Garbage on the wire is answered with a parse error; the session is unharmed.
        agent.inject(b"this is not json\n")
        agent.inject(b"[1, 2]\n")
        answer = await agent.conn.prompt(session_id=sid, prompt=[text_block("Hi")])
        assert answer.stop_reason == "end_turn"
        errors = [
            m["error"]["code"]
            for d, m in agent.messages()
            if d == TO_CLIENT and "error" in m and m["id"] is None
        ]
        assert errors == [-32700, -32600]


async def test_resources_in_prompts_and_tool_prints_stay_off_stdout(
    tmp_path: Path, sandbox: Path, start_agent: StartAgent
) -> None:
    from acp import embedded_text_resource, resource_block, resource_link_block

    from support.fake_openai import FakeOpenAIServer, text_reply, tool_call_reply

    with FakeOpenAIServer() as fake:
        fake.enqueue(tool_call_reply("call_s", "shout", '{"text": "boo"}'), text_reply("Done."))
        env = agent_env(
            tmp_path,
            CLEVERAGENTS_PROVIDER="openai",
            CLEVERAGENTS_MODEL="fake-model",
            CLEVERAGENTS_BASE_URL=fake.base_url,
            CLEVERAGENTS_PROFILE="full-auto",
            OPENAI_API_KEY="sk-test",
        )
        client = RecordingClient()
        async with start_agent(env, "--tools", "acp_tools", client=client) as agent:
            sid = await open_session(agent.conn, sandbox)
            answer = await agent.conn.prompt(
                session_id=sid,
                prompt=[
                    text_block("Shout about these."),
                    resource_link_block("app.py", (sandbox / "src" / "app.py").as_uri()),
                    resource_block(
                        embedded_text_resource("file:///elsewhere/notes.md", "remember this")
                    ),
                ],
            )
            assert answer.stop_reason == "end_turn"
            user = fake.requests[0].body["messages"][-1]["content"]
            assert user.startswith("Shout about these.")
            assert "Referenced: src/app.py" in user
            assert "remember this" in user and "/elsewhere/notes.md" in user
            assert statuses(client.tool_updates(sid, "call_s"))[-1] == (
                "tool_call_update",
                "completed",
            )
        # The tool's print and its child's went to stderr (the fixture parsed every stdout
        # line as one ACP message).
        assert b"shouting boo" in agent.stderr
        assert b"child says boo" in agent.stderr


async def test_audio_prompts_are_refused(
    tmp_path: Path, sandbox: Path, start_agent: StartAgent
) -> None:
    # Images are taken (test_acp_images.py); audio is not advertised, and refused.
    from acp import audio_block

    script = write_script(tmp_path / "script.json", {"text": "Hi."})
    async with start_agent(replay_env(tmp_path, script)) as agent:
        sid = await open_session(agent.conn, sandbox)
        with pytest.raises(RequestError) as refused:
            await agent.conn.prompt(
                session_id=sid, prompt=[text_block("Listen:"), audio_block("aGk=", "audio/wav")]
            )
        assert refused.value.code == codes.INVALID_PARAMS
        assert "prompt[1]: audio content is not supported" in str(refused.value.data)


# -- MCP servers ---------------------------------------------------------------------------

DEMO_SERVER = str(Path(__file__).resolve().parents[1] / "mcp_fixtures" / "demo_server.py")


async def test_mcp_servers_from_the_client_and_the_sandbox_serve_the_session(
    tmp_path: Path, sandbox: Path, start_agent: StartAgent
) -> None:
    import os
    import sys

    from acp.schema import EnvVariable, McpServerStdio

    (sandbox / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"demo": {"command": sys.executable, "args": [DEMO_SERVER]}}})
    )
    script = write_script(
        tmp_path / "script.json",
        {
            "tool_calls": [
                call("editor__add", "c_add", a=20, b=22),
                call("editor__whereami", "c_where", variable="GREETING"),
                call("demo__echo", "c_echo", text="hi"),
            ]
        },
        {"text": "Done."},
    )
    client = RecordingClient()
    env = replay_env(
        tmp_path, script, CLEVERAGENTS_PROFILE="full-auto", CLEVERAGENTS_TRUST_WORKSPACE="1"
    )
    async with start_agent(env, client=client) as agent:
        await agent.conn.initialize(protocol_version=PROTOCOL_VERSION)
        editor = McpServerStdio(
            name="editor",
            command=sys.executable,
            args=[DEMO_SERVER],
            env=[EnvVariable(name="GREETING", value="hello from the editor")],
        )
        session = await agent.conn.new_session(cwd=str(sandbox), mcp_servers=[editor])
        sid = session.session_id
        answer = await agent.conn.prompt(session_id=sid, prompt=[text_block("Use MCP.")])
        assert answer.stop_reason == "end_turn"

        added = client.tool_updates(sid, "c_add")
        assert added[0].kind == "other"  # an MCP tool that may do anything
        assert statuses(added)[-1] == ("tool_call_update", "completed")
        assert "42" in json.dumps(added[-1].raw_output)
        where = client.tool_updates(sid, "c_where")
        assert where[0].kind == "read"  # declared read-only
        reported = where[-1].raw_output
        assert reported["value"] == "hello from the editor"
        assert os.path.realpath(reported["cwd"]) == str(sandbox)
        server_pid = int(reported["pid"])
        echoed = client.tool_updates(sid, "c_echo")
        assert "echo: hi" in json.dumps(echoed[-1].raw_output)
    # The editor's server stopped with the agent.
    assert not _alive(server_pid)


async def test_a_client_mcp_server_that_cannot_start_fails_session_new(
    tmp_path: Path, sandbox: Path, start_agent: StartAgent
) -> None:
    from acp.schema import McpServerStdio

    script = write_script(tmp_path / "script.json", {"text": "Hi."})
    async with start_agent(replay_env(tmp_path, script)) as agent:
        await agent.conn.initialize(protocol_version=PROTOCOL_VERSION)
        broken = McpServerStdio(name="broken", command="/nonexistent/server", args=[], env=[])
        with pytest.raises(RequestError) as failed:
            await agent.conn.new_session(cwd=str(sandbox), mcp_servers=[broken])
        assert failed.value.code == codes.TOOLS_UNAVAILABLE
        assert "broken" in str(failed.value)
        # Without it, the session opens.
        assert (await agent.conn.new_session(cwd=str(sandbox), mcp_servers=[])).session_id


async def test_read_only_prompts_start_no_sandbox_mcp_server(
    tmp_path: Path, sandbox: Path, start_agent: StartAgent
) -> None:
    marker = tmp_path / "started"
    (sandbox / ".mcp.json").write_text(
        json.dumps(
            {"mcpServers": {"demo": {"command": "sh", "args": ["-c", f"touch {marker}; exit 1"]}}}
        )
    )
    script = write_script(tmp_path / "script.json", {"text": "Done."})
    # Pre-trusted: read-only alone must keep the server from starting.
    env = replay_env(
        tmp_path, script, CLEVERAGENTS_PROFILE="read-only", CLEVERAGENTS_TRUST_WORKSPACE="1"
    )
    async with start_agent(env) as agent:
        sid = await open_session(agent.conn, sandbox)
        answer = await agent.conn.prompt(session_id=sid, prompt=[text_block("Look.")])
        assert answer.stop_reason == "end_turn"
        assert not marker.exists()
        # Under another mode the same server is started (and fails, as it was written to).
        await agent.conn.set_session_mode(session_id=sid, mode_id="ask")
        with pytest.raises(RequestError) as failed:
            await agent.conn.prompt(session_id=sid, prompt=[text_block("Look again.")])
        assert failed.value.code == codes.TOOLS_UNAVAILABLE
        assert marker.exists()


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 :][:1] != b"Z"


# -- the editor goes away ------------------------------------------------------------------


async def test_closing_stdin_mid_run_cancels_it_records_it_and_exits_0(
    tmp_path: Path, sandbox: Path, start_agent: StartAgent
) -> None:
    script = write_script(
        tmp_path / "script.json",
        {"tool_calls": [call("wait_for_file", "c_wait", name="never")]},
    )
    client = RecordingClient()
    async with start_agent(
        replay_env(tmp_path, script), "--tools", "acp_tools", client=client
    ) as agent:
        sid = await open_session(agent.conn, sandbox)
        prompt = asyncio.ensure_future(
            agent.conn.prompt(session_id=sid, prompt=[text_block("Wait.")])
        )
        await client.wait_for_update(lambda u: u.session_update == "tool_call")
    # The fixture closed our end and saw exit code 0; the prompt never got its answer.
    with pytest.raises(ConnectionError):
        await prompt
    with RunHistory(tmp_path / "history.sqlite3") as history:
        (run,) = history.list_runs()
        assert run.status == "cancelled"
        stored = history.get_run(run.run_id)
        assert stored is not None
        assert [(r.call_id, r.error_kind) for r in stored.records] == [("c_wait", "cancelled")]


async def test_sigterm_mid_run_answers_cancelled_records_it_and_exits_143(
    tmp_path: Path, sandbox: Path
) -> None:
    import signal

    from support.acp_support import WAIT_S, AgentProcess, check_messages

    script = write_script(
        tmp_path / "script.json",
        {"tool_calls": [call("wait_for_file", "c_wait", name="never")]},
    )
    client = RecordingClient()
    agent = await AgentProcess.start(
        tmp_path, replay_env(tmp_path, script), "--tools", "acp_tools", client=client
    )
    try:
        sid = await open_session(agent.conn, sandbox)
        prompt = asyncio.ensure_future(
            agent.conn.prompt(session_id=sid, prompt=[text_block("Wait.")])
        )
        await client.wait_for_update(lambda u: u.session_update == "tool_call")
        agent.process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(agent.process.wait(), WAIT_S) == 128 + signal.SIGTERM
        # The prompt had its answer before the agent went.
        assert (await asyncio.wait_for(prompt, WAIT_S)).stop_reason == "cancelled"
        await agent.output_read()
        assert check_messages(agent.messages()) > 0
    finally:
        await agent.conn.close()
        agent.kill()
    with RunHistory(tmp_path / "history.sqlite3") as history:
        (run,) = history.list_runs()
        assert run.status == "cancelled"
