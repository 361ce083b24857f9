//! The durable stores: the PostgreSQL backend against a real server
//! (`PUNCT_REFEREE_TEST_DATABASE_URL`, scripts/with-postgres.sh), and crash
//! tests of the real binary killed mid-game and restarted on its data.
#![allow(
    unreachable_pub,
    reason = "helpers are `pub` for the other modules of this test binary, which is all that can reach them"
)]
#![allow(
    clippy::too_many_lines,
    reason = "a test is one scenario read top to bottom; its steps are named in its comments"
)]

mod common;

#[path = "storage/crash.rs"]
mod crash;
#[path = "storage/storage_postgres.rs"]
mod storage_postgres;
#[path = "storage/webhooks_crash.rs"]
mod webhooks_crash;
