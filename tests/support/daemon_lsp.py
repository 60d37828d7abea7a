"""A pytest-lsp client session with the daemon: collects our notifications, answers approvals."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import cattrs
from lsprotocol import types
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    default_converter,
)
from pytest_lsp import ClientServerConfig, LanguageClient
from pytest_lsp.client import register_lsp_features

from cleveragents.protocol import wire
from support.daemon_support import WAIT_S, daemon_command, daemon_env

NOTIFICATIONS = [m.name for m in wire.METHODS if m.kind == "notification"]


def raw_params_converter() -> cattrs.Converter:
    """pygls's client converter, but our methods' params and results stay plain JSON.

    (By default pygls turns them into namedtuples.)
    """
    converter: cattrs.Converter = default_converter()  # type: ignore[no-untyped-call]

    def keep(data: dict[str, Any], cls: type) -> Any:
        return cls(**data)

    for cls in (JsonRPCNotification, JsonRPCRequestMessage, JsonRPCResponseMessage):
        converter.register_structure_hook(cls, keep)
    return converter


def make_client() -> LanguageClient:
    client = LanguageClient(converter_factory=raw_params_converter)
    register_lsp_features(client)
    return client


Decide = Callable[[dict[str, Any]], Any]


class LspSession:
    def __init__(self, client: LanguageClient) -> None:
        self.client = client
        self.notes: list[tuple[str, dict[str, Any]]] = []
        self.approval_requests: list[dict[str, Any]] = []
        self.decide: Decide = lambda params: {"decision": "deny"}
        self.initialize_result: types.InitializeResult | None = None
        self._arrival = asyncio.Event()
        for method in NOTIFICATIONS:
            client.feature(method)(self._collector(method))
        client.feature("cleveragents/approveToolCall")(self._approver())

    def _collector(self, method: str) -> Callable[[Any], None]:
        def collect(params: Any) -> None:
            self.notes.append((method, params))
            self._arrival.set()

        return collect

    def _approver(self) -> Callable[[Any], Any]:
        async def approve(params: Any) -> Any:
            self.approval_requests.append(params)
            self._arrival.set()
            answer = self.decide(params)
            if inspect.isawaitable(answer):
                answer = await answer
            return answer

        return approve

    async def request(self, method: str, params: Any = None) -> Any:
        return await asyncio.wait_for(
            self.client.protocol.send_request_async(method, params),  # type: ignore[no-untyped-call]
            WAIT_S,
        )

    def start(self, method: str, params: Any) -> asyncio.Task[Any]:
        return asyncio.ensure_future(self.request(method, params))

    async def wait_until(self, predicate: Callable[[], Any]) -> Any:
        """Check `predicate` whenever a message arrives (and now and then, for outside state)."""

        async def watch() -> Any:
            while True:
                self._arrival.clear()
                found = predicate()
                if found:
                    return found
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._arrival.wait(), 0.05)

        return await asyncio.wait_for(watch(), WAIT_S)

    async def wait_for_note(self, method: str, **match: Any) -> dict[str, Any]:
        def find() -> dict[str, Any] | None:
            for name, params in self.notes:
                if name == method and all(params.get(k) == v for k, v in match.items()):
                    return params
            return None

        found: dict[str, Any] = await self.wait_until(find)
        return found

    def run_notes(self, run_id: str) -> list[tuple[str, dict[str, Any]]]:
        return [(m, p) for m, p in self.notes if p.get("runId") == run_id]


@contextlib.asynccontextmanager
async def lsp_session(
    home: Path,
    options: dict[str, Any] | None,
    *,
    experimental: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
) -> AsyncIterator[LspSession]:
    config = ClientServerConfig(
        server_command=daemon_command(home / "history.sqlite3"),
        server_env={**daemon_env(home), **(env or {})},
        client_factory=make_client,
    )
    client = await config.start()
    assert isinstance(client, LanguageClient)
    session = LspSession(client)
    try:
        session.initialize_result = await asyncio.wait_for(
            client.initialize_session(
                types.InitializeParams(
                    capabilities=types.ClientCapabilities(experimental=experimental),
                    initialization_options=options,
                )
            ),
            WAIT_S,
        )
        yield session
        await asyncio.wait_for(client.shutdown_session(), WAIT_S)
    finally:
        server = client._server
        if server is not None and server.returncode is None and server.stdin is not None:
            server.stdin.close()  # the daemon exits when its stdin closes
            try:
                await asyncio.wait_for(server.wait(), WAIT_S)
            except TimeoutError:
                server.kill()
        await client.stop()  # type: ignore[no-untyped-call]
