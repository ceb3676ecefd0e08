#!/usr/bin/env bash
# Installs the reference implementation (codex exec-server from npm @openai/codex@0.169.0)
# into a cache folder and prints the path of its binary. Idempotent and quiet.
# Used by the interop tests and the benchmarks; the project itself never needs it.
set -euo pipefail
VERSION=${CODEX_REF_VERSION:-0.169.0}
CACHE=${EXEC_SERVER_CACHE:-$HOME/.cache/exec-server}
DIR="$CACHE/reference-$VERSION"
find_bin() { find "$DIR/node_modules/@openai" -path '*bin/codex' -type f 2>/dev/null | head -1; }
BIN=$(find_bin || true)
if [ -z "$BIN" ]; then
  mkdir -p "$DIR/home"
  (cd "$DIR" && { [ -f package.json ] || npm init -y >/dev/null; } && npm install --silent --no-audit --no-fund "@openai/codex@$VERSION" >/dev/null 2>&1)
  BIN=$(find_bin)
fi
mkdir -p "$DIR/home"
[ -x "$BIN" ] || { echo "install-reference: codex binary not found under $DIR" >&2; exit 1; }
echo "$BIN"
