"""One or more values of every core type the converter shapes, each with the fields that
change its shape (a None, an empty tuple, a default) both set and unset."""

from __future__ import annotations

from typing import Any

from cleveragents.batch.runner import BatchReport
from cleveragents.batch.task import TaskOutcome
from cleveragents.service.changes import ChangedFile
from cleveragents.service.checkpoints.records import Checkpoint, Coverage, SkippedFile
from cleveragents.service.history.records import (
    BatchLabel,
    IterationUsage,
    RunSummary,
    StoredCheckpoint,
    StoredRun,
)
from cleveragents.service.settings import SettingValue
from cleveragents.service.trust import ShownVariable, TrustedServer
from cleveragents.tool.images import ImageAttachment
from cleveragents.tool.instructions import InstructionFile
from cleveragents.tool.messages import (
    AssistantMessage,
    ToolCallRequest,
    ToolResult,
    ToolResultsMessage,
    UserMessage,
)
from cleveragents.tool.plan import PlanStep
from cleveragents.tool.records import ToolCallRecord, ToolCallRunResult, Usage
from cleveragents.tool.resources import Resource
from cleveragents.workspace.bubblewrap import CommandIdentity
from cleveragents.workspace.command_policy import CommandView, Mount
from cleveragents.workspace.repository_guard import ProtectedChange

IMAGE = ImageAttachment("shot.png", "image/png", 3, 2, 120, "ab" * 30, b"\x89PNG")
EVICTED = ImageAttachment("gone.webp", "image/webp", 640, 480, 9000, "cd" * 30, None)
USAGE = Usage(1200, 80, 1000, 150)
RECORD = ToolCallRecord(
    "read_file",
    {"path": "a.py", "nested": {"list": [1, 2.5, None, True]}},
    {"content": "x = 1\n", "lines": 1},
    12.5,
    True,
    iteration=2,
    call_id="call_1",
)
FAILED = ToolCallRecord(
    "run_command",
    {"command": "false"},
    {},
    0.25,
    False,
    error="exit 1",
    iteration=3,
    call_id="call_2",
    error_kind="execution_error",
)
CALL = ToolCallRequest("call_1", "read_file", {"path": "a.py"})
BAD_CALL = ToolCallRequest("call_3", "write_file", "{not json", parse_error="Expecting value")
USER = UserMessage("Fix the bug")
USER_WITH_IMAGES = UserMessage("What is this?", (IMAGE, EVICTED))
ASSISTANT = AssistantMessage("Reading it.", (CALL, BAD_CALL))
ASSISTANT_WITH_DATA = AssistantMessage(
    "", (), {"thinking": [{"type": "thinking", "signature": "s1"}]}
)
TOOL_RESULTS = ToolResultsMessage(
    (
        ToolResult("call_1", "read_file", {"content": "x = 1\n"}),
        ToolResult("call_3", "write_file", {"error": "bad JSON"}, is_error=True),
    )
)
CHANGED = ChangedFile("src/a.py", "modified")
CHANGED_IGNORED = ChangedFile("node_modules/x.js", "added", ignored=True)
CHANGED_NOT_UTF8 = ChangedFile("caf\udce9.txt", "deleted")
CHECKPOINT = StoredCheckpoint("ckpt_1", "iteration", 1, 1700000000.25)
END_CHECKPOINT = StoredCheckpoint("ckpt_2", "end", None, 1700000001.5, "2 large files skipped")
RESOURCE = Resource("src/a.py", "x = 1\n", 1, 1, 40, 0, False)
EDITOR_RESOURCE = Resource("notes.md", "draft", omitted_chars=12, from_editor=True)
BATCH = BatchLabel("suite-a", "task-1", "fast")

SUMMARY_FIELDS: dict[str, Any] = {
    "run_id": "run_1",
    "prompt": "Fix the bug",
    "status": "finished",
    "started_at": 1700000000.0,
    "finished_at": 1700000002.75,
    "iterations": 2,
    "tool_call_count": 2,
    "sandbox_root": "/work/project",
    "plan_id": "plan_1",
    "automation_profile": "full-auto",
    "continued_from": None,
    "kind": "run",
    "restored_run_id": None,
    "restored_iteration": None,
    "usage": USAGE,
    "cost_usd": 0.0123,
}
SUMMARY = RunSummary(**SUMMARY_FIELDS, batch=BATCH)
RESTORE_SUMMARY = RunSummary(
    **{
        **SUMMARY_FIELDS,
        "run_id": "restore_1",
        "status": "running",
        "finished_at": None,
        "kind": "restore",
        "restored_run_id": "run_1",
        "restored_iteration": 1,
        "usage": Usage(),
        "cost_usd": None,
        "sandbox_root": None,
    },
    batch=None,
)
STORED_RUN = StoredRun(
    **SUMMARY_FIELDS,
    batch=None,
    max_iterations=10,
    content="Done.",
    stop_reason="final_answer",
    error=None,
    error_type=None,
    records=[RECORD, FAILED],
    messages=[USER_WITH_IMAGES, ASSISTANT, TOOL_RESULTS, ASSISTANT_WITH_DATA],
    checkpoints=[CHECKPOINT, END_CHECKPOINT],
    changed_files=[CHANGED, CHANGED_IGNORED, CHANGED_NOT_UTF8],
    checkpoint_warning="not a git folder",
    resources=[RESOURCE, EDITOR_RESOURCE],
    iteration_usage=[IterationUsage(1, USAGE, 0.01), IterationUsage(2, Usage(5, 6), None)],
    images=[IMAGE, EVICTED],
)
STORED_RUN_GOING = StoredRun(
    **{**SUMMARY_FIELDS, "status": "running", "finished_at": None, "cost_usd": None},
    batch=BATCH,
    max_iterations=5,
    content=None,
    stop_reason=None,
    error="boom",
    error_type="RuntimeError",
)
RUN_RESULT = ToolCallRunResult(
    "Done.",
    [RECORD, FAILED],
    2,
    run_id="run_1",
    usage=USAGE,
    cost_usd=0.0123,
    iteration_usage=[USAGE, Usage(1, 2, 0, 0)],
    messages=[USER, ASSISTANT, TOOL_RESULTS],
)
LIMITED_RESULT = ToolCallRunResult(
    "partial", [], 10, terminated_by_limit=True, stop_reason="max_iterations"
)
INSTRUCTION = InstructionFile("AGENTS.md", "project", ".", 120, 120)
CUT_INSTRUCTION = InstructionFile("/home/u/.config/AGENTS.md", "user", "", 100, 5000)
VARIABLE = ShownVariable("LOG_LEVEL", "debug", 5, False, False)
SECRET = ShownVariable("API_KEY", None, 40, True, False)
PATH_VARIABLE = ShownVariable("PATH", "${HOME}/bin", 11, False, True, expanded="/home/u/bin")
SERVER = TrustedServer(
    "files",
    "npx",
    ("-y", "@mcp/files"),
    ("API_KEY", "PATH"),
    "/usr/bin/npx",
    False,
    (VARIABLE, SECRET, PATH_VARIABLE),
)
SERVER_NOT_FOUND = TrustedServer("local", "./run.sh", (), (), "", True, ())
MOUNTS = (
    Mount("ro", "/usr", "the system's programs"),
    Mount("rw", "/work/project", "the sandbox"),
    Mount("tmpfs", "/tmp", "a private temporary folder", size=64 * 1024 * 1024),
    Mount("symlink", "/bin", "as on the host", source="usr/bin"),
    Mount("hidden", "/home/u/.ssh", "never visible", source="dir"),
)
VIEW = CommandView(MOUNTS, "/tmp/home", ("/etc/shadow: unreadable",), None, None, ("/x/.git",))
VIEW_REFUSED = CommandView((), "/tmp/home", (), "/home/u/.ssh", "/work/project/history.db")
IDENTITY = CommandIdentity(1000, 1000, True, "the daemon runs as root")
PROTECTED = ProtectedChange(".git/hooks/pre-commit", "hook", "a git hook", False, None)
PASSED = TaskOutcome(
    "task-1",
    "fast",
    "passed",
    run_id="run_1",
    stop_reason="final_answer",
    iterations=2,
    tool_calls=3,
    input_tokens=1200,
    output_tokens=80,
    cache_read_tokens=1000,
    cache_write_tokens=150,
    cost_usd=0.0123,
    duration_s=4.5,
    check={"command": "pytest", "exit_code": 0},
    workspace="/work/batch/task-1",
    tags=["python"],
)
FAILED_TASK = TaskOutcome(
    "task-2", "slow", "failed", error="timeout", retried="worker died", attempts=2
)
REPORT = BatchReport(
    "batch_1",
    "suite-a",
    "local",
    outcomes=[PASSED, FAILED_TASK],
    configurations=["fast", "slow"],
    planned=3,
    cancelled=True,
    duration_s=12.25,
)
EMPTY_REPORT = BatchReport("batch_2", "suite-b", "ray")
SKIPPED_LARGE = SkippedFile("data/big.bin", 3 * 1048576, "too_large")
SKIPPED_HEAVY = SkippedFile("node_modules/", 0, "heavy_folder")
# A checkpoint's data flattens its coverage into `ignored_held` and `pinned` (not `extras`),
# adds the computed `note`, and leaves out `files` (known only when just taken).
SNAPSHOT = Checkpoint(
    "ckpt_3",
    "run_1",
    "iteration",
    2,
    "/work/project",
    "c0ffee",
    "7ree",
    1700000002.75,
    skipped=(SKIPPED_LARGE, SKIPPED_HEAVY),
    warnings=("a file changed while it was read",),
    coverage=Coverage("e8a5", True, ("dist/out.js", "build/x")),
    files=12,
)
RESTORE_SNAPSHOT = Checkpoint(
    "ckpt_4",
    "restore_1",
    "restore",
    None,
    "/work/project",
    "beef",
    "7ree2",
    1700000003.0,
    restored_to="ckpt_3",
)

# name -> the value; each has a golden in goldens.py.
SAMPLES: dict[str, Any] = {
    "usage": USAGE,
    "usage_empty": Usage(),
    "record": RECORD,
    "record_failed": FAILED,
    "run_result": RUN_RESULT,
    "run_result_limited": LIMITED_RESULT,
    "message_user": USER,
    "message_user_images": USER_WITH_IMAGES,
    "message_assistant": ASSISTANT,
    "message_assistant_data": ASSISTANT_WITH_DATA,
    "message_tool": TOOL_RESULTS,
    "plan_step": PlanStep("Write the tests", "in_progress"),
    "instruction": INSTRUCTION,
    "instruction_cut": CUT_INSTRUCTION,
    "resource": RESOURCE,
    "resource_editor": EDITOR_RESOURCE,
    "image": IMAGE,
    "image_evicted": EVICTED,
    "summary": SUMMARY,
    "summary_restore": RESTORE_SUMMARY,
    "batch_label": BATCH,
    "iteration_usage": IterationUsage(1, USAGE, 0.01),
    "checkpoint": CHECKPOINT,
    "checkpoint_end": END_CHECKPOINT,
    "stored_run": STORED_RUN,
    "stored_run_going": STORED_RUN_GOING,
    "changed": CHANGED,
    "changed_ignored": CHANGED_IGNORED,
    "changed_not_utf8": CHANGED_NOT_UTF8,
    "shown_variable": VARIABLE,
    "shown_secret": SECRET,
    "shown_path_variable": PATH_VARIABLE,
    "trusted_server": SERVER,
    "trusted_server_not_found": SERVER_NOT_FOUND,
    **{f"mount_{mount.kind}": mount for mount in MOUNTS},
    "command_view": VIEW,
    "command_view_refused": VIEW_REFUSED,
    "command_identity": IDENTITY,
    "protected_change": PROTECTED,
    "task_outcome": PASSED,
    "task_outcome_failed": FAILED_TASK,
    "batch_report": REPORT,
    "batch_report_empty": EMPTY_REPORT,
    "skipped_file": SKIPPED_LARGE,
    "skipped_folder": SKIPPED_HEAVY,
    "snapshot": SNAPSHOT,
    "snapshot_restore": RESTORE_SNAPSHOT,
    "coverage": SNAPSHOT.coverage,
    "coverage_none": Coverage(),
    "setting_value": SettingValue("max_iterations", "CLEVERAGENTS_MAX_ITERATIONS", "7", "flag"),
    "setting_value_no_env": SettingValue("max_tokens", None, "the provider's", "default"),
}
