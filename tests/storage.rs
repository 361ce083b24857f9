//! The durable stores: the PostgreSQL backend against a real server
//! (`PUNCT_REFEREE_TEST_DATABASE_URL`, scripts/with-postgres.sh), and crash
//! tests of the real binary killed mid-game and restarted on its data.

mod common;

#[path = "storage/crash.rs"]
mod crash;
#[path = "storage/storage_postgres.rs"]
mod storage_postgres;
