"""Exit codes, and what every `cleveragents` subcommand shares: failing with a message, the
sandbox check."""

from __future__ import annotations

import os
import sys

EXIT_OK = 0


EXIT_ERROR = 1


EXIT_USAGE = 2


EXIT_LIMIT = 3


EXIT_CANCELLED = 130


def fail(message: str, code: int = EXIT_ERROR) -> int:
    print(f"cleveragents: {message}", file=sys.stderr)
    return code


def sandbox_problem(given: str) -> tuple[str, str | None]:
    """The real path of --sandbox `given`, or why it cannot be the tools' folder: the core's
    check, the one the daemon and ACP mode use."""
    from ..service.runs import check_sandbox_root

    sandbox, problem = check_sandbox_root(os.path.abspath(given))
    return sandbox, None if problem is None else f"--sandbox: {problem}"
