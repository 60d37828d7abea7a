"""`python -m cleveragents.workspace.terminal_runner`: one run_command inside an editor's terminal.

When run_command shows its output in an editor's terminal (`workspace/terminal.py`), the
terminal's process is this one, not the model's command line: it runs the command exactly as
run_command does everywhere else (`run_in_sandbox` with the agent's command policy and the
environment the agent would give it: bubblewrap where it works, the allow-listed variables,
the limits, every process killed at exit, on timeout and when this process is told to stop),
copies the output to its own stdout as it comes, so the terminal shows it live, and writes
run_command's result, as JSON, to the file `--result` names (`{"result": {...}}`, or
`{"error": message, "kind": error kind}`). Its exit code is the command's (1 when it could
not run, 124 on timeout).

    python -m cleveragents.workspace.terminal_runner --spec SPEC.json --sandbox-root ROOT \\
        --cwd DIR --timeout SECONDS --tag TAG --result FILE -- COMMAND

The spec file (written by the agent, private to it) holds the command policy and the
environment variables the agent lets commands have: the editor's own environment, which this
process starts with, is not what the command gets.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import os
import signal
import sys
from typing import Any

from cleveragents.tool.errors import ToolError

from .command import check_command, run_in_sandbox
from .command_policy import CommandPolicy, ResourceLimits
from .sandbox import Sandbox

TIMEOUT_EXIT_CODE = 124


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m cleveragents.workspace.terminal_runner",
        description="Run one run_command in the sandbox, showing its output on stdout.",
    )
    parser.add_argument("--spec", help="the command policy and environment (JSON)")
    parser.add_argument("--sandbox-root", required=True)
    parser.add_argument("--cwd", default=".")
    parser.add_argument("--timeout", type=float, required=True)
    parser.add_argument("--tag", required=True)
    parser.add_argument("--result", required=True, help="where to write the result (JSON)")
    parser.add_argument("command")
    return parser


def main(argv: list[str] | None = None) -> int:
    options = _parser().parse_args(argv)
    outcome, code = asyncio.run(_run(options))
    temporary = f"{options.result}.partial"
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(outcome, handle)
    os.replace(temporary, options.result)
    return code


async def _run(options: argparse.Namespace) -> tuple[dict[str, Any], int]:
    task = asyncio.current_task()
    assert task is not None
    loop = asyncio.get_running_loop()
    # The editor's "kill" (or closing the terminal): stop the command and everything it began.
    for name in ("SIGTERM", "SIGINT", "SIGHUP"):
        signum = getattr(signal, name, None)
        if signum is not None:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(signum, task.cancel)
    out = sys.stdout.buffer

    def show(chunk: bytes) -> None:
        out.write(chunk)
        out.flush()

    try:
        policy = None
        if options.spec is not None:
            policy, environment = read_spec(options.spec)
            # The command's variables come from the agent's allow-list, not the editor's.
            os.environ.clear()
            os.environ.update(environment)
        check_command(options.command, options.timeout)
        sandbox = Sandbox(options.sandbox_root)
        result = await run_in_sandbox(
            options.command,
            sandbox,
            sandbox.resolve(options.cwd),
            options.timeout,
            policy=policy,
            echo=show,
            tag=options.tag,
        )
    except ToolError as exc:
        code = TIMEOUT_EXIT_CODE if exc.kind == "timeout" else 1
        return {"error": str(exc), "kind": exc.kind}, code
    except asyncio.CancelledError:
        return {"error": "the command was stopped", "kind": "cancelled"}, 128 + signal.SIGTERM
    exit_code = result.get("exit_code")
    return {"result": result}, exit_code if isinstance(exit_code, int) and exit_code >= 0 else 1


def write_spec(path: str, policy: CommandPolicy, environment: dict[str, str]) -> None:
    spec = {"policy": dataclasses.asdict(policy), "environment": environment}
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        json.dump(spec, handle)


def read_spec(path: str) -> tuple[CommandPolicy, dict[str, str]]:
    with open(path, encoding="utf-8") as handle:
        spec = json.load(handle)
    fields = spec["policy"]
    policy = CommandPolicy(
        extra_read_paths=tuple(fields["extra_read_paths"]),
        never_visible=tuple(fields["never_visible"]),
        env_allow=tuple(fields["env_allow"]),
        limits=ResourceLimits(**fields["limits"]),
        allow_unconfined=bool(fields["allow_unconfined"]),
        bubblewrap=str(fields["bubblewrap"]),
        command_user=str(fields.get("command_user", "auto")),
        allow_protected_writes=bool(fields.get("allow_protected_writes", False)),
        protected_paths=tuple(fields.get("protected_paths", ())),
    )
    return policy, {str(k): str(v) for k, v in spec["environment"].items()}


if __name__ == "__main__":
    sys.exit(main())
