"""No host state from a command, whoever runs the daemon (issue 17, item 1).

Each test runs with three daemons where this machine allows them:

- `root`: the daemon is root and the sandbox is root's (CI, containers): the command stays uid
  0 outside its namespace, without capabilities; read-only /proc knobs, no /sys and the
  seccomp filter are the walls.
- `root-user-sandbox`: the daemon is root, the sandbox belongs to a user (`nobody` here): the
  command runs as that user, outside its namespace too.
- `unprivileged`: the daemon itself runs as `nobody` (started with setpriv when the suite is
  root, under the system Python with the package on PYTHONPATH).

The command tries what the issue names: writing every file under /proc/sys and /sys,
kernel.core_pattern and printk_ratelimit_burst with their own values, mount, keyctl, bpf,
ptrace of the daemon; and what must keep working: `python -m pytest`, `git init && git
commit`, `npm test`.
"""

from __future__ import annotations

import asyncio
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cleveragents.workspace import CommandPolicy, Sandbox, bubblewrap_status
from cleveragents.workspace import bubblewrap as bubblewrap_module
from cleveragents.workspace import seccomp as seccomp_module
from cleveragents.workspace.bubblewrap import command_identity
from cleveragents.workspace.command import run_in_sandbox
from cleveragents.workspace.doctor import command_policy_report, render_report
from cleveragents.workspace.files import write_file
from cleveragents.workspace.seccomp import seccomp_status

REPO = Path(__file__).resolve().parents[2]
PROBE = Path(__file__).with_name("host_probe.py")
SYSTEM_PYTHON = "/usr/bin/python3"
BWRAP = bubblewrap_status()
SECCOMP = seccomp_status()
IS_ROOT = os.geteuid() == 0

pytestmark = pytest.mark.skipif(
    not BWRAP.available, reason=f"bubblewrap is not usable here: {BWRAP.reason}"
)

DAEMONS = ("root", "root-user-sandbox", "unprivileged")

# Runs run_in_sandbox in a separate process: the daemon as an unprivileged user.
DRIVER = """
import asyncio, json, sys
from cleveragents.workspace import Sandbox
from cleveragents.workspace.command import run_in_sandbox
from cleveragents.workspace.doctor import command_policy_report, render_report
from cleveragents.workspace.files import write_file
async def main():
    box = Sandbox(sys.argv[1])
    print(json.dumps(await run_in_sandbox(sys.argv[2], box, box.resolve('.'), 120.0)))
asyncio.run(main())
"""


def nobody() -> pwd.struct_passwd:
    return pwd.getpwnam("nobody")


def skip_unless_possible(daemon: str) -> None:
    if daemon in ("root", "root-user-sandbox") and not IS_ROOT:
        pytest.skip("needs the suite to run as root (the daemon's uid is the suite's)")
    if daemon == "unprivileged" and IS_ROOT:
        if shutil.which("setpriv") is None:
            pytest.skip("setpriv (util-linux) is missing: cannot start a daemon as nobody")
        if not os.access(SYSTEM_PYTHON, os.X_OK):
            pytest.skip(f"{SYSTEM_PYTHON} is missing: nobody cannot run this suite's Python")
        if _system_python_version() != str(sys.version_info[:2]):
            pytest.skip(
                f"{SYSTEM_PYTHON} is not Python {sys.version_info[:2]}: cannot import our deps"
            )
        site = _site_packages()
        if not site.startswith(("/usr", "/work", "/home", "/opt", "/srv")):
            pytest.skip(f"the package's dependencies in {site} are not readable by nobody")
    try:
        nobody()
    except KeyError:
        pytest.skip("no user named nobody here")


def _system_python_version() -> str:
    done = subprocess.run(
        [SYSTEM_PYTHON, "-c", "import sys; print(sys.version_info[:2])"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip()


def _site_packages() -> str:
    import pygls

    return str(Path(pygls.__file__).resolve().parents[1])


@pytest.fixture
def make_sandbox() -> Iterator[Any]:
    """A sandbox folder under /tmp (reachable by nobody), owned as the daemon wants it."""
    made: list[str] = []

    def make(daemon: str) -> Path:
        folder = tempfile.mkdtemp(prefix="cleveragents-host-")
        made.append(folder)
        os.chmod(folder, 0o755)
        if daemon != "root" and IS_ROOT:
            user = nobody()
            os.chown(folder, user.pw_uid, user.pw_gid)
        return Path(folder)

    yield make
    for folder in made:
        shutil.rmtree(folder, ignore_errors=True)


def place(sandbox: Path, name: str, text: str) -> None:
    """Put a file in the sandbox owned like the sandbox (as its owner would have it)."""
    target = sandbox / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    info = sandbox.stat()
    if IS_ROOT:
        for path in (target, target.parent):
            os.chown(path, info.st_uid, info.st_gid)


async def run(daemon: str, sandbox: Path, command: str) -> dict[str, Any]:
    """`command` through run_in_sandbox, from a daemon of the given kind."""
    if daemon != "unprivileged" or not IS_ROOT:
        box = Sandbox(str(sandbox))
        # The suite's packages (pytest) are readable inside, as a user's read path would be.
        policy = CommandPolicy(extra_read_paths=(_site_packages(),))
        return await run_in_sandbox(command, box, box.resolve("."), 120.0, policy=policy)
    user = nobody()
    environment = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(sandbox),
        "PYTHONPATH": f"{REPO / 'server'}:{_site_packages()}",
        "XDG_DATA_HOME": str(sandbox / ".data-outside"),
        "CLEVERAGENTS_COMMAND_READ_PATHS": _site_packages(),
    }
    argv = [
        "setpriv",
        f"--reuid={user.pw_uid}",
        f"--regid={user.pw_gid}",
        "--clear-groups",
        "--",
        SYSTEM_PYTHON,
        "-c",
        DRIVER,
        str(sandbox),
        command,
    ]
    done = await asyncio.to_thread(
        subprocess.run, argv, env=environment, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def expected_uid(daemon: str) -> int:
    if daemon == "root":
        return 0
    return nobody().pw_uid if IS_ROOT else os.geteuid()


def sysctl(name: str) -> str:
    return Path("/proc/sys", *name.split(".")).read_text()


@pytest.mark.parametrize("daemon", DAEMONS)
async def test_a_command_changes_nothing_of_the_host(daemon: str, make_sandbox: Any) -> None:
    skip_unless_possible(daemon)
    sandbox = make_sandbox(daemon)
    place(sandbox, "host_probe.py", PROBE.read_text())
    before = {
        name: sysctl(name) for name in ("kernel.core_pattern", "kernel.printk_ratelimit_burst")
    }

    output = await run(daemon, sandbox, f"{SYSTEM_PYTHON} host_probe.py {os.getpid()}")

    assert output["exit_code"] == 0, output["stderr"]
    report = json.loads(output["stdout"])
    # Nothing under /proc/sys or /sys opens for writing; the two classic knobs refuse their
    # own value, and the host's values are what they were.
    tried, opened = report["proc_sys"]
    assert tried > 100 and opened == []
    assert report["sys_exists"] is False or report["sys"][1] == []
    assert report["core_pattern"] in ("EROFS", "EACCES", "EPERM")
    assert report["printk_ratelimit_burst"] in ("EROFS", "EACCES", "EPERM")
    assert report["sysrq_trigger"] == [] and report["proc_top_writable"] == []
    assert {name: sysctl(name) for name in before} == before
    # No mount, no namespace of its own, no keyring, no BPF, no ptrace (of its own child,
    # let alone of the daemon, which it cannot even see).
    for attempt in ("mount", "unshare_user", "unshare_mount", "ptrace_daemon"):
        assert report[attempt] != "ok", attempt
    assert report["daemon_visible"] is False
    # Who it ran as, outside the namespace too (files it makes belong to that uid).
    assert report["uid"] == report["euid"] == expected_uid(daemon)
    made = await run(daemon, sandbox, "touch made-by-command")
    assert made["exit_code"] == 0, made["stderr"]
    assert (sandbox / "made-by-command").stat().st_uid == expected_uid(daemon)
    # Its own keyring and its own child are the seccomp filter's to refuse: no capability
    # is needed for them.
    if SECCOMP.available:
        assert report["seccomp"] == "2"  # filtered
        for attempt in ("mount", "ptrace_own_child", "keyctl", "add_key", "bpf"):
            assert report.get(attempt, "EPERM") == "EPERM", attempt


def test_the_seccomp_filter_denies_what_the_issue_names() -> None:
    if not SECCOMP.available:
        pytest.skip(f"no seccomp filter here: {SECCOMP.reason}")
    for name in (
        "mount", "umount2", "ptrace", "keyctl", "add_key", "request_key", "bpf", "kexec_load",
        "init_module", "finit_module", "delete_module", "userfaultfd", "perf_event_open",
        "reboot", "swapon", "swapoff", "pivot_root", "setns", "unshare",
    ):  # fmt: skip
        assert name in SECCOMP.denied, name


BUILD = r"""
set -e
mkdir -p proj && cd proj
cat > test_tiny.py <<'EOF'
def test_adds():
    assert 1 + 1 == 2
EOF
PYTHONPATH={site} {python} -m pytest -q -p no:cacheprovider test_tiny.py
git init -q .
git add test_tiny.py
git -c user.name=t -c user.email=t@example.invalid commit -q -m first
git log --oneline | wc -l
cat > package.json <<'EOF'
{{"name": "tiny", "version": "1.0.0",
 "scripts": {{"test": "node -e \"console.log('node says ' + (6 * 7))\""}}}}
EOF
npm test --silent
"""


@pytest.mark.parametrize("daemon", DAEMONS)
async def test_a_build_and_a_test_run_still_work(daemon: str, make_sandbox: Any) -> None:
    skip_unless_possible(daemon)
    for tool in ("git", "node", "npm"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed here")
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        pytest.skip(f"{SYSTEM_PYTHON} is missing")
    sandbox = make_sandbox(daemon)
    script = BUILD.format(site=_site_packages(), python=SYSTEM_PYTHON)

    output = await run(daemon, sandbox, script)

    assert output["exit_code"] == 0, output["stdout"] + output["stderr"]
    assert "1 passed" in output["stdout"]
    assert "node says 42" in output["stdout"]
    assert (sandbox / "proj" / ".git" / "HEAD").is_file()
    assert output["stdout"].splitlines().count("1") == 1  # one commit in the log


def test_a_root_daemon_runs_a_users_sandbox_as_that_user(make_sandbox: Any) -> None:
    skip_unless_possible("root-user-sandbox")
    sandbox = make_sandbox("root-user-sandbox")
    identity = command_identity(CommandPolicy(), str(sandbox), BWRAP)
    assert (identity.uid, identity.switched) == (nobody().pw_uid, True)
    stay = command_identity(CommandPolicy(command_user="daemon"), str(sandbox), BWRAP)
    assert (stay.uid, stay.switched) == (0, False)
    assert "CLEVERAGENTS_COMMAND_USER=daemon" in stay.reason
    own = command_identity(CommandPolicy(), str(make_sandbox("root")), BWRAP)
    assert (own.uid, own.switched) == (0, False) and "belongs to root" in own.reason


async def test_what_the_file_tools_write_stays_writable_by_commands(make_sandbox: Any) -> None:
    """A root daemon's write_file in a user's sandbox leaves files that user owns."""
    skip_unless_possible("root-user-sandbox")
    sandbox = make_sandbox("root-user-sandbox")
    place(sandbox, "kept.txt", "old\n")
    write_file("kept.txt", "replaced\n", sandbox_root=str(sandbox))
    write_file("new/deeper/made.txt", "new\n", sandbox_root=str(sandbox))

    output = await run(
        "root-user-sandbox", sandbox, "echo more >> kept.txt && echo more >> new/deeper/made.txt"
    )

    assert output["exit_code"] == 0, output["stderr"]
    user = nobody().pw_uid
    for name in ("kept.txt", "new", "new/deeper", "new/deeper/made.txt"):
        assert (sandbox / name).stat().st_uid == user, name
    assert (sandbox / "kept.txt").read_text() == "replaced\nmore\n"


def test_doctor_says_who_commands_run_as_and_whether_seccomp_holds(make_sandbox: Any) -> None:
    for daemon in ("root", "root-user-sandbox") if IS_ROOT else ("unprivileged",):
        sandbox = make_sandbox(daemon)
        report = command_policy_report(CommandPolicy(), str(sandbox))
        assert report["command_user"]["uid"] == expected_uid(daemon)
        assert report["seccomp"]["active"] is SECCOMP.available
        if SECCOMP.available:
            assert "keyctl" in report["seccomp"]["denied"]
        text = render_report(report)
        assert "runs as: " in text and "seccomp filter: " in text
        assert ("uid 65534" in text) is (daemon == "root-user-sandbox")
        proc = {m["path"]: m["kind"] for m in report["mounts"] if m["path"].startswith("/proc/")}
        assert proc["/proc/sys"] == "ro"


async def test_without_libseccomp_commands_run_unfiltered_and_doctor_says_why(
    make_sandbox: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A missing binding (or libseccomp) is a degradation said aloud, never a crash."""
    monkeypatch.setitem(sys.modules, "pyseccomp", None)  # import now raises ImportError
    missing = seccomp_module.compile_filter()
    assert not missing.available and "pyseccomp" in missing.reason
    monkeypatch.setattr(bubblewrap_module, "seccomp_status", lambda: missing)
    monkeypatch.setattr(bubblewrap_module, "_seccomp_results", {})
    sandbox = make_sandbox("root" if IS_ROOT else "unprivileged")
    box = Sandbox(str(sandbox))

    output = await run_in_sandbox(
        "grep '^Seccomp:' /proc/self/status; cat /proc/sys/kernel/printk_ratelimit_burst > "
        "/proc/sys/kernel/printk_ratelimit_burst",
        box,
        box.resolve("."),
        60.0,
    )

    assert output["stdout"].split() == ["Seccomp:", "0"]
    assert "Read-only file system" in output["stderr"]  # the other walls still hold
    report = command_policy_report(CommandPolicy(), str(sandbox))
    assert report["seccomp"]["active"] is False
    assert "seccomp filter: NO (the pyseccomp package is not installed" in render_report(report)


@pytest.mark.parametrize("daemon", DAEMONS)
async def test_protected_paths_hold_whoever_runs_the_daemon(daemon: str, make_sandbox: Any) -> None:
    """The read-only git hooks and config, and the placeholders, for every kind of daemon."""
    skip_unless_possible(daemon)
    if shutil.which("git") is None:
        pytest.skip("git is not installed here")
    sandbox = make_sandbox(daemon)
    subprocess.run(["git", "init", "-q", str(sandbox)], check=True)
    if IS_ROOT:
        info = sandbox.stat()
        subprocess.run(["chown", "-R", f"{info.st_uid}:{info.st_gid}", str(sandbox)], check=True)
    config_before = (sandbox / ".git" / "config").read_text()

    output = await run(
        daemon,
        sandbox,
        "echo '#!/bin/sh' > .git/hooks/pre-commit; git config core.fsmonitor 'touch x'; "
        "echo '{}' > .envrc; echo hi > a && git add a && "
        "git -c user.name=t -c user.email=t@example.invalid commit -q -m a && git log --oneline",
    )

    assert output["exit_code"] == 0, output["stderr"]
    assert len(output["stdout"].splitlines()) == 1  # the commit went in
    assert "pre-commit: Read-only file system" in output["stderr"]
    assert not (sandbox / ".git" / "hooks" / "pre-commit").exists()
    assert (sandbox / ".git" / "config").read_text() == config_before
    assert not (sandbox / ".envrc").exists()
