"""run_command's wall, tried as an attacker would: real bubblewrap, real files, real limits.

A command must not read the real home folder (a key planted in ~/.ssh, a file beside it), any
folder outside the allowed set, or a never-visible path even when its parent is exposed; it
gets only allow-listed variables; a fork bomb, a disk filler and a CPU burner end as failed
records and leave nothing running; where it would run unconfined, it is asked about.
"""

from __future__ import annotations

import os
import secrets
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from cleveragents.tool import (
    ApprovalRequest,
    LLMRequest,
    LLMResponse,
    ToolActorContext,
    ToolCallingRuntime,
    ToolCallRequest,
    ToolError,
    ToolRegistry,
    ToolRunner,
)
from cleveragents.tool.records import ToolCallRecord
from cleveragents.tool.serialization import to_data
from cleveragents.workspace import (
    CommandPolicy,
    ResourceLimits,
    Sandbox,
    bubblewrap_status,
    command_mounts,
    register_builtin_tools,
)
from cleveragents.workspace.cgroups import cgroup_support
from cleveragents.workspace.command import CommandTool, process_rlimit, run_in_sandbox
from support.live_processes import wait_until_gone

BWRAP = bubblewrap_status()
needs_bwrap = pytest.mark.skipif(
    not BWRAP.available, reason=f"bubblewrap is not usable here: {BWRAP.reason}"
)
PYTHON = os.path.realpath(sys.executable)
TIMEOUT_S = 30.0


def small_limits(**changes: Any) -> CommandPolicy:
    return CommandPolicy(limits=replace(ResourceLimits(), **changes))


def process_limit_enforced(policy: CommandPolicy) -> bool:
    """Root ignores RLIMIT_NPROC: without a pids cgroup nothing would bound a fork bomb."""
    return cgroup_support().home("pids") is not None or process_rlimit(policy.limits) is not None


async def call(
    sandbox: Path, command: str, policy: CommandPolicy | None = None, timeout_s: float = TIMEOUT_S
) -> ToolCallRecord:
    """run_command through the real registry and runner, as a model's call would go."""
    registry = ToolRegistry()
    register_builtin_tools(registry, command_policy=policy or CommandPolicy())
    request = ToolCallRequest("c", "run_command", {"command": command, "timeout_s": timeout_s})
    return await ToolRunner(registry).run(request, ToolActorContext(sandbox_root=str(sandbox)))


async def run(sandbox: Path, command: str, *, confine: bool) -> dict[str, Any]:
    box = Sandbox(str(sandbox))
    return await run_in_sandbox(command, box, box.resolve("."), TIMEOUT_S, confine=confine)


def seen(output: dict[str, Any]) -> str:
    return str(output.get("stdout", "")) + str(output.get("stderr", ""))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    sandbox = tmp_path / "ws"
    sandbox.mkdir()
    return sandbox


@pytest.fixture
def home_secrets() -> Iterator[tuple[str, Path, Path]]:
    """A key planted in the real ~/.ssh and a file planted in the real home folder."""
    home = Path(os.path.expanduser("~")).resolve()
    token = secrets.token_hex(8)
    ssh = home / ".ssh"
    made_ssh = not ssh.exists()
    ssh.mkdir(mode=0o700, exist_ok=True)
    key = ssh / f"cleveragents-test-key-{token}"
    key.write_text(f"SSH-SECRET-{token}\n")
    loose = home / f"cleveragents-test-secret-{token}"
    loose.write_text(f"HOME-SECRET-{token}\n")
    try:
        yield token, key, loose
    finally:
        key.unlink()
        loose.unlink()
        if made_ssh:
            shutil.rmtree(ssh, ignore_errors=True)


@pytest.fixture
def outside() -> Iterator[Path]:
    """A folder outside the sandbox and outside /tmp (which commands get a private one of)."""
    base = "/var/tmp" if os.access("/var/tmp", os.W_OK) else os.path.expanduser("~")
    folder = Path(tempfile.mkdtemp(prefix="cleveragents-outside-", dir=base)).resolve()
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# -- the read wall --------------------------------------------------------------------------------
def attacks(key: Path, loose: Path, planted: Path) -> list[str]:
    """Ways a command might try to read the planted files."""
    return [
        f"cat {key} {loose} {planted}",
        "cat ~/.ssh/* ~/cleveragents-test-secret-*",
        "ls -la ~ ~/.ssh; ls -la /root /home",
        "find / -maxdepth 5 -name 'cleveragents-test-*' -not -path '/proc/*' 2>/dev/null; true",
        f"find {planted.parent} {key.parent} -type f -exec cat {{}} + 2>&1; true",
        # Links planted in the sandbox: resolved inside the command's view, not the host's.
        f"ln -s {key} k && ln -s {key.parent} sshdir && ln -s {planted} p && cat k sshdir/* p",
        f"cat /proc/1/root{key} /proc/self/root{loose} /proc/1/cwd/../../../{planted}",
        f"{PYTHON} -c \"print(open('{key}').read())\"",
        f"cd {planted.parent} && cat *",
        "cat /proc/*/environ | tr '\\0' '\\n'",
    ]


@needs_bwrap
async def test_a_command_cannot_read_the_home_folder_or_outside(
    root: Path, home_secrets: tuple[str, Path, Path], outside: Path
) -> None:
    token, key, loose = home_secrets
    planted = outside / "planted.txt"
    planted.write_text(f"OUTSIDE-SECRET-{token}\n")
    for command in attacks(key, loose, planted):
        record = await call(root, command)
        assert record.success and record.output["confined"] is True, record.error
        assert f"SECRET-{token}" not in seen(record.output), command
        for name in ("k", "sshdir", "p"):
            (root / name).unlink(missing_ok=True)
    # The same commands unconfined do reach them: the test can tell a wall from no wall.
    leaked = await run(root, f"cat {key} {loose} {planted}", confine=False)
    assert seen(leaked).count(f"SECRET-{token}") == 3


@needs_bwrap
async def test_nothing_outside_the_listed_mounts_exists(root: Path) -> None:
    policy = CommandPolicy()
    view = command_mounts(policy, str(root))
    expected = {mount.path.split("/")[1] for mount in view.mounts}
    record = await call(root, "ls -A /", policy)
    assert set(record.output["stdout"].split()) == expected
    assert not {"home", "work", "srv", "mnt", "media", "boot", "sys"} & expected
    # /var exists only for the /var/tmp link into the private /tmp.
    listing = await call(root, "ls -A /var; readlink /var/tmp", policy)
    assert listing.output["stdout"].split() == ["tmp", "/tmp"]


@needs_bwrap
async def test_a_sandbox_inside_the_home_folder_shows_only_itself(
    home_secrets: tuple[str, Path, Path],
) -> None:
    token, key, _ = home_secrets
    home = key.parent.parent
    sandbox = home / f"cleveragents-test-ws-{token}"
    sandbox.mkdir()
    try:
        (sandbox / "mine.txt").write_text("project file\n")
        record = await call(sandbox, "cat mine.txt; ls -A ..; cat ../.ssh/* ../cleveragents-test-*")
        output = record.output
        assert "project file" in output["stdout"] and f"SECRET-{token}" not in seen(output)
        listed = set(output["stdout"].split()) - {"project", "file"}
        # The empty private home holds only the sandbox (and the interpreter, if it lives there).
        assert sandbox.name in listed and ".ssh" not in listed
        assert listed <= {sandbox.name, *{p.split("/")[0] for p in _home_relative_mounts(home)}}
    finally:
        shutil.rmtree(sandbox)


def _home_relative_mounts(home: Path) -> list[str]:
    view = command_mounts(CommandPolicy(), str(home / "x"))
    prefix = str(home) + "/"
    return [m.path[len(prefix) :] for m in view.mounts if m.path.startswith(prefix)]


@needs_bwrap
async def test_read_paths_are_read_only_and_never_visible_paths_stay_hidden(
    root: Path, outside: Path
) -> None:
    (outside / "public.txt").write_text("public\n")
    (outside / "secret.txt").write_text("SECRET-FILE\n")
    (outside / "private").mkdir()
    (outside / "private" / "inner.txt").write_text("SECRET-DIR\n")
    policy = CommandPolicy(
        extra_read_paths=(str(outside), str(outside / "private" / "inner.txt")),
        never_visible=(str(outside / "secret.txt"), str(outside / "private")),
    )
    view = command_mounts(policy, str(root))
    assert any("which is never visible" in refused for refused in view.refused)
    record = await call(
        root,
        f"cat {outside}/public.txt; cat {outside}/secret.txt {outside}/private/*; "
        f"ls -A {outside}/private; echo x > {outside}/public.txt; "
        f"umount {outside}/private; cat {outside}/private/inner.txt; true",
        policy,
    )
    output = record.output
    assert output["stdout"].startswith("public\n")
    assert "SECRET" not in seen(output)
    assert "Read-only file system" in output["stderr"]
    assert (outside / "public.txt").read_text() == "public\n"


@needs_bwrap
async def test_the_default_never_visible_list_covers_a_sandbox_that_holds_them(
    home_secrets: tuple[str, Path, Path],
) -> None:
    """Even a sandbox that is the home folder itself does not show ~/.ssh."""
    token, key, loose = home_secrets
    home = key.parent.parent
    record = await call(home, f"ls -A .ssh; cat .ssh/{key.name}; cat {loose.name}")
    output = record.output
    assert f"SSH-SECRET-{token}" not in seen(output)
    assert f"HOME-SECRET-{token}" in output["stdout"]  # the sandbox itself is readable


async def test_a_sandbox_inside_a_never_visible_folder_runs_no_command(outside: Path) -> None:
    policy = CommandPolicy(never_visible=(str(outside),))
    record = await call(outside, "touch ran", policy)
    assert record.success is False and "never see" in (record.error or "")
    assert not (outside / "ran").exists()


@needs_bwrap
async def test_a_confined_command_has_no_capabilities_and_cannot_mount(root: Path) -> None:
    record = await call(
        root,
        "grep CapEff /proc/self/status; mount -t tmpfs none /usr 2>&1; "
        "mount -o remount,rw /usr 2>&1; touch /usr/cleveragents-x 2>&1; "
        "unshare -U true 2>&1; echo end",
    )
    output = record.output
    assert "CapEff:\t0000000000000000" in output["stdout"]
    assert "end" in output["stdout"]
    assert not Path("/usr/cleveragents-x").exists()


# -- the environment ---------------------------------------------------------------------------
@pytest.mark.parametrize("confine", [pytest.param(True, marks=needs_bwrap), False])
async def test_only_allow_listed_variables_reach_a_command(
    root: Path, monkeypatch: pytest.MonkeyPatch, confine: bool
) -> None:
    leaks = {
        "GITHUB_PAT": "ghp_leak",
        "DATABASE_URL": "postgres://u:pw@db/x",
        "NPM_AUTH": "npm_leak",
        "AWS_SECRET_ACCESS_KEY": "aws_leak",
        "SSH_AUTH_SOCK": "/tmp/agent.sock",
        "PYTHONPATH": "/leak",
    }
    for name, value in leaks.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("MY_SETTING", "mine")
    monkeypatch.setenv("LISTED_ONE", "one")
    monkeypatch.setenv("CLEVERAGENTS_COMMAND_ENV", "MY_SETTING, LISTED_*")
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    policy = CommandPolicy.from_environment()
    box = Sandbox(str(root))
    output = await run_in_sandbox(
        "env -0", box, box.resolve("."), TIMEOUT_S, confine=confine, policy=policy
    )
    variables = dict(entry.split("=", 1) for entry in output["stdout"].split("\0") if "=" in entry)
    allowed = {"PATH", "HOME", "TERM", "TZ", "USER", "LOGNAME", "SHELL", "TMPDIR", "LANG"}
    allowed |= {"LANGUAGE", "LC_ALL", "MY_SETTING", "LISTED_ONE", "CLEVERAGENTS_COMMAND_ID"}
    allowed |= {"PWD", "SHLVL", "_"}  # set by the shell itself
    assert set(variables) <= allowed, set(variables) - allowed
    assert variables["MY_SETTING"] == "mine" and variables["LISTED_ONE"] == "one"
    assert variables["LC_ALL"] == "C.UTF-8"
    assert not set(leaks.values()) & set(variables.values())
    real_home = os.path.realpath(os.path.expanduser("~"))
    if confine:
        assert variables["HOME"] == command_mounts(policy, str(root)).home
        assert variables["TMPDIR"] == "/tmp"
    else:
        assert variables["HOME"] != real_home and not os.path.exists(variables["HOME"])


@needs_bwrap
async def test_the_private_home_is_empty_writable_and_gone_afterwards(root: Path) -> None:
    first = await call(root, "ls -A ~ | grep -v '^.pyenv$'; echo note > ~/.note; cat ~/.note")
    assert first.output["stdout"] == "note\n", first.output
    second = await call(root, "cat ~/.note")
    assert second.output["exit_code"] != 0


# -- resource limits -------------------------------------------------------------------------
@needs_bwrap
async def test_limits_are_set_and_a_command_cannot_raise_them(root: Path) -> None:
    policy = small_limits(
        max_file_size=8 * 1024 * 1024, max_address_space=4 * 1024**3, max_cpu_seconds=77
    )
    record = await call(
        root, "ulimit -f; ulimit -v; ulimit -t; ulimit -f unlimited 2>&1; ulimit -f", policy
    )
    lines = record.output["stdout"].splitlines()
    assert lines[:3] == ["8192", str(4 * 1024 * 1024), "77"]
    assert lines[-1] == "8192"  # still: raising it was refused


@pytest.mark.parametrize("confine", [pytest.param(True, marks=needs_bwrap), False])
async def test_a_fork_bomb_ends_as_a_failed_record(root: Path, confine: bool) -> None:
    policy = small_limits(max_processes=64)
    if not process_limit_enforced(policy):
        pytest.skip("no pids cgroup and RLIMIT_NPROC does not bind root: nothing bounds it")
    marker = secrets.token_hex(6)
    command = f"while :; do sleep 300{marker[:0]} & done # {marker}"
    box = Sandbox(str(root))
    with pytest.raises(ToolError) as failure:
        await run_in_sandbox(command, box, box.resolve("."), 20, confine=confine, policy=policy)
    assert "process limit (64 processes" in str(failure.value) or "timed out" in str(failure.value)
    assert wait_until_gone(marker) == []
    # The machine is still usable: the next command runs as usual.
    after = await call(root, "echo still here", policy)
    assert after.output["stdout"] == "still here\n"


async def test_a_fork_bomb_through_the_runner_is_a_failed_record(root: Path) -> None:
    policy = small_limits(max_processes=48)
    if not process_limit_enforced(policy):
        pytest.skip("no pids cgroup and RLIMIT_NPROC does not bind root: nothing bounds it")
    record = await call(root, "bomb() { bomb | bomb & }; bomb; sleep 30", policy, timeout_s=20)
    assert record.success is False and record.error_kind in ("execution_error", "timeout")
    assert "process limit" in (record.error or "") or record.error_kind == "timeout"


@pytest.mark.parametrize("confine", [pytest.param(True, marks=needs_bwrap), False])
async def test_a_file_over_the_size_limit_ends_as_a_failed_record(
    root: Path, confine: bool
) -> None:
    policy = small_limits(max_file_size=1024 * 1024)
    box = Sandbox(str(root))
    with pytest.raises(ToolError) as failure:
        await run_in_sandbox(
            "yes > big; ls -l big", box, box.resolve("."), TIMEOUT_S, confine=confine, policy=policy
        )
    assert "file size limit (1 MiB)" in str(failure.value)
    assert "CLEVERAGENTS_COMMAND_MAX_FILE_SIZE" in str(failure.value)
    assert (root / "big").stat().st_size <= 1024 * 1024


async def test_a_disk_filler_is_stopped_at_the_free_space_reserve(root: Path) -> None:
    # A reserve just under the free space now: a few dozen MiB written cross it.
    free = shutil.disk_usage(root).free
    policy = small_limits(min_free_disk=free - 16 * 1024 * 1024, max_file_size=8 * 1024 * 1024)
    filler = "for i in $(seq 1 100); do head -c 4000000 /dev/zero > fill$i || exit 9; done"
    record = await call(root, filler, policy)
    assert record.success is False, record.output
    assert "free space on the sandbox's disk fell below" in (record.error or "")
    assert len(list(root.glob("fill*"))) < 100
    for file in root.glob("fill*"):
        file.unlink()


@needs_bwrap
async def test_the_private_tmp_has_a_size(root: Path) -> None:
    if "--size" not in BWRAP.features:
        pytest.skip("this bubblewrap cannot size a tmpfs")
    policy = small_limits(tmp_size=4 * 1024 * 1024)
    record = await call(root, "head -c 20000000 /dev/zero > /tmp/x; stat -c %s /tmp/x", policy)
    assert "No space left on device" in record.output["stderr"]
    assert int(record.output["stdout"]) <= 4 * 1024 * 1024


async def test_a_cpu_burner_ends_as_a_failed_record(root: Path) -> None:
    record = await call(root, "while :; do :; done", small_limits(max_cpu_seconds=1))
    assert record.success is False
    assert "more than 1 s of CPU time" in (record.error or "")


async def test_memory_over_the_cgroup_limit_ends_as_a_failed_record(root: Path) -> None:
    if cgroup_support().home("memory") is None:
        pytest.skip(f"no writable memory cgroup here: {cgroup_support().reason}")
    policy = small_limits(max_memory=128 * 1024 * 1024)
    record = await call(root, f"{PYTHON} -c 'x = bytearray(512 * 1024 * 1024); print(1)'", policy)
    assert record.success is False
    assert "memory limit (128 MiB)" in (record.error or "")


# -- unconfined means asked -------------------------------------------------------------------
def one_command(request: LLMRequest) -> LLMResponse:
    if request.iteration == 1:
        return LLMResponse(
            tool_calls=[ToolCallRequest("c1", "run_command", {"command": "echo ran"})]
        )
    return LLMResponse(text="done")


def run_loop(
    root: Path, profile: str, policy: CommandPolicy, approver: Any
) -> tuple[ToolCallRecord, list[ApprovalRequest]]:
    asked: list[ApprovalRequest] = []

    async def approve(request: ApprovalRequest) -> Any:
        asked.append(request)
        return "allow"

    registry = ToolRegistry()
    register_builtin_tools(registry, command_policy=policy)
    runtime = ToolCallingRuntime(
        registry, ToolRunner(registry), one_command, approver=approve if approver else None
    )
    context = ToolActorContext(sandbox_root=str(root), automation_profile=profile)
    result = runtime.run_tool_loop("go", context)
    return result.tool_call_history[0], asked


@pytest.mark.parametrize("allow_unconfined", [False, True])
@pytest.mark.parametrize("profile", ["read-only", "ask", "auto-edit", "full-auto"])
def test_an_unconfined_command_is_asked_about_unless_full_auto_allows_it(
    root: Path, profile: str, allow_unconfined: bool
) -> None:
    # bubblewrap "none" is the real code path of a machine without it.
    policy = CommandPolicy(bubblewrap="none", allow_unconfined=allow_unconfined)
    record, asked = run_loop(root, profile, policy, approver=True)
    if profile == "read-only":
        assert record.error_kind == "denied" and asked == []
        return
    if profile == "full-auto" and allow_unconfined:
        assert asked == []
    else:
        assert len(asked) == 1
        assert "would run unconfined" in (asked[0].note or "")
        assert "CLEVERAGENTS_ALLOW_UNCONFINED_COMMANDS" in (asked[0].note or "")
    assert record.success, record.error
    assert record.output["confined"] is False and record.output["stdout"] == "ran\n"


def test_unconfined_without_anyone_to_ask_is_denied_and_says_why(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLEVERAGENTS_COMMAND_BWRAP", "none")
    record, _ = run_loop(root, "full-auto", CommandPolicy.from_environment(), approver=False)
    assert record.error_kind == "denied"
    assert "unconfined" in (record.error or "") and "switched off" in (record.error or "")


@needs_bwrap
def test_a_confined_command_under_full_auto_is_not_asked(root: Path) -> None:
    record, asked = run_loop(root, "full-auto", CommandPolicy(), approver=True)
    assert asked == [] and record.output["confined"] is True


async def test_the_unconfined_report_follows_the_setting() -> None:
    assert await CommandTool(CommandPolicy(bubblewrap="none")).unconfined_code() is not None
    missing = CommandPolicy(bubblewrap="/nonexistent/bwrap")
    gap = await CommandTool(missing).unconfined_code()
    assert gap is not None and "not an executable" in gap.reason
    if BWRAP.available:
        assert await CommandTool(CommandPolicy()).unconfined_code() is None


# -- settings -----------------------------------------------------------------------------------
def test_settings_from_the_environment_and_later_layers() -> None:
    policy = CommandPolicy.from_environment(
        {
            "CLEVERAGENTS_COMMAND_READ_PATHS": "/opt/a:/opt/b",
            "CLEVERAGENTS_COMMAND_ENV": "A B_*",
            "CLEVERAGENTS_COMMAND_MAX_FILE_SIZE": "2G",
            "CLEVERAGENTS_COMMAND_MAX_PROCESSES": "unlimited",
            "CLEVERAGENTS_ALLOW_UNCONFINED_COMMANDS": "1",
        }
    )
    assert policy.extra_read_paths == ("/opt/a", "/opt/b") and policy.env_allow == ("A", "B_*")
    assert policy.limits.max_file_size == 2 * 1024**3 and policy.limits.max_processes is None
    assert policy.allow_unconfined is True
    later = policy.with_settings(extra_read_paths=["/opt/c"], limits={"max_cpu_seconds": 5})
    assert later.extra_read_paths == ("/opt/a", "/opt/b", "/opt/c")
    assert later.limits.max_cpu_seconds == 5 and later.limits.max_file_size == 2 * 1024**3
    for variable, value in (
        ("CLEVERAGENTS_COMMAND_MAX_FILE_SIZE", "lots"),
        ("CLEVERAGENTS_COMMAND_MAX_PROCESSES", "0"),
        ("CLEVERAGENTS_ALLOW_UNCONFINED_COMMANDS", "maybe"),
    ):
        with pytest.raises(ValueError, match=variable):
            CommandPolicy.from_environment({variable: value})
    with pytest.raises(ValueError, match="unknown command limit"):
        policy.with_settings(limits={"max_bananas": 1})


# -- cleveragents doctor -------------------------------------------------------------------------
def test_doctor_shows_the_policy_commands_get(
    root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from cleveragents.cli import main

    monkeypatch.setenv("GITHUB_PAT", "ghp_doctor")
    monkeypatch.setenv("MY_SETTING", "x")
    monkeypatch.setenv("CLEVERAGENTS_COMMAND_ENV", "MY_SETTING")
    monkeypatch.setenv("CLEVERAGENTS_COMMAND_MAX_PROCESSES", "99")
    assert main(["doctor", "--json", "--sandbox", str(root)]) == 0
    report = json.loads(capsys.readouterr().out)
    view = command_mounts(CommandPolicy.from_environment(), str(root))
    assert report["mounts"] == to_data(view.mounts)
    assert report["confined"] is BWRAP.available
    assert "MY_SETTING" in report["environment"]["passed"]
    assert "GITHUB_PAT" in report["environment"]["dropped"]
    assert "ghp_doctor" not in json.dumps(report)  # names only, never values
    limits = {row["name"]: row for row in report["limits"]}
    assert limits["max_processes"]["value"] == 99
    assert main(["doctor", "--sandbox", str(root)]) == 0
    text = capsys.readouterr().out
    assert "read-write /" in text and str(root) in text and "max_processes" in text
    assert "Workspace MCP servers: none" in text
    monkeypatch.setenv("CLEVERAGENTS_COMMAND_MAX_PROCESSES", "lots")
    assert main(["doctor", "--sandbox", str(root)]) == 2
    assert "CLEVERAGENTS_COMMAND_MAX_PROCESSES" in capsys.readouterr().err
