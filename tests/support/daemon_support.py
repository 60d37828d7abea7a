"""Helpers for the daemon tests: environment, replay scripts, a raw client, the schema."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

DAEMON_TESTS = Path(__file__).resolve().parents[1] / "daemon"  # daemon_tools.py, node/
REPO = DAEMON_TESTS.parents[1]
SCHEMA_FILE = REPO / "protocol" / "schema.json"
WAIT_S = 60.0  # a ceiling against hangs, never a timing assertion

MISSING: Any = object()


def daemon_env(home: Path) -> dict[str, str]:
    """The environment of a daemon under test: our tools importable, no user settings."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CLEVERAGENTS_", "ANTHROPIC_", "OPENAI_"))
    }
    env["PYTHONPATH"] = os.pathsep.join([str(DAEMON_TESTS), *filter(None, [env.get("PYTHONPATH")])])
    env["XDG_DATA_HOME"] = str(home / "data")
    # The user's own AGENTS.md lives in the config folder: none of the tester's in a test.
    env["XDG_CONFIG_HOME"] = str(home / "config")
    env["PYTHONUNBUFFERED"] = "1"
    return env


def daemon_command(history: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "cleveragents.daemon",
        "--stdio",
        "--history",
        str(history),
        *extra,
    ]


def write_script(path: Path, *responses: dict[str, Any]) -> str:
    """A replay-provider script: one response per LLM call of a run."""
    path.write_text(json.dumps({"responses": list(responses)}), encoding="utf-8")
    return str(path)


def call(tool_name: str, call_id: str | None = None, /, **arguments: Any) -> dict[str, Any]:
    """One scripted tool call; keyword arguments are the tool's arguments."""
    entry: dict[str, Any] = {"name": tool_name, "arguments": arguments}
    if call_id is not None:
        entry["id"] = call_id
    return entry


def replay_options(script: str, **extra: Any) -> dict[str, Any]:
    """initializationOptions: the replay provider and the test tools, no built-ins."""
    options: dict[str, Any] = {
        "provider": "replay",
        "replayScript": script,
        "toolModules": ["daemon_tools"],
        "builtinTools": False,
        "pluginTools": False,
    }
    options.update(extra)
    return options


@cache
def protocol_schema() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    return data


def check_against_schema(method: str, params: Any, part: str = "params") -> None:
    """Validate a message's params (or result) against protocol/schema.json."""
    schema = protocol_schema()
    ref = schema["x-methods"][method][part]
    validator = jsonschema.Draft202012Validator({**ref, "$defs": schema["$defs"]})
    validator.validate(params)


def check_type(name: str, value: Any) -> None:
    schema = protocol_schema()
    validator = jsonschema.Draft202012Validator(
        {"$ref": f"#/$defs/{name}", "$defs": schema["$defs"]}
    )
    validator.validate(value)


async def only_record(raw: RawDaemon, run_request: Any, call_id: str) -> dict[str, Any]:
    """The record of a run's one tool call, `call_id`, from the run's answer."""
    reply = await raw.response(run_request)
    assert "result" in reply, reply
    records: list[dict[str, Any]] = reply["result"]["toolCallHistory"]
    assert [r["callId"] for r in records] == [call_id]
    return records[0]


def frame(body: bytes | str) -> bytes:
    data = body.encode() if isinstance(body, str) else body
    return b"Content-Length: %d\r\n\r\n%s" % (len(data), data)


class RawDaemon:
    """A daemon driven by hand-written framing (no pygls, no JSON-RPC library)."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.received: list[dict[str, Any]] = []
        self.stderr = bytearray()
        self._arrived = asyncio.Condition()
        self._next_id = 1000
        self._reader = asyncio.ensure_future(self._read())
        self._stderr_reader = asyncio.ensure_future(self._read_stderr())

    @classmethod
    async def start(cls, home: Path, *extra: str, env: dict[str, str] | None = None) -> RawDaemon:
        process = await asyncio.create_subprocess_exec(
            *daemon_command(home / "history.sqlite3", *extra),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**daemon_env(home), **(env or {})},
            cwd=str(home),
        )
        return cls(process)

    async def _read(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        while True:
            headers: dict[str, str] = {}
            while True:
                line = await stdout.readline()
                if not line:
                    return
                if line == b"\r\n":
                    break
                assert line.endswith(b"\r\n"), f"the daemon sent a bad header line {line!r}"
                name, _, value = line.decode("ascii").partition(":")
                headers[name.strip().lower()] = value.strip()
            body = await stdout.readexactly(int(headers["content-length"]))
            message = json.loads(body)
            async with self._arrived:
                self.received.append(message)
                self._arrived.notify_all()

    async def _read_stderr(self) -> None:
        stderr = self.process.stderr
        assert stderr is not None
        while chunk := await stderr.read(65536):
            self.stderr += chunk

    # -- sending ------------------------------------------------------------------------------
    def write(self, data: bytes) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write(data)

    def send(self, message: Any) -> None:
        self.write(frame(json.dumps(message)))

    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def send_request(self, method: str, params: Any = MISSING, msg_id: Any = None) -> Any:
        msg_id = self.new_id() if msg_id is None else msg_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not MISSING:
            message["params"] = params
        self.send(message)
        return msg_id

    async def request(self, method: str, params: Any = MISSING) -> dict[str, Any]:
        return await self.response(self.send_request(method, params))

    def notify(self, method: str, params: Any = MISSING) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not MISSING:
            message["params"] = params
        self.send(message)

    async def initialize(
        self, options: dict[str, Any] | None = None, capabilities: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        answer = await self.request(
            "initialize",
            {
                "processId": os.getpid(),
                "capabilities": capabilities or {},
                "initializationOptions": options,
            },
        )
        assert "result" in answer, answer
        self.notify("initialized", {})
        return answer

    # -- receiving ----------------------------------------------------------------------------
    async def wait_for(
        self, predicate: Callable[[dict[str, Any]], bool], start: int = 0
    ) -> dict[str, Any]:
        """The first message (from index `start`) that satisfies `predicate`."""

        async def find() -> dict[str, Any]:
            async with self._arrived:
                while True:
                    for message in self.received[start:]:
                        if predicate(message):
                            return message
                    if self._reader.done():
                        raise AssertionError(
                            "the daemon closed stdout; stderr:\n" + self.stderr.decode()
                        )
                    await self._arrived.wait()

        return await asyncio.wait_for(find(), WAIT_S)

    async def response(self, msg_id: Any) -> dict[str, Any]:
        return await self.wait_for(
            lambda m: m.get("id") == msg_id and ("result" in m or "error" in m)
        )

    async def error(self, msg_id: Any, start: int) -> dict[str, Any]:
        """The next error with this id (null ids included) from index `start`."""
        answer = await self.wait_for(lambda m: "error" in m and m.get("id") == msg_id, start)
        return dict(answer["error"])

    def notifications(self, method: str) -> list[dict[str, Any]]:
        return [m["params"] for m in self.received if m.get("method") == method]

    async def close(self) -> int:
        stdin = self.process.stdin
        if stdin is not None and not stdin.is_closing():
            stdin.close()
        code = await asyncio.wait_for(self.process.wait(), WAIT_S)
        await asyncio.wait_for(self._reader, WAIT_S)
        await asyncio.wait_for(self._stderr_reader, WAIT_S)
        return code

    def kill(self) -> None:
        if self.process.returncode is None:
            self.process.kill()
