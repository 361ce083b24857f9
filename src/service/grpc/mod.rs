//! The gRPC layer: tonic services that convert protobuf to the session
//! layer's neutral types, call it, and map its failures to `tonic::Status`
//! (all in [`error`]). Game-specific conversions live in one module per game
//! ([`games`]: `games/punct.rs`, …). The wire forms of a game's states
//! are made once per state and shared by every caller (`shared.rs`, kept
//! in each session's slot; GetGame's encoded answer: [`answer`]).

pub mod answer;
pub mod codec;
pub mod convert;
pub mod delay;
pub mod error;
pub mod games;
pub mod kinds;
pub mod pb;
mod ping;
pub mod play;
pub mod policy;
mod readers;
pub mod service;
mod shared;
pub mod tournament;
mod watch;

pub use service::RefereeApi;
pub use tournament::TournamentApi;
