"""`:CleverAgentsRestore` in a real headless Neovim against the real daemon and real git."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from clients.test_neovim_client import call, nvim, run_nvim, workspace, write_script

__all__ = ["nvim", "workspace"]  # the fixtures this module uses

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def test_restore_lists_the_files_asks_and_puts_them_back(
    nvim: str, tmp_path: Path, workspace: Path
) -> None:
    script = write_script(
        tmp_path / "script.json",
        {"text": "", "tool_calls": [call("w1", "write_file", path="out.txt", content="x\n")]},
        {
            "text": "",
            "tool_calls": [
                call("e1", "edit_file", path="notes.txt", old_text="hello", new_text="bye")
            ],
        },
        {"text": "Changed."},
    )
    facts = run_nvim(
        nvim,
        tmp_path,
        workspace,
        """
        setup({ approval = 'allow' })
        local run = cleveragents.run('Change two files')
        wait_for('the run to end', function() return run.done end)
        facts.run = describe(run)
        local function files()
          return {
            notes = vim.fn.readfile('notes.txt'),
            out = vim.fn.filereadable('out.txt') == 1,
          }
        end
        facts.asked = {}
        vim.ui.select = function(items, opts, on_choice)
          table.insert(facts.asked, { items = items, prompt = opts.prompt, kind = opts.kind })
          on_choice(#facts.asked == 1 and 'cancel' or 'restore')
        end
        local function settle(view)
          wait_for('the restore to end', function() return view.done end)
          return {
            lines = vim.api.nvim_buf_get_lines(view.buf, 0, -1, false),
            result = view.result or vim.NIL,
            error = view.error or vim.NIL,
            declined = view.declined or false,
            files = files(),
          }
        end
        facts.declined = settle(cleveragents.restore(run.id))
        facts.back = settle(cleveragents.restore(run.id, { iteration = 2 }))
        vim.cmd('CleverAgentsRestore! ' .. run.id)
        local buf = vim.fn.bufnr('cleveragents://restore/' .. run.id)
        wait_for('the whole restore', function()
          return vim.api.nvim_buf_get_lines(buf, 1, 2, false)[1] == 'restored 1 file:'
        end)
        facts.whole = {
          lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false),
          files = files(),
        }
        local shown = cleveragents.show_run(run.id)
        wait_for('the stored run', function() return shown.done end)
        facts.shown = vim.api.nvim_buf_get_lines(shown.buf, 0, -1, false)
        local missing = cleveragents.restore('no-such-run', { confirm = false })
        facts.missing = settle(missing)
        stop_daemon()
        """,
        script,
    )
    run = facts["run"]
    assert {(c["path"], c["change"]) for c in run["result"]["changedFiles"]} == {
        ("out.txt", "added"),
        ("notes.txt", "modified"),
    }
    run_id = run["id"]
    sandbox = str(workspace.resolve())

    declined = facts["declined"]
    assert facts["asked"][0] == {
        "items": ["restore", "cancel"],
        "prompt": f"cleveragents: restore 2 files in {sandbox}?",
        "kind": "cleveragents_restore",
    }
    assert declined["declined"] is True
    assert declined["lines"] == [
        f"cleveragents restore ▸ undo {run_id} · sandbox {sandbox}",
        "will change 2 files:",
        "  ~ notes.txt (modified)",
        "  - out.txt (deleted)",
        "not restored: nothing was changed",
    ]
    assert declined["files"] == {"notes": ["bye"], "out": True}

    back = facts["back"]
    assert back["files"] == {"notes": ["hello"], "out": True}  # iteration 1 kept
    restore_id = back["result"]["restoreId"]
    assert back["lines"] == [
        f"cleveragents restore ▸ run {run_id} to before iteration 2 · sandbox {sandbox}",
        "restored 1 file:",
        "  ~ notes.txt (modified)",
        f"undo this restore: :CleverAgentsRestore {restore_id}",
    ]
    whole = facts["whole"]
    assert whole["files"] == {"notes": ["hello"], "out": False}
    assert whole["lines"][2] == "  - out.txt (deleted)"
    assert len(facts["asked"]) == 2  # the bang asked nothing

    shown = facts["shown"]
    assert shown[-4:] == [
        "changed 2 files:",
        "  ~ notes.txt (modified)",
        "  + out.txt (added)",
        f"undo: :CleverAgentsRestore {run_id} [iteration]",
    ]
    assert facts["missing"]["error"] == "no run 'no-such-run' in the history (-32011)"
    assert facts["daemon_exit"] == 0
