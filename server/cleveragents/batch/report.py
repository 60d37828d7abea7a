"""A batch report for people: the terminal table, and a Markdown or HTML file with a chart of
pass rate and cost per configuration (inline SVG, so the file stands alone)."""

from __future__ import annotations

import html
from typing import Any

from .runner import BatchReport
from .task import TaskOutcome

RESULT_STYLE = {"passed": "green", "failed": "red", "timeout": "yellow", "error": "red"}


def money(value: float | None) -> str:
    return "—" if value is None else f"${value:.4f}"


def seconds(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}s"


def rate(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def note(outcome: TaskOutcome) -> str:
    parts = []
    if outcome.skipped:
        parts.append("earlier result")
    if outcome.retried:
        parts.append(f"retried: {outcome.retried}")
    if outcome.error:
        parts.append(outcome.error)
    elif outcome.check and outcome.check.get("missing_files"):
        parts.append("missing: " + ", ".join(outcome.check["missing_files"]))
    elif outcome.check and outcome.check.get("error"):
        parts.append(str(outcome.check["error"]))
    elif outcome.check and outcome.check.get("exit_code") not in (None, 0):
        parts.append(f"check exit {outcome.check['exit_code']}")
    return "; ".join(parts)


def row(outcome: TaskOutcome) -> list[str]:
    return [
        outcome.task_id,
        outcome.config,
        outcome.status,
        outcome.stop_reason or "—",
        str(outcome.iterations),
        str(outcome.tool_calls),
        f"{outcome.input_tokens:,}/{outcome.output_tokens:,}",
        money(outcome.cost_usd),
        seconds(outcome.duration_s),
        note(outcome),
    ]


HEADERS = [
    "task",
    "config",
    "result",
    "stop",
    "iter",
    "tools",
    "tokens in/out",
    "cost",
    "time",
    "note",
]


def totals_line(totals: dict[str, Any]) -> str:
    return (
        f"{totals['passed']}/{totals['tasks']} passed ({rate(totals['pass_rate'])}), "
        f"cost {money(totals['total_cost_usd'])} (mean {money(totals['mean_cost_usd'])}), "
        f"duration p50 {seconds(totals['p50_duration_s'])} p95 {seconds(totals['p95_duration_s'])}"
    )


def print_report(report: BatchReport, console: Any) -> None:
    """The table per task, then the totals (per configuration too, with a matrix)."""
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=f"batch {report.batch_id} ({report.executor})")
    for header in HEADERS:
        table.add_column(header, overflow="fold")
    for outcome in report.outcomes:
        cells = [escape(c) for c in row(outcome)]
        style = RESULT_STYLE.get(outcome.status)
        cells[2] = f"[{style}]{cells[2]}[/]" if style else cells[2]
        table.add_row(*cells)
    console.print(table)
    if len(report.configurations) > 1:
        for config in report.configurations:
            console.print(f"{escape(config)}: {totals_line(report.totals(config))}")
    console.print(f"total: {totals_line(report.totals())}")
    if report.cancelled:
        console.print(
            f"[yellow]cancelled: {len(report.outcomes)} of {report.planned} task(s) finished; "
            "run the batch again to do the rest[/]"
        )


def chart_svg(report: BatchReport) -> str:
    """Two bar groups per configuration: pass rate (of 100%) and cost (of the largest)."""
    configs = report.configurations
    stats = {c: report.totals(c) for c in configs}
    top_cost = max((s["total_cost_usd"] or 0.0 for s in stats.values()), default=0.0)
    bar, gap, label_w, height = 18, 10, 140, 220
    width = label_w + len(configs) * (2 * bar + 3 * gap) + 20
    plot = height - 50
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        'font-family="sans-serif" font-size="11" role="img" '
        'aria-label="pass rate and cost per configuration">',
        '<rect x="10" y="8" width="10" height="10" fill="#2e7d32"/>'
        '<text x="24" y="17">pass rate</text>',
        '<rect x="90" y="8" width="10" height="10" fill="#1565c0"/>'
        f'<text x="104" y="17">cost (max {html.escape(money(top_cost or None))})</text>',
    ]
    x = label_w
    for config in configs:
        s = stats[config]
        pass_h = plot * (s["pass_rate"] or 0.0)
        cost_h = plot * ((s["total_cost_usd"] or 0.0) / top_cost) if top_cost else 0.0
        base = height - 25
        parts.append(
            f'<rect x="{x}" y="{base - pass_h:.1f}" width="{bar}" height="{pass_h:.1f}" '
            f'fill="#2e7d32"><title>{html.escape(config)}: {rate(s["pass_rate"])}</title></rect>'
        )
        parts.append(
            f'<rect x="{x + bar + 2}" y="{base - cost_h:.1f}" width="{bar}" '
            f'height="{cost_h:.1f}" fill="#1565c0"><title>{html.escape(config)}: '
            f"{money(s['total_cost_usd'])}</title></rect>"
        )
        parts.append(f'<text x="{x}" y="{height - 10}">{html.escape(config[:16])}</text>')
        x += 2 * bar + 3 * gap
    parts.append("</svg>")
    return "".join(parts)


def _summary_rows(report: BatchReport) -> list[list[str]]:
    rows = []
    for config in report.configurations:
        s = report.totals(config)
        rows.append(
            [
                config,
                f"{s['passed']}/{s['tasks']}",
                rate(s["pass_rate"]),
                money(s["total_cost_usd"]),
                money(s["mean_cost_usd"]),
                seconds(s["p50_duration_s"]),
                seconds(s["p95_duration_s"]),
            ]
        )
    return rows


SUMMARY_HEADERS = ["config", "passed", "pass rate", "cost", "mean cost", "p50", "p95"]


def markdown(report: BatchReport) -> str:
    def table(headers: list[str], rows: list[list[str]]) -> list[str]:
        def cell(text: str) -> str:
            return text.replace("|", "\\|").replace("\n", " ")

        lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
        lines += ["| " + " | ".join(cell(c) for c in r) + " |" for r in rows]
        return lines

    lines = [
        f"# Batch {report.batch_id}",
        "",
        f"Suite `{report.suite}`, executor {report.executor}: {totals_line(report.totals())}.",
    ]
    if report.cancelled:
        lines += ["", f"Cancelled: {len(report.outcomes)} of {report.planned} task(s) finished."]
    lines += ["", "## Configurations", "", chart_svg(report), ""]
    lines += table(SUMMARY_HEADERS, _summary_rows(report))
    lines += ["", "## Tasks", ""]
    lines += table(HEADERS, [row(o) for o in report.outcomes])
    return "\n".join(lines) + "\n"


def html_page(report: BatchReport) -> str:
    def table(headers: list[str], rows: list[list[str]]) -> str:
        head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows
        )
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

    title = html.escape(f"Batch {report.batch_id}")
    cancelled = (
        f"<p>Cancelled: {len(report.outcomes)} of {report.planned} task(s) finished.</p>"
        if report.cancelled
        else ""
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{title}</title><style>body{{font-family:sans-serif}}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px}"
        f"</style></head><body><h1>{title}</h1>"
        f"<p>Suite <code>{html.escape(report.suite)}</code>, executor "
        f"{html.escape(report.executor)}: {html.escape(totals_line(report.totals()))}.</p>"
        f"{cancelled}<h2>Configurations</h2>{chart_svg(report)}"
        f"{table(SUMMARY_HEADERS, _summary_rows(report))}"
        f"<h2>Tasks</h2>{table(HEADERS, [row(o) for o in report.outcomes])}</body></html>\n"
    )


def report_file_text(report: BatchReport, path: str) -> str:
    """HTML for a .html or .htm file, Markdown for anything else."""
    if path.lower().endswith((".html", ".htm")):
        return html_page(report)
    return markdown(report)
