"""`cleveragents doctor`: what run_command can reach here, and (`--settings`) every setting's
resolved value and where it came from."""

from __future__ import annotations

import argparse
import json
import os

from ..setting_flags import OPTIONS_NAME, client_options, flag_settings, option_flag
from ..tool.serialization import to_data
from .common import EXIT_OK, EXIT_USAGE, fail
from .trust import render_workspace_trust, workspace_trust_report


def doctor_command(args: argparse.Namespace) -> int:
    from ..service.errors import ParamsError
    from ..workspace.command_policy import CommandPolicy
    from ..workspace.doctor import command_policy_report, render_report

    if args.settings:
        return settings_command(args)
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


def settings_command(args: argparse.Namespace) -> int:
    """`doctor --settings`: each row of the settings table as a run with these flags would
    resolve it, and where its value came from (the core's `settings_report`)."""
    from ..service.errors import ParamsError
    from ..service.settings import settings_report

    try:
        report = settings_report(
            client_options(args),
            os.environ,
            history=args.history,
            options_name=OPTIONS_NAME[:-1],
            options_level="flag",
        )
    except (ValueError, ParamsError) as exc:
        problems = exc.problems if isinstance(exc, ParamsError) else [str(exc)]
        return fail("; ".join(option_flag(p) for p in problems), EXIT_USAGE)
    if args.json:
        print(json.dumps(to_data(report), indent=2))
        return EXIT_OK
    width = max(len(value.name) for value in report)
    for value in report:
        came_from = f"${value.env}" if value.source == "env" else value.source
        print(f"{value.name:<{width}}  {value.value}  ({came_from})")
    return EXIT_OK
