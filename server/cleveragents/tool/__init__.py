"""The tool-calling runtime: registry, runner, router, LLM protocol and the loop.

from cleveragents.tool import ToolCallingRuntime, ToolRegistry, ToolRunner, ToolActorContext
"""

from .context import ToolActorContext
from .errors import SandboxViolation, ToolError
from .events import (
    IterationStarted,
    ResponseReceived,
    RunEvent,
    RunFailed,
    RunFinished,
    RunObserver,
    RunStarted,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from .llm import FunctionLLMCaller, LLMCaller, TextSink
from .messages import (
    AssistantMessage,
    LLMRequest,
    LLMResponse,
    Message,
    ToolCallRequest,
    ToolResult,
    ToolResultsMessage,
    ToolSchema,
    UserMessage,
)
from .policy import AUTOMATION_PROFILES, ApprovalDecision, ApprovalRequest, Approver
from .records import ERROR_KINDS, ErrorKind, ToolCallRecord, ToolCallRunResult, Usage
from .registry import ToolRegistry, ToolSpec, tool
from .router import ToolCallRouter
from .runner import ToolRunner
from .runtime import DEFAULT_MAX_ITERATIONS, CancelToken, ToolCallingRuntime

__all__ = [
    "AUTOMATION_PROFILES",
    "DEFAULT_MAX_ITERATIONS",
    "ERROR_KINDS",
    "ApprovalDecision",
    "ApprovalRequest",
    "Approver",
    "AssistantMessage",
    "CancelToken",
    "ErrorKind",
    "FunctionLLMCaller",
    "IterationStarted",
    "LLMCaller",
    "LLMRequest",
    "LLMResponse",
    "Message",
    "ResponseReceived",
    "RunEvent",
    "RunFailed",
    "RunFinished",
    "RunObserver",
    "RunStarted",
    "SandboxViolation",
    "TextDelta",
    "TextSink",
    "ToolActorContext",
    "ToolCallFinished",
    "ToolCallRecord",
    "ToolCallRequest",
    "ToolCallRouter",
    "ToolCallRunResult",
    "ToolCallStarted",
    "ToolCallingRuntime",
    "ToolError",
    "ToolRegistry",
    "ToolResult",
    "ToolResultsMessage",
    "ToolRunner",
    "ToolSchema",
    "ToolSpec",
    "Usage",
    "UserMessage",
    "tool",
]
