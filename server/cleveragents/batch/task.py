"""One batch task: a fresh copy of its workspace, a run through the core pipeline, its check.

`run_job` is what every executor runs, here or on a Ray worker: the copy is made with the
source only read, the run goes through `RunManager.run` (the walls, the history, the undo and
the traces of every run), and the check command runs through the command wall
(`workspace/command.py`), confined in the copy like the run's own commands.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from ..service.errors import ServiceError
from ..service.history import BatchLabel
from ..service.runs import RunManager, RunPlan, RunRequest
from ..service.trust import TrustRequest
from ..tool.events import (
    ResponseReceived,
    RunEvent,
    RunFailed,
    RunFinished,
    RunObserver,
    TextDelta,
    ToolCallFinished,
)
from ..tool.policy import ApprovalDecision, ApprovalRequest
from ..tool.serialization import register_shape
from ..workspace.command import CommandTool
from ..workspace.command_policy import CommandPolicy
from .suite import Job, Workspace

# A batch runs unattended in a throw-away copy: what a task's settings leave open runs
# without asking (there is nobody to ask; a call that would need asking is denied).
BATCH_PROFILE = "full-auto"
CHECK_OUTPUT_CHARS = 4000

# passed/failed: the run ended and the check said; timeout: the run outlived timeout_s;
# error: the task could not run (its copy, its settings, the provider, a dead worker).
TaskStatus = Literal["passed", "failed", "timeout", "error"]


@dataclass(slots=True)
class CheckResult:
    command: str | None
    exit_code: int | None
    output: str
    confined: bool | None
    missing_files: list[str] = field(default_factory=list)
    error: str | None = None

    @property
    def passed(self) -> bool:
        command_ok = self.command is None or self.exit_code == 0
        return command_ok and not self.missing_files and self.error is None


@dataclass(slots=True)
class TaskOutcome:
    """A task's row of the report (and what the history keeps of it: its data)."""

    task_id: str
    config: str
    status: TaskStatus
    run_id: str | None = None
    stop_reason: str | None = None
    iterations: int = 0
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = None
    duration_s: float = 0.0
    check: dict[str, Any] | None = None
    error: str | None = None
    workspace: str | None = None
    tags: list[str] = field(default_factory=list)
    executor: str = "local"
    attempts: int = 1
    # Why the task ran more than once (a Ray worker died), else None.
    retried: str | None = None
    # True when the outcome is an earlier run's, kept because the task had not changed.
    skipped: bool = False

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    @property
    def key(self) -> str:
        return f"{self.task_id}@{self.config}"

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TaskOutcome:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)


register_shape(TaskOutcome, extra={"passed": lambda outcome: outcome.passed})


class TaskSink:
    """The batch's half of a run: counts what the run did, keeps its events (a Ray worker
    sends them back to the caller's history), asks nobody anything."""

    approvals = False

    def __init__(self, keep_events: bool = False) -> None:
        self.keep_events = keep_events
        self.events: list[RunEvent] = []
        self.run_id: str | None = None
        self.iterations = 0
        self.tool_calls = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.cache_read_tokens = 0
        self.cache_write_tokens = 0
        self.cost_usd: float | None = None
        self.stop_reason: str | None = None
        self.error: str | None = None

    def run_observer(self, plan: RunPlan) -> RunObserver:
        self.run_id = plan.run_id
        return self.observe

    def observe(self, event: RunEvent) -> None:
        if isinstance(event, TextDelta):
            return
        if self.keep_events:
            self.events.append(event)
        if isinstance(event, ResponseReceived):
            self.iterations = max(self.iterations, event.iteration)
            total = event.total_usage  # the run's so far, as the runtime counts it
            self.input_tokens = total.input_tokens
            self.output_tokens = total.output_tokens
            self.cache_read_tokens = total.cache_read_tokens
            self.cache_write_tokens = total.cache_write_tokens
            self.cost_usd = event.total_cost_usd
        elif isinstance(event, ToolCallFinished):
            self.tool_calls += 1
        elif isinstance(event, RunFinished):
            self.stop_reason = event.result.stop_reason
            self.iterations = event.result.iterations
        elif isinstance(event, RunFailed):
            self.error = f"{event.error_type}: {event.error}"

    async def ask_approval(self, request: ApprovalRequest) -> ApprovalDecision:
        return "deny"  # never called: approvals is False

    async def ask_trust(self, request: TrustRequest) -> bool | None:
        return None  # nobody to ask: only the trust-workspace variable starts MCP servers


def prepare_workspace(workspace: Workspace, destination: str) -> None:
    """A fresh copy of the task's workspace at `destination` (anything there is replaced).

    A folder is copied (symlinks as links, so nothing outside is followed); a repository is
    cloned and `ref` checked out. The source is only read.
    """
    if os.path.lexists(destination):
        shutil.rmtree(destination)
    os.makedirs(os.path.dirname(destination), exist_ok=True)
    if workspace.path is not None:
        shutil.copytree(workspace.path, destination, symlinks=True)
        return
    assert workspace.git is not None
    _git("clone", "--quiet", "--no-hardlinks", "--", workspace.git, destination)
    if workspace.ref:
        # A tag, a commit, or a branch (the clone has only the default one as a local branch).
        for name in (workspace.ref, f"origin/{workspace.ref}"):
            try:
                commit = _git("-C", destination, "rev-parse", "--verify", f"{name}^{{commit}}")
                break
            except RuntimeError:
                continue
        else:
            raise RuntimeError(f"no branch, tag or commit {workspace.ref!r} in {workspace.git}")
        _git("-C", destination, "checkout", "--quiet", "--detach", commit)


def _git(*arguments: str) -> str:
    done = subprocess.run(
        ["git", "-c", "advice.detachedHead=false", *arguments],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        command = next(a for a in arguments if not a.startswith("-") and "/" not in a)
        raise RuntimeError(f"git {command} failed: {done.stderr.strip() or done.returncode}")
    return done.stdout.strip()


async def run_check(job: Job, sandbox: str, policy: CommandPolicy | None) -> CheckResult:
    """The task's check command (confined, in the copy) and its expected files."""
    task = job.task
    missing = [p for p in task.expected_files if not os.path.lexists(os.path.join(sandbox, p))]
    if task.check is None:
        return CheckResult(None, None, "", None, missing)
    try:
        done = await CommandTool(policy).run_command(
            task.check, ".", job.check_timeout_s, sandbox_root=sandbox
        )
    except Exception as exc:  # the wall refused it, it timed out or hit a limit: a failure
        return CheckResult(task.check, None, "", None, missing, error=str(exc))
    output = (str(done.get("stdout", "")) + str(done.get("stderr", "")))[-CHECK_OUTPUT_CHARS:]
    return CheckResult(
        task.check, int(done["exit_code"]), output, bool(done.get("confined")), missing
    )


def run_request(job: Job, sandbox: str, batch_id: str) -> RunRequest:
    settings = job.settings
    return RunRequest(
        prompt=job.task.prompt,
        sandbox_root=sandbox,
        provider=settings.provider,
        model=settings.model,
        base_url=settings.base_url,
        replay_script=settings.replay_script,
        system_prompt=settings.system_prompt,
        automation_profile=settings.profile or BATCH_PROFILE,
        tools=settings.tools,
        max_iterations=settings.max_iterations,
        batch=BatchLabel(batch_id, job.task.id, job.config),
    )


async def run_job(
    manager: RunManager,
    job: Job,
    sandbox: str,
    batch_id: str,
    *,
    sink: TaskSink | None = None,
    executor: str = "local",
    prepare: bool = True,
) -> TaskOutcome:
    """Copy the workspace to `sandbox` (unless `prepare` is False: the copy is there), run
    the task there, check it. Never raises but CancelledError (the batch was stopped): a
    failure is the outcome's status and error."""
    sink = sink if sink is not None else TaskSink()
    started = time.monotonic()
    outcome = TaskOutcome(
        job.task.id,
        job.config,
        "error",
        workspace=sandbox,
        tags=list(job.task.tags),
        executor=executor,
    )
    try:
        if prepare:
            await asyncio.to_thread(prepare_workspace, job.task.workspace, sandbox)
    except Exception as exc:
        outcome.error = f"cannot copy the workspace {job.task.workspace.describe()}: {exc}"
        outcome.duration_s = time.monotonic() - started
        return outcome
    finished = False
    try:
        async with asyncio.timeout(job.timeout_s):
            await manager.run(run_request(job, sandbox, batch_id), sink)
        finished = True
    except TimeoutError:
        outcome.status = "timeout"
        outcome.error = f"the run took longer than timeout_s={job.timeout_s:g}"
    except ServiceError as exc:
        outcome.error = exc.message
    finally:
        _copy_counts(sink, outcome)
        outcome.duration_s = time.monotonic() - started
    if outcome.status == "timeout":
        outcome.stop_reason = "timeout"
    if finished:
        check = await run_check(job, sandbox, manager.defaults.command_policy)
        outcome.check = asdict(check)
        outcome.status = "passed" if check.passed else "failed"
        outcome.duration_s = time.monotonic() - started
    return outcome


def _copy_counts(sink: TaskSink, outcome: TaskOutcome) -> None:
    outcome.run_id = sink.run_id
    outcome.stop_reason = sink.stop_reason
    outcome.iterations = sink.iterations
    outcome.tool_calls = sink.tool_calls
    outcome.input_tokens = sink.input_tokens
    outcome.output_tokens = sink.output_tokens
    outcome.cache_read_tokens = sink.cache_read_tokens
    outcome.cache_write_tokens = sink.cache_write_tokens
    outcome.cost_usd = sink.cost_usd
    if sink.error and outcome.error is None:
        outcome.error = sink.error
