//! The binary's tools: the offline commands (`cli`), the client commands
//! against a real server (`client_cli`), the load generator and the
//! tournament runner.
#![allow(
    unreachable_pub,
    reason = "helpers are `pub` for the other modules of this test binary, which is all that can reach them"
)]
#![allow(
    clippy::too_many_lines,
    reason = "a test is one scenario read top to bottom; its steps are named in its comments"
)]

mod common;

#[path = "tools/cli.rs"]
mod cli;
#[path = "tools/client_cli.rs"]
mod client_cli;
#[path = "tools/load.rs"]
mod load;
#[path = "tools/tournament.rs"]
mod tournament;
#[path = "tools/verify.rs"]
mod verify;
#[path = "tools/webhooks_cli.rs"]
mod webhooks_cli;
