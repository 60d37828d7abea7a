#!/usr/bin/env bash
# Every test: set up, then lint, type-check and run the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-tests.sh
.venv/bin/ruff format --check server tests bench
.venv/bin/ruff check server tests bench
.venv/bin/mypy
.venv/bin/python -m cleveragents.daemon.schema --check
.venv/bin/pytest -q "$@"

# The VS Code extension: strict typecheck, unit tests, the webview in headless Chromium, then
# the packaged .vsix end to end in a real VS Code (code-server).
npm --prefix vscode-extension test
npm --prefix vscode-extension run test:e2e
