//! Game engines. Each game is a pure, synchronous module with no protobuf,
//! async, locks or I/O; the session layer drives them.

pub mod punct;
