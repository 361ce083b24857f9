#!/usr/bin/env bash
# The polyglot clients' suites (clients/python with pytest, clients/node with
# `node --test`) against the release binary, started here on a free loopback
# port and stopped on exit, whatever happens. Installs nothing outside the
# repository: the Python packages go into clients/python/.venv (pinned in
# requirements.txt), the Node packages into clients/node/node_modules
# (`npm ci` from the committed package-lock.json). Stubs are generated from
# proto/ into clients/python/gen (gitignored); Node loads proto/ at run time.
#
# Usage: scripts/test-clients.sh [path/to/punct-referee]
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BIN=${1:-$ROOT/target/release/punct-referee}
[ -x "$BIN" ] || { echo "no binary at $BIN (cargo build --release)"; exit 1; }
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")

echo "-- python: venv and pinned packages"
PY=$ROOT/clients/python
if [ ! -x "$PY/.venv/bin/python" ]; then
    python3 -m venv "$PY/.venv"
fi
"$PY/.venv/bin/pip" install --quiet --disable-pip-version-check -r "$PY/requirements.txt"
"$PY/.venv/bin/python" "$PY/generate.py"

echo "-- node: npm ci"
(cd "$ROOT/clients/node" && npm ci --no-audit --no-fund --loglevel=error)

WORK=$(mktemp -d)
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$BIN" --listen "127.0.0.1:$PORT" --metrics-listen 127.0.0.1:0 --data-dir "$WORK/data" --log warn > "$WORK/server.log" 2>&1 &
SERVER=$!
cleanup() {
    kill "$SERVER" 2>/dev/null || true
    wait "$SERVER" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

ready=""
for _ in $(seq 100); do
    if "$PY/.venv/bin/python" -c "
import sys; sys.path.insert(0, '$PY')
from punct_client import RefereeClient
sys.exit(0 if RefereeClient('127.0.0.1:$PORT', timeout=1).serving() else 1)" 2>/dev/null; then
        ready=yes
        break
    fi
    sleep 0.2
done
[ -n "$ready" ] || { cat "$WORK/server.log"; echo "the server did not come up"; exit 1; }
export PUNCT_SERVER="127.0.0.1:$PORT"

export REFEREE_BIN="$BIN"

echo "-- python: pytest"
(cd "$PY" && .venv/bin/python -m pytest -q -p no:cacheprovider tests)

echo "-- python: pip install ./clients/python (stubs generated at build time)"
"$PY/.venv/bin/pip" install --quiet --disable-pip-version-check --no-deps --no-build-isolation "$PY"
# Imported from outside the checkout: the installed package and its own stubs.
(cd "$WORK" && "$PY/.venv/bin/python" -c "
import punct_client, punct_client.bot, pathlib
assert 'site-packages' in punct_client.__file__, punct_client.__file__
assert (pathlib.Path(punct_client.__file__).parent / '_gen/referee/v1/tournament_pb2.py').exists()
print('installed:', punct_client.__file__)")

echo "-- node: node --test"
(cd "$ROOT/clients/node" && node --test test/)
