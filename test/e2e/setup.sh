#!/usr/bin/env bash
# Installs what the end-to-end suite needs to run a real VS Code workbench without downloading
# VS Code from Microsoft (unreachable here): code-server (VS Code server + web workbench, from npm),
# Node 24 (code-server 4.139 requires it), Debian's Chromium (+ libkrb5-dev and pkg-config, which
# code-server's native build needs), and playwright-core to drive it. Everything npm installs goes
# to ${EXEC_SERVER_CACHE:-~/.cache/exec-server}/e2e; re-running is a no-op once installed.
# Prints the paths as KEY=VALUE lines (NODE24, CODE_SERVER, PLAYWRIGHT, CHROMIUM; run.mjs reads
# them). The work (lock, clean env, atomic install, errors that show npm's output) is done by
# scripts/tools/install.mjs, which `npm test` runs once before any test.
set -euo pipefail
exec node "$(dirname "$0")/../../scripts/tools/install.mjs" e2e
