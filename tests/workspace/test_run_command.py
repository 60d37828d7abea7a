"""run_command for real: exit codes, output caps, killing whole process groups, and bubblewrap."""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
import socket
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cleveragents.tool import ToolActorContext, ToolCallRequest, ToolError, ToolRegistry, ToolRunner
from cleveragents.tool.records import ToolCallRecord
from cleveragents.workspace import Sandbox, bubblewrap_status, register_builtin_tools
from cleveragents.workspace.command import probe_bubblewrap, run_in_sandbox
from support.live_processes import live_processes_with, wait_until_gone

BWRAP = bubblewrap_status()
needs_bwrap = pytest.mark.skipif(
    not BWRAP.available, reason=f"bubblewrap is not usable here: {BWRAP.reason}"
)
MODES = [pytest.param(True, marks=needs_bwrap, id="confined"), pytest.param(False, id="unconfined")]

# The base interpreter, not the venv's link to it: a checkout (and its .venv) under /tmp is
# hidden inside bubblewrap's private /tmp, the interpreter itself is not.
PYTHON = os.path.realpath(sys.executable)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    sandbox = tmp_path / "ws"
    sandbox.mkdir()
    return sandbox


async def call(sandbox: Path, arguments: dict[str, Any]) -> ToolCallRecord:
    registry = ToolRegistry()
    register_builtin_tools(registry)
    context = ToolActorContext(sandbox_root=str(sandbox))
    request = ToolCallRequest("c", "run_command", arguments)
    return await ToolRunner(registry).run(request, context)


async def run(sandbox: Path, command: str, *, confine: bool, timeout_s: float = 60) -> Any:
    box = Sandbox(str(sandbox))
    return await run_in_sandbox(command, box, box.resolve("."), timeout_s, confine=confine)


def unique_sleep() -> tuple[str, str]:
    """A `sleep` argument no other process on the machine has, and the marker to find it by."""
    digits = str(secrets.randbelow(10**9)).zfill(9)
    return f"30.{digits}", digits


# -- basics ----------------------------------------------------------------------------------
async def test_exit_code_and_both_streams(root: Path) -> None:
    record = await call(root, {"command": "echo out; echo err >&2; exit 3"})
    assert record.success, record.error
    output = record.output
    assert output["exit_code"] == 3
    assert output["stdout"] == "out\n" and output["stderr"] == "err\n"
    assert output["truncated"] is False
    assert output["confined"] is BWRAP.available
    assert output["cwd"] == "."


async def test_cwd_is_the_sandbox_or_a_folder_inside(root: Path) -> None:
    (root / "sub" / "deeper").mkdir(parents=True)
    top = await call(root, {"command": "pwd"})
    assert top.output["stdout"].strip() == str(root.resolve())
    inner = await call(root, {"command": "pwd; touch made_here", "cwd": "sub/deeper"})
    assert inner.output["stdout"].strip() == str((root / "sub/deeper").resolve())
    assert (root / "sub/deeper/made_here").exists()
    assert inner.output["cwd"] == "sub/deeper"


async def test_cwd_outside_is_refused_and_nothing_runs(root: Path, tmp_path: Path) -> None:
    os.symlink(str(tmp_path), root / "up")
    for cwd in ("..", "/", "up", str(tmp_path), "~"):
        record = await call(root, {"command": "touch ran", "cwd": cwd})
        assert record.error_kind == "sandbox_violation", record.error
        assert repr(cwd) in (record.error or "")
    (root / "file.txt").write_text("x")
    record = await call(root, {"command": "touch ran", "cwd": "file.txt"})
    assert record.error_kind == "execution_error" and "not a directory" in (record.error or "")
    assert not (tmp_path / "ran").exists() and not (root / "ran").exists()


async def test_refused_without_a_sandbox_root() -> None:
    registry = ToolRegistry()
    register_builtin_tools(registry)
    request = ToolCallRequest("c", "run_command", {"command": "touch should_not_exist"})
    record = await ToolRunner(registry).run(request, ToolActorContext())
    assert record.error_kind == "sandbox_violation"
    assert not Path("should_not_exist").exists()


async def test_output_over_one_mebibyte_keeps_head_and_tail(root: Path) -> None:
    command = f"{PYTHON} -c \"import sys; sys.stdout.write('HEAD' + 'a' * 3000000 + 'TAIL')\""
    record = await call(root, {"command": command})
    output = record.output
    assert output["truncated"] is True
    stdout = output["stdout"]
    assert stdout.startswith("HEAD") and stdout.endswith("TAIL")
    assert "bytes of output omitted" in stdout
    assert len(stdout.encode()) <= 1024 * 1024 + 100


async def test_only_allow_listed_variables_are_passed(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLEVERAGENTS_TEST_API_KEY", "sk-should-not-leak")
    monkeypatch.setenv("CLEVERAGENTS_TEST_PLAIN", "not listed")
    monkeypatch.setenv("CLEVERAGENTS_TEST_LISTED", "visible")
    monkeypatch.setenv("CLEVERAGENTS_COMMAND_ENV", "CLEVERAGENTS_TEST_LISTED")
    record = await call(
        root,
        {
            "command": "echo ${CLEVERAGENTS_TEST_API_KEY:-absent} "
            "${CLEVERAGENTS_TEST_PLAIN:-absent} $CLEVERAGENTS_TEST_LISTED"
        },
    )
    assert record.output["stdout"] == "absent absent visible\n"


async def test_unconfined_runs_say_so(root: Path) -> None:
    output = await run(root, "echo hi", confine=False)
    assert output["confined"] is False and "not confined" in output["confinement"]
    assert output["stdout"] == "hi\n"


def test_bubblewrap_probe_reports_a_reason() -> None:
    status = bubblewrap_status()
    assert status is bubblewrap_status()  # probed once
    if shutil.which("bwrap") is None:
        assert not status.available and "not installed" in status.reason
    if status.available:
        assert status.executable is not None


def test_probe_without_bubblewrap_on_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    status = probe_bubblewrap()
    assert status.available is False and "not installed" in status.reason


# -- killing ---------------------------------------------------------------------------------
@pytest.mark.parametrize("confine", MODES)
async def test_timeout_kills_the_whole_process_group(root: Path, confine: bool) -> None:
    duration, marker = unique_sleep()
    command = f"sleep {duration} & sleep {duration} & touch started; sleep {duration}"
    with pytest.raises(ToolError) as failure:
        await run(root, command, confine=confine, timeout_s=1)
    assert failure.value.kind == "timeout"
    assert "timed out after 1 s" in str(failure.value)
    assert (root / "started").exists()
    assert wait_until_gone(marker) == []


async def test_timeout_through_the_runner_is_a_timeout_record(root: Path) -> None:
    duration, marker = unique_sleep()
    command = f"echo before; sleep {duration} & sleep {duration}"
    record = await call(root, {"command": command, "timeout_s": 1})
    assert record.error_kind == "timeout"
    assert "before" in (record.error or "")  # the output so far is shown
    assert wait_until_gone(marker) == []


@pytest.mark.parametrize("confine", MODES)
async def test_background_jobs_do_not_outlive_the_command(root: Path, confine: bool) -> None:
    duration, marker = unique_sleep()
    output = await run(root, f"sleep {duration} & echo launched", confine=confine)
    assert output["exit_code"] == 0 and output["stdout"] == "launched\n"
    assert wait_until_gone(marker) == []


@pytest.mark.parametrize("confine", MODES)
async def test_processes_that_start_their_own_session_are_killed_too(
    root: Path, confine: bool
) -> None:
    duration, marker = unique_sleep()
    escape = (
        f"{PYTHON} -c 'import os, time; os.setsid(); "
        f'open("escaped", "w").close(); time.sleep({duration})\''
    )
    # The shell waits until the process has left its group, then exits.
    command = (
        f"{escape} > /dev/null 2>&1 & "
        "for i in $(seq 1 3000); do [ -e escaped ] && break; sleep 0.01; done; echo launched"
    )
    output = await run(root, command, confine=confine)
    assert (root / "escaped").exists()
    assert output["stdout"] == "launched\n"
    assert wait_until_gone(marker) == []


@pytest.mark.parametrize("confine", MODES)
async def test_cancellation_kills_the_process_group(root: Path, confine: bool) -> None:
    duration, marker = unique_sleep()
    command = f"sleep {duration} & sleep {duration} & touch started; sleep {duration}"
    task = asyncio.create_task(run(root, command, confine=confine, timeout_s=300))
    deadline = time.monotonic() + 30
    while not (root / "started").exists() and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert (root / "started").exists()
    assert len(live_processes_with(marker)) >= 3
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert wait_until_gone(marker) == []


async def test_cancelling_a_run_through_the_runner_kills_the_command(root: Path) -> None:
    duration, marker = unique_sleep()
    command = f"sleep {duration} & touch started; sleep {duration}"
    task = asyncio.create_task(call(root, {"command": command, "timeout_s": 300}))
    deadline = time.monotonic() + 30
    while not (root / "started").exists() and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert live_processes_with(marker)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert wait_until_gone(marker) == []


# -- confinement -----------------------------------------------------------------------------
@pytest.fixture
def outside_dir() -> Iterator[Path]:
    """A writable folder outside /tmp (which bubblewrap replaces) and outside the sandbox."""
    base = "/var/tmp" if os.access("/var/tmp", os.W_OK) else str(Path.home())
    folder = Path(tempfile.mkdtemp(prefix="cleveragents-outside-", dir=base))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@needs_bwrap
async def test_confined_command_cannot_write_outside(
    root: Path, tmp_path: Path, outside_dir: Path
) -> None:
    # A folder outside the allowed set does not exist inside at all.
    output = await run(root, f"echo x > {outside_dir / 'escaped'}", confine=True)
    assert output["exit_code"] != 0 and "No such file or directory" in output["stderr"]
    assert not (outside_dir / "escaped").exists()
    # The sandbox's parent lies in the private /tmp: a write there lands in that tmpfs only.
    await run(root, f"echo x > {tmp_path / 'escaped'}", confine=True)
    assert not (tmp_path / "escaped").exists()
    inside = await run(root, "echo x > inside.txt", confine=True)
    assert inside["exit_code"] == 0 and (root / "inside.txt").read_text() == "x\n"
    # The same command unconfined does write there: the test can tell the difference.
    control = await run(root, f"echo x > {outside_dir / 'control'}", confine=False)
    assert control["exit_code"] == 0 and (outside_dir / "control").exists()


@needs_bwrap
async def test_confined_command_has_no_network(root: Path) -> None:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    probe = (
        f'{PYTHON} -c "import socket; '
        f"socket.create_connection(('127.0.0.1', {port}), timeout=5); print('connected')\""
    )
    try:
        confined = await run(root, probe, confine=True)
        unconfined = await run(root, probe, confine=False)
    finally:
        server.close()
    assert confined["exit_code"] != 0 and "connected" not in confined["stdout"]
    assert unconfined["exit_code"] == 0 and unconfined["stdout"] == "connected\n"


@needs_bwrap
async def test_confined_command_has_a_private_tmp(root: Path) -> None:
    token = secrets.token_hex(8)
    host_file = Path(f"/tmp/cleveragents-host-{token}")
    host_file.write_text("host")
    try:
        seen = await run(root, f"cat {host_file}", confine=True)
        assert seen["exit_code"] != 0 and "host" not in seen["stdout"]
        made = await run(
            root, f"echo inner > /tmp/inner-{token} && cat /tmp/inner-{token}", confine=True
        )
        assert made["exit_code"] == 0 and made["stdout"] == "inner\n"
        assert not Path(f"/tmp/inner-{token}").exists()
    finally:
        host_file.unlink()


@needs_bwrap
async def test_confined_command_sees_the_system_read_only(root: Path) -> None:
    output = await run(root, f"{PYTHON} -c 'print(1 + 1)'; touch /usr/x", confine=True)
    assert output["stdout"] == "2\n"
    assert "Read-only file system" in output["stderr"]
    assert not Path("/usr/x").exists()
