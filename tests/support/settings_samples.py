"""One sample value per row of the settings table, at every level the row allows, and how
`doctor --settings` (and the daemon's and ACP's reports) show it: shared by the table's tests
and the tests that set each row through each real front."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cleveragents.settings_table import SETTINGS, Level, Setting


@dataclass(frozen=True)
class Sample:
    """A value for one row at every level it allows, and how `doctor --settings` shows it."""

    option: Any = None  # initializationOptions / run params / _meta value
    env: str | None = None
    flag: tuple[str, ...] = ()
    shown: str = ""


PRICES = {"m-1": {"input": 1.0, "output": 2.0}}


# One sample per row: a new row without one fails `test_every_row_has_a_sample`.
SAMPLES: dict[str, Sample] = {
    "provider": Sample("replay", "replay", ("--provider", "replay"), "replay"),
    "model": Sample("m-1", "m-1", ("--model", "m-1"), "m-1"),
    "automation_profile": Sample("full-auto", "full-auto", ("--profile", "full-auto"), "full-auto"),
    "max_iterations": Sample(7, "7", ("--max-iterations", "7"), "7"),
    "base_url": Sample(
        "http://127.0.0.1:9/v1",
        "http://127.0.0.1:9/v1",
        ("--base-url", "http://127.0.0.1:9/v1"),
        "http://127.0.0.1:9/v1",
    ),
    "replay_script": Sample("s.json", "s.json", ("--script", "s.json"), "s.json"),
    "max_tokens": Sample(99, shown="99"),
    "system_prompt": Sample("Be brief.", shown="Be brief."),
    "tool_result_budget": Sample(5000, "5000", ("--tool-result-budget", "5000"), "5000"),
    "context_window": Sample(4096, "4096", ("--context-window", "4096"), "4096"),
    "prompt_caching": Sample(False, "0", ("--no-prompt-cache",), "off"),
    "project_instructions": Sample(False, "0", ("--no-project-instructions",), "off"),
    "prices": Sample(PRICES, json.dumps(PRICES), ("--prices", "PRICES_FILE"), "m-1"),
    "context_clear_trigger": Sample(env="5000", shown="5000"),
    "context_keep_tool_uses": Sample(env="7", shown="7"),
    "context_clear_at_least": Sample(env="1234", shown="1234"),
    "compaction_summary": Sample(env="1", shown="on"),
    "openai_vision": Sample(env="1", shown="on"),
    "trust_workspace": Sample(True, "1", ("--trust-workspace",), "on"),
    "history": Sample(env="HISTORY_FILE", flag=("--history", "HISTORY_FILE"), shown="HISTORY_FILE"),
    "command_read_paths": Sample(
        ["/opt/extra"], "/opt/extra", ("--command-read-path", "/opt/extra"), "/opt/extra"
    ),
    "command_env": Sample(["FOO_*"], "FOO_*", ("--command-env", "FOO_*"), "FOO_*"),
    "command_limit_max_processes": Sample(77, "77", ("--command-limit", "processes=77"), "77"),
    "command_limit_max_file_size": Sample(
        "3G", "3G", ("--command-limit", "file-size-bytes=3G"), str(3 << 30)
    ),
    "command_limit_max_address_space": Sample(
        "5G", "5G", ("--command-limit", "address-space-bytes=5G"), str(5 << 30)
    ),
    "command_limit_max_cpu_seconds": Sample(33, "33", ("--command-limit", "cpu-seconds=33"), "33"),
    "command_limit_max_memory": Sample(
        "1G", "1G", ("--command-limit", "memory-bytes=1G"), str(1 << 30)
    ),
    "command_limit_tmp_size": Sample(
        "64M", "64M", ("--command-limit", "tmp-size-bytes=64M"), str(64 << 20)
    ),
    "command_limit_min_free_disk": Sample(
        "2M", "2M", ("--command-limit", "min-free-disk-bytes=2M"), str(2 << 20)
    ),
    "allow_unconfined_commands": Sample(True, "1", ("--allow-unconfined-commands",), "on"),
    "command_never_visible": Sample(env="/opt/hidden", shown="/opt/hidden"),
    "command_bubblewrap": Sample(env="none", shown="none"),
    "command_user": Sample(env="daemon", shown="daemon"),
    "allow_protected_writes": Sample(env="1", shown="on"),
    "protected_paths": Sample(env="Makefile", shown="Makefile"),
    "anthropic_api_key": Sample(env="sk-ant-0123456789", shown="set (17 characters)"),
    "openai_model": Sample(env="gpt-test", shown="gpt-test"),
    "openai_base_url": Sample(
        env="http://user:pw@127.0.0.1:9/v1", shown="http://***@127.0.0.1:9/v1"
    ),
    "openai_api_key": Sample(env="sk-0123", shown="set (7 characters)"),
}


def shown_text(row: Setting, sample: Sample, tmp_path: Path) -> str:
    return sample.shown.replace("HISTORY_FILE", str(tmp_path / "h.sqlite3"))


def env_value(sample: Sample, tmp_path: Path) -> str:
    assert sample.env is not None
    return sample.env.replace("HISTORY_FILE", str(tmp_path / "h.sqlite3"))


def nested(option: str, value: Any) -> dict[str, Any]:
    """`commandLimits.processes` = 77 as {"commandLimits": {"processes": 77}}."""
    head, _, rest = option.partition(".")
    return {head: nested(rest, value) if rest else value}


def options_for(level: Level) -> dict[str, Any]:
    """Every row's sample that `level` may set, as one options object (nested ones merged)."""
    options: dict[str, Any] = {}
    for row in SETTINGS:
        if level in row.levels and row.option is not None:
            for key, value in nested(row.option, SAMPLES[row.name].option).items():
                if isinstance(value, dict) and isinstance(options.get(key), dict):
                    options[key] = {**options[key], **value}
                else:
                    options[key] = value
    return options


def env_for(tmp_path: Path) -> dict[str, str]:
    """Every row's sample variable."""
    return {
        row.env: env_value(SAMPLES[row.name], tmp_path)
        for row in SETTINGS
        if row.env and Level.ENV in row.levels
    }
