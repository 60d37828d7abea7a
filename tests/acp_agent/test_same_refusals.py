"""The same refusals in every front: a sandbox (or ACP `cwd`) that is `/`, holds the home
folder, or is a credential folder is refused by the core's one check, as a usage error that
names the front's own field: the daemon's `params.sandboxRoot`, ACP's `cwd`, the CLI's
`--sandbox` (exit 2, one line, no traceback) and the library's `Sandbox`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from acp import PROTOCOL_VERSION, RequestError

from cleveragents import jsonrpc_errors as codes
from cleveragents.service.runs import check_sandbox_root
from cleveragents.tool import ToolError
from cleveragents.workspace.sandbox import Sandbox
from support.acp_support import AgentProcess, agent_env
from support.daemon_support import RawDaemon


def refused_folders(home: Path) -> list[Path]:
    """`/`, a folder holding the home folder, and two credential folders inside it."""
    for name in (".ssh", ".aws"):
        (home / name).mkdir(parents=True, exist_ok=True)
    return [Path("/"), home.parent, home / ".ssh", home / ".aws"]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "users" / "me"
    folder.mkdir(parents=True)
    return folder


def test_the_library_refuses_them(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(home))
    for folder in refused_folders(home):
        _, problem = check_sandbox_root(str(folder))
        assert problem is not None, folder
        with pytest.raises(ToolError):
            Sandbox(str(folder))
    project = home / "project"
    project.mkdir()
    assert check_sandbox_root(str(project)) == (str(project.resolve()), None)


def test_the_cli_refuses_them_in_one_line(home: Path, tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(home), "XDG_DATA_HOME": str(tmp_path / "data")}
    for folder in refused_folders(home):
        done = subprocess.run(
            [sys.executable, "-m", "cleveragents", "run", "x", "--sandbox", str(folder)],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=False,
        )
        assert done.returncode == 2, (folder, done.stderr)
        assert done.stderr.startswith("cleveragents: --sandbox: "), done.stderr
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


async def test_the_daemon_refuses_them(home: Path, tmp_path: Path) -> None:
    daemon = await RawDaemon.start(tmp_path, env={"HOME": str(home)})
    try:
        await daemon.initialize({"provider": "offline"})
        for folder in refused_folders(home):
            answer = await daemon.request(
                "cleveragents/run", {"prompt": "x", "sandboxRoot": str(folder)}
            )
            error = answer["error"]
            assert error["code"] == codes.INVALID_PARAMS, answer
            assert error["data"]["problems"][0].startswith("params.sandboxRoot: "), error
    finally:
        daemon.kill()
        await daemon.process.wait()


async def test_acp_refuses_them_as_a_session_cwd(home: Path, tmp_path: Path) -> None:
    agent = await AgentProcess.start(tmp_path, {**agent_env(tmp_path), "HOME": str(home)})
    try:
        await agent.conn.initialize(protocol_version=PROTOCOL_VERSION)
        for folder in refused_folders(home):
            with pytest.raises(RequestError) as refused:
                await agent.conn.new_session(cwd=str(folder), mcp_servers=[])
            assert refused.value.code == codes.INVALID_PARAMS
            assert str(refused.value).startswith("invalid params: cwd: "), refused.value
        assert await agent.close() == 0, agent.stderr.decode()
    finally:
        agent.kill()
