"""The terminal front of the `cleveragents` command: run a loop, list tools, read the history.

`serve` is not ours: the launcher (`launcher.py`) hands it to the daemon or ACP mode.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import re
import signal
import sys
from collections.abc import Callable
from typing import Any

from . import __version__
from .batch.command import add_batch_parser, batch_main
from .tool.policy import AUTOMATION_PROFILES

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_LIMIT = 3
EXIT_CANCELLED = 130


TRUST_HELP = (
    "start the sandbox's .mcp.json servers without asking (also CLEVERAGENTS_TRUST_WORKSPACE=1); "
    "otherwise they start once you trust the file at the terminal"
)


def _prompt_text(value: str) -> str:
    """A prompt is text: bytes a shell passed that are not UTF-8 (kept by Python as lone
    surrogates, which no JSON answer, provider or history can hold) become U+FFFD."""
    return value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cleveragents", description="A tool-calling agent runtime you drive from your editor."
    )
    parser.add_argument("--version", action="version", version=f"cleveragents {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser("run", help="run a tool loop on a prompt, showing each tool call")
    run.add_argument("prompt", type=_prompt_text, help="what the agent should do")
    run.add_argument(
        "--sandbox",
        metavar="DIR",
        help="the project folder the tools may touch, nothing outside it (default: here)",
    )
    run.add_argument(
        "--provider",
        choices=("offline", "replay", "anthropic", "openai"),
        help="LLM provider (default: $CLEVERAGENTS_PROVIDER, else offline)",
    )
    run.add_argument("--model", help="model name for the provider")
    run.add_argument("--base-url", help="provider base URL (OpenAI-compatible servers, proxies)")
    run.add_argument("--script", metavar="FILE", help="replay provider: the JSON script to play")
    run.add_argument(
        "--no-prompt-cache",
        action="store_true",
        help="send no prompt-cache breakpoints (also: CLEVERAGENTS_PROMPT_CACHING=0)",
    )
    run.add_argument(
        "--no-project-instructions",
        action="store_true",
        help="do not send the workspace's AGENTS.md / CLAUDE.md files nor the user's own to "
        "the model (also: CLEVERAGENTS_PROJECT_INSTRUCTIONS=0)",
    )
    run.add_argument(
        "--tool-result-budget",
        type=_result_budget,
        metavar="CHARS",
        help="characters of one tool result the model is shown (default: "
        "$CLEVERAGENTS_TOOL_RESULT_BUDGET, else 32000)",
    )
    run.add_argument(
        "--context-window",
        type=_context_window,
        metavar="TOKENS",
        help="the model's context window, for models the table does not know (default: "
        "$CLEVERAGENTS_CONTEXT_WINDOW, else the table's, else 128000)",
    )
    run.add_argument(
        "--prices",
        type=_prices_file,
        metavar="FILE",
        help='a JSON file of prices by model, USD per million tokens: {"my-model": {"input": '
        '0.5, "output": 1.5, "cacheWrite": 0.6, "cacheRead": 0.05}} (also: $CLEVERAGENTS_PRICES)',
    )
    run.add_argument(
        "--file",
        dest="files",
        action="append",
        default=[],
        type=_resource,
        metavar="PATH[:START-END]",
        help="attach a workspace file (or lines START to END of it) to the prompt (repeatable)",
    )
    run.add_argument(
        "--image",
        dest="images",
        action="append",
        default=[],
        metavar="PATH",
        help="attach a PNG, JPEG, GIF or WebP image to the prompt (repeatable; docs/images.md)",
    )
    _add_command_flags(run)
    run.add_argument(
        "--max-iterations",
        type=int,
        default=25,
        metavar="N",
        help="stop after N model calls (default 25)",
    )
    run.add_argument(
        "--profile",
        choices=AUTOMATION_PROFILES,
        default="ask",
        help="what may run without asking (default: ask)",
    )
    run.add_argument(
        "--tools",
        action="append",
        default=[],
        metavar="MODULE",
        help="a Python module whose @tool functions to add (repeatable)",
    )
    run.add_argument("--no-builtins", action="store_true", help="do not offer the built-in tools")
    run.add_argument(
        "--json",
        action="store_true",
        help="print the whole result, with the tool call history, as JSON",
    )
    run.add_argument(
        "--history", metavar="PATH", help="run history database (default: in the user data folder)"
    )
    run.add_argument("--no-history", action="store_true", help="do not store this run")
    run.add_argument(
        "--continue",
        dest="continue_from",
        metavar="RUN_ID",
        help="continue the conversation of an earlier run",
    )
    run.add_argument("--trust-workspace", action="store_true", help=TRUST_HELP)

    runs = commands.add_parser(
        "runs",
        help="list past runs, show one, undo one (restore), or look after the checkpoints",
        description="list: past runs and restores, newest first. show ID: a run with its tool "
        "calls, checkpoints and changed files. restore ID: put the run's folder back as it was "
        "before the run (or before --iteration N); a restore's own ID undoes it. disk: the disk "
        "the checkpoints take. prune-checkpoints: drop checkpoints of runs the history no longer "
        "has (and, with --older-than, older ones), then pack what is left.",
    )
    runs.add_argument(
        "action",
        nargs="?",
        choices=("list", "show", "restore", "disk", "prune-checkpoints"),
        default="list",
    )
    runs.add_argument("run_id", nargs="?", help="the run to show or restore")
    runs.add_argument("--history", metavar="PATH", help="run history database")
    runs.add_argument("--limit", type=int, default=20, help="how many runs to list (default 20)")
    runs.add_argument("--batch", metavar="NAME", help="list only the runs of this batch")
    runs.add_argument("--json", action="store_true", help="print as JSON")
    runs.add_argument(
        "--iteration",
        type=int,
        metavar="N",
        help="restore: go back to before iteration N of the run (default: undo the whole run)",
    )
    runs.add_argument(
        "--dry-run", action="store_true", help="restore: list what would change, change nothing"
    )
    runs.add_argument(
        "--yes", "-y", action="store_true", help="restore: do not ask for confirmation"
    )
    runs.add_argument(
        "--older-than",
        type=float,
        metavar="DAYS",
        help="prune-checkpoints: also drop checkpoints of runs older than DAYS days",
    )

    # Listed for --help only: the launcher hands `serve ...` to the daemon or ACP mode, and
    # `chat` (or no command) to the terminal session.
    commands.add_parser(
        "serve", help="serve the JSON-RPC daemon (stdio or TCP) for editors and other clients"
    )
    commands.add_parser(
        "chat", help="a conversation in this folder (also `cleveragents` alone); see chat --help"
    )

    doctor = commands.add_parser(
        "doctor", help="show what run_command can reach here: mounts, variables, limits"
    )
    doctor.add_argument("--sandbox", metavar="DIR", help="the project folder (default: here)")
    doctor.add_argument("--json", action="store_true", help="print the report as JSON")
    _add_command_flags(doctor)

    tools = commands.add_parser("tools", help="list every tool with its source and schema")
    tools.add_argument("--sandbox", metavar="DIR", help="also list MCP tools of this folder")
    tools.add_argument("--tools", action="append", default=[], metavar="MODULE")
    tools.add_argument("--json", action="store_true", help="print the list as JSON")
    tools.add_argument("--trust-workspace", action="store_true", help=TRUST_HELP)

    trust = commands.add_parser(
        "trust", help="list or forget the answers about workspaces' .mcp.json servers"
    )
    trust.add_argument("action", nargs="?", choices=("list", "forget"), default="list")
    trust.add_argument("folder", nargs="?", help="forget: the workspace folder (default: here)")
    trust.add_argument("--json", action="store_true", help="print the list as JSON")
    add_batch_parser(commands)
    return parser


def _add_command_flags(parser: argparse.ArgumentParser) -> None:
    """What run_command may reach, over the CLEVERAGENTS_COMMAND_* settings."""
    parser.add_argument(
        "--command-read-path",
        dest="command_read_paths",
        action="append",
        default=[],
        type=_read_path,
        metavar="PATH",
        help="a folder run_command may also read, e.g. ~/.cargo (repeatable)",
    )
    parser.add_argument(
        "--command-env",
        dest="command_env",
        action="append",
        default=[],
        type=_variable,
        metavar="NAME",
        help="a variable (or pattern such as NODE_*) run_command also gets (repeatable)",
    )
    parser.add_argument(
        "--command-limit",
        dest="command_limits",
        action="append",
        default=[],
        type=_command_limit,
        metavar="NAME=VALUE",
        help="a limit on each command: processes, file-size-bytes, address-space-bytes, "
        "cpu-seconds, memory-bytes, tmp-size-bytes or min-free-disk-bytes, e.g. "
        "memory-bytes=8G or processes=unlimited (repeatable)",
    )
    parser.add_argument(
        "--allow-unconfined-commands",
        action="store_const",
        const=True,
        default=None,
        help="where bubblewrap is missing, run commands unconfined under full-auto without asking",
    )


# -- flag values: each checked here, so a bad one exits 2 naming the flag ----------------------
def _checked_int(check: Any) -> Any:
    def parse(text: str) -> int:
        try:
            value = int(text.replace("_", ""))
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        problem = check(value)
        if problem:
            raise argparse.ArgumentTypeError(problem)
        return value

    return parse


def _result_budget(text: str) -> int:
    from .service.settings import check_result_budget

    parsed: int = _checked_int(check_result_budget)(text)
    return parsed


def _context_window(text: str) -> int:
    from .service.settings import check_context_window

    parsed: int = _checked_int(check_context_window)(text)
    return parsed


def _prices_file(path: str) -> dict[str, Any]:
    from .service.settings import parse_prices

    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"cannot read {path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"{path} is not valid JSON: {exc}") from None
    try:
        parse_prices(data)
    except (TypeError, ValueError) as exc:
        raise argparse.ArgumentTypeError(f"{path}: {exc}") from None
    return dict(data)


def _resource(spec: str) -> Any:
    """`PATH`, `PATH:LINE` or `PATH:START-END` as a resource request."""
    import re

    from .service.resources import ResourceRequest

    path, _, lines = spec.rpartition(":")
    match = re.fullmatch(r"(\d+)(?:-(\d+))?", lines) if path else None
    if match is None:
        return ResourceRequest(spec)
    start = int(match.group(1))
    end = int(match.group(2)) if match.group(2) else start
    if start < 1 or end < start:
        raise argparse.ArgumentTypeError(
            f"{spec!r}: lines count from 1 and END may not come before START"
        )
    return ResourceRequest(path, start_line=start, end_line=end)


def _file_flag(requests: list[Any]) -> Any:
    """Names a --file flag in a problem, as the user wrote it."""

    def label(index: int | None, _: str) -> str:
        if index is None:
            return "--file"
        request = requests[index]
        lines = f":{request.start_line}-{request.end_line}" if request.start_line else ""
        return f"--file {request.path}{lines}"

    return label


def _read_path(text: str) -> str:
    if not (text.startswith("~") or os.path.isabs(text)):
        raise argparse.ArgumentTypeError(f"must be absolute or start with ~, got {text!r}")
    return text


def _variable(text: str) -> str:
    from .service.settings import check_variable_pattern

    problem = check_variable_pattern(text)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return text


def _command_limit(text: str) -> tuple[str, str]:
    from .service.settings import COMMAND_LIMITS
    from .workspace.command_policy import parse_limit

    name, equals, value = text.partition("=")
    key = name.strip().replace("-", "_")
    if not equals or key not in COMMAND_LIMITS:
        names = ", ".join(n.replace("_", "-") for n in COMMAND_LIMITS)
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE with NAME one of {names}")
    try:
        parse_limit(value, size=COMMAND_LIMITS[key][1], name=name)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return key, value.strip()


def _settings(args: argparse.Namespace, **options: Any) -> Any:
    """The run defaults from the flags over the environment (service/settings.py resolves
    both); ParamsError naming a bad environment variable."""
    from .service.settings import ClientOptions, CommandSettings, session_settings

    command = CommandSettings(
        read_paths=tuple(args.command_read_paths),
        env=tuple(args.command_env),
        limits=dict(args.command_limits),
        allow_unconfined=args.allow_unconfined_commands,
    )
    return session_settings(
        ClientOptions(command=command, **options), os.environ, options_name=_OPTIONS[:-1]
    ).defaults


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = _parser().parse_args(argv)
    try:
        if args.command == "run":
            return _run(args)
        if args.command == "tools":
            return _tools(args)
        if args.command == "runs":
            return _runs(args)
        if args.command in ("serve", "chat"):
            return _fail(f"`{args.command}` starts through the cleveragents command", EXIT_USAGE)
        if args.command == "doctor":
            return _doctor(args)
        if args.command == "trust":
            return _trust(args)
        if args.command == "batch":
            return batch_main(args)
    except KeyboardInterrupt:
        return EXIT_CANCELLED
    return EXIT_USAGE


def _fail(message: str, code: int = EXIT_ERROR) -> int:
    print(f"cleveragents: {message}", file=sys.stderr)
    return code


def _tools(args: argparse.Namespace) -> int:
    from rich.console import Console

    from .assembly import tool_rows
    from .toolsets import ToolLoadError, build_registry

    try:
        registry = build_registry(args.tools)
        if args.sandbox:
            sandbox, problem = _sandbox_problem(args.sandbox)
            if problem is not None:
                return _fail(problem, EXIT_USAGE)
            console = Console(stderr=True)
            trust = _mcp_trust(args, console)
            asyncio.run(_add_mcp_tools_once(registry, sandbox, trust, console))
    except ToolLoadError as exc:
        return _fail(str(exc))
    except ValueError as exc:  # a malformed CLEVERAGENTS_TRUST_WORKSPACE
        return _fail(str(exc), EXIT_USAGE)
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


def _doctor(args: argparse.Namespace) -> int:
    from .service.errors import ParamsError
    from .workspace.command_policy import CommandPolicy
    from .workspace.doctor import command_policy_report, render_report

    sandbox = os.path.realpath(args.sandbox or os.getcwd())
    if not os.path.isdir(sandbox):
        return _fail(f"sandbox {args.sandbox!r} is not a folder", EXIT_USAGE)
    try:
        policy = _settings(args).command_policy or CommandPolicy.from_environment()
        report = command_policy_report(policy, sandbox)
    except (ValueError, ParamsError) as exc:  # a malformed CLEVERAGENTS_* setting
        return _fail(str(exc), EXIT_USAGE)
    report["mcp"] = _workspace_trust_report(sandbox)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(render_report(report))
        print(_render_workspace_trust(report["mcp"]))
    return EXIT_OK


def _workspace_trust_report(sandbox: str) -> dict[str, Any]:
    """Whether the sandbox's `.mcp.json` would start servers on the next run, and why."""
    from .mcp import McpConfigError, read_mcp_config
    from .service.settings import ENV_TRUST_WORKSPACE, env_flag
    from .service.trust import TrustStore, trust_request

    try:
        config = read_mcp_config(sandbox)
    except McpConfigError as exc:
        return {"config": None, "servers": [], "status": "error", "error": str(exc)}
    request = trust_request(sandbox, config)
    servers = request.describe()
    if not config.servers:
        status = "none"
    elif env_flag(os.environ, ENV_TRUST_WORKSPACE)[0]:
        status = "pre-trusted"
    else:
        decision = TrustStore().decision(sandbox, request.config_hash)
        status = {True: "trusted", False: "declined", None: "not asked yet"}[decision]
    return {
        "config": config.path,
        "sha256": request.config_hash,
        "servers": servers,
        "status": status,
    }


def _render_workspace_trust(mcp: dict[str, Any]) -> str:
    status = mcp["status"]
    if status == "error":
        return f"\nWorkspace MCP servers: {mcp['error']}"
    if status == "none":
        return "\nWorkspace MCP servers: none (no .mcp.json servers here)"
    meaning = {
        "trusted": "trusted: they start with every run (cleveragents trust forget asks again)",
        "declined": "declined: runs go on without them (cleveragents trust forget asks again)",
        "not asked yet": "not trusted yet: the next run asks before starting them",
        "pre-trusted": "pre-trusted by $CLEVERAGENTS_TRUST_WORKSPACE: they start unasked",
    }[status]
    lines = [f"\nWorkspace MCP servers ({mcp['config']}, sha256 {mcp['sha256'][:12]}…): {meaning}"]
    lines.extend(f"  {line}" for line in mcp["servers"])
    return "\n".join(lines)


async def _add_mcp_tools_once(registry: Any, sandbox: str, trust: Any, console: Any) -> None:
    """Start the sandbox's MCP servers (once trusted) just long enough to list their tools."""
    from .mcp import add_mcp_tools

    async with await _sandbox_mcp(sandbox, trust) as toolset:
        add_mcp_tools(registry, toolset)
        _say_not_started(console, toolset)


def _mcp_trust(args: argparse.Namespace, console: Any, display: Any = None) -> Any:
    """The workspace-trust decision for this command: asked at the terminal (no terminal:
    not trusted), unless --trust-workspace or CLEVERAGENTS_TRUST_WORKSPACE pre-trusts.
    ValueError for a malformed CLEVERAGENTS_TRUST_WORKSPACE."""
    from .display import RunDisplay, TerminalTrustAsker
    from .service.settings import DEFAULT_APPROVAL_TIMEOUT_S, ENV_TRUST_WORKSPACE, env_flag
    from .service.trust import TrustStore, WorkspaceTrust

    from_env, problem = env_flag(os.environ, ENV_TRUST_WORKSPACE)
    if problem:
        raise ValueError(problem)
    interactive = sys.stdin.isatty() and console.is_terminal
    return WorkspaceTrust(
        TrustStore(),
        pre_trusted=args.trust_workspace or from_env,
        timeout_s=DEFAULT_APPROVAL_TIMEOUT_S,
        ask=TerminalTrustAsker(display or RunDisplay(console)) if interactive else None,
        cannot_ask=(
            "no terminal to ask at; run it at a terminal, or pass --trust-workspace "
            "(or set CLEVERAGENTS_TRUST_WORKSPACE=1) to trust it"
        ),
    )


async def _sandbox_mcp(sandbox: str, trust: Any) -> Any:
    """The sandbox's MCP toolset, with only what `trust` admits (open it with `async with`)."""
    from .mcp import McpToolset, read_mcp_config

    config = await trust.admit(sandbox, read_mcp_config(sandbox))
    return McpToolset(sandbox, config=config)


def _say_not_started(console: Any, toolset: Any) -> None:
    from rich.markup import escape

    for name, reason in toolset.skipped.items():
        console.print(f"[yellow]MCP server {escape(repr(name))} not started: {escape(reason)}[/]")


def _trust(args: argparse.Namespace) -> int:
    from datetime import datetime

    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from .service.trust import TrustStore

    store = TrustStore()
    if args.action == "forget":
        folder = os.path.realpath(args.folder or os.getcwd())
        removed = store.forget(folder)
        print(f"forgot {removed} answer(s) about {folder}; its next run asks again")
        return EXIT_OK
    decisions = store.decisions()
    if args.json:
        print(json.dumps([dataclasses.asdict(d) for d in decisions], indent=2))
        return EXIT_OK
    table = Table("folder", "answer", "when", "servers", "sha256")
    for decision in decisions:
        when = datetime.fromtimestamp(decision.decided_at).strftime("%Y-%m-%d %H:%M")
        answer = "trusted" if decision.trusted else "declined"
        # Text, not markup: a folder or server name such as `[/]` is shown as written.
        table.add_row(
            Text(decision.sandbox_root),
            answer,
            when,
            Text(", ".join(decision.servers)),
            decision.config_hash[:16],
        )
    Console().print(table)
    print(f"answers are kept in {store.path}")
    return EXIT_OK


def _open_history(path: str | None) -> Any:
    """--history, else $CLEVERAGENTS_HISTORY, else the data folder's (as every front)."""
    from .service.history import RunHistory
    from .service.settings import history_path

    return RunHistory(history_path(path))


def _restore_json(outcome: Any) -> str:
    """A restore as `cleveragents/restore` answers it (docs/json-output.md)."""
    from .protocol.converter import to_json_text
    from .protocol.translate import restore_result

    return to_json_text(restore_result(outcome))


def _runs(args: argparse.Namespace) -> int:
    from datetime import datetime

    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    try:
        history = _open_history(args.history)
    except Exception as exc:
        return _fail(f"cannot open the run history: {exc}")
    with history:
        if args.action in ("restore", "disk", "prune-checkpoints"):
            return _checkpoints_command(args, history)
        if args.action == "show":
            if not args.run_id:
                return _fail("runs show needs a RUN_ID", EXIT_USAGE)
            run = history.get_run(args.run_id)
            if run is None:
                return _fail(f"no run {args.run_id!r} in {history.path}")
            if args.json:  # the daemon's `cleveragents/getRun` shape (docs/json-output.md)
                from .protocol.converter import to_json_text
                from .protocol.translate import run_detail

                print(to_json_text(run_detail(run)))
                return EXIT_OK
            from .display import RunDisplay, attachment_lines, image_line, iteration_usage_line
            from .tool.events import ToolCallFinished
            from .tool.plan import last_plan

            console = Console()
            console.print(f"[bold]{run.run_id}[/] {run.status}  {run.sandbox_root}\n{run.prompt}")
            display = RunDisplay(console)
            for line in attachment_lines(run.resources):
                console.print(f"[dim]{escape(line)}[/]", highlight=False)
            for image in run.images:
                console.print(f"[dim]image {escape(image_line(image))}[/]", highlight=False)
            for record in run.records:
                display(ToolCallFinished(run.run_id, record))
            plan = last_plan(run.records)
            if plan is not None:
                display.show_plan(plan, "last plan")
            for entry in run.iteration_usage:
                console.print(
                    f"[dim]{iteration_usage_line(entry.iteration, entry.usage, entry.cost_usd)}[/]",
                    highlight=False,
                )
            display.show_result(
                run.content or run.error or "",
                run.stop_reason or run.status,
                run.iterations,
                len(run.records),
                run.usage,
                run.cost_usd,
            )
            display.show_checkpoints(run)
            return EXIT_OK
        rows = history.list_runs(limit=args.limit, batch_id=args.batch)
    if args.json:  # `cleveragents/runs`' `RunSummary` shape (docs/json-output.md)
        from .protocol.converter import to_json_text
        from .protocol.translate import run_summary

        print(to_json_text([run_summary(r) for r in rows]))
        return EXIT_OK
    from .display import format_cost, format_tokens

    # The id and the cost whole, on narrow terminals too; the other columns wrap.
    width = max((len(row.run_id) for row in rows), default=3)
    table = Table()
    table.add_column("run", no_wrap=True, min_width=width)
    table.add_column("cost", no_wrap=True)
    for name in ("started", "status", "calls", "tokens", "prompt"):
        table.add_column(name)
    for row in rows:
        started = datetime.fromtimestamp(row.started_at).strftime("%Y-%m-%d %H:%M")
        table.add_row(
            row.run_id,
            format_cost(row.cost_usd),
            started,
            row.status,
            str(row.tool_call_count),
            format_tokens(row.usage),
            # A batch run says which task it was: its prompt is the task's.
            escape(
                f"[{row.batch.task_id}@{row.batch.config}] {row.prompt}"[:60]
                if row.batch is not None
                else row.prompt[:60]
            ),
        )
    Console().print(table)
    return EXIT_OK


def _checkpoints_command(args: argparse.Namespace, history: Any) -> int:
    """`runs restore`, `runs disk` and `runs prune-checkpoints`."""
    from .service.errors import ErrorKind, ServiceError
    from .service.undo import Undo

    undo = Undo(history)
    try:
        if args.action == "restore":
            return _restore(args, undo)
        if args.action == "disk":
            return _disk(args, undo)
        return _prune_checkpoints(args, undo)
    except ServiceError as exc:
        if exc.kind is ErrorKind.INVALID_PARAMS:
            return _fail(_flag_problems(exc, lambda f: _FLAGS.get(f, f)), EXIT_USAGE)
        return _fail(exc.message)
    finally:
        undo.close()


def _restore(args: argparse.Namespace, undo: Any) -> int:
    from rich.console import Console

    from .display import show_file_changes

    if not args.run_id:
        return _fail("runs restore needs a RUN_ID", EXIT_USAGE)
    console = Console(stderr=args.json)
    preview = undo.restore(args.run_id, args.iteration, dry_run=True)
    what = (
        f"before iteration {args.iteration} of {args.run_id}"
        if args.iteration is not None
        else f"before {args.run_id}"
    )
    if not preview.changed_files:
        if args.json:
            print(_restore_json(preview))
        console.print(f"{preview.sandbox_root} is already as it was {what}: nothing to restore")
        return EXIT_OK
    console.print(f"Restoring {preview.sandbox_root} to how it was {what} changes:")
    show_file_changes(console, preview.changed_files)
    if args.dry_run:
        if args.json:
            print(_restore_json(preview))
        console.print("[dim]dry run: nothing was changed[/]")
        return EXIT_OK
    if not args.yes:
        if not sys.stdin.isatty():
            return _fail(
                "runs restore changes files: pass --yes to confirm (there is no terminal to "
                "ask at); nothing was changed",
                EXIT_USAGE,
            )
        try:
            answer = input(f"Restore these {len(preview.changed_files)} file(s)? [y/N] ")
        except EOFError:
            answer = ""
        if answer.strip().lower() not in ("y", "yes"):
            return _fail("not restored: nothing was changed")
    outcome = undo.restore(args.run_id, args.iteration)
    if args.json:
        print(_restore_json(outcome))
        return EXIT_OK
    console.print(f"Restored {len(outcome.changed_files)} file(s) in {outcome.sandbox_root}.")
    for kept in outcome.kept:
        console.print(f"[yellow]kept {kept.path}[/]: an ignored or too-large file is in the way")
    if outcome.restore_id is not None:
        console.print(
            f"Undo this restore with: cleveragents runs restore {outcome.restore_id}",
            highlight=False,
        )
    return EXIT_OK


def _disk(args: argparse.Namespace, undo: Any) -> int:
    usage = undo.disk_usage()
    if args.json:
        print(json.dumps({"total_bytes": usage.total_bytes, "by_sandbox": usage.by_sandbox}))
        return EXIT_OK
    print(f"checkpoints take {_size(usage.total_bytes)} in {undo.data_dir / 'checkpoints'}")
    for folder, size in sorted(usage.by_sandbox.items(), key=lambda item: -item[1]):
        print(f"  {_size(size):>10}  {folder}")
    return EXIT_OK


def _prune_checkpoints(args: argparse.Namespace, undo: Any) -> int:
    import time

    if args.older_than is not None and args.older_than < 0:
        return _fail("--older-than must not be negative", EXIT_USAGE)
    cutoff = time.time() - args.older_than * 86400 if args.older_than is not None else None
    result = undo.prune(cutoff)
    if args.json:
        print(
            json.dumps(
                {
                    "removed_checkpoints": result.removed_checkpoints,
                    "removed_repositories": result.removed_repositories,
                    "bytes_before": result.bytes_before,
                    "bytes_after": result.bytes_after,
                }
            )
        )
        return EXIT_OK
    print(
        f"removed {result.removed_checkpoints} checkpoint(s); checkpoints take "
        f"{_size(result.bytes_after)} (were {_size(result.bytes_before)})"
    )
    return EXIT_OK


def _size(count: int) -> str:
    if count < 1024:
        return f"{count} B"
    size = count / 1024
    for unit in ("KiB", "MiB"):
        if size < 1024:
            return f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"


def _sandbox_problem(given: str) -> tuple[str, str | None]:
    """The real path of --sandbox `given`, or why it cannot be the tools' folder: the core's
    check, the one the daemon and ACP mode use."""
    from .service.runs import check_sandbox_root

    sandbox, problem = check_sandbox_root(os.path.abspath(given))
    return sandbox, None if problem is None else f"--sandbox: {problem}"


# The core's field names as the command line names them, in a refused run's problems.
_FLAGS = {
    "sandbox_root": "--sandbox",
    "prompt": "the prompt",  # the one argument that is no flag
    "provider": "--provider",
    "max_iterations": "--max-iterations",
    "continue_from": "--continue",
    "tool_result_budget": "--tool-result-budget",
    "context_window": "--context-window",
    "model": "--model",
    "iteration": "--iteration",
}


class TerminalSink:
    """The CLI's half of a run (`RunManager.run`'s sink): the live view, and approvals and
    workspace trust asked at the terminal (none without one: those calls are denied and the
    servers are not started)."""

    cannot_ask_trust = (
        "no terminal to ask at; run it at a terminal, or pass --trust-workspace "
        "(or set CLEVERAGENTS_TRUST_WORKSPACE=1) to trust it"
    )

    def __init__(self, display: Any, interactive: bool) -> None:
        from .display import TerminalApprover, TerminalTrustAsker

        self.display = display
        self.interactive = interactive
        self._approver = TerminalApprover(display)
        self._trust_asker = TerminalTrustAsker(display)

    @property
    def approvals(self) -> bool:
        return self.interactive

    def run_observer(self, plan: Any) -> Any:
        return self.display

    async def ask_approval(self, request: Any) -> Any:
        return await self._approver(request)

    async def ask_trust(self, request: Any) -> bool | None:
        return await self._trust_asker(request) if self.interactive else None

    def run_tools(self, registry: Any, workspace_mcp: Any) -> Any:
        _say_not_started(self.display.console, workspace_mcp)
        return registry


def _run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from .display import RunDisplay
    from .providers import ProviderConfigError, resolve_provider_name
    from .service.errors import ErrorKind, ParamsError, ServiceError
    from .service.history import RunHistory
    from .service.image_inputs import ImageInput
    from .service.runs import RunManager, RunRequest
    from .service.settings import history_path
    from .tool.runtime import new_run_id
    from .toolsets import ToolLoadError, build_registry

    sandbox, problem = _sandbox_problem(args.sandbox or os.getcwd())
    if problem is not None:
        here = "" if args.sandbox else " (the current folder, as no --sandbox was given)"
        return _fail(problem + here, EXIT_USAGE)
    # With --json, stdout carries only the result; the live view goes to stderr.
    console = Console(stderr=args.json)
    try:
        provider = resolve_provider_name(args.provider)
    except ProviderConfigError as exc:
        return _fail(str(exc))
    try:
        settings = _settings(
            args,
            provider=provider,
            automation_profile=args.profile,
            max_iterations=args.max_iterations,
            tool_result_budget=args.tool_result_budget,
            context_window=args.context_window,
            prompt_caching=False if args.no_prompt_cache else None,
            project_instructions=False if args.no_project_instructions else None,
            prices=args.prices,
            trust_workspace=True if args.trust_workspace else None,
        )
    except ParamsError as exc:
        return _fail("; ".join(_option_flag(p) for p in exc.problems), EXIT_USAGE)
    try:
        registry = build_registry(
            args.tools, builtins=not args.no_builtins, command_policy=settings.command_policy
        )
    except (ToolLoadError, ValueError, RuntimeError) as exc:
        return _fail(str(exc))
    history = None
    if not args.no_history:
        try:
            # --history, else $CLEVERAGENTS_HISTORY, else the data folder's: as the servers.
            history = RunHistory(history_path(args.history))
        except Exception as exc:
            return _fail(f"cannot open the run history: {exc}")
    elif args.continue_from:
        return _fail("--continue needs the run history", EXIT_USAGE)
    if provider == "offline" and not args.json:
        console.print(
            "[yellow]No LLM provider configured: using the offline model (deterministic, no "
            "network).[/] Use --provider anthropic (with ANTHROPIC_API_KEY) or --provider openai."
        )
    display = RunDisplay(console)
    # Without a terminal nobody can answer, so calls that need approval are denied.
    sink = TerminalSink(display, sys.stdin.isatty() and console.is_terminal)
    run_id = new_run_id()
    request = RunRequest(
        prompt=args.prompt,
        sandbox_root=sandbox,
        model=args.model,
        base_url=args.base_url,
        replay_script=args.script,
        resources=tuple(args.files),
        images=tuple(ImageInput(path, path=path) for path in args.images),
        continue_from=args.continue_from,
        run_id=run_id,
    )

    async def go() -> Any:
        # The core's pipeline, as for the daemon and ACP mode; its checkpoints live next to
        # the history (a run that is not stored cannot be undone).
        manager = RunManager(registry, settings, history)
        loop = asyncio.get_running_loop()
        # First Ctrl-C stops the run gracefully (partial result kept); a second one kills.
        interrupts: list[bool] = []
        loop.add_signal_handler(
            signal.SIGINT, _second_interrupt_kills, loop, manager, run_id, interrupts
        )
        try:
            return await manager.run(request, sink)
        finally:
            loop.remove_signal_handler(signal.SIGINT)
            await manager.aclose()

    try:
        outcome = asyncio.run(go())
    except ServiceError as exc:
        display.stop()
        if exc.kind is ErrorKind.INVALID_PARAMS:
            flag = lambda f: _FLAGS.get(f, _file_flag_of(f, args.files))  # noqa: E731
            return _fail(_flag_problems(exc, flag), EXIT_USAGE)
        if exc.kind is ErrorKind.RUN_NOT_FOUND and args.continue_from:
            return _fail(f"no run {args.continue_from!r} to continue")
        return _fail(exc.message)
    finally:
        display.stop()
        if history is not None:
            history.close()
    result = outcome.result
    if args.json:  # the daemon's `RunResult` shape (docs/json-output.md)
        from .protocol.converter import to_json_text
        from .protocol.translate import run_result

        print(to_json_text(run_result(outcome, args.continue_from)))
    else:
        display.show_result(
            result.content,
            result.stop_reason,
            result.iterations,
            len(result.tool_call_history),
            result.usage,
            result.cost_usd,
        )
        display.show_changes(run_id, outcome.changed_files, outcome.checkpoint_warning)
    if result.stop_reason == "cancelled":
        return EXIT_CANCELLED
    return EXIT_LIMIT if result.terminated_by_limit else EXIT_OK


_OPTIONS = "the command line."  # what `_settings` calls the flags, for service/settings.py
_OPTION_FLAGS = {"automationProfile": "--profile", "commandReadPaths": "--command-read-path"}


def _option_flag(problem: str) -> str:
    """A settings problem about a flag (`the command line.maxIterations: ...`) naming the flag
    as the user typed it (`--max-iterations: ...`); one about a variable as it is."""
    if not problem.startswith(_OPTIONS):
        return problem
    option, _, rest = problem[len(_OPTIONS) :].partition(":")
    name = re.split(r"[.\[]", option, maxsplit=1)[0]
    flag = _OPTION_FLAGS.get(name) or "--" + re.sub(r"([A-Z])", r"-\1", name).lower()
    return f"{flag}:{rest}"


def _flag_problems(error: Any, flag: Callable[[str], str]) -> str:
    """An INVALID_PARAMS error's problems, each field named as the command line names it."""
    from .service.errors import rename_field

    return "; ".join(rename_field(problem, flag) for problem in error.problems)


def _file_flag_of(field: str, requests: list[Any]) -> str:
    """`resources[0].path` as the --file flag the user wrote; other fields as they are."""
    import re

    match = re.fullmatch(r"resources(?:\[(\d+)\]\.\w+)?", field)
    if match is None:
        return field
    flag: str = _file_flag(requests)(int(match.group(1)) if match.group(1) else None, "")
    return flag


def _second_interrupt_kills(
    loop: asyncio.AbstractEventLoop, manager: Any, run_id: str, interrupts: list[bool]
) -> None:
    if interrupts:
        loop.remove_signal_handler(signal.SIGINT)
        os.kill(os.getpid(), signal.SIGINT)
        return
    interrupts.append(True)
    print("\ncleveragents: stopping the run (Ctrl-C again to kill)", file=sys.stderr)
    manager.cancel(run_id)


if __name__ == "__main__":
    sys.exit(main())
