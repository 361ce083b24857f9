//! Clients of the service and commands for people: the command-line client
//! ([`client`]), the load generator ([`load`]), bot tournaments
//! ([`tournament`]) and their bots ([`bots`]), and the engine commands
//! `perft`, `legal`, `show` ([`engine`]); [`games`] is what they know of
//! each game (one row per game, so a new game is little code here). Everything here talks to the
//! service over gRPC through one shared layer ([`rpc`]: addresses, seat
//! tokens, moves by notation), or runs an engine directly; nothing in
//! [`crate::service`] imports it.

pub mod bots;
pub mod client;
pub mod engine;
pub mod games;
pub mod load;
pub mod rpc;
pub mod tournament;
pub mod verify;
