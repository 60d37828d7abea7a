"""Reading a sandbox's `.mcp.json`: the stdio servers it lists, with `${VAR}` expanded.

The format is the `mcpServers` one other agents use::

    {"mcpServers": {"name": {"command": "...", "args": ["..."], "env": {"K": "V"}}}}

`${VAR}` and `${VAR:-default}` are expanded in the command, the arguments and the env values
from the environment cleveragents runs in. Entries for other transports (`"type": "http"`,
`"sse"`, or a `url`) are skipped with a reason, since only stdio servers can be started here.
`McpConfig.digest` is the SHA-256 of the file's exact bytes. Each server's program is resolved
here, once, exactly as the operating system would find it for the server (its own `PATH`, else
the inherited one; relative `PATH` entries and relative commands against the server's working
folder, the sandbox root): `McpServerConfig.program` is the absolute path the workspace-trust
question shows (`service/trust.py`) and the one the connection starts, so the two cannot
disagree. This module does not import the MCP SDK: reading the file stays cheap.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import stat
import sys
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
    # The variables' values as written (`${VAR}` unexpanded), in the file's order.
    written_env: Mapping[str, str] = field(default_factory=dict)
    # The absolute path that will be started ("" when nothing was found: the start fails), and
    # whether it lies in the workspace (the path or where its links lead); for such a program,
    # the SHA-256 of its content, so a trust answer covers what it ran.
    program: str = ""
    program_in_workspace: bool = False
    program_digest: str = ""

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
        servers.append(_server(name, entry, where, path, variables, sandbox_root))
    return McpConfig(path, tuple(servers), skipped, digest)


def _server(
    name: str,
    entry: dict[str, Any],
    where: str,
    path: str,
    variables: Mapping[str, str],
    sandbox_root: str,
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
    expanded_command = _expand(command, where, variables)
    expanded_env = {key: _expand(value, where, variables) for key, value in env.items()}
    search_path = expanded_env["PATH"] if "PATH" in expanded_env else variables.get("PATH")
    program = resolve_program(expanded_command, search_path, sandbox_root) or ""
    in_workspace = bool(program) and program_in_folder(program, sandbox_root)
    return McpServerConfig(
        name=name,
        command=expanded_command,
        args=tuple(_expand(a, where, variables) for a in args),
        env=expanded_env,
        config_path=path,
        written=shlex.join([command, *args]),
        written_command=command,
        written_args=tuple(args),
        written_env=dict(env),
        program=program,
        program_in_workspace=in_workspace,
        program_digest=_content_digest(program) if in_workspace else "",
    )


def resolve_program(command: str, search_path: str | None, cwd: str) -> str | None:
    """The absolute path the system starts for `command`, run in `cwd` with `search_path` as
    its `PATH` (None: unset), or None when no executable is found.

    The rules are the ones `subprocess` (so the MCP SDK) applies on POSIX: a command holding a
    slash is a path, relative to `cwd`; otherwise each `PATH` entry in turn, an empty or
    relative entry taken against `cwd` (the child changes folder before it looks), and the
    first regular file it may execute wins; an unset `PATH` searches `os.defpath`.
    """
    if os.sep in command or (os.altsep and os.altsep in command):
        return _absolute(command, cwd)
    if sys.platform == "win32":  # PATHEXT and the current folder first: the system's rules
        found = shutil.which(command, path=search_path)
        return _absolute(found, cwd) if found else None
    entries = (search_path if search_path is not None else os.defpath).split(os.pathsep)
    for entry in entries:
        candidate = _absolute(os.path.join(entry or os.curdir, command), cwd)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def _absolute(path: str, cwd: str) -> str:
    """`path` made absolute against `cwd`. `.` and doubled slashes are tidied away, but not
    `..`: after a symbolic link the system resolves `..` from the link's target, so tidying it
    could name another file than the one that runs."""
    joined = os.path.join(cwd, path)
    parts = joined.split(os.sep)
    if os.pardir in parts:
        return joined
    return os.path.normpath(joined)


def program_in_folder(program: str, folder: str) -> bool:
    """Whether `program`, or the file its links lead to, lies inside `folder` (as named, or
    where its own links lead)."""
    roots = {os.path.abspath(folder), os.path.realpath(folder)}
    for candidate in (program, os.path.realpath(program)):
        for root in roots:
            if candidate == root or candidate.startswith(root.rstrip(os.sep) + os.sep):
                return True
    return False


MAX_PROGRAM_DIGEST_BYTES = 256 * 1024 * 1024


def _content_digest(program: str) -> str:
    """SHA-256 of a workspace program's content ("" when it cannot be read as a regular file:
    then the start fails or runs what the path names, and the path is what is shown)."""
    try:
        fd = os.open(program, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return ""
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return ""
        digest = hashlib.sha256()
        left = MAX_PROGRAM_DIGEST_BYTES
        while left > 0 and (chunk := handle.read(min(left, 1024 * 1024))):
            digest.update(chunk)
            left -= len(chunk)
    return digest.hexdigest()


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
