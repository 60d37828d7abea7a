#!/usr/bin/env bash
# The main job: set up what it runs (the package and its runtime dependencies, no test tools),
# then run a tool loop on a copy of examples/workspace with the offline model (no key, no
# network). Pass --provider anthropic etc. to use a real model.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-runtime.sh
rm -rf build/demo-workspace && mkdir -p build && cp -r examples/workspace build/demo-workspace
exec .venv/bin/cleveragents run "Find the open TODOs in this project and write a short report" \
  --sandbox build/demo-workspace --profile auto-edit "$@"
