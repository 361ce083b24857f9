//! Dots (Kropki), refereed exactly as `docs/rules/dots.md`: the pure engine.
//!
//! A [`Field`] of `W` × `H` cells (4..=64 each way) holds, per player, row
//! bitsets ([`Bits`]) of dots, of held cells and of empty-base markers.
//! [`Field::place`] puts a dot and applies docs/rules/dots.md §6: the regions the dot
//! closes (§6.1, found by flood fills that stop at the edge), their enclosed
//! areas (§6.2), captures and empty bases (§6.3) smallest area first (§6.4)
//! and the empty-base rules (§6.5). A local test on the eight cells around
//! the dot skips the flood fills when the dot cannot have closed anything,
//! so a placement usually costs a few word operations; nothing on that path
//! allocates. [`Field::ground`] is §7.2. An [`Engine`] adds turns, the start
//! position (§4, [`setup`]), the end of the game (§7) and the move list.
//!
//! Around it: [`notation`] (points and `ground`, §8.1–8.2), [`record`] (game
//! records, §9), [`render`] (the position text of §8.3), [`chain`] (the
//! closed chain of dots around an area, for pictures), [`svg`] and
//! [`referee`] (the game behind the session layer's [`Game`](crate::games::Game)
//! trait). docs/DOTS.md lists the readings of docs/rules/dots.md made here.

pub mod bits;
pub mod bot;
pub mod chain;
pub mod kind;
pub mod notation;
pub mod record;
pub mod referee;
pub mod render;
pub mod setup;
pub mod svg;

pub use bits::{Bits, MAX_SIDE};
pub use notation::NotationError;
pub use record::{Record, RecordError};
pub use setup::Seed;

mod field;
mod game;
mod types;

pub use field::*;
pub use game::*;
pub use types::*;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_checked() {
        assert!(RuleOptions::new(4, 4, Start::Cross, 0).is_ok());
        assert_eq!(
            RuleOptions::new(3, 4, Start::Empty, 0)
                .unwrap_err()
                .reason(),
            "WIDTH_OUT_OF_RANGE"
        );
        assert_eq!(
            RuleOptions::new(8, 65, Start::Empty, 0)
                .unwrap_err()
                .reason(),
            "HEIGHT_OUT_OF_RANGE"
        );
        assert_eq!(
            RuleOptions::new(5, 4, Start::DoubleCross, 0)
                .unwrap_err()
                .reason(),
            "FIELD_TOO_SMALL"
        );
    }
}
