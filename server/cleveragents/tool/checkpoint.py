"""The checkpoint hook: a chance to save the workspace before a run's iteration changes it.

`arun_tool_loop(..., before_mutation=hook)` awaits `hook(iteration)` once per iteration, after
a call that may change the workspace has been allowed (by the profile or a human) and just
before it runs: a mutating tool, a tool that executes code, or an MCP tool its server did not
mark read-only (those are registered as both). Iterations that only read never call it, and
neither do calls that are denied or never run.

If the hook fails, nothing that may change the workspace runs in that iteration: each such
call fails with error_kind `denied` and a message naming the failure, so the model and the
user see why, and the files stay as the last good checkpoint has them. The run goes on; read
calls still work, and the next iteration tries the hook again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from .cancel import CancelToken
from .policy import Approver, Authorizer
from .registry import ToolSpec

BeforeMutation = Callable[[int], Awaitable[None]]


def may_change_workspace(spec: ToolSpec) -> bool:
    return spec.mutating or spec.executes_code


class CheckpointingAuthorizer(Authorizer):
    """An `Authorizer` that awaits the checkpoint hook before the first allowed change of
    each iteration; concurrent calls of one iteration share that one await."""

    def __init__(
        self,
        profile: str,
        approver: Approver | None,
        run_id: str,
        hook: BeforeMutation,
        cancel: CancelToken | None = None,
    ) -> None:
        super().__init__(profile, approver, run_id, cancel)
        self.hook = hook
        self._saved_for = 0  # the iteration the hook last ran for
        self._outcome: str | None = None
        self._lock = asyncio.Lock()

    async def check(
        self, spec: ToolSpec, inputs: dict[str, Any], call_id: str, iteration: int
    ) -> str | None:
        denial = await super().check(spec, inputs, call_id, iteration)
        if denial is not None or not may_change_workspace(spec):
            return denial
        return await self._checkpoint(iteration)

    async def _checkpoint(self, iteration: int) -> str | None:
        # A lock, not a shared task: a cancelled save leaves nothing running behind the run.
        async with self._lock:
            if self._saved_for != iteration:
                self._outcome = await self._save(iteration)
                self._saved_for = iteration
            return self._outcome

    async def _save(self, iteration: int) -> str | None:
        try:
            await self.hook(iteration)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            import logging

            logging.getLogger(__name__).warning(
                "run %s: checkpoint before iteration %d failed",
                self.run_id,
                iteration,
                exc_info=True,
            )
            return (
                f"not run: saving the checkpoint before this change failed "
                f"({type(exc).__name__}: {exc}), so nothing that changes the workspace runs "
                "in this step; the files are unchanged"
            )
        return None
