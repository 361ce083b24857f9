//! The game engines and the game-independent conformance suite, black-box
//! through `punct_referee::games`: nothing here starts a server. One module
//! per subject: the rules of each game one named test each (`rules` is
//! PÜNCT's), property tests over random games, perft, and the conformance
//! suite with the fuzz targets' corpora replayed.
#![allow(
    unreachable_pub,
    reason = "helpers are `pub` for the other modules of this test binary, which is all that can reach them"
)]
#![allow(
    clippy::too_many_lines,
    reason = "a test is one scenario read top to bottom; its steps are named in its comments"
)]

#[path = "engines/dots_properties.rs"]
mod dots_properties;
#[path = "engines/dots_rules.rs"]
mod dots_rules;
#[path = "engines/game_conformance.rs"]
mod game_conformance;
#[path = "engines/perft.rs"]
mod perft;
#[path = "engines/properties.rs"]
mod properties;
#[path = "engines/punto_properties.rs"]
mod punto_properties;
#[path = "engines/punto_rules.rs"]
mod punto_rules;
#[path = "engines/rules.rs"]
mod rules;
