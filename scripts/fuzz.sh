#!/usr/bin/env bash
# Runs the fuzz targets of fuzz/ (docs/FUZZING.md), each for a bounded time,
# with cargo-fuzz on a STABLE toolchain: `--sanitizer none` needs no nightly
# flag, and cargo-fuzz still builds with libFuzzer's coverage instrumentation
# (`--cfg fuzzing`, sancov passes), debug assertions and overflow checks.
#
#   scripts/fuzz.sh                 every target, FUZZ_SECONDS (default 20) each
#   FUZZ_SECONDS=600 scripts/fuzz.sh request moves
#   FUZZ_TOOLCHAIN=stable scripts/fuzz.sh    force a rustup toolchain (default:
#                                   the machine's default one, stable on CI)
#
# cargo-fuzz is installed into target/cargo-fuzz on first use (cached there);
# the build goes to target/fuzz. New inputs go to target/fuzz-corpus/<target>
# (the committed seeds in fuzz/corpus/<target> are read, never written), crash
# inputs to target/fuzz-artifacts/<target>/. Any crash fails the script; the
# libFuzzer summary of each run is printed (executions, exec/s, corpus).
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_EACH="${FUZZ_SECONDS:-20}"
CARGO=(cargo ${FUZZ_TOOLCHAIN:+"+$FUZZ_TOOLCHAIN"})
CARGO_FUZZ_VERSION=0.13.2
ROOT="$PWD/target/cargo-fuzz"
TARGETS=("$@")
if [ ${#TARGETS[@]} -eq 0 ]; then
    TARGETS=(notation record request moves punto dots dots_moves)
fi

if ! "$ROOT/bin/cargo-fuzz" --version 2>/dev/null | grep -q "$CARGO_FUZZ_VERSION"; then
    echo "== installing cargo-fuzz $CARGO_FUZZ_VERSION into $ROOT"
    "${CARGO[@]}" install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked --root "$ROOT"
fi
export PATH="$ROOT/bin:$PATH"

# -O -a: optimised, with debug assertions and overflow checks; 16 codegen
# units keep the build of the whole service (tonic, telemetry) to minutes.
FLAGS=(-O -a --sanitizer none --codegen-units 16 --target-dir target/fuzz)

echo "== building the fuzz targets ($("${CARGO[@]}" --version))"
"${CARGO[@]}" fuzz build "${FLAGS[@]}"

for t in "${TARGETS[@]}"; do
    corpus="target/fuzz-corpus/$t"
    artifacts="target/fuzz-artifacts/$t"
    mkdir -p "$corpus" "$artifacts"
    echo "== fuzz $t for ${SECONDS_EACH}s"
    log="target/fuzz-artifacts/$t.log"
    if ! "${CARGO[@]}" fuzz run "${FLAGS[@]}" "$t" "$corpus" "fuzz/corpus/$t" -- \
        -max_total_time="$SECONDS_EACH" -artifact_prefix="$artifacts/" \
        -print_final_stats=1 -rss_limit_mb=2048 -timeout=10 >"$log" 2>&1; then
        tail -n 60 "$log" >&2
        echo "fuzz target $t failed: crash input in $artifacts/ (reproduce with" >&2
        echo "  PATH=$ROOT/bin:\$PATH ${CARGO[*]} fuzz run ${FLAGS[*]} $t $artifacts/<file>)" >&2
        exit 1
    fi
    grep -E '^(#[0-9]+.*DONE|stat::number_of_executed_units|stat::average_exec_per_sec|stat::new_units_added|stat::peak_rss_mb|Done [0-9]+ runs)' "$log" || true
    echo "   corpus: $(find "$corpus" -type f | wc -l) inputs in $corpus"
done
echo "== fuzzing: no crash"
