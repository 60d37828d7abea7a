"""The execution environment a run carries: plan, sandbox, profile, resources, history."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .records import ToolCallRecord


@dataclass(slots=True)
class ToolActorContext:
    plan_id: str = ""
    phase: str = "execute"
    sandbox_root: str | None = None
    automation_profile: str = "full-auto"
    resource_bindings: dict[str, Any] = field(default_factory=dict)
    project_resources: dict[str, Any] = field(default_factory=dict)
    # Appended to as each call completes, so observers of the context see progress live.
    tool_call_history: list[ToolCallRecord] = field(default_factory=list)
