#!/usr/bin/env bash
# Installs the reference implementation (codex exec-server from npm @openai/codex@0.169.0, or
# CODEX_REF_VERSION) into the cache and prints the path of its binary; its CODEX_HOME is the
# `home` folder next to node_modules. Used by `npm run bench` and scripts/compare-reference.mjs;
# `npm test` installs it in its install stage (scripts/tools/install.mjs, which does the work:
# lock, clean env, atomic install, errors with the npm output).
set -euo pipefail
exec node "$(dirname "$0")/tools/install.mjs" --print REFERENCE reference
