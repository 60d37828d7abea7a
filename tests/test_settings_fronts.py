"""Each row of the settings table set at each level it allows, through each real front, and
read back from what that front reports (the CLI's levels: tests/test_settings_table.py).

- The daemon over real stdio (`python -m cleveragents.daemon --stdio`): one daemon with every
  variable set, one with every `initializationOptions` row set, whose `cleveragents/settings`
  also resolves a run with every run param set.
- ACP through the ACP SDK's client over stdio (`serve --acp`): one agent with every variable
  set, whose `session/new` sets every `_meta.cleveragents` row and asks for the report.

Every test is parametrised over the table's rows, so a new row is tested at once (and a row
without a sample fails `test_every_row_has_a_sample`). Three processes serve every row.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION

from cleveragents.protocol import wire
from cleveragents.settings_table import ENV_READ_PATHS, SETTINGS, Level, Setting
from support.acp_support import AgentProcess, agent_env
from support.daemon_support import RawDaemon, check_against_schema
from support.settings_samples import SAMPLES, env_for, options_for, shown_text

Report = dict[str, dict[str, Any]]


def _by_name(rows: list[dict[str, Any]]) -> Report:
    assert [row["name"] for row in rows] == [row.name for row in SETTINGS]
    return {row["name"]: row for row in rows}


def _collect(
    home: Path, work: Callable[[], Coroutine[Any, Any, dict[str, Report]]]
) -> dict[str, Report]:
    home.mkdir(parents=True, exist_ok=True)
    return asyncio.run(work())


@pytest.fixture(scope="module")
def daemon_reports(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Report]]:
    """The daemon's `cleveragents/settings` answers: `env` (every variable set, no options),
    `options` (every `initializationOptions` row set, no variable) and `run` (that session
    with a run's params setting every run row)."""
    home = tmp_path_factory.mktemp("daemon-settings")
    sandbox = home / "sandbox"
    sandbox.mkdir()

    async def settings(daemon: RawDaemon, params: Any = None) -> Report:
        answer = await (
            daemon.request("cleveragents/settings")
            if params is None
            else daemon.request("cleveragents/settings", params)
        )
        assert "result" in answer, answer
        check_against_schema("cleveragents/settings", answer["result"], "result")
        return _by_name(answer["result"]["settings"])

    async def work() -> dict[str, Report]:
        reports: dict[str, Report] = {}
        daemon = await RawDaemon.start(home, env=env_for(home))
        try:
            await daemon.initialize()
            reports["env"] = await settings(daemon)
        finally:
            daemon.kill()
            await daemon.process.wait()
        daemon = await RawDaemon.start(home)
        try:
            await daemon.initialize(options_for(Level.DAEMON))
            reports["options"] = await settings(daemon)
            run = {"prompt": "x", "sandboxRoot": str(sandbox)} | options_for(Level.RUN)
            reports["run"] = await settings(daemon, {"run": run})
            # A bad run param is refused as `cleveragents/run` refuses it, naming the field.
            bad = await daemon.request(
                "cleveragents/settings", {"run": run | {"maxIterations": 1001}}
            )
            reports["refused"] = {"error": bad["error"]}
        finally:
            daemon.kill()
            await daemon.process.wait()
        return reports

    return home, _collect(home, work)


@pytest.fixture(scope="module")
def acp_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Report]:
    """ACP's `session/new` report, with every variable set and every `_meta` row."""
    home = tmp_path_factory.mktemp("acp-settings")
    sandbox = home / "sandbox"
    sandbox.mkdir()

    async def work() -> dict[str, Report]:
        agent = await AgentProcess.start(home, agent_env(home, **env_for(home)))
        try:
            await agent.conn.initialize(protocol_version=PROTOCOL_VERSION)
            meta = options_for(Level.ACP) | {"reportSettings": True}
            session = await agent.conn.new_session(
                cwd=str(sandbox), mcp_servers=[], cleveragents=meta
            )
            assert session.field_meta is not None
            report = _by_name(session.field_meta["cleveragents"]["settings"])
        finally:
            code = await agent.close()
        assert code == 0, agent.stderr.decode()
        return {"session": report}

    return home, _collect(home, work)["session"]


def _rows(level: Level) -> list[Setting]:
    return [row for row in SETTINGS if level in row.levels]


def _ids(row: Setting) -> str:
    return row.name


@pytest.mark.parametrize("row", _rows(Level.ENV), ids=_ids)
def test_the_daemon_honours_the_variable(
    row: Setting, daemon_reports: tuple[Path, dict[str, Report]]
) -> None:
    home, reports = daemon_reports
    got = reports["env"][row.name]
    assert got["variable"] == row.env
    if row.name == "history":
        # The daemon was started with `--history` (its command line), which beats the variable.
        assert got == {
            "name": "history",
            "variable": row.env,
            "value": str(home / "history.sqlite3"),
            "source": "--history",
        }
        return
    assert (got["source"], got["value"]) == ("env", shown_text(row, SAMPLES[row.name], home))


@pytest.mark.parametrize("row", _rows(Level.DAEMON), ids=_ids)
def test_initialization_options_set_it(
    row: Setting, daemon_reports: tuple[Path, dict[str, Report]]
) -> None:
    got = daemon_reports[1]["options"][row.name]
    shown = SAMPLES[row.name].shown
    assert (got["source"], got["value"]) == ("initializationOptions", shown)


@pytest.mark.parametrize("row", _rows(Level.RUN), ids=_ids)
def test_run_params_set_it(row: Setting, daemon_reports: tuple[Path, dict[str, Report]]) -> None:
    got = daemon_reports[1]["run"][row.name]
    # Lists add up, the session's then the run's, each entry once: the run repeats the
    # session's sample, which shows once (test_a_list_set_at_every_level_adds_up_each_entry_once).
    assert (got["source"], got["value"]) == ("params", SAMPLES[row.name].shown)


@pytest.mark.parametrize(
    "row", [row for row in SETTINGS if not row.levels & {Level.DAEMON, Level.RUN}], ids=_ids
)
def test_what_no_client_level_sets_stays_the_default(
    row: Setting, daemon_reports: tuple[Path, dict[str, Report]]
) -> None:
    """The options daemon had no variable: a row its options cannot set is the default (the
    history: the daemon's `--history`)."""
    expected = "--history" if row.name == "history" else "default"
    assert daemon_reports[1]["options"][row.name]["source"] == expected
    assert daemon_reports[1]["run"][row.name]["source"] == expected


def test_a_bad_run_param_is_refused_naming_it(
    daemon_reports: tuple[Path, dict[str, Report]],
) -> None:
    error = daemon_reports[1]["refused"]["error"]
    assert error["code"] == wire.INVALID_PARAMS
    # Named by its real path: the run's params sit under `params.run`.
    assert error["data"]["problems"] == ["params.run.maxIterations: must be at most 1000, got 1001"]
    assert "params.run.maxIterations" in error["message"]


@pytest.mark.parametrize("row", _rows(Level.ACP), ids=_ids)
def test_acp_meta_sets_it(row: Setting, acp_report: tuple[Path, Report]) -> None:
    _, report = acp_report
    got = report[row.name]
    assert (got["source"], got["value"]) == ("_meta", SAMPLES[row.name].shown)


@pytest.mark.parametrize(
    "row", [row for row in _rows(Level.ENV) if Level.ACP not in row.levels], ids=_ids
)
def test_acp_honours_the_variable(row: Setting, acp_report: tuple[Path, Report]) -> None:
    home, report = acp_report
    got = report[row.name]
    if row.name == "history":  # `serve --acp --history` beats the variable, as the daemon's
        assert (got["source"], got["value"]) == ("--history", str(home / "history.sqlite3"))
        return
    assert (got["source"], got["value"]) == ("env", shown_text(row, SAMPLES[row.name], home))


def test_a_list_set_at_every_level_adds_up_each_entry_once(tmp_path: Path) -> None:
    """The variable, `initializationOptions` and a run's params each name some of the same
    folders and variables: the run gets them in order of the levels, each once."""
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    env = {ENV_READ_PATHS: "/opt/x:/opt/y:/opt/x"}

    async def work() -> dict[str, Any]:
        daemon = await RawDaemon.start(tmp_path, env=env)
        try:
            await daemon.initialize(
                {"commandReadPaths": ["/opt/y", "/opt/z"], "commandEnv": ["FOO", "FOO"]}
            )
            run = {
                "prompt": "x",
                "sandboxRoot": str(sandbox),
                "commandReadPaths": ["/opt/z", "/opt/w", "/opt/x"],
                "commandEnv": ["BAR", "FOO"],
            }
            return await daemon.request("cleveragents/settings", {"run": run})
        finally:
            daemon.kill()
            await daemon.process.wait()

    answer = asyncio.run(work())
    report = _by_name(answer["result"]["settings"])
    assert report["command_read_paths"]["value"] == "/opt/x, /opt/y, /opt/z, /opt/w"
    assert report["command_env"]["value"] == "FOO, BAR"
