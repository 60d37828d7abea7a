"""The quick look for `cleveragents.tools` entry points before importlib.metadata: it never
misses a package that declares the group (real folders on a real sys.path)."""

from __future__ import annotations

import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from cleveragents.toolsets import (
    build_registry,
    may_declare_tools,
    names_without_loading,
    tools_from_entry_points,
)
from cleveragents.workspace.builtin_names import BUILTIN_TOOL_NAMES


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Path]:
    """An empty folder first on sys.path (only plain folders, as in the project's venv)."""
    folder = tmp_path / "site"
    folder.mkdir()
    saved = list(sys.path)
    sys.path[:] = [str(folder), *(p for p in saved if Path(p or ".").is_dir())]
    try:
        yield folder
    finally:
        sys.path[:] = saved


def dist(site: Path, name: str, entry_points: str | None) -> None:
    info = site / f"{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    if entry_points is not None:
        (info / "entry_points.txt").write_text(entry_points)


def test_packages_without_the_group_need_no_metadata_scan(site: Path) -> None:
    dist(site, "other", "[console_scripts]\nother = other:main\n")
    dist(site, "bare", None)
    assert not may_declare_tools()
    assert tools_from_entry_points() == []


def test_a_package_declaring_the_group_is_loaded(site: Path) -> None:
    (site / "plugtools2.py").write_text(
        "from cleveragents.tool import tool\n\n"
        "@tool\n"
        "def plugged_twice(n: int) -> int:\n"
        '    """Double n."""\n'
        "    return 2 * n\n"
    )
    dist(site, "plugtools2", "[cleveragents.tools]\nplugged_twice = plugtools2:plugged_twice\n")
    assert may_declare_tools()
    assert [spec.name for spec in tools_from_entry_points()] == ["plugged_twice"]


def test_a_zip_on_sys_path_is_left_to_importlib_metadata(site: Path, tmp_path: Path) -> None:
    archive = tmp_path / "packages.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("empty.txt", "")
    sys.path.insert(0, str(archive))
    assert may_declare_tools()


def test_names_are_known_without_loading_only_when_no_module_or_plugin_may_add_one(
    site: Path,
) -> None:
    assert names_without_loading() == tuple(build_registry().names()) == BUILTIN_TOOL_NAMES
    assert names_without_loading(builtins=False) == ()
    assert names_without_loading(["daemon_tools"]) is None  # only its import can tell
    dist(site, "plugged", "[cleveragents.tools]\nx = plugged:x\n")
    assert names_without_loading() is None  # a declared plugin: only loading it can tell
    assert names_without_loading(plugins=False) == BUILTIN_TOOL_NAMES
