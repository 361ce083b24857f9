//! punct-referee: a game-referee service. The crate is a library (the engines,
//! the session layer and the gRPC API) plus the `punct-referee` binary.

pub mod api;
pub mod cli;
pub mod games;
pub mod sessions;
