//! The hash chain of a game's moves (docs/RECEIPTS.md, "The chain").
//!
//! Every part is length-prefixed (4 bytes, big-endian) so that no two
//! different inputs hash the same bytes:
//!
//! ```text
//! part(x) = len(x) as u32 BE ‖ x
//! h_0     = SHA-256(part(DOMAIN) ‖ part(game id) ‖ part(rules) ‖ part(commitment))
//! h_n     = SHA-256(h_{n-1} ‖ part(notation of move n) ‖ n as u32 BE)
//! ```
//!
//! `rules` is the game's rules header (the record header lines of its
//! rules, [`crate::games::Game::rules_header`]); `commitment` the 32 bytes of
//! the seed's SHA-256 for a seeded game, empty otherwise; a move's notation
//! is its canonical notation as the record writes it (a Punto record line
//! writes the revealed card before it: the notation is the cell after it).

use sha2::{Digest as _, Sha256};

/// The domain tag of a chain's root.
pub const DOMAIN: &str = "punct-referee/chain/v1";

/// A chain head: 32 bytes.
pub type Head = [u8; 32];

fn part(hasher: &mut Sha256, bytes: &[u8]) {
    // Parts are short texts: a length that does not fit 32 bits cannot occur.
    let len = u32::try_from(bytes.len()).unwrap_or(u32::MAX);
    hasher.update(len.to_be_bytes());
    hasher.update(bytes);
}

/// `h_0`: the root of the chain of game `game_id` under `rules` set up
/// with the seed whose commitment is `commitment` (none: an unseeded game).
pub fn root(game_id: &str, rules: &str, commitment: Option<&[u8; 32]>) -> Head {
    let mut h = Sha256::new();
    part(&mut h, DOMAIN.as_bytes());
    part(&mut h, game_id.as_bytes());
    part(&mut h, rules.as_bytes());
    part(&mut h, commitment.map_or(&[][..], |c| &c[..]));
    h.finalize().into()
}

/// `h_n` from `h_{n-1}` = `prev` and move `ply` (from 1) written `notation`.
pub fn step(prev: &Head, notation: &str, ply: u32) -> Head {
    let mut h = Sha256::new();
    h.update(prev);
    part(&mut h, notation.as_bytes());
    h.update(ply.to_be_bytes());
    h.finalize().into()
}

/// The head after the moves `notations` (ply 1, 2, …) from `root`.
pub fn head<'a>(root: Head, notations: impl IntoIterator<Item = &'a str>) -> Head {
    notations
        .into_iter()
        .zip(1u32..)
        .fold(root, |h, (notation, ply)| step(&h, notation, ply))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_part_changes_the_root_and_every_move_the_head() {
        let c = [7u8; 32];
        let r = root("g1", "game: punct\n", Some(&c));
        assert_ne!(r, root("g2", "game: punct\n", Some(&c)));
        assert_ne!(r, root("g1", "game: dots\n", Some(&c)));
        assert_ne!(r, root("g1", "game: punct\n", None));
        // Length prefixes: moving a byte between parts changes the hash.
        assert_ne!(root("ab", "c", None), root("a", "bc", None));
        let h = head(r, ["a1", "b2"]);
        assert_eq!(h, step(&step(&r, "a1", 1), "b2", 2));
        assert_ne!(h, head(r, ["b2", "a1"]));
        assert_ne!(h, head(r, ["a1"]));
        assert_ne!(step(&r, "a1", 1), step(&r, "a1", 2));
    }

    #[test]
    fn the_chain_is_the_documented_bytes() {
        // The kits compute the same value (clients/*: their chain tests use
        // this vector).
        let r = root("g", "game: punct\n", None);
        let h = head(r, ["SE@E5:F5,G5"]);
        assert_eq!(
            crate::games::hex(&h),
            crate::games::hex(&{
                let mut s = Sha256::new();
                s.update(r);
                s.update(11u32.to_be_bytes());
                s.update(b"SE@E5:F5,G5");
                s.update(1u32.to_be_bytes());
                <[u8; 32]>::from(s.finalize())
            })
        );
    }
}
