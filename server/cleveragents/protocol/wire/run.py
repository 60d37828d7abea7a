"""`cleveragents/run` and its notifications, `cancel`, `tools` and `listCommands`."""

from __future__ import annotations

from typing import Any, Literal

import attrs

from .common import AutomationProfile, FinishReason, ProgressToken, StopReason, doc, setting_doc
from .initialize import CommandLimits
from .shapes import (
    ChangedFile,
    Checkpoint,
    InstructionFile,
    PlanStep,
    RunImage,
    RunResource,
    StoredImage,
    ToolCallRecord,
    Usage,
)


@attrs.frozen(kw_only=True)
class RunParams:
    """Start a run. The request stays open until the run ends; notifications stream meanwhile.

    Every field except `prompt` and `sandboxRoot` overrides the `initializationOptions` value.
    """

    prompt: str = attrs.field(
        metadata=doc("The user's request; empty only when `images` are attached (1.3).")
    )
    sandbox_root: str = attrs.field(
        metadata=doc(
            "Absolute path of an existing folder. Tools can reach nothing outside it; the "
            "model never chooses it."
        )
    )
    provider: str | None = attrs.field(default=None, metadata=setting_doc("provider", run=True))
    model: str | None = attrs.field(default=None, metadata=setting_doc("model", run=True))
    max_iterations: int | None = attrs.field(
        default=None, metadata=setting_doc("max_iterations", run=True)
    )
    automation_profile: AutomationProfile | None = attrs.field(
        default=None, metadata=setting_doc("automation_profile", run=True)
    )
    continue_from: str | None = attrs.field(
        default=None,
        metadata=doc("A finished run's id: this run continues its conversation."),
    )
    run_id: str | None = attrs.field(
        default=None,
        metadata=doc(
            "The run's id, chosen by the client (1 to 64 letters, digits, `_`, `-`, `.`, `:`); "
            "must be new. Default: generated."
        ),
    )
    system_prompt: str | None = attrs.field(
        default=None, metadata=setting_doc("system_prompt", run=True)
    )
    tools: list[str] | None = attrs.field(
        default=None,
        metadata=doc("Offer only these tools (names from `cleveragents/tools`). Default: all."),
    )
    base_url: str | None = attrs.field(default=None, metadata=setting_doc("base_url", run=True))
    replay_script: str | None = attrs.field(
        default=None, metadata=setting_doc("replay_script", run=True)
    )
    max_tokens: int | None = attrs.field(default=None, metadata=setting_doc("max_tokens", run=True))
    tool_result_budget: int | None = attrs.field(
        default=None, metadata=setting_doc("tool_result_budget", run=True)
    )
    context_window: int | None = attrs.field(
        default=None, metadata=setting_doc("context_window", run=True)
    )
    prompt_caching: bool | None = attrs.field(
        default=None, metadata=setting_doc("prompt_caching", run=True)
    )
    project_instructions: bool | None = attrs.field(
        default=None, metadata=setting_doc("project_instructions", run=True)
    )
    resources: list[RunResource] | None = attrs.field(
        default=None,
        metadata=doc("Files attached to the prompt (at most 50); the model sees them first."),
    )
    images: list[RunImage] | None = attrs.field(
        default=None,
        metadata=doc("Images attached to the prompt (at most 20; 1.3); the model must see."),
    )
    command_read_paths: list[str] | None = attrs.field(
        default=None,
        metadata=setting_doc("command_read_paths", run=True),
    )
    command_env: list[str] | None = attrs.field(
        default=None,
        metadata=setting_doc("command_env", run=True),
    )
    command_limits: CommandLimits | None = attrs.field(
        default=None, metadata=doc("`run_command`'s limits in this run, over the session's.")
    )
    allow_unconfined_commands: bool | None = attrs.field(
        default=None, metadata=setting_doc("allow_unconfined_commands", run=True)
    )
    work_done_token: ProgressToken | None = attrs.field(
        default=None,
        metadata=doc("LSP work-done token: the daemon then reports the run with `$/progress`."),
    )


@attrs.frozen(kw_only=True)
class RunResult:
    """The result of `cleveragents/run`: the final (or partial) answer and every tool call."""

    run_id: str = attrs.field(metadata=doc("The run's id."))
    content: str = attrs.field(
        metadata=doc("The final answer; for a cancelled or limited run, the text so far.")
    )
    stop_reason: StopReason = attrs.field(metadata=doc("Why the run ended."))
    iterations: int = attrs.field(metadata=doc("LLM calls made."))
    terminated_by_limit: bool = attrs.field(
        metadata=doc("True when `maxIterations` ended the run.")
    )
    usage: Usage = attrs.field(metadata=doc("Tokens used by this run, and their cost."))
    tool_call_history: list[ToolCallRecord] = attrs.field(
        metadata=doc("Every tool call of this run, in the order the model asked for them.")
    )
    continued_from: str | None = attrs.field(metadata=doc("The run this one continued, if any."))
    changed_files: list[ChangedFile] = attrs.field(
        metadata=doc(
            "The files this run changed, from its checkpoints (whoever changed them while it "
            "ran: its tools, its commands). Empty when it changed nothing, or when checkpoints "
            "were off (then `checkpointWarning` says so)."
        )
    )
    checkpoint_warning: str | None = attrs.field(
        metadata=doc(
            "Why this run cannot be wholly undone (git missing, a snapshot failed); null when "
            "every checkpoint was taken."
        )
    )
    checkpoints: list[Checkpoint] = attrs.field(
        metadata=doc(
            "Its checkpoints, oldest first, as `RunDetail.checkpoints` (1.3): a client offers "
            "the run's undo from the result, with no `cleveragents/getRun`."
        )
    )


@attrs.frozen(kw_only=True)
class RunStartedParams:
    """The run began. Always the first notification of a run (`seq` 1)."""

    run_id: str = attrs.field(metadata=doc("The run's id."))
    seq: int = attrs.field(metadata=doc("1, 2, 3... per run, across all its notifications."))
    prompt: str = attrs.field(metadata=doc("The prompt."))
    sandbox_root: str = attrs.field(metadata=doc("The sandbox root, resolved."))
    automation_profile: AutomationProfile = attrs.field(metadata=doc("The profile in force."))
    max_iterations: int = attrs.field(metadata=doc("The LLM-call limit in force."))
    provider: str = attrs.field(metadata=doc("The provider in use."))
    model: str | None = attrs.field(metadata=doc("The model asked for, if one was named."))
    continued_from: str | None = attrs.field(metadata=doc("The run this one continues, if any."))
    instructions: list[InstructionFile] = attrs.field(
        metadata=doc(
            "The project instructions files in the run's system prompt (the user's own, then "
            "the root's AGENTS.md); empty when there are none or they are turned off. A "
            "subfolder's file reaches the model later, with the first tool result there."
        )
    )
    images: list[StoredImage] = attrs.field(
        metadata=doc(
            "The images attached to the prompt, with their bytes, so every client shows them "
            "(1.3); empty when there are none."
        )
    )


@attrs.frozen(kw_only=True)
class PlanParams:
    """The model set its plan (an `update_plan` call): the whole plan, to show as a checklist
    in place of the previous one. Sent right after that call's `toolCall` notification."""

    run_id: str = attrs.field(metadata=doc("The run's id."))
    seq: int = attrs.field(metadata=doc("Per-run sequence number."))
    iteration: int = attrs.field(metadata=doc("The iteration whose call set it."))
    call_id: str = attrs.field(metadata=doc("The `update_plan` call that set it."))
    steps: list[PlanStep] = attrs.field(metadata=doc("Every step, in order."))
    explanation: str | None = attrs.field(metadata=doc("Why the plan changed, if the model said."))


@attrs.frozen(kw_only=True)
class IterationStartedParams:
    """An LLM call is about to be made."""

    run_id: str = attrs.field(metadata=doc("The run's id."))
    seq: int = attrs.field(metadata=doc("Per-run sequence number."))
    iteration: int = attrs.field(metadata=doc("1 for the first LLM call of the run."))


@attrs.frozen(kw_only=True)
class TextDeltaParams:
    """A piece of assistant text, as it streams."""

    run_id: str = attrs.field(metadata=doc("The run's id."))
    seq: int = attrs.field(metadata=doc("Per-run sequence number."))
    iteration: int = attrs.field(metadata=doc("The LLM call this text belongs to."))
    text: str = attrs.field(metadata=doc("The new text; concatenate the deltas of an iteration."))


@attrs.frozen(kw_only=True)
class ToolCallStartedParams:
    """A tool call is starting (before validation and approval)."""

    run_id: str = attrs.field(metadata=doc("The run's id."))
    seq: int = attrs.field(metadata=doc("Per-run sequence number."))
    iteration: int = attrs.field(metadata=doc("The iteration that asked for the call."))
    call_id: str = attrs.field(metadata=doc("Matches the `callId` of the later record."))
    tool_name: str = attrs.field(metadata=doc("The tool the model asked for."))
    inputs: Any = attrs.field(metadata=doc("The arguments as the model sent them (any JSON)."))


@attrs.frozen(kw_only=True)
class SnapshotParams:
    """The workspace checkpoint before an iteration first changed the folder was saved (a
    step of its own: its time is in no tool call's `durationMs`)."""

    run_id: str = attrs.field(metadata=doc("The run's id."))
    seq: int = attrs.field(metadata=doc("Per-run sequence number."))
    iteration: int = attrs.field(metadata=doc("The iteration the checkpoint was taken before."))
    duration_ms: float = attrs.field(metadata=doc("How long saving it took."))
    files: int | None = attrs.field(metadata=doc("Files it holds; null when not known."))
    error: str | None = attrs.field(
        metadata=doc("Why it failed (that iteration's changes are then denied); null on success.")
    )


@attrs.frozen(kw_only=True)
class SnapshotProgressParams:
    """A checkpoint is still being saved: sent about once a second from its first second on."""

    run_id: str = attrs.field(metadata=doc("The run's id."))
    seq: int = attrs.field(metadata=doc("Per-run sequence number."))
    iteration: int = attrs.field(metadata=doc("The iteration the checkpoint is taken before."))
    elapsed_ms: float = attrs.field(metadata=doc("Time spent on it so far."))


@attrs.frozen(kw_only=True)
class ToolCallParams:
    """A tool call finished (or failed, or was denied or cancelled): its record."""

    run_id: str = attrs.field(metadata=doc("The run's id."))
    seq: int = attrs.field(metadata=doc("Per-run sequence number."))
    record: ToolCallRecord = attrs.field(metadata=doc("The call as it happened."))


@attrs.frozen(kw_only=True)
class UsageParams:
    """A model call returned: its tokens and cost, and the run's so far. Sent after each
    model call, before that call's tools start."""

    run_id: str = attrs.field(metadata=doc("The run's id."))
    seq: int = attrs.field(metadata=doc("Per-run sequence number."))
    iteration: int = attrs.field(metadata=doc("The model call (iteration) that returned."))
    usage: Usage = attrs.field(metadata=doc("That call's tokens and cost."))
    total: Usage = attrs.field(metadata=doc("The run's tokens and cost so far."))


@attrs.frozen(kw_only=True)
class RunFinishedParams:
    """The run ended. Always the last notification of a run."""

    run_id: str = attrs.field(metadata=doc("The run's id."))
    seq: int = attrs.field(metadata=doc("Per-run sequence number."))
    stop_reason: FinishReason = attrs.field(
        metadata=doc("Why it ended; `error` when the provider or runtime failed.")
    )
    content: str = attrs.field(metadata=doc("The final (or partial) answer."))
    iterations: int = attrs.field(metadata=doc("LLM calls made."))
    terminated_by_limit: bool = attrs.field(metadata=doc("True when `maxIterations` ended it."))
    usage: Usage = attrs.field(
        metadata=doc("Tokens used and their cost (for a failed run, those of its finished calls).")
    )
    tool_calls: int = attrs.field(metadata=doc("How many tool calls the run recorded."))
    error: str | None = attrs.field(metadata=doc("With `stopReason: error`, what went wrong."))
    error_type: str | None = attrs.field(
        metadata=doc("With `stopReason: error`, the exception's type name.")
    )


@attrs.frozen(kw_only=True)
class CancelParams:
    """Stop a run. The run's own request then returns with `stopReason: cancelled`."""

    run_id: str = attrs.field(metadata=doc("The run to stop."))


@attrs.frozen(kw_only=True)
class CancelResult:
    cancelled: bool = attrs.field(
        metadata=doc("True if the run was running and is now stopping; false if it was not.")
    )


@attrs.frozen(kw_only=True)
class ToolsParams:
    """`params` may be omitted."""

    sandbox_root: str | None = attrs.field(
        default=None,
        metadata=doc(
            "Also list the MCP tools of this folder's `.mcp.json` (starts its servers, which "
            "its runs then reuse)."
        ),
    )


@attrs.frozen(kw_only=True)
class ToolInfo:
    """A tool the daemon offers to the model."""

    name: str = attrs.field(metadata=doc("The tool's name."))
    description: str = attrs.field(metadata=doc("What the model is told about it."))
    input_schema: dict[str, Any] = attrs.field(metadata=doc("JSON Schema of its arguments."))
    mutating: bool = attrs.field(metadata=doc("It changes the workspace (profiles gate it)."))
    executes_code: bool = attrs.field(metadata=doc("It runs programs (auto-edit still asks)."))
    source: str = attrs.field(metadata=doc("Where it comes from: builtin, a module, a plugin."))


@attrs.frozen(kw_only=True)
class ToolsResult:
    tools: list[ToolInfo] = attrs.field(metadata=doc("In the order they are offered."))


@attrs.frozen(kw_only=True)
class ListCommandsParams:
    """The custom commands a run in a folder can be sent as `/name arguments`."""

    sandbox_root: str = attrs.field(
        metadata=doc("The folder whose `.cleveragents/commands/` is read (with the user's).")
    )


@attrs.frozen(kw_only=True)
class PromptCommandInfo:
    """A custom command: a Markdown prompt file; `/name arguments` runs its prompt."""

    name: str = attrs.field(metadata=doc("What follows the `/`."))
    description: str = attrs.field(
        metadata=doc("Its front matter's `description`, or the file's first line.")
    )
    argument_hint: str | None = attrs.field(
        metadata=doc("What to type after the name (`argument-hint`); null: not said.")
    )
    source: Literal["workspace", "user"] = attrs.field(
        metadata=doc("`workspace` (`.cleveragents/commands/`) or `user` (the config folder).")
    )


@attrs.frozen(kw_only=True)
class ListCommandsResult:
    commands: list[PromptCommandInfo] = attrs.field(
        metadata=doc("By name; a workspace's command hides the user's of the same name.")
    )


@attrs.frozen(kw_only=True)
class SettingsParams:
    """`params` may be omitted."""

    run: RunParams | None = attrs.field(
        default=None,
        metadata=doc(
            "Also resolve a run with these params (checked as `cleveragents/run` checks them, "
            "not started): its settings are then the ones that run would use."
        ),
    )


@attrs.frozen(kw_only=True)
class ResolvedSetting:
    """One row of the settings table (docs/settings.md) as resolved."""

    name: str = attrs.field(metadata=doc("The row's name, e.g. `max_iterations`."))
    variable: str | None = attrs.field(metadata=doc("Its environment variable, if it has one."))
    value: str = attrs.field(
        metadata=doc(
            "The value as text (`cleveragents doctor --settings` shows the same); a "
            "secret shows only whether it is set and its length."
        )
    )
    source: str = attrs.field(
        metadata=doc("Where it came from: `default`, `env`, `initializationOptions` or `params`.")
    )


@attrs.frozen(kw_only=True)
class SettingsResult:
    settings: list[ResolvedSetting] = attrs.field(metadata=doc("Every row, in the table's order."))
