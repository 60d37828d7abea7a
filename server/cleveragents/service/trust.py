"""Workspace trust: a sandbox's `.mcp.json` starts no program until the user trusts it.

Cloning a repository and asking a question must not run the repository's code. The servers a
`.mcp.json` names start only once the user has trusted exactly what they were shown in that
folder; when it changes, they are asked again. Each front asks in its own way (the daemon's
`cleveragents/trustWorkspace` request, a terminal prompt, ACP's `session/request_permission`),
showing for each server its name, the command and arguments as written, the program that will
run (the absolute path, resolved with the server's own `PATH` and working folder: the one the
connection starts; flagged when it lies in the workspace) and every variable it sets with its
value. Values that look like secrets are masked (their presence and length shown); variables
that change which program runs or what it loads (`PATH`, `LD_*`, `NODE_OPTIONS`, `PYTHON*`,
... `RUNS_CODE_VARIABLES`) are never masked and are flagged. The digest the answer is kept
under (`trust_digest`) covers the file's bytes and what the question shows beyond them: each
resolved program (and the content of one inside the workspace) and the expanded values of the
flagged variables.

- Answers (yes and no) are remembered per folder and digest in `trusted-workspaces.json` in
  the user data folder, next to the run history (created 0600; a store that other users could
  write is ignored, since it could pre-trust anything).
- Not asked, or no answer in time, is not trusted, and nothing is remembered.
- Not trusted, the run goes on without those servers' tools, and the model is told why
  (`untrusted_note`).
- `trustWorkspace` / the trust-workspace variable set to 1 / `--trust-workspace` pre-trusts every
  workspace, for automation; it is not remembered.
"""

from __future__ import annotations

import asyncio
import fnmatch
import hashlib
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

from ..mcp.config import CONFIG_FILE, HIDDEN_CHARACTERS, McpConfig, McpServerConfig
from ..settings_table import ENV_TRUST_WORKSPACE
from ..tool.serialization import register_shape
from .errors import ClientRequestError
from .history import default_history_path

log = logging.getLogger(__name__)

STORE_FILE_NAME = "trusted-workspaces.json"
STORE_VERSION = 1
CANNOT_ASK = (
    "nobody could be asked (no terminal, or a client that does not answer workspace-trust "
    f"questions); to trust every workspace, set {ENV_TRUST_WORKSPACE}=1"
)


RUNS_CODE_VARIABLES = (
    "PATH",
    "LD_*",
    "DYLD_*",
    "NODE_OPTIONS",
    "NODE_PATH",
    "NODE_EXTRA_CA_CERTS",
    "NPM_CONFIG_*",
    "npm_config_*",
    "PYTHON*",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "UV_*",
    "PIP_*",
    "BASH_ENV",
    "ENV",
    "ZDOTDIR",
    "SHELLOPTS",
    "BASHOPTS",
    "PS4",
    "PROMPT_COMMAND",
    "IFS",
    "PERL5LIB",
    "PERL5OPT",
    "PERLLIB",
    "RUBYOPT",
    "RUBYLIB",
    "GEM_HOME",
    "GEM_PATH",
    "BUNDLE_*",
    "GIT_*",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "CLASSPATH",
    "DOTNET_*",
    "GCONV_PATH",
    "GLIBC_TUNABLES",
    "MALLOC_*",
    "HOME",
    "XDG_CONFIG_HOME",
    "XDG_DATA_DIRS",
    "EDITOR",
    "VISUAL",
    "PAGER",
    "SHELL",
)
"""Variables that change which program runs, or what code it loads or runs first (the dynamic
loader's, the interpreters', the shells' start-up files, git's, and the folders programs read
their configuration from). Their values are shown in full and flagged, never masked."""

_SECRET_NAME = re.compile(
    r"TOKEN|SECRET|PASSW|PASSPHRASE|API_?KEY|ACCESS_?KEY|PRIVATE|CREDENTIAL|AUTH|COOKIE|"
    r"SESSION|(^|_)KEY($|_)|(^|_)PAT($|_)|(^|_)PWD($|_)",
    re.IGNORECASE,
)
_SECRET_VALUE = re.compile(
    r"(?<![A-Za-z0-9])(sk|pk|rk)-[A-Za-z0-9_-]{8,}|gh[pousr]_[A-Za-z0-9]{16,}|github_pat_\w{16,}|"
    r"glpat-[\w-]{16,}|xox[abprs]-[\w-]{8,}|A[KS]IA[0-9A-Z]{16}|AIza[\w-]{30,}|"
    r"eyJ[\w-]{8,}\.[\w-]{8,}\.[\w-]*|-----BEGIN [A-Z ]*PRIVATE KEY-----"
)
_RANDOM_LOOKING = re.compile(r"[A-Za-z0-9_+=.-]{24,}")
_REFERENCE = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*(?::-[^}]*)?\}")


def changes_what_runs(name: str) -> bool:
    """Whether a variable changes which program runs or what it loads (`RUNS_CODE_VARIABLES`).
    Compared without case: Windows reads `Path` as `PATH`, and flagging too much is safe."""
    upper = name.upper()
    return any(fnmatch.fnmatchcase(upper, pattern.upper()) for pattern in RUNS_CODE_VARIABLES)


def looks_secret(name: str, written: str) -> bool:
    """Whether a value as written looks like a secret: by its variable's name, a known token
    format, or a long random-looking word. A value that only refers to the user's own
    environment (`${GITHUB_TOKEN}`) holds no secret of the file's, so it is shown."""
    literal = _REFERENCE.sub("", written)
    if not literal.strip():
        return False
    if _SECRET_NAME.search(name) or _SECRET_VALUE.search(literal):
        return True
    return any(
        re.search(r"[A-Za-z]", word) and re.search(r"[0-9]", word)
        for word in _RANDOM_LOOKING.findall(literal)
        if not word.startswith((".", "/"))
    )


@dataclass(frozen=True, slots=True)
class ShownVariable:
    """One variable a server sets, as the question shows it.

    `value` is as written (`${VAR}` unexpanded), or None when `masked` (it looks like a secret:
    only its presence and `length` are shown). For a variable that `changes_what_runs`,
    `expanded` is its value after `${VAR}` expansion when that differs from what is written."""

    name: str
    value: str | None
    length: int
    masked: bool
    changes_what_runs: bool
    expanded: str | None = None

    def shown(self) -> str:
        if self.value is None:
            return f"{self.name}=<hidden: {self.length} characters>"
        line = f"{self.name}={_shell_word(self.value)}"
        if self.expanded is not None:
            line += f" (= {_shell_word(self.expanded)})"
        if self.changes_what_runs:
            line += "  [!] changes which program runs or what it loads"
        return line


@dataclass(frozen=True, slots=True)
class TrustedServer:
    """One server as the user is shown it: the command and arguments as written in the file
    (`${VAR}` unexpanded), the program that will run, and each variable it sets."""

    name: str
    command: str
    args: tuple[str, ...]
    env_names: tuple[str, ...]
    # The absolute path that will be started; "" when none was found (the start then fails).
    program: str = ""
    program_in_workspace: bool = False
    env: tuple[ShownVariable, ...] = ()

    def describe(self) -> list[str]:
        """The first line `name: command args`, then one indented line for the program and
        one per variable; control and invisible format characters escaped throughout."""
        lines = [f"{self.name}: {shell_line(self.command, self.args)}"]
        if not self.program:
            lines.append("    runs nothing: the command was not found on its PATH")
        else:
            line = f"    runs {_shell_word(self.program)}"
            if self.program_in_workspace:
                line += "  [!] a program inside the workspace"
            lines.append(line)
        lines.extend(f"    sets {variable.shown()}" for variable in self.env)
        return lines


# The server as the question's JSON shows it, in the daemon's `TrustedServer` names (the ACP
# permission request carries it); no program found is null.
register_shape(ShownVariable, rename={"changes_what_runs": "changesWhatRuns"})
register_shape(
    TrustedServer,
    rename={"env_names": "envNames", "program_in_workspace": "programInWorkspace"},
    convert={"program": lambda program: program or None},
)


@dataclass(frozen=True, slots=True)
class TrustRequest:
    """What the user is asked to trust: one `.mcp.json` of one folder, by its digest."""

    sandbox_root: str
    config_path: str
    config_hash: str
    servers: tuple[TrustedServer, ...]

    def describe(self) -> list[str]:
        """The question's lines, for prompts: per server `name: command args`, then indented
        `runs /absolute/program` and `sets NAME=value` lines (see `TrustedServer.describe`)."""
        return [line for server in self.servers for line in server.describe()]


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
        config_hash=trust_digest(config),
        servers=tuple(_shown_server(server) for server in config.servers),
    )


def _shown_server(server: McpServerConfig) -> TrustedServer:
    written_env = server.written_env or server.env
    variables = []
    for name, value in server.env.items():
        written = written_env.get(name, value)
        flagged = changes_what_runs(name)
        masked = not flagged and looks_secret(name, written)
        variables.append(
            ShownVariable(
                name=name,
                value=None if masked else written,
                length=len(written),
                masked=masked,
                changes_what_runs=flagged,
                expanded=value if flagged and value != written else None,
            )
        )
    return TrustedServer(
        name=server.name,
        command=server.written_command or server.command,
        args=server.written_args if server.written_command else server.args,
        env_names=tuple(server.env),
        program=server.program,
        program_in_workspace=server.program_in_workspace,
        env=tuple(variables),
    )


def trust_digest(config: McpConfig) -> str:
    """What an answer is remembered under: SHA-256 over the file's bytes and what the question
    shows beyond them, so a change of either asks again: each server's resolved program, the
    content of a program inside the workspace, and the expanded values of the variables that
    change what runs (`${PATH}` follows the user's environment)."""
    shown = [
        {
            "name": server.name,
            "program": server.program,
            "programDigest": server.program_digest,
            "runsCode": {k: v for k, v in server.env.items() if changes_what_runs(k)},
        }
        for server in config.servers
    ]
    document = json.dumps({"file": config.digest, "servers": shown}, sort_keys=True)
    return hashlib.sha256(document.encode("utf-8", "surrogatepass")).hexdigest()


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
        request = trust_request(sandbox_root, config)
        # The store is a file another daemon may hold locked: read and written off the loop.
        remembered = await asyncio.to_thread(self.store.decision, sandbox_root, request.config_hash)
        if remembered is True:
            return config
        declined = (
            f"not trusted: you declined this {CONFIG_FILE} ({request.config_hash[:12]}); "
            f"`cleveragents trust forget {shlex.quote(sandbox_root)}` to be asked again"
        )
        if remembered is False:
            return config.withheld(declined)
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
