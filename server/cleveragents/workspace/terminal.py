"""run_command shown in an editor's terminal, still run by us, behind our own wall.

An editor that offers terminals (ACP's `terminal/*`) runs the processes it is asked for and
shows their output live. `with_terminal` swaps the built-in run_command for one with the same
name, schema, description and flags that asks the editor's terminal to run
`python -m cleveragents.workspace.terminal_runner`, which runs the model's command exactly as
run_command does anywhere (`run_in_sandbox` with the same command policy: under bubblewrap
where it works, with the allow-listed environment and the limits, every process killed at
exit, on timeout and on cancel) and copies the output to the terminal as it comes. The model
gets run_command's usual result (stdout and stderr apart, capped the same way), which the
runner writes to a private file.
The core and the tools know nothing of the protocol behind the `TerminalHost`.

What the editor owning the process changes, and what it does not:
- the path checks (the working folder inside the sandbox) happen here, before the editor is
  asked anything; the command then runs under the same wall as ever;
- the runner starts with the editor's environment (plus PYTHONPATH for this package), but the
  command gets the variables this process lets commands have (the policy's allow-list), passed
  in a private spec file with the policy itself; unconfined commands are asked about as ever;
- the terminal's title is the runner's command line, with the model's command at its end;
- a cancelled call asks the editor to kill the runner, which kills the command's processes;
  a runner killed outright (SIGKILL) takes a confined command with it (bubblewrap's
  --die-with-parent), and an unconfined command's processes are found by their tag and
  killed here.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets
import sys
import tempfile
from typing import Any, Protocol, cast

import cleveragents
from cleveragents.tool.errors import ToolError
from cleveragents.tool.policy import UnconfinedCode
from cleveragents.tool.records import ERROR_KINDS, ErrorKind
from cleveragents.tool.registry import ToolRegistry

from .builtins import with_builtins_replaced
from .command import (
    DEFAULT_COMMAND_TIMEOUT_S,
    CommandTool,
    check_command,
    kill_tagged_processes,
)
from .command_policy import passes_variable
from .limits import MAX_OUTPUT_BYTES
from .repository_guard import guard_command
from .sandbox import Sandbox, SandboxPath, closing_fd, require_sandbox
from .terminal_runner import write_spec

log = logging.getLogger(__name__)

RUNNER_MODULE = "cleveragents.workspace.terminal_runner"
OUTPUT_TAIL_CHARS = 4000
# How much output the editor needs to keep: as much as run_command reports.
TERMINAL_OUTPUT_LIMIT = MAX_OUTPUT_BYTES


class TerminalError(Exception):
    """The editor could not start, wait for, kill or release a terminal; the message says why."""


class TerminalHost(Protocol):
    """Another program that runs processes in terminals its user sees (an editor)."""

    async def start(self, command: str, args: list[str], cwd: str, env: dict[str, str]) -> str:
        """Start `command args` in `cwd` with `env` added; the terminal's id."""
        ...

    async def wait_for_exit(self, terminal_id: str) -> None: ...

    async def output(self, terminal_id: str) -> str:
        """What the terminal shows (its end, when the editor keeps no more)."""
        ...

    async def kill(self, terminal_id: str) -> None: ...

    async def release(self, terminal_id: str) -> None: ...


def with_terminal(registry: ToolRegistry, host: TerminalHost) -> ToolRegistry:
    """A copy of `registry` whose built-in run_command shows its output in `host`'s terminal,
    under the same command policy."""
    spec = registry.get("run_command")
    owner = getattr(spec.handler, "__self__", None) if spec is not None else None
    if spec is None or spec.source != "builtin" or not isinstance(owner, CommandTool):
        return registry
    return with_builtins_replaced(registry, {"run_command": _InTerminal(host, owner).run_command})


class _InTerminal:
    """run_command through an editor's terminal, for one CommandTool (its policy)."""

    def __init__(self, host: TerminalHost, commands: CommandTool) -> None:
        self.host = host
        self.commands = commands

    async def unconfined_code(self) -> UnconfinedCode | None:
        """As the CommandTool says: the approval rules ask before an unconfined command."""
        return await self.commands.unconfined_code()

    async def run_command(
        self,
        command: str,
        cwd: str = ".",
        timeout_s: float = DEFAULT_COMMAND_TIMEOUT_S,
        sandbox_root: str | None = None,
    ) -> dict[str, Any]:
        sandbox = require_sandbox(sandbox_root)
        check_command(command, timeout_s)
        where = sandbox.resolve(cwd)
        await asyncio.to_thread(_check_directory, sandbox, where)
        # The runner process runs the command unguarded; the guard is here, where the
        # approver can be asked about what it wrote (`repository_guard.py`).
        return await guard_command(
            sandbox.root,
            self.commands.policy.allow_protected_writes,
            lambda: self._run(command, sandbox, where, timeout_s),
        )

    async def _run(
        self, command: str, sandbox: Sandbox, where: SandboxPath, timeout_s: float
    ) -> dict[str, Any]:
        tag = secrets.token_hex(16)
        policy = self.commands.policy
        with tempfile.TemporaryDirectory(prefix="cleveragents-terminal-") as private:
            result_file = os.path.join(private, "result.json")
            spec_file = os.path.join(private, "spec.json")
            allowed = {k: v for k, v in os.environ.items() if passes_variable(k, policy)}
            await asyncio.to_thread(write_spec, spec_file, policy, allowed)
            args = [
                "-m",
                RUNNER_MODULE,
                "--spec",
                spec_file,
                "--sandbox-root",
                sandbox.root,
                "--cwd",
                where.relative,
                "--timeout",
                repr(float(timeout_s)),
                "--tag",
                tag,
                "--result",
                result_file,
                "--",
                command,
            ]
            try:
                terminal = await self.host.start(
                    sys.executable, args, sandbox.absolute(where), runner_environment()
                )
            except TerminalError as exc:
                raise ToolError(f"the editor could not start a terminal: {exc}") from None
            try:
                await self._wait(terminal, tag)
                if not os.path.exists(result_file):
                    shown = await self._output(terminal)
                    raise ToolError(
                        "the command's runner ended without a result; the terminal shows:\n"
                        + shown[-OUTPUT_TAIL_CHARS:]
                    )
                with open(result_file, encoding="utf-8") as handle:
                    outcome: dict[str, Any] = json.load(handle)
            finally:
                await self._release(terminal)
        if "result" in outcome:
            result: dict[str, Any] = outcome["result"]
            return result
        kind = outcome.get("kind")
        raise ToolError(
            str(outcome.get("error")),
            kind=cast(ErrorKind, kind) if kind in ERROR_KINDS else "execution_error",
        )

    async def _wait(self, terminal: str, tag: str) -> None:
        try:
            await self.host.wait_for_exit(terminal)
        except asyncio.CancelledError:
            # The run was stopped: the runner kills the command (and what it began) when it is
            # killed gently; whatever outlived a harder kill carries our tag. The cancellation
            # goes on whatever the editor answers.
            try:
                await self.host.kill(terminal)
            except TerminalError as exc:
                log.warning("the editor could not kill terminal %s: %s", terminal, exc)
            finally:
                await asyncio.to_thread(kill_tagged_processes, tag)
            raise
        except TerminalError as exc:
            await asyncio.to_thread(kill_tagged_processes, tag)
            raise ToolError(f"the editor lost the terminal: {exc}") from None

    async def _output(self, terminal: str) -> str:
        try:
            return await self.host.output(terminal)
        except TerminalError as exc:
            return f"(its output could not be read: {exc})"

    async def _release(self, terminal: str) -> None:
        try:
            await self.host.release(terminal)
        except TerminalError:
            pass  # the editor has let go of it already; nothing of ours is left running


def runner_environment() -> dict[str, str]:
    """What the runner needs on top of the editor's environment: this package, importable."""
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(cleveragents.__file__)))
    inherited = os.environ.get("PYTHONPATH")
    return {"PYTHONPATH": os.pathsep.join(filter(None, [package_parent, inherited]))}


def _check_directory(sandbox: Sandbox, where: SandboxPath) -> None:
    with closing_fd(sandbox.open_directory(where)):
        pass  # a real directory inside, reached without links
