"""The settings table (`settings_table.py`) is the one place a setting is named, and each level
a row says may set it really sets it.

How each level is reached, named honestly:
- the CLI's flags and the environment through the real `cleveragents doctor --settings --json`
  (a subprocess: it resolves exactly as `cleveragents run` does, through
  `setting_flags.client_options`);
- the daemon's and ACP's levels through the real processes: tests/test_settings_fronts.py;
- here too, in process, that a run's params and ACP's `_meta` reach the fields of the core's
  `RunPlan` (what the run is built from), which no front reports one by one.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from cleveragents.acp.agent import _requested_profile, _requested_run_options
from cleveragents.protocol import wire
from cleveragents.protocol.converter import structure
from cleveragents.protocol.translate import run_request
from cleveragents.providers import PROVIDERS
from cleveragents.service.runs import RunManager, RunPlan, RunRequest
from cleveragents.service.settings import (
    COMMAND_LIMITS,
    ResolvedSettings,
    RunDefaults,
    shown_setting,
    shown_value,
)
from cleveragents.settings_table import (
    BY_NAME,
    ENV_PASS_VARIABLES,
    ENV_PROTECTED_PATHS,
    ENV_READ_PATHS,
    SETTINGS,
    Level,
    Setting,
    render_markdown,
)
from cleveragents.tool.policy import AUTOMATION_PROFILES
from cleveragents.tool.result_budget import MIN_RESULT_BUDGET_CHARS
from cleveragents.toolsets import build_registry
from cleveragents.workspace.command_policy import ResourceLimits, parse_limit
from support.settings_samples import PRICES, SAMPLES, env_value, nested, shown_text

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "server" / "cleveragents"
# Where a run's plan (`RunManager.plan`) keeps each setting a run (or ACP) may set.
PLAN_FIELDS: dict[str, str] = {
    "provider": "provider",
    "model": "model",
    "automation_profile": "automation_profile",
    "max_iterations": "max_iterations",
    "base_url": "provider_options.base_url",
    "replay_script": "provider_options.script",
    "max_tokens": "provider_options.max_tokens",
    "system_prompt": "system_prompt",
    "tool_result_budget": "result_budget_chars",
    "context_window": "context_window",
    "prompt_caching": "prompt_caching",
    "project_instructions": "project_instructions",
    "command_read_paths": "command_policy.extra_read_paths",
    "command_env": "command_policy.env_allow",
    "allow_unconfined_commands": "command_policy.allow_unconfined",
}


def _plan_value(plan: RunPlan, path: str) -> Any:
    value: Any = plan
    for part in path.split("."):
        value = value[part] if isinstance(value, Mapping) else getattr(value, part)
    return value


def _clean_env() -> dict[str, str]:
    """The test's environment without any setting's variable (so only the sample counts)."""
    names = {row.env for row in SETTINGS if row.env}
    return {k: v for k, v in os.environ.items() if k not in names}


def _doctor(
    tmp_path: Path, *flags: str, env: Mapping[str, str] | None = None
) -> dict[str, dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-m", "cleveragents.cli", "doctor", "--settings", "--json", *flags],
        capture_output=True,
        text=True,
        env={**_clean_env(), **(env or {})},
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return {row["name"]: row for row in json.loads(done.stdout)}


def _resolved(defaults: RunDefaults, row: Setting, env: Mapping[str, str]) -> str:
    return shown_setting(row, ResolvedSettings.of(defaults, env).value(row.resolved))


def test_every_row_has_a_sample() -> None:
    assert set(SAMPLES) == set(BY_NAME)
    for row in SETTINGS:
        sample = SAMPLES[row.name]
        assert (sample.env is not None) == (Level.ENV in row.levels), row.name
        assert bool(sample.flag) == (Level.CLI in row.levels), row.name
        assert (row.option is not None) == bool(row.levels & {Level.RUN, Level.DAEMON, Level.ACP})


def test_each_variable_is_spelled_in_one_module() -> None:
    """Every `CLEVERAGENTS_*` name of the package lives in settings_table.py alone, and so does
    every provider variable the table has a row for (as a string the code reads); each other
    variable constant there is read by some module (no dead rows): the rows the core resolves
    generically (`defaults.`, `env.`) are read through the table itself."""
    provider_names = {row.env for row in SETTINGS if row.env and row.resolved.startswith("env.")}
    provider_names |= {"OPENAI_BASE_URL"}  # its row's value is read by the provider, not doctor
    assert {"OPENAI_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY"} <= provider_names
    spelled: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        names = re.findall(r"CLEVERAGENTS_[A-Z0-9_]*", text)
        names += [n for n in re.findall(r"[\"']([A-Z_]+)[\"']", text) if n in provider_names]
        for name in names:
            spelled.setdefault(name, set()).add(str(path.relative_to(PACKAGE)))
    assert spelled, "the grep found nothing: the pattern is wrong"
    elsewhere = {name: files for name, files in spelled.items() if files != {"settings_table.py"}}
    assert elsewhere == {}
    table = (PACKAGE / "settings_table.py").read_text(encoding="utf-8")
    others = "\n".join(
        p.read_text(encoding="utf-8")
        for p in PACKAGE.rglob("*.py")
        if p.name != "settings_table.py"
    )
    generic = {
        row.env for row in SETTINGS if row.env and row.resolved.split(".")[0] in ("defaults", "env")
    }
    for constant, value in re.findall(
        r'^(ENV_[A-Z_]+|COMMAND_TAG_VARIABLE) = "(\w+)"', table, re.M
    ):
        if constant == "ENV_PREFIX" or value in generic:
            continue
        assert re.search(rf"\b{constant}\b", others), f"{constant} is read by no module"


def test_the_choices_are_the_runtimes() -> None:
    """The table's choices are what the code accepts (the tool runtime cannot import the
    table, so it spells the profiles itself)."""
    assert BY_NAME["automation_profile"].choices == AUTOMATION_PROFILES
    assert BY_NAME["provider"].choices == PROVIDERS
    assert BY_NAME["tool_result_budget"].minimum == MIN_RESULT_BUDGET_CHARS


def test_docs_are_generated_from_the_table(tmp_path: Path) -> None:
    doc = ROOT / "docs" / "settings.md"
    assert doc.read_text(encoding="utf-8") == render_markdown()
    check = [sys.executable, "-m", "cleveragents.settings_table", "--check"]
    assert subprocess.run([*check, str(doc)], capture_output=True).returncode == 0
    stale = tmp_path / "settings.md"
    stale.write_text(render_markdown().replace("LLM-call limit", "call limit"), encoding="utf-8")
    done = subprocess.run([*check, str(stale)], capture_output=True, text=True)
    assert done.returncode == 1 and "out of date" in done.stderr


def test_the_command_limit_rows_say_the_walls_defaults() -> None:
    """The docs and the schema give each limit's default from its row: the command wall's
    own value (`ResourceLimits`), in the notation the setting accepts."""
    limits = ResourceLimits()
    for row in SETTINGS:
        if row.value_type != "limit":
            continue
        field = row.resolved.removeprefix("policy.limits.")
        value = getattr(limits, field)
        if field == "max_cpu_seconds":
            assert (row.default, value) == ("600 per core", 600 * (os.cpu_count() or 1))
        elif field == "max_memory":
            total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
            assert (row.default, value) == ("3/4 of RAM", total * 3 // 4)
        else:
            size = dict(COMMAND_LIMITS.values())[field]  # whether it is a size (K/M/G/T)
            assert parse_limit(row.default, size=size, name=row.name) == value, row.name


def test_defaults_come_from_nowhere_else(tmp_path: Path) -> None:
    """With no flag and no variable, the CLI says every value is the default."""
    report = _doctor(tmp_path)
    assert {name: row["source"] for name, row in report.items()} == {
        name: "default" for name in BY_NAME
    }


def test_the_cli_honours_every_variable(tmp_path: Path) -> None:
    env = {
        row.env: env_value(SAMPLES[row.name], tmp_path)
        for row in SETTINGS
        if row.env and Level.ENV in row.levels
    }
    report = _doctor(tmp_path, env=env)
    for row in SETTINGS:
        if Level.ENV not in row.levels:
            assert report[row.name]["source"] == "default", row.name
            continue
        assert report[row.name]["source"] == "env", row.name
        assert report[row.name]["value"] == shown_text(row, SAMPLES[row.name], tmp_path), row.name
    assert "sk-0123" not in json.dumps(report)


def test_the_cli_honours_every_flag(tmp_path: Path) -> None:
    (tmp_path / "prices.json").write_text(json.dumps(PRICES), encoding="utf-8")
    flags: list[str] = []
    for row in SETTINGS:
        for part in SAMPLES[row.name].flag:
            part = part.replace("PRICES_FILE", str(tmp_path / "prices.json"))
            flags.append(part.replace("HISTORY_FILE", str(tmp_path / "h.sqlite3")))
    report = _doctor(tmp_path, *flags)
    for row in SETTINGS:
        if Level.CLI in row.levels:
            assert report[row.name]["source"] == "flag", row.name
            assert report[row.name]["value"] == shown_text(row, SAMPLES[row.name], tmp_path), (
                row.name
            )


def test_a_list_set_at_two_levels_adds_up_each_entry_once(tmp_path: Path) -> None:
    """The variable and the flags name some of the same folders and variables: each is
    resolved once, in the order the levels give them (the environment's first)."""
    tools = tmp_path / "tools"
    tools.mkdir()
    env = {
        ENV_READ_PATHS: f"{tools}:/opt/y:{tools}",
        ENV_PASS_VARIABLES: "FOO,BAR",
        ENV_PROTECTED_PATHS: "Makefile:scripts:Makefile",
    }
    flags = ["--command-read-path", str(tools), "--command-read-path", "/opt/z"]
    report = _doctor(tmp_path, *flags, "--command-env", "FOO", env=env)
    assert report["command_read_paths"]["value"] == f"{tools}, /opt/y, /opt/z"
    assert report["command_env"]["value"] == "FOO, BAR"
    assert report["protected_paths"]["value"] == "Makefile, scripts"
    # And what a command would see: the folder is mounted once.
    project = tmp_path / "project"
    project.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "cleveragents.cli", "doctor", "--json", *flags],
        capture_output=True,
        text=True,
        env={**_clean_env(), **env},
        cwd=project,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    mounts = [mount["path"] for mount in json.loads(done.stdout)["mounts"]]
    assert mounts.count(str(tools)) == 1, mounts


def _plan(request: RunRequest, tmp_path: Path) -> RunPlan:
    manager = RunManager(build_registry([]), RunDefaults(), None)
    return manager.plan(request)


@pytest.mark.parametrize(
    "row", [r for r in SETTINGS if Level.RUN in r.levels], ids=lambda row: row.name
)
def test_run_params_set_it(row: Setting, tmp_path: Path) -> None:
    assert row.option is not None
    raw = {"prompt": "x", "sandboxRoot": str(tmp_path)} | nested(
        row.option, SAMPLES[row.name].option
    )
    plan = _plan(run_request(structure(raw, wire.RunParams)), tmp_path)
    if row.resolved.startswith("policy.limits."):
        assert plan.command_policy is not None
        value = getattr(plan.command_policy.limits, row.resolved.rsplit(".", 1)[1])
    else:
        value = _plan_value(plan, PLAN_FIELDS[row.name])
    assert shown_value(value) == shown_text(row, SAMPLES[row.name], tmp_path)


@pytest.mark.parametrize(
    "row", [r for r in SETTINGS if Level.ACP in r.levels], ids=lambda row: row.name
)
def test_acp_meta_sets_it(row: Setting, tmp_path: Path) -> None:
    assert row.option is not None
    meta = {row.option: SAMPLES[row.name].option}
    request = RunRequest(
        prompt="x",
        sandbox_root=str(tmp_path),
        automation_profile=_requested_profile(meta, RunDefaults()),
        **_requested_run_options(meta),
    )
    value = _plan_value(_plan(request, tmp_path), PLAN_FIELDS[row.name])
    assert shown_value(value) == shown_text(row, SAMPLES[row.name], tmp_path)


def test_a_bad_provider_variable_exits_2_naming_it(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "cleveragents.cli", "run", "hi", "--no-history"],
        capture_output=True,
        text=True,
        env={**_clean_env(), "CLEVERAGENTS_PROVIDER": "bogus"},
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("cleveragents: $CLEVERAGENTS_PROVIDER: unknown provider 'bogus'")


def test_a_bad_flag_is_named_as_typed(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "cleveragents.cli", "doctor", "--settings", "--max-iterations", "0"],
        capture_output=True,
        text=True,
        env=_clean_env(),
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr == "cleveragents: --max-iterations: must be at least 1, got 0\n"
