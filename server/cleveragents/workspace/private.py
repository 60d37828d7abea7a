"""Paths no tool may see: credentials, and the run history and checkpoints this process keeps.

`DEFAULT_NEVER_VISIBLE` lists credential stores and the host's secrets; commands never see
them (`command_policy.command_mounts` covers them) and the file tools refuse them
(`sandbox.Sandbox`), even when the sandbox holds them (a sandbox that is the home folder).

`keep_private` adds what this process itself writes and must not let a tool read or change:
the history database and the checkpoint store (shadow git repositories holding copies of
other projects' files, whose `config` git obeys: a tool that could write it could make the
daemon run any program). They are registered where they are opened, so a history moved with
`--history` or the history variable's file is covered as well as the default data folder.
"""

from __future__ import annotations

import os
import threading

# Never visible to a command or a file tool, even inside the sandbox or an added read path.
# `~` is the real home folder of the user the daemon runs as. Glob characters are allowed.
DEFAULT_NEVER_VISIBLE = (
    # Keys, tokens and credential stores.
    "~/.ssh",
    "~/.gnupg",
    "~/.aws",
    "~/.azure",
    "~/.config/gcloud",
    "~/.config/gh",
    "~/.config/hub",
    "~/.config/git/credentials",
    "~/.git-credentials",
    "~/.netrc",
    "~/.docker",
    "~/.kube",
    "~/.npmrc",
    "~/.yarnrc",
    "~/.yarnrc.yml",
    "~/.pypirc",
    "~/.cargo/credentials",
    "~/.cargo/credentials.toml",
    "~/.gem/credentials",
    "~/.m2/settings.xml",
    "~/.m2/settings-security.xml",
    "~/.gradle/gradle.properties",
    "~/.terraform.d",
    "~/.vault-token",
    "~/.password-store",
    "~/.pgpass",
    "~/.my.cnf",
    "~/.local/share/keyrings",
    "~/.pki",
    "~/.s3cfg",
    "~/.boto",
    "~/.oci",
    "~/.config/rclone",
    "~/.config/op",
    "~/.config/github-copilot",
    "~/.huggingface/token",
    "~/.cache/huggingface/token",
    # Other AI tools' credentials (API keys, OAuth tokens).
    "~/.claude/.credentials.json",
    "~/.codex/auth.json",
    # Browser and mail profiles (cookies, saved passwords).
    "~/.mozilla",
    "~/.thunderbird",
    "~/.config/google-chrome",
    "~/.config/chromium",
    "~/.config/BraveSoftware",
    # Shell and REPL histories (pasted secrets, past commands).
    "~/.bash_history",
    "~/.zsh_history",
    "~/.python_history",
    "~/.psql_history",
    "~/.mysql_history",
    # The host's own secrets: readable by root only, and the daemon may run as root.
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssh/ssh_host_*_key",
    "/etc/ssl/private",
    "/etc/pki/tls/private",
    "/etc/krb5.keytab",
    "/etc/security/opasswd",
    "/etc/NetworkManager/system-connections",
    "/etc/wpa_supplicant",
    "/etc/wireguard",
    "/etc/openvpn",
    "/etc/ipsec.secrets",
    "/etc/ppp/chap-secrets",
    "/etc/ppp/pap-secrets",
    "/etc/letsencrypt",
    "/etc/docker",
    "/etc/libvirt/secrets",
)

_kept: set[str] = set()
_kept_lock = threading.Lock()


def keep_private(*paths: str | os.PathLike[str]) -> None:
    """Hide these paths (files or folders, existing or not) from every tool from now on."""
    with _kept_lock:
        for path in paths:
            _kept.add(os.path.realpath(os.fspath(path)))


def private_paths() -> tuple[str, ...]:
    """The paths `keep_private` was given in this process, as real paths."""
    with _kept_lock:
        return tuple(sorted(_kept))


def private_folder(path: str | os.PathLike[str], *, tighten: bool) -> None:
    """Create `path` (and its parents) if missing, the last one readable by its owner only.

    `tighten`: also take group and other access away from an existing folder (for folders
    that are ours alone: the default data folder, the checkpoint store). Another local user
    must not read the run history or the copies of files the checkpoints hold.
    """
    folder = os.fspath(path)
    if not os.path.isdir(folder):
        os.makedirs(folder, exist_ok=True)
        tighten = True
    if tighten and os.name == "posix":
        mode = os.stat(folder).st_mode & 0o7777
        if mode & 0o077:
            os.chmod(folder, mode & 0o700)


def private_file(path: str | os.PathLike[str]) -> None:
    """Create `path` if missing, and make it readable and writable by its owner only."""
    name = os.fspath(path)
    if os.name != "posix":
        return
    os.close(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600))
    mode = os.stat(name).st_mode & 0o7777
    if mode & 0o077:
        os.chmod(name, mode & 0o700)
