"""The built-in system prompt tells the model the truth: its numbers and quoted texts are the
ones the code uses, so a change to a limit that forgets the prompt fails here."""

from __future__ import annotations

import re

from cleveragents.assembly import SYSTEM_PROMPT
from cleveragents.tool.context_guard import elided_results
from cleveragents.tool.messages import ToolResult, ToolResultsMessage
from cleveragents.tool.result_budget import DEFAULT_RESULT_BUDGET_CHARS, fit_to_budget
from cleveragents.tool.runtime import DEFAULT_MAX_REPEATED_CALLS
from cleveragents.workspace import builtin_tools
from cleveragents.workspace.command import DEFAULT_COMMAND_TIMEOUT_S, MAX_COMMAND_TIMEOUT_S
from cleveragents.workspace.files import DEFAULT_READ_LIMIT


def test_the_limits_the_prompt_names_are_the_code_s() -> None:
    assert f"({DEFAULT_RESULT_BUDGET_CHARS:,} characters unless configured" in SYSTEM_PROMPT
    assert f"window of lines ({DEFAULT_READ_LIMIT:,} by default)" in SYSTEM_PROMPT
    assert (
        f"timeout ({DEFAULT_COMMAND_TIMEOUT_S:g} s by default, at most "
        f"{MAX_COMMAND_TIMEOUT_S:g})" in SYSTEM_PROMPT
    )
    assert DEFAULT_MAX_REPEATED_CALLS == 3 and "three times in a row" in SYSTEM_PROMPT


def test_every_tool_and_error_kind_the_prompt_names_exists() -> None:
    from cleveragents.tool.records import ERROR_KINDS

    names = {spec.name for spec in builtin_tools()}
    mentioned = set(re.findall(r"\b([a-z]+_[a-z_]+|glob|grep)\b", SYSTEM_PROMPT))
    tools = {m for m in mentioned if m in names}
    assert tools == names, "every built-in tool is introduced"
    named_kinds = [*re.findall(r"error_kind (\w+)", SYSTEM_PROMPT), "repeated_call"]
    assert set(named_kinds) <= set(ERROR_KINDS)
    assert {"sandbox_violation", "denied", "timeout"} <= set(named_kinds)


def test_the_marker_and_the_note_the_prompt_quotes_are_what_the_model_will_see() -> None:
    cut = fit_to_budget("run_command", {"stdout": "x\n" * 50_000}, 2_000)["stdout"]
    assert re.search(r"\[… [\d,]+ of [\d,]+ characters .* left out", cut)
    assert '"[… N of M characters … left out …]"' in SYSTEM_PROMPT
    note = (
        elided_results(
            ToolResultsMessage((ToolResult("c", "read_file", {"content": "y" * 5_000}),))
        )
        .results[0]
        .content["elided"]
    )
    assert note.startswith("elided to fit the context: 5,0")
    assert '"elided to fit the context: N characters"' in SYSTEM_PROMPT
