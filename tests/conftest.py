"""Shared helpers for tests: scripted models are functions of the request (no mocks of ours)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@pytest.fixture
def fixed_umask() -> Iterator[None]:
    """Umask 022 for the test (and the processes it starts): modes are compared exactly."""
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)
