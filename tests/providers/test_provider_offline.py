"""The offline model: deterministic, local, profile-aware, and honest about being offline."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from cleveragents.providers import ProviderConfigError, create_llm_caller, resolve_provider_name
from cleveragents.providers.offline import NOTICE, REPORT_FILE, OfflineCaller, synthesise
from cleveragents.tool import ToolActorContext, ToolCallingRuntime, ToolRegistry, ToolRunner


def workspace_tools() -> ToolRegistry:
    """Small real file tools (the built-in ones have their own tests)."""
    registry = ToolRegistry()

    @registry.tool
    def list_dir(sandbox_root: str, path: str = ".") -> dict[str, Any]:
        """List a folder."""
        base = Path(sandbox_root, path)
        return {
            "entries": [
                {"name": p.name, "type": "file" if p.is_file() else "dir"}
                for p in sorted(base.iterdir())
            ]
        }

    @registry.tool
    def read_file(sandbox_root: str, path: str) -> dict[str, Any]:
        """Read a file."""
        return {"content": Path(sandbox_root, path).read_text()}

    @registry.tool(mutating=True)
    def write_file(sandbox_root: str, path: str, content: str) -> dict[str, Any]:
        """Write a file."""
        Path(sandbox_root, path).write_text(content)
        return {"bytes": len(content)}

    @registry.tool(mutating=True)
    def edit_file(sandbox_root: str, path: str, old_string: str, new_string: str) -> dict[str, Any]:
        """Replace text that occurs exactly once."""
        target = Path(sandbox_root, path)
        text = target.read_text()
        if text.count(old_string) != 1:
            raise ValueError("old_string must occur exactly once")
        target.write_text(text.replace(old_string, new_string))
        return {"replaced": 1}

    @registry.tool(executes_code=True)
    def run_command(sandbox_root: str, command: str) -> dict[str, Any]:
        """Run a command (here: only records that it was asked)."""
        return {"command": command}

    return registry


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "README.md").write_text("# Demo\nA demo project.\n")
    (tmp_path / "main.py").write_text("print('hello')\n")
    return tmp_path


def run(project: Path, profile: str) -> Any:
    registry = workspace_tools()
    runtime = ToolCallingRuntime(registry, ToolRunner(registry), OfflineCaller())
    context = ToolActorContext(sandbox_root=str(project), automation_profile=profile)
    return runtime.run_tool_loop("Summarise this project", context)


def test_full_auto_reads_first_then_writes_then_answers(project: Path) -> None:
    result = run(project, "full-auto")
    calls = [(r.tool_name, r.success) for r in result.tool_call_history]
    assert calls == [
        ("list_dir", True),
        ("read_file", True),
        ("write_file", True),
        ("edit_file", True),
        ("run_command", True),
    ]
    # The reader was fed a file the lister found, README first.
    assert result.tool_call_history[1].inputs["path"] == "README.md"
    report = (project / REPORT_FILE).read_text()
    assert report.startswith("# cleveragents offline report (checked)")
    assert "- README.md" in report and "- main.py" in report
    assert result.stop_reason == "final_answer"
    assert result.content.startswith(NOTICE)
    assert "5 tool call(s)" in result.content and "5 succeeded" in result.content


def test_read_only_never_calls_a_mutating_tool(project: Path) -> None:
    result = run(project, "read-only")
    assert [r.tool_name for r in result.tool_call_history] == ["list_dir", "read_file"]
    assert not (project / REPORT_FILE).exists()


@pytest.mark.parametrize("profile", ["ask", "auto-edit"])
def test_edits_go_through_the_profile_and_commands_only_in_full_auto(
    project: Path, profile: str
) -> None:
    result = run(project, profile)
    names = [r.tool_name for r in result.tool_call_history]
    assert names == ["list_dir", "read_file", "write_file", "edit_file"]
    kinds = [r.error_kind for r in result.tool_call_history[2:]]
    # With no approver, `ask` denies the edits; `auto-edit` runs them.
    assert kinds == (["denied", "denied"] if profile == "ask" else [None, None])
    assert "failed" in result.content


def test_it_is_deterministic(project: Path) -> None:
    first = run(project, "read-only")
    second = run(project, "read-only")

    def strip(result: Any) -> list[tuple[str, Any, Any]]:
        return [(c.tool_name, c.inputs, c.output) for c in result.tool_call_history]

    assert strip(first) == strip(second) and first.content == second.content


def test_no_tools_still_answers(project: Path) -> None:
    registry = ToolRegistry()
    result = ToolCallingRuntime(registry, ToolRunner(registry), OfflineCaller()).run_tool_loop("hi")
    assert result.iterations == 1 and NOTICE in result.content


def test_synthesised_values_satisfy_their_schemas() -> None:
    from jsonschema import validate

    schemas: list[dict[str, Any]] = [
        {"type": "string", "minLength": 12},
        {"type": "integer", "minimum": 3},
        {"type": "number"},
        {"type": "boolean"},
        {"enum": ["a", "b"]},
        {"type": "array", "items": {"type": "integer"}, "minItems": 2},
        {
            "type": "object",
            "properties": {"x": {"type": "string"}, "y": {"type": "integer"}},
            "required": ["x"],
        },
        {"anyOf": [{"type": "string"}, {"type": "null"}]},
        {"type": ["null", "integer"]},
    ]
    for schema in schemas:
        validate(synthesise(schema), schema)


def test_factory_defaults_to_offline_and_rejects_unknown_names(monkeypatch: Any) -> None:
    monkeypatch.delenv("CLEVERAGENTS_PROVIDER", raising=False)
    assert resolve_provider_name(None) == "offline"
    assert isinstance(create_llm_caller(), OfflineCaller)
    monkeypatch.setenv("CLEVERAGENTS_PROVIDER", "replay")
    assert resolve_provider_name(None) == "replay"
    with pytest.raises(ProviderConfigError, match="needs a script"):
        create_llm_caller()
    with pytest.raises(ProviderConfigError, match="unknown provider 'gpt'"):
        create_llm_caller("gpt")
    monkeypatch.delenv("OPENAI_MODEL", raising=False)
    with pytest.raises(ProviderConfigError, match="needs a model name"):
        create_llm_caller("openai", base_url="http://127.0.0.1:9")
    assert os.environ.get("CLEVERAGENTS_PROVIDER") == "replay"


def test_a_prompt_of_several_steps_gets_a_plan_kept_as_the_phases_go(tmp_path: Path) -> None:
    from cleveragents.tool.events import PlanUpdated, RunEvent
    from cleveragents.toolsets import build_registry

    (tmp_path / "notes.md").write_text("TODO: tidy\n")
    registry = build_registry(plugins=False)
    runtime = ToolCallingRuntime(registry, ToolRunner(registry), OfflineCaller())
    events: list[RunEvent] = []

    def plans(prompt: str, profile: str) -> list[list[tuple[str, str]]]:
        events.clear()
        result = runtime.run_tool_loop(
            prompt,
            ToolActorContext(sandbox_root=str(tmp_path), automation_profile=profile),
            observers=[events.append],
        )
        assert result.stop_reason == "final_answer"
        assert all(r.success for r in result.tool_call_history if r.tool_name == "update_plan")
        return [[(s.text, s.status) for s in e.steps] for e in events if isinstance(e, PlanUpdated)]

    several = "Find the TODOs, then write a short report"
    look, read, change = (
        "Look around the workspace",
        "Read what looks most relevant",
        "Make the changes",
    )
    assert plans(several, "full-auto") == [
        [(look, "in_progress"), (read, "pending"), (change, "pending")],
        [(look, "done"), (read, "in_progress"), (change, "pending")],
        [(look, "done"), (read, "done"), (change, "in_progress")],
        [(look, "done"), (read, "done"), (change, "done")],
    ]
    # Under read-only nothing may change: the plan has no such step. The same prompt twice
    # gives the same plans (deterministic).
    first = plans(several, "read-only")
    assert first == plans(several, "read-only")
    assert first[-1] == [(look, "done"), (read, "done")]
    # A one-step prompt gets no plan.
    assert plans("Find the TODOs and write a short report", "full-auto") == []


@pytest.mark.parametrize(
    ("prompt", "several"),
    [
        ("Find the TODOs, then write a report", True),
        ("Tasks:\n1. find the TODOs\n2. write a report", True),
        ("- list the files\n- read the README", True),
        ("Find the TODOs and write a report", False),
        ("And then?", False),
        ("Read notes.txt", False),
    ],
)
def test_what_counts_as_several_steps(prompt: str, several: bool) -> None:
    from cleveragents.providers.offline import _several_steps

    assert _several_steps(prompt) is several
