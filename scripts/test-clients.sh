#!/usr/bin/env bash
# The polyglot clients' suites (clients/python with pytest, clients/node with
# `node --test`) against the release binary, started here on a free loopback
# port and stopped on exit, whatever happens. Installs nothing outside the
# repository: the Python packages go into clients/python/.venv (pinned in
# requirements.txt), the Node packages into clients/node/node_modules
# (`npm ci` from the committed package-lock.json). Stubs are generated from
# proto/ into clients/python/gen (gitignored); Node loads proto/ at run time.
#
# Then both suites' TLS + keys tests (clients/python/tests/test_security.py,
# clients/node/test-secure/) against a second server with TLS and a keys
# file: its certificates are made here with openssl, its keys with the
# binary's `keys` command (one to create games, one to read, one to run
# tournaments), all in the scratch directory (nothing committed).
#
# In between, each kit is built away from the checkout (its folder copied
# alone with proto/ into the scratch directory: a wheel, an npm tarball),
# installed into a fresh venv / npm project there and connected to the
# plaintext server (docs/CLIENTS.md "Handing out a kit").
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
    if [ -n "${SECURE:-}" ]; then
        kill "$SECURE" 2>/dev/null || true
        wait "$SECURE" 2>/dev/null || true
    fi
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
(cd "$PY" && .venv/bin/python -m pytest -q -p no:cacheprovider --ignore=tests/test_security.py tests)

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

# A kit handed out on its own (docs/CLIENTS.md "Handing out a kit"): each kit
# folder copied away from the checkout with only the repository's proto/
# inside it, built there into a wheel / an npm tarball, installed into a fresh
# venv / a fresh npm project, and connected to the running referee.
echo "-- stand-alone kits: wheel and npm tarball built from the kit folders alone"
KITS=$WORK/kits
mkdir -p "$KITS/python" "$KITS/node" "$KITS/dist" "$KITS/app"
tar -C "$PY" --exclude .venv --exclude gen --exclude build --exclude '*.egg-info' --exclude __pycache__ -cf - . \
    | tar -C "$KITS/python" -xf -
cp -R "$ROOT/proto" "$KITS/python/proto"
"$PY/.venv/bin/pip" wheel --quiet --disable-pip-version-check --no-deps --no-build-isolation "$KITS/python" -w "$KITS/dist"
python3 -m venv "$KITS/venv"
"$KITS/venv/bin/pip" install --quiet --disable-pip-version-check "$KITS"/dist/punct_referee_client-*.whl
(cd "$KITS/app" && "$KITS/venv/bin/python" -c "
import sys, punct_client, punct_client.bot
assert '$KITS/venv' in punct_client.__file__, punct_client.__file__
client = punct_client.RefereeClient('$PUNCT_SERVER', timeout=5)
assert client.serving()
table = client.create_game()
assert client.get_game(table.game_id).game_id == table.game_id
from punct_client.organiser import Organiser
event = Organiser(client).create('kit', rules='dots', entrants=['a', 'b'], time_control={'per_move': {'move_ms': 1000}})
assert sorted(event.keys) == ['a', 'b']
print('wheel kit connected:', table.game_id)")
tar -C "$ROOT/clients/node" --exclude node_modules --exclude proto --exclude '*.tgz' -cf - . | tar -C "$KITS/node" -xf -
cp -R "$ROOT/proto" "$KITS/node/proto"
(cd "$KITS/node" && npm pack --silent --pack-destination "$KITS/dist" >/dev/null)
(cd "$KITS/app" && npm init -y >/dev/null && npm install --no-audit --no-fund --loglevel=error "$KITS"/dist/punct-referee-client-*.tgz \
    && node --input-type=module -e "
import { RefereeClient, PROTO_DIR } from 'punct-referee-client';
import 'punct-referee-client/bot';
if (!PROTO_DIR.startsWith('$KITS/app/node_modules/')) throw new Error('proto from ' + PROTO_DIR);
const client = new RefereeClient('$PUNCT_SERVER');
if (!(await client.serving())) throw new Error('not serving');
const table = await client.createGame();
const game = await client.getGame(table.gameId);
if (game.game_id !== table.gameId) throw new Error('wrong game ' + game.game_id);
const { Organiser } = await import('punct-referee-client/organiser');
const event = await new Organiser(client).create('kit', { rules: 'dots', entrants: ['a', 'b'], timeControl: { per_move: { move_ms: 1000 } } });
if (Object.keys(event.keys).length !== 2) throw new Error('no keys');
console.log('npm kit connected:', table.gameId);
client.close();")

echo "-- a referee with TLS and platform keys"
TLS=$WORK/tls
mkdir -p "$TLS"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
    -subj /CN=punct-referee-test-ca -keyout "$TLS/ca.key" -out "$TLS/ca.pem" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -subj /CN=localhost -keyout "$TLS/server.key" -out "$TLS/server.csr" 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n' > "$TLS/server.ext"
openssl x509 -req -in "$TLS/server.csr" -CA "$TLS/ca.pem" -CAkey "$TLS/ca.key" -CAcreateserial \
    -days 1 -extfile "$TLS/server.ext" -out "$TLS/server.pem" 2>/dev/null
PUNCT_KEY_CREATE=$("$BIN" keys --name clients-lobby --scope games:create --scope read --file "$TLS/keys.jsonl")
PUNCT_KEY_READ=$("$BIN" keys --name clients-reader --scope read --file "$TLS/keys.jsonl")
PUNCT_KEY_MANAGE=$("$BIN" keys --name clients-organiser --scope tournaments:manage --scope read --file "$TLS/keys.jsonl")
export PUNCT_KEY_CREATE PUNCT_KEY_READ PUNCT_KEY_MANAGE
SECURE_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$BIN" --listen "127.0.0.1:$SECURE_PORT" --no-http --storage memory --log warn \
    --tls-cert "$TLS/server.pem" --tls-key "$TLS/server.key" --keys "$TLS/keys.jsonl" \
    > "$WORK/secure.log" 2>&1 &
SECURE=$!
ready=""
for _ in $(seq 100); do
    if "$BIN" health --address "127.0.0.1:$SECURE_PORT" --tls-ca "$TLS/ca.pem" --timeout-secs 1 >/dev/null 2>&1; then
        ready=yes
        break
    fi
    sleep 0.2
done
[ -n "$ready" ] || { cat "$WORK/secure.log"; echo "the TLS server did not come up"; exit 1; }
export PUNCT_SECURE_SERVER="127.0.0.1:$SECURE_PORT" PUNCT_SECURE_CA="$TLS/ca.pem"

echo "-- python: TLS and keys"
(cd "$PY" && .venv/bin/python -m pytest -q -p no:cacheprovider tests/test_security.py)

echo "-- node: TLS and keys"
(cd "$ROOT/clients/node" && node --test test-secure/)

if grep -q -e "$PUNCT_KEY_CREATE" -e "$PUNCT_KEY_READ" -e "$PUNCT_KEY_MANAGE" "$WORK/secure.log"; then
    echo "a platform key is in the server's log" >&2
    exit 1
fi
