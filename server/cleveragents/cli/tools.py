"""`cleveragents tools`: every tool with its source and schema."""

from __future__ import annotations

import argparse
import asyncio
import json

from .common import EXIT_OK, EXIT_USAGE, fail, sandbox_problem
from .trust import add_mcp_tools_once, mcp_trust


def tools_command(args: argparse.Namespace) -> int:
    from rich.console import Console

    from ..assembly import tool_rows
    from ..toolsets import ToolLoadError, build_registry

    try:
        registry = build_registry(args.tools)
        if args.sandbox:
            sandbox, problem = sandbox_problem(args.sandbox)
            if problem is not None:
                return fail(problem, EXIT_USAGE)
            console = Console(stderr=True)
            trust = mcp_trust(args, console)
            asyncio.run(add_mcp_tools_once(registry, sandbox, trust, console))
    except ToolLoadError as exc:
        return fail(str(exc))
    except ValueError as exc:  # a malformed trust-workspace variable
        return fail(str(exc), EXIT_USAGE)
    rows = list(tool_rows(registry))
    if args.json:
        print(json.dumps(rows, indent=2))
        return EXIT_OK
    from rich.table import Table

    table = Table("tool", "source", "effect", "parameters", "description")
    for row in rows:
        effect = "runs code" if row["executes_code"] else "writes" if row["mutating"] else "reads"
        params = ", ".join(
            f"{name}{'' if name in row['input_schema'].get('required', []) else '?'}"
            for name in row["input_schema"].get("properties", {})
        )
        table.add_row(row["name"], row["source"], effect, params, row["description"].split("\n")[0])
    Console().print(table)
    return EXIT_OK
