#!/usr/bin/env bash
# The whole test suite: formatting, lints, every Rust test (unit, black-box,
# property tests) and a short smoke run of the benchmarks. Run from anywhere;
# installs nothing outside the repository.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy"
cargo clippy --all-targets --locked -- -D warnings

echo "== cargo test (release: the property tests play thousands of games)"
cargo test --release --locked --all-targets

echo "== all tests passed"
