#!/usr/bin/env bash
# What the demo runs, and no more: a virtualenv with the package and its runtime dependencies,
# and bubblewrap (which confines run_command) where apt-get and root allow. Safe to run again:
# the install is skipped while pyproject.toml is unchanged.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/venv.sh create
stamp=.venv/.cleveragents-runtime
wanted="$(sha256sum pyproject.toml | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ] || ! .venv/bin/python -c 'import cleveragents' 2>/dev/null; then
  bash scripts/venv.sh install -e .
  echo "$wanted" >"$stamp"
fi
# The package is installed editable, so nothing compiled its bytecode, and where
# PYTHONDONTWRITEBYTECODE is set no import ever writes it: every start of the daemon would
# compile the package again (about 0.1 s). Up-to-date files are skipped.
.venv/bin/python -m compileall -q -j 0 server/cleveragents >/dev/null

# bubblewrap confines run_command; without it commands run unconfined (and say so). The
# package lists are fetched only when the machine has none that know bubblewrap.
if ! command -v bwrap >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq bubblewrap >/dev/null 2>&1 \
    || { apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null; } \
    || echo "setup: could not install bubblewrap; run_command will run unconfined" >&2
fi
