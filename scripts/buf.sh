#!/usr/bin/env bash
# The project's buf CLI (lint and breaking-change checks of proto/, config in
# buf.yaml): runs the version pinned in tools/buf/package-lock.json with this
# script's arguments, from the repository root, so paths in them are relative
# to the root. Installs it first, with `npm ci` into tools/buf/node_modules
# (the npm package ships the binary; nothing outside the repository), when it
# is missing or the lock file changed since the last install.
#   scripts/buf.sh lint
#   scripts/buf.sh breaking --against '.git#branch=main'
set -euo pipefail
cd "$(dirname "$0")/.."

TOOLS=tools/buf
# npm ci writes node_modules/.package-lock.json; an older one (or none) means
# the committed lock is not what is installed.
if [ ! -x "$TOOLS/node_modules/.bin/buf" ] \
    || [ "$TOOLS/package-lock.json" -nt "$TOOLS/node_modules/.package-lock.json" ]; then
    (cd "$TOOLS" && npm ci --no-audit --no-fund --loglevel=error) >&2
fi
exec "$TOOLS/node_modules/.bin/buf" "$@"
