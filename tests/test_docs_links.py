"""The docs hold together and say what the code does.

- Every relative link in README.md, ARCHITECTURE.md, docs/*.md and protocol/README.md leads to
  a file that exists and, with `#anchor` into a Markdown file, to a heading there (GitHub's
  slugs).
- README.md is the user's page: at most 300 lines.
- Every `cleveragents ...` command a shell block of README.md or docs/*.md shows is one the
  real CLI takes: its subcommand, each sub-subcommand and each flag appear in the `--help` of
  that subcommand, run through `python -m cleveragents`.
- Every `CLEVERAGENTS_*` variable docs/settings.md names is named in the code under server/.
- The protocol README's title carries the daemon's PROTOCOL_VERSION.
- The variables docs/tools.md says a command gets are the command wall's own list.
- The changed-files sample in README.md is what the CLI prints for the run it describes.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import unicodedata
from functools import cache
from pathlib import Path

import pytest

from support import ROOT

DOCS = [
    ROOT / "README.md",
    ROOT / "ARCHITECTURE.md",
    ROOT / "protocol" / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
]
SERVER = ROOT / "server"

FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
INLINE_CODE = re.compile(r"(`+).+?\1")


def prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks (a fence closes on the same character, as long)."""
    lines: list[str] = []
    fence: str | None = None
    for line in text.splitlines():
        opened = FENCE.match(line)
        if fence is None:
            if opened:
                fence = opened.group(1)
            else:
                lines.append(line)
        elif opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
            if not line.strip()[len(opened.group(1)) :].strip():
                fence = None
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: markup dropped, lower case, punctuation dropped, '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.strip().lower()
    kept = []
    for char in text:
        if char in " -_" or unicodedata.category(char)[0] in "LN":
            kept.append("-" if char == " " else char)
    return "".join(kept)


@cache
def anchors(path: Path) -> frozenset[str]:
    """Every anchor a Markdown file's headings make, `-1`, `-2`... on repeats."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for line in prose_lines(path.read_text(encoding="utf-8")):
        heading = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not heading:
            continue
        base = slug(heading.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return frozenset(found)


def relative_links(path: Path) -> list[str]:
    links: list[str] = []
    for line in prose_lines(path.read_text(encoding="utf-8")):
        for target in LINK.findall(INLINE_CODE.sub("", line)):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # https:, mailto:, vscode:
                continue
            links.append(target)
    return links


def test_the_link_checker_reads_links_and_anchors_as_github_does(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# Many runs: `cleveragents batch`, Ray, and traces\n"
        "## Undo: workspace checkpoints\n## Undo: workspace checkpoints\n"
        "```\n# not a heading\n[not a link](nowhere.md)\n```\n"
        "See [this](#undo-workspace-checkpoints-1) and `[code](skipped.md)` and "
        "[that](other.md#x) and [web](https://example.com).\n",
        encoding="utf-8",
    )
    assert anchors(page) == {
        "many-runs-cleveragents-batch-ray-and-traces",
        "undo-workspace-checkpoints",
        "undo-workspace-checkpoints-1",
    }
    assert relative_links(page) == ["#undo-workspace-checkpoints-1", "other.md#x"]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(doc: Path) -> None:
    broken: list[str] = []
    for link in relative_links(doc):
        target, _, anchor = link.partition("#")
        path = (doc.parent / target).resolve() if target else doc
        if not path.exists():
            broken.append(f"{link}: no such file")
        elif anchor and path.suffix == ".md" and anchor.lower() not in anchors(path):
            broken.append(f"{link}: no heading #{anchor} in {path.relative_to(ROOT)}")
    assert not broken, f"{doc.relative_to(ROOT)}: " + "; ".join(broken)


def test_the_readme_is_at_most_300_lines() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines; detail goes to docs/"


# -- commands shown -----------------------------------------------------------------------------
def shell_commands(path: Path) -> list[list[str]]:
    """Each `cleveragents ...` command of a bash/sh block: its words, comments and `\\` joined."""
    text = path.read_text(encoding="utf-8")
    commands: list[list[str]] = []
    for block in re.findall(r"^```(?:bash|sh|shell|console)\n(.*?)^```", text, re.S | re.M):
        joined = re.sub(r"\\\n", " ", block)
        for line in joined.splitlines():
            words = shlex.split(line, comments=True)
            if words and words[0].endswith("cleveragents"):
                commands.append(words[1:])
    return commands


@cache
def help_text(subcommand: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "cleveragents", subcommand, "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": str(SERVER), "COLUMNS": "200"},
    )
    assert done.returncode == 0, f"cleveragents {subcommand} --help failed: {done.stderr}"
    return done.stdout


def problems_with(words: list[str]) -> list[str]:
    """What of a shown command the CLI does not know: the subcommand, a flag, a choice.
    `cleveragents` alone, or with options only, is the terminal session: `chat`'s."""
    subcommand, *rest = words if words and not words[0].startswith("-") else ["chat", *words]
    top = help_text(subcommand)
    problems: list[str] = []
    options = set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", top))
    # Positional choices only: `{list,show,...}` not right after an option's name.
    choices = {
        choice for group in re.findall(r"(?<!\w )\{([\w,-]+)\}", top) for choice in group.split(",")
    }
    for word in rest:
        if word.startswith("-"):
            flag = word.split("=", 1)[0]
            if flag not in options:
                problems.append(f"{flag} is not an option of `cleveragents {subcommand}`")
    # A sub-subcommand (`runs restore`, `trust forget`) is the first word when it has choices.
    if choices and rest and re.fullmatch(r"[a-z][a-z-]*", rest[0]) and rest[0] not in choices:
        problems.append(f"{rest[0]!r} is not one of {sorted(choices)}")
    return problems


SHOWN = [
    (path, words)
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for words in shell_commands(path)
]


def test_the_readme_shows_commands() -> None:
    assert sum(1 for path, _ in SHOWN if path.name == "README.md") >= 10


@pytest.mark.parametrize(
    ("path", "words"), SHOWN, ids=[f"{p.name}:{' '.join(w)[:60]}" for p, w in SHOWN]
)
def test_every_command_shown_is_one_the_cli_takes(path: Path, words: list[str]) -> None:
    assert not problems_with(words), problems_with(words)


def test_the_command_check_catches_a_flag_and_a_subcommand_that_do_not_exist() -> None:
    assert problems_with(["run", "hi", "--sandbox", ".", "--no-such-flag"]) == [
        "--no-such-flag is not an option of `cleveragents run`"
    ]
    assert problems_with(["runs", "undo", "run_1"]) and not problems_with(
        ["runs", "restore", "run_1", "--dry-run"]
    )
    done = subprocess.run(
        [sys.executable, "-m", "cleveragents", "frobnicate", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": str(SERVER)},
    )
    assert done.returncode != 0


# -- settings and facts the docs state ----------------------------------------------------------
@cache
def server_source() -> str:
    return "\n".join(path.read_text(encoding="utf-8") for path in sorted(SERVER.rglob("*.py")))


def test_every_variable_in_the_settings_doc_is_one_the_code_names() -> None:
    text = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    named = set(re.findall(r"\bCLEVERAGENTS_[A-Z0-9_]*[A-Z0-9]\b", text))
    assert len(named) >= 20
    source = server_source()
    unknown = sorted(name for name in named if not re.search(rf"[\"']{name}[\"']", source))
    assert not unknown, f"docs/settings.md names variables no code under server/ reads: {unknown}"


def test_the_protocol_readme_title_has_the_daemons_version() -> None:
    from cleveragents.protocol.wire import PROTOCOL_VERSION

    title = (ROOT / "protocol" / "README.md").read_text(encoding="utf-8").splitlines()[0]
    assert title == f"# The cleveragents protocol (v{PROTOCOL_VERSION})"


def test_the_variables_a_command_gets_are_the_command_walls() -> None:
    from cleveragents.settings_table import COMMAND_TAG_VARIABLE
    from cleveragents.workspace.command_policy import CORE_VARIABLES

    text = (ROOT / "docs" / "tools.md").read_text(encoding="utf-8")
    start = text.index("and gets only")
    sentence = text[start : text.index("Limits", start)]
    named = set(re.findall(r"`([A-Z_]+)`", sentence))
    plain = {name for name in CORE_VARIABLES if not name.startswith("LC_")}
    assert plain | {COMMAND_TAG_VARIABLE} <= named
    assert named <= set(CORE_VARIABLES) | {COMMAND_TAG_VARIABLE}


# The run README.md's "Undo" describes: edit src/inventory.py, write notes.md, remove notes.txt.
TIDY_SCRIPT = {
    "responses": [
        {
            "text": "Tidying.",
            "tool_calls": [
                {
                    "name": "edit_file",
                    "arguments": {
                        "path": "src/inventory.py",
                        "old_text": "TODO",
                        "new_text": "NOTE",
                    },
                },
                {"name": "write_file", "arguments": {"path": "notes.md", "content": "# Notes\n"}},
                {"name": "run_command", "arguments": {"command": "rm notes.txt"}},
            ],
        },
        {"text": "Done."},
    ]
}


def test_the_readme_changed_files_sample_is_what_the_cli_prints(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    [sample] = [b for b in re.findall(r"```text\n(.*?)```", readme, re.S) if "changed " in b]
    workspace = tmp_path / "workspace"
    shutil.copytree(ROOT / "examples" / "workspace", workspace)
    script = tmp_path / "tidy.json"
    script.write_text(json.dumps(TIDY_SCRIPT), encoding="utf-8")
    done = subprocess.run(
        [
            sys.executable, "-m", "cleveragents", "run", "Tidy the project",
            "--sandbox", str(workspace), "--profile", "full-auto",
            "--provider", "replay", "--script", str(script),
            "--history", str(tmp_path / "history.sqlite3"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": str(SERVER), "COLUMNS": "100"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    run_id = re.search(r"run_[0-9a-f]{16}", sample)
    assert run_id is not None
    printed = re.sub(r"run_[0-9a-f]{16}", run_id.group(0), done.stdout + done.stderr)
    tail = [line.rstrip() for line in printed.splitlines()][-len(sample.splitlines()) :]
    assert tail == sample.splitlines()
