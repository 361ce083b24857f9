#!/usr/bin/env bash
# The whole test suite: formatting, lints, every Rust test (unit, black-box,
# property tests, the gRPC service through a real socket) and the README's
# grpcurl walk-through against the release binary. Run from anywhere; installs
# nothing outside the repository (grpcurl goes into a venv under target/).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy"
cargo clippy --all-targets --locked -- -D warnings

echo "== one tonic, hyper, h2, prost and tokio in the dependency tree"
if cargo tree -d --locked | grep -E '^(tonic|tonic-prost|hyper|hyper-util|h2|prost|tokio|tower|http) v'; then
    echo "duplicate networking crates above: align the versions (docs/OBSERVABILITY.md)" >&2
    exit 1
fi

echo "== cargo test (release: the property tests play thousands of games)"
cargo test --release --locked --all-targets

echo "== grpcurl walk-through of README.md (release binary)"
scripts/grpcurl-walkthrough.sh target/release/punct-referee

echo "== all tests passed"
