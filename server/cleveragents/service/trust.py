"""Workspace trust: a sandbox's `.mcp.json` starts no program until the user trusts it.

Cloning a repository and asking a question must not run the repository's code. The servers a
`.mcp.json` names start only once the user has trusted that exact file (its SHA-256, over the
bytes) in that folder; when the file changes, they are asked again. Each front asks in its
own way (the daemon's `cleveragents/trustWorkspace` request, a terminal prompt, ACP's
`session/request_permission`), showing each server's name, command, arguments and the NAMES
of the variables it sets (never their values).

- Answers (yes and no) are remembered per folder and digest in `trusted-workspaces.json` in
  the user data folder, next to the run history (created 0600; a store that other users could
  write is ignored, since it could pre-trust anything).
- Not asked, or no answer in time, is not trusted, and nothing is remembered.
- Not trusted, the run goes on without those servers' tools, and the model is told why
  (`untrusted_note`).
- `trustWorkspace` / `CLEVERAGENTS_TRUST_WORKSPACE=1` / `--trust-workspace` pre-trusts every
  workspace, for automation; it is not remembered.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import shlex
import stat
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..mcp.config import CONFIG_FILE, HIDDEN_CHARACTERS, McpConfig
from .errors import ClientRequestError
from .history import default_history_path

log = logging.getLogger(__name__)

STORE_FILE_NAME = "trusted-workspaces.json"
STORE_VERSION = 1
CANNOT_ASK = (
    "nobody could be asked (no terminal, or a client that does not answer workspace-trust "
    "questions); to trust every workspace, set CLEVERAGENTS_TRUST_WORKSPACE=1"
)


@dataclass(frozen=True, slots=True)
class TrustedServer:
    """One server as the user is shown it: the command and arguments as written in the file
    (`${VAR}` unexpanded) and the names of the variables it sets."""

    name: str
    command: str
    args: tuple[str, ...]
    env_names: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class TrustRequest:
    """What the user is asked to trust: one `.mcp.json` of one folder, by its digest."""

    sandbox_root: str
    config_path: str
    config_hash: str
    servers: tuple[TrustedServer, ...]

    def describe(self) -> list[str]:
        """One line per server: `name: command args (sets VAR, VAR)`, for prompts."""
        lines = []
        for server in self.servers:
            line = f"{server.name}: {shell_line(server.command, server.args)}"
            if server.env_names:
                line += f"  (sets {', '.join(server.env_names)})"
            lines.append(line)
        return lines


TrustAsker = Callable[[TrustRequest], Awaitable[bool | None]]
"""Asks the user; True or False is their answer, None means no answer (not remembered)."""


def shell_line(command: str, args: tuple[str, ...]) -> str:
    """The command line as a shell would need it. A word with control or invisible format
    characters (an escape sequence that redraws the terminal, a bidi override that reorders
    what is shown, a newline that passes for another line) is written `$'…'` with them
    escaped: what the user is shown is what will run."""
    return " ".join(_shell_word(word) for word in (command, *args))


def _shell_word(word: str) -> str:
    if not HIDDEN_CHARACTERS.search(word):
        return shlex.quote(word)

    def escaped(char: str) -> str:
        code = ord(char)
        if char in "\\'":
            return "\\" + char
        if char == "\n":
            return "\\n"
        if char == "\t":
            return "\\t"
        if not HIDDEN_CHARACTERS.match(char):
            return char
        return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"

    return "$'" + "".join(escaped(char) for char in word) + "'"


def trust_request(sandbox_root: str, config: McpConfig) -> TrustRequest:
    return TrustRequest(
        sandbox_root=sandbox_root,
        config_path=config.path,
        config_hash=config.digest,
        servers=tuple(
            TrustedServer(
                name=server.name,
                command=server.written_command or server.command,
                args=server.written_args if server.written_command else server.args,
                env_names=tuple(server.env),
            )
            for server in config.servers
        ),
    )


NOTE_MAX_NAMES = 20
_PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,39}")


def untrusted_note(config_path: str, names: tuple[str, ...]) -> str:
    """What the model is told when a workspace's servers were withheld.

    The names come from a file nobody has trusted, and this goes into the system prompt: only
    short plain names are listed (at most NOTE_MAX_NAMES), the rest are counted, so the
    workspace cannot write its own instructions there through a server's name."""
    plain = [name for name in names if _PLAIN_NAME.fullmatch(name)][:NOTE_MAX_NAMES]
    rest = len(names) - len(plain)
    listed = ", ".join(plain)
    if rest:
        more = f"{rest} more" if plain else f"{rest} server{'s' if rest > 1 else ''}"
        listed = f"{listed} and {more}" if plain else more
    return (
        f"The MCP servers of this workspace's {CONFIG_FILE} ({listed}) were not started: the "
        "user has not trusted that file. Their tools are not available in this run; do not "
        "try to start those servers or run their commands another way. If you need them, say "
        "so: the user can trust the workspace and run again."
    )


def with_untrusted_note(system_prompt: str | None, config: McpConfig | None) -> str | None:
    """The system prompt, plus the note when `config` had servers withheld."""
    if config is None or not config.untrusted:
        return system_prompt
    note = untrusted_note(config.path, config.untrusted)
    return f"{system_prompt}\n\n{note}" if system_prompt else note


# -- the store -------------------------------------------------------------------------------


def default_store_path() -> Path:
    """`trusted-workspaces.json` in the user data folder (next to the run history)."""
    return default_history_path().parent / STORE_FILE_NAME


@dataclass(frozen=True, slots=True)
class TrustDecision:
    sandbox_root: str
    config_hash: str
    trusted: bool
    decided_at: float
    servers: tuple[str, ...]


class TrustStore:
    """Remembered answers, by folder and `.mcp.json` digest, in one small JSON file.

    Reads take the file as it is now (another daemon may have added answers); writes replace
    it atomically, under a lock file so two processes do not lose each other's answers.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else default_store_path()
        self._lock = threading.Lock()

    def decision(self, sandbox_root: str, config_hash: str) -> bool | None:
        """The remembered answer, or None when there is none."""
        entry = self._read().get(sandbox_root, {}).get(config_hash)
        if isinstance(entry, dict) and isinstance(entry.get("trusted"), bool):
            return bool(entry["trusted"])
        return None

    def remember(self, request: TrustRequest, trusted: bool) -> None:
        with self._locked():
            workspaces = self._read()
            folder = workspaces.setdefault(request.sandbox_root, {})
            folder[request.config_hash] = {
                "trusted": trusted,
                "decidedAt": time.time(),
                "configPath": request.config_path,
                "servers": [server.name for server in request.servers],
            }
            self._write(workspaces)

    def forget(self, sandbox_root: str) -> int:
        """Forget every answer about a folder (its next run asks again); how many there were."""
        with self._locked():
            workspaces = self._read()
            removed = len(workspaces.pop(sandbox_root, {}))
            if removed:
                self._write(workspaces)
        return removed

    def decisions(self) -> list[TrustDecision]:
        found = []
        for root, by_hash in sorted(self._read().items()):
            for digest, entry in by_hash.items():
                if not isinstance(entry, dict) or not isinstance(entry.get("trusted"), bool):
                    continue
                found.append(
                    TrustDecision(
                        sandbox_root=root,
                        config_hash=digest,
                        trusted=entry["trusted"],
                        decided_at=float(entry.get("decidedAt") or 0.0),
                        servers=tuple(str(n) for n in entry.get("servers") or ()),
                    )
                )
        return found

    def _read(self) -> dict[str, dict[str, Any]]:
        try:
            with open(self.path, "rb") as handle:
                info = os.fstat(handle.fileno())
                if not _safe_owner_and_mode(info):
                    log.warning(
                        "workspace trust store %s is writable by other users or not yours: "
                        "ignored (chmod 600 it, or delete it)",
                        self.path,
                    )
                    return {}
                document = json.loads(handle.read().decode("utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            log.warning("workspace trust store %s unreadable (%s): ignored", self.path, exc)
            return {}
        workspaces = document.get("workspaces") if isinstance(document, dict) else None
        if not isinstance(workspaces, dict):
            return {}
        return {k: v for k, v in workspaces.items() if isinstance(v, dict)}

    def _write(self, workspaces: dict[str, dict[str, Any]]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        text = json.dumps({"version": STORE_VERSION, "workspaces": workspaces}, indent=2)
        handle, temporary = tempfile.mkstemp(prefix=".trusted-", dir=self.path.parent)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as file:  # mkstemp makes it 0600
                file.write(text + "\n")
            os.replace(temporary, self.path)
        except BaseException:
            with suppress(OSError):
                os.unlink(temporary)
            raise

    @contextmanager
    def _locked(self) -> Iterator[None]:
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            if sys.platform == "win32":
                yield
                return
            import fcntl

            descriptor = os.open(self.path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX)
                yield
            finally:
                os.close(descriptor)


def _safe_owner_and_mode(info: os.stat_result) -> bool:
    if sys.platform == "win32":
        return True
    return info.st_uid == os.getuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


# -- the decision ----------------------------------------------------------------------------


class WorkspaceTrust:
    """Decides, for one run, whether a `.mcp.json`'s servers may start (see the module)."""

    def __init__(
        self,
        store: TrustStore,
        *,
        pre_trusted: bool,
        timeout_s: float,
        ask: TrustAsker | None,
        cannot_ask: str = CANNOT_ASK,
    ) -> None:
        self.store = store
        self.pre_trusted = pre_trusted
        self.timeout_s = timeout_s
        self.ask = ask
        self.cannot_ask = cannot_ask

    async def admit(self, sandbox_root: str, config: McpConfig) -> McpConfig:
        """`config` itself when trusted, else the same with its servers withheld."""
        if not config.servers or self.pre_trusted:
            return config
        # The store is a file another daemon may hold locked: read and written off the loop.
        remembered = await asyncio.to_thread(self.store.decision, sandbox_root, config.digest)
        if remembered is True:
            return config
        declined = (
            f"not trusted: you declined this {CONFIG_FILE} ({config.digest[:12]}); "
            f"`cleveragents trust forget {shlex.quote(sandbox_root)}` to be asked again"
        )
        if remembered is False:
            return config.withheld(declined)
        request = trust_request(sandbox_root, config)
        answer, why = await self._ask(request)
        if answer is None:
            log.warning("MCP servers of %s not started: not trusted (%s)", config.path, why)
            return config.withheld(f"not trusted: {why}")
        await asyncio.to_thread(self.store.remember, request, answer)
        return config if answer else config.withheld(declined)

    async def _ask(self, request: TrustRequest) -> tuple[bool | None, str]:
        if self.ask is None:
            return None, self.cannot_ask
        try:
            answer = await asyncio.wait_for(self.ask(request), self.timeout_s)
        except TimeoutError:
            return None, f"no answer within {self.timeout_s:g} s"
        except ClientRequestError as exc:
            return None, f"the question failed: {exc}"
        if answer is None:
            return None, self.cannot_ask
        return answer, ""
