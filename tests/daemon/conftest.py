from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from daemon_support import RawDaemon

# fake_openai.py (the OpenAI wire-format fake) lives one folder up.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


@pytest.fixture
def sandbox(tmp_path: Path) -> Path:
    folder = tmp_path / "sandbox"
    folder.mkdir()
    return folder


@pytest.fixture
async def raw(tmp_path: Path) -> AsyncIterator[RawDaemon]:
    daemon = await RawDaemon.start(tmp_path)
    try:
        yield daemon
    finally:
        daemon.kill()
        await daemon.process.wait()
