//! The binary's tools: the offline commands (`cli`), the client commands
//! against a real server (`client_cli`), the load generator and the
//! tournament runner.

mod common;

#[path = "tools/cli.rs"]
mod cli;
#[path = "tools/client_cli.rs"]
mod client_cli;
#[path = "tools/load.rs"]
mod load;
#[path = "tools/tournament.rs"]
mod tournament;
