#!/usr/bin/env bash
# Set up everything the project needs on a fresh machine: what the demo runs
# (scripts/setup-runtime.sh) and what the tests need on top (scripts/setup-tests.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-tests.sh
