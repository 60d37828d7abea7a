"""Run inside the command wall (by tests/workspace/test_command_host.py): every way to change
the host.

Prints one JSON object: what each attempt gave. Nothing here changes the host when the wall
holds, and even when it does not: sysctls are written with their own current value, and the
other files are only opened for writing, never written.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import platform
import signal
import sys
import time

# keyctl, add_key and bpf have no wrapper in Python or glibc's exports: their numbers.
SYSCALLS = {
    "x86_64": {"keyctl": 250, "add_key": 248, "bpf": 321},
    "aarch64": {"keyctl": 219, "add_key": 217, "bpf": 280},
}
PTRACE_ATTACH = 16
CLONE_NEWUSER = 0x10000000
CLONE_NEWNS = 0x00020000

libc = ctypes.CDLL(None, use_errno=True)


def outcome(result: int) -> str:
    return "ok" if result != -1 else errno.errorcode.get(ctypes.get_errno(), "?")


def writable_files(top: str, limit: int = 20000) -> tuple[int, list[str]]:
    """How many files under `top` were tried, and those that opened for writing."""
    tried, opened = 0, []
    for folder, _, files in os.walk(top):
        for name in files:
            path = os.path.join(folder, name)
            tried += 1
            try:
                fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                continue
            os.close(fd)
            opened.append(path)
            if tried >= limit:
                return tried, opened
    return tried, opened


def rewrite(path: str) -> str:
    """Write a sysctl's own current value back: "ok" would mean the host's is writable."""
    try:
        with open(path) as current:
            value = current.read()
    except OSError as exc:
        return f"unreadable: {exc.strerror}"
    try:
        with open(path, "w") as target:
            target.write(value)
    except OSError as exc:
        return errno.errorcode.get(exc.errno or 0, str(exc))
    return "ok"


def main() -> None:
    daemon_pid = int(sys.argv[1])
    report: dict[str, object] = {"uid": os.getuid(), "euid": os.geteuid()}
    with open("/proc/self/status") as status:
        report["seccomp"] = next(
            (line.split()[1] for line in status if line.startswith("Seccomp:")), "?"
        )
    report["proc_sys"] = writable_files("/proc/sys")
    report["sys_exists"] = os.path.exists("/sys")
    report["sys"] = writable_files("/sys") if os.path.exists("/sys") else (0, [])
    report["core_pattern"] = rewrite("/proc/sys/kernel/core_pattern")
    report["printk_ratelimit_burst"] = rewrite("/proc/sys/kernel/printk_ratelimit_burst")
    report["sysrq_trigger"] = (
        writable_files("/proc/sysrq-trigger")[1] if os.path.exists("/proc/sysrq-trigger") else []
    )
    top_level = []
    for name in os.listdir("/proc"):
        path = f"/proc/{name}"
        if name.isdigit() or name in ("self", "thread-self") or not os.path.isfile(path):
            continue
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            continue
        top_level.append(path)
    report["proc_top_writable"] = top_level
    report["mount"] = outcome(libc.mount(b"none", b"/tmp", b"tmpfs", 0, None))
    report["unshare_user"] = outcome(libc.unshare(CLONE_NEWUSER))
    report["unshare_mount"] = outcome(libc.unshare(CLONE_NEWNS))
    numbers = SYSCALLS.get(platform.machine())
    if numbers is not None:
        # keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_USER_KEYRING, create=1): the uid's keyring.
        report["keyctl"] = outcome(libc.syscall(numbers["keyctl"], 0, -4, 1))
        report["add_key"] = outcome(
            libc.syscall(numbers["add_key"], b"user", b"probe", b"x", 1, -4)
        )
        # bpf(BPF_PROG_LOAD, NULL, 0): EFAULT would mean the call reached the kernel's checks.
        report["bpf"] = outcome(libc.syscall(numbers["bpf"], 5, None, 0))
    child = os.fork()
    if child == 0:
        time.sleep(30)
        os._exit(0)
    try:
        report["ptrace_own_child"] = outcome(libc.ptrace(PTRACE_ATTACH, child, None, None))
    finally:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
    report["daemon_visible"] = os.path.exists(f"/proc/{daemon_pid}") and daemon_pid > 100
    report["ptrace_daemon"] = outcome(libc.ptrace(PTRACE_ATTACH, daemon_pid, None, None))
    print(json.dumps(report))


if __name__ == "__main__":
    main()
