"""Custom commands: Markdown prompt files in the workspace and the user's config folder, read
from real files in temporary folders, expanded with `$ARGUMENTS` and `$1`..`$9`."""

from __future__ import annotations

from pathlib import Path

import pytest

from cleveragents.workspace.prompt_commands import (
    MAX_COMMAND_BYTES,
    expand_prompt_command,
    load_prompt_commands,
    parse_command_file,
    parse_invocation,
)


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    workspace = tmp_path / "workspace"
    (workspace / ".cleveragents" / "commands").mkdir(parents=True)
    user = tmp_path / "config"
    (user / "commands").mkdir(parents=True)
    return workspace, user


def test_a_file_is_a_prompt_with_an_optional_front_matter() -> None:
    plain = parse_command_file(
        "review", "# Review the change\n\nLook at $ARGUMENTS.\n", "user", "p"
    )
    assert (plain.description, plain.argument_hint) == ("Review the change", None)
    rich = parse_command_file(
        "fix",
        '---\ndescription: "Fix an issue"\nargument-hint: ISSUE [FILE]\n---\nFix issue $1 in $2.\n',
        "workspace",
        "q",
    )
    assert (rich.description, rich.argument_hint, rich.body) == (
        "Fix an issue",
        "ISSUE [FILE]",
        "Fix issue $1 in $2.",
    )


def test_arguments_and_positions_are_filled_once() -> None:
    fix = parse_command_file("fix", "Fix issue $1 in $2 ($ARGUMENTS). $3", "user", "p")
    assert fix.expand("42 src/app.py") == "Fix issue 42 in src/app.py (42 src/app.py)."
    # What the user typed is not read for placeholders itself.
    assert fix.expand("$2 $ARGUMENTS") == "Fix issue $2 in $ARGUMENTS ($2 $ARGUMENTS)."
    plain = parse_command_file("tidy", "Tidy the imports.", "user", "p")
    assert plain.expand("") == "Tidy the imports."
    assert plain.expand("  in src/  ") == "Tidy the imports.\n\nin src/"


def test_the_workspace_wins_and_bad_files_are_skipped(
    folders: tuple[Path, Path], tmp_path: Path
) -> None:
    workspace, user = folders
    commands = workspace / ".cleveragents" / "commands"
    (commands / "review.md").write_text("Review $ARGUMENTS like the team does.\n")
    (user / "commands" / "review.md").write_text("Review $ARGUMENTS my way.\n")
    (user / "commands" / "explain.md").write_text("Explain $ARGUMENTS simply.\n")
    (commands / "undo.md").write_text("A built-in name: never a custom command.\n")
    (commands / "notes.txt").write_text("not Markdown\n")
    (commands / "bad name.md").write_text("a space in the name\n")
    (commands / "empty.md").write_text("\n\n")
    (commands / "binary.md").write_bytes(b"\0\1")
    (commands / "huge.md").write_text("x" * (MAX_COMMAND_BYTES + 1))
    secret = tmp_path / "secret.md"
    secret.write_text("TOP SECRET\n")
    (commands / "leak.md").symlink_to(secret)
    found = load_prompt_commands(str(workspace), user)
    assert [(c.name, c.source) for c in found] == [("explain", "user"), ("review", "workspace")]
    assert found[1].path == ".cleveragents/commands/review.md"
    assert expand_prompt_command("/review src/app.py", str(workspace), user) == (
        "Review src/app.py like the team does."
    )
    assert expand_prompt_command("/explain", str(workspace), user) == "Explain  simply."
    assert expand_prompt_command("/leak", str(workspace), user) is None
    assert expand_prompt_command("/nothing here", str(workspace), user) is None
    assert expand_prompt_command("review src/app.py", str(workspace), user) is None
    # Without a workspace, the user's own still apply.
    assert [c.name for c in load_prompt_commands(None, user)] == ["explain", "review"]


def test_an_invocation_is_a_slash_a_name_and_the_rest() -> None:
    assert parse_invocation("/review src/app.py\nand the tests") == (
        "review",
        "src/app.py\nand the tests",
    )
    assert parse_invocation("  /tidy  ") == ("tidy", "")
    assert parse_invocation("/ review") is None
    assert parse_invocation("please /review") is None
