"""The daemon over real stdio: a run's AGENTS.md files in `runStarted`, its plan as
`cleveragents/plan` notifications (checked against protocol/schema.json), and the last plan
again from `getRun`."""

from __future__ import annotations

from pathlib import Path

from support.daemon_support import RawDaemon, call, check_against_schema, check_type, write_script

PLANS = [
    [
        {"text": "Read the notes", "status": "in_progress"},
        {"text": "Write the summary", "status": "pending"},
    ],
    [
        {"text": "Read the notes", "status": "done"},
        {"text": "Write the summary", "status": "in_progress"},
    ],
    [
        {"text": "Read the notes", "status": "done"},
        {"text": "Write the summary", "status": "done"},
    ],
]


def plan_script(tmp_path: Path) -> str:
    return write_script(
        tmp_path / "script.json",
        {"text": "Planning.", "tool_calls": [call("update_plan", "p1", steps=PLANS[0])]},
        {
            "text": "Reading.",
            "tool_calls": [
                call("read_file", "r1", path="notes/today.md"),
                call("update_plan", "p2", steps=PLANS[1], explanation="read them"),
            ],
        },
        {"text": "", "tool_calls": [call("update_plan", "p3", steps=PLANS[2])]},
        {"text": "Done."},
    )


async def test_a_run_lists_its_instructions_and_streams_each_plan(
    raw: RawDaemon, tmp_path: Path, sandbox: Path
) -> None:
    (sandbox / "AGENTS.md").write_text("Keep notes short.\n")
    (sandbox / "notes").mkdir()
    (sandbox / "notes" / "CLAUDE.md").write_text("Dates as YYYY-MM-DD.\n")
    (sandbox / "notes" / "today.md").write_text("- one\n")
    user = tmp_path / "config" / "cleveragents"
    user.mkdir(parents=True)
    (user / "AGENTS.md").write_text("Answer in English.\n")
    await raw.initialize(
        {"provider": "replay", "replayScript": plan_script(tmp_path), "pluginTools": False}
    )
    answer = await raw.request(
        "cleveragents/run", {"prompt": "Summarise my notes.", "sandboxRoot": str(sandbox)}
    )
    assert answer["result"]["stopReason"] == "final_answer", answer

    (started,) = raw.notifications("cleveragents/runStarted")
    check_against_schema("cleveragents/runStarted", started)
    assert [(f["scope"], f["path"], f["folder"]) for f in started["instructions"]] == [
        ("user", str(user / "AGENTS.md"), ""),
        ("project", "AGENTS.md", "."),
    ]
    assert started["instructions"][1]["chars"] == len("Keep notes short.\n")
    assert started["instructions"][1]["truncated"] is False

    plans = raw.notifications("cleveragents/plan")
    for plan in plans:
        check_against_schema("cleveragents/plan", plan)
    assert [p["steps"] for p in plans] == PLANS
    assert [p["callId"] for p in plans] == ["p1", "p2", "p3"]
    assert [p["explanation"] for p in plans] == [None, "read them", None]
    # Each plan comes right after its call's record, in the run's one sequence.
    order = [
        (m["method"], m["params"].get("record", {}).get("callId") or m["params"].get("callId"))
        for m in raw.received
        if m.get("method") in ("cleveragents/toolCall", "cleveragents/plan")
    ]
    # The second iteration's two calls run at once: their records come in completion order.
    assert order[:2] == [("cleveragents/toolCall", "p1"), ("cleveragents/plan", "p1")]
    second = order[2:5]
    assert sorted(second) == sorted(
        [
            ("cleveragents/toolCall", "r1"),
            ("cleveragents/toolCall", "p2"),
            ("cleveragents/plan", "p2"),
        ]
    )
    assert second.index(("cleveragents/plan", "p2")) == (
        second.index(("cleveragents/toolCall", "p2")) + 1
    )
    assert order[5:] == [("cleveragents/toolCall", "p3"), ("cleveragents/plan", "p3")]
    # update_plan needs no approval (the run has the default `ask` profile) and changes nothing.
    records = answer["result"]["toolCallHistory"]
    assert all(r["success"] for r in records), records

    detail = await raw.request("cleveragents/getRun", {"runId": answer["result"]["runId"]})
    run = detail["result"]
    check_against_schema("cleveragents/getRun", run, "result")
    assert run["plan"] == PLANS[-1]
    assert await raw.close() == 1


async def test_instructions_off_for_one_run(raw: RawDaemon, tmp_path: Path, sandbox: Path) -> None:
    (sandbox / "AGENTS.md").write_text("Keep notes short.\n")
    script = write_script(tmp_path / "s.json", {"text": "Done."})
    await raw.initialize({"provider": "replay", "replayScript": script, "pluginTools": False})
    answer = await raw.request(
        "cleveragents/run",
        {"prompt": "go", "sandboxRoot": str(sandbox), "projectInstructions": False},
    )
    assert "result" in answer, answer
    (started,) = raw.notifications("cleveragents/runStarted")
    assert started["instructions"] == []
    detail = await raw.request("cleveragents/getRun", {"runId": answer["result"]["runId"]})
    assert detail["result"]["plan"] is None
    check_type("RunDetail", detail["result"])
