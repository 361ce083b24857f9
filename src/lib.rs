//! punct-referee: a game-referee service. The crate is a library plus the
//! `punct-referee` binary, in three parts with one-way arrows between them:
//!
//! ```text
//!   tools/  ──▶  service/  ──▶  games/
//!   (clients     (what `serve`     (pure engines and the
//!    of the       runs: gRPC,       one trait the service
//!    service)     HTTP, sessions,   drives)
//!                 storage)
//! ```
//!
//! * [`games`]: pure, synchronous engines and the game-agnostic trait the
//!   session layer drives; no tokio, tonic, prost, tracing or storage.
//! * [`service`]: the server: gRPC ([`service::grpc`]) and HTTP
//!   ([`service::http`]) over the session layer ([`service::sessions`]),
//!   which writes through [`service::storage`].
//! * [`tools`]: clients of the service (the command-line client, load,
//!   tournaments, bots) and the engine commands; `service` never imports
//!   `tools`.

pub mod cli;
#[doc(hidden)]
pub mod fuzzing;
pub mod games;
pub mod service;
pub mod tools;
