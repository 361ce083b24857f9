//! Each game's protobuf conversion, one file per game: its `oneof game`
//! members of the contract to and from the neutral types of
//! [`crate::games`].

pub mod dots;
pub mod punct;
pub mod punto;
