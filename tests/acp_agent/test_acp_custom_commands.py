"""Custom commands over ACP, through the real agent process: advertised with the built-in
ones in `available_commands_update`, and `/name arguments` sent to the model as the command's
prompt (the fake OpenAI server records what the model got)."""

from __future__ import annotations

from pathlib import Path

from acp import PROTOCOL_VERSION, text_block

from support.acp_support import RecordingClient, StartAgent, agent_env
from support.fake_openai import FakeOpenAIServer, text_reply


async def test_custom_commands_are_advertised_and_expand_their_arguments(
    tmp_path: Path, sandbox: Path, start_agent: StartAgent
) -> None:
    commands = sandbox / ".cleveragents" / "commands"
    commands.mkdir(parents=True)
    (commands / "review.md").write_text(
        "---\ndescription: Review a file as the team does\nargument-hint: FILE\n---\n"
        "Review $ARGUMENTS for naming and tests.\n"
    )
    user = tmp_path / "config" / "cleveragents" / "commands"
    user.mkdir(parents=True)
    (user / "explain.md").write_text("# Explain code simply\nExplain $1 to a newcomer.\n")
    with FakeOpenAIServer() as fake:
        fake.enqueue(text_reply("Reviewed."), text_reply("Plain."))
        env = agent_env(
            tmp_path,
            CLEVERAGENTS_PROVIDER="openai",
            CLEVERAGENTS_MODEL="fake-model",
            CLEVERAGENTS_BASE_URL=fake.base_url,
            OPENAI_API_KEY="sk-test",
        )
        client = RecordingClient()
        async with start_agent(env, client=client) as agent:
            await agent.conn.initialize(protocol_version=PROTOCOL_VERSION)
            sid = (await agent.conn.new_session(cwd=str(sandbox), mcp_servers=[])).session_id
            advertised = await client.wait_for_update(
                lambda u: u.session_update == "available_commands_update"
            )
            listed = [
                (c.name, c.description, c.input.root.hint if c.input else None)
                for c in advertised.available_commands
            ]
            assert listed[:2] == [
                ("undo", listed[0][1], None),
                ("restore", listed[1][1], "N [RUN_ID]"),
            ]
            assert listed[2:] == [
                ("explain", "Explain code simply", "arguments"),
                ("review", "Review a file as the team does", "FILE"),
            ]
            sources = [
                c.field_meta["cleveragents"]["source"] for c in advertised.available_commands[2:]
            ]
            assert sources == ["user", "workspace"]

            done = await agent.conn.prompt(session_id=sid, prompt=[text_block("/review app.py")])
            assert done.stop_reason == "end_turn"
            again = await agent.conn.prompt(
                session_id=sid, prompt=[text_block("/explain parser.py quickly")]
            )
            assert again.stop_reason == "end_turn"
        sent = [
            [m["content"] for m in r.body["messages"] if m["role"] == "user"] for r in fake.requests
        ]
    assert sent[0] == ["Review app.py for naming and tests."]
    # The whole file is the prompt (its heading too); $1 is the first word typed.
    assert sent[1] == [
        "Review app.py for naming and tests.",
        "# Explain code simply\nExplain parser.py to a newcomer.",
    ]
