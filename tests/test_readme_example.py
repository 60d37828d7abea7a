"""The README's Python example runs exactly as printed."""

from __future__ import annotations

import re
import subprocess
import sys

from support import ROOT


def test_readme_python_example_runs_as_printed() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    assert blocks, "README has no python example"
    done = subprocess.run(
        [sys.executable, "-c", blocks[0]], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["The plan has 3 words.", "Tool calls: 1", "Iterations: 2"]


def test_readme_structured_tool_example_runs_as_printed() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    [block] = [b for b in re.findall(r"```python\n(.*?)```", readme, re.S) if "BaseModel" in b]
    done = subprocess.run(
        [sys.executable, "-c", block], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "invalid arguments for ship: to.zip_code: string should match pattern '^\\d{5}$'",
        "{'street': 'Main St', 'zip_code': '12345'}",
    ]


def test_readme_example_contains_the_contract_example_word_for_word() -> None:
    spec = ROOT.parent / "shared" / "spec" / "tool-calling-loop.md"
    if not spec.exists():  # CI lays shared/ beside the clone; a stray checkout may not have it
        spec = ROOT / "docs" / "spec" / "tool-calling-loop.md"
    contract = re.findall(r"```python\n(.*?)```", spec.read_text(encoding="utf-8"), re.S)[0]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    example = re.findall(r"```python\n(.*?)```", readme, re.S)[0]
    # Every line of the contract appears in the README example, in the same order.
    lines = iter(example.splitlines())
    for line in contract.splitlines():
        assert any(candidate == line for candidate in lines), f"missing or out of order: {line!r}"
