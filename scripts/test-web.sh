#!/usr/bin/env bash
# The spectator page in a real browser (tests/web/spectator.mjs): headless
# Chromium from Debian's `chromium` package, driven by playwright-core, against
# the release binary started here on free loopback ports and stopped on exit.
# Installs what it needs: `chromium` with apt-get when /usr/bin/chromium is
# missing (through sudo unless root), playwright-core into tests/web/node_modules
# with `npm ci` from the committed package-lock.json (playwright-core downloads
# no browser). The screenshot goes to target/web-artifacts/spectator.png.
#
# Usage: scripts/test-web.sh [path/to/punct-referee]
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BIN=${1:-$ROOT/target/release/punct-referee}
[ -x "$BIN" ] || { echo "no binary at $BIN (cargo build --release)"; exit 1; }
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")

if [ ! -x /usr/bin/chromium ]; then
    echo "-- apt-get install chromium"
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO=sudo
    $SUDO apt-get update -qq
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium
fi

echo "-- npm ci (tests/web)"
(cd "$ROOT/tests/web" && npm ci --no-audit --no-fund --loglevel=error)

WORK=$(mktemp -d)
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
GRPC_PORT=$(free_port)
HTTP_PORT=$(free_port)
"$BIN" --listen "127.0.0.1:$GRPC_PORT" --http-listen "127.0.0.1:$HTTP_PORT" --data-dir "$WORK/data" --log warn > "$WORK/server.log" 2>&1 &
SERVER=$!
cleanup() {
    kill "$SERVER" 2>/dev/null || true
    wait "$SERVER" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

ready=""
for _ in $(seq 100); do
    if "$BIN" health --address "http://127.0.0.1:$GRPC_PORT" --timeout-secs 1 > /dev/null 2>&1; then
        ready=yes
        break
    fi
    sleep 0.2
done
[ -n "$ready" ] || { cat "$WORK/server.log"; echo "the server did not come up"; exit 1; }

echo "-- spectator page in headless Chromium"
if ! REFEREE_BIN="$BIN" \
    PUNCT_SERVER="http://127.0.0.1:$GRPC_PORT" \
    PUNCT_TOKENS="$WORK/tokens.json" \
    REFEREE_HTTP="http://127.0.0.1:$HTTP_PORT" \
    ARTIFACTS="$ROOT/target/web-artifacts" \
    node "$ROOT/tests/web/spectator.mjs"; then
    echo "-- server log"
    cat "$WORK/server.log"
    exit 1
fi
