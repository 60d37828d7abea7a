"""The quick look for `cleveragents.tools` entry points before importlib.metadata: it never
misses a package that declares the group (real folders on a real sys.path)."""

from __future__ import annotations

import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from cleveragents.toolsets import may_declare_tools, tools_from_entry_points


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
