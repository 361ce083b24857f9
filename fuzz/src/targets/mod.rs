//! The fuzz targets' checks, one module per target (docs/FUZZING.md): each
//! `run` takes one input and panics on a finding. The binaries in
//! `fuzz/fuzz_targets/` hand libFuzzer's inputs to them; the test suite
//! replays the committed corpora through them (`tests/engines/game_conformance.rs`).

use super::{POSITIONS, as_rules, check_export_round_trip, observable};

pub mod dots;
pub mod dots_moves;
pub mod moves;
pub mod notation;
pub mod punto;
pub mod record;
pub mod request;
