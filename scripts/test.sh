#!/usr/bin/env bash
# The whole test suite: formatting, lints (clippy, and buf lint of proto/ with
# the buf pinned in tools/buf), every Rust test (unit, black-box,
# property tests, the gRPC service through a real socket, every fuzz
# target's committed corpus replayed; the instrumented fuzzing itself is
# scripts/fuzz.sh, run on demand: docs/FUZZING.md) and the README's
# grpcurl walk-through against the binary the tests built (profile `ci`), then the Python and Node
# clients' suites against it (scripts/test-clients.sh), and the spectator page in
# headless Chromium (scripts/test-web.sh), and the container image and the
# single-node Kubernetes manifests run under podman (scripts/test-container.sh).
# Run from anywhere; installs nothing outside the repository (grpcurl goes into
# a venv under target/) except Debian
# packages, with apt-get, when they are missing: `chromium`, `postgresql`,
# `nginx`, and podman with what it needs (scripts/test-container.sh). The Rust
# tests run under scripts/with-postgres.sh: a throw-away PostgreSQL server for
# the PostgreSQL backend's tests, which fail here
# (PUNCT_REFEREE_REQUIRE_POSTGRES) rather than skip; likewise tests/deploy.rs'
# nginx tests (PUNCT_REFEREE_REQUIRE_NGINX).
set -euo pipefail
cd "$(dirname "$0")/.."

# Each stage's heading carries the seconds since the start, so a slow CI run
# shows where its time went.
stage() { echo "== [${SECONDS}s] $*"; }

stage "cargo fmt --check"
cargo fmt --all -- --check
cargo fmt --manifest-path fuzz/Cargo.toml -- --check

stage "cargo clippy"
cargo clippy --all-targets --locked -- -D warnings

stage "buf lint (proto/)"
# STANDARD rules on the contract (buf.yaml). buf comes from the npm package
# pinned in tools/buf/package-lock.json (it ships the binary); scripts/buf.sh
# runs it. Findings exit non-zero and stop the suite.
(cd tools/buf && npm ci --no-audit --no-fund --loglevel=error)
scripts/buf.sh lint

stage "buf breaking (proto/ against the previous commit)"
# The previous commit (the first parent, for a merge) is the baseline, once it
# has the breaking rules in its buf.yaml; a clone without history has nothing
# to compare with.
# (No pipe into `grep -q`: under pipefail, grep closing early could fail it.)
baseline_config=$(git show HEAD~1:buf.yaml 2>/dev/null || true)
if git rev-parse -q --verify 'HEAD~1^{commit}' >/dev/null \
    && grep -q '^breaking:' <<<"$baseline_config"; then
    scripts/buf.sh breaking --against ".git#ref=$(git rev-parse HEAD~1)"
else
    echo "no baseline with breaking rules (first guarded commit, or no history): skipped"
fi

stage "one tonic, hyper, h2, prost and tokio in the dependency tree"
if cargo tree -d --locked | grep -E '^(tonic|tonic-prost|hyper|hyper-util|h2|prost|tokio|tower|http) v'; then
    echo "duplicate networking crates above: align the versions (docs/OBSERVABILITY.md)" >&2
    exit 1
fi

stage "Debian's nginx (tests/deploy.rs checks and runs the cluster profile's proxy config)"
if [ ! -x /usr/sbin/nginx ]; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO=sudo
    $SUDO apt-get update -qq
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nginx
    # The package starts its own server on port 80 where systemd runs: the
    # tests start theirs, on loopback ports, and need no other.
    if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet nginx 2>/dev/null; then
        $SUDO systemctl disable --now nginx >/dev/null 2>&1 || true
    fi
fi
export PUNCT_REFEREE_REQUIRE_NGINX=1

# The Rust tests build with the `ci` profile (Cargo.toml): release's settings
# at opt-level 1, where rustc shares generic instances between crates, so the
# six test binaries and the binary do not compile the library's async code
# again, and the dependencies at opt-level 0 but for their C code; the
# property tests still play thousands of games in seconds.
BIN=target/ci/punct-referee

stage "the Node kit's packages (tests/service runs real kit bots)"
# npm ci from the committed package-lock.json, as scripts/test-clients.sh
# does later; the service tests' kit bots then fail instead of skipping.
(cd clients/node && npm ci --no-audit --no-fund --loglevel=error)
export PUNCT_REFEREE_REQUIRE_KITS=1

stage "cargo test: build every target (profile ci)"
cargo test --profile ci --locked --all-targets --no-run

stage "cargo test: run, in four lanes at once, each on its own PostgreSQL"
# The cluster binary mostly waits on leases, kills and a database restart
# (and restarts its server, hence a server per lane); the engines' property
# tests and the unit tests, the service binary, and the tools, storage and
# deploy binaries take about as long as it. Each lane's output is printed
# when it ends.
export PUNCT_REFEREE_REQUIRE_POSTGRES=1
scripts/with-postgres.sh true >/dev/null # installs PostgreSQL once, if missing
lanes=$(mktemp -d)
declare -A lane_args=([cluster]="" [engines]="--lib --benches" [service]="" [tools]="--bins")
for file in tests/*.rs; do
    name=$(basename "$file" .rs)
    case "$name" in
        cluster | engines | service) lane_args[$name]+=" --test $name" ;;
        *) lane_args[tools]+=" --test $name" ;;
    esac
done
declare -A lane_pid
for lane in cluster engines service tools; do
    # shellcheck disable=SC2086 # the arguments are words
    scripts/with-postgres.sh cargo test --profile ci --locked --no-fail-fast ${lane_args[$lane]} \
        >"$lanes/$lane" 2>&1 &
    lane_pid[$lane]=$!
done
failed=""
for lane in engines service tools cluster; do
    status=0
    wait "${lane_pid[$lane]}" || status=$?
    echo "== [${SECONDS}s] lane $lane (${lane_args[$lane]# }): exit $status"
    cat "$lanes/$lane"
    [ "$status" -eq 0 ] || failed+=" $lane"
done
rm -rf "$lanes"
if [ -n "$failed" ]; then
    echo "cargo test failed in:$failed" >&2
    exit 1
fi

stage "grpcurl walk-through of README.md (the binary the tests built)"
scripts/grpcurl-walkthrough.sh "$BIN"

stage "Python and Node clients against the binary"
scripts/test-clients.sh "$BIN"

stage "spectator page in headless Chromium (scripts/test-web.sh)"
scripts/test-web.sh "$BIN"

stage "the image and deploy/k8s under podman (scripts/test-container.sh)"
scripts/test-container.sh "$BIN"

echo "== all tests passed in ${SECONDS}s"
