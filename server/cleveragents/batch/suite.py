"""Batch suites: tasks (a workspace, a prompt, a check) run over a matrix of configurations.

A suite is a YAML or JSON file checked against `suite.schema.json` (docs/batch.md shows the
format); every problem is reported at once, naming the task and the field. Relative paths
(workspaces, replay scripts) are relative to the suite file's folder.

    suite = load_suite("evals/suite.yaml")
    for job in suite.jobs():            # every task under every configuration
        job.task.id, job.config, job.settings.model
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from functools import cache
from pathlib import Path
from typing import Any

SCHEMA_FILE = Path(__file__).with_name("suite.schema.json")
DEFAULT_CONFIG = "default"
DEFAULT_TIMEOUT_S = 1800.0
DEFAULT_CHECK_TIMEOUT_S = 300.0


class SuiteError(ValueError):
    """The suite cannot be run; `problems` lists every reason, each naming where."""

    def __init__(self, path: str, problems: list[str]) -> None:
        self.path = path
        self.problems = problems
        super().__init__(f"{path}: " + "; ".join(problems))


@dataclass(frozen=True, slots=True)
class Settings:
    """How a task runs; None leaves a setting to the layer below (task, defaults, session)."""

    provider: str | None = None
    model: str | None = None
    base_url: str | None = None
    replay_script: str | None = None
    system_prompt: str | None = None
    profile: str | None = None
    tools: tuple[str, ...] | None = None
    max_iterations: int | None = None
    timeout_s: float | None = None
    check_timeout_s: float | None = None
    num_cpus: float | None = None
    memory_mb: int | None = None

    def over(self, below: Settings) -> Settings:
        """These settings, with `below`'s where these leave one unset."""
        return Settings(
            **{
                f.name: getattr(self, f.name)
                if getattr(self, f.name) is not None
                else getattr(below, f.name)
                for f in fields(Settings)
            }
        )


@dataclass(frozen=True, slots=True)
class Workspace:
    """A folder to copy, or a git repository (URL or path) to clone at `ref`."""

    path: str | None = None
    git: str | None = None
    ref: str | None = None

    def describe(self) -> str:
        if self.path is not None:
            return self.path
        return f"{self.git}@{self.ref}" if self.ref else str(self.git)


@dataclass(frozen=True, slots=True)
class Task:
    id: str
    workspace: Workspace
    prompt: str
    check: str | None = None
    expected_files: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    settings: Settings = field(default_factory=Settings)


@dataclass(frozen=True, slots=True)
class Configuration:
    name: str
    settings: Settings = field(default_factory=Settings)


@dataclass(frozen=True, slots=True)
class Job:
    """One task under one configuration: what a batch runs and records."""

    task: Task
    config: str
    settings: Settings

    @property
    def key(self) -> str:
        return f"{self.task.id}@{self.config}"

    @property
    def timeout_s(self) -> float:
        return self.settings.timeout_s or DEFAULT_TIMEOUT_S

    @property
    def check_timeout_s(self) -> float:
        return self.settings.check_timeout_s or DEFAULT_CHECK_TIMEOUT_S

    def fingerprint(self) -> str:
        """What decides whether a finished result still stands: the task and its settings,
        with the replay script's content (an edited script is a different task)."""
        data: dict[str, Any] = {"task": asdict(self.task), "settings": asdict(self.settings)}
        script = self.settings.replay_script
        if script is not None:
            try:
                data["script"] = hashlib.sha256(Path(script).read_bytes()).hexdigest()
            except OSError:
                data["script"] = None
        encoded = json.dumps(data, sort_keys=True, default=str).encode()
        return hashlib.sha256(encoded).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class Suite:
    path: str
    name: str
    tasks: tuple[Task, ...]
    configurations: tuple[Configuration, ...]
    defaults: Settings = field(default_factory=Settings)

    def jobs(self) -> Iterator[Job]:
        """Every task under every configuration, task by task."""
        for task in self.tasks:
            for config in self.configurations:
                yield Job(
                    task, config.name, config.settings.over(task.settings.over(self.defaults))
                )

    def select(self, task_ids: set[str] | None = None, tags: set[str] | None = None) -> Suite:
        """The suite with only the named tasks, or only those with one of the tags."""
        tasks = tuple(
            task
            for task in self.tasks
            if (not task_ids or task.id in task_ids) and (not tags or tags & set(task.tags))
        )
        return replace(self, tasks=tasks)


@cache
def suite_schema() -> dict[str, Any]:
    return dict(json.loads(SCHEMA_FILE.read_text(encoding="utf-8")))


def load_suite(path: str | os.PathLike[str]) -> Suite:
    """Read and check a suite file; SuiteError listing every problem."""
    shown = str(path)
    suite_path = Path(path)
    try:
        text = suite_path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SuiteError(shown, [f"cannot read the suite: {exc.strerror or exc}"]) from None
    except UnicodeDecodeError:
        raise SuiteError(shown, ["the suite is not UTF-8 text"]) from None
    data = parse_suite_text(text, shown)
    return suite_from_data(data, suite_path.resolve().parent, shown, default_name=suite_path.stem)


def parse_suite_text(text: str, shown: str) -> Any:
    """YAML (which JSON also is); a JSON Lines file is a list of tasks, one a line."""
    if shown.endswith(".jsonl"):
        tasks = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                tasks.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise SuiteError(shown, [f"line {number}: not JSON: {exc.msg}"]) from None
        return {"tasks": tasks}
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f"line {where.line + 1}, column {where.column + 1}: " if where is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise SuiteError(shown, [f"{at}not valid YAML: {problem}"]) from None


def suite_from_data(data: Any, base: Path, shown: str, *, default_name: str = "batch") -> Suite:
    """A checked Suite from parsed data; relative paths are taken from `base`."""
    import jsonschema

    problems: list[str] = []
    validator = jsonschema.Draft202012Validator(suite_schema())
    for error in sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.path))):
        wording = _wording(error)
        if wording is not None:
            problems.append(f"{_where(data, list(error.absolute_path))}: {wording}")
    if problems:
        raise SuiteError(shown, problems)
    assert isinstance(data, dict)
    defaults = _settings(data.get("defaults", {}), base)
    configurations = tuple(
        Configuration(raw["name"], _settings(raw, base)) for raw in data.get("matrix", [])
    ) or (Configuration(DEFAULT_CONFIG),)
    tasks = tuple(_task(raw, base) for raw in data["tasks"])
    problems.extend(_duplicates("tasks", [t.id for t in tasks]))
    problems.extend(_duplicates("matrix", [c.name for c in configurations]))
    for task in tasks:
        if task.workspace.path is not None and not os.path.isdir(task.workspace.path):
            problems.append(f"task {task.id!r}: workspace: no such folder: {task.workspace.path}")
        if task.check is None and not task.expected_files:
            problems.append(f"task {task.id!r}: give a check command or expected_files (or both)")
    for layer, where in [(defaults, "defaults")] + [
        (config.settings, f"matrix {config.name!r}") for config in configurations
    ]:
        problems.extend(_missing_script(layer, where))
    for task in tasks:
        problems.extend(_missing_script(task.settings, f"task {task.id!r}"))
    if problems:
        raise SuiteError(shown, problems)
    return Suite(
        path=shown,
        name=str(data.get("name") or _as_id(default_name)),
        tasks=tasks,
        configurations=configurations,
        defaults=defaults,
    )


def _settings(raw: Mapping[str, Any], base: Path) -> Settings:
    script = raw.get("replay_script")
    tools = raw.get("tools")
    timeout = raw.get("timeout_s")
    check_timeout = raw.get("check_timeout_s")
    num_cpus = raw.get("num_cpus")
    return Settings(
        provider=raw.get("provider"),
        model=raw.get("model"),
        base_url=raw.get("base_url"),
        replay_script=str(base / script) if script is not None else None,
        system_prompt=raw.get("system_prompt"),
        profile=raw.get("profile"),
        tools=tuple(tools) if tools is not None else None,
        max_iterations=raw.get("max_iterations"),
        timeout_s=float(timeout) if timeout is not None else None,
        check_timeout_s=float(check_timeout) if check_timeout is not None else None,
        num_cpus=float(num_cpus) if num_cpus is not None else None,
        memory_mb=raw.get("memory_mb"),
    )


def _task(raw: Mapping[str, Any], base: Path) -> Task:
    workspace_raw = raw["workspace"]
    if isinstance(workspace_raw, str):
        workspace = Workspace(path=str((base / workspace_raw).resolve()))
    else:
        repository = workspace_raw["git"]
        # A local repository path is relative to the suite like any path; a URL is kept.
        if "://" not in repository and not repository.startswith("git@"):
            repository = str((base / repository).resolve())
        workspace = Workspace(git=repository, ref=workspace_raw.get("ref"))
    return Task(
        id=raw["id"],
        workspace=workspace,
        prompt=raw["prompt"],
        check=raw.get("check"),
        expected_files=tuple(raw.get("expected_files", ())),
        tags=tuple(raw.get("tags", ())),
        settings=_settings(raw, base),
    )


def _missing_script(settings: Settings, where: str) -> list[str]:
    script = settings.replay_script
    if script is not None and not os.path.isfile(script):
        return [f"{where}: replay_script: no such file: {script}"]
    return []


def _duplicates(where: str, names: list[str]) -> list[str]:
    seen: set[str] = set()
    repeated = [n for n in names if n in seen or seen.add(n)]  # type: ignore[func-returns-value]
    return [f"{where}: {name!r} is used more than once" for name in dict.fromkeys(repeated)]


def _where(data: Any, path: list[str | int]) -> str:
    """A schema error's place, naming the task (by id) or configuration (by name) it is in."""
    if not path:
        return "the suite"
    head, *rest = path
    if head in ("tasks", "matrix") and rest and isinstance(rest[0], int):
        index = rest[0]
        item = data[head][index]
        key = "id" if head == "tasks" else "name"
        label = item.get(key) if isinstance(item, dict) else None
        noun = "task" if head == "tasks" else "matrix"
        named = f"{noun} {label!r}" if isinstance(label, str) else f"{head}[{index}]"
        field_path = ".".join(str(p) for p in rest[1:])
        return f"{named}: {field_path}" if field_path else named
    return ".".join(str(p) for p in path)


def _wording(error: Any) -> str | None:
    """The error in a user's words; None for one another error already says."""
    if error.validator in ("additionalProperties", "unevaluatedProperties"):
        # A known field with a bad value counts as unevaluated too: its own error says it.
        known = set(error.schema.get("properties", {}))
        if error.validator == "unevaluatedProperties":
            known.update(suite_schema()["$defs"]["settings"]["properties"])
        unknown = sorted(set(error.instance) - known)
        return f"unknown field(s): {', '.join(unknown)}" if unknown else None
    if error.validator == "pattern" and isinstance(error.instance, str):
        return (
            f"{error.instance!r} is not a valid id: use 1 to 64 letters, digits, '_', '-' "
            "or '.', starting with a letter or digit"
        )
    return str(error.message)


def _as_id(name: str) -> str:
    cleaned = "".join(c if c.isalnum() or c in "_.-" else "-" for c in name).strip("-.")
    return cleaned[:64] or "batch"
