#!/usr/bin/env bash
# Every test: set up, then lint, type-check and run the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff format --check server tests bench
.venv/bin/ruff check server tests bench
.venv/bin/mypy
.venv/bin/pytest -q "$@"
