"""Reading a sandbox's `.mcp.json`: the stdio servers it lists, with `${VAR}` expanded.

The format is the `mcpServers` one other agents use::

    {"mcpServers": {"name": {"command": "...", "args": ["..."], "env": {"K": "V"}}}}

`${VAR}` and `${VAR:-default}` are expanded in the command, the arguments and the env values
from the environment cleveragents runs in. Entries for other transports (`"type": "http"`,
`"sse"`, or a `url`) are skipped with a reason, since only stdio servers can be started here.
`McpConfig.digest` is the SHA-256 of the file's exact bytes: what workspace trust is given to
(`service/trust.py`). This module does not import the MCP SDK: reading the file stays cheap.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from .errors import McpConfigError

CONFIG_FILE = ".mcp.json"
MAX_CONFIG_BYTES = 1024 * 1024
DEFAULT_STARTUP_TIMEOUT_S = 20.0
"""How long a server may take to start and answer the MCP handshake."""
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
HIDDEN_CHARACTERS = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")
"""Control characters (C0, DEL, C1) and invisible format characters (zero-width ones, line
and paragraph separators, bidi embeddings, overrides and isolates, the BOM)."""


@dataclass(frozen=True, slots=True)
class McpServerConfig:
    """One stdio server as `.mcp.json` describes it, variables already expanded."""

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    config_path: str = ""
    # The command line as written, before ${VAR} expansion: what errors and logs show, so a
    # secret passed through a variable never lands in a message.
    written: str = ""
    # The command and arguments as written (what the user is asked to trust).
    written_command: str = ""
    written_args: tuple[str, ...] = ()

    def command_line(self) -> str:
        return self.written or shlex.join([self.command, *self.args])


@dataclass(frozen=True, slots=True)
class McpConfig:
    """Every server a sandbox's `.mcp.json` lists; `skipped` maps a name to why it is not run.

    `digest` is the SHA-256 (hex) of the file's bytes ("" when there is no file); `untrusted`
    names the servers withheld because the workspace is not trusted (also in `skipped`).
    """

    path: str
    servers: tuple[McpServerConfig, ...] = ()
    skipped: Mapping[str, str] = field(default_factory=dict)
    digest: str = ""
    untrusted: tuple[str, ...] = ()

    def withheld(self, reason: str) -> McpConfig:
        """This config with none of its servers to start, each skipped for `reason`."""
        names = tuple(server.name for server in self.servers)
        skipped = {**self.skipped, **dict.fromkeys(names, reason)}
        return replace(self, servers=(), skipped=skipped, untrusted=(*self.untrusted, *names))


def config_path(sandbox_root: str) -> str:
    return os.path.join(sandbox_root, CONFIG_FILE)


def _read_config_bytes(path: str) -> bytes:
    """The file's bytes. The workspace chose it: a FIFO or a device (a link to /dev/zero)
    would block or fill memory, so only a regular file of at most MAX_CONFIG_BYTES is read."""
    # O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise McpConfigError(f"{path} is not a regular file: not read")
        data = handle.read(MAX_CONFIG_BYTES + 1)
    if len(data) > MAX_CONFIG_BYTES:
        raise McpConfigError(
            f"{path} is larger than {MAX_CONFIG_BYTES // 1024} KiB: not read (a server list is "
            "a few hundred bytes)"
        )
    return data


def read_mcp_config(sandbox_root: str, environ: Mapping[str, str] | None = None) -> McpConfig:
    """The servers of `<sandbox_root>/.mcp.json`; none when the file does not exist."""
    path = config_path(sandbox_root)
    try:
        data = _read_config_bytes(path)
        text = data.decode("utf-8")
    except FileNotFoundError:
        return McpConfig(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise McpConfigError(f"cannot read {path}: {exc}") from exc
    digest = hashlib.sha256(data).hexdigest()
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise McpConfigError(f"{path} is not valid JSON: {exc}") from exc
    if not isinstance(document, dict):
        raise McpConfigError(f"{path} must hold a JSON object with an 'mcpServers' object")
    entries = document.get("mcpServers", {})
    if not isinstance(entries, dict):
        raise McpConfigError(f"{path}: 'mcpServers' must be an object mapping names to servers")
    variables = os.environ if environ is None else environ
    servers: list[McpServerConfig] = []
    skipped: dict[str, str] = {}
    for name, entry in entries.items():
        where = f"{path}: MCP server {name!r}"
        if not name.strip():
            raise McpConfigError(f"{path}: an MCP server has an empty name")
        _check_shown_name(name, "MCP server name", path)
        if not isinstance(entry, dict):
            raise McpConfigError(f"{where} must be an object with a 'command'")
        if entry.get("disabled") is True:
            skipped[name] = "disabled in the config"
            continue
        transport = entry.get("type", "stdio")
        if transport != "stdio" or ("url" in entry and "command" not in entry):
            kind = transport if transport != "stdio" else "url"
            skipped[name] = f"transport {kind!r} is not supported (only stdio servers are)"
            continue
        servers.append(_server(name, entry, where, path, variables))
    return McpConfig(path, tuple(servers), skipped, digest)


def _server(
    name: str, entry: dict[str, Any], where: str, path: str, variables: Mapping[str, str]
) -> McpServerConfig:
    command = entry.get("command")
    if not isinstance(command, str) or not command.strip():
        raise McpConfigError(f"{where} needs a 'command' string")
    args = entry.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise McpConfigError(f"{where}: 'args' must be a list of strings")
    env = entry.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise McpConfigError(f"{where}: 'env' must map names to strings")
    for key in env:
        _check_shown_name(key, f"MCP server {name!a}: variable name", path)
    return McpServerConfig(
        name=name,
        command=_expand(command, where, variables),
        args=tuple(_expand(a, where, variables) for a in args),
        env={key: _expand(value, where, variables) for key, value in env.items()},
        config_path=path,
        written=shlex.join([command, *args]),
        written_command=command,
        written_args=tuple(args),
    )


def _check_shown_name(name: str, what: str, path: str) -> None:
    """Names are shown as written in the workspace-trust question (every front: terminal,
    ACP, VS Code, Neovim). An escape sequence or a bidi override in one could redraw or
    reorder the line that shows the command the user is asked to trust, and no honest config
    needs one: the file is refused (the arguments, which may need them, are escaped instead)."""
    if HIDDEN_CHARACTERS.search(name):
        raise McpConfigError(
            f"{path}: {what} {name!a} holds a control or invisible format character; not read"
        )


def _expand(text: str, where: str, variables: Mapping[str, str]) -> str:
    def value(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        found = variables.get(name)
        if found is not None:
            return found
        if default is not None:
            return default
        raise McpConfigError(
            f"{where} uses ${{{name}}}, which is not set in the environment "
            f"(set it, or write ${{{name}:-default}})"
        )

    return _VARIABLE.sub(value, text)
