"""Fixtures every test folder may use (the root conftest registers this module)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def sandbox(tmp_path: Path) -> Path:
    """An empty folder to run in, beside (not inside) the test's other files."""
    folder = tmp_path / "sandbox"
    folder.mkdir()
    return folder


@pytest.fixture
def fixed_umask() -> Iterator[None]:
    """Umask 022 for the test (and the processes it starts): modes are compared exactly."""
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)
