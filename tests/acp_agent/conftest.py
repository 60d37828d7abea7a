from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from support.acp_support import AgentProcess, RecordingClient, StartAgent, check_messages


@pytest.fixture
def start_agent(tmp_path: Path) -> StartAgent:
    """Start `cleveragents serve --acp`; on leaving, close it as an editor does, expect exit 0,
    and check every message that crossed the pipes, both ways, against the ACP schema."""

    @asynccontextmanager
    async def start(
        env: dict[str, str], *args: str, client: RecordingClient | None = None
    ) -> AsyncIterator[AgentProcess]:
        agent = await AgentProcess.start(tmp_path, env, *args, client=client)
        try:
            yield agent
            code = await agent.close()
            assert code == 0, agent.stderr.decode()
            assert check_messages(agent.messages()) > 0
        finally:
            agent.kill()

    return start
