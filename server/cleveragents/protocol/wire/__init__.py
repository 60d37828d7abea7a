"""The daemon's wire types: every custom method's params and result, as attrs classes.

Python names are snake_case; on the wire every field is camelCase (`converter.py` renames).
`protocol/schema.json` is generated from these classes and `METHODS`, so a field added here
is a field documented there.

The types live in groups (`initialize`, `shapes`, `run`, `history`, `server_requests`), each
a module loaded the first time one of its types is named (`wire.RunParams`): a daemon
answering `initialize` builds the six types that needs, not all fifty (issue 21's cold
start). The constants, literals, the method table and the error codes are here.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ... import jsonrpc_errors as errors
from .common import (
    PROTOCOL_VERSION,
    ApprovalDecision,
    AutomationProfile,
    ChangeKind,
    ErrorKind,
    FinishReason,
    PlanStatus,
    ProgressToken,
    RunKind,
    RunStatus,
    StopReason,
    doc,
)

if TYPE_CHECKING:  # What `__getattr__` hands out, named for the type checker.
    from .history import (
        ConversationMessage,
        GetRunParams,
        RequestedToolCall,
        RestoreParams,
        RestoreResult,
        RunBatch,
        RunDetail,
        RunsParams,
        RunsResult,
        RunSummary,
        ToolResultContent,
    )
    from .initialize import (
        ClientCapability,
        ClientToolDeclaration,
        CommandLimits,
        InitializationOptions,
        ModelPrice,
        ServerCapability,
    )
    from .run import (
        CancelParams,
        CancelResult,
        IterationStartedParams,
        ListCommandsParams,
        ListCommandsResult,
        PlanParams,
        PromptCommandInfo,
        ResolvedSetting,
        RunFinishedParams,
        RunParams,
        RunResult,
        RunStartedParams,
        SettingsParams,
        SettingsResult,
        SnapshotParams,
        SnapshotProgressParams,
        TextDeltaParams,
        ToolCallParams,
        ToolCallStartedParams,
        ToolInfo,
        ToolsParams,
        ToolsResult,
        UsageParams,
    )
    from .server_requests import (
        ApproveToolCallParams,
        ApproveToolCallResult,
        CallClientToolParams,
        CallClientToolResult,
        ClientToolContent,
        TrustedServer,
        TrustedVariable,
        TrustWorkspaceParams,
        TrustWorkspaceResult,
    )
    from .shapes import (
        ChangedFile,
        Checkpoint,
        InstructionFile,
        IterationUsage,
        PlanStep,
        RunImage,
        RunResource,
        StoredImage,
        ToolCallRecord,
        Usage,
    )

__all__ = [
    "PROTOCOL_VERSION",
    "ApprovalDecision",
    "ApproveToolCallParams",
    "ApproveToolCallResult",
    "AutomationProfile",
    "CallClientToolParams",
    "CallClientToolResult",
    "CancelParams",
    "CancelResult",
    "ChangeKind",
    "ChangedFile",
    "Checkpoint",
    "ClientCapability",
    "ClientToolContent",
    "ClientToolDeclaration",
    "CommandLimits",
    "ConversationMessage",
    "ErrorKind",
    "FinishReason",
    "GetRunParams",
    "InitializationOptions",
    "InstructionFile",
    "IterationStartedParams",
    "IterationUsage",
    "ListCommandsParams",
    "ListCommandsResult",
    "ModelPrice",
    "PlanParams",
    "PlanStatus",
    "PlanStep",
    "ProgressToken",
    "PromptCommandInfo",
    "RequestedToolCall",
    "ResolvedSetting",
    "RestoreParams",
    "RestoreResult",
    "RunBatch",
    "RunDetail",
    "RunFinishedParams",
    "RunImage",
    "RunKind",
    "RunParams",
    "RunResource",
    "RunResult",
    "RunStartedParams",
    "RunStatus",
    "RunSummary",
    "RunsParams",
    "RunsResult",
    "ServerCapability",
    "SettingsParams",
    "SettingsResult",
    "SnapshotParams",
    "SnapshotProgressParams",
    "StopReason",
    "StoredImage",
    "TextDeltaParams",
    "ToolCallParams",
    "ToolCallRecord",
    "ToolCallStartedParams",
    "ToolInfo",
    "ToolResultContent",
    "ToolsParams",
    "ToolsResult",
    "TrustWorkspaceParams",
    "TrustWorkspaceResult",
    "TrustedServer",
    "TrustedVariable",
    "Usage",
    "UsageParams",
    "doc",
]

# Each group's module and the types it defines (a test checks the lists against the modules).
TYPE_GROUPS: dict[str, tuple[str, ...]] = {
    "initialize": (
        "ModelPrice",
        "CommandLimits",
        "InitializationOptions",
        "ClientToolDeclaration",
        "ClientCapability",
        "ServerCapability",
    ),
    "shapes": (
        "Usage",
        "IterationUsage",
        "RunImage",
        "StoredImage",
        "RunResource",
        "ToolCallRecord",
        "ChangedFile",
        "InstructionFile",
        "PlanStep",
        "Checkpoint",
    ),
    "run": (
        "RunParams",
        "RunResult",
        "RunStartedParams",
        "PlanParams",
        "IterationStartedParams",
        "TextDeltaParams",
        "ToolCallStartedParams",
        "SnapshotParams",
        "SnapshotProgressParams",
        "ToolCallParams",
        "UsageParams",
        "RunFinishedParams",
        "CancelParams",
        "CancelResult",
        "ToolsParams",
        "ToolInfo",
        "ToolsResult",
        "ListCommandsParams",
        "PromptCommandInfo",
        "ListCommandsResult",
        "SettingsParams",
        "ResolvedSetting",
        "SettingsResult",
    ),
    "history": (
        "RunsParams",
        "RunBatch",
        "RunSummary",
        "RunsResult",
        "GetRunParams",
        "RequestedToolCall",
        "ToolResultContent",
        "ConversationMessage",
        "RunDetail",
        "RestoreParams",
        "RestoreResult",
    ),
    "server_requests": (
        "ApproveToolCallParams",
        "ApproveToolCallResult",
        "TrustedVariable",
        "TrustedServer",
        "TrustWorkspaceParams",
        "TrustWorkspaceResult",
        "CallClientToolParams",
        "ClientToolContent",
        "CallClientToolResult",
    ),
}
_GROUP_OF = {name: group for group, names in TYPE_GROUPS.items() for name in names}


def __getattr__(name: str) -> Any:
    """A wire type, its group's module imported on first use (PEP 562)."""
    group = _GROUP_OF.get(name)
    if group is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{group}"), name)
    globals()[name] = value  # the next look-up is a plain one
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_GROUP_OF})


def _type_named(name: str) -> type:
    value = __getattr__(name) if name not in globals() else globals()[name]
    assert isinstance(value, type)
    return value


def wire_types() -> tuple[type, ...]:
    """Every wire type, each group loaded (the schema documents them all)."""
    return tuple(_type_named(name) for names in TYPE_GROUPS.values() for name in names)


# -- methods ----------------------------------------------------------------------------------


Kind = Literal["request", "notification"]
Direction = Literal["client_to_server", "server_to_client"]


@dataclass(frozen=True, slots=True)
class Method:
    """A method of the protocol; its types by name, so the table costs no type its own."""

    name: str
    kind: Kind
    direction: Direction
    params_type: str | None
    result_type: str | None
    params_optional: bool
    summary: str

    @property
    def params(self) -> type | None:
        return None if self.params_type is None else _type_named(self.params_type)

    @property
    def result(self) -> type | None:
        return None if self.result_type is None else _type_named(self.result_type)


METHODS: tuple[Method, ...] = (
    Method(
        "cleveragents/run",
        "request",
        "client_to_server",
        "RunParams",
        "RunResult",
        False,
        "Start a run; returns when it ends.",
    ),
    Method(
        "cleveragents/cancel",
        "request",
        "client_to_server",
        "CancelParams",
        "CancelResult",
        False,
        "Stop a run.",
    ),
    Method(
        "cleveragents/tools",
        "request",
        "client_to_server",
        "ToolsParams",
        "ToolsResult",
        True,
        "The tools runs are offered.",
    ),
    Method(
        "cleveragents/runs",
        "request",
        "client_to_server",
        "RunsParams",
        "RunsResult",
        True,
        "Past and running runs, newest first.",
    ),
    Method(
        "cleveragents/getRun",
        "request",
        "client_to_server",
        "GetRunParams",
        "RunDetail",
        False,
        "One run from the history, with its records and conversation.",
    ),
    Method(
        "cleveragents/restore",
        "request",
        "client_to_server",
        "RestoreParams",
        "RestoreResult",
        False,
        "Restore a run's folder to before an iteration, or undo the run.",
    ),
    Method(
        "cleveragents/listCommands",
        "request",
        "client_to_server",
        "ListCommandsParams",
        "ListCommandsResult",
        False,
        "The custom commands (`/name arguments`) of a folder and of the user.",
    ),
    Method(
        "cleveragents/runStarted",
        "notification",
        "server_to_client",
        "RunStartedParams",
        None,
        False,
        "A run began.",
    ),
    Method(
        "cleveragents/plan",
        "notification",
        "server_to_client",
        "PlanParams",
        None,
        False,
        "The model's plan, whole, each time it changes.",
    ),
    Method(
        "cleveragents/iterationStarted",
        "notification",
        "server_to_client",
        "IterationStartedParams",
        None,
        False,
        "An LLM call is about to be made.",
    ),
    Method(
        "cleveragents/textDelta",
        "notification",
        "server_to_client",
        "TextDeltaParams",
        None,
        False,
        "Assistant text as it streams.",
    ),
    Method(
        "cleveragents/toolCallStarted",
        "notification",
        "server_to_client",
        "ToolCallStartedParams",
        None,
        False,
        "A tool call is starting.",
    ),
    Method(
        "cleveragents/snapshotProgress",
        "notification",
        "server_to_client",
        "SnapshotProgressParams",
        None,
        False,
        "A workspace checkpoint is still being saved (each second past the first).",
    ),
    Method(
        "cleveragents/snapshot",
        "notification",
        "server_to_client",
        "SnapshotParams",
        None,
        False,
        "A workspace checkpoint was saved: its files and milliseconds.",
    ),
    Method(
        "cleveragents/toolCall",
        "notification",
        "server_to_client",
        "ToolCallParams",
        None,
        False,
        "A tool call ended: its record.",
    ),
    Method(
        "cleveragents/usage",
        "notification",
        "server_to_client",
        "UsageParams",
        None,
        False,
        "A model call returned: its tokens and cost, and the run's so far.",
    ),
    Method(
        "cleveragents/runFinished",
        "notification",
        "server_to_client",
        "RunFinishedParams",
        None,
        False,
        "A run ended.",
    ),
    Method(
        "cleveragents/approveToolCall",
        "request",
        "server_to_client",
        "ApproveToolCallParams",
        "ApproveToolCallResult",
        False,
        "Ask the user to approve a tool call.",
    ),
    Method(
        "cleveragents/trustWorkspace",
        "request",
        "server_to_client",
        "TrustWorkspaceParams",
        "TrustWorkspaceResult",
        False,
        "Ask the user whether a workspace's `.mcp.json` servers may start.",
    ),
    Method(
        "cleveragents/callClientTool",
        "request",
        "server_to_client",
        "CallClientToolParams",
        "CallClientToolResult",
        False,
        "Run one of the tools the client declared at `initialize`.",
    ),
    Method(
        "cleveragents/settings",
        "request",
        "client_to_server",
        "SettingsParams",
        "SettingsResult",
        True,
        "Every setting as this session (or a run's params) resolves it, with its source.",
    ),
)

METHODS_BY_NAME = {method.name: method for method in METHODS}

# Types reachable only from `initialize` (not a custom method), documented in the schema too.
INITIALIZE_TYPE_NAMES: tuple[str, ...] = (
    "InitializationOptions",
    "ClientCapability",
    "ClientToolDeclaration",
    "ServerCapability",
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
