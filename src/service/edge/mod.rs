//! The front door (placeholder doc, rewritten below).

pub mod access;
pub mod listen;
pub mod overload;
pub mod quota;
pub mod refusal;
pub mod reload;
pub mod tls;
