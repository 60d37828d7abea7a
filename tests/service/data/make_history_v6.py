"""Writes `history-v6.sqlite3`: a run history as schema 6 wrote it, before the history took
the runtime's totals (it summed each response's tokens and cost in SQL).

Made once with the code of commit 1999c3e (`git archive 1999c3e server | tar -x -C OLD`,
then `PYTHONPATH=OLD/server python tests/service/data/make_history_v6.py`); kept so the
tests read a file the old code wrote, not one the new code imagines.
"""

from __future__ import annotations

import asyncio
import sqlite3
import sys
from pathlib import Path
from typing import Any

from cleveragents.providers.replay import ReplayCaller, parse_script
from cleveragents.service.history import RunHistory
from cleveragents.tool import ToolActorContext, ToolCallingRuntime, ToolRegistry, ToolRunner

FIRST = {"input_tokens": 12_000, "output_tokens": 100, "cache_write_tokens": 10_000}
SECOND = {"input_tokens": 12_500, "output_tokens": 50, "cache_read_tokens": 10_000}
CALL = {"tool_calls": [{"name": "echo", "id": "c1", "arguments": {"text": "hi"}}]}


async def run(history: RunHistory, run_id: str, model: str, *responses: Any) -> None:
    tools = ToolRegistry()

    @tools.tool
    def echo(text: str) -> dict[str, str]:
        """Say it back."""
        return {"text": text}

    llm = ReplayCaller(parse_script({"responses": list(responses)}), model=model)
    runtime = ToolCallingRuntime(tools, ToolRunner(tools), llm, observers=[history])
    try:
        await runtime.arun_tool_loop(f"prompt of {run_id}", ToolActorContext(), run_id=run_id)
    except ValueError:
        pass  # the script ran out: the run failed after its first call


async def main(path: Path) -> None:
    path.unlink(missing_ok=True)
    with RunHistory(path) as history:
        sonnet = "claude-sonnet-4-5"
        await run(
            history,
            "run_finished",
            sonnet,
            {**CALL, "usage": FIRST},
            {"text": "Done.", "usage": SECOND},
        )
        await run(history, "run_failed", sonnet, {**CALL, "usage": FIRST})
        await run(history, "run_unpriced", "my-local-model", {"text": "Hi.", "usage": SECOND})
    conn = sqlite3.connect(path)
    conn.execute("VACUUM")
    conn.close()


if __name__ == "__main__":
    asyncio.run(
        main(
            Path(sys.argv[1])
            if len(sys.argv) > 1
            else Path(__file__).with_name("history-v6.sqlite3")
        )
    )
