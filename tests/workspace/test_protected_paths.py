"""Protected paths (issue 17, item 3): no code planted for later without a yes.

`.git/hooks/pre-commit` and `core.fsmonitor` in `.git/config` run on the next commit or the
next `git status` an editor runs on its own, outside every wall. Under `full-auto` with nobody
to ask, the file tools and commands are refused them; with the explicit opt-in they may; with
an approver, each such write is asked about under every profile. `git commit` inside the wall
keeps working. Through the real runtime and registry, with real bubblewrap, and through the
CLI with the replay provider.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from cleveragents.service.settings import CommandSettings, command_policy
from cleveragents.tool import (
    ApprovalRequest,
    LLMRequest,
    LLMResponse,
    ToolActorContext,
    ToolCallingRuntime,
    ToolCallRequest,
    ToolRegistry,
    ToolRunner,
)
from cleveragents.tool.records import ToolCallRecord
from cleveragents.toolsets import with_command_policy
from cleveragents.workspace import CommandPolicy, bubblewrap_status, register_builtin_tools
from cleveragents.workspace.command_policy import command_mounts
from cleveragents.workspace.protected import command_targets, git_folder_write, matching_pattern
from cleveragents.workspace.terminal_runner import read_spec, write_spec

BWRAP = bubblewrap_status()
needs_bwrap = pytest.mark.skipif(
    not BWRAP.available, reason=f"bubblewrap is not usable here: {BWRAP.reason}"
)
HOOK = "#!/bin/sh\ntouch /tmp/cleveragents-planted-hook\n"
FSMONITOR = "[core]\n\tfsmonitor = touch /tmp/cleveragents-planted-fsmonitor\n"
GIT_USER = "-c user.name=t -c user.email=t@example.invalid"


def git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "main.py").write_text("print('hi')\n")
    git(root, "init", "-q")
    git(root, "add", "main.py")
    git(root, "commit", "-q", "-m", "first")
    return root


def calls_then_done(*calls: tuple[str, dict[str, Any]]) -> Callable[[LLMRequest], LLMResponse]:
    def model(request: LLMRequest) -> LLMResponse:
        if request.iteration <= len(calls):
            name, arguments = calls[request.iteration - 1]
            return LLMResponse(
                tool_calls=[ToolCallRequest(f"c{request.iteration}", name, arguments)]
            )
        return LLMResponse(text="done")

    return model


def run_loop(
    root: Path,
    calls: list[tuple[str, dict[str, Any]]],
    *,
    policy: CommandPolicy | None = None,
    profile: str = "full-auto",
    answer: str | None = None,
    run_policy: CommandPolicy | None = None,
) -> tuple[list[ToolCallRecord], list[ApprovalRequest]]:
    """The calls through the real runtime; `answer` None means nobody can be asked."""
    asked: list[ApprovalRequest] = []

    async def approve(request: ApprovalRequest) -> Any:
        asked.append(request)
        return answer

    registry = ToolRegistry()
    register_builtin_tools(registry, command_policy=policy or CommandPolicy())
    if run_policy is not None:  # a run's own command settings, as service/runs.py applies them
        registry = with_command_policy(registry, run_policy)
    runtime = ToolCallingRuntime(
        registry,
        ToolRunner(registry),
        calls_then_done(*calls),
        approver=approve if answer is not None else None,
    )
    context = ToolActorContext(sandbox_root=str(root), automation_profile=profile)
    result = runtime.run_tool_loop("go", context)
    return list(result.tool_call_history), asked


PLANTS = [
    ("write_file", {"path": ".git/hooks/pre-commit", "content": HOOK}),
    ("edit_file", {"path": ".git/config", "old_text": "[core]\n", "new_text": FSMONITOR}),
    ("write_file", {"path": ".vscode/tasks.json", "content": "{}"}),
    ("write_file", {"path": "sub/.envrc", "content": "export X=1\n"}),
]


def test_the_file_tools_are_refused_protected_paths_under_full_auto(repo: Path) -> None:
    config_before = (repo / ".git" / "config").read_text()
    (repo / "hooks").symlink_to(".git/hooks")  # a link to the hooks is the same path

    records, _ = run_loop(
        repo, [*PLANTS, ("write_file", {"path": "hooks/post-checkout", "content": HOOK})]
    )

    for record in records:
        assert record.error_kind == "denied", record
        assert "CLEVERAGENTS_ALLOW_PROTECTED_WRITES=1" in (record.error or "")
        assert "protected path" in (record.error or "")
    assert ".git/hooks/pre-commit" in (records[0].error or "")
    assert ".git/hooks/post-checkout" in (records[-1].error or "")
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()
    assert not (repo / ".git" / "hooks" / "post-checkout").exists()
    assert (repo / ".git" / "config").read_text() == config_before
    assert not (repo / ".vscode").exists() and not (repo / "sub").exists()


def test_an_approver_is_asked_about_each_protected_write_under_every_profile(
    repo: Path,
) -> None:
    for profile in ("auto-edit", "full-auto"):
        records, asked = run_loop(repo, PLANTS[:1] * 2, profile=profile, answer="allow_for_run")
        # "Allow for this run" does not cover the next protected write: asked twice.
        assert len(asked) == 2 and all(r.success for r in records)
        assert ".git/hooks/pre-commit" in (asked[0].note or "")
        # Marked as such, so no front's "always allow" answers it (ACP, the daemon's clients).
        assert all(request.protected for request in asked)
    denied, asked = run_loop(repo, PLANTS[1:2], answer="deny")
    assert denied[0].error_kind == "denied" and len(asked) == 1
    assert "fsmonitor" not in (repo / ".git" / "config").read_text()


def test_the_opt_in_lets_the_file_tools_write_them(repo: Path) -> None:
    records, asked = run_loop(repo, PLANTS, policy=CommandPolicy(allow_protected_writes=True))
    assert asked == [] and all(r.success for r in records), records
    assert (repo / ".git" / "hooks" / "pre-commit").read_text() == HOOK
    assert "fsmonitor" in (repo / ".git" / "config").read_text()
    # A run's own settings decide for that run, in both directions.
    (repo / ".git" / "hooks" / "pre-commit").unlink()
    records, _ = run_loop(
        repo,
        PLANTS[:1],
        policy=CommandPolicy(allow_protected_writes=True),
        run_policy=CommandPolicy(allow_protected_writes=False),
    )
    assert records[0].error_kind == "denied"


def test_ordinary_files_are_not_asked_about(repo: Path) -> None:
    records, asked = run_loop(
        repo,
        [("write_file", {"path": "src/git_hooks.py", "content": "x = 1\n"})],
        profile="auto-edit",
        answer="deny",
    )
    assert asked == [] and records[0].success


# -- a git folder under another name -----------------------------------------------------------
def git_dir_accepts(root: Path, folder: str) -> bool:
    """Whether git takes `folder` as a repository when GIT_DIR points at it (as a `.git`
    file's `gitdir:` would)."""
    done = subprocess.run(
        ["git", "--git-dir", str(root / folder), "rev-parse", "--git-dir"],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    return done.returncode == 0


CRAFTED_CONFIG = "[core]\n\trepositoryformatversion = 0\n" + FSMONITOR


def craft(folder: str) -> list[tuple[str, dict[str, Any]]]:
    """Config first, while `folder` is an ordinary folder; then HEAD, objects and refs."""
    return [
        ("write_file", {"path": f"{folder}/config", "content": CRAFTED_CONFIG}),
        ("write_file", {"path": f"{folder}/HEAD", "content": "ref: refs/heads/main\n"}),
        ("write_file", {"path": f"{folder}/objects/info/packs", "content": ""}),
        ("write_file", {"path": f"{folder}/refs/heads/.keep", "content": ""}),
    ]


def test_a_git_folder_under_another_name_is_protected_whatever_the_order(
    repo: Path,
) -> None:
    # The code-running parts of an existing one: asked about, so refused with nobody to ask.
    bare = repo / "vendor" / "lib.git"
    git(repo, "init", "-q", "--bare", str(bare))
    records, _ = run_loop(
        repo,
        [
            (
                "edit_file",
                {"path": "vendor/lib.git/config", "old_text": "[core]\n", "new_text": FSMONITOR},
            ),
            ("write_file", {"path": "vendor/lib.git/hooks/post-checkout", "content": HOOK}),
            ("write_file", {"path": "vendor/lib.git/info/attributes", "content": "* filter=x\n"}),
        ],
    )
    assert [r.error_kind for r in records] == ["denied"] * 3, records
    assert "config of the git folder vendor/lib.git" in (records[0].error or "")
    assert "fsmonitor" not in (bare / "config").read_text()
    assert not (bare / "hooks" / "post-checkout").exists()

    # Crafted file by file, config first: the write that would make `store` a git folder
    # (refs, the last mark) is the one asked about, and refused; git does not take it.
    records, _ = run_loop(repo, craft("store"))
    assert [r.error_kind for r in records] == [None, None, None, "denied"], records
    assert "makes store a git folder, whose config or hooks git would run" in (
        records[-1].error or ""
    )
    assert not git_dir_accepts(repo, "store")

    # Marks first, config last: the config of what is now a git folder is asked about.
    config, *marks = craft("other")
    records, _ = run_loop(repo, [*marks, config])
    assert [r.error_kind for r in records] == [None, None, None, "denied"], records
    assert "config of the git folder other" in (records[-1].error or "")
    assert not (repo / "other" / "config").exists()


def test_with_the_opt_in_the_crafted_folder_is_a_repository_git_uses(repo: Path) -> None:
    """What the check stops is real: with the opt-in, the same writes make a git folder that
    git takes, with the planted `core.fsmonitor`."""
    records, asked = run_loop(
        repo, craft("store"), policy=CommandPolicy(allow_protected_writes=True)
    )
    assert asked == [] and all(r.success for r in records), records
    assert git_dir_accepts(repo, "store")
    fsmonitor = subprocess.run(
        ["git", "--git-dir", str(repo / "store"), "config", "core.fsmonitor"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert fsmonitor.stdout.strip() == "touch /tmp/cleveragents-planted-fsmonitor"


def test_a_commondir_makes_a_git_folder_of_a_head_alone(tmp_path: Path) -> None:
    """`HEAD` and a `commondir` (which lends another folder's objects, refs, config and hooks)
    are a git folder too: the commondir that completes one is protected, plain files are not."""
    (tmp_path / "wt").mkdir()
    (tmp_path / "wt" / "HEAD").write_text("ref: refs/heads/main\n")
    assert git_folder_write(str(tmp_path), ("wt", "commondir")) == "commondir of the git folder wt"
    assert git_folder_write(str(tmp_path), ("wt", "notes.txt")) is None
    assert git_folder_write(str(tmp_path), ("other", "commondir")) is None  # no HEAD there


def test_files_named_like_git_parts_elsewhere_are_not_asked_about(repo: Path) -> None:
    records, asked = run_loop(
        repo,
        [
            ("write_file", {"path": "app/config", "content": "x = 1\n"}),
            ("write_file", {"path": "app/HEAD", "content": "notes\n"}),
            ("write_file", {"path": "app/hooks/use_thing.js", "content": "export {}\n"}),
            ("write_file", {"path": "app/refs/a.md", "content": "# refs\n"}),
        ],
        profile="auto-edit",
        answer="deny",
    )
    # `app` has HEAD and refs but no objects: not a git folder, nothing asked.
    assert asked == [] and all(r.success for r in records), records


def test_the_patterns() -> None:
    assert matching_pattern((".git", "hooks", "pre-commit")) == ".git"
    assert matching_pattern(("vendor", "lib", ".git", "config")) == ".git"
    assert matching_pattern((".VSCode", "launch.json")) == ".vscode"
    assert matching_pattern(("a.code-workspace",)) == "*.code-workspace"
    assert matching_pattern((".claude", "settings.json")) == ".claude/settings.json"
    assert matching_pattern((".claude", "commands", "x.md")) is None
    assert matching_pattern(("src", "git.py")) is None
    assert matching_pattern(("Makefile",), ("/Makefile",)) == "/makefile"
    assert matching_pattern(("sub", "Makefile"), ("/Makefile",)) is None
    assert matching_pattern((".github", "workflows", "ci.yml"), (".github/workflows",)) is not None


# -- commands ------------------------------------------------------------------------------------
PLANT_BY_COMMAND = (
    f"printf '{HOOK}' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit; "
    "git config core.fsmonitor 'touch /tmp/cleveragents-planted-fsmonitor'; "
    "mkdir -p .vscode && echo '{}' > .vscode/tasks.json; echo 'export X=1' > .envrc; "
    f"echo more >> main.py && git add main.py && git {GIT_USER} commit -q -m second && "
    "git log --oneline | wc -l"
)


@needs_bwrap
def test_a_command_cannot_plant_a_hook_or_fsmonitor_but_git_commit_works(repo: Path) -> None:
    config_before = (repo / ".git" / "config").read_text()
    command = "mv .git .git-aside; " + PLANT_BY_COMMAND
    [record], _ = run_loop(repo, [("run_command", {"command": command})])

    assert record.success, record.error
    output = record.output
    assert output["stdout"].strip() == "2", output  # the commit went in
    assert "pre-commit: Read-only file system" in output["stderr"]
    assert "could not write config file" in output["stderr"]
    assert "tasks.json: Read-only file system" in output["stderr"]
    assert "cannot move '.git'" in output["stderr"]
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()
    assert (repo / ".git" / "config").read_text() == config_before
    # The empty placeholders over paths that did not exist are gone afterwards.
    for name in (".vscode", ".envrc", ".idea", ".husky", ".claude", ".git-aside", ".git/modules"):
        assert not (repo / name).exists(), name
    assert git(repo, "log", "--oneline").count("\n") == 2


@needs_bwrap
def test_with_the_opt_in_a_command_may_write_them(repo: Path) -> None:
    policy = CommandPolicy(allow_protected_writes=True)
    [record], _ = run_loop(
        repo,
        [("run_command", {"command": PLANT_BY_COMMAND})],
        policy=policy,
    )
    # (the planted fsmonitor even runs, inside the wall, at the commit: "touch: cannot touch")
    assert record.success and "Read-only" not in record.output["stderr"], record
    assert record.output["stdout"].strip() == "2"
    assert (repo / ".git" / "hooks" / "pre-commit").read_text() == HOOK
    assert "fsmonitor" in (repo / ".git" / "config").read_text()
    assert (repo / ".vscode" / "tasks.json").exists() and (repo / ".envrc").is_file()


def test_what_a_command_gets_read_only(repo: Path) -> None:
    (repo / ".vscode").mkdir()
    targets = {t.path: t for t in command_targets(str(repo))}
    git_dir = repo / ".git"
    for part in ("hooks", "config", "info"):
        assert targets[str(git_dir / part)].exists
    assert not targets[str(git_dir / "modules")].exists  # a placeholder while one runs
    for writable in ("objects", "refs", "logs", "index", "HEAD"):
        assert str(git_dir / writable) not in targets
    assert targets[str(repo / ".vscode")].exists
    assert not targets[str(repo / ".envrc")].exists
    view = command_mounts(CommandPolicy(), str(repo))
    kinds = {m.path: m.kind for m in view.mounts}
    assert kinds[str(git_dir / "hooks")] == "ro" and kinds[str(git_dir)] == "rw"  # pinned
    assert str(repo / ".envrc") in view.placeholders
    opted = command_mounts(CommandPolicy(allow_protected_writes=True), str(repo))
    assert str(git_dir / "hooks") not in {m.path for m in opted.mounts}


def test_the_settings_reach_the_policy() -> None:
    env = {
        "CLEVERAGENTS_ALLOW_PROTECTED_WRITES": "1",
        "CLEVERAGENTS_PROTECTED_PATHS": "Makefile:.github/workflows, /scripts",
    }
    policy = CommandPolicy.from_environment(env)
    assert policy.allow_protected_writes is True
    assert policy.protected_paths == ("Makefile", ".github/workflows", "/scripts")
    with pytest.raises(ValueError, match="CLEVERAGENTS_ALLOW_PROTECTED_WRITES"):
        CommandPolicy.from_environment({"CLEVERAGENTS_ALLOW_PROTECTED_WRITES": "maybe"})
    layered, problems = command_policy(
        CommandPolicy(),
        CommandSettings(allow_protected_writes=True, protected_paths=("Makefile",)),
        "options",
    )
    assert problems == [] and layered.allow_protected_writes
    assert layered.protected_paths == ("Makefile",)
    _, problems = command_policy(
        CommandPolicy(), CommandSettings(protected_paths=("../outside",)), "options"
    )
    assert problems and "options.protectedPaths[0]" in problems[0]


# -- through the CLI ----------------------------------------------------------------------------
def cli_run(
    repo: Path, tmp_path: Path, env: dict[str, str], responses: Sequence[object] | None = None
) -> Any:
    """The real CLI under full-auto with the replay provider, no terminal to ask; the run as
    `--json` prints it. `responses` default: the plants by the file tools and a command."""
    script = tmp_path / "script.json"
    responses = responses or [
        {"tool_calls": [{"name": "write_file", "arguments": PLANTS[0][1]}]},
        {"tool_calls": [{"name": "edit_file", "arguments": PLANTS[1][1]}]},
        {"tool_calls": [{"name": "run_command", "arguments": {"command": PLANT_BY_COMMAND}}]},
        {"text": "done"},
    ]
    script.write_text(json.dumps({"responses": responses}))
    done = subprocess.run(
        [
            sys.executable, "-m", "cleveragents", "run", "plant", "--sandbox", str(repo),
            "--provider", "replay", "--script", str(script), "--profile", "full-auto",
            "--json", "--history", str(tmp_path / "history.db"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "CLEVERAGENTS_PROVIDER": "", "XDG_DATA_HOME": str(tmp_path), **env},
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@needs_bwrap
def test_through_the_cli_refused_then_allowed_with_the_setting(repo: Path, tmp_path: Path) -> None:
    refused = cli_run(repo, tmp_path, {})
    writes, command = refused["toolCallHistory"][:2], refused["toolCallHistory"][2]
    assert [r["errorKind"] for r in writes] == ["denied", "denied"]
    assert "Read-only file system" in command["output"]["stderr"]
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()
    assert "fsmonitor" not in (repo / ".git" / "config").read_text()

    allowed = cli_run(repo, tmp_path, {"CLEVERAGENTS_ALLOW_PROTECTED_WRITES": "1"})
    assert [r["success"] for r in allowed["toolCallHistory"][:2]] == [True, True]
    assert (repo / ".git" / "hooks" / "pre-commit").read_text() == HOOK
    assert "fsmonitor" in (repo / ".git" / "config").read_text()


def test_the_terminal_runner_gets_the_same_settings(tmp_path: Path) -> None:
    policy = CommandPolicy(allow_protected_writes=True, protected_paths=("Makefile",))
    spec = tmp_path / "spec.json"
    write_spec(str(spec), policy, {})
    assert read_spec(str(spec))[0] == policy


@needs_bwrap
def test_a_command_cannot_send_git_to_a_config_of_its_own(repo: Path) -> None:
    """`.git/commondir` and a submodule's git folder: other ways to a planted config."""
    evil = (
        "cp -r .git evil && printf '[core]\\n\\tfsmonitor = touch fsmonitor-ran\\n' >> evil/config"
    )
    command = (
        f'{evil}; echo "$PWD/evil" > .git/commondir; git status > /dev/null; '
        "mkdir .git/modules/sub; ls .git/modules | wc -l"
    )
    [record], _ = run_loop(repo, [("run_command", {"command": command})])

    assert record.success, record.error
    # Inside the command git obeyed the redirect (its own business, inside the wall) ...
    assert (repo / "fsmonitor-ran").exists()
    assert ".git/modules/sub" in record.output["stderr"]
    assert "Read-only file system" in record.output["stderr"]
    # ... but the redirect is gone when it ends, and so is the copy's fsmonitor (a new git
    # folder to the repository guard); the output and the result say so.
    assert not (repo / ".git" / "commondir").exists()
    assert "fsmonitor" not in (repo / "evil" / "config").read_text()
    assert ".git/commondir: commondir made" in record.output["stderr"]
    assert {write["path"]: write["outcome"] for write in record.output["protected_writes"]} == {
        ".git/commondir": "undone",
        "evil/config": "undone",
    }
    (repo / "fsmonitor-ran").unlink()
    git(repo, "status")
    assert not (repo / "fsmonitor-ran").exists()
