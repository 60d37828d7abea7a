"""The sweep after an unconfined command finds a daemonised grandchild without reading every
process, and touches nothing that is not the command's (real processes, real /proc)."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cleveragents.settings_table import COMMAND_TAG_VARIABLE
from cleveragents.workspace import Sandbox
from cleveragents.workspace.command import run_in_sandbox
from cleveragents.workspace.process_sweep import (
    become_subreaper,
    children_of,
    descendants_of,
    sweep_by_environment,
    sweep_descendants,
)
from support.live_processes import live_processes_with, wait_until_gone

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the sweep walks /proc (Linux)"
)


def marker() -> str:
    return f"cleveragents-sweep-{secrets.token_hex(6)}"


def daemonising(name: str) -> str:
    """Shell that double-forks a `setsid` grandchild sleeping as `name`, touching `name` (a
    file in the current folder) once it runs."""
    grandchild = f"touch {name}; exec -a {name} sleep 300"
    return f"( setsid bash -c '{grandchild}' < /dev/null > /dev/null 2>&1 & )"


def named(name: str) -> list[int]:
    """Live processes whose argv[0] is `name` (not the shells whose command lines mention it)."""
    return [
        pid
        for pid in live_processes_with(name)
        if Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0] == name.encode()
    ]


def wait_for(name: str) -> list[int]:
    deadline = time.monotonic() + 20
    while not (found := named(name)) and time.monotonic() < deadline:
        time.sleep(0.02)
    return found


@pytest.fixture
def bystanders() -> Iterator[tuple[str, str]]:
    """Two processes that are not the command's: a child of ours without the tag, and a
    process carrying a tag under a parent of its own (only a full scan would find it)."""
    plain, tagged = marker(), marker()
    tag = secrets.token_hex(16)
    first = subprocess.Popen(["bash", "-c", f"exec -a {plain} sleep 300"])
    second = subprocess.Popen(
        ["bash", "-c", f"env {COMMAND_TAG_VARIABLE}={tag} bash -c 'exec -a {tagged} sleep 300'"]
    )
    try:
        assert wait_for(plain) and wait_for(tagged)
        yield plain, tagged
    finally:
        for process in (first, second):
            with_children = descendants_of({process.pid})
            for pid in with_children:
                os.kill(pid, 9)
            process.wait()


def tagged_environment(tag: str) -> dict[str, str]:
    return {**os.environ, COMMAND_TAG_VARIABLE: tag}


def test_subreaper_walk_finds_a_daemonised_grandchild_and_nothing_else(
    tmp_path: Path, bystanders: tuple[str, str]
) -> None:
    assert become_subreaper(), "this Linux offers PR_SET_CHILD_SUBREAPER and children files"
    name, tag = marker(), secrets.token_hex(16)
    shell = subprocess.Popen(
        ["bash", "-c", daemonising(name)],
        env=tagged_environment(tag),
        start_new_session=True,
        cwd=tmp_path,
    )
    shell.wait()
    [grandchild] = wait_for(name)
    # Its parents are gone: as subreaper we adopted it, so it is one of our children now.
    assert grandchild in children_of(os.getpid())
    assert os.getsid(grandchild) == grandchild != shell.pid
    killed = sweep_descendants(shell.pid, tag)
    assert grandchild in killed
    assert wait_until_gone(name) == []
    assert not Path(f"/proc/{grandchild}").exists(), "the killed grandchild was also reaped"
    plain, tagged = bystanders
    assert named(plain) and named(tagged)


def test_subreaper_walk_finds_processes_below_a_live_shell(bystanders: tuple[str, str]) -> None:
    """Cancellation: the shell still runs; everything below it is found by the tree alone,
    even a process that cleared its environment."""
    assert become_subreaper()
    name, tag = marker(), secrets.token_hex(16)
    shell = subprocess.Popen(
        ["bash", "-c", f"setsid env -i bash -c 'exec -a {name} sleep 300' & sleep 300"],
        env=tagged_environment(tag),
        start_new_session=True,
    )
    [hidden] = wait_for(name)
    assert os.getsid(hidden) == hidden
    killed = sweep_descendants(shell.pid, tag)
    shell.wait()
    assert hidden in killed
    assert wait_until_gone(name) == []
    plain, tagged = bystanders
    assert named(plain) and named(tagged)


def test_environment_fallback_still_finds_the_grandchild(tmp_path: Path) -> None:
    name, tag = marker(), secrets.token_hex(16)
    shell = subprocess.Popen(
        ["bash", "-c", daemonising(name)],
        env=tagged_environment(tag),
        start_new_session=True,
        cwd=tmp_path,
    )
    shell.wait()
    [grandchild] = wait_for(name)
    assert grandchild in sweep_by_environment(tag)
    assert wait_until_gone(name) == []


async def test_run_command_kills_a_daemonised_grandchild(
    tmp_path: Path, bystanders: tuple[str, str]
) -> None:
    """End to end, unconfined: whichever way the machine offers (cgroup or subreaper)."""
    name = marker()
    box = Sandbox(str(tmp_path))
    command = f"{daemonising(name)}; while [ ! -e {name} ]; do sleep 0.01; done; echo launched"
    output = await run_in_sandbox(command, box, box.resolve("."), 60, confine=False)
    assert output["stdout"] == "launched\n"
    assert wait_until_gone(name) == []
    plain, tagged = bystanders
    assert named(plain) and named(tagged)
