//! Dots move notation (`docs/rules/dots.md` §8) and records (§9), as the
//! service reads them: any text is a move or refused with one of the
//! notation's reasons, never a panic, and a move prints canonically and
//! reads back the same; played on real games (every start, several sizes,
//! early, late and over) a text is played with its canonical notation or
//! refused changing nothing, and the engine's check agrees; any text parses
//! as a record or is refused with a reason and a line inside the text, a
//! parsed record prints to its canonical form (no tags but the supplied
//! mark, the commitment only where the seed is withheld), which parses to
//! the same record and prints the same, and one
//! that imports exports to a record that imports to the same game.

use std::sync::LazyLock;

use super::observable;
use punct_referee::games::dots::record::SUPPLIED_MARK;
use punct_referee::games::dots::referee::{DotsGame, DotsMoveInfo, import, notation_input};
use punct_referee::games::dots::{Move, Point, Record, RuleOptions, Start};
use punct_referee::games::{Game, Setup, Viewer};

/// Games of every start on small and full-size fields: at the start, after
/// a few moves, after many, and over (seeded play).
static GAMES: LazyLock<Vec<DotsGame>> = LazyLock::new(|| {
    let mut out = Vec::new();
    let configs = [
        (5, 5, Start::Empty),
        (6, 4, Start::DoubleCross),
        (8, 8, Start::QuadrupleCross),
        (39, 32, Start::Cross),
    ];
    for (n, (width, height, start)) in configs.into_iter().enumerate() {
        let options = RuleOptions::new(width, height, start, 0).expect("valid options");
        let setup = Setup {
            seed: [n as u8 * 29 + 3; 32],
            supplied: true,
        };
        let mut game = DotsGame::new(options, Some(setup));
        let mut ply = 0usize;
        // The full-size field is cut short: 60 moves, then ground.
        while game.to_move().is_some() {
            if [0, 3, 14, 40].contains(&ply) {
                out.push(game.clone());
            }
            let moves = game.legal_moves();
            // Never `ground` (listed last) until the cut.
            let pick = if ply == 60 {
                moves.len() - 1
            } else {
                (ply * 11 + 5) % (moves.len() - 1)
            };
            game.play(&moves[pick].detail.to_input())
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
    // The notation on its own: a move, or one of its three refusals.
    match text.parse::<Move>() {
        Ok(mv) => {
            let canonical = mv.to_string();
            assert_eq!(canonical.parse::<Move>(), Ok(mv), "{canonical}");
            assert!(!canonical.contains(char::is_whitespace), "{canonical:?}");
            if let Move::Place(p) = mv {
                assert_eq!(text.parse::<Point>(), Ok(p));
                assert_eq!(canonical, format!("{},{}", p.x, p.y));
            }
        }
        Err(e) => {
            assert!(
                ["EMPTY_MOVE", "NO_PASS", "NOT_A_MOVE"].contains(&e.reason()),
                "{e:?}"
            );
            assert!(!e.to_string().is_empty());
        }
    }
    // Played on real games: canonical when accepted, nothing changed when
    // refused, and the engine's own check says the same.
    match notation_input(text) {
        None => assert!(text.parse::<Move>().is_err()),
        Some(input) => {
            let mv = text.parse::<Move>().expect("notation input is a move");
            for game in GAMES.iter() {
                let check = game.game().check(mv);
                let mut g = game.clone();
                match g.play(&input) {
                    Ok(report) => {
                        assert!(check.is_ok(), "{mv}: checked {check:?}, played");
                        assert_eq!(report.detail.notation, mv.to_string());
                        let info = report.detail.get::<DotsMoveInfo>().expect("a Dots move");
                        assert_eq!(info.mv, mv);
                        assert!(info.effect.is_some(), "a played move says what it did");
                        assert_eq!(g.ply(), game.ply() + 1);
                    }
                    Err(e) => {
                        assert!(check.is_err(), "{mv}: checked legal, refused: {e}");
                        assert!(!e.to_string().is_empty());
                        assert_eq!(g.game(), game.game(), "a refused move changed the game");
                        assert_eq!(observable(&g), observable(game));
                    }
                }
            }
        }
    }
    // As a record: the engine's reader, then the import behind ImportGame.
    match Record::parse(text) {
        Ok(record) => {
            let printed = record.to_string();
            let again = Record::parse(&printed)
                .unwrap_or_else(|e| panic!("a printed record does not parse: {e}\n---\n{printed}"));
            // The canonical form (§9) keeps no tag but the supplied mark, and
            // the commitment only where the seed is withheld.
            let tags: Vec<(String, String)> = record
                .tags
                .iter()
                .filter(|(k, v)| (k.as_str(), v.as_str()) == SUPPLIED_MARK)
                .cloned()
                .collect();
            let commitment = record.commitment.filter(|_| record.seed.is_none());
            assert_eq!(
                (
                    again.options,
                    again.seed,
                    again.commitment,
                    again.ending,
                    &again.tags,
                    &again.moves
                ),
                (
                    record.options,
                    record.seed,
                    commitment,
                    record.ending,
                    &tags,
                    &record.moves
                ),
                "{printed}"
            );
            assert_eq!(again.to_string(), printed);
        }
        Err(e) => {
            assert!(!e.reason().is_empty() && !e.to_string().is_empty());
            if let Some(line) = e.line() {
                assert!(
                    line >= 1 && line <= text.lines().count().max(1),
                    "line {line} is outside the text"
                );
            }
        }
    }
    match import(text, None) {
        Ok(imported) => {
            let game = imported.game.as_ref();
            assert_eq!(imported.moves.len() as u32, game.ply());
            let exported = game.record(&imported.tags, Viewer::Spectator);
            // An unfinished seeded export holds no seed: the server gives it
            // back.
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
