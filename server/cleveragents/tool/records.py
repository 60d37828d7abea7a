"""What a run produces: one record per tool call, and the result of the whole loop."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from .serialization import register_shape

# Machine-readable reasons a tool call failed. Clients switch on these; keep them stable.
ErrorKind = Literal[
    "unknown_tool",
    "invalid_arguments",
    "validation_error",
    "execution_error",
    "timeout",
    "invalid_output",
    "denied",
    "cancelled",
    "sandbox_violation",
    "repeated_call",
]

ERROR_KINDS: tuple[str, ...] = ErrorKind.__args__  # type: ignore[attr-defined]

StopReason = Literal["final_answer", "max_iterations", "cancelled", "context_exhausted"]


@dataclass(slots=True)
class ToolCallRecord:
    """One tool call as it happened: the contract's seven fields plus call_id and error_kind."""

    tool_name: str
    inputs: dict[str, Any]
    output: dict[str, Any]
    duration_ms: float
    success: bool
    error: str | None = None
    iteration: int = 0
    call_id: str = ""
    error_kind: ErrorKind | None = None


@dataclass(slots=True)
class Usage:
    """Tokens the provider reported for one model call (or a run's sum); zero when unreported.

    `input_tokens` is ALL the input the model read: uncached input plus the tokens written
    to and read from the prompt cache (Anthropic reports the three apart; providers add them).
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def copy(self) -> Usage:
        """A snapshot of a running total (`dataclasses.replace` costs several times more, and
        the runtime takes one every model response)."""
        return Usage(
            self.input_tokens, self.output_tokens, self.cache_read_tokens, self.cache_write_tokens
        )

    @property
    def uncached_input_tokens(self) -> int:
        return max(0, self.input_tokens - self.cache_read_tokens - self.cache_write_tokens)

    def add(self, other: Usage) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cache_read_tokens += other.cache_read_tokens
        self.cache_write_tokens += other.cache_write_tokens


@dataclass(slots=True)
class ToolCallRunResult:
    """The outcome of `run_tool_loop`: final (or partial) content and the full call history."""

    content: str
    tool_call_history: list[ToolCallRecord]
    iterations: int
    terminated_by_limit: bool = False
    stop_reason: StopReason = "final_answer"
    run_id: str = ""
    usage: Usage = field(default_factory=Usage)
    # USD at the model's price table (tool/models.py); None when the price is unknown.
    cost_usd: float | None = None
    # One entry per model call, in order (a call the provider rejected reports nothing).
    iteration_usage: list[Usage] = field(default_factory=list)
    # The whole conversation (provider-neutral), so a later run can continue it.
    messages: list[Any] = field(default_factory=list)


# The run's outcome first, then what it spent, then the calls and the conversation.
register_shape(
    ToolCallRunResult,
    order=(
        "run_id",
        "content",
        "iterations",
        "terminated_by_limit",
        "stop_reason",
        "usage",
        "cost_usd",
        "iteration_usage",
        "tool_call_history",
        "messages",
    ),
)
