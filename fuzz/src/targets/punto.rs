//! Punto move notation (`docs/rules/punto.md` §4.4) and records (§12), as the
//! service reads them: any text is a cell or refused `MALFORMED`, never a
//! panic, and a cell prints canonically and reads back the same; played on
//! real matches (every configuration, several points of a round), a text is
//! played with its canonical notation or refused changing nothing; any text
//! imports as a record (only with its seed) or is refused with a message and
//! a line inside the text, and an imported record exports to one that
//! imports to the same match.

use std::sync::LazyLock;

use super::observable;
use punct_referee::games::punto::notation::parse_cell;
use punct_referee::games::punto::referee::{PuntoGame, import, notation};
use punct_referee::games::punto::{Refusal, RuleOptions};
use punct_referee::games::{Game, Setup, Viewer};

/// Matches of every configuration at the start, early in round 1, late in
/// round 1, early in round 2 and over (seeded play).
static MATCHES: LazyLock<Vec<PuntoGame>> = LazyLock::new(|| {
    let mut out = Vec::new();
    for (n, (players, team)) in [(2, false), (3, false), (4, false), (4, true)]
        .into_iter()
        .enumerate()
    {
        let options = RuleOptions::new(players, team, 2, 0, &[]).expect("valid options");
        let setup = Setup {
            seed: [n as u8 * 17 + 1; 32],
            supplied: true,
        };
        let mut game = PuntoGame::new(options, setup);
        let mut ply = 0usize;
        while game.to_move().is_some() {
            let round = game.engine().round();
            if [0, 1, 9, 24].contains(&ply) || (round.number() == 2 && round.placements() == 3) {
                out.push(game.clone());
            }
            let moves = game.legal_moves();
            let pick = &moves[(ply * 7) % moves.len()];
            game.play(&pick.detail.to_input())
                .expect("a listed move plays");
            ply += 1;
        }
        out.push(game);
    }
    out
});

/// One input, checked; panics on a finding.
pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // The notation on its own.
    match parse_cell(text) {
        Ok(cell) => {
            let canonical = cell.to_string();
            assert_eq!(parse_cell(&canonical), Ok(cell), "{canonical}");
            assert!(!canonical.contains("-0,") && !canonical.ends_with("-0"));
        }
        Err(e) => {
            assert!(matches!(e, Refusal::Malformed(_)), "{e:?}");
            assert!(!e.to_string().is_empty());
        }
    }
    // Played on real matches: canonical when accepted, nothing changed when
    // refused.
    let input = notation(text).expect("any text is an input");
    for game in MATCHES.iter() {
        let mut g = game.clone();
        match g.play(&input) {
            Ok(report) => {
                let cell = parse_cell(text).expect("a played text is a cell");
                assert_eq!(report.detail.notation, cell.to_string());
                assert_eq!(g.ply(), game.ply() + 1);
            }
            Err(e) => {
                assert!(!e.to_string().is_empty());
                assert_eq!(
                    g.engine(),
                    game.engine(),
                    "a refused move changed the match"
                );
            }
        }
    }
    // As a record.
    match import(text, None) {
        Ok(imported) => {
            let game = imported.game.as_ref();
            assert_eq!(imported.moves.len() as u32, game.ply());
            let exported = game.record(&imported.tags, Viewer::Spectator);
            // An unfinished export holds no seed: the server gives it back.
            let again = import(&exported, game.setup()).unwrap_or_else(|e| {
                panic!("an exported record does not import again: {e}\n---\n{exported}")
            });
            assert_eq!(observable(game), observable(again.game.as_ref()));
            assert_eq!(imported.moves, again.moves);
            assert_eq!(again.game.record(&again.tags, Viewer::Spectator), exported);
        }
        Err(e) => {
            assert!(!e.message.is_empty(), "an error without a message");
            if let Some(line) = e.line {
                assert!(
                    line >= 1 && line <= text.lines().count().max(1),
                    "line {line} is outside the text"
                );
            }
        }
    }
}
