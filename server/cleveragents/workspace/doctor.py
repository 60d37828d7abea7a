"""`cleveragents doctor`: what a command can reach here, said plainly.

One report built from the same functions run_command uses (command_mounts,
passes_variable, bubblewrap_status, cgroup_support), so it cannot drift from what commands get.
"""

from __future__ import annotations

import os
from typing import Any

from ..settings_table import (
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
from ..tool.serialization import to_data
from .bubblewrap import bubblewrap_status, command_identity, command_seccomp, view_for
from .cgroups import cgroup_support
from .command import process_rlimit
from .command_policy import (
    CORE_VARIABLES,
    CommandPolicy,
    command_mounts,
    human_size,
    passes_variable,
)
from .grep_engine import re2_available
from .protected import DEFAULT_PROTECTED


def _limit_rows(policy: CommandPolicy, confined: bool, features: frozenset[str]) -> list[Any]:
    limits = policy.limits
    support = cgroup_support()
    pids, memory = support.home("pids"), support.home("memory")
    process_ways = []
    if pids is not None:
        process_ways.append(f"cgroup v{pids.version} pids.max")
    if process_rlimit(limits) is not None:
        process_ways.append("RLIMIT_NPROC (on top of the processes the user already runs)")
    if not process_ways:
        process_ways.append(
            "not enforced: no writable pids cgroup, and the kernel ignores RLIMIT_NPROC for root "
            "(only the timeout bounds a fork bomb)"
            if os.getuid() == 0
            else "not enforced: no writable pids cgroup and no /proc to count processes"
        )
    tmpfs = "tmpfs size" if confined and "--size" in features else "not enforced (no tmpfs size)"
    return [
        ("max_processes", limits.max_processes, ENV_MAX_PROCESSES, "; ".join(process_ways)),
        ("max_file_size", limits.max_file_size, ENV_MAX_FILE_SIZE, "RLIMIT_FSIZE"),
        ("max_address_space", limits.max_address_space, ENV_MAX_ADDRESS_SPACE, "RLIMIT_AS"),
        ("max_cpu_seconds", limits.max_cpu_seconds, ENV_MAX_CPU_SECONDS, "RLIMIT_CPU"),
        (
            "max_memory",
            limits.max_memory,
            ENV_MAX_MEMORY,
            f"cgroup v{memory.version} memory limit"
            if memory is not None
            else "not enforced: no writable memory cgroup (RLIMIT_AS bounds each process)",
        ),
        ("tmp_size", limits.tmp_size, ENV_TMP_SIZE, tmpfs),
        (
            "min_free_disk",
            limits.min_free_disk,
            ENV_MIN_FREE_DISK,
            "free space of the sandbox's disk, looked at 4 times a second",
        ),
    ]


def command_policy_report(policy: CommandPolicy, sandbox_root: str) -> dict[str, Any]:
    """What a command run in `sandbox_root` would see, get and be limited by, as plain data."""
    status = bubblewrap_status(policy.bubblewrap)
    identity = command_identity(policy, sandbox_root, status)
    view = view_for(command_mounts(policy, sandbox_root), identity)
    seccomp = command_seccomp(status)
    names = sorted(os.environ)
    support = cgroup_support()
    return {
        "sandbox": os.path.realpath(sandbox_root),
        "confined": status.available,
        "confinement": status.reason,
        "bubblewrap": status.executable,
        "unconfined_commands": (
            "run without asking under full-auto"
            if policy.allow_unconfined
            else "asked about under every profile"
        ),
        "command_user": to_data(identity),
        "seccomp": {
            "active": status.available and seccomp.available,
            "why": seccomp.reason if status.available else "commands are not confined",
            "denied": list(seccomp.denied),
        },
        "protected": {
            "allow_writes": policy.allow_protected_writes,
            "patterns": [*DEFAULT_PROTECTED, *policy.protected_paths],
            "placeholders": list(view.placeholders),
        },
        "private_exposed": view.private_exposed,
        "home": view.home,
        "mounts": to_data(view.mounts),
        "refused_read_paths": list(view.refused),
        "sandbox_hidden_by": view.sandbox_hidden_by,
        "environment": {
            "core": list(CORE_VARIABLES),
            "listed": list(policy.env_allow),
            "passed": [name for name in names if passes_variable(name, policy)],
            "dropped": [name for name in names if not passes_variable(name, policy)],
        },
        "limits": [
            {"name": name, "value": value, "setting": setting, "enforced_by": how}
            for name, value, setting, how in _limit_rows(policy, status.available, status.features)
        ],
        "cgroups": {
            "homes": {home.controller: home.base for home in support.homes},
            "missing": support.reason,
        },
        "grep_engine": (
            "RE2 (linear time); lookaround and backreferences on Python re in a killable process"
            if re2_available()
            else "Python re in a killable process (google-re2 is not installed)"
        ),
        "settings": [
            ENV_READ_PATHS,
            ENV_NEVER_VISIBLE,
            ENV_PASS_VARIABLES,
            ENV_BUBBLEWRAP,
            ENV_ALLOW_UNCONFINED,
            ENV_COMMAND_USER,
            ENV_ALLOW_PROTECTED_WRITES,
            ENV_PROTECTED_PATHS,
            ENV_MAX_PROCESSES,
            ENV_MAX_FILE_SIZE,
            ENV_MAX_ADDRESS_SPACE,
            ENV_MAX_CPU_SECONDS,
            ENV_MAX_MEMORY,
            ENV_TMP_SIZE,
            ENV_MIN_FREE_DISK,
        ],
    }


_MOUNT_WORDS = {
    "ro": "read-only",
    "rw": "read-write",
    "tmpfs": "empty",
    "dev": "devices",
    "proc": "processes",
    "symlink": "link",
    "hidden": "HIDDEN",
}


def render_report(report: dict[str, Any]) -> str:
    """The report as text for a terminal."""
    lines = [
        f"Commands in {report['sandbox']}",
        f"  confined: {'yes' if report['confined'] else 'NO'} ({report['confinement']})",
        f"  unconfined commands: {report['unconfined_commands']}",
        _user_line(report["command_user"]),
        _seccomp_line(report["seccomp"]),
        _protected_line(report["protected"]),
        f"  HOME inside: {report['home']} (empty, private)",
        "",
        "What a command sees (nothing else of this machine exists for it):",
    ]
    for mount in report["mounts"]:
        what = _MOUNT_WORDS.get(mount["kind"], mount["kind"])
        target = f" -> {mount['target']}" if "target" in mount else ""
        lines.append(f"  {what:<10} {mount['path']}{target}  ({mount['why']})")
    for refused in report["refused_read_paths"]:
        lines.append(f"  refused    {refused}")
    if report["private_exposed"]:
        lines.append(
            f"  no command runs here: the run history {report['private_exposed']} lies directly "
            "in the sandbox folder"
        )
    if report["sandbox_hidden_by"]:
        lines.append(f"  no command runs here: the sandbox is inside {report['sandbox_hidden_by']}")
    environment = report["environment"]
    lines += [
        "",
        "Environment variables passed: " + (", ".join(environment["passed"]) or "none"),
        "  (always: " + ", ".join(environment["core"]) + "; listed: "
        + (", ".join(environment["listed"]) or "none") + ")",
        "Dropped: " + (", ".join(environment["dropped"]) or "none"),
        "",
        "Limits (per command):",
    ]  # fmt: skip
    for row in report["limits"]:
        value = row["value"]
        if value is not None and row["name"] not in ("max_processes", "max_cpu_seconds"):
            value = human_size(value)
        value = "unlimited" if value is None else value
        lines.append(f"  {row['name']:<18} {value!s:<14} {row['enforced_by']}  [{row['setting']}]")
    lines += ["", f"grep: {report['grep_engine']}"]
    return "\n".join(lines)


def _user_line(user: dict[str, Any]) -> str:
    outside = "root" if user["uid"] == 0 else f"uid {user['uid']}"
    return f"  runs as: {outside} (gid {user['gid']}) outside its namespace: {user['why']}"


def _seccomp_line(seccomp: dict[str, Any]) -> str:
    if not seccomp["active"]:
        return f"  seccomp filter: NO ({seccomp['why']})"
    return f"  seccomp filter: yes, {len(seccomp['denied'])} system calls refused (EPERM)"


def _protected_line(protected: dict[str, Any]) -> str:
    if protected["allow_writes"]:
        return f"  protected paths: writable without asking ({ENV_ALLOW_PROTECTED_WRITES}=1)"
    return "  protected paths (read-only to commands, asked about for file tools): " + ", ".join(
        protected["patterns"]
    )
