"""A plan the user can watch: the built-in `update_plan` tool and what reads it back.

The model sends the whole plan each time (as Codex's `update_plan` does): a list of steps,
each with its text and a status (pending, in_progress, done), at most one in progress. The
call changes no file and runs nothing, so it needs no approval under any profile. Its record
holds the plan (the call's inputs), which is how the history keeps it: `plan_from_record`
reads it back, from a live call (the runtime's `PlanUpdated` event) or a stored one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from .errors import ToolError
from .records import ToolCallRecord
from .registry import ToolSpec, make_spec

PLAN_TOOL = "update_plan"
PLAN_STATUSES = ("pending", "in_progress", "done")
PlanStatus = Literal["pending", "in_progress", "done"]
MAX_PLAN_STEPS = 50
MAX_STEP_CHARS = 500


@dataclass(frozen=True, slots=True)
class PlanStep:
    text: str
    status: PlanStatus


PLAN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "steps": {
            "type": "array",
            "description": "The whole plan, in order (every step, not only the changed ones).",
            "minItems": 1,
            "maxItems": MAX_PLAN_STEPS,
            "items": {
                "type": "object",
                "properties": {
                    "text": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": MAX_STEP_CHARS,
                        "description": "What the step does, in a few words.",
                    },
                    "status": {
                        "enum": list(PLAN_STATUSES),
                        "description": "pending, in_progress (at most one step) or done.",
                    },
                },
                "required": ["text", "status"],
                "additionalProperties": False,
            },
        },
        "explanation": {
            "type": "string",
            "maxLength": MAX_STEP_CHARS,
            "description": "Why the plan changed, when it did (optional).",
        },
    },
    "required": ["steps"],
    "additionalProperties": False,
}


def parse_steps(raw: Any) -> tuple[PlanStep, ...]:
    """The plan's steps, checked; ToolError saying what is wrong."""
    if not isinstance(raw, list) or not raw:
        raise ToolError("steps must be a non-empty list of {text, status}")
    if len(raw) > MAX_PLAN_STEPS:
        raise ToolError(f"a plan has at most {MAX_PLAN_STEPS} steps, got {len(raw)}")
    steps: list[PlanStep] = []
    for index, item in enumerate(raw):
        if not isinstance(item, Mapping):
            raise ToolError(f"steps[{index}] must be an object with text and status")
        text, status = item.get("text"), item.get("status")
        if not isinstance(text, str) or not text.strip():
            raise ToolError(f"steps[{index}].text must be a non-empty string")
        if len(text) > MAX_STEP_CHARS:
            raise ToolError(f"steps[{index}].text is longer than {MAX_STEP_CHARS} characters")
        if status not in PLAN_STATUSES:
            raise ToolError(
                f"steps[{index}].status must be one of {', '.join(PLAN_STATUSES)}, got {status!r}"
            )
        steps.append(PlanStep(" ".join(text.split()), status))
    working = [i for i, s in enumerate(steps) if s.status == "in_progress"]
    if len(working) > 1:
        raise ToolError(
            f"at most one step may be in_progress, got {len(working)} (steps "
            f"{', '.join(map(str, working))}): mark the others pending or done"
        )
    return tuple(steps)


def update_plan(steps: list[dict[str, Any]], explanation: str | None = None) -> dict[str, Any]:
    """Show the user your plan for a multi-step task, and keep it current.

    Send the whole plan every time: each step's text and status (pending, in_progress or
    done), at most one in_progress. Call it when you start a task of several steps, and again
    as each step starts and ends. It changes nothing in the workspace.

    Returns {steps, done}: how many steps the plan has and how many are done.
    """
    parsed = parse_steps(steps)
    done = sum(1 for step in parsed if step.status == "done")
    return {"steps": len(parsed), "done": done}


def plan_tool_spec() -> ToolSpec:
    return make_spec(
        update_plan,
        input_schema=PLAN_SCHEMA,
        timeout_s=10.0,
        source="builtin",
        schema_checked=True,  # tests/tool/test_registry_schema.py checks every built-in schema
    )


def plan_from_record(record: ToolCallRecord) -> tuple[PlanStep, ...] | None:
    """The plan a successful `update_plan` call set; None for any other call."""
    if record.tool_name != PLAN_TOOL or not record.success:
        return None
    try:
        return parse_steps(record.inputs.get("steps"))
    except ToolError:
        return None


def last_plan(records: Iterable[ToolCallRecord]) -> tuple[PlanStep, ...] | None:
    """The plan as the latest successful `update_plan` call of `records` left it."""
    plan = None
    for record in records:
        found = plan_from_record(record)
        if found is not None:
            plan = found
    return plan
