"""The checkpoint hook: a chance to save the workspace before a run's iteration changes it.

`arun_tool_loop(..., before_mutation=hook)` awaits `hook(iteration)` once per iteration, after
a call that may change the workspace has been allowed (by the profile or a human) and just
before it runs: a mutating tool, a tool that executes code, or an MCP tool its server did not
mark read-only (those are registered as both). Iterations that only read never call it, and
neither do calls that are denied or never run.

The hook's time is its own: it is counted in no tool call's `duration_ms`; observers get a
`SnapshotTaken` event (its milliseconds, and the files it holds when the hook returns a
`SnapshotReport`) and, while it runs past a second, a `SnapshotProgress` each second.

If the hook fails, nothing that may change the workspace runs in that iteration: each such
call fails with error_kind `denied` and a message naming the failure, so the model and the
user see why, and the files stay as the last good checkpoint has them. The run goes on; read
calls still work, and the next iteration tries the hook again.

A hook may also have a `before_file_change(iteration, paths)` coroutine method (see
`FileChangeHook`): it is awaited before every allowed call of a tool whose spec names the
files it changes (`ToolSpec.changes_paths`: the built-in write_file and edit_file), with
those arguments as the model gave them, so the files' previous content can be kept whatever
`.gitignore` says. If it fails, that call is denied the same way.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from .cancel import CancelToken
from .events import RunEvent, SnapshotProgress, SnapshotTaken
from .policy import Approver, Authorizer
from .registry import ToolSpec

# Seconds between `SnapshotProgress` events (the first after as long).
SNAPSHOT_PROGRESS_INTERVAL_S = 1.0


@dataclass(frozen=True, slots=True)
class SnapshotReport:
    """What a hook may return: the files the snapshot holds."""

    files: int | None = None


BeforeMutation = Callable[[int], Awaitable[SnapshotReport | None]]


@runtime_checkable
class FileChangeHook(Protocol):
    """A checkpoint hook that also keeps the files a call is about to change."""

    async def __call__(self, iteration: int) -> SnapshotReport | None: ...

    async def before_file_change(self, iteration: int, paths: Sequence[str]) -> None: ...


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
        # Where snapshot events go (the run's observers); set by the runtime.
        self.emit: Callable[[RunEvent], None] | None = None

    async def check(
        self, spec: ToolSpec, inputs: dict[str, Any], call_id: str, iteration: int
    ) -> str | None:
        denial = await super().check(spec, inputs, call_id, iteration)
        if denial is not None or not may_change_workspace(spec):
            return denial
        denial = await self._checkpoint(iteration)
        if denial is not None or not spec.changes_paths:
            return denial
        paths = [inputs[k] for k in spec.changes_paths if isinstance(inputs.get(k), str)]
        if paths and isinstance(self.hook, FileChangeHook):
            try:
                await self.hook.before_file_change(iteration, paths)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                return (
                    f"not run: keeping the previous content of {', '.join(paths)} failed "
                    f"({type(exc).__name__}: {exc}), so the file is left as it is"
                )
        return None

    async def _checkpoint(self, iteration: int) -> str | None:
        # A lock, not a shared task: a cancelled save leaves nothing running behind the run.
        async with self._lock:
            if self._saved_for != iteration:
                self._outcome = await self._save(iteration)
                self._saved_for = iteration
            return self._outcome

    async def _save(self, iteration: int) -> str | None:
        started = time.perf_counter()
        emit = self.emit
        progress = asyncio.ensure_future(self._progress(iteration, started)) if emit else None
        try:
            report = await self.hook(iteration)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if emit is not None:
                emit(
                    SnapshotTaken(
                        self.run_id,
                        iteration,
                        (time.perf_counter() - started) * 1000.0,
                        None,
                        f"{type(exc).__name__}: {exc}",
                    )
                )
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
        finally:
            if progress is not None:
                progress.cancel()
        if emit is not None:
            files = report.files if isinstance(report, SnapshotReport) else None
            emit(
                SnapshotTaken(
                    self.run_id, iteration, (time.perf_counter() - started) * 1000.0, files
                )
            )
        return None

    async def _progress(self, iteration: int, started: float) -> None:
        while True:
            await asyncio.sleep(SNAPSHOT_PROGRESS_INTERVAL_S)
            if self.emit is not None:
                self.emit(
                    SnapshotProgress(
                        self.run_id, iteration, (time.perf_counter() - started) * 1000.0
                    )
                )
