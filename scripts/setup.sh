#!/usr/bin/env bash
# Set up everything the project needs on a fresh machine: a virtualenv with the package and
# its test tools, and the system packages the tests use. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'

# The Node client test drives the daemon with vscode-jsonrpc, as VS Code does.
if command -v npm >/dev/null 2>&1; then
  npm ci --prefix tests/daemon/node --silent --no-audit --no-fund
fi

# bubblewrap confines run_command; without it commands run unconfined (and say so).
if ! command -v bwrap >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null \
    || echo "setup: could not install bubblewrap; run_command will run unconfined" >&2
fi

# The VS Code extension: its build and test tools (npm), then Chromium for the webview test
# and code-server with Node 24 for the end-to-end test (e2e/setup.sh, idempotent).
if command -v npm >/dev/null 2>&1; then
  npm ci --prefix vscode-extension --silent --no-audit --no-fund
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    bash vscode-extension/e2e/setup.sh
  else
    echo "setup: not root: skipping Chromium and code-server (the extension's browser tests)" >&2
  fi
else
  echo "setup: npm not found: the VS Code extension cannot be built or tested" >&2
fi
