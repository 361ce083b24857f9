//! The `notation` fuzz target: the checks are in `punct_referee_fuzz::targets::notation`
//! (`fuzz/src/targets/notation.rs`), which the test suite also replays on the
//! committed corpus (docs/FUZZING.md).

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| punct_referee_fuzz::targets::notation::run(data));
