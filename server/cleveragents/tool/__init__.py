"""The tool-calling runtime: registry, runner, router, LLM protocol and the loop.

from cleveragents.tool import ToolCallingRuntime, ToolRegistry, ToolRunner, ToolActorContext
"""

from typing import TYPE_CHECKING

from .lazy import lazy_exports

if TYPE_CHECKING:
    from .context import ToolActorContext
    from .context_policy import ContextPolicy
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

# Each export is imported from its module on first use: importing one module of the runtime
# (the registry, say) does not load the loop and everything else.
__getattr__ = lazy_exports(
    __name__,
    {
        "ToolActorContext": ".context",
        "ContextPolicy": ".context_policy",
        "ContextLengthExceeded": ".errors",
        "SandboxViolation": ".errors",
        "ToolError": ".errors",
        "IterationStarted": ".events",
        "ResponseReceived": ".events",
        "RunEvent": ".events",
        "RunFailed": ".events",
        "RunFinished": ".events",
        "RunObserver": ".events",
        "RunStarted": ".events",
        "TextDelta": ".events",
        "ToolCallFinished": ".events",
        "ToolCallStarted": ".events",
        "FunctionLLMCaller": ".llm",
        "LLMCaller": ".llm",
        "TextSink": ".llm",
        "AssistantMessage": ".messages",
        "LLMRequest": ".messages",
        "LLMResponse": ".messages",
        "Message": ".messages",
        "ToolCallRequest": ".messages",
        "ToolResult": ".messages",
        "ToolResultsMessage": ".messages",
        "ToolSchema": ".messages",
        "UserMessage": ".messages",
        "DEFAULT_CONTEXT_WINDOW": ".models",
        "ModelPrice": ".models",
        "context_window_for": ".models",
        "price_for": ".models",
        "AUTOMATION_PROFILES": ".policy",
        "ApprovalDecision": ".policy",
        "ApprovalRequest": ".policy",
        "Approver": ".policy",
        "ERROR_KINDS": ".records",
        "ErrorKind": ".records",
        "ToolCallRecord": ".records",
        "ToolCallRunResult": ".records",
        "Usage": ".records",
        "ToolRegistry": ".registry",
        "ToolSpec": ".registry",
        "tool": ".registry",
        "DEFAULT_RESULT_BUDGET_CHARS": ".result_budget",
        "ToolCallRouter": ".router",
        "ToolRunner": ".runner",
        "DEFAULT_MAX_ITERATIONS": ".runtime",
        "CancelToken": ".runtime",
        "ToolCallingRuntime": ".runtime",
    },
)

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
