"""The history keeps each run's tokens, cache tokens and cost (and each model call's), the files
attached to its prompt, and reads databases written before it did."""

from __future__ import annotations

import shutil
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from cleveragents.providers.replay import ReplayCaller, parse_script
from cleveragents.service.history import SCHEMA_VERSION, RunHistory
from cleveragents.service.history.schema import MIGRATIONS as _MIGRATIONS
from cleveragents.tool import (
    AssistantMessage,
    CancelToken,
    ToolActorContext,
    ToolCallingRuntime,
    ToolRegistry,
    ToolRunner,
    Usage,
    UserMessage,
)
from cleveragents.tool.events import (
    IterationStarted,
    ResponseReceived,
    RunFinished,
    RunStarted,
)
from cleveragents.tool.models import price_for
from cleveragents.tool.records import ToolCallRunResult
from cleveragents.tool.resources import Resource, prompt_with_resources
from cleveragents.tool.serialization import to_data

SONNET = "claude-sonnet-4-5"
FIRST = {"input_tokens": 12_000, "output_tokens": 100, "cache_write_tokens": 10_000}
SECOND = {"input_tokens": 12_500, "output_tokens": 50, "cache_read_tokens": 10_000}


def registry() -> ToolRegistry:
    tools = ToolRegistry()

    @tools.tool
    def echo(text: str) -> dict[str, str]:
        """Say it back."""
        return {"text": text}

    return tools


def replay(*responses: dict[str, Any], model: str | None = SONNET) -> ReplayCaller:
    return ReplayCaller(parse_script({"responses": list(responses)}), model=model)


def two_calls(model: str | None = SONNET) -> ReplayCaller:
    return replay(
        {"tool_calls": [{"name": "echo", "id": "c1", "arguments": {"text": "hi"}}], "usage": FIRST},
        {"text": "Done.", "usage": SECOND},
        model=model,
    )


async def run(store: RunHistory, llm: Any, prompt: str = "go", **kwargs: Any) -> Any:
    tools = registry()
    runtime = ToolCallingRuntime(tools, ToolRunner(tools), llm, observers=[store])
    return await runtime.arun_tool_loop(prompt, ToolActorContext(), **kwargs)


def old_database(path: Path) -> None:
    """A history as the first schema wrote it, with one finished run and its response."""
    conn = sqlite3.connect(path, isolation_level=None)
    for statement in _MIGRATIONS[0]:
        conn.execute(statement)
    conn.execute("PRAGMA user_version = 1")
    conn.execute(
        "INSERT INTO runs (run_id, prompt, plan_id, sandbox_root, automation_profile, "
        "max_iterations, status, started_at, finished_at, iterations, content, stop_reason, "
        "input_tokens, output_tokens, owner_host, owner_pid, owner_token) VALUES "
        "('run_old', 'old prompt', '', '/tmp', 'ask', 25, 'finished', ?, ?, 1, 'Old answer.', "
        "'final_answer', 1500, 40, 'host', 1, 'token')",
        (time.time() - 60, time.time() - 59),
    )
    conn.execute(
        "INSERT INTO assistant_messages (run_id, iteration, message, received_at) VALUES "
        '(\'run_old\', 1, \'{"role": "assistant", "text": "Old answer.", '
        '"tool_calls": []}\', ?)',
        (time.time() - 59,),
    )
    conn.close()


async def test_an_old_database_is_migrated_and_its_runs_read_with_unknown_cost(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.sqlite3"
    old_database(path)
    with RunHistory(path) as history:
        (old,) = history.list_runs()
        assert (old.run_id, old.usage, old.cost_usd) == ("run_old", Usage(1500, 40), None)
        assert old.batch is None and history.list_runs(batch_id="any") == []
        stored = history.get_run("run_old")
        assert stored is not None
        assert stored.iteration_usage == [] and stored.resources == [] and stored.images == []
        assert [type(m).__name__ for m in stored.messages] == ["UserMessage", "AssistantMessage"]
        assert history.conversation("run_old")[0] == UserMessage("old prompt")
        # New runs go on in the same file, with everything the new columns hold.
        result = await run(history, two_calls(), run_id="run_new", history=[])
        new, _ = history.list_runs()
        assert new.run_id == "run_new"
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    conn.close()
    assert new.usage == result.usage == Usage(24_500, 150, 10_000, 10_000)
    assert new.cost_usd == pytest.approx(result.cost_usd)


async def test_each_call_and_the_run_keep_tokens_and_cost(tmp_path: Path) -> None:
    with RunHistory(tmp_path / "h.sqlite3") as history:
        result = await run(history, two_calls(), run_id="r1")
        stored = history.get_run("r1")
    assert stored is not None
    price = price_for(SONNET)
    assert price is not None
    first, second = Usage(**FIRST), Usage(**SECOND)
    assert [(u.iteration, u.usage) for u in stored.iteration_usage] == [(1, first), (2, second)]
    assert [u.cost_usd for u in stored.iteration_usage] == [
        pytest.approx(price.cost(first)),
        pytest.approx(price.cost(second)),
    ]
    assert stored.usage == result.usage
    assert stored.cost_usd == pytest.approx(price.cost(first) + price.cost(second))
    assert to_data(stored)["cost_usd"] == stored.cost_usd
    assert to_data(stored)["iteration_usage"][0]["usage"] == to_data(first)


async def test_an_unknown_model_stores_no_cost(tmp_path: Path) -> None:
    with RunHistory(tmp_path / "h.sqlite3") as history:
        await run(history, two_calls(model="my-local-model"), run_id="r1")
        (summary,) = history.list_runs()
        stored = history.get_run("r1")
    assert summary.cost_usd is None and summary.usage.input_tokens == 24_500
    assert stored is not None and [u.cost_usd for u in stored.iteration_usage] == [None, None]


async def test_a_failed_run_keeps_what_its_finished_calls_spent(tmp_path: Path) -> None:
    # The script has one response: the second model call fails the run.
    llm = replay(
        {"tool_calls": [{"name": "echo", "id": "c1", "arguments": {"text": "hi"}}], "usage": FIRST}
    )
    with RunHistory(tmp_path / "h.sqlite3") as history:
        with pytest.raises(ValueError, match="replay script has 1 responses"):
            await run(history, llm, run_id="r1")
        (summary,) = history.list_runs()
    price = price_for(SONNET)
    assert price is not None
    assert summary.status == "failed"
    assert summary.usage == Usage(**FIRST)
    assert summary.cost_usd == pytest.approx(price.cost(Usage(**FIRST)))


async def test_a_cancelled_run_keeps_its_totals(tmp_path: Path) -> None:
    cancel = CancelToken()
    tools = registry()

    @tools.tool
    def stop(sandbox_root: str | None = None) -> dict[str, str]:
        """Cancel the run."""
        cancel.cancel()
        return {}

    llm = replay(
        {"tool_calls": [{"name": "stop", "id": "c1", "arguments": {}}], "usage": FIRST},
        {"text": "never", "delay_ms": 60_000},  # the cancel cuts this wait short
    )
    with RunHistory(tmp_path / "h.sqlite3") as history:
        runtime = ToolCallingRuntime(tools, ToolRunner(tools), llm, observers=[history])
        result = await runtime.arun_tool_loop("go", cancel=cancel, run_id="r1")
        (summary,) = history.list_runs()
    assert result.stop_reason == "cancelled"
    assert (summary.status, summary.usage) == ("cancelled", Usage(**FIRST))
    assert summary.cost_usd == pytest.approx(result.cost_usd)


async def test_attached_files_are_stored_and_a_continuation_sees_them(tmp_path: Path) -> None:
    attached = [
        Resource("src/app.py", "x = 1\n", start_line=3, end_line=3, total_lines=9),
        Resource("notes.md", "unsaved", from_editor=True),
    ]
    seen: list[Any] = []

    class Recording(ReplayCaller):
        async def complete(self, request: Any, on_text: Any = None) -> Any:
            seen.append(request)
            return await super().complete(request, on_text)

    with RunHistory(tmp_path / "h.sqlite3") as history:
        await run(history, two_calls(), run_id="r1", resources=attached)
        stored = history.get_run("r1")
        assert stored is not None and stored.resources == attached
        first = prompt_with_resources("go", attached)
        assert stored.messages[0] == UserMessage(first)
        history.mark_continuation("r2", "r1")
        follow = Recording(parse_script({"responses": [{"text": "ok"}]}))
        await run(history, follow, "and then?", run_id="r2", history=history.conversation("r1"))
    assert seen[0].messages[0] == UserMessage(first)
    assert seen[0].messages[-1] == UserMessage("and then?")


# A history the code before the runtime's totals wrote (it summed each response in SQL): see
# data/make_history_v6.py for how it was made.
HISTORY_V6 = Path(__file__).parent / "data" / "history-v6.sqlite3"


async def test_a_database_that_summed_its_totals_reads_the_same(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite3"
    shutil.copyfile(HISTORY_V6, path)
    price = price_for(SONNET)
    assert price is not None
    first, second = Usage(**FIRST), Usage(**SECOND)
    with RunHistory(path) as history:
        old = {summary.run_id: summary for summary in history.list_runs()}
        stored = {run_id: history.get_run(run_id) for run_id in old}
        result = await run(history, two_calls(), run_id="run_new")
        new = history.get_run("run_new")
    both = price.cost(first) + price.cost(second)
    expected = {  # status, the calls' tokens, the run's cost
        "run_finished": ("finished", [first, second], both),
        "run_failed": ("failed", [first], price.cost(first)),
        "run_unpriced": ("finished", [second], None),
    }
    for run_id, (status, calls, cost) in expected.items():
        summary, whole = old[run_id], stored[run_id]
        total = Usage()
        for usage in calls:
            total.add(usage)
        assert (summary.status, summary.usage) == (status, total)
        assert summary.cost_usd == (None if cost is None else pytest.approx(cost))
        assert whole is not None and (whole.usage, whole.cost_usd) == (total, summary.cost_usd)
        assert [u.usage for u in whole.iteration_usage] == calls
    # New runs in the old file keep the totals the runtime counted.
    assert new is not None and (new.usage, new.cost_usd) == (result.usage, result.cost_usd)


def test_the_history_keeps_the_runtime_total_and_never_adds_its_own(tmp_path: Path) -> None:
    # Totals that are not the sum of the calls' (a runtime that bills more than the calls it
    # reports): the row holds what the runtime said, while the run goes and once it ends.
    said = [Usage(150, 10), Usage(400, 40, 5, 0)]
    with RunHistory(tmp_path / "h.sqlite3") as history:
        history(RunStarted("r1", "go", "plan", None, "full-auto", 5))
        for iteration, (usage, total, cost) in enumerate(
            [(Usage(100, 10), said[0], 0.5), (Usage(200, 20, 5, 0), said[1], 1.25)], start=1
        ):
            history(IterationStarted("r1", iteration))
            history(
                ResponseReceived("r1", iteration, AssistantMessage("x"), usage, 0.1, total, cost)
            )
            (going,) = history.list_runs()
            assert (going.status, going.usage, going.cost_usd) == ("running", total, cost)
        final = ToolCallRunResult("x", [], 2, run_id="r1", usage=Usage(999, 99), cost_usd=None)
        history(RunFinished("r1", final))
        (done,) = history.list_runs()
    assert (done.usage, done.cost_usd) == (Usage(999, 99), None)
