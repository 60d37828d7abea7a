"""Run events, delivered to observers (daemon notifications, CLI display, history store)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .images import ImageAttachment
from .instructions import InstructionFile
from .messages import AssistantMessage
from .plan import PlanStep
from .records import ToolCallRecord, ToolCallRunResult, Usage
from .resources import Resource


@dataclass(slots=True, frozen=True)
class RunStarted:
    """`prompt` is the user's own text; the first message also shows the `resources`.

    `instructions`: the project instructions files in the run's system prompt (AGENTS.md).
    """

    run_id: str
    prompt: str
    plan_id: str
    sandbox_root: str | None
    automation_profile: str
    max_iterations: int
    resources: tuple[Resource, ...] = ()
    instructions: tuple[InstructionFile, ...] = ()
    # Images attached to the prompt (`images.py`); the first message shows them.
    images: tuple[ImageAttachment, ...] = ()


@dataclass(slots=True, frozen=True)
class IterationStarted:
    run_id: str
    iteration: int


@dataclass(slots=True, frozen=True)
class TextDelta:
    run_id: str
    iteration: int
    text: str


@dataclass(slots=True, frozen=True)
class ResponseReceived:
    """The model's whole response for one iteration (text and the tool calls it asked for).

    Lets a history store rebuild the conversation of a run that never finished. `usage` is
    this model call's tokens; `cost_usd` their price (None when the model's price is unknown).
    `total_usage` and `total_cost_usd` are the run's so far, counted once by the runtime, so
    no front keeps a sum of its own.
    """

    run_id: str
    iteration: int
    message: AssistantMessage
    usage: Usage = field(default_factory=Usage)
    cost_usd: float | None = None
    total_usage: Usage = field(default_factory=Usage)
    total_cost_usd: float | None = None


@dataclass(slots=True, frozen=True)
class ToolCallStarted:
    run_id: str
    iteration: int
    call_id: str
    tool_name: str
    inputs: Any


@dataclass(slots=True, frozen=True)
class ToolCallFinished:
    run_id: str
    record: ToolCallRecord


@dataclass(slots=True, frozen=True)
class PlanUpdated:
    """The model set its plan (an `update_plan` call succeeded): the whole plan, in order."""

    run_id: str
    iteration: int
    call_id: str
    steps: tuple[PlanStep, ...]
    explanation: str | None = None


@dataclass(slots=True, frozen=True)
class SnapshotProgress:
    """A workspace checkpoint (taken before `iteration` first changes the folder) is still
    being saved after `elapsed_ms`: sent about once a second from its first second on."""

    run_id: str
    iteration: int
    elapsed_ms: float


@dataclass(slots=True, frozen=True)
class SnapshotTaken:
    """The checkpoint before `iteration` first changed the folder is saved: it took
    `duration_ms` (counted in no tool call's `duration_ms`) and holds `files` files (None when
    the hook did not say); `error` says why it failed (the iteration's changes are then
    denied)."""

    run_id: str
    iteration: int
    duration_ms: float
    files: int | None = None
    error: str | None = None


@dataclass(slots=True, frozen=True)
class RunFinished:
    run_id: str
    result: ToolCallRunResult


@dataclass(slots=True, frozen=True)
class RunFailed:
    """The run stopped on an error that is not a tool's (the LLM provider gave up, say)."""

    run_id: str
    error: str
    error_type: str


RunEvent = (
    RunStarted
    | IterationStarted
    | TextDelta
    | ResponseReceived
    | ToolCallStarted
    | ToolCallFinished
    | PlanUpdated
    | SnapshotProgress
    | SnapshotTaken
    | RunFinished
    | RunFailed
)
RunObserver = Callable[[RunEvent], None]


def publish(observers: Sequence[RunObserver], event: RunEvent) -> None:
    """Deliver to every observer; one that raises is logged and never stops the run."""
    for observer in observers:
        try:
            observer(event)
        except Exception:
            # logging costs milliseconds to import; only a failing observer pays for it.
            import logging

            logging.getLogger(__name__).exception(
                "run observer %r failed on %s", observer, type(event).__name__
            )
