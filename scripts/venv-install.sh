#!/usr/bin/env bash
# `pip install ARGS` into .venv (made by scripts/setup-runtime.sh). Through uv when there is one
# or it can be had from PyPI: it downloads in parallel and keeps a cache, and installed the
# demo's packages here in 7 s where pip took 50 s. pip otherwise, or when uv fails.
set -euo pipefail
cd "$(dirname "$0")/.."

uv=""
if command -v uv >/dev/null 2>&1; then
  uv="$(command -v uv)"
elif [ -x .venv/bin/uv ] \
  || .venv/bin/python -m pip install --quiet --disable-pip-version-check uv >/dev/null 2>&1; then
  uv=.venv/bin/uv
fi
if [ -n "$uv" ] && "$uv" pip install --quiet --python .venv/bin/python "$@"; then
  exit 0
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check "$@"
