"""A front's half of a run for core tests that need no front: nothing approved, nothing shown."""

from __future__ import annotations

from typing import Any

from cleveragents.tool.events import RunObserver
from cleveragents.tool.policy import ApprovalDecision, ApprovalRequest


class Sink:
    """A front's half of a run that approves nothing and watches nothing."""

    approvals = False

    def run_observer(self, plan: Any) -> RunObserver:
        return lambda event: None

    async def ask_approval(self, request: ApprovalRequest) -> ApprovalDecision:
        return "deny"

    async def ask_trust(self, request: Any) -> bool | None:
        return None  # nobody to ask: a workspace's servers do not start
