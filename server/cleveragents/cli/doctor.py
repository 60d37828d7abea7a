"""`cleveragents doctor`: what run_command can reach here, and (`--settings`) every setting's
resolved value and where it came from."""

from __future__ import annotations

import argparse
import json
import os

from .common import EXIT_OK, EXIT_USAGE, fail
from .flags import flag_settings
from .trust import render_workspace_trust, workspace_trust_report


def doctor_command(args: argparse.Namespace) -> int:
    from ..service.errors import ParamsError
    from ..workspace.command_policy import CommandPolicy
    from ..workspace.doctor import command_policy_report, render_report

    sandbox = os.path.realpath(args.sandbox or os.getcwd())
    if not os.path.isdir(sandbox):
        return fail(f"sandbox {args.sandbox!r} is not a folder", EXIT_USAGE)
    try:
        policy = flag_settings(args).command_policy or CommandPolicy.from_environment()
        report = command_policy_report(policy, sandbox)
    except (ValueError, ParamsError) as exc:  # a malformed setting variable
        return fail(str(exc), EXIT_USAGE)
    report["mcp"] = workspace_trust_report(sandbox)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(render_report(report))
        print(render_workspace_trust(report["mcp"]))
    return EXIT_OK
