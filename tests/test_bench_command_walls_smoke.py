"""The command walls bench runs end to end in quick mode (no timing asserts).

The bench exits non-zero when a sweep kills nothing, so a zero exit status means every sweep
it timed really found and killed the command's daemonised grandchild.
"""

from __future__ import annotations

import sys

import pytest

from test_bench_smoke import run_bench

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the sweep walks /proc (Linux)"
)


def test_prints_every_sweep_and_the_ratio() -> None:
    output = run_bench("command_walls_bench.py", "--quick")
    assert "processes on the machine:" in output
    for row in (
        "full scan of /proc/*/environ (before)",
        "subreaper walk from the shell (after)",
    ):
        assert row in output, row
    assert "INFO subreaper walk from the shell (after):" in output
    assert ("the command's cgroup (after)" in output) != ("not available here" in output)
