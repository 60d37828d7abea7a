"""What a command may reach: the folders it sees, the variables it gets, the limits it runs under.

`CommandPolicy` holds the settings; `command_mounts` turns them into the exact list of mounts a
confined command sees (read-only, read-write, empty, hidden), and `command_environment` into the
variables it gets. Both are plain functions of the policy, so `cleveragents doctor` shows the same
lists bubblewrap is given.

Settings come in layers: the defaults here, then environment variables
(`CommandPolicy.from_environment`), then whatever a caller adds (`CommandPolicy.with_settings`:
the daemon's or the CLI's options). Lists (read paths, never-visible paths, variable names) add
up across layers; single values (limits, switches) are replaced by the later layer.
"""

from __future__ import annotations

import fnmatch
import glob
import os
import re
import stat
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from ..paths import default_history_path
from ..settings_table import (
    COMMAND_TAG_VARIABLE,
    ENV_ALLOW_PROTECTED_WRITES,
    ENV_ALLOW_UNCONFINED,
    ENV_BUBBLEWRAP,
    ENV_COMMAND_USER,
    ENV_MAX_ADDRESS_SPACE,
    ENV_MAX_CPU_SECONDS,
    ENV_MAX_FILE_SIZE,
    ENV_MAX_MEMORY,
    ENV_MAX_PROCESSES,
    ENV_MIN_FREE_DISK,
    ENV_NEVER_VISIBLE,
    ENV_PASS_VARIABLES,
    ENV_PROTECTED_PATHS,
    ENV_READ_PATHS,
    ENV_TMP_SIZE,
)
from ..tool.serialization import register_hook, register_shape
from .private import DEFAULT_NEVER_VISIBLE, private_paths
from .protected import (
    ProtectedPaths,
    command_targets,
    split_patterns,
)

COMMAND_USER_CHOICES = ("auto", "daemon")

# Passed when set, whatever the settings say: what a shell and a compiler need to behave, and
# nothing that can carry a credential. The locale categories are named one by one, not `LC_*`:
# any name can start with LC_ (ssh forwards LC_* from the client), so a pattern would pass
# `LC_SECRET_TOKEN` too.
LOCALE_VARIABLES = (
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_ADDRESS",
    "LC_COLLATE",
    "LC_CTYPE",
    "LC_IDENTIFICATION",
    "LC_MEASUREMENT",
    "LC_MESSAGES",
    "LC_MONETARY",
    "LC_NAME",
    "LC_NUMERIC",
    "LC_PAPER",
    "LC_TELEPHONE",
    "LC_TIME",
)
CORE_VARIABLES = (
    "PATH", "HOME", "TERM", "TZ", "USER", "LOGNAME", "SHELL", "TMPDIR", *LOCALE_VARIABLES
)  # fmt: skip

# Read-only for every confined command: the operating system and the usual toolchain prefixes.
# A name that is a symbolic link on the host (`/bin -> usr/bin`) becomes the same link inside.
SYSTEM_READ_PATHS = (
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
    "/nix/store",
    "/gnu/store",
)

GIB = 1024**3
MIB = 1024**2
_MAX_COMMAND_TIMEOUT_S = 600  # command.MAX_COMMAND_TIMEOUT_S; repeated to avoid an import cycle


def _physical_memory() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def _default_memory() -> int | None:
    total = _physical_memory()
    return None if total is None else total * 3 // 4


@dataclass(frozen=True, slots=True)
class ResourceLimits:
    """Ceilings for one command; None means unlimited. Sizes are in bytes.

    The defaults are far above what a build or a test run needs: they exist to stop a runaway
    (a fork bomb, a disk filler, a leak) before it takes the machine with it.
    """

    # Processes and threads together: a cgroup's pids.max where one is available, and
    # RLIMIT_NPROC on top of what the user already runs (the kernel ignores it for root).
    max_processes: int | None = 4096
    # RLIMIT_FSIZE: no single file written larger than this (SIGXFSZ).
    max_file_size: int | None = 4 * GIB
    # RLIMIT_AS, per process. Generous: node's WebAssembly reserves ~10 GiB of address space.
    max_address_space: int | None = 32 * GIB
    # RLIMIT_CPU, per process: the longest timeout on every core, so only a stray hits it.
    max_cpu_seconds: int | None = field(
        default_factory=lambda: _MAX_COMMAND_TIMEOUT_S * (os.cpu_count() or 1)
    )
    # All of the command's processes together, /tmp included: a cgroup memory limit.
    max_memory: int | None = field(default_factory=_default_memory)
    # Size of each private tmpfs (/tmp and the empty home).
    tmp_size: int | None = 2 * GIB
    # A command is stopped when the free space on the sandbox's file system falls below this.
    min_free_disk: int | None = 2 * GIB


_LIMIT_VARIABLES = {
    "max_processes": (ENV_MAX_PROCESSES, False),
    "max_file_size": (ENV_MAX_FILE_SIZE, True),
    "max_address_space": (ENV_MAX_ADDRESS_SPACE, True),
    "max_cpu_seconds": (ENV_MAX_CPU_SECONDS, False),
    "max_memory": (ENV_MAX_MEMORY, True),
    "tmp_size": (ENV_TMP_SIZE, True),
    "min_free_disk": (ENV_MIN_FREE_DISK, True),
}
"""Limit field -> (environment variable, whether it is a size that takes K/M/G suffixes)."""

_SIZE = re.compile(r"(\d+)\s*([kmgt]?)i?b?", re.IGNORECASE)
_COUNT = re.compile(r"(\d+)()")
_SIZE_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}


def human_size(value: int | None) -> str:
    if value is None:
        return "unlimited"
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value} bytes"


def parse_limit(text: str, *, size: bool, name: str) -> int | None:
    """`unlimited`, a whole number, or (for sizes) a number with K, M, G or T (powers of 1024)."""
    value = text.strip()
    if value.lower() in ("unlimited", "none", "off"):
        return None
    match = (_SIZE if size else _COUNT).fullmatch(value)
    if match is None:
        example = "4G, 512M or unlimited" if size else "a whole number or unlimited"
        raise ValueError(f"{name}: {text!r} is not a valid limit (use {example})")
    number = int(match.group(1)) * (_SIZE_UNITS[match.group(2).lower()] if size else 1)
    if number <= 0:
        raise ValueError(f"{name}: {text!r} must be more than 0 (or unlimited)")
    return number


def distinct(*lists: Iterable[str]) -> tuple[str, ...]:
    """The lists one after the other, each entry once where it first appears: a list setting
    set at two levels (the environment and a flag, say) adds up without repeating itself."""
    return tuple(dict.fromkeys(entry for entries in lists for entry in entries))


def _split_paths(text: str) -> tuple[str, ...]:
    return tuple(part for part in text.split(os.pathsep) if part.strip())


def _split_names(text: str) -> tuple[str, ...]:
    return tuple(part for part in re.split(r"[\s,]+", text) if part)


def _truthy(text: str, name: str) -> bool:
    value = text.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("", "0", "false", "no", "off"):
        return False
    raise ValueError(f"{name}: {text!r} is not a yes/no value (use 1 or 0)")


@dataclass(frozen=True, slots=True)
class CommandPolicy:
    """Everything that decides what `run_command` can reach. Frozen: build a new one to change."""

    # Folders (or files) a command may read besides the system, e.g. a toolchain in the home.
    extra_read_paths: tuple[str, ...] = ()
    # Never visible to a command, added to DEFAULT_NEVER_VISIBLE (which cannot be removed).
    never_visible: tuple[str, ...] = ()
    # Variable names (or `fnmatch` patterns such as `NODE_*`) passed besides the core set.
    env_allow: tuple[str, ...] = ()
    limits: ResourceLimits = field(default_factory=ResourceLimits)
    # Under `full-auto`, run unconfined commands (no bubblewrap) without asking.
    allow_unconfined: bool = False
    # The bubblewrap program: "auto" (found on PATH), a path, or "none" to never confine.
    bubblewrap: str = "auto"
    # Who a confined command runs as when the daemon is root: "auto" (the sandbox folder's
    # owner when that is not root) or "daemon" (root, without capabilities).
    command_user: str = "auto"
    # Protected paths (protected.py): written by commands and the file tools without asking.
    allow_protected_writes: bool = False
    # More protected path patterns, added to protected.DEFAULT_PROTECTED.
    protected_paths: tuple[str, ...] = ()

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> CommandPolicy:
        """The defaults with the command variables (settings_table.py) applied; ValueError."""
        env = os.environ if environ is None else environ
        limits: dict[str, Any] = {}
        for name, (variable, is_size) in _LIMIT_VARIABLES.items():
            if env.get(variable, "").strip():
                limits[name] = parse_limit(env[variable], size=is_size, name=variable)
        bubblewrap = env.get(ENV_BUBBLEWRAP, "").strip() or "auto"
        command_user = env.get(ENV_COMMAND_USER, "").strip() or "auto"
        if command_user not in COMMAND_USER_CHOICES:
            raise ValueError(
                f"{ENV_COMMAND_USER}: {command_user!r} is not one of "
                f"{', '.join(COMMAND_USER_CHOICES)}"
            )
        return cls(
            extra_read_paths=distinct(_split_paths(env.get(ENV_READ_PATHS, ""))),
            never_visible=distinct(_split_paths(env.get(ENV_NEVER_VISIBLE, ""))),
            env_allow=distinct(_split_names(env.get(ENV_PASS_VARIABLES, ""))),
            limits=replace(ResourceLimits(), **limits),
            allow_unconfined=_truthy(env.get(ENV_ALLOW_UNCONFINED, ""), ENV_ALLOW_UNCONFINED),
            bubblewrap=bubblewrap,
            command_user=command_user,
            allow_protected_writes=_truthy(
                env.get(ENV_ALLOW_PROTECTED_WRITES, ""), ENV_ALLOW_PROTECTED_WRITES
            ),
            protected_paths=distinct(split_patterns(env.get(ENV_PROTECTED_PATHS, ""))),
        )

    def with_settings(
        self,
        *,
        extra_read_paths: Iterable[str] = (),
        never_visible: Iterable[str] = (),
        env_allow: Iterable[str] = (),
        limits: Mapping[str, int | None] | None = None,
        allow_unconfined: bool | None = None,
        bubblewrap: str | None = None,
        allow_protected_writes: bool | None = None,
        protected_paths: Iterable[str] = (),
    ) -> CommandPolicy:
        """A later layer of settings: lists are added to (in order, an entry already there
        not again), single values replaced."""
        unknown = set(limits or {}) - set(_LIMIT_VARIABLES)
        if unknown:
            raise ValueError(f"unknown command limit(s): {', '.join(sorted(unknown))}")
        return CommandPolicy(
            extra_read_paths=distinct(self.extra_read_paths, extra_read_paths),
            never_visible=distinct(self.never_visible, never_visible),
            env_allow=distinct(self.env_allow, env_allow),
            limits=replace(self.limits, **dict(limits or {})),
            allow_unconfined=self.allow_unconfined
            if allow_unconfined is None
            else allow_unconfined,
            bubblewrap=self.bubblewrap if bubblewrap is None else bubblewrap,
            command_user=self.command_user,
            allow_protected_writes=self.allow_protected_writes
            if allow_protected_writes is None
            else allow_protected_writes,
            protected_paths=distinct(self.protected_paths, protected_paths),
        )

    @property
    def protection(self) -> ProtectedPaths:
        """The protected-path settings, for the file tools' guard."""
        return ProtectedPaths(self.allow_protected_writes, self.protected_paths)


# -- environment --------------------------------------------------------------------------------
def passes_variable(name: str, policy: CommandPolicy) -> bool:
    """Whether a variable of the daemon's environment reaches commands."""
    if name in CORE_VARIABLES:
        return True
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in policy.env_allow)


def command_environment(
    policy: CommandPolicy,
    *,
    home: str,
    tmpdir: str,
    tag: str,
    environ: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The variables a command gets: the allow-list of the daemon's own, HOME and TMPDIR set."""
    source = os.environ if environ is None else environ
    environment = {name: value for name, value in source.items() if passes_variable(name, policy)}
    environment.setdefault("PATH", os.defpath)
    environment["HOME"] = home
    environment["TMPDIR"] = tmpdir
    environment[COMMAND_TAG_VARIABLE] = tag
    return environment


# -- mounts -------------------------------------------------------------------------------------
MountKind = Literal["ro", "rw", "tmpfs", "dev", "proc", "symlink", "hidden"]


@dataclass(frozen=True, slots=True)
class Mount:
    """One entry of what a confined command sees; `path` is the same inside and out."""

    kind: MountKind
    path: str
    why: str
    source: str = ""  # symlink: its target; hidden: "file" or "dir"
    size: int | None = None  # tmpfs: its size in bytes


@dataclass(frozen=True, slots=True)
class CommandView:
    """The mounts of one command, the home it is given, and what was refused and why."""

    mounts: tuple[Mount, ...]
    home: str
    refused: tuple[str, ...]
    # The never-visible path the sandbox itself lies in: no command may run there.
    sandbox_hidden_by: str | None = None
    # A private file (the run history) lying directly in the sandbox folder, which cannot be
    # hidden with its folder: no command may run there either.
    private_exposed: str | None = None
    # Protected paths that do not exist yet: bubblewrap makes an empty folder for each, which
    # the command's caller removes afterwards (protected.placeholders_kept).
    placeholders: tuple[str, ...] = ()


def _mount_data(mount: Mount) -> dict[str, Any]:
    # `source` means a symlink's target and a hidden path's kind; only the target is shown.
    entry: dict[str, Any] = {"kind": mount.kind, "path": mount.path, "why": mount.why}
    if mount.kind == "symlink":
        entry["target"] = mount.source
    if mount.size is not None:
        entry["size"] = mount.size
    return entry


register_hook(Mount, _mount_data)
# The placeholders are the caller's to remove, not part of what the command sees.
register_shape(CommandView, omit=("placeholders",))


def real_home() -> str:
    return os.path.realpath(os.path.expanduser("~"))


def _inside(path: str, folder: str) -> bool:
    return folder == "/" or path == folder or path.startswith(folder.rstrip("/") + "/")


def never_visible_paths(policy: CommandPolicy) -> list[str]:
    """The deny list with `~` expanded and globs matched, each as its real path."""
    home = real_home()
    patterns = [*DEFAULT_NEVER_VISIBLE, *policy.never_visible]
    # The run history (prompts, outputs) and whatever else lives in the user data folder.
    data_folder = str(default_history_path().parent)
    # And the history and checkpoint store this process opened, wherever they are.
    found: set[str] = {os.path.realpath(data_folder), *private_paths()}
    for pattern in patterns:
        expanded = home + pattern[1:] if pattern.startswith("~") else pattern
        if not os.path.isabs(expanded):
            continue  # A relative deny entry has no meaning; from_environment keeps it inert.
        names = glob.glob(expanded) if glob.has_magic(expanded) else [expanded]
        for name in names:
            found.add(os.path.realpath(name))
    return sorted(found)


def never_visible_to_tools(environ: Mapping[str, str] | None = None) -> list[str]:
    """What the file tools refuse: the same deny list as commands, with the user's additions
    from the environment (a malformed limit elsewhere in it does not matter here)."""
    env = os.environ if environ is None else environ
    extra = _split_paths(env.get(ENV_NEVER_VISIBLE, ""))
    # Every file tool call asks; resolving ~80 paths takes ~20 ms, so the answer is kept for
    # a moment (a credential folder created meanwhile is refused by name all the same).
    key = (os.path.expanduser("~"), os.environ.get("XDG_DATA_HOME", ""), extra, private_paths())
    now = time.monotonic()
    with _tool_paths_lock:
        cached = _tool_paths_cache.get(key)
        if cached is not None and now - cached[0] < _TOOL_PATHS_TTL_S:
            return list(cached[1])
    found = never_visible_paths(CommandPolicy(never_visible=extra))
    with _tool_paths_lock:
        _tool_paths_cache.clear()
        _tool_paths_cache[key] = (now, tuple(found))
    return found


_TOOL_PATHS_TTL_S = 5.0
_tool_paths_lock = threading.Lock()
_tool_paths_cache: dict[Any, tuple[float, tuple[str, ...]]] = {}


def interpreter_prefix() -> str:
    """The Python installation this daemon runs on, which commands commonly call."""
    return os.path.realpath(sys.base_prefix)


# World-readable, but about other users and the kernel: the keys the uid outside holds.
_PROC_HIDDEN = frozenset({"keys", "key-users", "kcore", "sched_debug", "timer_stats"})


def proc_guards(proc: str = "/proc") -> list[Mount]:
    """What of the fresh /proc would still reach the host, made read-only or hidden.

    A new PID namespace gets its own /proc for processes, but the rest of /proc is the host
    kernel's: `/proc/sys` (kernel.core_pattern names a program the kernel runs as root),
    `/proc/sysrq-trigger`, `/proc/irq`... A command whose uid outside is root (a root
    daemon's) would pass their owner check even without a capability. Every folder and every
    writable file at the top of /proc becomes read-only (the host's own, bound over it); a
    file only root may read (kcore, keys, timer_list...) becomes empty. /sys is not mounted
    at all.
    """
    guards: list[Mount] = []
    try:
        names = sorted(os.listdir(proc))
    except OSError:
        return guards
    for name in names:
        if name.isdigit() or name in ("self", "thread-self"):
            continue  # The command's own processes, from its own /proc.
        path = f"{proc}/{name}"
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISLNK(info.st_mode):
            continue  # self/..., resolved inside the command's /proc.
        if stat.S_ISDIR(info.st_mode):
            guards.append(Mount("ro", path, "host kernel settings: read-only"))
        elif info.st_mode & 0o044 == 0 or name in _PROC_HIDDEN:
            guards.append(Mount("hidden", path, "readable by root only on the host", "file"))
        elif info.st_mode & 0o222:
            guards.append(Mount("ro", path, "host kernel switch: read-only"))
    return guards


def _folders_between(sandbox: str, path: str) -> list[str]:
    """The folders strictly between `sandbox` and `path` (none when `path` is not inside)."""
    folders = []
    folder = os.path.dirname(path)
    while folder != sandbox and _inside(folder, sandbox) and _inside(path, sandbox):
        folders.append(folder)
        folder = os.path.dirname(folder)
    return folders


def command_mounts(policy: CommandPolicy, sandbox_root: str) -> CommandView:
    """Exactly what a confined command sees, in the order bubblewrap must mount it.

    Read-only: the system folders, the Python installation the daemon runs on, the policy's
    extra read paths. Read-write: the sandbox. Empty and private: /tmp and the home folder.
    Hidden (an empty folder or an empty file over it): every never-visible path that one of the
    mounts above would otherwise show. Nothing else of the host exists inside.
    """
    sandbox = os.path.realpath(sandbox_root)
    limits = policy.limits
    deny = never_visible_paths(policy)
    refused: list[str] = []
    layers: list[Mount] = []
    links: list[Mount] = []

    for path in SYSTEM_READ_PATHS:
        if os.path.islink(path):
            links.append(Mount("symlink", path, "system", source=os.readlink(path)))
        elif os.path.isdir(path):
            layers.append(Mount("ro", path, "system"))

    layers.append(Mount("tmpfs", "/tmp", "private /tmp, empty at start", size=limits.tmp_size))
    links.append(Mount("symlink", "/var/tmp", "private /tmp", source="/tmp"))
    home = real_home()
    if home == "/" or _inside(home, sandbox):
        # The sandbox holds the home folder: give the empty home a place of its own.
        home = "/run/cleveragents-home"
    layers.append(Mount("tmpfs", home, "private home, empty at start", size=limits.tmp_size))

    def visible(path: str) -> bool:
        return any(m.kind in ("ro", "rw") and _inside(path, m.path) for m in layers)

    prefix = interpreter_prefix()
    if not visible(prefix):
        layers.append(Mount("ro", prefix, "the Python installation cleveragents runs on"))
    for requested in policy.extra_read_paths:
        expanded = os.path.expanduser(requested)
        if not os.path.isabs(expanded):
            refused.append(f"{requested}: a read path must be absolute")
            continue
        real = os.path.realpath(expanded)
        hidden_by = next((d for d in deny if _inside(real, d)), None)
        if hidden_by is not None:
            refused.append(f"{requested}: inside {hidden_by}, which is never visible")
            continue
        if not os.path.exists(real):
            refused.append(f"{requested}: does not exist")
            continue
        if _inside(real, sandbox):
            continue  # Already there, and writable.
        layers.append(Mount("ro", real, f"read path {requested}"))
        lexical = os.path.normpath(expanded)
        if lexical != real:  # Reached through a link on the host: the same name works inside.
            links.append(Mount("symlink", lexical, f"read path {requested}", source=real))
    layers.append(Mount("rw", sandbox, "the sandbox"))
    # What would run code later (hooks, git config, editor tasks): read-only, and an empty
    # read-only placeholder where it does not exist yet (command.py removes it afterwards).
    placeholders: list[Mount] = []
    protected: list[str] = []
    if not policy.allow_protected_writes:
        for target in command_targets(sandbox, policy.protected_paths):
            why = f"protected ({target.pattern}): runs code later"
            if target.exists:
                layers.append(Mount("ro", target.path, why))
            else:
                placeholders.append(
                    Mount("hidden", target.path, f"{why}; not there yet", source="dir")
                )
            protected.append(target.path)

    # A private file (the history, its -wal, -shm and -journal) is hidden with the folder that
    # holds it: SQLite makes and deletes the side files as it goes, a file that does not
    # exist yet cannot be covered, and a mount over one that SQLite later deletes is dropped
    # (a command could then plant a hot journal that the next open rolls back). The folder
    # stays. One that is the sandbox itself cannot be hidden: no command runs then.
    private_exposed: str | None = None
    private_folders: set[str] = set()
    for path in private_paths():
        if os.path.isdir(path) or not visible(path):
            continue
        folder = os.path.dirname(path)
        if _inside(sandbox, folder):
            private_exposed = private_exposed or path
        else:
            private_folders.add(folder)
    deny = sorted({*deny, *private_folders})

    hidden: list[Mount] = []
    pinned: set[str] = set()
    for path in deny:
        if not visible(path) or not os.path.lexists(path):
            continue
        if any(other != path and _inside(path, other) for other in deny):
            continue  # Inside another hidden path, which covers it already.
        what = "dir" if os.path.isdir(path) else "file"
        hidden.append(Mount("hidden", path, "never visible", source=what))
        # A mount point cannot be moved, but the folders above it could: `mv ~/.local/share
        # elsewhere` would take the hidden data folder aside and let the command put its own
        # (a checkpoint repository whose config runs programs) where the daemon looks. Each
        # folder between the sandbox and the hidden path becomes a mount point too.
        pinned.update(_folders_between(sandbox, path))
    layers.extend(
        Mount("rw", folder, "holds a never-visible path: pinned, it cannot be moved or replaced")
        for folder in sorted(pinned)
    )
    # The folders holding a protected path are pinned the same way: `mv .git aside`, then a
    # new `.git` with a config of the command's own, would otherwise get around the mounts.
    guarded = {folder for path in protected for folder in _folders_between(sandbox, path)}
    layers.extend(
        Mount("rw", folder, "holds a protected path: pinned, it cannot be moved or replaced")
        for folder in sorted(guarded - pinned)
    )

    # A parent is mounted before what lies inside it; equal depths keep the order above, so an
    # explicit read path can cover the empty home and the sandbox covers a read path.
    ordered = sorted(layers, key=lambda m: m.path.rstrip("/").count("/"))
    mounts = [
        *ordered,
        Mount("dev", "/dev", "a minimal /dev (null, zero, random, tty, pts)"),
        Mount("proc", "/proc", "this command's own processes only"),
        *proc_guards(),
        # A link cannot go where a mount already made a folder (a read path under /var/tmp).
        *[
            link
            for link in links
            if not visible(link.path) and not any(_inside(m.path, link.path) for m in layers)
        ],
        *sorted(hidden, key=lambda m: m.path.count("/")),
        *placeholders,
    ]
    sandbox_hidden_by = next((d for d in deny if _inside(sandbox, d)), None)
    return CommandView(
        tuple(mounts),
        home,
        tuple(refused),
        sandbox_hidden_by,
        private_exposed,
        tuple(m.path for m in placeholders),
    )
