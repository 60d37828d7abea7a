"""The terminal session's slash commands: parsing, completion, and what each does to a real
session (the core's RunManager with the offline model, a temp folder, a real history), fed
by piped lines; and the session as a command: piped stdin, the folders it refuses, and `run`
defaulting `--sandbox` to the current folder."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document
from rich.console import Console

from cleveragents.chat.editor import SlashCompleter
from cleveragents.chat.lines import PipedLines
from cleveragents.chat.session import ChatSession
from cleveragents.chat.slash import (
    BUILTIN_NAMES,
    BUILTINS,
    SlashCall,
    complete_names,
    help_lines,
    parse_line,
)
from cleveragents.display import LineReader
from cleveragents.providers.offline import REPORT_FILE
from cleveragents.service.history import RunHistory
from cleveragents.service.runs import RunManager
from cleveragents.service.settings import RunDefaults
from cleveragents.service.trust import TrustStore
from cleveragents.tool.messages import UserMessage
from cleveragents.toolsets import build_registry
from cleveragents.workspace.prompt_commands import RESERVED_NAMES, parse_command_file

CLI = [sys.executable, "-m", "cleveragents"]


# -- parsing ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("/undo", SlashCall("undo", "")),
        ("  /Undo  ", SlashCall("undo", "")),
        ("/restore 2 run_abc", SlashCall("restore", "2 run_abc")),
        ("/model   claude-opus-4-1 ", SlashCall("model", "claude-opus-4-1")),
        ("/greet Ada Lovelace", SlashCall("greet", "Ada Lovelace")),
        ("/Greet x", SlashCall("Greet", "x")),  # a custom name keeps its case (its file's)
    ],
)
def test_a_command_line_is_parsed(line: str, expected: SlashCall) -> None:
    assert parse_line(line) == expected


@pytest.mark.parametrize(
    "line", ["fix the bug", "/usr/bin is full", "see /undo", "/", "// comment", ""]
)
def test_other_lines_are_prompts(line: str) -> None:
    assert parse_line(line) is None


def test_builtins_are_names_no_command_file_can_take() -> None:
    assert BUILTIN_NAMES <= RESERVED_NAMES
    assert parse_line("/quit") == SlashCall("quit", "")
    assert SlashCall("quit", "").builtin and not SlashCall("greet", "").builtin


# -- completion and help ------------------------------------------------------------------------
def _greet() -> list[object]:
    return [parse_command_file("greet", "Say hello to $ARGUMENTS.", "workspace", "x/greet.md")]


def test_names_complete_from_the_slash_until_a_space() -> None:
    names = [c.name for c in BUILTINS] + ["greet", "review"]
    assert complete_names("/re", names) == ["restore", "review"]
    assert complete_names("/", names) == sorted(names)
    assert complete_names("/R", names) == ["restore", "review", "runs"]
    assert complete_names("/undo ", names) == []
    assert complete_names("undo", names) == []
    assert complete_names("/zz", names) == []


def test_the_completer_offers_builtin_and_custom_commands() -> None:
    completer = SlashCompleter(_greet())  # type: ignore[arg-type]
    found = list(completer.get_completions(Document("/g"), CompleteEvent()))
    assert [c.text for c in found] == ["/greet"]
    assert found[0].start_position == -2
    assert found[0].display_meta_text == "Say hello to $ARGUMENTS."
    assert [c.text for c in completer.get_completions(Document("/cos"), CompleteEvent())] == [
        "/cost"
    ]
    assert list(completer.get_completions(Document("hello /g"), CompleteEvent())) == []


def test_help_lists_every_builtin_and_the_custom_commands() -> None:
    text = "\n".join(help_lines(_greet()))  # type: ignore[arg-type]
    for command in BUILTINS:
        assert f"/{command.name}" in text
    assert "/greet" in text and "workspace: x/greet.md" in text
    assert "custom commands: none yet" in "\n".join(help_lines([]))


# -- what the commands do to a real session -----------------------------------------------------
async def _session(
    tmp_path: Path,
    lines: list[str],
    continue_from: str | None = None,
    defaults: RunDefaults | None = None,
) -> tuple[ChatSession, str, Path]:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    (project / "a.txt").write_text("hello\n")
    console = Console(file=io.StringIO(), width=200)
    history = RunHistory(tmp_path / "history.sqlite3")
    manager = RunManager(
        build_registry([]),
        defaults or RunDefaults(provider="offline", automation_profile="ask"),
        history,
        trust_store=TrustStore(tmp_path / "trust.json"),
    )
    session = ChatSession(
        manager,
        str(project.resolve()),
        PipedLines(io.StringIO("\n".join(lines) + "\n")),
        console,
        continue_from=continue_from,
    )
    try:
        await session.loop()
    finally:
        await manager.aclose()
        history.close()
    output = console.file.getvalue()  # type: ignore[attr-defined]
    return session, output, project


async def test_commands_before_any_prompt_say_what_is_missing(tmp_path: Path) -> None:
    session, output, _ = await _session(
        tmp_path,
        ["/undo", "/restore 1", "/restore x", "/undo now", "/cost", "/runs", "/nonesuch x"],
    )
    assert "nothing to undo yet: no prompt has run in this session" in output
    assert "no prompt has run in this session: /restore N RUN_ID" in output
    assert "use /restore N (the step to go back before) or /restore N RUN_ID" in output
    assert "/undo takes no arguments" in output
    assert "this session has run no prompt yet" in output
    assert "no run yet in this session" in output
    assert "unknown command /nonesuch: /help lists the commands" in output
    assert session.state.turns == []


async def test_profile_and_model_change_the_next_prompts(tmp_path: Path) -> None:
    session, output, _ = await _session(
        tmp_path,
        ["/profile", "/profile reckless", "/profile read-only", "/model", "/model my-model"],
    )
    assert "profile ask (/profile NAME changes it)" in output
    assert "unknown automation profile 'reckless'" in output
    assert "profile read-only from the next prompt on" in output
    assert "provider offline, model the provider's default" in output
    assert session.state.profile == "read-only"
    assert session.state.model == "my-model"


async def test_model_can_switch_the_provider_for_the_next_prompts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    session, output, _ = await _session(
        tmp_path,
        ["/model anthropic claude-x", "/model", "hello", "/model offline", "hello again"],
    )
    assert "provider anthropic, claude-x from the next prompt on" in output
    assert "provider anthropic, model claude-x (/model [PROVIDER] NAME changes it)" in output
    # The core got the provider: the first prompt ran on anthropic (no key here), the second
    # on the offline model, with the provider's own default model.
    assert "error: provider 'anthropic' is unavailable" in output
    assert "provider offline, its default model from the next prompt on" in output
    assert [t.status for t in session.state.turns] == ["final_answer"] and session.state.failed
    assert (session.state.provider, session.state.model) == ("offline", None)


async def test_undo_puts_the_prompts_files_back_and_a_second_undo_redoes(tmp_path: Path) -> None:
    session, output, project = await _session(
        tmp_path,
        [
            "/profile auto-edit",
            "write the report",
            "/runs",
            "/cost",
            "/undo",
            "/runs",
            "/undo",
            "/new",
            "/exit",
            "this line is never read",
        ],
    )
    report = project / REPORT_FILE
    [turn] = session.state.turns  # the line after /exit did not run
    assert turn.status == "final_answer"
    assert f"1. {turn.run_id}  final_answer" in output
    assert "this session: 1 prompt(s), no tokens reported, no cost" in output
    undone, redone = output.split("restored 1 file(s):")[1:]
    assert f"- {REPORT_FILE}  deleted" in undone
    assert f"+ {REPORT_FILE}  added" in redone
    assert report.exists()  # the second /undo undid the first
    assert len(session.state.restores) == 2
    assert "restores: " in output
    assert session.state.last_run_id is None  # /new: the next prompt starts afresh
    assert "new conversation" in output


async def test_each_prompt_continues_the_last(tmp_path: Path) -> None:
    session, _, _ = await _session(tmp_path, ["list the files", "and again", "/new", "afresh"])
    first, second, third = session.state.turns
    with RunHistory(tmp_path / "history.sqlite3") as history:
        assert history.chain(second.run_id) == [first.run_id, second.run_id]
        assert history.chain(third.run_id) == [third.run_id]


async def test_a_conversation_that_cannot_go_on_says_so_and_new_starts_afresh(
    tmp_path: Path,
) -> None:
    first, _, _ = await _session(tmp_path, ["/profile auto-edit", "write the report", "/undo"])
    [restore_id] = first.state.restores
    second, output, _ = await _session(tmp_path, ["hello", "/new", "hello"], restore_id)
    assert "is a restore, not a run with a conversation (/new starts a new conversation)" in output
    [turn] = second.state.turns
    assert turn.status == "final_answer" and second.state.failed


async def test_a_custom_command_runs_its_prompt(tmp_path: Path) -> None:
    commands = tmp_path / "project" / ".cleveragents" / "commands"
    commands.mkdir(parents=True)
    (commands / "look.md").write_text("Look at $1 and then $ARGUMENTS.\n")
    session, _, _ = await _session(tmp_path, ["/look a.txt twice"])
    [turn] = session.state.turns
    assert turn.prompt == "/look a.txt twice"  # `/runs` shows what was typed
    first = session.state.conversation[0]
    assert isinstance(first, UserMessage) and first.text == "Look at a.txt and then a.txt twice."
    assert [c.name for c in session.state.custom] == ["look"]


async def test_a_command_is_expanded_once_even_when_its_text_starts_with_a_slash(
    tmp_path: Path,
) -> None:
    commands = tmp_path / "project" / ".cleveragents" / "commands"
    commands.mkdir(parents=True)
    (commands / "outer.md").write_text("/inner $ARGUMENTS\n")
    (commands / "inner.md").write_text("Inner prompt for $ARGUMENTS.\n")
    session, output, _ = await _session(tmp_path, ["/outer a.txt", "/nonesuch x"])
    [turn] = session.state.turns
    first = session.state.conversation[0]
    # The model gets the command's text, not the text of the command that text names.
    assert isinstance(first, UserMessage) and first.text == "/inner a.txt"
    assert turn.prompt == "/outer a.txt"
    assert "unknown command /nonesuch: /help lists the commands" in output


async def test_a_command_file_written_during_the_session_is_found(tmp_path: Path) -> None:
    commands = tmp_path / "project" / ".cleveragents" / "commands"
    commands.mkdir(parents=True)

    class WritesACommand(PipedLines):
        """Writes the command file after the session has loaded its commands."""

        async def read(self) -> str:
            line = await super().read()
            if line.startswith("/late"):
                (commands / "late.md").write_text("Late prompt $ARGUMENTS.\n")
            return line

    project = tmp_path / "project"
    (project / "a.txt").write_text("hello\n")
    console = Console(file=io.StringIO(), width=200)
    manager = RunManager(
        build_registry([]),
        RunDefaults(provider="offline", automation_profile="ask"),
        None,
        trust_store=TrustStore(tmp_path / "trust.json"),
    )
    session = ChatSession(
        manager, str(project.resolve()), WritesACommand(io.StringIO("/late one\n")), console
    )
    try:
        await session.loop()
    finally:
        await manager.aclose()
    first = session.state.conversation[0]
    assert isinstance(first, UserMessage) and first.text == "Late prompt one."


async def test_a_plan_updated_three_times_is_drawn_as_a_compact_list(tmp_path: Path) -> None:
    steps = ["Read the notes", "Write the report", "Check it"]

    def plan(*statuses: str) -> dict[str, object]:
        listed = [{"text": t, "status": s} for t, s in zip(steps, statuses, strict=True)]
        return {"name": "update_plan", "arguments": {"steps": listed}}

    script = tmp_path / "script.json"
    responses = [
        {"text": "Planning.", "tool_calls": [plan("in_progress", "pending", "pending")]},
        {"tool_calls": [plan("done", "in_progress", "pending")]},
        {"tool_calls": [plan("done", "done", "done")]},
        {"text": "Reported."},
    ]
    script.write_text(json.dumps({"responses": responses}))
    defaults = RunDefaults(provider="replay", replay_script=str(script), automation_profile="ask")
    session, output, _ = await _session(tmp_path, ["report"], defaults=defaults)
    [turn] = session.state.turns
    assert turn.status == "final_answer"
    assert output.count("plan 0/3 done") == 1 and output.count("plan 3/3 done") == 1
    assert "  ▸ Read the notes\n  ○ Write the report\n  ○ Check it" in output
    assert "  ✓ Read the notes\n  ▸ Write the report\n  ○ Check it" in output
    assert "  ✓ Read the notes\n  ✓ Write the report\n  ✓ Check it" in output


async def test_always_lasts_the_session_not_one_prompt(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    write = {"name": "write_file", "arguments": {"path": "out.txt", "content": "x\n"}}
    script.write_text(json.dumps({"responses": [{"tool_calls": [write]}, {"text": "Written."}]}))
    questions: list[str] = []

    class AnswersAlways(PipedLines):
        """A terminal whose user answers each approval question "a" (always)."""

        @property
        def ask(self) -> LineReader | None:
            async def answer(console: Console, prompt: str) -> str:
                questions.append(prompt)
                return "a"

            return answer

    project = tmp_path / "project"
    project.mkdir()
    console = Console(file=io.StringIO(), width=200)
    manager = RunManager(
        build_registry([]),
        RunDefaults(provider="replay", replay_script=str(script), automation_profile="ask"),
        None,
        trust_store=TrustStore(tmp_path / "trust.json"),
    )
    lines = AnswersAlways(io.StringIO("write it\nagain\n/new\nonce more\n"))
    session = ChatSession(manager, str(project.resolve()), lines, console)
    try:
        await session.loop()
    finally:
        await manager.aclose()
    assert [t.status for t in session.state.turns] == ["final_answer"] * 3
    # Asked once, at the first prompt: later prompts (even a new conversation) do not ask.
    assert len(questions) == 1 and "lways this session: " in questions[0]
    assert session.state.always_allowed == {"write_file"}


# -- the command ----------------------------------------------------------------------------------
def _cli(
    args: list[str], cwd: Path, stdin: str, tmp_path: Path
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "CLEVERAGENTS_PROVIDER": "offline",
        "COLUMNS": "200",
    }
    return subprocess.run(
        [*CLI, *args], cwd=cwd, input=stdin, capture_output=True, text=True, env=env, timeout=120
    )


def test_piped_lines_are_prompts_of_one_conversation(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "a.txt").write_text("hello\n")
    done = _cli([], project, "list the files\n\n/cost\n", tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"cleveragents in {project.resolve()}: provider offline" in done.stdout
    assert "› list the files" in done.stdout  # noqa: RUF001 - the session's prompt
    assert "this session: 1 prompt(s)" in done.stdout
    chat = _cli(["chat", "--profile", "read-only"], project, "/profile\n", tmp_path)
    assert chat.returncode == 0 and "profile read-only (/profile" in chat.stdout


@pytest.mark.parametrize("where", ["root", "holds home"])
def test_a_folder_too_broad_is_refused_in_one_line(tmp_path: Path, where: str) -> None:
    folder = Path("/") if where == "root" else tmp_path
    env_home = {"HOME": str(tmp_path / "home")}
    (tmp_path / "home").mkdir()
    done = subprocess.run(
        CLI,
        cwd=folder,
        input="",
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env_home, "XDG_DATA_HOME": str(tmp_path / "data")},
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("cleveragents: the current")
    assert done.stdout == ""


def test_run_defaults_the_sandbox_to_the_current_folder(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    done = _cli(["run", "list the files", "--no-history"], project, "", tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"sandbox {project.resolve()}" in done.stdout
    refused = _cli(["run", "list the files", "--no-history"], Path("/"), "", tmp_path)
    assert refused.returncode == 2
    assert "--sandbox:" in refused.stderr and "(the current folder" in refused.stderr


def test_bad_options_exit_2_naming_the_flag(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    unknown = _cli(["chat", "--continue", "run_nonesuch"], project, "", tmp_path)
    assert unknown.returncode == 2
    assert "--continue: no run 'run_nonesuch' in the history" in unknown.stderr
    zero = _cli(["--max-iterations", "0"], project, "", tmp_path)
    assert zero.returncode == 2 and "--max-iterations" in zero.stderr


def test_a_failed_turn_is_said_the_session_goes_on_and_the_exit_is_1(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    env_key = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    done = subprocess.run(
        [*CLI, "--provider", "anthropic"],
        cwd=project,
        input="hello\n/cost\n",
        capture_output=True,
        text=True,
        timeout=120,
        env={**env_key, "XDG_DATA_HOME": str(tmp_path / "data"), "COLUMNS": "200"},
    )
    assert done.returncode == 1
    assert "error: provider 'anthropic' is unavailable" in done.stdout
    assert "this session has run no prompt yet" in done.stdout  # the next line was read
