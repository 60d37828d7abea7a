from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from support.daemon_support import RawDaemon


@pytest.fixture
async def raw(tmp_path: Path) -> AsyncIterator[RawDaemon]:
    daemon = await RawDaemon.start(tmp_path)
    try:
        yield daemon
    finally:
        daemon.kill()
        await daemon.process.wait()
