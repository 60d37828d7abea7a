"""The terminal session in a real pseudo-terminal: `cleveragents` alone, in a project folder,
against the fake Anthropic API through the real SDK.

The session runs as the terminal's foreground process (`pseudo_terminal.py`), so a Ctrl-C
typed during a turn is the kernel's SIGINT and one typed at a prompt is prompt_toolkit's key,
as for a user. One session: a prompt that edits a file (its approval answered inline), `/undo`
(the file is back), a second prompt that continues the conversation, a custom command
completed with Tab, `/cost`, an unknown command, Ctrl-C during a slow turn (the turn stops,
the session answers the next prompt), then Ctrl-D: exit 0.
"""

from __future__ import annotations

import json
import os
import re
import select
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cleveragents.chat.lines import PROMPT as LINE_PROMPT
from cleveragents.service.history import RunHistory
from support.fake_anthropic import API_KEY, FakeAnthropic, StreamReply, Text, ToolUse
from support.pseudo_terminal import spawn_on_pty

CLI = [sys.executable, "-m", "cleveragents"]
CEILING_S = 60.0  # against hangs, never a timing assertion
ANSI_ESCAPE = re.compile(rb"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>]|\r")
ORIGINAL = "original notes\n"
MODEL = "claude-sonnet-4-5"
# The session's prompt, without the space after it (drawn with cursor moves, not a space).
PROMPT = LINE_PROMPT.strip()


class Terminal:
    """The leader side of a pty running a command; `expect` waits for text on the screen."""

    def __init__(self, args: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.process, self.leader = spawn_on_pty(args, env, cwd)
        self.raw = b""
        self.seen = 0  # what `expect` has matched up to, in the plain screen

    @property
    def screen(self) -> str:
        return ANSI_ESCAPE.sub(b"", self.raw).decode("utf-8", "replace")

    def _read(self, wait_s: float) -> bool:
        ready, _, _ = select.select([self.leader], [], [], wait_s)
        if not ready:
            return True
        try:
            chunk = os.read(self.leader, 65536)
        except OSError:  # the child closed the terminal: it has exited
            return False
        self.raw += chunk
        return bool(chunk)

    def expect(self, text: str) -> str:
        """Wait until `text` shows after what was matched before; the screen since then."""
        deadline = time.monotonic() + CEILING_S
        while True:
            found = self.screen.find(text, self.seen)
            if found >= 0:
                since = self.screen[self.seen : found + len(text)]
                self.seen = found + len(text)
                return since
            if time.monotonic() > deadline or not self._read(0.2):
                raise AssertionError(f"{text!r} never showed; the screen:\n{self.screen}")

    def until(self, condition: Callable[[], bool]) -> None:
        """Read the screen until `condition` holds (the child still running)."""
        deadline = time.monotonic() + CEILING_S
        while not condition():
            if time.monotonic() > deadline or not self._read(0.1):
                raise AssertionError(f"never came to pass; the screen:\n{self.screen}")

    def type(self, keys: str) -> None:
        os.write(self.leader, keys.encode())

    def wait(self) -> int:
        deadline = time.monotonic() + CEILING_S
        while self.process.poll() is None and time.monotonic() < deadline:
            self._read(0.2)
        return self.process.wait(timeout=1)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        os.close(self.leader)


def _replies() -> list[StreamReply]:
    write = json.dumps({"path": "notes.txt", "content": "rewritten by the model\n"})
    return [
        # Prompt 1: a write (asked inline), then the answer.
        StreamReply([ToolUse("toolu_w", "write_file", [write])], stop_reason="tool_use"),
        StreamReply([Text(["I rewrote ", "notes.txt."])]),
        # Prompt 2: an answer that only the conversation so far can give.
        StreamReply([Text(["You asked me ", "to rewrite notes.txt."])]),
        # The custom command's prompt.
        StreamReply([Text(["Hello, Ada!"])]),
        # The slow turn: Ctrl-C comes long before this answer would.
        StreamReply([Text(["too late"])], delay_s=30.0),
        # The prompt after it.
        StreamReply([Text(["Still here."])]),
    ]


@pytest.fixture
def anthropic() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        yield server


def _user_texts(body: dict[str, Any]) -> list[str]:
    texts = []
    for message in body["messages"]:
        if message["role"] != "user":
            continue
        content = message["content"]
        blocks = [content] if isinstance(content, str) else content
        for block in blocks:
            if isinstance(block, str):
                texts.append(block)
            elif block.get("type") == "text":
                texts.append(block["text"])
    return texts


def test_a_conversation_in_a_real_terminal(tmp_path: Path, anthropic: FakeAnthropic) -> None:
    project = tmp_path / "project"
    (project / ".cleveragents" / "commands").mkdir(parents=True)
    (project / ".cleveragents" / "commands" / "greet.md").write_text(
        "---\ndescription: greet someone\n---\nSay hello to $ARGUMENTS.\n"
    )
    notes = project / "notes.txt"
    notes.write_text(ORIGINAL)
    anthropic.push(*_replies())
    env = {
        **os.environ,
        "TERM": "xterm-256color",
        "COLUMNS": "200",
        "LINES": "50",
        "NO_COLOR": "1",
        # No cursor-position questions: the test answers none.
        "PROMPT_TOOLKIT_NO_CPR": "1",
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "ANTHROPIC_API_KEY": API_KEY,
        "CLEVERAGENTS_PROVIDER": "anthropic",
        "CLEVERAGENTS_MODEL": MODEL,
    }
    env.pop("CLEVERAGENTS_PROFILE", None)
    terminal = Terminal([*CLI, "--base-url", anthropic.base_url], project, env)
    try:
        terminal.expect(f"cleveragents in {project.resolve()}: provider anthropic")
        terminal.expect(PROMPT)
        terminal.type("rewrite the notes\r")
        terminal.expect("write_file wants to run")
        terminal.expect("always this session:")
        terminal.type("y\r")
        turn = terminal.expect("/undo puts them back")
        assert "I rewrote notes.txt." in turn
        assert "1 tool call(s)" in turn
        assert notes.read_text() == "rewritten by the model\n"
        terminal.expect(PROMPT)

        terminal.type("/undo\r")
        assert "restored 1 file(s)" in terminal.expect("/undo undoes this restore")
        assert notes.read_text() == ORIGINAL  # the file the first prompt wrote is back
        terminal.expect(PROMPT)

        terminal.type("what did I ask you?\r")
        assert "You asked me to rewrite notes.txt." in terminal.expect("tool call(s)")
        # The second prompt's request carries the first: one conversation.
        assert _user_texts(anthropic.requests[2].body)[0] == "rewrite the notes"
        assert _user_texts(anthropic.requests[2].body)[-1] == "what did I ask you?"
        terminal.expect(PROMPT)

        terminal.type("/gr")
        terminal.expect("greet someone")  # the completion menu, as the name is typed
        terminal.type("\t")
        terminal.expect("/greet")
        terminal.type(" Ada\r")
        assert "Hello, Ada!" in terminal.expect("tool call(s)")
        assert _user_texts(anthropic.requests[3].body)[-1] == "Say hello to Ada."
        terminal.expect(PROMPT)

        terminal.type("/cost\r")
        terminal.expect("this session:")
        cost = terminal.expect("\n")
        assert re.search(r"3 prompt\(s\), [\d,]+ tokens in", cost), cost
        assert "~$" in cost
        terminal.expect(PROMPT)

        terminal.type("/nonesuch\r")
        terminal.expect("unknown command /nonesuch: /help lists the commands")
        terminal.expect(PROMPT)

        terminal.type("take your time\r")
        terminal.until(lambda: len(anthropic.requests) == 5)  # the slow request is in flight
        terminal.type("\x03")
        stopped = terminal.expect("turn stopped: the session goes on")
        assert "too late" not in stopped
        terminal.expect(PROMPT)

        terminal.type("are you there?\r")
        assert "Still here." in terminal.expect("tool call(s)")
        terminal.expect(PROMPT)

        terminal.type("\x04")
        code = terminal.wait()
    finally:
        terminal.close()
    assert code == 0, terminal.screen

    # The prompts typed, kept for Up and Ctrl-R in the next session, private to the user.
    typed = tmp_path / "data" / "cleveragents" / "prompt-history"
    kept = typed.read_text().splitlines()
    assert "+rewrite the notes" in kept and "+/undo" in kept
    assert "+y" not in kept  # an approval's answer is no prompt
    assert typed.stat().st_mode & 0o777 == 0o600
    with RunHistory(tmp_path / "data" / "cleveragents" / "history.sqlite3") as history:
        runs = [run for run in history.list_runs(limit=20) if run.kind == "run"]  # newest first
        # The five prompts are one conversation, the stopped turn in it.
        assert history.chain(runs[0].run_id) == [run.run_id for run in reversed(runs)]
    assert [run.status for run in reversed(runs)] == ["finished"] * 3 + ["cancelled", "finished"]
