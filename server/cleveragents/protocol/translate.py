"""Wire <-> core: the daemon's params as the core's requests, the core's results as wire types."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from ..service.changes import ChangedFile
from ..service.history import IterationUsage, RunSummary, StoredCheckpoint, StoredRun
from ..service.image_inputs import ImageInput
from ..service.resources import ResourceRequest
from ..service.runs import RunOutcome, RunRequest
from ..settings_table import Level, option_attribute, rows_for
from ..tool.images import ImageAttachment
from ..tool.instructions import InstructionFile
from ..tool.messages import AssistantMessage, Message, UserMessage
from ..tool.plan import PlanStep, last_plan
from ..tool.records import ToolCallRecord, Usage
from ..tool.registry import ToolSpec
from ..tool.resources import Resource
from ..workspace.names import shown_path
from . import wire
from .command_options import command_settings

if TYPE_CHECKING:  # Only named here: the checkpoint and trust code load when first used.
    from ..service.trust import TrustedServer
    from ..service.undo import RestoreOutcome


def run_request(params: wire.RunParams) -> RunRequest:
    """The params as the core's request: each settings-table row a run may set by its option
    name (the wire's attribute is its snake_case; the request's field is the row's name), then
    the run's own fields and its command layer."""
    settings = {
        row.name: getattr(params, option_attribute(row.option))
        for row in rows_for(Level.RUN)
        if row.option is not None and row.resolved.startswith("defaults.")
    }
    return RunRequest(
        **settings,
        prompt=params.prompt,
        sandbox_root=params.sandbox_root,
        continue_from=params.continue_from,
        run_id=params.run_id,
        tools=tuple(params.tools) if params.tools is not None else None,
        resources=tuple(
            ResourceRequest(r.path, r.text, r.start_line, r.end_line)
            for r in params.resources or ()
        ),
        command=command_settings(params),
        progress_token=params.work_done_token,
        images=tuple(
            ImageInput(i.name or f"images[{n}]", data_base64=i.data, media_type=i.media_type)
            for n, i in enumerate(params.images or ())
        ),
    )


def wire_record(record: ToolCallRecord) -> wire.ToolCallRecord:
    return wire.ToolCallRecord(
        call_id=record.call_id,
        tool_name=record.tool_name,
        inputs=record.inputs,
        output=record.output,
        duration_ms=record.duration_ms,
        success=record.success,
        error=record.error,
        error_kind=record.error_kind,
        iteration=record.iteration,
    )


def wire_usage(usage: Usage, cost_usd: float | None) -> wire.Usage:
    return wire.Usage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
        # Sums of floats carry noise (0.019950000000000002); a ten-billionth of a dollar is
        # far below any price's precision.
        cost_usd=None if cost_usd is None else round(cost_usd, 10),
    )


def iteration_usage(entry: IterationUsage) -> wire.IterationUsage:
    return wire.IterationUsage(
        iteration=entry.iteration, usage=wire_usage(entry.usage, entry.cost_usd)
    )


def wire_resource(resource: Resource) -> wire.RunResource:
    return wire.RunResource(
        path=resource.path,
        text=resource.text,
        start_line=resource.start_line,
        end_line=resource.end_line,
    )


def wire_image(image: ImageAttachment) -> wire.StoredImage:
    return wire.StoredImage(
        name=image.name,
        media_type=image.media_type,
        width=image.width,
        height=image.height,
        size_bytes=image.size,
        data=image.base64() if image.data is not None else None,
    )


def run_result(outcome: RunOutcome, continued_from: str | None) -> wire.RunResult:
    result = outcome.result
    return wire.RunResult(
        run_id=result.run_id,
        content=result.content,
        stop_reason=result.stop_reason,
        iterations=result.iterations,
        terminated_by_limit=result.terminated_by_limit,
        usage=wire_usage(result.usage, result.cost_usd),
        tool_call_history=[wire_record(r) for r in result.tool_call_history],
        continued_from=continued_from,
        changed_files=wire_changes(outcome.changed_files),
        checkpoint_warning=outcome.checkpoint_warning,
        checkpoints=wire_checkpoints(outcome.checkpoints),
    )


def wire_changes(changed_files: list[ChangedFile] | None) -> list[wire.ChangedFile]:
    return [
        wire.ChangedFile(path=shown_path(c.path), change=c.change, ignored=c.ignored)
        for c in changed_files or []
    ]


def wire_checkpoints(checkpoints: list[StoredCheckpoint]) -> list[wire.Checkpoint]:
    """The checkpoints a client may restore to: a run's iterations, a restore's own one."""
    return [
        wire.Checkpoint(iteration=c.iteration, created_at=c.created_at, note=c.note)
        for c in checkpoints
        if c.kind != "end"
    ]


def restore_result(outcome: RestoreOutcome) -> wire.RestoreResult:
    return wire.RestoreResult(
        restore_id=outcome.restore_id,
        sandbox_root=outcome.sandbox_root,
        changed_files=wire_changes(outcome.changed_files),
        kept=[k.path for k in outcome.kept],
        dry_run=outcome.dry_run,
    )


def tool_info(spec: ToolSpec) -> wire.ToolInfo:
    return wire.ToolInfo(
        name=spec.name,
        description=spec.description,
        input_schema=spec.input_schema,
        mutating=spec.mutating,
        executes_code=spec.executes_code,
        source=spec.source,
    )


def _summary_fields(summary: RunSummary) -> dict[str, Any]:
    return {
        "run_id": summary.run_id,
        "prompt": summary.prompt,
        "status": summary.status,
        "started_at": summary.started_at,
        "finished_at": summary.finished_at,
        "iterations": summary.iterations,
        "tool_call_count": summary.tool_call_count,
        "sandbox_root": summary.sandbox_root,
        "automation_profile": summary.automation_profile,
        "continued_from": summary.continued_from,
        "usage": wire_usage(summary.usage, summary.cost_usd),
        "kind": summary.kind,
        "restored_run_id": summary.restored_run_id,
        "restored_iteration": summary.restored_iteration,
        "batch": (
            wire.RunBatch(
                batch_id=summary.batch.batch_id,
                task_id=summary.batch.task_id,
                config=summary.batch.config,
            )
            if summary.batch is not None
            else None
        ),
    }


def run_summary(summary: RunSummary) -> wire.RunSummary:
    return wire.RunSummary(**_summary_fields(summary))


def run_detail(stored: StoredRun) -> wire.RunDetail:
    return wire.RunDetail(
        **_summary_fields(stored),
        max_iterations=stored.max_iterations,
        content=stored.content,
        stop_reason=stored.stop_reason,
        error=stored.error,
        error_type=stored.error_type,
        iteration_usage=[iteration_usage(u) for u in stored.iteration_usage],
        resources=[wire_resource(r) for r in stored.resources],
        images=[wire_image(i) for i in stored.images],
        tool_call_history=[wire_record(r) for r in stored.records],
        messages=[wire_message(m) for m in stored.messages],
        checkpoints=wire_checkpoints(stored.checkpoints),
        changed_files=wire_changes(stored.changed_files),
        checkpoint_warning=stored.checkpoint_warning,
        plan=wire_plan(last_plan(stored.records)),
    )


def wire_plan(steps: Sequence[PlanStep] | None) -> list[wire.PlanStep] | None:
    if steps is None:
        return None
    return [wire.PlanStep(text=step.text, status=step.status) for step in steps]


def wire_instructions(files: Sequence[InstructionFile]) -> list[wire.InstructionFile]:
    return [
        wire.InstructionFile(
            path=file.path,
            scope=file.scope,
            folder=file.folder,
            chars=file.chars,
            total_chars=file.total_chars,
            truncated=file.truncated,
        )
        for file in files
    ]


def wire_message(message: Message) -> wire.ConversationMessage:
    if isinstance(message, UserMessage):
        return wire.ConversationMessage(
            role="user", text=message.text, tool_calls=None, results=None
        )
    if isinstance(message, AssistantMessage):
        return wire.ConversationMessage(
            role="assistant",
            text=message.text,
            tool_calls=[
                wire.RequestedToolCall(
                    call_id=c.call_id,
                    tool_name=c.tool_name,
                    arguments=c.arguments,
                    parse_error=c.parse_error,
                )
                for c in message.tool_calls
            ],
            results=None,
        )
    return wire.ConversationMessage(
        role="tool",
        text=None,
        tool_calls=None,
        results=[
            wire.ToolResultContent(
                call_id=r.call_id, tool_name=r.tool_name, content=r.content, is_error=r.is_error
            )
            for r in message.results
        ],
    )


def profile(value: str) -> wire.AutomationProfile:
    # The runtime checked the name against AUTOMATION_PROFILES before the run began.
    return cast(wire.AutomationProfile, value)


def wire_trusted_server(server: TrustedServer) -> wire.TrustedServer:
    """A server of a workspace-trust question, as `cleveragents/trustWorkspace` sends it."""
    return wire.TrustedServer(
        name=server.name,
        command=server.command,
        args=list(server.args),
        env_names=list(server.env_names),
        program=server.program or None,
        program_in_workspace=server.program_in_workspace,
        env=[
            wire.TrustedVariable(
                name=variable.name,
                value=variable.value,
                length=variable.length,
                masked=variable.masked,
                changes_what_runs=variable.changes_what_runs,
                expanded=variable.expanded,
            )
            for variable in server.env
        ],
    )
