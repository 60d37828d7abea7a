"""Custom commands through the daemon over real stdio: `cleveragents/listCommands` lists a
folder's and the user's command files (checked against protocol/schema.json), and a run's
prompt `/name arguments` is expanded by the core before the model sees it."""

from __future__ import annotations

from pathlib import Path

from support.daemon_support import RawDaemon, check_against_schema, check_type, write_script


def write_commands(tmp_path: Path, sandbox: Path) -> None:
    workspace = sandbox / ".cleveragents" / "commands"
    workspace.mkdir(parents=True)
    (workspace / "review.md").write_text(
        "---\ndescription: Review a file as the team does\nargument-hint: FILE\n---\n"
        "Review $ARGUMENTS for naming and tests.\n"
    )
    # The workspace's `explain` hides the user's one of the same name.
    (workspace / "explain.md").write_text("Explain $1 in the team's words.\n")
    user = tmp_path / "config" / "cleveragents" / "commands"
    user.mkdir(parents=True)
    (user / "explain.md").write_text("Explain $1 simply.\n")
    (user / "summarise.md").write_text("# Summarise the changes\nSummarise what changed.\n")
    (user / "undo.md").write_text("A front's own command: never listed.\n")


async def test_list_commands_names_the_workspace_and_user_files(
    raw: RawDaemon, tmp_path: Path, sandbox: Path
) -> None:
    write_commands(tmp_path, sandbox)
    await raw.initialize({"provider": "offline", "pluginTools": False})
    answer = await raw.request("cleveragents/listCommands", {"sandboxRoot": str(sandbox)})
    result = answer["result"]
    check_type("ListCommandsResult", result)
    assert result["commands"] == [
        {
            "name": "explain",
            "description": "Explain $1 in the team's words.",
            "argumentHint": None,
            "source": "workspace",
        },
        {
            "name": "review",
            "description": "Review a file as the team does",
            "argumentHint": "FILE",
            "source": "workspace",
        },
        {
            "name": "summarise",
            "description": "Summarise the changes",
            "argumentHint": None,
            "source": "user",
        },
    ]


async def test_list_commands_refuses_a_folder_it_may_not_read(raw: RawDaemon) -> None:
    await raw.initialize({"provider": "offline", "pluginTools": False})
    answer = await raw.request("cleveragents/listCommands", {"sandboxRoot": "relative/path"})
    assert answer["error"]["code"] == -32602, answer
    assert "sandboxRoot" in answer["error"]["message"]
    missing = await raw.request("cleveragents/listCommands", {})
    assert missing["error"]["code"] == -32602, missing
    # The daemon is still there.
    again = await raw.request("cleveragents/listCommands", {"sandboxRoot": "/"})
    assert again["error"]["code"] == -32602, again


async def test_a_run_prompt_naming_a_command_runs_its_prompt(
    raw: RawDaemon, tmp_path: Path, sandbox: Path
) -> None:
    write_commands(tmp_path, sandbox)
    script = write_script(tmp_path / "script.json", {"text": "Reviewed."}, {"text": "Sent."})
    await raw.initialize({"provider": "replay", "replayScript": script, "pluginTools": False})
    first = await raw.request(
        "cleveragents/run",
        {"prompt": "/review app.py", "sandboxRoot": str(sandbox), "runId": "c1"},
    )
    assert first["result"]["stopReason"] == "final_answer", first
    # No such command: the text goes to the model as typed.
    second = await raw.request(
        "cleveragents/run",
        {"prompt": "/nosuch thing", "sandboxRoot": str(sandbox), "runId": "c2"},
    )
    assert second["result"]["stopReason"] == "final_answer", second

    started = raw.notifications("cleveragents/runStarted")
    for params in started:
        check_against_schema("cleveragents/runStarted", params)
    assert [p["prompt"] for p in started] == [
        "Review app.py for naming and tests.",
        "/nosuch thing",
    ]
    detail = (await raw.request("cleveragents/getRun", {"runId": "c1"}))["result"]
    assert detail["prompt"] == "Review app.py for naming and tests."
    assert detail["messages"][0] == {
        "role": "user",
        "text": "Review app.py for naming and tests.",
        "toolCalls": None,
        "results": None,
    }
