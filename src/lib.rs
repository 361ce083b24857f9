//! punct-referee: a game-referee service. The crate is a library (the engines,
//! and later the session and API layers) plus the `punct-referee` binary.

pub mod cli;
pub mod games;
