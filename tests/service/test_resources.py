"""Attached files (resources): the sandbox wall, reading, the budget, and the first message."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cleveragents.service.resources import MAX_RESOURCES, ResourceRequest, load_resources
from cleveragents.tool import (
    FunctionLLMCaller,
    LLMRequest,
    LLMResponse,
    ToolCallingRuntime,
    ToolRegistry,
    ToolRunner,
    UserMessage,
)
from cleveragents.tool.events import RunStarted
from cleveragents.tool.resources import (
    RESOURCE_BUDGET_CHARS,
    RESOURCES_BUDGET_CHARS,
    Resource,
    fit_budget,
    prompt_with_resources,
)


@pytest.fixture
def sandbox(tmp_path: Path) -> Path:
    root = tmp_path / "sandbox"
    root.mkdir()
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    return root


def load(sandbox: Path, *requests: ResourceRequest) -> tuple[list[Resource], list[str]]:
    return load_resources(requests, str(sandbox))


def test_no_resources_leave_the_prompt_byte_for_byte() -> None:
    assert prompt_with_resources("Fix the bug.", []) == "Fix the bug."


def test_a_whole_file_a_line_range_and_editor_text(sandbox: Path) -> None:
    resources, problems = load(
        sandbox,
        ResourceRequest("src/app.py"),
        ResourceRequest(str(sandbox / "src" / "app.py"), start_line=3, end_line=4),
        ResourceRequest("src/new.py", text="print('unsaved')", start_line=7),
    )
    assert problems == []
    whole, ranged, editor = resources
    assert (whole.path, whole.start_line, whole.total_lines) == ("src/app.py", None, 10)
    assert whole.text.startswith("line 1\n") and whole.text.endswith("line 10\n")
    assert (ranged.path, ranged.text, ranged.start_line, ranged.end_line) == (
        "src/app.py",  # an absolute path inside the sandbox is shown relative to it
        "line 3\nline 4\n",
        3,
        4,
    )
    assert (editor.from_editor, editor.start_line, editor.end_line) == (True, 7, 7)
    message = prompt_with_resources("Explain.", resources)
    assert message == (
        "The user attached 3 files from the workspace. Each is shown below between fences, "
        "under its path and lines; the request follows.\n\n"
        "`src/app.py`, the whole file (10 lines):\n```\n"
        + whole.text
        + "```\n\n`src/app.py`, lines 3-4 of 10:\n```\nline 3\nline 4\n```\n\n"
        "`src/new.py`, line 7, as the editor has it (it may differ from the file on disk):\n"
        "```\nprint('unsaved')\n```\n\nExplain."
    )


def test_a_fence_outlasts_any_backticks_in_the_text() -> None:
    text = "Here is code:\n````python\nx = 1\n````\n"
    message = prompt_with_resources("Go.", [Resource("doc.md", text)])
    assert "\n`````\n" + text + "`````\n" in message


def test_paths_outside_the_sandbox_are_refused_naming_each_and_nothing_is_read(
    sandbox: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("do not show")
    (sandbox / "link").symlink_to(secret)
    resources, problems = load(
        sandbox,
        ResourceRequest("../secret.txt"),
        ResourceRequest(str(secret)),
        ResourceRequest("link"),
        ResourceRequest("~/.ssh/id_rsa"),
        ResourceRequest("src/app.py"),
    )
    assert resources == []
    assert [p.split(":")[0] for p in problems] == [
        "params.resources[0].path",
        "params.resources[1].path",
        "params.resources[2].path",
        "params.resources[3].path",
    ]
    assert all("do not show" not in p for p in problems)
    assert "outside the sandbox root" in problems[1]


def test_missing_binary_and_bad_ranges_are_named(sandbox: Path) -> None:
    (sandbox / "blob.bin").write_bytes(b"\x00\x01binary")
    _, problems = load(
        sandbox,
        ResourceRequest("nope.py"),
        ResourceRequest("blob.bin"),
        ResourceRequest("src/app.py", start_line=20, end_line=25),
        ResourceRequest("src/app.py", start_line=5, end_line=2),
        ResourceRequest("src/app.py", start_line=0),
        ResourceRequest("."),
    )
    assert problems[0].startswith("params.resources[3].endLine: 2 is before startLine 5")
    assert problems[1].startswith("params.resources[4].startLine: lines count from 1")
    assert problems[2].startswith("params.resources[5].path: '.' is the sandbox root")
    # The static checks come first; with them fixed, reading names the rest.
    _, problems = load(
        sandbox,
        ResourceRequest("nope.py"),
        ResourceRequest("blob.bin"),
        ResourceRequest("src/app.py", start_line=20, end_line=25),
    )
    assert problems[0].startswith("params.resources[0].path:")
    assert "binary" in problems[1] and problems[1].startswith("params.resources[1].path:")
    assert problems[2] == (
        "params.resources[2].startLine: line 20 is past the end of 'src/app.py', which has 10 lines"
    )


def test_too_many_files_are_refused(sandbox: Path) -> None:
    requests = [ResourceRequest("src/app.py")] * (MAX_RESOURCES + 1)
    _, problems = load(sandbox, *requests)
    assert problems == [f"params.resources: at most {MAX_RESOURCES} files, got {MAX_RESOURCES + 1}"]


def test_a_long_file_is_cut_at_a_line_end_and_says_how_to_read_the_rest(sandbox: Path) -> None:
    lines = [f"{n:06d} " + "x" * 92 + "\n" for n in range(1, 1001)]  # 100 characters a line
    (sandbox / "big.txt").write_text("".join(lines))
    (resource,), problems = load(sandbox, ResourceRequest("big.txt"))
    assert problems == []
    assert len(resource.text) <= RESOURCE_BUDGET_CHARS and resource.text.endswith("\n")
    shown = resource.text.count("\n")
    assert resource.text == "".join(lines[:shown])
    assert resource.omitted_chars == 100_000 - len(resource.text)
    message = prompt_with_resources("Go.", [resource])
    assert f"`big.txt`, lines 1-{shown} of 1000:" in message
    assert (
        f"[… {resource.omitted_chars:,} more characters of 'big.txt' left out: read_file with "
        f"path 'big.txt' and offset {shown + 1} shows the rest]"
    ) in message


def test_all_resources_together_keep_to_the_total_budget() -> None:
    big = [Resource(f"f{n}.txt", "y" * 60_000) for n in range(4)]
    fitted = fit_budget(big)
    assert sum(len(r.text) for r in fitted) <= RESOURCES_BUDGET_CHARS
    assert [len(r.text) for r in fitted] == [50_000, 50_000, 50_000, 0]
    assert fitted[3].omitted_chars == 60_000


async def test_the_runtime_puts_them_in_the_first_message_and_the_event(sandbox: Path) -> None:
    seen: list[LLMRequest] = []

    def model(request: LLMRequest) -> LLMResponse:
        seen.append(request)
        return LLMResponse(text="ok")

    registry = ToolRegistry()
    runtime = ToolCallingRuntime(registry, ToolRunner(registry), FunctionLLMCaller(model))
    resources, _ = load(sandbox, ResourceRequest("src/app.py", start_line=2, end_line=2))
    events: list[object] = []
    result = await runtime.arun_tool_loop(
        "What is on line 2?", resources=resources, observers=[events.append]
    )
    first = seen[0].messages[0]
    assert isinstance(first, UserMessage)
    assert first.text == prompt_with_resources("What is on line 2?", resources)
    assert "```\nline 2\n```" in first.text and first.text.endswith("What is on line 2?")
    assert result.messages[0] == first
    started = events[0]
    assert isinstance(started, RunStarted)
    assert started.prompt == "What is on line 2?"
    assert started.resources == tuple(resources)


def test_resources_read_through_a_symlink_inside_the_sandbox(sandbox: Path) -> None:
    os.symlink("src/app.py", sandbox / "alias.py")
    (resource,), problems = load(sandbox, ResourceRequest("alias.py", start_line=1, end_line=1))
    assert problems == [] and resource.text == "line 1\n"
