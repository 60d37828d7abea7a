"""Async tools run on the loop as if awaited: every wait, a cancellation and the deadline."""

from __future__ import annotations

import asyncio
import contextvars
import time
from typing import Any

import pytest

from cleveragents.tool import ToolCallRequest, ToolError, ToolRegistry, ToolRunner

REQUEST_ID: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="none")


async def run(registry: ToolRegistry, name: str, arguments: dict[str, Any] | None = None) -> Any:
    runner = ToolRunner(registry)
    try:
        return await runner.run(ToolCallRequest("c1", name, arguments or {}))
    finally:
        runner.shutdown()


async def test_an_async_tool_that_waits_in_every_way_gets_each_result() -> None:
    registry = ToolRegistry()

    @registry.tool
    async def gather_steps() -> list[Any]:
        """Waits on a bare yield, a future, a timer and a task; reads the caller's context."""
        steps: list[Any] = [REQUEST_ID.get()]
        await asyncio.sleep(0)
        steps.append("yielded")
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_soon(future.set_result, "future")
        steps.append(await future)
        await asyncio.sleep(0.01)
        steps.append("slept")
        steps.append(await asyncio.create_task(asyncio.sleep(0, "task")))
        return steps

    REQUEST_ID.set("r-7")
    record = await run(registry, "gather_steps")
    assert record.success, record.error
    assert record.output == {"result": ["r-7", "yielded", "future", "slept", "task"]}


async def test_failures_before_and_after_the_first_wait_are_records() -> None:
    registry = ToolRegistry()

    @registry.tool
    async def early() -> None:
        """Fails before it ever waits."""
        raise ToolError("no such file", kind="sandbox_violation")

    @registry.tool
    async def late() -> None:
        """Fails after a wait."""
        await asyncio.sleep(0)
        raise ValueError("bad value")

    first, second = await run(registry, "early"), await run(registry, "late")
    assert (first.error_kind, first.error) == ("sandbox_violation", "no such file")
    assert (second.error_kind, second.error) == (
        "execution_error",
        "late raised ValueError: bad value",
    )


async def test_an_async_tool_that_computes_without_waiting_is_not_cut_off() -> None:
    # A deadline acts only at a wait: a call that never waits finishes, as it always has.
    registry = ToolRegistry()

    @registry.tool(timeout_s=0.01)
    async def busy() -> str:
        """Holds the loop for 50 ms and never waits."""
        time.sleep(0.05)
        return "done"

    record = await run(registry, "busy")
    assert record.success and record.output == {"result": "done"}


async def test_the_deadline_counts_from_the_start_of_the_call() -> None:
    registry = ToolRegistry()

    @registry.tool(timeout_s=0.02)
    async def busy_then_wait() -> str:
        """Holds the loop past its deadline, then waits."""
        time.sleep(0.05)
        await asyncio.sleep(0)
        return "too late"

    record = await run(registry, "busy_then_wait")
    assert record.error_kind == "timeout"
    assert record.error == "busy_then_wait did not finish within 0.02 s"


async def test_a_cancelled_async_tool_gets_the_cancellation_at_its_wait_and_cleans_up() -> None:
    registry = ToolRegistry()
    waiting = asyncio.Event()
    cleaned: list[str] = []

    @registry.tool
    async def holder() -> None:
        """Waits forever, cleaning up when cancelled."""
        await asyncio.sleep(0)
        waiting.set()
        try:
            await asyncio.Event().wait()
        finally:
            await asyncio.sleep(0)  # cleanup may itself wait
            cleaned.append("cleaned")

    call = asyncio.create_task(run(registry, "holder"))
    await asyncio.wait_for(waiting.wait(), 10)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert cleaned == ["cleaned"]


async def test_an_async_tool_may_swallow_its_own_inner_cancellation() -> None:
    registry = ToolRegistry()

    @registry.tool
    async def patient() -> str:
        """Cancels a task of its own and carries on."""
        inner = asyncio.create_task(asyncio.sleep(30))
        await asyncio.sleep(0)
        inner.cancel()
        try:
            await inner
        except asyncio.CancelledError:
            pass
        return "carried on"

    record = await run(registry, "patient")
    assert record.success and record.output == {"result": "carried on"}
