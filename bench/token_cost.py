"""What a real-sized task costs in tokens and dollars, with prompt caching on and off.

A scripted 25-iteration coding task runs on a copy of this project's own sources (server/):
it lists and globs the tree, reads several of the largest files, greps, runs a command that
prints about 300 KB, and writes a file. The model is a script of tool calls served by the
fake Anthropic and OpenAI servers (tests/support/fake_anthropic.py,
tests/support/fake_openai.py), so the
rest is the product's real path: the runtime (result budget, context guard) -> the provider
-> the official SDK -> HTTP -> a server that counts tokens, enforces the window and runs a
prompt cache by the service's documented rules (the fakes' docstrings give the rules and
the fixed token estimate: 4 characters of JSON a token).

Four runs: Claude (claude-sonnet-4-5) with caching on, the same with caching off, OpenAI
(gpt-4.1, which caches identical prefixes by itself), and Claude with caching on in a 40k
window the task outgrows, so the context guard elides. For each: model calls, input tokens
(all, uncached, written to and read from the cache), billable input (input tokens at the
uncached input price that cost the same), output, USD at the runtime's price table
(tool/models.py), the largest request, the share of input read from the cache, and how many
results were elided in the last request.

Targets: with caching, the Claude bill is at most 0.25x the uncached one; no request
exceeds the model's window (none refused, the largest within it).

    python bench/token_cost.py           # table and PASS/MISS lines
    python bench/token_cost.py --json    # machine-readable
    python bench/token_cost.py --quick   # 9 model calls instead of 25 (the smoke test)

A bench reports; it never fails the build: the exit status is 0 unless something crashes.
A run that does not do the task (a failed tool call, no final answer, the file not
written) crashes it, so a cheap run that does the wrong thing cannot score.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # `support`: the fake servers

from cleveragents.assembly import build_runtime  # noqa: E402
from cleveragents.providers.anthropic import AnthropicCaller  # noqa: E402
from cleveragents.providers.openai import OpenAICaller  # noqa: E402
from cleveragents.tool import ContextPolicy, ToolActorContext, ToolCallRunResult  # noqa: E402
from cleveragents.tool.models import context_window_for, price_for  # noqa: E402
from cleveragents.toolsets import build_registry  # noqa: E402
from support import fake_anthropic, fake_openai  # noqa: E402

CLAUDE = "claude-sonnet-4-5"
GPT = "gpt-4.1"
SMALL_WINDOW = 40_000
"""A window the task outgrows (a local model's, say): the context guard has to elide."""
MAX_OUTPUT_TOKENS = 8_000
BILL_TARGET = 0.25
LONG_BILL_TARGET = 0.13
LONG_STEPS = 99
"""The long variant: 99 tool calls, the 100th model turn answers."""
QUICK_LONG_STEPS = 19
QUICK_STEPS = 7
POLICIES: dict[str, ContextPolicy] = {
    "at the limit": ContextPolicy.at_the_limit(),
    "cache-priced": ContextPolicy(),
}
"""Today's and the new context policy (tool/context_guard.py), by the names printed."""
NOTES = "NOTES.md"
PROMPT = (
    "Survey this Python package for a new maintainer: how a run flows from the CLI and the "
    "daemon through the runtime to the tools, where errors are handled, and what the test "
    f"surface looks like. Read what you need, then write your findings to {NOTES}."
)
# About 300 KB of real output: the package's sources, concatenated.
BIG_COMMAND = "find . -name '*.py' -print0 | sort -z | xargs -0 cat | head -c 307200"


@dataclass(frozen=True)
class Step:
    """One model turn: a sentence of text and one tool call."""

    say: str
    tool: str
    arguments: dict[str, Any]


def task(sources: Path) -> list[Step]:
    """The scripted task: 24 tool calls (the 25th model turn answers)."""
    largest = sorted(
        (p for p in sources.rglob("*.py") if "__pycache__" not in p.parts),
        key=lambda p: (-p.stat().st_size, str(p)),
    )
    files = [str(p.relative_to(sources)) for p in largest[:10]]

    def read(n: int, **window: int) -> Step:
        return Step(f"Reading {files[n]}.", "read_file", {"path": files[n], **window})

    def grep(pattern: str) -> Step:
        return Step(f"Searching for {pattern!r}.", "grep", {"pattern": pattern, "path": "."})

    return [
        Step("Let me look at the layout.", "list_dir", {"path": "."}),
        Step("Listing the Python files.", "glob", {"pattern": "**/*.py"}),
        read(0),
        read(1),
        grep(r"class \w+"),
        read(2),
        grep(r"def run"),
        Step("Everything at once, to see its size.", "run_command", {"command": BIG_COMMAND}),
        read(3),
        grep(r"import asyncio"),
        read(4),
        grep(r"TODO|FIXME|XXX"),
        read(5),
        Step("The package markers.", "glob", {"pattern": "**/__init__.py"}),
        read(6),
        grep(r"raise \w+Error"),
        read(7, offset=200, limit=200),
        Step(
            "Line counts.",
            "run_command",
            {"command": "wc -l $(find . -name '*.py' | sort) | tail -n 40"},
        ),
        read(8),
        grep(r"async def "),
        read(9),
        Step("The core package.", "list_dir", {"path": "cleveragents/tool"}),
        read(0, offset=400, limit=300),
        Step(
            "Writing the notes.",
            "write_file",
            {"path": NOTES, "content": notes(files)},
        ),
    ]


def long_task(sources: Path, calls: int = LONG_STEPS) -> list[Step]:
    """A longer review of the same tree: `calls` tool calls (files read whole and in part,
    greps over the tree, globs, files printed by a command), then the notes. Its results
    add up to about twice a 200k window."""
    modules = sorted(
        (p for p in sources.rglob("*.py") if "__pycache__" not in p.parts),
        key=lambda p: (-p.stat().st_size, str(p)),
    )
    files = [str(p.relative_to(sources)) for p in modules]
    folders = sorted({str(Path(f).parent) for f in files})
    patterns = [
        r"class \w+Error",
        r"def __init__",
        r"async def \w+",
        r"raise ValueError",
        r"return None",
        r"import json",
        r"@dataclass",
        r"TODO|FIXME",
        r"logging\.getLogger",
        r"except \w+Error",
        r"self\._lock",
        r"os\.environ",
    ]
    steps: list[Step] = []
    n = 0
    while len(steps) < calls - 1:
        name = files[n % len(files)]
        other = files[(n * 7 + 3) % len(files)]
        kind = n % 6
        if kind in (0, 2):
            path = name if kind == 0 else other
            steps.append(Step(f"Reading {path}.", "read_file", {"path": path}))
        elif kind == 1:
            pattern = patterns[(n // 6) % len(patterns)]
            steps.append(
                Step(f"Searching for {pattern!r}.", "grep", {"pattern": pattern, "path": "."})
            )
        elif kind == 3:
            steps.append(
                Step(f"{name} and {other}.", "run_command", {"command": f"cat {name} {other}"})
            )
        elif kind == 4:
            folder = folders[(n // 6) % len(folders)]
            steps.append(Step(f"The files in {folder}.", "glob", {"pattern": f"{folder}/*.py"}))
        else:
            lines = sum(1 for _ in (sources / other).open(encoding="utf-8"))
            offset = 1 + (n * 37) % max(1, lines - 1)
            steps.append(
                Step(
                    f"Part of {other}.",
                    "read_file",
                    {"path": other, "offset": offset, "limit": 300},
                )
            )
        n += 1
    steps.append(
        Step("Writing the notes.", "write_file", {"path": NOTES, "content": notes(files[:10])})
    )
    return steps


def notes(files: list[str]) -> str:
    lines = ["# Notes for a new maintainer", "", "Largest modules, read in this survey:", ""]
    lines += [f"- `{name}`" for name in files]
    lines += ["", "A run: CLI or daemon -> ToolCallingRuntime -> provider -> tools.", ""]
    return "\n".join(lines) * 3


FINAL = "The survey is done; the notes are in NOTES.md."


def output_tokens(step: Step | None) -> int:
    """What the model would have written: about 4 characters a token, plus its framing."""
    text = FINAL if step is None else step.say + json.dumps(step.arguments)
    return 20 + len(text) // 4


def anthropic_replies(steps: list[Step]) -> list[fake_anthropic.StreamReply]:
    replies = [
        fake_anthropic.StreamReply(
            [
                fake_anthropic.Text([step.say]),
                fake_anthropic.ToolUse(f"toolu_{n:02d}", step.tool, [json.dumps(step.arguments)]),
            ],
            stop_reason="tool_use",
            output_tokens=output_tokens(step),
        )
        for n, step in enumerate(steps, 1)
    ]
    final = fake_anthropic.StreamReply(
        [fake_anthropic.Text([FINAL])], output_tokens=output_tokens(None)
    )
    return [*replies, final]


def openai_replies(steps: list[Step]) -> list[fake_openai.StreamReply]:
    replies = [
        fake_openai.ChunkScript()
        .text(step.say)
        .tool_call_start(0, f"call_{n:02d}", step.tool)
        .tool_arguments(0, json.dumps(step.arguments))
        .finish("tool_calls")
        .usage(None, output_tokens(step))
        .reply()
        for n, step in enumerate(steps, 1)
    ]
    final = (
        fake_openai.ChunkScript()
        .text(FINAL)
        .finish("stop")
        .usage(None, output_tokens(None))
        .reply()
    )
    return [*replies, final]


@dataclass
class RunFigures:
    label: str
    model: str
    window: int
    calls: int
    elided_messages: int
    input_tokens: int
    uncached_tokens: int
    cache_write_tokens: int
    cache_read_tokens: int
    output_tokens: int
    billable_input_tokens: float
    cost_usd: float
    peak_request_tokens: int
    refused_requests: int
    cache_hit_share: float
    cost_without_cache_usd: float


def figures(
    label: str,
    caller: Any,
    result: ToolCallRunResult,
    counted: list[Any],
    refused: int,
    elided: int,
) -> RunFigures:
    model = caller.model
    price = price_for(model)
    window = caller.context_window or context_window_for(model)
    if price is None or window is None or result.cost_usd is None:
        raise RuntimeError(f"no price or window for {model}: the bench needs both")
    usage = result.usage
    if [u.input_tokens for u in result.iteration_usage] != [c.total for c in counted]:
        raise RuntimeError(f"{label}: the usage the provider parsed is not what the server counted")
    billable = (
        usage.uncached_input_tokens * price.input
        + usage.cache_write_tokens * price.cache_write
        + usage.cache_read_tokens * price.cache_read
    ) / price.input
    plain = (usage.input_tokens * price.input + usage.output_tokens * price.output) / 1e6
    return RunFigures(
        label=label,
        model=model,
        window=window,
        calls=len(result.iteration_usage),
        elided_messages=elided,
        input_tokens=usage.input_tokens,
        uncached_tokens=usage.uncached_input_tokens,
        cache_write_tokens=usage.cache_write_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        output_tokens=usage.output_tokens,
        billable_input_tokens=billable,
        cost_usd=result.cost_usd,
        peak_request_tokens=max(c.total for c in counted),
        refused_requests=refused,
        cache_hit_share=usage.cache_read_tokens / max(1, usage.input_tokens),
        cost_without_cache_usd=plain,
    )


def check_done(label: str, result: ToolCallRunResult, steps: list[Step], workspace: Path) -> None:
    failed = [r for r in result.tool_call_history if not r.success]
    problems = []
    if result.stop_reason != "final_answer" or result.iterations != len(steps) + 1:
        problems.append(f"stopped with {result.stop_reason} after {result.iterations} iterations")
    if failed:
        problems.append(f"{len(failed)} failed calls, first: {failed[0].error}")
    wrote = any(s.tool == "write_file" for s in steps)
    if wrote and not (workspace / NOTES).is_file():
        problems.append(f"{NOTES} was not written")
    if problems:
        raise RuntimeError(f"{label}: the task was not done: {'; '.join(problems)}")


async def run_task(
    label: str,
    steps: list[Step],
    sources: Path,
    make_caller: Callable[[str], Any],
    serve: Any,
    policy: ContextPolicy | None = None,
) -> RunFigures:
    with tempfile.TemporaryDirectory(prefix="token-cost-") as tmp:
        workspace = Path(tmp) / "server"
        shutil.copytree(sources, workspace, ignore=shutil.ignore_patterns("__pycache__"))
        with serve as server:
            caller = make_caller(server.base_url)
            try:
                runtime = build_runtime(
                    caller,
                    build_registry(plugins=False),
                    max_iterations=len(steps) + 1,
                    context_policy=policy,
                )
                context = ToolActorContext(sandbox_root=str(workspace))
                result = await runtime.arun_tool_loop(PROMPT, context)
            finally:
                await caller.aclose()
            counted = [r.usage for r in server.requests if r.usage is not None]
            refused = len(server.requests) - len(counted)
            elided = sum(  # in the last request; the system prompt quotes the note too
                json.dumps(m).count("elided to fit the context")
                for m in server.requests[-1].body["messages"]
                if m["role"] != "system"
            )
        check_done(label, result, steps, workspace)
        return figures(label, caller, result, counted, refused, elided)


def claude(cache: bool, window: int | None = None) -> Callable[[str], AnthropicCaller]:
    """A Claude caller for the fake at a URL, caching on or off, in `window` if given."""
    return lambda url: AnthropicCaller(
        CLAUDE,
        api_key=fake_anthropic.API_KEY,
        base_url=url,
        max_tokens=MAX_OUTPUT_TOKENS,
        max_retries=0,
        cache=cache,
        context_window=window,
    )


async def measure(quick: bool) -> list[RunFigures]:
    sources = ROOT / "server"
    steps = task(sources)
    if quick:
        steps = [*steps[:QUICK_STEPS], steps[-1]]
    claude_window = context_window_for(CLAUDE)
    gpt_window = context_window_for(GPT)

    def claude_server(window: int | None = claude_window) -> fake_anthropic.FakeAnthropic:
        server = fake_anthropic.FakeAnthropic(context_window=window)
        server.push(*anthropic_replies(steps))
        return server

    def gpt(url: str) -> OpenAICaller:
        return OpenAICaller(GPT, api_key="sk-bench", base_url=url, max_tokens=MAX_OUTPUT_TOKENS)

    gpt_server = fake_openai.FakeOpenAIServer(context_window=gpt_window)
    gpt_server.enqueue(*openai_replies(steps))
    return [
        await run_task("claude, cache on", steps, sources, claude(True), claude_server()),
        await run_task("claude, cache off", steps, sources, claude(False), claude_server()),
        await run_task("gpt, automatic cache", steps, sources, gpt, gpt_server),
        await run_task(
            f"claude, {SMALL_WINDOW // 1000}k window",
            steps,
            sources,
            claude(True, SMALL_WINDOW),
            claude_server(SMALL_WINDOW),
        ),
    ]


async def measure_long(quick: bool) -> list[RunFigures]:
    """The long variant under each policy, with Claude's cache on and off."""
    sources = ROOT / "server"
    steps = long_task(sources, QUICK_LONG_STEPS if quick else LONG_STEPS)
    runs = []
    for name, policy in POLICIES.items():
        for cache in (True, False):
            server = fake_anthropic.FakeAnthropic(context_window=context_window_for(CLAUDE))
            server.push(*anthropic_replies(steps))
            label = f"{name}, cache {'on' if cache else 'off'}"
            runs.append(await run_task(label, steps, sources, claude(cache), server, policy))
    return runs


@dataclass
class Verdict:
    target: bool
    met: bool
    text: str

    def line(self) -> str:
        tag = ("PASS" if self.met else "MISS") if self.target else "INFO"
        return f"{tag}  {self.text}"


def verdicts(runs: list[RunFigures]) -> list[Verdict]:
    on, off, gpt, small = runs
    ratio = on.cost_usd / off.cost_usd
    found = [
        Verdict(
            True,
            ratio <= BILL_TARGET,
            f"Claude bill with caching / without: {ratio:.3f}x (${on.cost_usd:.4f} / "
            f"${off.cost_usd:.4f}; target <= {BILL_TARGET:g}x)",
        )
    ]
    for run in runs:
        fits = run.refused_requests == 0 and run.peak_request_tokens <= run.window
        found.append(
            Verdict(
                True,
                fits,
                f"{run.label}: largest request {run.peak_request_tokens:,} tokens, window "
                f"{run.window:,}, {run.refused_requests} refused (target: none over the window)",
            )
        )
    found.append(
        Verdict(
            False,
            True,
            f"{gpt.label}: bill / the same tokens uncached: "
            f"{gpt.cost_usd / gpt.cost_without_cache_usd:.3f}x, "
            f"{gpt.cache_hit_share:.0%} of input read from the cache",
        )
    )
    found.append(
        Verdict(
            False,
            True,
            f"{small.label}: bill / the same tokens uncached: "
            f"{small.cost_usd / small.cost_without_cache_usd:.3f}x (each elision rewrites the "
            "cache from the elided message on)",
        )
    )
    return found


def long_verdicts(runs: list[RunFigures]) -> list[Verdict]:
    """Per policy: the bill with caching against the task's uncached bill (today's policy,
    cache off: what the same task cost before either caching or the policy), against its
    own uncached bill, and whether every request fitted. The run answering is checked by
    `check_done` (a run that does not answer crashes the bench)."""
    by_label = {run.label: run for run in runs}
    baseline = by_label["at the limit, cache off"]
    found = []
    for name in POLICIES:
        on, off = by_label[f"{name}, cache on"], by_label[f"{name}, cache off"]
        ratio = on.cost_usd / baseline.cost_usd
        found.append(
            Verdict(
                True,
                ratio <= LONG_BILL_TARGET,
                f"{on.calls} calls, policy {name}: bill with caching / the task uncached: "
                f"{ratio:.3f}x (${on.cost_usd:.4f} / ${baseline.cost_usd:.4f}; target <= "
                f"{LONG_BILL_TARGET:g}x); the run answered",
            )
        )
        found.append(
            Verdict(
                False,
                True,
                f"{on.calls} calls, policy {name}: bill with caching / this policy uncached: "
                f"{on.cost_usd / off.cost_usd:.3f}x (${on.cost_usd:.4f} / ${off.cost_usd:.4f})",
            )
        )
        fits = all(r.refused_requests == 0 and r.peak_request_tokens <= r.window for r in (on, off))
        found.append(
            Verdict(
                True,
                fits,
                f"{on.calls} calls, policy {name}: largest request "
                f"{max(on.peak_request_tokens, off.peak_request_tokens):,} tokens, window "
                f"{on.window:,}, {on.refused_requests + off.refused_requests} refused "
                "(target: none over the window)",
            )
        )
    return found


def table(runs: list[RunFigures]) -> str:
    header = (
        f"{'run':22} {'calls':>5} {'input':>10} {'uncached':>9} {'cache wr':>9} "
        f"{'cache rd':>10} {'billable':>10} {'output':>7} {'USD':>8} {'peak req':>9} {'hits':>5} "
        f"{'elided':>6}"
    )
    rows = [header]
    for r in runs:
        rows.append(
            f"{r.label:22} {r.calls:>5} {r.input_tokens:>10,} {r.uncached_tokens:>9,} "
            f"{r.cache_write_tokens:>9,} {r.cache_read_tokens:>10,} "
            f"{r.billable_input_tokens:>10,.0f} {r.output_tokens:>7,} {r.cost_usd:>8.4f} "
            f"{r.peak_request_tokens:>9,} {r.cache_hit_share:>5.0%} {r.elided_messages:>6}"
        )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print machine-readable results")
    parser.add_argument("--quick", action="store_true", help="a short task (the smoke test)")
    args = parser.parse_args()
    runs = asyncio.run(measure(args.quick))
    long_runs = asyncio.run(measure_long(args.quick))
    calls = runs[0].calls
    found = verdicts(runs)
    found_long = long_verdicts(long_runs)
    if args.json:
        print(
            json.dumps(
                {
                    "runs": [asdict(r) for r in runs],
                    "verdicts": [asdict(v) | {"line": v.line()} for v in found],
                    "long_runs": [asdict(r) for r in long_runs],
                    "long_verdicts": [asdict(v) | {"line": v.line()} for v in found_long],
                },
                indent=2,
            )
        )
        return
    quick = " (--quick)" if args.quick else ""
    print(f"Scripted task on a copy of server/: {calls} model calls{quick}; tokens as the fake")
    print("servers count them.")
    print("billable = input tokens at the uncached price costing the same (Claude: a cache")
    print("write is 1.25x, a read 0.1x; OpenAI: a cached read 0.25x for gpt-4.1).\n")
    print(table(runs))
    print()
    for verdict in found:
        print(verdict.line())
    print()
    print(f"The long variant: {long_runs[0].calls} model calls on the same tree, Claude, 200k")
    print("window, under each context policy (tool/context_guard.py): 'at the limit' elides")
    print("only when the next request would not fit; 'cache-priced' clears all but the newest")
    print("tool results in one step once a request passes its trigger.\n")
    print(table(long_runs))
    print()
    for verdict in found_long:
        print(verdict.line())


if __name__ == "__main__":
    main()
