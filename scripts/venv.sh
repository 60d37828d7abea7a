#!/usr/bin/env bash
# The project's virtualenv, .venv, made and filled through uv when it can be had, else pip.
#
#   bash scripts/venv.sh create           # make .venv (with pip in it) unless it is there
#   bash scripts/venv.sh install ARGS...  # `pip install ARGS` into .venv
#
# uv downloads in parallel and keeps a cache: here it made and filled the demo's .venv in under
# 10 s where venv and pip took about a minute. It is taken from PATH, else from this machine's
# cache ($XDG_CACHE_HOME/cleveragents-setup), else fetched once from PyPI into that cache. pip
# is the fallback for everything.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
tools="${XDG_CACHE_HOME:-$HOME/.cache}/cleveragents-setup"

find_uv() {
  if command -v uv >/dev/null 2>&1; then
    command -v uv
  elif [ -x "$tools/bin/uv" ]; then
    echo "$tools/bin/uv"
  fi
}

case "${1:-}" in
  create)
    [ -x .venv/bin/python ] && exit 0
    uv="$(find_uv)"
    if [ -n "$uv" ] && "$uv" venv --quiet --seed --python "$PYTHON" .venv; then
      exit 0
    fi
    rm -rf .venv
    "$PYTHON" -m venv .venv
    ;;
  install)
    shift
    uv="$(find_uv)"
    if [ -z "$uv" ] && .venv/bin/python -m pip install --quiet --disable-pip-version-check \
      --target "$tools" uv >/dev/null 2>&1; then
      uv="$tools/bin/uv"
    fi
    if [ -n "$uv" ] && "$uv" pip install --quiet --python .venv/bin/python "$@"; then
      exit 0
    fi
    .venv/bin/python -m pip install --quiet --disable-pip-version-check "$@"
    ;;
  *)
    echo "usage: bash scripts/venv.sh create | install ARGS..." >&2
    exit 2
    ;;
esac
