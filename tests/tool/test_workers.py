"""The sync tools' worker threads: outcomes handed to `done`, cancels that win or lose, and the
runner giving a thread budget's slot back exactly once whichever way a call ends."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import CancelledError
from typing import Any

from cleveragents.tool import ToolCallRequest, ToolRegistry, ToolRunner
from cleveragents.tool.runner import ThreadBudget
from cleveragents.tool.workers import WorkerThreads


class Outcomes:
    """Collects `done` calls, made in worker threads."""

    def __init__(self) -> None:
        self.seen: list[tuple[Any, BaseException | None, str]] = []
        self.arrived = threading.Event()

    def __call__(self, result: Any, error: BaseException | None) -> None:
        self.seen.append((result, error, threading.current_thread().name))
        self.arrived.set()


def test_start_hands_the_result_or_the_error_to_done_in_a_worker() -> None:
    pool = WorkerThreads(2, "w")
    got = Outcomes()
    pool.start(lambda: 41 + 1, got)
    assert got.arrived.wait(30)
    got.arrived.clear()
    pool.start(lambda: int("x"), got)
    assert got.arrived.wait(30)
    pool.shutdown()
    (result, error, name), (_, failure, _) = got.seen
    assert (result, error) == (42, None) and name.startswith("w_")
    assert isinstance(failure, ValueError)


def test_a_cancelled_job_that_had_not_started_never_runs_and_a_running_one_runs_on() -> None:
    pool = WorkerThreads(1, "c")
    release, started = threading.Event(), threading.Event()
    ran: list[str] = []
    first, second = Outcomes(), Outcomes()

    def hold() -> str:
        started.set()
        release.wait(30)
        ran.append("first")
        return "first"

    busy = pool.start(hold, first)
    assert started.wait(30)
    queued = pool.start(lambda: ran.append("second"), second)
    assert pool.cancel(queued) and pool.cancel(queued)  # it will never run, asked twice
    assert not pool.cancel(busy)  # a thread cannot be stopped
    release.set()
    assert first.arrived.wait(30)
    after = Outcomes()
    pool.start(lambda: "after", after)  # the one worker has passed the dropped job
    assert after.arrived.wait(30)
    pool.shutdown()
    assert ran == ["first"] and second.seen == []
    assert [s[0] for s in first.seen + after.seen] == ["first", "after"]


def test_shutdown_gives_what_had_not_started_a_cancelled_error_and_refuses_more() -> None:
    pool = WorkerThreads(1, "s")
    release, started = threading.Event(), threading.Event()

    def hold() -> bool:
        started.set()
        return release.wait(30)

    pool.start(hold, Outcomes())
    assert started.wait(30)
    dropped = Outcomes()
    pool.start(lambda: "never", dropped)
    pool.shutdown(wait=False, cancel_futures=True)
    release.set()
    ((result, error, _),) = dropped.seen
    assert result is None and isinstance(error, CancelledError)
    try:
        pool.start(lambda: None, Outcomes())
    except RuntimeError as exc:
        assert "shut down" in str(exc)
    else:
        raise AssertionError("a shut-down pool took more work")


async def test_a_call_timed_out_in_the_queue_never_runs_and_each_slot_comes_back_once() -> None:
    registry = ToolRegistry()
    release = threading.Event()
    started = threading.Event()
    ran: list[str] = []

    @registry.tool(timeout_s=60)
    def hold() -> dict[str, Any]:
        """Blocks its worker until released."""
        started.set()
        release.wait(30)
        ran.append("hold")
        return {"held": True}

    @registry.tool(timeout_s=0.05)
    def quick() -> dict[str, Any]:
        """Would run at once, given a worker."""
        ran.append("quick")
        return {}

    budget = ThreadBudget(2)
    runner = ToolRunner(registry, executor=WorkerThreads(1, "one"))
    try:
        holding = asyncio.create_task(runner.run(ToolCallRequest("h", "hold", {}), budget=budget))
        while not started.is_set():
            await asyncio.sleep(0.005)
        # The one worker is busy: this call waits in the pool's queue until its deadline.
        timed_out = await runner.run(ToolCallRequest("q", "quick", {}), budget=budget)
        assert timed_out.error_kind == "timeout" and not timed_out.success
        release.set()
        held = await holding
        assert held.success and held.output == {"held": True}
        # The worker is free; a call after the dropped one still runs.
        again = await runner.run(ToolCallRequest("q2", "quick", {}), budget=budget)
        assert again.success
    finally:
        release.set()
        runner.shutdown()
    assert ran == ["hold", "quick"]  # the timed-out call never ran
    # Two slots, each given back once: a double release would leave three, a lost one one.
    assert budget._slots._value == 2
