#!/usr/bin/env bash
# Everything the tests need: scripts/setup-runtime.sh, then: the package's test tools (the `dev`
# extra), the Node client test's packages, and the VS Code extension's build and browser test
# tools. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup-runtime.sh
bash scripts/venv.sh install -e '.[dev]'

# The Node client test drives the daemon with vscode-jsonrpc, as VS Code does.
if command -v npm >/dev/null 2>&1; then
  npm ci --prefix tests/daemon/node --silent --no-audit --no-fund
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
