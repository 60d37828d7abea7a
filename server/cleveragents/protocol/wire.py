"""The daemon's wire types: every custom method's params and result, as attrs classes.

Python names are snake_case; on the wire every field is camelCase (`converter.py` renames).
`protocol/schema.json` is generated from these classes and `METHODS`, so a field added here
is a field documented there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import attrs

from .. import jsonrpc_errors as errors

# The runtime's own literals: the wire says exactly what the runtime and history produce.
from ..service.changes import ChangeKind
from ..service.history import RunKind, RunStatus
from ..settings_table import (
    ENV_ALLOW_UNCONFINED,
    ENV_CONTEXT_WINDOW,
    ENV_MAX_ITERATIONS,
    ENV_MODEL,
    ENV_OPENAI_VISION,
    ENV_PASS_VARIABLES,
    ENV_PREFIX,
    ENV_PRICES,
    ENV_PROFILE,
    ENV_PROJECT_INSTRUCTIONS,
    ENV_PROMPT_CACHING,
    ENV_PROVIDER,
    ENV_READ_PATHS,
    ENV_TOOL_RESULT_BUDGET,
    ENV_TRUST_WORKSPACE,
)
from ..tool.policy import ApprovalDecision
from ..tool.records import ErrorKind, StopReason

PROTOCOL_VERSION = "1.3"
"""Major.minor: a new major breaks existing clients; a new minor only adds optional things."""

AutomationProfile = Literal["read-only", "ask", "auto-edit", "full-auto"]
FinishReason = Literal["final_answer", "max_iterations", "cancelled", "context_exhausted", "error"]
ProgressToken = int | str


def doc(text: str) -> dict[str, str]:
    """Field metadata carrying the description the schema and README show."""
    return {"doc": text}


# -- shared shapes ----------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Usage:
    """Tokens the provider reported (zero for providers that report none) and their estimated
    cost: of one model call, or summed over a run."""

    input_tokens: int = attrs.field(
        metadata=doc(
            "All the input the model read: uncached input plus cache writes plus cache reads."
        )
    )
    output_tokens: int = attrs.field(metadata=doc("Tokens the model wrote."))
    cache_read_tokens: int = attrs.field(
        metadata=doc("Of `inputTokens`, read from the provider's prompt cache (billed less).")
    )
    cache_write_tokens: int = attrs.field(
        metadata=doc("Of `inputTokens`, written to the prompt cache (Anthropic bills them more).")
    )
    cost_usd: float | None = attrs.field(
        metadata=doc(
            "Estimated cost in US dollars at the model's price (the built-in table or the "
            "`prices` setting); null when the model's price is unknown: never a guess."
        )
    )


@attrs.frozen(kw_only=True)
class IterationUsage:
    """One model call's tokens and cost."""

    iteration: int = attrs.field(metadata=doc("The iteration (LLM call), from 1."))
    usage: Usage = attrs.field(metadata=doc("That call's tokens and cost."))


@attrs.frozen(kw_only=True)
class RunImage:
    """An image attached to a prompt (PNG, JPEG, GIF or WebP; docs/images.md).

    The daemon reads its type and size from the bytes; it refuses (-32602, naming the image
    and the limit) one over 3.75 MiB or 8000 px a side, more than 20 images or 20 MiB in all,
    and every image when the run's model cannot see (the offline model; an OpenAI-compatible
    one without the vision variable), before any request.
    """

    data: str = attrs.field(metadata=doc("The image's bytes, base64-encoded."))
    media_type: str | None = attrs.field(
        default=None,
        metadata=doc("What the client believes it is (`image/png`...); the bytes decide."),
    )
    name: str | None = attrs.field(
        default=None,
        metadata=doc("What the user knows it by (a file name); null: `images[N]`."),
    )


# The variable is named in settings_table.py alone; the schema's text names it from there.
RunImage.__doc__ = (RunImage.__doc__ or "").replace(
    "the vision variable", f"`{ENV_OPENAI_VISION}=1`"
)


@attrs.frozen(kw_only=True)
class StoredImage:
    """An image of a stored run's prompt: the history keeps it by reference, its bytes in a
    size-capped image store next to the history (the least recently used go first)."""

    name: str = attrs.field(metadata=doc("What the user knew it by."))
    media_type: str = attrs.field(
        metadata=doc("`image/png`, `image/jpeg`, `image/gif` or `image/webp`.")
    )
    width: int = attrs.field(metadata=doc("Pixels."))
    height: int = attrs.field(metadata=doc("Pixels."))
    size_bytes: int = attrs.field(metadata=doc("The image's size."))
    data: str | None = attrs.field(
        metadata=doc("The bytes, base64-encoded; null once evicted from the image store.")
    )


@attrs.frozen(kw_only=True)
class RunResource:
    """A file attached to a prompt: the whole file, a range of its lines, or the editor's text.

    The daemon reads the file (through the sandbox wall) when `text` is null. The model sees
    every resource in the run's first message, before the prompt, as a fenced block under its
    path and lines; over 50,000 characters (150,000 for all of a run's) it is cut, with a
    marker naming what was left out.
    """

    path: str = attrs.field(
        metadata=doc(
            "The file, relative to the sandbox root or absolute inside it; a path outside "
            "the sandbox is refused (-32602)."
        )
    )
    text: str | None = attrs.field(
        default=None,
        metadata=doc(
            "The text to show (a selection, an unsaved buffer); null: the daemon reads the file."
        ),
    )
    start_line: int | None = attrs.field(
        default=None,
        metadata=doc(
            "First line (from 1). With `text`, where the text begins; without it, the "
            "first line to read."
        ),
    )
    end_line: int | None = attrs.field(
        default=None,
        metadata=doc("Last line, inclusive. Without `text`: null reads to the end of the file."),
    )


@attrs.frozen(kw_only=True)
class ModelPrice:
    """A model's price in US dollars per million tokens."""

    input: float = attrs.field(metadata=doc("Uncached input."))
    output: float = attrs.field(metadata=doc("Output."))
    cache_write: float | None = attrs.field(
        default=None, metadata=doc("Input written to the prompt cache. Default: `input`.")
    )
    cache_read: float | None = attrs.field(
        default=None, metadata=doc("Input read from the prompt cache. Default: `input`.")
    )


@attrs.frozen(kw_only=True)
class CommandLimits:
    """Ceilings on each `run_command`: a positive integer, or a string such as `"8G"`
    (sizes take K, M, G, T, powers of 1024) or `"unlimited"`. Unset ones keep theirs."""

    processes: int | str | None = attrs.field(
        default=None, metadata=doc("Processes and threads. Default 4096.")
    )
    file_size_bytes: int | str | None = attrs.field(
        default=None, metadata=doc("Largest file a command may write. Default 4 GiB.")
    )
    address_space_bytes: int | str | None = attrs.field(
        default=None, metadata=doc("Address space per process. Default 32 GiB.")
    )
    cpu_seconds: int | str | None = attrs.field(
        default=None, metadata=doc("CPU time per process. Default 600 s per core.")
    )
    memory_bytes: int | str | None = attrs.field(
        default=None,
        metadata=doc("Memory of all the command's processes (a cgroup). Default 3/4 of RAM."),
    )
    tmp_size_bytes: int | str | None = attrs.field(
        default=None, metadata=doc("Size of the private /tmp and home. Default 2 GiB.")
    )
    min_free_disk_bytes: int | str | None = attrs.field(
        default=None,
        metadata=doc("A command stops when the sandbox's disk has less free. Default 2 GiB."),
    )


@attrs.frozen(kw_only=True)
class ToolCallRecord:
    """One tool call as it happened. Failed calls have `success: false` and an `errorKind`."""

    call_id: str = attrs.field(metadata=doc("The call's id, as the model (or runtime) gave it."))
    tool_name: str = attrs.field(metadata=doc("The tool the model asked for."))
    inputs: dict[str, Any] = attrs.field(
        metadata=doc(
            "Arguments the tool ran with (the model's, plus the sandbox root where the tool "
            "takes it). A non-object the model sent is kept under `_raw`."
        )
    )
    output: dict[str, Any] = attrs.field(
        metadata=doc("What the tool returned, as an object; `{}` when it failed.")
    )
    duration_ms: float = attrs.field(metadata=doc("Wall time of the call, in milliseconds."))
    success: bool = attrs.field(metadata=doc("Whether the tool ran and returned normally."))
    error: str | None = attrs.field(metadata=doc("Why it failed, in words; null on success."))
    error_kind: ErrorKind | None = attrs.field(
        metadata=doc("Why it failed, machine-readable; null on success.")
    )
    iteration: int = attrs.field(metadata=doc("The loop iteration (LLM call) that asked for it."))


@attrs.frozen(kw_only=True)
class ChangedFile:
    """A file a run (or a restore) added, modified or deleted in its folder."""

    path: str = attrs.field(
        metadata=doc(
            "Relative to the sandbox root, `/`-separated; ends in `/` for an empty folder."
        )
    )
    change: ChangeKind = attrs.field(metadata=doc("added, modified or deleted."))
    ignored: bool = attrs.field(
        default=False,
        metadata=doc(
            "A file git does not see (ignored, or in a folder such as node_modules), kept by "
            "the checkpoints all the same."
        ),
    )


@attrs.frozen(kw_only=True)
class InstructionFile:
    """A project instructions file (AGENTS.md, or CLAUDE.md where there is none) a run sends
    the model (docs/agents.md)."""

    path: str = attrs.field(
        metadata=doc(
            "Relative to the sandbox root (`/`-separated); the user's own file by its "
            "absolute path."
        )
    )
    scope: Literal["user", "project", "folder"] = attrs.field(
        metadata=doc(
            "user: the user's own, for every project; project: the sandbox root's; folder: a "
            "subfolder's, for the files beneath it."
        )
    )
    folder: str = attrs.field(
        metadata=doc("The folder it governs, relative to the root (`.` for it); empty for user.")
    )
    chars: int = attrs.field(metadata=doc("The characters of it the model is sent."))
    total_chars: int = attrs.field(metadata=doc("Its length; more than `chars` when it was cut."))
    truncated: bool = attrs.field(metadata=doc("Whether it was cut to the size limit."))


PlanStatus = Literal["pending", "in_progress", "done"]


@attrs.frozen(kw_only=True)
class PlanStep:
    """One step of the model's plan."""

    text: str = attrs.field(metadata=doc("What the step does."))
    status: PlanStatus = attrs.field(metadata=doc("pending, in_progress (at most one) or done."))


@attrs.frozen(kw_only=True)
class Checkpoint:
    """A snapshot of a run's folder, taken just before an iteration first changed it."""

    iteration: int | None = attrs.field(
        metadata=doc(
            "The iteration it was taken before: `cleveragents/restore` with this `iteration` "
            "brings the folder back to it. null on a restore's own checkpoint (the folder "
            "just before the restore; restoring without an iteration undoes the restore)."
        )
    )
    created_at: float = attrs.field(metadata=doc("When it was taken (Unix epoch seconds)."))
    note: str | None = attrs.field(
        metadata=doc("Files it does not hold (too large, unreadable), which a restore leaves.")
    )


# -- initialize -------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class InitializationOptions:
    """`initializationOptions` of `initialize`: the daemon's defaults for every run.

    API keys are never accepted here; they come only from the daemon's environment.
    """

    provider: str | None = attrs.field(
        default=None,
        metadata=doc(
            "LLM provider: offline, replay, anthropic or openai. Default: "
            f"${ENV_PROVIDER}, else offline."
        ),
    )
    model: str | None = attrs.field(
        default=None, metadata=doc(f"Model name. Default: ${ENV_MODEL}, else the provider's.")
    )
    automation_profile: AutomationProfile | None = attrs.field(
        default=None,
        metadata=doc(f"Default automation profile. Default: ${ENV_PROFILE}, else ask."),
    )
    max_iterations: int | None = attrs.field(
        default=None,
        metadata=doc(f"Default LLM-call limit per run. Default: ${ENV_MAX_ITERATIONS}, else 25."),
    )
    system_prompt: str | None = attrs.field(
        default=None, metadata=doc("Replaces the built-in system prompt.")
    )
    base_url: str | None = attrs.field(
        default=None, metadata=doc("Provider base URL (OpenAI-compatible servers, proxies).")
    )
    replay_script: str | None = attrs.field(
        default=None, metadata=doc("Path of the replay provider's JSON script.")
    )
    max_tokens: int | None = attrs.field(
        default=None, metadata=doc("Completion token limit per LLM call (anthropic).")
    )
    tool_modules: list[str] | None = attrs.field(
        default=None,
        metadata=doc("Python modules whose @tool functions are added to the built-in tools."),
    )
    builtin_tools: bool | None = attrs.field(
        default=None, metadata=doc("Offer the built-in workspace tools. Default: true.")
    )
    plugin_tools: bool | None = attrs.field(
        default=None,
        metadata=doc("Offer tools of installed `cleveragents.tools` entry points. Default: true."),
    )
    approvals: bool | None = attrs.field(
        default=None,
        metadata=doc(
            "The client answers `cleveragents/approveToolCall`. Without it (here or in "
            "`capabilities.experimental.cleveragents.approvals`), calls that need approval "
            "are denied."
        ),
    )
    approval_timeout_seconds: float | None = attrs.field(
        default=None,
        metadata=doc(
            "A call whose approval (or a workspace-trust question) takes longer is denied. "
            "Default: 600."
        ),
    )
    trust_workspace: bool | None = attrs.field(
        default=None,
        metadata=doc(
            "Start every workspace's `.mcp.json` servers without asking (for automation). "
            f"Default: ${ENV_TRUST_WORKSPACE}, else false."
        ),
    )
    tool_result_budget: int | None = attrs.field(
        default=None,
        metadata=doc(
            "Characters of one tool result the model is shown (1,000 to 10,000,000); the "
            f"record keeps it whole. Default: ${ENV_TOOL_RESULT_BUDGET}, else 32,000."
        ),
    )
    context_window: int | None = attrs.field(
        default=None,
        metadata=doc(
            "The model's context window in tokens, for models the built-in table does not "
            f"know (a local model). Default: ${ENV_CONTEXT_WINDOW}, else the table's, "
            "else 128,000."
        ),
    )
    prompt_caching: bool | None = attrs.field(
        default=None,
        metadata=doc(
            "Mark prompt-cache breakpoints (Anthropic). Default: "
            f"${ENV_PROMPT_CACHING} (0 or 1), else true."
        ),
    )
    project_instructions: bool | None = attrs.field(
        default=None,
        metadata=doc(
            "Send the workspace's AGENTS.md files (CLAUDE.md where there is none) and the "
            "user's own to the model (docs/agents.md). Default: "
            f"${ENV_PROJECT_INSTRUCTIONS} (0 or 1), else true."
        ),
    )
    prices: dict[str, ModelPrice] | None = attrs.field(
        default=None,
        metadata=doc(
            f"Prices by model name, over ${ENV_PRICES} (the same JSON) and the "
            'built-in table, e.g. `{"my-model": {"input": 0.5, "output": 1.5}}`.'
        ),
    )
    command_read_paths: list[str] | None = attrs.field(
        default=None,
        metadata=doc(
            "Folders `run_command` may also read (absolute, or starting with `~`), added to "
            f"${ENV_READ_PATHS}. Credential folders stay hidden."
        ),
    )
    command_env: list[str] | None = attrs.field(
        default=None,
        metadata=doc(
            "Variables (names or patterns such as `NODE_*`) `run_command` also gets, added to "
            f"${ENV_PASS_VARIABLES}."
        ),
    )
    command_limits: CommandLimits | None = attrs.field(
        default=None,
        metadata=doc(f"`run_command`'s limits, over ${ENV_PREFIX}COMMAND_MAX_* ones."),
    )
    allow_unconfined_commands: bool | None = attrs.field(
        default=None,
        metadata=doc(
            "Where bubblewrap is missing, run commands unconfined under `full-auto` without "
            f"asking. Default: ${ENV_ALLOW_UNCONFINED}, else false."
        ),
    )
    token: str | None = attrs.field(
        default=None,
        metadata=doc(
            "The access token of a daemon started with `--tcp` (required there: read it "
            "from the file the daemon names on stderr). Ignored over stdio and `--socket`."
        ),
    )


@attrs.frozen(kw_only=True)
class ClientToolDeclaration:
    """A tool the client serves (`capabilities.experimental.cleveragents.tools`): offered to
    the model beside the daemon's own; each call is a `cleveragents/callClientTool` request."""

    name: str = attrs.field(
        metadata=doc(
            "1 to 64 letters, digits, `_` or `-`; not the name of one of the daemon's tools "
            "(`initialize` fails naming it)."
        )
    )
    description: str = attrs.field(metadata=doc("What it does, for the model. Not empty."))
    input_schema: dict[str, Any] = attrs.field(
        metadata=doc("JSON Schema of its arguments: an object schema (`type: object`).")
    )
    read_only: bool | None = attrs.field(
        default=None,
        metadata=doc(
            "It changes nothing: runs without approval under `ask` and `auto-edit`, and under "
            "`read-only`. Default false: asked about as a tool that may change things."
        ),
    )
    timeout_seconds: float | None = attrs.field(
        default=None,
        metadata=doc(
            "How long a call may wait for the answer (more than 0, at most 600; default 30). "
            "Then the request is withdrawn (`$/cancelRequest`) and the call fails as a timeout."
        ),
    )


@attrs.frozen(kw_only=True)
class ClientCapability:
    """`capabilities.experimental.cleveragents` of `initialize` (all optional)."""

    approvals: bool | None = attrs.field(
        default=None, metadata=doc("The client answers `cleveragents/approveToolCall`.")
    )
    trust: bool | None = attrs.field(
        default=None,
        metadata=doc(
            "The client answers `cleveragents/trustWorkspace`. Without it, a workspace's "
            "`.mcp.json` servers start only once trusted some other way."
        ),
    )
    tools: list[ClientToolDeclaration] | None = attrs.field(
        default=None,
        metadata=doc(
            "Tools the client serves (protocol 1.3): offered to every run of the session, "
            "whatever `tools` subset the run names; the client answers "
            "`cleveragents/callClientTool`."
        ),
    )


@attrs.frozen(kw_only=True)
class ServerCapability:
    """`capabilities.experimental.cleveragents` of the `initialize` result."""

    protocol_version: str = attrs.field(
        metadata=doc(f"This protocol's version ({PROTOCOL_VERSION}).")
    )
    server_version: str = attrs.field(metadata=doc("The cleveragents package version."))
    providers: list[str] = attrs.field(metadata=doc("Provider names this daemon knows."))
    automation_profiles: list[str] = attrs.field(metadata=doc("Valid `automationProfile` values."))
    approvals: bool = attrs.field(
        metadata=doc("Whether this daemon will ask this client to approve tool calls.")
    )
    trust: bool = attrs.field(
        metadata=doc("Whether this daemon will ask this client to trust workspaces.")
    )
    client_tools: list[str] = attrs.field(
        metadata=doc("The names of the client's tools this daemon offers to runs (1.3).")
    )


# -- cleveragents/run -------------------------------------------------------------------------


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
    provider: str | None = attrs.field(default=None, metadata=doc("Overrides the provider."))
    model: str | None = attrs.field(default=None, metadata=doc("Overrides the model."))
    max_iterations: int | None = attrs.field(
        default=None, metadata=doc("At most this many LLM calls (1 or more).")
    )
    automation_profile: AutomationProfile | None = attrs.field(
        default=None, metadata=doc("Which tool calls run outright, ask, or never run.")
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
        default=None, metadata=doc("Replaces the system prompt for this run.")
    )
    tools: list[str] | None = attrs.field(
        default=None,
        metadata=doc("Offer only these tools (names from `cleveragents/tools`). Default: all."),
    )
    base_url: str | None = attrs.field(default=None, metadata=doc("Overrides the base URL."))
    replay_script: str | None = attrs.field(
        default=None, metadata=doc("Overrides the replay script path.")
    )
    max_tokens: int | None = attrs.field(
        default=None, metadata=doc("Overrides the completion token limit.")
    )
    tool_result_budget: int | None = attrs.field(
        default=None, metadata=doc("Overrides the characters of a tool result the model sees.")
    )
    context_window: int | None = attrs.field(
        default=None, metadata=doc("Overrides the model's context window (tokens).")
    )
    prompt_caching: bool | None = attrs.field(
        default=None, metadata=doc("Overrides whether prompt-cache breakpoints are marked.")
    )
    project_instructions: bool | None = attrs.field(
        default=None, metadata=doc("Overrides whether AGENTS.md files are sent to the model.")
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
        metadata=doc("More folders `run_command` may read in this run (added to the session's)."),
    )
    command_env: list[str] | None = attrs.field(
        default=None,
        metadata=doc("More variables `run_command` gets in this run (added to the session's)."),
    )
    command_limits: CommandLimits | None = attrs.field(
        default=None, metadata=doc("`run_command`'s limits in this run, over the session's.")
    )
    allow_unconfined_commands: bool | None = attrs.field(
        default=None, metadata=doc("Overrides `allowUnconfinedCommands` for this run.")
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


# -- notifications (server to client), each with runId and a per-run seq ----------------------


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


# -- other requests ---------------------------------------------------------------------------


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
class RunsParams:
    """List past and running runs from the history, newest first."""

    limit: int = attrs.field(default=50, metadata=doc("At most this many runs (1 to 1000)."))
    offset: int = attrs.field(default=0, metadata=doc("Skip this many of the newest runs."))
    batch_id: str | None = attrs.field(
        default=None,
        metadata=doc("Only the runs of this batch (`cleveragents batch`; the suite's name)."),
    )


@attrs.frozen(kw_only=True)
class RunBatch:
    """The batch task a run was started for (`cleveragents batch`)."""

    batch_id: str = attrs.field(metadata=doc("The batch: the suite's name."))
    task_id: str = attrs.field(metadata=doc("The task's id in the suite."))
    config: str = attrs.field(metadata=doc("The matrix configuration it ran under."))


@attrs.frozen(kw_only=True)
class RunSummary:
    """One run as the history lists it. Times are Unix epoch seconds."""

    run_id: str = attrs.field(metadata=doc("The run's id."))
    prompt: str = attrs.field(metadata=doc("Its prompt."))
    status: RunStatus = attrs.field(
        metadata=doc(
            "running, finished, cancelled, limit (maxIterations reached), failed, or "
            "interrupted (the daemon running it died)."
        )
    )
    started_at: float = attrs.field(metadata=doc("When it started (Unix epoch seconds)."))
    finished_at: float | None = attrs.field(metadata=doc("When it ended; null while running."))
    iterations: int = attrs.field(metadata=doc("LLM calls made (so far)."))
    tool_call_count: int = attrs.field(metadata=doc("Tool calls recorded (so far)."))
    sandbox_root: str | None = attrs.field(metadata=doc("Its sandbox root."))
    automation_profile: str = attrs.field(
        metadata=doc("Its automation profile (empty for a restore).")
    )
    continued_from: str | None = attrs.field(metadata=doc("The run it continued, if any."))
    usage: Usage = attrs.field(
        metadata=doc(
            "Tokens used (so far) and their cost; `costUsd` is null for an unknown price "
            "and for runs stored before costs were."
        )
    )
    kind: RunKind = attrs.field(
        metadata=doc(
            "`run`, or `restore`: a `cleveragents/restore` of a folder, whose `prompt` says "
            "what it restored; restoring it undoes it."
        )
    )
    restored_run_id: str | None = attrs.field(
        metadata=doc("For a restore: the run (or restore) it went back on.")
    )
    restored_iteration: int | None = attrs.field(
        metadata=doc("For a restore: the iteration it went back to before; null for a whole run.")
    )
    batch: RunBatch | None = attrs.field(
        metadata=doc("For a batch run: its batch, task and configuration; else null.")
    )


@attrs.frozen(kw_only=True)
class RunsResult:
    runs: list[RunSummary] = attrs.field(metadata=doc("Newest first."))


@attrs.frozen(kw_only=True)
class GetRunParams:
    run_id: str = attrs.field(metadata=doc("The run to read back."))


@attrs.frozen(kw_only=True)
class RequestedToolCall:
    """A tool call as the model asked for it, inside an assistant message."""

    call_id: str = attrs.field(metadata=doc("The call's id."))
    tool_name: str = attrs.field(metadata=doc("The tool asked for."))
    arguments: Any = attrs.field(metadata=doc("The arguments as sent (any JSON)."))
    parse_error: str | None = attrs.field(
        metadata=doc("Set when the model's argument text was not valid JSON.")
    )


@attrs.frozen(kw_only=True)
class ToolResultContent:
    """A tool's result as fed back to the model, inside a tool message."""

    call_id: str = attrs.field(metadata=doc("The call it answers."))
    tool_name: str = attrs.field(metadata=doc("The tool."))
    content: dict[str, Any] = attrs.field(metadata=doc("The output, or the error."))
    is_error: bool = attrs.field(metadata=doc("Whether the call failed."))


@attrs.frozen(kw_only=True)
class ConversationMessage:
    """One message of a run's conversation, provider-neutral."""

    role: Literal["user", "assistant", "tool"] = attrs.field(metadata=doc("Who speaks."))
    text: str | None = attrs.field(metadata=doc("user and assistant: the text; tool: null."))
    tool_calls: list[RequestedToolCall] | None = attrs.field(
        metadata=doc("assistant: the calls it asked for; otherwise null.")
    )
    results: list[ToolResultContent] | None = attrs.field(
        metadata=doc("tool: the results sent back; otherwise null.")
    )


@attrs.frozen(kw_only=True)
class RunDetail(RunSummary):
    """A run read back from the history: its summary fields plus answer, records, messages."""

    max_iterations: int = attrs.field(metadata=doc("Its LLM-call limit."))
    content: str | None = attrs.field(metadata=doc("Its final answer, once finished."))
    stop_reason: str | None = attrs.field(metadata=doc("As in `RunResult`, once finished."))
    error: str | None = attrs.field(metadata=doc("For a failed or interrupted run, why."))
    error_type: str | None = attrs.field(metadata=doc("For a failed run, the exception type."))
    iteration_usage: list[IterationUsage] = attrs.field(
        metadata=doc("Each model call's tokens and cost, in order.")
    )
    resources: list[RunResource] = attrs.field(
        metadata=doc("The files attached to its prompt, with the text the model was shown.")
    )
    images: list[StoredImage] = attrs.field(
        metadata=doc("The images attached to its prompt (1.3).")
    )
    tool_call_history: list[ToolCallRecord] = attrs.field(
        metadata=doc("Every record stored, in the order the model asked for them.")
    )
    messages: list[ConversationMessage] = attrs.field(
        metadata=doc("This run's own conversation, from its prompt on.")
    )
    checkpoints: list[Checkpoint] = attrs.field(
        metadata=doc(
            "Its checkpoints, oldest first: one per iteration that changed the folder (for a "
            "restore, the one that undoes it). Empty once pruned."
        )
    )
    changed_files: list[ChangedFile] = attrs.field(
        metadata=doc(
            "The files it changed; empty while it runs, when it changed nothing, or when it "
            "took no checkpoints."
        )
    )
    checkpoint_warning: str | None = attrs.field(
        metadata=doc("Why it cannot be wholly undone, if it cannot.")
    )
    plan: list[PlanStep] | None = attrs.field(
        metadata=doc(
            "The plan as its last `update_plan` call left it (the call's record holds it); "
            "null when it set none."
        )
    )


@attrs.frozen(kw_only=True)
class RestoreParams:
    """Put a run's folder back as it was before one of its iterations, or before the run.

    Refused (-32002) while any run is active in that folder (or a folder inside it or around
    it). The folder as it was is snapshotted first, so the restore is itself undoable.
    """

    run_id: str = attrs.field(
        metadata=doc("The run, or a restore (restoring a restore undoes it).")
    )
    iteration: int | None = attrs.field(
        default=None,
        metadata=doc(
            "Go back to the state before this iteration of the run (its later changes are "
            "undone, earlier ones kept). null: undo the whole run."
        ),
    )
    dry_run: bool = attrs.field(
        default=False,
        metadata=doc("Only report what would change; nothing is written or recorded."),
    )


@attrs.frozen(kw_only=True)
class RestoreResult:
    restore_id: str | None = attrs.field(
        metadata=doc(
            "The restore's entry in the history (`kind: restore`); pass it as `runId` to undo "
            "the restore. null for a dry run, or when nothing needed restoring."
        )
    )
    sandbox_root: str = attrs.field(metadata=doc("The folder restored."))
    changed_files: list[ChangedFile] = attrs.field(
        metadata=doc("The files the restore changed (or would change, with `dryRun`).")
    )
    kept: list[str] = attrs.field(
        metadata=doc(
            "Files the checkpoint holds that were left as they are, because an ignored or "
            "too-large file stands where they would go."
        )
    )
    dry_run: bool = attrs.field(metadata=doc("Whether this was a dry run."))


# -- server-to-client request -----------------------------------------------------------------


@attrs.frozen(kw_only=True)
class ApproveToolCallParams:
    """Sent by the daemon when the profile needs a human to approve a call."""

    run_id: str = attrs.field(metadata=doc("The run asking."))
    call_id: str = attrs.field(metadata=doc("The call waiting (see `toolCallStarted`)."))
    tool_name: str = attrs.field(metadata=doc("The tool."))
    inputs: dict[str, Any] = attrs.field(metadata=doc("The arguments it would run with."))
    mutating: bool = attrs.field(metadata=doc("It changes the workspace."))
    executes_code: bool = attrs.field(metadata=doc("It runs programs."))
    automation_profile: AutomationProfile = attrs.field(metadata=doc("The run's profile."))
    iteration: int = attrs.field(metadata=doc("The iteration asking."))
    note: str | None = attrs.field(
        default=None,
        metadata=doc(
            "Why this call is asked about beyond the profile's rule, to show the user: e.g. "
            "the command would run unconfined (no bubblewrap here), and how to change that."
        ),
    )
    protected: bool = attrs.field(
        default=False,
        metadata=doc(
            "About a protected write (code that could run later, outside the sandbox: a git "
            "hook, `core.fsmonitor`, editor tasks), before a file tool writes it or after a "
            "command wrote it (`note` says what; a no undoes it). Asked every time under every "
            "profile: `allow_for_run` allows it this once only, so offer allow and deny."
        ),
    )


@attrs.frozen(kw_only=True)
class ApproveToolCallResult:
    decision: ApprovalDecision = attrs.field(
        metadata=doc(
            "`allow_for_run`: allow this tool without asking again in this run. `cancel`: stop "
            "the whole run (as `cleveragents/cancel` does); the call is recorded as cancelled."
        )
    )


@attrs.frozen(kw_only=True)
class TrustedVariable:
    """A variable a server would be started with, as the question shows it."""

    name: str = attrs.field(metadata=doc("Its name."))
    value: str | None = attrs.field(
        metadata=doc("Its value as written (`${VAR}` references unexpanded); null when `masked`.")
    )
    length: int = attrs.field(metadata=doc("The length of the value as written."))
    masked: bool = attrs.field(
        metadata=doc(
            "The value looks like a secret and is not sent: show that the variable is set, "
            "and its length."
        )
    )
    changes_what_runs: bool = attrs.field(
        metadata=doc(
            "It changes which program runs or what it loads (`PATH`, `LD_*`, `DYLD_*`, "
            "`NODE_OPTIONS`, `PYTHON*`, `BASH_ENV`, `GIT_*`, ...): never masked; flag it."
        )
    )
    expanded: str | None = attrs.field(
        metadata=doc(
            "For a variable that `changesWhatRuns`, its value after `${VAR}` expansion when "
            "that differs from `value`; else null."
        )
    )


@attrs.frozen(kw_only=True)
class TrustedServer:
    """A program the workspace's `.mcp.json` would start: as written in the file, and what will
    actually run. Show `program` (flagged when `programInWorkspace`) and every `env` entry."""

    name: str = attrs.field(metadata=doc("The server's name in `mcpServers`."))
    command: str = attrs.field(
        metadata=doc("The command as written (`${VAR}` references unexpanded).")
    )
    args: list[str] = attrs.field(metadata=doc("Its arguments as written."))
    env_names: list[str] = attrs.field(metadata=doc("Names of the variables it sets."))
    program: str | None = attrs.field(
        metadata=doc(
            "The absolute path that will be started: `command` resolved with the server's own "
            "`PATH` (else the daemon's) and working folder (the sandbox root), exactly as the "
            "start does (the start runs this path). Null when nothing was found (the start "
            "fails)."
        )
    )
    program_in_workspace: bool = attrs.field(
        metadata=doc(
            "`program` (or the file its links lead to) lies inside the workspace: the "
            "workspace chose the program itself. Flag it."
        )
    )
    env: list[TrustedVariable] = attrs.field(
        metadata=doc("Every variable it sets, in the file's order, with its value.")
    )


@attrs.frozen(kw_only=True)
class TrustWorkspaceParams:
    """Sent before a workspace's `.mcp.json` would start its servers for the first time, and
    whenever the file changes. Only to clients that declared
    `capabilities.experimental.cleveragents.trust`. The answer is remembered for this folder
    and this file's `configHash`."""

    sandbox_root: str = attrs.field(metadata=doc("The folder (resolved)."))
    config_path: str = attrs.field(metadata=doc("The `.mcp.json` file."))
    config_hash: str = attrs.field(
        metadata=doc(
            "SHA-256 (hex) over the file's exact bytes and what this question shows beyond "
            "them (each resolved `program`, the content of one inside the workspace, the "
            "expanded values of variables that change what runs): the answer is kept under it."
        )
    )
    servers: list[TrustedServer] = attrs.field(metadata=doc("Every server it would start."))


@attrs.frozen(kw_only=True)
class TrustWorkspaceResult:
    trusted: bool = attrs.field(
        metadata=doc("Start the servers; false: the run goes on without their tools.")
    )


@attrs.frozen(kw_only=True)
class CallClientToolParams:
    """Sent when the model calls one of the client's tools, after any approval. Withdrawn with
    `$/cancelRequest` when the run is stopped or the tool's timeout passes."""

    run_id: str = attrs.field(metadata=doc("The run calling."))
    call_id: str = attrs.field(metadata=doc("The call (see `toolCallStarted`)."))
    name: str = attrs.field(metadata=doc("The tool, as the client declared it."))
    arguments: dict[str, Any] = attrs.field(
        metadata=doc("The model's arguments, checked against the declared `inputSchema`.")
    )
    iteration: int = attrs.field(metadata=doc("The iteration calling."))


@attrs.frozen(kw_only=True)
class ClientToolContent:
    """A piece of the answer: text, which the model reads."""

    type: Literal["text"] = attrs.field(metadata=doc("Only `text`."))
    text: str = attrs.field(metadata=doc("The text."))


@attrs.frozen(kw_only=True)
class CallClientToolResult:
    """The tool's result (the shape of an MCP tool result's text content). A JSON-RPC error
    answer, or a result of another shape, fails the call with the error in its record."""

    content: list[ClientToolContent] = attrs.field(
        metadata=doc("Its text, in pieces joined with newlines.")
    )
    is_error: bool | None = attrs.field(
        default=None,
        metadata=doc("The tool failed; `content` says why (the record's error)."),
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


# -- the method table -------------------------------------------------------------------------

Kind = Literal["request", "notification"]
Direction = Literal["client_to_server", "server_to_client"]


@dataclass(frozen=True, slots=True)
class Method:
    name: str
    kind: Kind
    direction: Direction
    params: type | None
    result: type | None
    params_optional: bool
    summary: str


METHODS: tuple[Method, ...] = (
    Method(
        "cleveragents/run",
        "request",
        "client_to_server",
        RunParams,
        RunResult,
        False,
        "Start a run; returns when it ends.",
    ),
    Method(
        "cleveragents/cancel",
        "request",
        "client_to_server",
        CancelParams,
        CancelResult,
        False,
        "Stop a run.",
    ),
    Method(
        "cleveragents/tools",
        "request",
        "client_to_server",
        ToolsParams,
        ToolsResult,
        True,
        "The tools runs are offered.",
    ),
    Method(
        "cleveragents/runs",
        "request",
        "client_to_server",
        RunsParams,
        RunsResult,
        True,
        "Past and running runs, newest first.",
    ),
    Method(
        "cleveragents/getRun",
        "request",
        "client_to_server",
        GetRunParams,
        RunDetail,
        False,
        "One run from the history, with its records and conversation.",
    ),
    Method(
        "cleveragents/restore",
        "request",
        "client_to_server",
        RestoreParams,
        RestoreResult,
        False,
        "Restore a run's folder to before an iteration, or undo the run.",
    ),
    Method(
        "cleveragents/listCommands",
        "request",
        "client_to_server",
        ListCommandsParams,
        ListCommandsResult,
        False,
        "The custom commands (`/name arguments`) of a folder and of the user.",
    ),
    Method(
        "cleveragents/runStarted",
        "notification",
        "server_to_client",
        RunStartedParams,
        None,
        False,
        "A run began.",
    ),
    Method(
        "cleveragents/plan",
        "notification",
        "server_to_client",
        PlanParams,
        None,
        False,
        "The model's plan, whole, each time it changes.",
    ),
    Method(
        "cleveragents/iterationStarted",
        "notification",
        "server_to_client",
        IterationStartedParams,
        None,
        False,
        "An LLM call is about to be made.",
    ),
    Method(
        "cleveragents/textDelta",
        "notification",
        "server_to_client",
        TextDeltaParams,
        None,
        False,
        "Assistant text as it streams.",
    ),
    Method(
        "cleveragents/toolCallStarted",
        "notification",
        "server_to_client",
        ToolCallStartedParams,
        None,
        False,
        "A tool call is starting.",
    ),
    Method(
        "cleveragents/snapshotProgress",
        "notification",
        "server_to_client",
        SnapshotProgressParams,
        None,
        False,
        "A workspace checkpoint is still being saved (each second past the first).",
    ),
    Method(
        "cleveragents/snapshot",
        "notification",
        "server_to_client",
        SnapshotParams,
        None,
        False,
        "A workspace checkpoint was saved: its files and milliseconds.",
    ),
    Method(
        "cleveragents/toolCall",
        "notification",
        "server_to_client",
        ToolCallParams,
        None,
        False,
        "A tool call ended: its record.",
    ),
    Method(
        "cleveragents/usage",
        "notification",
        "server_to_client",
        UsageParams,
        None,
        False,
        "A model call returned: its tokens and cost, and the run's so far.",
    ),
    Method(
        "cleveragents/runFinished",
        "notification",
        "server_to_client",
        RunFinishedParams,
        None,
        False,
        "A run ended.",
    ),
    Method(
        "cleveragents/approveToolCall",
        "request",
        "server_to_client",
        ApproveToolCallParams,
        ApproveToolCallResult,
        False,
        "Ask the user to approve a tool call.",
    ),
    Method(
        "cleveragents/trustWorkspace",
        "request",
        "server_to_client",
        TrustWorkspaceParams,
        TrustWorkspaceResult,
        False,
        "Ask the user whether a workspace's `.mcp.json` servers may start.",
    ),
    Method(
        "cleveragents/callClientTool",
        "request",
        "server_to_client",
        CallClientToolParams,
        CallClientToolResult,
        False,
        "Run one of the tools the client declared at `initialize`.",
    ),
    Method(
        "cleveragents/settings",
        "request",
        "client_to_server",
        SettingsParams,
        SettingsResult,
        True,
        "Every setting as this session (or a run's params) resolves it, with its source.",
    ),
)

METHODS_BY_NAME = {method.name: method for method in METHODS}

# Types reachable only from `initialize` (not a custom method), documented in the schema too.
INITIALIZE_TYPES: tuple[type, ...] = (
    InitializationOptions,
    ClientCapability,
    ClientToolDeclaration,
    ServerCapability,
)


# -- error codes ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ErrorCode:
    code: int
    name: str
    meaning: str


# The codes of the core's error kinds (`jsonrpc_errors.py`): ACP mode answers with them too.
PARSE_ERROR = errors.PARSE_ERROR
INVALID_REQUEST = errors.INVALID_REQUEST
METHOD_NOT_FOUND = errors.METHOD_NOT_FOUND
INVALID_PARAMS = errors.INVALID_PARAMS
INTERNAL_ERROR = errors.INTERNAL_ERROR
SERVER_NOT_INITIALIZED = errors.SERVER_NOT_INITIALIZED
REQUEST_CANCELLED = errors.REQUEST_CANCELLED
RUN_FAILED = errors.RUN_FAILED
RUN_NOT_FOUND = errors.RUN_NOT_FOUND
RUN_ID_IN_USE = errors.RUN_ID_IN_USE
RUN_STILL_RUNNING = errors.RUN_STILL_RUNNING
PROVIDER_UNAVAILABLE = errors.PROVIDER_UNAVAILABLE
TOOLS_UNAVAILABLE = errors.TOOLS_UNAVAILABLE
RUN_ACTIVE = errors.RUN_ACTIVE
CHECKPOINTS_UNAVAILABLE = errors.CHECKPOINTS_UNAVAILABLE
NO_CHECKPOINT = errors.NO_CHECKPOINT
RESTORE_FAILED = errors.RESTORE_FAILED
UNAUTHORIZED = -32030  # the daemon's own, not the core's: only a TCP listener checks tokens

ERROR_CODES: tuple[ErrorCode, ...] = (
    ErrorCode(
        PARSE_ERROR,
        "ParseError",
        "A frame was broken or its body was not JSON (sent with `id: null`).",
    ),
    ErrorCode(
        INVALID_REQUEST,
        "InvalidRequest",
        "Not a JSON-RPC 2.0 request or notification, a batch, a second `initialize`, "
        "or a request after `shutdown`.",
    ),
    ErrorCode(METHOD_NOT_FOUND, "MethodNotFound", "No such method."),
    ErrorCode(
        INVALID_PARAMS,
        "InvalidParams",
        "Params of the wrong shape or value; the message names each bad field and "
        "`data.problems` lists them.",
    ),
    ErrorCode(INTERNAL_ERROR, "InternalError", "A bug in the daemon; the message says what."),
    ErrorCode(
        SERVER_NOT_INITIALIZED, "ServerNotInitialized", "A request before `initialize` succeeded."
    ),
    ErrorCode(
        REQUEST_CANCELLED, "RequestCancelled", "The request was cancelled with `$/cancelRequest`."
    ),
    ErrorCode(
        RUN_FAILED,
        "RunFailed",
        "The LLM provider (or the runtime) failed; `data` has `runId` and `errorType`. "
        "Records completed before the failure were streamed and stored.",
    ),
    ErrorCode(
        RUN_NOT_FOUND,
        "RunNotFound",
        "`getRun` or `continueFrom` names a run the history does not have.",
    ),
    ErrorCode(RUN_ID_IN_USE, "RunIdInUse", "The client-chosen `runId` is already taken."),
    ErrorCode(
        RUN_STILL_RUNNING, "RunStillRunning", "`continueFrom` names a run that has not finished."
    ),
    ErrorCode(
        PROVIDER_UNAVAILABLE,
        "ProviderUnavailable",
        "The provider cannot be used: no API key in the environment, SDK missing, "
        "replay script unreadable.",
    ),
    ErrorCode(
        TOOLS_UNAVAILABLE,
        "ToolsUnavailable",
        "The sandbox's `.mcp.json` is malformed or one of its MCP servers did not start; "
        "the message names the file or server, its exit code and the end of its stderr.",
    ),
    ErrorCode(
        RUN_ACTIVE,
        "RunActive",
        "`cleveragents/restore` while a run is active in that folder (or one inside or around "
        "it); `data` has `sandboxRoot` and `activeRunIds`. The same number as "
        "ServerNotInitialized, which only comes before `initialize`.",
    ),
    ErrorCode(
        CHECKPOINTS_UNAVAILABLE,
        "CheckpointsUnavailable",
        "Checkpoints are off (git is missing, the history cannot be opened): nothing can be "
        "restored; the message says why.",
    ),
    ErrorCode(
        NO_CHECKPOINT,
        "NoCheckpoint",
        "The run has no checkpoint to restore: they were pruned, or it ran without them.",
    ),
    ErrorCode(
        RESTORE_FAILED,
        "RestoreFailed",
        "git failed: nothing was restored, or (with `data.restoreId`) the restore stopped part "
        "way; restoring `restoreId` puts the folder back as it was before it.",
    ),
    ErrorCode(
        UNAUTHORIZED,
        "Unauthorized",
        "A `--tcp` daemon's first message was not `initialize` with the right "
        "`initializationOptions.token`; the connection is closed after this answer.",
    ),
)
