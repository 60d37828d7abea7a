"""Automation profiles: each allows, asks or denies exactly what it says."""

from __future__ import annotations

from typing import Any

import pytest

from cleveragents.tool import (
    ApprovalRequest,
    LLMRequest,
    LLMResponse,
    ToolActorContext,
    ToolCallingRuntime,
    ToolCallRequest,
    ToolRegistry,
    ToolRunner,
)
from cleveragents.tool.policy import verdict


def registry() -> ToolRegistry:
    reg = ToolRegistry()

    @reg.tool
    def look() -> str:
        """Reads."""
        return "seen"

    @reg.tool(mutating=True)
    def edit() -> str:
        """Writes a file."""
        return "edited"

    @reg.tool(executes_code=True)
    def shell() -> str:
        """Runs a command."""
        return "ran"

    return reg


EXPECTED = {
    "read-only": {"look": "allow", "edit": "deny", "shell": "deny"},
    "ask": {"look": "allow", "edit": "ask", "shell": "ask"},
    "auto-edit": {"look": "allow", "edit": "allow", "shell": "ask"},
    "full-auto": {"look": "allow", "edit": "allow", "shell": "allow"},
}


@pytest.mark.parametrize("profile", list(EXPECTED))
def test_verdict_table(profile: str) -> None:
    reg = registry()
    assert {s.name: verdict(profile, s) for s in reg.specs()} == EXPECTED[profile]


def all_three_twice(request: LLMRequest) -> LLMResponse:
    if request.iteration <= 2:
        n = request.iteration
        return LLMResponse(
            tool_calls=[ToolCallRequest(f"{t}{n}", t, {}) for t in ("look", "edit", "shell")]
        )
    return LLMResponse(text="done")


def run(profile: str, approver: Any = None) -> list[tuple[str, str | None]]:
    reg = registry()
    runtime = ToolCallingRuntime(reg, ToolRunner(reg), all_three_twice, approver=approver)
    result = runtime.run_tool_loop("go", ToolActorContext(automation_profile=profile))
    return [(r.tool_name, r.error_kind) for r in result.tool_call_history]


@pytest.mark.parametrize("profile", list(EXPECTED))
def test_without_an_approver_ask_means_denied(profile: str) -> None:
    outcome = dict(run(profile)[:3])
    for name, rule in EXPECTED[profile].items():
        assert outcome[name] == (None if rule == "allow" else "denied"), (profile, name)


def test_approver_allow_deny_and_allow_for_run() -> None:
    asked: list[tuple[str, str]] = []

    async def approver(request: ApprovalRequest) -> Any:
        asked.append((request.tool_name, request.call_id))
        assert request.automation_profile == "ask" and request.mutating
        return {"edit": "allow_for_run", "shell": "deny"}[request.tool_name]

    outcome = run("ask", approver)
    assert outcome == [
        ("look", None),
        ("edit", None),
        ("shell", "denied"),
        ("look", None),
        ("edit", None),
        ("shell", "denied"),
    ]
    # 'edit' was asked once (allowed for the run); 'shell' every time.
    assert asked.count(("edit", "edit1")) == 1 and ("edit", "edit2") not in asked
    assert [a for a in asked if a[0] == "shell"] == [("shell", "shell1"), ("shell", "shell2")]


def test_unknown_profile_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown automation profile"):
        run("yolo")
