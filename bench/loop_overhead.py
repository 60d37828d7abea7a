"""Per-iteration overhead of the tool-calling loop, beside a hand-written floor.

An in-process fake LLM asks for one trivial tool call per iteration (arguments `{"n": i}`, so
the runtime's repeated-identical-call guard never fires) and answers text at iteration N.
The same work is timed three ways in one process, round-robin so load drift hits all alike:

- the runtime: `await ToolCallingRuntime(..., max_iterations=N).arun_tool_loop(prompt)`;
- a minimal hand-written loop ("floor") that per iteration asks the same fake LLM, validates
  the arguments with the fastest validator available (fastjsonschema, compiled once; jsonschema
  if it is missing), calls the tool, times it with perf_counter, builds a ToolCallRecord,
  appends it and feeds the result back;
- the fake LLM alone, so a reader can see how much of every row is the model stand-in;
- the runtime with a typed async tool (a Pydantic model parameter, checked and converted by
  its pydantic-core validator), beside the plain async tool: what a model-typed tool costs.

After the table, the argument check alone is timed per call for a plain tool (compiled
jsonschema), the typed tool and a larger typed tool (nested models, a list, an Enum).

One more pair prices big results: the runtime with an async tool returning 1 MiB of source
text (cut to the result budget for the model, measured for the context guard), against one
JSON encode of that result per iteration (what a provider does with it at the least).

Per-iteration time is the wall time of one whole run divided by N (run set-up included).

    python bench/loop_overhead.py            # table and PASS/MISS lines
    python bench/loop_overhead.py --json     # machine-readable results
    python bench/loop_overhead.py --profile sync   # cProfile of the runtime at the large N

A bench reports; it never fails the build: the exit status is 0 unless something crashes.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import enum
import functools
import gc
import io
import json
import os
import platform
import pstats
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

import cleveragents
from cleveragents.tool import (
    AssistantMessage,
    LLMRequest,
    LLMResponse,
    Message,
    TextSink,
    ToolCallingRuntime,
    ToolCallRecord,
    ToolCallRequest,
    ToolRegistry,
    ToolResult,
    ToolResultsMessage,
    ToolRunner,
    ToolSchema,
    UserMessage,
)

PROMPT = "count with the tool"
RATIO_TARGET = 5.0  # the runtime with an async tool, against the floor
HOP_TARGET = 1.5  # the runtime with a sync tool, against the floor's bare thread hop
BIG_TARGET = 1.5  # the runtime with 1 MiB results, against one JSON encode of such a result
GROWTH_TARGET = 1.1
MiB = 1024 * 1024


def _big_text() -> str:
    """1 MiB of source code (quotes, backslashes, newlines: what a `cat` or a build log
    returns), so encoding it costs what real output costs."""
    with open(__file__, encoding="utf-8") as source:
        text = source.read()
    return (text * (MiB // len(text) + 1))[:MiB]


BIG_TEXT = _big_text()

ToolKind = Literal["sync", "async", "typed"]
FloorMode = Literal["direct", "thread_hop", "async"]


def echo_sync(n: int) -> dict[str, int]:
    """Return the number it was given."""
    return {"n": n}


async def echo_async(n: int) -> dict[str, int]:
    """Return the number it was given."""
    return {"n": n}


class Point(BaseModel):
    x: int
    y: int = Field(ge=0)


async def echo_typed(n: int, point: Point) -> dict[str, int]:
    """Return the number it was given (the point is checked and converted)."""
    return {"n": n if isinstance(point, Point) else -1}


TOOLS: dict[ToolKind, Callable[..., Any]] = {
    "sync": echo_sync,
    "async": echo_async,
    "typed": echo_typed,
}
# What the fake model sends besides `n`, by tool kind.
EXTRA_ARGUMENTS: dict[ToolKind, dict[str, Any]] = {"typed": {"point": {"x": 1, "y": 2}}}


def big_output_value(n: int) -> dict[str, Any]:
    return {"n": n, "exit_code": 0, "stdout": BIG_TEXT}


async def big_output(n: int) -> dict[str, Any]:
    """Return 1 MiB of output (a command's, say) with the number it was given."""
    return big_output_value(n)


def encode_result(n: int) -> int:
    """One JSON encode of the result `big_output` returns, as a provider sends it."""
    return len(json.dumps(big_output_value(n), ensure_ascii=False, default=str))


class OneToolCallLLM:
    """An `LLMCaller` that asks for one tool call per iteration and answers text at the last."""

    def __init__(self, tool_name: str, answer_at: int, extra: dict[str, Any] | None = None) -> None:
        self.tool_name = tool_name
        self.answer_at = answer_at
        self.extra = extra or {}

    async def complete(self, request: LLMRequest, on_text: TextSink | None = None) -> LLMResponse:
        iteration = request.iteration
        if iteration >= self.answer_at:
            if on_text is not None:
                on_text("done")
            return LLMResponse(text="done", stop_reason="end_turn")
        call = ToolCallRequest(f"call_{iteration}", self.tool_name, {"n": iteration, **self.extra})
        return LLMResponse(tool_calls=[call], stop_reason="tool_use")


# -- the three things being timed ------------------------------------------------------------


def build_runtime(kind: ToolKind, n: int) -> ToolCallingRuntime:
    registry = ToolRegistry()
    spec = registry.add(TOOLS[kind])
    llm = OneToolCallLLM(spec.name, n, EXTRA_ARGUMENTS.get(kind))
    return ToolCallingRuntime(registry, ToolRunner(registry), llm, max_iterations=n)


def build_big_runtime(n: int) -> ToolCallingRuntime:
    registry = ToolRegistry()
    spec = registry.add(big_output)
    return ToolCallingRuntime(
        registry, ToolRunner(registry), OneToolCallLLM(spec.name, n), max_iterations=n
    )


def _did_echo(record: ToolCallRecord) -> bool:
    return record.success and record.output.get("n") == record.iteration


async def run_runtime(runtime: ToolCallingRuntime, n: int) -> None:
    result = await runtime.arun_tool_loop(PROMPT)
    # A fast loop that does the wrong thing measures nothing: check it did the work.
    calls = result.tool_call_history
    if (
        result.iterations != n
        or result.stop_reason != "final_answer"
        or len(calls) != n - 1
        or not all(map(_did_echo, calls))
    ):
        wrong = next((r for r in calls if not _did_echo(r)), None)
        raise RuntimeError(
            f"runtime run did not do the expected work: {result.iterations} iterations, "
            f"stop_reason {result.stop_reason}, {len(calls)} calls, first wrong call {wrong!r}"
        )


def _validator_name() -> str:
    try:
        import fastjsonschema
    except ImportError:
        return "jsonschema"
    return f"fastjsonschema {fastjsonschema.VERSION}"


VALIDATOR_NAME = _validator_name()


def fastest_validator(schema: dict[str, Any]) -> Callable[[Any], str | None]:
    """A function that returns None for valid arguments, else an error message.

    fastjsonschema compiles the schema to Python (about 1 us a call here); jsonschema, the
    fallback, interprets it (tens of us). The floor takes the fastest so the ratio is honest.
    """
    try:
        import fastjsonschema
    except ImportError:
        from jsonschema import validators

        reference = validators.validator_for(schema)(schema)

        def interpreted(arguments: Any) -> str | None:
            error = next(reference.iter_errors(arguments), None)
            return None if error is None else str(error.message)

        return interpreted
    compiled = fastjsonschema.compile(schema, use_default=False)

    def check(arguments: Any) -> str | None:
        try:
            compiled(arguments)
        except fastjsonschema.JsonSchemaValueException as exc:
            return str(exc.message)
        return None

    return check


class HandWrittenLoop:
    """The floor: the least a correct loop does per iteration, written out by hand."""

    def __init__(self, mode: FloorMode, n: int, executor: ThreadPoolExecutor) -> None:
        self.mode = mode
        self.n = n
        self.executor = executor
        kind: ToolKind = "async" if mode == "async" else "sync"
        self.tool = TOOLS[kind]
        registry = ToolRegistry()
        spec = registry.add(self.tool)
        self.tool_name = spec.name
        self.tools = [spec.to_schema()]
        self.validate = fastest_validator(spec.input_schema)
        self.llm = OneToolCallLLM(spec.name, n)

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        records: list[ToolCallRecord] = []
        messages: list[Message] = [UserMessage(PROMPT)]
        for iteration in range(1, self.n + 1):
            request = LLMRequest(messages=messages, tools=self.tools, iteration=iteration)
            response = await self.llm.complete(request)
            messages.append(AssistantMessage(response.text, tuple(response.tool_calls)))
            if not response.tool_calls:
                break
            results: list[ToolResult] = []
            for call in response.tool_calls:
                started = time.perf_counter()
                arguments = call.arguments
                error = self.validate(arguments)
                output: dict[str, Any]
                if error is not None:
                    output = {"error": error}
                elif self.mode == "direct":
                    output = self.tool(**arguments)
                elif self.mode == "thread_hop":
                    output = await loop.run_in_executor(
                        self.executor, functools.partial(self.tool, **arguments)
                    )
                else:
                    output = await self.tool(**arguments)
                record = ToolCallRecord(
                    tool_name=call.tool_name,
                    inputs=arguments,
                    output=output,
                    duration_ms=(time.perf_counter() - started) * 1000.0,
                    success=error is None,
                    error=error,
                    iteration=iteration,
                    call_id=call.call_id,
                )
                records.append(record)
                results.append(ToolResult(call.call_id, call.tool_name, output, error is not None))
            messages.append(ToolResultsMessage(tuple(results)))
        if len(records) != self.n - 1 or not all(r.success for r in records):
            raise RuntimeError(
                f"hand-written loop did not do the expected work: {len(records)} calls "
                f"for N={self.n}, {sum(not r.success for r in records)} failed"
            )


async def run_encodes(n: int) -> None:
    """The yardstick for 1 MiB results: one JSON encode of such a result per iteration."""
    for iteration in range(1, n + 1):
        if encode_result(iteration) < MiB:
            raise RuntimeError("the 1 MiB result encoded to less than 1 MiB")


async def run_llm_alone(llm: OneToolCallLLM, tools: list[ToolSchema], n: int) -> None:
    messages: list[Message] = [UserMessage(PROMPT)]
    for iteration in range(1, n + 1):
        await llm.complete(LLMRequest(messages=messages, tools=tools, iteration=iteration))


# -- measurement -----------------------------------------------------------------------------


@dataclass(slots=True)
class Row:
    """One variant at one N: per-iteration samples in microseconds and their summary."""

    variant: str
    n: int
    by_round: dict[int, float] = field(default_factory=dict)

    @property
    def samples_us(self) -> list[float]:
        return list(self.by_round.values())

    @property
    def median(self) -> float:
        return statistics.median(self.samples_us)

    def quantile(self, q: int) -> float:
        if len(self.samples_us) < 2:
            return self.samples_us[0]
        return statistics.quantiles(self.samples_us, n=10, method="inclusive")[q // 10 - 1]

    def summary(self) -> dict[str, Any]:
        return {
            "variant": self.variant,
            "n": self.n,
            "reps": len(self.samples_us),
            "median_us": self.median,
            "p10_us": self.quantile(10),
            "p90_us": self.quantile(90),
            "min_us": min(self.samples_us),
            "max_us": max(self.samples_us),
        }


RUNTIME_SYNC = "runtime, sync tool"
RUNTIME_ASYNC = "runtime, async tool"
RUNTIME_TYPED = "runtime, typed async tool"
FLOOR_DIRECT = "floor, sync tool, direct call"
FLOOR_HOP = "floor, sync tool, thread hop"
FLOOR_ASYNC = "floor, async tool"
LLM_ALONE = "fake LLM alone"
RUNTIME_BIG = "runtime, 1 MiB results"
ENCODE_BIG = "one JSON encode of 1 MiB"
LOOP_VARIANTS = (
    LLM_ALONE,
    FLOOR_DIRECT,
    FLOOR_HOP,
    FLOOR_ASYNC,
    RUNTIME_SYNC,
    RUNTIME_ASYNC,
    RUNTIME_TYPED,
)
# Timed in rounds of their own, after the others: megabytes allocated per iteration must not
# sit in the caches and the allocator between the microsecond-sized runs.
BIG_VARIANTS = (ENCODE_BIG, RUNTIME_BIG)
BIG_REPS_SHARE = 5  # a fifth of the repetitions: each run is a thousand times longer
VARIANTS = LOOP_VARIANTS + BIG_VARIANTS

# (measured, floor, limit or None when it only informs). A sync tool runs in a worker thread
# by design (it must not block the loop), so its target is the bare hop; against the direct
# call the ratio only shows what the hop costs.
COMPARISONS: tuple[tuple[str, str, float | None], ...] = (
    (RUNTIME_ASYNC, FLOOR_ASYNC, RATIO_TARGET),
    (RUNTIME_SYNC, FLOOR_HOP, HOP_TARGET),
    (RUNTIME_SYNC, FLOOR_DIRECT, None),
    (RUNTIME_TYPED, RUNTIME_ASYNC, None),  # what the model-typed parameter adds
    # Sizing a result (budget and guard) must cost about one encode, not several passes.
    (RUNTIME_BIG, ENCODE_BIG, BIG_TARGET),
)


@dataclass(slots=True)
class Plan:
    small_n: int
    large_n: int
    small_reps: int
    large_reps: int  # at most small_reps: the large-N rounds are spread among the small ones
    warmup: int


# Runs are short, so many repetitions are cheap and steady the medians on a noisy machine.
FULL = Plan(small_n=25, large_n=200, small_reps=100, large_reps=30, warmup=5)
QUICK = Plan(small_n=4, large_n=8, small_reps=3, large_reps=3, warmup=1)

Job = Callable[[], Awaitable[None]]


def size_jobs(
    n: int, executor: ThreadPoolExecutor, runtimes: list[ToolCallingRuntime]
) -> dict[str, Job]:
    """Every variant at one N; the runtimes built are added to `runtimes` for shutdown."""
    sync_runtime, async_runtime = build_runtime("sync", n), build_runtime("async", n)
    typed_runtime = build_runtime("typed", n)
    big_runtime = build_big_runtime(n)
    runtimes.extend((sync_runtime, async_runtime, typed_runtime, big_runtime))
    direct = HandWrittenLoop("direct", n, executor)
    hop = HandWrittenLoop("thread_hop", n, executor)
    on_loop = HandWrittenLoop("async", n, executor)
    llm_only = OneToolCallLLM(direct.tool_name, n)
    return {
        LLM_ALONE: lambda: run_llm_alone(llm_only, direct.tools, n),
        FLOOR_DIRECT: direct.run,
        FLOOR_HOP: hop.run,
        FLOOR_ASYNC: on_loop.run,
        RUNTIME_SYNC: lambda: run_runtime(sync_runtime, n),
        RUNTIME_ASYNC: lambda: run_runtime(async_runtime, n),
        RUNTIME_TYPED: lambda: run_runtime(typed_runtime, n),
        ENCODE_BIG: lambda: run_encodes(n),
        RUNTIME_BIG: lambda: run_runtime(big_runtime, n),
    }


def schedule(plan: Plan) -> list[tuple[bool, list[int]]]:
    """Rounds as (counted, sizes to run): warm-up rounds first, then the counted rounds.

    The large-N runs are spread evenly among the small-N rounds, so a drift in machine load
    touches both sizes alike and cannot pass for growth.
    """
    rounds = [(False, [plan.small_n, plan.large_n]) for _ in range(plan.warmup)]
    for index in range(plan.small_reps):
        large_runs_before = index * plan.large_reps // plan.small_reps
        large_runs_after = (index + 1) * plan.large_reps // plan.small_reps
        sizes = [plan.small_n]
        if large_runs_after > large_runs_before:
            sizes.append(plan.large_n)
        rounds.append((True, sizes))
    return rounds


async def measure(plan: Plan) -> dict[int, dict[str, Row]]:
    if plan.large_reps > plan.small_reps:
        raise ValueError("large_reps must not exceed small_reps")
    executor = ThreadPoolExecutor(max_workers=16, thread_name_prefix="bench-floor")
    runtimes: list[ToolCallingRuntime] = []
    jobs = {n: size_jobs(n, executor, runtimes) for n in (plan.small_n, plan.large_n)}
    rows = {n: {name: Row(name, n) for name in VARIANTS} for n in jobs}
    # No collection between runs: a full collection evicts the caches and would add its
    # cold start (about 100 us here) to the first iteration of whichever run follows it.
    # Freezing what exists keeps the collections that do happen as cheap as in a live daemon.
    big_plan = Plan(
        plan.small_n,
        plan.large_n,
        max(3, plan.small_reps // BIG_REPS_SHARE),
        max(3, plan.large_reps // BIG_REPS_SHARE),
        plan.warmup,
    )
    phases = [
        (LOOP_VARIANTS, schedule(plan)),
        (BIG_VARIANTS, schedule(big_plan)),
    ]
    gc.collect()
    gc.freeze()
    try:
        round_index = 0
        for variants, rounds in phases:
            for counted, sizes in rounds:
                # Rotate the order so no variant always follows the same neighbour.
                shift = round_index % len(variants)
                for name in variants[shift:] + variants[:shift]:
                    for n in sizes:
                        started = time.perf_counter_ns()
                        await jobs[n][name]()
                        elapsed_us = (time.perf_counter_ns() - started) / 1000.0
                        if counted:
                            rows[n][name].by_round[round_index] = elapsed_us / n
                round_index += 1
    finally:
        gc.unfreeze()
        for runtime in runtimes:
            runtime.runner.shutdown()
        executor.shutdown(wait=False)
    return rows


@dataclass(slots=True)
class Verdict:
    target: bool
    label: str
    value: float
    limit: float

    @property
    def met(self) -> bool:
        return self.value <= self.limit

    def line(self) -> str:
        if not self.target:
            return f"INFO  {self.label}: {self.value:.2f}x"
        tag = "PASS" if self.met else "MISS"
        return f"{tag}  {self.label}: {self.value:.2f}x (target <= {self.limit:g}x)"


def paired_ratio(numerator: Row, denominator: Row) -> float:
    """Median over the rounds both ran in of numerator / denominator.

    This machine's speed drifts by up to 2x between phases lasting seconds; a ratio taken
    within one round, a few milliseconds apart, cancels that drift where a ratio of two
    medians (each possibly from a different phase) would not.
    """
    shared = numerator.by_round.keys() & denominator.by_round.keys()
    if not shared:
        raise ValueError(f"{numerator.variant} and {denominator.variant} share no round")
    return statistics.median(
        numerator.by_round[index] / denominator.by_round[index] for index in shared
    )


def verdicts(results: dict[int, dict[str, Row]], plan: Plan) -> list[Verdict]:
    found: list[Verdict] = []
    for n in (plan.small_n, plan.large_n):
        rows = results[n]
        for measured, floor, limit in COMPARISONS:
            ratio = paired_ratio(rows[measured], rows[floor])
            label = f"N={n} {measured} vs {floor}"
            found.append(Verdict(limit is not None, label, ratio, limit or RATIO_TARGET))
    for variant in (RUNTIME_SYNC, RUNTIME_ASYNC):
        growth = paired_ratio(results[plan.large_n][variant], results[plan.small_n][variant])
        label = f"growth {variant}, per-iteration N={plan.large_n} / N={plan.small_n}"
        found.append(Verdict(True, label, growth, GROWTH_TARGET))
    return found


# -- the argument check alone ----------------------------------------------------------------


class Shade(enum.Enum):
    LIGHT = "light"
    DARK = "dark"


class Line(BaseModel):
    sku: str = Field(min_length=1)
    qty: int = Field(ge=1)


class Order(BaseModel):
    customer: str
    lines: list[Line]
    shade: Shade
    note: str | None = None


def place_order(order: Order, priority: Annotated[int, Field(ge=1, le=5)] = 3) -> None:
    """Place an order (a larger typed tool: nested models, a list, an Enum, a constraint)."""


ORDER_ARGUMENTS: dict[str, Any] = {
    "order": {
        "customer": "c-1",
        "lines": [{"sku": "a", "qty": 1}, {"sku": "b", "qty": 2}, {"sku": "c", "qty": 3}],
        "shade": "dark",
    },
    "priority": 2,
}


def check_costs(calls: int, repeats: int = 5) -> list[tuple[str, float]]:
    """(label, best microseconds per call) of the runner's argument check for three tools.

    The plain tool's check is the compiled jsonschema one (`validator.problems`); a typed
    tool's is its pydantic-core validator, which also converts (`typed_arguments.convert`).
    """
    registry = ToolRegistry()
    plain = registry.add(echo_async)
    typed = registry.add(echo_typed)
    order = registry.register("place_order", place_order)
    cases: list[tuple[str, Callable[[Any], Any], dict[str, Any]]] = [
        ("plain tool, {n} (compiled jsonschema)", plain.validator.problems, {"n": 1}),
    ]
    for label, spec, arguments in (
        (
            "typed tool, {n, point: Point} (pydantic-core)",
            typed,
            {"n": 1, **EXTRA_ARGUMENTS["typed"]},
        ),
        ("typed tool, an Order with 3 lines, Enum, Field", order, ORDER_ARGUMENTS),
    ):
        converter = spec.typed_arguments
        if converter is None:
            raise RuntimeError(f"{spec.name} should be a typed tool")
        cases.append((label, converter.convert, arguments))
    costs: list[tuple[str, float]] = []
    for label, check, arguments in cases:
        check(arguments)  # built on first use (the plain one), and checked to pass
        best = float("inf")
        for _ in range(repeats):
            started = time.perf_counter_ns()
            for _ in range(calls):
                check(arguments)
            best = min(best, (time.perf_counter_ns() - started) / calls / 1000.0)
        costs.append((label, best))
    return costs


def render_costs(costs: list[tuple[str, float]], calls: int) -> str:
    lines = [f"Argument check alone, per call (best of 5 runs of {calls} calls):"]
    lines.extend(f"  {label:<50} {us:>7.2f} us" for label, us in costs)
    return "\n".join(lines)


def environment() -> dict[str, Any]:
    return {
        "cleveragents": cleveragents.__version__,
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "cpus": os.cpu_count(),
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "floor_validator": VALIDATOR_NAME,
    }


def render_table(results: dict[int, dict[str, Row]], plan: Plan) -> str:
    env = environment()
    load = env["load_average"]
    lines = [
        f"Tool-loop overhead: cleveragents {env['cleveragents']}, "
        f"{env['implementation']} {env['python']}, {env['cpus']} CPUs"
        + (f", load {load[0]:.2f}" if load else "")
        + f", {env['date']}",
        'Fake LLM: one trivial tool call per iteration ({"n": i}), text at iteration N,',
        "so N-1 tool calls per run. One runtime per (tool, N), reused across repetitions.",
        f"Per-iteration = whole run / N; {plan.warmup} warm-up round(s), variants interleaved.",
        "Floors validate with the fastest validator here"
        f" ({VALIDATOR_NAME}). The sync tool's target floor makes",
        "the call through loop.run_in_executor (the hop the runtime makes by design); the",
        "direct-call floor shows what the hop costs. Ratios and growth are",
        "medians of per-round ratios (runs of the same round are milliseconds apart).",
        "",
        f"{'variant':<31} {'N':>4} {'reps':>4} {'median':>9} {'p10-p90':>17} {'min':>8}"
        f" {'x floor':>8}",
        f"{'':<31} {'':>4} {'':>4} {'us/iter':>9} {'us/iter':>17} {'us/iter':>8}",
    ]
    floors = {measured: floor for measured, floor, limit in COMPARISONS if limit is not None}
    for n, rows in results.items():
        for name in VARIANTS:
            row = rows[name]
            floor = floors.get(name)
            ratio = f"{paired_ratio(row, rows[floor]):.2f}" if floor else ""
            spread = f"{row.quantile(10):.1f}-{row.quantile(90):.1f}"
            lines.append(
                f"{name:<31} {n:>4} {len(row.samples_us):>4} {row.median:>9.1f} {spread:>17}"
                f" {min(row.samples_us):>8.1f} {ratio:>8}"
            )
        lines.append("")
    lines.extend(v.line() for v in verdicts(results, plan))
    return "\n".join(lines)


def render_json(
    results: dict[int, dict[str, Row]], plan: Plan, costs: list[tuple[str, float]]
) -> str:
    return json.dumps(
        {
            "check_cost_us": [{"case": label, "per_call_us": us} for label, us in costs],
            "environment": environment(),
            "plan": {
                "small_n": plan.small_n,
                "large_n": plan.large_n,
                "small_reps": plan.small_reps,
                "large_reps": plan.large_reps,
                "warmup": plan.warmup,
            },
            "rows": [row.summary() for rows in results.values() for row in rows.values()],
            "verdicts": [
                {
                    "label": v.label,
                    "value": v.value,
                    "limit": v.limit,
                    "target": v.target,
                    "met": v.met,
                }
                for v in verdicts(results, plan)
            ],
        },
        indent=2,
    )


async def profile_runtime(kind: ToolKind, n: int, runs: int, top: int) -> str:
    runtime = build_runtime(kind, n)
    try:
        await run_runtime(runtime, n)  # warm-up: validator compiled, pool thread started
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(runs):
            await run_runtime(runtime, n)
        profiler.disable()
    finally:
        runtime.runner.shutdown()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.strip_dirs().sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)
    header = f"cProfile: runtime, {kind} tool, N={n}, {runs} runs (event-loop thread only)\n"
    return header + out.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="tiny N and few runs (smoke test)")
    parser.add_argument("--json", action="store_true", help="print machine-readable results")
    parser.add_argument(
        "--profile",
        choices=("sync", "async"),
        help="instead of the table, cProfile the runtime with that tool kind at the large N",
    )
    args = parser.parse_args(argv)
    plan = QUICK if args.quick else FULL
    if args.profile:
        runs = 2 if args.quick else 20
        print(asyncio.run(profile_runtime(args.profile, plan.large_n, runs, top=30)))
        return 0
    results = asyncio.run(measure(plan))
    calls = 200 if args.quick else 20000
    costs = check_costs(calls)
    if args.json:
        print(render_json(results, plan, costs))
    else:
        print(render_table(results, plan))
        print()
        print(render_costs(costs, calls))
    return 0


if __name__ == "__main__":
    sys.exit(main())
