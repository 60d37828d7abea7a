"""The `cleveragents` command, run for real in subprocesses on temporary workspaces."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from mcp_fixtures.marked import SECRET_VALUE, starts, write_demo_config
from support import ROOT

CLI = [sys.executable, "-m", "cleveragents"]


@pytest.fixture(autouse=True)
def private_data_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Runs without --history store the run and its checkpoints in the user data folder.
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    target = tmp_path / "workspace"
    shutil.copytree(ROOT / "examples" / "workspace", target)
    return target


def cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "CLEVERAGENTS_PROVIDER": "", **(env or {})}
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, timeout=timeout, env=full_env, check=False
    )


def replay_run(workspace: Path, script: str, prompt: str = "x") -> list[str]:
    """`run PROMPT` on the workspace with the replay provider playing `script`."""
    return ["run", prompt, "--sandbox", str(workspace), "--provider", "replay", "--script", script]


def replay_script(tmp_path: Path, responses: list[dict[str, Any]]) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"responses": responses}))
    return str(path)


def test_offline_run_json_writes_the_report_inside_the_sandbox(
    workspace: Path, tmp_path: Path
) -> None:
    done = cli(
        "run",
        "Find the open TODOs and write a short report",
        "--sandbox",
        str(workspace),
        "--profile",
        "auto-edit",
        "--json",
        "--history",
        str(tmp_path / "h.sqlite3"),
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    names = [r["toolName"] for r in result["toolCallHistory"]]
    assert names[:3] == ["list_dir", "glob", "grep"] and "write_file" in names
    assert all(r["success"] for r in result["toolCallHistory"])
    assert result["stopReason"] == "final_answer" and result["terminatedByLimit"] is False
    report = (workspace / "cleveragents-offline-report.md").read_text()
    assert "src/inventory.py:12:" in report and "TODO" in report
    assert set(result["toolCallHistory"][0]) >= {
        "toolName",
        "inputs",
        "output",
        "durationMs",
        "success",
        "error",
        "iteration",
        "callId",
        "errorKind",
    }


def test_human_output_says_offline_and_shows_each_call(workspace: Path) -> None:
    done = cli("run", "Look around", "--sandbox", str(workspace), "--no-history")
    assert done.returncode == 0, done.stderr
    assert "offline model" in done.stdout
    assert "✓ list_dir" in done.stdout and "answer" in done.stdout
    # No terminal, profile `ask`: the writes were denied, not run.
    assert "✗ write_file" in done.stdout and "denied" in done.stdout
    assert not (workspace / "cleveragents-offline-report.md").exists()


def test_a_run_without_history_says_once_why_it_cannot_be_undone(workspace: Path) -> None:
    args = ("--sandbox", str(workspace), "--no-history", "--profile", "full-auto")
    done = cli("run", "Look around", *args)
    assert done.returncode == 0, done.stderr
    assert (workspace / "cleveragents-offline-report.md").exists()
    # The warning used to end by repeating its own start.
    flat = " ".join(done.stdout.split())
    assert flat.count("cannot be undone") == 1, done.stdout
    assert "this run cannot be undone: the run history is unavailable" in flat
    # README: the offline model counts no tokens, and the summary says so.
    assert "tool call(s), no token counts (the model reported none)" in flat


def test_iteration_limit_exits_3(workspace: Path, tmp_path: Path) -> None:
    script = replay_script(
        tmp_path,
        [
            {
                "text": f"step {n}",
                "tool_calls": [{"name": "list_dir", "arguments": {"path": "src"}}],
            }
            for n in range(1, 4)
        ],
    )
    done = cli(
        *replay_run(workspace, script, prompt="loop"),
        "--max-iterations",
        "2",
        "--json",
        "--no-history",
    )
    assert done.returncode == 3, done.stderr
    result = json.loads(done.stdout)
    assert result["terminatedByLimit"] is True and result["iterations"] == 2
    assert len(result["toolCallHistory"]) == 2


def test_usage_and_configuration_errors(workspace: Path, tmp_path: Path) -> None:
    done = cli("run", "x", "--sandbox", str(tmp_path / "absent"))
    assert done.returncode == 2 and "--sandbox: no such folder" in done.stderr
    done = cli("run", "x", "--sandbox", str(workspace), "--provider", "nope")
    assert done.returncode == 2 and "invalid choice" in done.stderr
    done = cli("run", "  ", "--sandbox", str(workspace))
    assert done.returncode == 2 and "the prompt: must not be empty" in done.stderr
    done = cli("run", "x", "--sandbox", str(workspace), "--max-iterations", "1001")
    assert done.returncode == 2, done.stderr
    assert done.stderr == "cleveragents: --max-iterations: must be at most 1000, got 1001\n"
    env = {"ANTHROPIC_API_KEY": "", "ANTHROPIC_AUTH_TOKEN": ""}
    done = cli(
        "run", "x", "--sandbox", str(workspace), "--provider", "anthropic", "--no-history", env=env
    )
    assert done.returncode == 1 and "ANTHROPIC_API_KEY" in done.stderr
    done = cli("run", "x", "--sandbox", str(workspace), "--provider", "replay", "--no-history")
    assert done.returncode == 1 and "needs a script" in done.stderr


def test_a_provider_failure_mid_run_exits_1_with_the_reason(
    workspace: Path, tmp_path: Path
) -> None:
    script = replay_script(tmp_path, [{"tool_calls": [{"name": "list_dir"}]}])
    done = cli(
        *replay_run(workspace, script),
        "--no-history",
    )
    assert done.returncode == 1
    assert "the run failed" in done.stderr and "iteration 2 asked for another" in done.stderr


def test_the_history_file_comes_from_cleveragents_history(workspace: Path, tmp_path: Path) -> None:
    """As for the daemon and ACP mode: --history, else $CLEVERAGENTS_HISTORY, else the data
    folder's."""
    chosen = tmp_path / "chosen" / "runs.sqlite3"
    chosen.parent.mkdir()
    env = {"CLEVERAGENTS_HISTORY": str(chosen)}
    done = cli(
        "run", "Look", "--sandbox", str(workspace), "--profile", "read-only", "--json", env=env
    )
    assert done.returncode == 0, done.stderr
    run_id = json.loads(done.stdout)["runId"]
    listed = cli("runs", "--json", env=env)
    assert [r["runId"] for r in json.loads(listed.stdout)] == [run_id]
    assert chosen.exists() and not (tmp_path / "data" / "cleveragents" / "history.sqlite3").exists()


def test_runs_are_stored_listed_shown_and_continued(workspace: Path, tmp_path: Path) -> None:
    history = str(tmp_path / "history.sqlite3")
    first = cli(
        "run",
        "First look",
        "--sandbox",
        str(workspace),
        "--profile",
        "read-only",
        "--json",
        "--history",
        history,
    )
    assert first.returncode == 0, first.stderr
    run_id = json.loads(first.stdout)["runId"]
    second = cli(
        "run",
        "Now again",
        "--sandbox",
        str(workspace),
        "--profile",
        "read-only",
        "--json",
        "--history",
        history,
        "--continue",
        run_id,
    )
    assert second.returncode == 0, second.stderr
    continued = json.loads(second.stdout)
    assert continued["continuedFrom"] == run_id

    listed = cli("runs", "--json", "--history", history)
    rows = json.loads(listed.stdout)
    assert [r["runId"] for r in rows] == [continued["runId"], run_id]
    assert rows[0]["continuedFrom"] == run_id and rows[1]["status"] == "finished"

    shown = cli("runs", "show", run_id, "--json", "--history", history)
    stored = json.loads(shown.stdout)
    assert [r["callId"] for r in stored["toolCallHistory"]] == [
        r["callId"] for r in json.loads(first.stdout)["toolCallHistory"]
    ]
    table = cli("runs", "--history", history)
    assert run_id in table.stdout
    missing = cli("runs", "show", "run_nope", "--history", history)
    assert missing.returncode == 1 and "no run 'run_nope'" in missing.stderr
    bad = cli("run", "x", "--sandbox", str(workspace), "--history", history, "--continue", "run_x")
    assert bad.returncode == 1 and "no run 'run_x' to continue" in bad.stderr


def test_user_tool_modules(workspace: Path, tmp_path: Path) -> None:
    package = tmp_path / "mytools"
    package.mkdir()
    (package / "__init__.py").write_text(
        "from cleveragents.tool import tool\n\n"
        "@tool\n"
        "def shout(text: str) -> str:\n"
        '    """Upper-case the text."""\n'
        "    return text.upper()\n"
    )
    env = {"PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    listed = cli("tools", "--tools", "mytools", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    rows = {r["name"]: r for r in json.loads(listed.stdout)}
    assert rows["shout"]["source"] == "mytools"
    assert rows["read_file"]["source"] == "builtin" and rows["run_command"]["executes_code"]
    script = replay_script(
        tmp_path,
        [
            {"tool_calls": [{"name": "shout", "arguments": {"text": "hi"}}]},
            {"text": "done"},
        ],
    )
    done = cli(
        *replay_run(workspace, script),
        "--tools",
        "mytools",
        "--json",
        "--no-history",
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["toolCallHistory"][0]["output"] == {"result": "HI"}
    broken = cli("tools", "--tools", "no_such_module_here")
    assert broken.returncode == 1 and "cannot import tool module" in broken.stderr


def wait_for_the_first_record(process: subprocess.Popen[str]) -> None:
    """Until the run's first call (list_dir) is done: the live view on stderr shows it."""
    assert process.stderr is not None
    seen = ""
    deadline = time.monotonic() + 30
    while "list_dir" not in seen and time.monotonic() < deadline:
        seen += process.stderr.readline()
    assert "list_dir" in seen


def test_ctrl_c_stops_the_run_and_keeps_what_finished(workspace: Path, tmp_path: Path) -> None:
    script = replay_script(
        tmp_path,
        [
            {"tool_calls": [{"name": "list_dir", "arguments": {}}]},
            {"text": "thinking for a long time", "delay_ms": 60000},
        ],
    )
    process = subprocess.Popen(
        [
            *CLI,
            *replay_run(workspace, script),
            "--json",
            "--no-history",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    wait_for_the_first_record(process)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 130, err
    result = json.loads(out)
    assert result["stopReason"] == "cancelled"
    assert [r["toolName"] for r in result["toolCallHistory"]] == ["list_dir"]


def test_entry_point_plugins_add_tools(workspace: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "plugtools").mkdir(parents=True)
    (site / "plugtools" / "__init__.py").write_text(
        "from cleveragents.tool import tool\n\n"
        "@tool\n"
        "def plugged(n: int) -> int:\n"
        '    """Double n."""\n'
        "    return 2 * n\n"
    )
    dist = site / "plugtools-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: plugtools\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[cleveragents.tools]\nplugged = plugtools:plugged\n")
    env = {"PYTHONPATH": f"{site}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    listed = cli("tools", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    rows = {r["name"]: r for r in json.loads(listed.stdout)}
    assert rows["plugged"]["source"] == "entry-point:plugged"


def run_under_pty(
    workspace: Path,
    script: str,
    answers: list[bytes],
    prompt: bytes = b"always this run",
    env: dict[str, str] | None = None,
) -> tuple[subprocess.Popen[bytes], bytes, int]:
    """Run the CLI on a pseudo-terminal, typing the next answer at each `prompt`."""
    import pty

    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [
            *CLI,
            *replay_run(workspace, script),
            "--no-history",
        ],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        close_fds=True,
        env={**os.environ, "TERM": "dumb", "COLUMNS": "200", **(env or {})},
    )
    os.close(follower)
    screen = b""
    pending = iter(answers)
    prompts = 0
    deadline = time.monotonic() + 60
    while process.poll() is None and time.monotonic() < deadline:
        try:
            screen += os.read(leader, 4096)
        except OSError:
            break
        if screen.count(prompt) > prompts:
            prompts += 1
            answer = next(pending, None)
            if answer is not None:
                os.write(leader, answer)
    process.wait(timeout=30)
    os.close(leader)
    return process, screen, prompts


def test_terminal_approvals_allow_deny_and_allow_for_run(workspace: Path, tmp_path: Path) -> None:
    def write(name: str) -> dict[str, Any]:
        return {"name": "write_file", "arguments": {"path": name, "content": name}}

    script = replay_script(
        tmp_path,
        [
            {"tool_calls": [write("a.txt")]},
            {"tool_calls": [write("b.txt")]},
            {"tool_calls": [write("c.txt")]},
            {"tool_calls": [write("d.txt")]},
            {"text": "done"},
        ],
    )
    answers = [b"n\n", b"y\n", b"a\n"]  # deny a, allow b, allow c and the rest of the run
    process, screen, prompts = run_under_pty(workspace, script, answers)
    text = screen.decode(errors="replace")
    assert process.returncode == 0, text
    assert prompts == 3  # d.txt ran without asking: "allow for this run"
    assert not (workspace / "a.txt").exists()
    assert [(workspace / n).read_text() for n in ("b.txt", "c.txt", "d.txt")] == [
        "b.txt",
        "c.txt",
        "d.txt",
    ]
    assert "the user denied write_file" in text


def test_mcp_servers_of_the_sandbox_are_listed_and_used(workspace: Path, tmp_path: Path) -> None:
    server = str(ROOT / "tests" / "mcp_fixtures" / "demo_server.py")
    (workspace / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"demo": {"command": sys.executable, "args": [server]}}})
    )
    listed = cli("tools", "--sandbox", str(workspace), "--json", "--trust-workspace")
    assert listed.returncode == 0, listed.stderr
    rows = {r["name"]: r for r in json.loads(listed.stdout)}
    assert rows["demo__add"]["source"] == "mcp:demo"
    assert rows["demo__add"]["input_schema"]["required"] == ["a", "b"]
    script = replay_script(
        tmp_path,
        [
            {"tool_calls": [{"name": "demo__add", "arguments": {"a": 2, "b": 40}}]},
            {"text": "42"},
        ],
    )
    done = cli(
        *replay_run(workspace, script),
        "--profile",
        "full-auto",
        "--json",
        "--no-history",
        env={"CLEVERAGENTS_TRUST_WORKSPACE": "1"},
    )
    assert done.returncode == 0, done.stderr
    (record,) = json.loads(done.stdout)["toolCallHistory"]
    assert record["success"] and "42" in json.dumps(record["output"])
    (workspace / ".mcp.json").write_text('{"mcpServers": {"broken": {"command": "/nonexistent"}}}')
    failed = cli("run", "x", "--sandbox", str(workspace), "--no-history", "--trust-workspace")
    assert failed.returncode == 1 and "broken" in failed.stderr


def test_serve_hands_its_options_to_the_daemon() -> None:
    done = cli("serve", "--stdio", "--tcp", "127.0.0.1:0")
    assert done.returncode == 2 and "not allowed with argument" in done.stderr
    shown = cli("serve", "--help")
    assert shown.returncode == 0 and "--history PATH" in shown.stdout


def test_tools_from_a_py_file_and_from_the_current_folder(workspace: Path, tmp_path: Path) -> None:
    (tmp_path / "localtools.py").write_text(
        "from cleveragents.tool import tool\n\n"
        "@tool\n"
        "def local_one() -> str:\n"
        '    """A tool next to the project."""\n'
        '    return "here"\n'
    )
    by_path = cli("tools", "--tools", str(tmp_path / "localtools.py"), "--json")
    assert by_path.returncode == 0, by_path.stderr
    assert "local_one" in {r["name"] for r in json.loads(by_path.stdout)}
    by_name = subprocess.run(
        [*CLI, "tools", "--tools", "localtools", "--json"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert by_name.returncode == 0, by_name.stderr
    missing = cli("tools", "--tools", str(tmp_path / "absent.py"))
    assert missing.returncode == 1 and "no such file" in missing.stderr


def test_ctrl_d_at_the_approval_prompt_denies(workspace: Path, tmp_path: Path) -> None:
    script = replay_script(
        tmp_path,
        [
            {
                "tool_calls": [
                    {"name": "write_file", "arguments": {"path": "a.txt", "content": "a"}}
                ]
            },
            {"text": "done"},
        ],
    )
    process, screen, _ = run_under_pty(workspace, script, [b"\x04"])  # Ctrl-D: end of input
    text = screen.decode(errors="replace")
    assert process.returncode == 0, text
    assert not (workspace / "a.txt").exists()
    assert "denied" in text and "EOFError" not in text


# -- workspace trust ---------------------------------------------------------------------------


def echo_script(tmp_path: Path) -> str:
    return replay_script(
        tmp_path,
        [
            {"tool_calls": [{"name": "demo__echo", "arguments": {"text": "hi"}}]},
            {"text": "done"},
        ],
    )


TRUST_PROMPT = b"start them?"


def test_the_terminal_asks_before_starting_mcp_servers_and_remembers(
    workspace: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "marker"
    write_demo_config(workspace, marker)
    env = {"XDG_DATA_HOME": str(tmp_path / "data")}
    script = echo_script(tmp_path)

    process, screen, prompts = run_under_pty(workspace, script, [b"n\n"], TRUST_PROMPT, env)
    text = screen.decode(errors="replace")
    assert process.returncode == 0, text
    assert prompts == 1 and starts(marker) == 0
    assert "demo:" in text and "--marker" in text and "DEMO_TOKEN" in text
    assert SECRET_VALUE not in text
    assert "not started: not trusted: you declined" in text
    assert "unknown_tool" in text

    # Declined is remembered: no question, nothing started.
    process, screen, prompts = run_under_pty(workspace, script, [], TRUST_PROMPT, env)
    assert process.returncode == 0 and prompts == 0 and starts(marker) == 0

    # A changed file is asked about again; yes starts the server and its tool runs.
    write_demo_config(workspace, marker, "main")
    process, screen, prompts = run_under_pty(workspace, script, [b"y\n"], TRUST_PROMPT, env)
    text = screen.decode(errors="replace")
    assert process.returncode == 0, text
    assert prompts == 1 and starts(marker) == 1
    assert "echo: hi" in text

    listed = cli("trust", "--json", env=env)
    assert [(d["sandbox_root"], d["trusted"]) for d in json.loads(listed.stdout)] == [
        (str(workspace), False),
        (str(workspace), True),
    ]
    forgot = cli("trust", "forget", str(workspace), env=env)
    assert forgot.returncode == 0 and "forgot 2 answer(s)" in forgot.stdout
    assert json.loads(cli("trust", "--json", env=env).stdout) == []


def test_without_a_terminal_nothing_starts_unless_pre_trusted(
    workspace: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "marker"
    write_demo_config(workspace, marker)
    env = {"XDG_DATA_HOME": str(tmp_path / "data")}
    script = echo_script(tmp_path)
    untrusted = cli(*replay_run(workspace, script), "--no-history", "--json", env=env)
    assert untrusted.returncode == 0, untrusted.stderr
    assert "not trusted: no terminal to ask at" in untrusted.stderr
    assert "--trust-workspace" in untrusted.stderr
    (record,) = json.loads(untrusted.stdout)["toolCallHistory"]
    assert record["errorKind"] == "unknown_tool"
    listed = cli("tools", "--sandbox", str(workspace), "--json", env=env)
    assert "demo__echo" not in {r["name"] for r in json.loads(listed.stdout)}
    assert starts(marker) == 0
    assert not (tmp_path / "data" / "cleveragents" / "trusted-workspaces.json").exists()

    trusted = cli(
        *replay_run(workspace, script), "--no-history", "--json", "--trust-workspace", env=env
    )
    assert trusted.returncode == 0, trusted.stderr
    assert json.loads(trusted.stdout)["toolCallHistory"][0]["success"]
    assert starts(marker) == 1
    bad = cli(*replay_run(workspace, script), env={**env, "CLEVERAGENTS_TRUST_WORKSPACE": "maybe"})
    assert bad.returncode == 2 and "CLEVERAGENTS_TRUST_WORKSPACE" in bad.stderr


@pytest.mark.skipif(sys.platform == "win32", reason="uses SIGKILL")
def test_a_run_whose_cli_was_killed_is_listed_interrupted_at_once(
    workspace: Path, tmp_path: Path
) -> None:
    """Issue 17, item 9: a run whose CLI process was killed stayed "running" in `runs` until
    some daemon started. Every reader of the history now names it interrupted."""
    history = str(tmp_path / "history.sqlite3")
    script = replay_script(
        tmp_path,
        [
            {"tool_calls": [{"name": "list_dir", "arguments": {}}]},
            {"text": "thinking for a long time", "delay_ms": 60000},
        ],
    )
    process = subprocess.Popen(
        [*CLI, *replay_run(workspace, script), "--json", "--history", history],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "CLEVERAGENTS_PROVIDER": ""},
    )
    try:
        wait_for_the_first_record(process)
        (alive,) = json.loads(cli("runs", "--json", "--history", history).stdout)
        assert alive["status"] == "running"  # its process lives: still running
        process.kill()
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        if process.stderr is not None:
            process.stderr.close()
    (listed,) = json.loads(cli("runs", "--json", "--history", history).stdout)
    assert listed["runId"] == alive["runId"] and listed["status"] == "interrupted"
    shown = json.loads(cli("runs", "show", alive["runId"], "--json", "--history", history).stdout)
    assert shown["status"] == "interrupted"
    assert shown["error"] == "the process running this run ended before the run finished"
    assert [r["toolName"] for r in shown["toolCallHistory"]] == ["list_dir"]  # nothing lost
    table = cli("runs", "--history", history, env={"COLUMNS": "200"}).stdout
    assert alive["runId"] in table and "interrupted" in table


def test_the_plan_is_a_checklist_and_the_instructions_are_named(
    workspace: Path, tmp_path: Path
) -> None:
    (workspace / "AGENTS.md").write_text("Keep the report short.\n")
    config = tmp_path / "config"
    (config / "cleveragents").mkdir(parents=True)
    (config / "cleveragents" / "AGENTS.md").write_text("British English.\n")

    def plan(*statuses: str) -> dict[str, Any]:
        steps = ["Read the notes", "Write the report", "Check it"]
        return {
            "name": "update_plan",
            "arguments": {
                "steps": [{"text": t, "status": s} for t, s in zip(steps, statuses, strict=True)]
            },
        }

    script = replay_script(
        tmp_path,
        [
            {"text": "Planning.", "tool_calls": [plan("in_progress", "pending", "pending")]},
            {"tool_calls": [plan("done", "in_progress", "pending")]},
            {"tool_calls": [plan("done", "done", "done")]},
            {"text": "Reported."},
        ],
    )
    history = str(tmp_path / "h.sqlite3")
    env = {"XDG_CONFIG_HOME": str(config), "COLUMNS": "200"}
    done = cli(*replay_run(workspace, script), "--history", history, env=env)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    user_file = config / "cleveragents" / "AGENTS.md"
    assert f"using AGENTS.md, 2 files: {user_file}, AGENTS.md" in out
    assert out.count("plan 0/3 done") == 1 and out.count("plan 3/3 done") == 1
    assert "  ▸ Read the notes\n  ○ Write the report\n  ○ Check it" in out
    assert "  ✓ Read the notes\n  ▸ Write the report\n  ○ Check it" in out
    assert "  ✓ Read the notes\n  ✓ Write the report\n  ✓ Check it" in out

    # `runs show` shows the plan as the run left it.
    run_id = json.loads(cli("runs", "--history", history, "--json").stdout)[0]["runId"]
    shown = cli("runs", "show", run_id, "--history", history, env={"COLUMNS": "200"})
    assert shown.returncode == 0, shown.stderr
    assert "last plan 3/3 done" in shown.stdout and "  ✓ Check it" in shown.stdout

    # Turned off: nothing named, nothing sent.
    again = cli(
        *replay_run(workspace, script), "--no-history", "--no-project-instructions", env=env
    )
    assert again.returncode == 0, again.stderr
    assert "using AGENTS.md" not in again.stdout
