"""The built-in tools' names, known without importing the tools.

`initialize` checks the tools a client declares against the daemon's own names; a daemon with
only built-ins answers it from this tuple and builds its registry on the first request that
needs one (issue 21: cold start). tests/tool/test_builtin_names.py holds it equal to what
`builtin_tools()` registers, in order, so the two cannot drift.
"""

from __future__ import annotations

BUILTIN_TOOL_NAMES: tuple[str, ...] = (
    "read_file",
    "write_file",
    "edit_file",
    "list_dir",
    "glob",
    "grep",
    "run_command",
    "update_plan",
)
