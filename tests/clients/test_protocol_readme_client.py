"""The client printed in protocol/README.md ("Write your own client"), run exactly as printed
against the real daemon: its code block is extracted, written to a file and executed."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PROTOCOL_README = REPO / "protocol" / "README.md"
SECTION = "## Write your own client"
WAIT_S = 120.0  # a ceiling against hangs, never a timing assertion
DOC_ROOT = "/home/me/project"  # the sandbox root the README's transcript shows

# The replay script of the README's "A full exchange", which the transcript also uses.
FULL_EXCHANGE_SCRIPT = {
    "responses": [
        {
            "text": "Reading the notes.",
            "tool_calls": [
                {"id": "call_1", "name": "read_file", "arguments": {"path": "notes.txt"}}
            ],
        },
        {
            "text": "Adding the line.",
            "tool_calls": [
                {
                    "id": "call_2",
                    "name": "write_file",
                    "arguments": {"path": "notes.txt", "content": "hello\nworld\n"},
                }
            ],
        },
        {"text": "Done: notes.txt now ends with world."},
    ]
}


def section_blocks(language: str) -> list[list[str]]:
    """The fenced blocks of the given language in the section, line by line."""
    text = PROTOCOL_README.read_text(encoding="utf-8")
    start = text.index(SECTION)
    following = text.find("\n## ", start + len(SECTION))
    section = text[start : following if following >= 0 else len(text)]
    pattern = re.compile(rf"^```{language}\n(.*?)^```$", re.MULTILINE | re.DOTALL)
    return [match.group(1).splitlines() for match in pattern.finditer(section)]


def client_code() -> list[str]:
    (block,) = section_blocks("python")
    return block


def transcript() -> tuple[list[str], list[str]]:
    """The transcript's shell commands and its output lines."""
    (block,) = section_blocks("console")
    commands = [line[2:] for line in block if line.startswith("$ ")]
    return commands, [line for line in block if not line.startswith("$ ")]


def run_client(
    tmp_path: Path, prompt: str, answers: str, **environment: str
) -> subprocess.CompletedProcess[str]:
    client = tmp_path / "client.py"
    client.write_text("\n".join(client_code()) + "\n", encoding="utf-8")
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CLEVERAGENTS_", "ANTHROPIC_", "OPENAI_"))
    }
    env.update(
        XDG_DATA_HOME=str(tmp_path / "data"),
        CLEVERAGENTS_HISTORY=str(tmp_path / "history.sqlite3"),
        CLEVERAGENTS_PROFILE="ask",
        **environment,
    )
    return subprocess.run(
        [sys.executable, str(client), prompt, str(tmp_path / "project")],
        input=answers,
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=WAIT_S,
        check=False,
    )


def without_durations(lines: list[str]) -> list[str]:
    return [re.sub(r"\(\d+ ms\)$", "(N ms)", line) for line in lines]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "notes.txt").write_text("hello\n", encoding="utf-8")
    return folder


@pytest.fixture
def replay(tmp_path: Path) -> dict[str, str]:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(FULL_EXCHANGE_SCRIPT), encoding="utf-8")
    return {"CLEVERAGENTS_PROVIDER": "replay", "CLEVERAGENTS_REPLAY_SCRIPT": str(script)}


def test_the_client_is_under_sixty_lines_of_stdlib_python() -> None:
    code = client_code()
    assert len(code) < 60
    imported = {name for line in code for name in re.findall(r"^(?:import|from) (\w+)", line)}
    assert imported <= set(sys.stdlib_module_names), imported


def test_the_client_runs_the_readme_transcript_and_an_allowed_call_writes(
    tmp_path: Path, project: Path, replay: dict[str, str]
) -> None:
    commands, shown = transcript()
    assert commands[0] == (
        "export CLEVERAGENTS_PROVIDER=replay CLEVERAGENTS_REPLAY_SCRIPT=script.json"
    )
    prompt = "Add a line 'world' to notes.txt"
    assert commands[1] == f'python client.py "{prompt}" {DOC_ROOT}'

    completed = run_client(tmp_path, prompt, "y\n", **replay)

    assert completed.returncode == 0, completed.stderr  # the daemon's exit code after shutdown
    assert (project / "notes.txt").read_text(encoding="utf-8") == "hello\nworld\n"
    # On a terminal the answer typed ("y", Enter) shows after the prompt; from a pipe it
    # does not: otherwise the output is the README's, durations aside.
    expected: list[str] = []
    for line in shown:
        if expected and expected[-1].endswith("[y/N] ") and line == "":
            continue
        expected.append(line[:-1] if line.endswith("[y/N] y") else line)
    expected = [line.replace(DOC_ROOT, str(project)) for line in expected]
    assert without_durations(completed.stdout.splitlines()) == without_durations(expected)


def test_a_denied_call_changes_nothing(
    tmp_path: Path, project: Path, replay: dict[str, str]
) -> None:
    completed = run_client(tmp_path, "Add a line 'world' to notes.txt", "n\n", **replay)

    assert completed.returncode == 0, completed.stderr
    assert (project / "notes.txt").read_text(encoding="utf-8") == "hello\n"
    lines = completed.stdout.splitlines()
    assert "<- read_file ok" in lines[2]
    denied = [line for line in lines if line.startswith("<- write_file")]
    assert len(denied) == 1
    assert re.fullmatch(r"<- write_file denied: .+ \(\d+ ms\)", denied[0])
    assert lines[-1] == "[final_answer] Done: notes.txt now ends with world."


def test_a_run_that_cannot_start_prints_the_error(tmp_path: Path, project: Path) -> None:
    completed = run_client(tmp_path, "hello", "", CLEVERAGENTS_PROVIDER="anthropic")

    assert completed.returncode == 0, completed.stderr  # the run failed, the session did not
    last = completed.stdout.splitlines()[-1]
    assert last.startswith("[error] provider 'anthropic' is unavailable: ")
    assert "ANTHROPIC_API_KEY" in last
