"""The seccomp filter every confined command runs under: the system calls no build needs.

A command already runs without capabilities, in its own user, mount and PID namespaces, so
most of these calls would fail anyway. The filter is the second wall that does not depend on
the first: it holds where a namespace or a capability check has a hole (a root daemon, whose
commands are uid 0 outside their namespace; a kernel bug in a rarely used call). Each denied
call returns EPERM, the answer a program already handles for "not allowed here", rather than
killing the process.

The filter is compiled by libseccomp (through `pyseccomp`, a ctypes binding) and handed to
bubblewrap, which installs it just before it starts the command. Where libseccomp or the
binding is missing, or the architecture is unknown to it, commands run without the filter:
`seccomp_status()` says why, and `cleveragents doctor` shows it.
"""

from __future__ import annotations

import errno
import os
import tempfile
import threading
from dataclasses import dataclass
from typing import Any

# Denied, by why. Names unknown on this architecture (umount on x86_64, say) are skipped.
DENIED_SYSCALLS: dict[str, tuple[str, ...]] = {
    "mounting and changing the filesystem view": (
        "mount", "umount", "umount2", "pivot_root", "chroot", "mount_setattr", "move_mount",
        "open_tree", "fsopen", "fsconfig", "fsmount", "fspick",
    ),
    "entering or making namespaces": ("unshare", "setns"),
    "reading or changing other processes": (
        "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
    ),
    "the kernel keyring": ("keyctl", "add_key", "request_key"),
    "kernel programs and tracing": ("bpf", "perf_event_open", "lookup_dcookie"),
    "replacing or extending the kernel": (
        "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    ),
    "the host's power, swap, clock and accounting": (
        "reboot", "swapon", "swapoff", "acct", "settimeofday", "clock_settime", "clock_adjtime",
        "adjtimex", "syslog", "quotactl", "quotactl_fd", "vhangup", "nfsservctl",
    ),
    "raw hardware access": ("iopl", "ioperm"),
    "files by handle (bypasses the mount view)": ("open_by_handle_at", "name_to_handle_at"),
    "kernel features with a record of escapes": ("userfaultfd",),
    # io_uring runs file and network operations the filter never sees; libuv (node) and
    # others fall back to ordinary calls when it is refused.
    "calls the filter cannot see into": ("io_uring_setup", "io_uring_enter", "io_uring_register"),
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class SeccompStatus:
    """Whether commands get the filter here; `program` is the compiled BPF when they do."""

    available: bool
    reason: str
    program: bytes = b""
    denied: tuple[str, ...] = ()


_lock = threading.Lock()
_status: SeccompStatus | None = None


def seccomp_status() -> SeccompStatus:
    """Compile the filter once per process; the same answer afterwards."""
    global _status
    with _lock:
        if _status is None:
            _status = compile_filter()
        return _status


def _load_binding() -> tuple[Any, str]:
    """pyseccomp, or None and why not: it raises RuntimeError or OSError without libseccomp."""
    try:
        import pyseccomp  # type: ignore[import-untyped]
    except ImportError:
        return None, "the pyseccomp package is not installed (pip install pyseccomp)"
    except (RuntimeError, OSError) as exc:
        return None, f"libseccomp is not available ({exc}); install libseccomp2"
    return pyseccomp, ""


def compile_filter() -> SeccompStatus:
    """The filter as a BPF program bubblewrap can load, or why there is none."""
    if not os.path.isdir("/proc/self"):  # not Linux: no seccomp, and no bubblewrap either
        return SeccompStatus(False, "seccomp exists on Linux only")
    binding, why = _load_binding()
    if binding is None:
        return SeccompStatus(False, why)
    try:
        rules = binding.SyscallFilter(defaction=binding.ALLOW)
        denied: list[str] = []
        for names in DENIED_SYSCALLS.values():
            for name in names:
                try:
                    rules.add_rule(binding.ERRNO(errno.EPERM), name)
                except (ValueError, OSError):
                    continue  # No such call on this architecture: nothing to deny.
                denied.append(name)
        with tempfile.TemporaryFile() as compiled:
            rules.export_bpf(compiled)
            compiled.seek(0)
            program = compiled.read()
    except (OSError, ValueError, RuntimeError, AttributeError) as exc:
        return SeccompStatus(False, f"libseccomp could not build the filter: {exc}")
    if not program:
        return SeccompStatus(False, "libseccomp produced an empty filter")
    return SeccompStatus(True, "seccomp filter", program, tuple(denied))


def filter_fd(program: bytes) -> int:
    """A file descriptor holding `program` from its start, for `bwrap --seccomp FD`.

    An anonymous file: nothing on disk, and it is gone when the last descriptor closes.
    """
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("cleveragents-seccomp", os.MFD_CLOEXEC)
    else:  # pragma: no cover - Linux has memfd_create since 3.17
        fd, name = tempfile.mkstemp(prefix="cleveragents-seccomp-")
        os.unlink(name)
    try:
        view = memoryview(program)
        while view:
            view = view[os.write(fd, view) :]
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd
