//! punct-referee: a game-referee service. The crate is a library (the engines,
//! the session layer, the gRPC API and the server) plus the `punct-referee`
//! binary. Data flows one way: [`api`] (and [`web`], the HTTP port) →
//! [`sessions`] → [`games`].

pub mod api;
pub mod bots;
pub mod cli;
pub mod client;
pub mod config;
#[doc(hidden)]
pub mod fuzzing;
pub mod games;
pub mod load;
pub mod overload;
pub mod server;
pub mod sessions;
pub mod storage;
pub mod telemetry;
pub mod tournament;
pub mod web;
