"""The batch bench runs end to end on a few tasks, locally (no timing asserts).

The bench crashes when a task did not pass, so a zero exit status means the figures are of
batches that did the work.
"""

from __future__ import annotations

import json

from test_bench_smoke import run_bench


def test_figures_for_a_few_local_tasks() -> None:
    figures = json.loads(run_bench("batch_bench.py", "--tasks", "3", "--no-ray", "--json"))
    [local] = figures["results"]
    assert (local["executor"], local["tasks"]) == ("local", 3)
    assert local["tasks_per_s"] > 0 and local["bare_run_s"] > 0
    assert local["mean_task_s"] > 0 and local["wall_s"] > 0
