"""The tool-calling runtime: registry, runner, router, LLM protocol and the loop.

from cleveragents.tool import ToolCallingRuntime, ToolRegistry, ToolRunner, ToolActorContext
"""

from .context import ToolActorContext
from .context_guard import ContextPolicy
from .errors import ContextLengthExceeded, SandboxViolation, ToolError
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
from .models import DEFAULT_CONTEXT_WINDOW, ModelPrice, context_window_for, price_for
from .policy import AUTOMATION_PROFILES, ApprovalDecision, ApprovalRequest, Approver
from .records import ERROR_KINDS, ErrorKind, ToolCallRecord, ToolCallRunResult, Usage
from .registry import ToolRegistry, ToolSpec, tool
from .result_budget import DEFAULT_RESULT_BUDGET_CHARS
from .router import ToolCallRouter
from .runner import ToolRunner
from .runtime import DEFAULT_MAX_ITERATIONS, CancelToken, ToolCallingRuntime

__all__ = [
    "AUTOMATION_PROFILES",
    "DEFAULT_CONTEXT_WINDOW",
    "DEFAULT_MAX_ITERATIONS",
    "DEFAULT_RESULT_BUDGET_CHARS",
    "ERROR_KINDS",
    "ApprovalDecision",
    "ApprovalRequest",
    "Approver",
    "AssistantMessage",
    "CancelToken",
    "ContextLengthExceeded",
    "ContextPolicy",
    "ErrorKind",
    "FunctionLLMCaller",
    "IterationStarted",
    "LLMCaller",
    "LLMRequest",
    "LLMResponse",
    "Message",
    "ModelPrice",
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
    "context_window_for",
    "price_for",
    "tool",
]
