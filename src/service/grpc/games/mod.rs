//! The one registry of games: one [`WireGame`] per game, listed once in
//! [`WIRE_GAMES`], each giving its engine's [`GameKind`]. Every place that
//! converts a game's own messages (the `oneof game` members of
//! `referee.v1`) goes through this list: the gRPC conversion
//! ([`super::convert`]), the game kinds ([`super::kinds`]), the HTTP JSON
//! API and the tools; the sessions read records with its [`catalog`], and
//! the tools take from it their `--game` values, seats, pictures and bots.
//! A game's conversions live in its one file here (`punct.rs`, `dots.rs`,
//! `punto.rs`); nothing else matches on a game's member.
//!
//! Adding a game: its engine folder (`src/games/<game>/`, with its
//! [`GameKind`]), its proto folder (`proto/<game>/`, with a member in each
//! `oneof game` of `referee.v1`), its file here implementing [`WireGame`],
//! and its line in [`WIRE_GAMES`].

use super::pb::referee::v1 as pb;
use crate::games::{
    Catalog, GameKind, GameRules, MoveDetail, MoveInput, Opaque, Outcome, SharedState,
};
use crate::service::sessions::SessionError;

pub mod dots;
pub mod punct;
pub mod punto;

/// Every game the server referees and the tools play, one line each: its
/// wire ([`WireGame`]) and through it its engine ([`WireGame::kind`]). The
/// first is the default game (of a `CreateGame` without rules, of a record
/// without a `game:` header, of the tools' `--game`).
pub static WIRE_GAMES: &[&dyn WireGame] = &[&punct::PunctWire, &dots::DotsWire, &punto::PuntoWire];

/// The engines of [`WIRE_GAMES`], for reading records and rebuilding games
/// (what a `SessionStore` and the tools start from).
pub fn catalog() -> Catalog {
    Catalog::of(WIRE_GAMES.iter().map(|g| g.kind()))
}

/// The default game: the registry's first.
pub fn default_game() -> &'static dyn WireGame {
    WIRE_GAMES[0]
}

/// The wire game named `name` (its member of `GameRules`, its record's
/// `game:` header).
pub fn wire_game(name: &str) -> Option<&'static dyn WireGame> {
    WIRE_GAMES.iter().copied().find(|g| g.name() == name)
}

/// The wire game whose rules `rules` are.
pub fn wire_game_of(rules: &pb::game_rules::Game) -> Option<&'static dyn WireGame> {
    WIRE_GAMES
        .iter()
        .copied()
        .find(|g| g.rules(rules, Part::Request).is_some())
}

/// Where in a request a game's rules or moves are, so that a refusal names
/// the field the caller set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// `CreateGameRequest.rules`, `SubmitMoveRequest.move`,
    /// `ValidateMoveRequest.move`.
    Request,
    /// `ValidateMoveRequest.moves`: its rules and its moves.
    History,
    /// `CreateTournamentRequest.spec`: its rules and its openings' moves.
    Tournament,
}

impl Part {
    /// The path of the `GameRules` message itself.
    pub fn rules(self) -> &'static str {
        match self {
            Part::Request => "rules",
            Part::History => "moves.rules",
            Part::Tournament => "spec.rules",
        }
    }
}

/// The rules of `CreateGameRequest` ([`Part::Request`]), under the name
/// the callers of `convert::game_rules` have used.
pub const RULE_FIELDS: Part = Part::Request;
/// The move of `SubmitMoveRequest` and `ValidateMoveRequest`
/// ([`Part::Request`]), under the name the callers of
/// `convert::move_input` have used.
pub const MOVE_FIELDS: Part = Part::Request;

/// What a game's state shows beside its board, game-neutral, for the HTTP
/// JSON API: supplies, decks and rounds, running scores (each empty in a
/// game without them).
#[derive(Debug, Default)]
pub struct Sidelines {
    /// Per seat, in seat order: the pieces left to place (total and per
    /// piece code).
    pub supplies: Vec<(u32, Vec<(String, u32)>)>,
    /// The seats' decks as everybody may see them.
    pub decks: Vec<DeckText>,
    /// One line per finished round.
    pub rounds: Vec<String>,
    /// The running scores, by seat.
    pub scores: Vec<i64>,
}

/// A seat's deck in text: what everybody may see of it.
#[derive(Debug)]
pub struct DeckText {
    /// Its seat's number (from 1).
    pub seat: u32,
    /// How many cards it holds.
    pub size: u32,
    /// Its cards, space-separated.
    pub cards: String,
    /// The neutral cards it held, space-separated (empty in most tables).
    pub neutral: String,
}

/// One game's conversions between its members of the `referee.v1` oneofs
/// and the neutral types of [`crate::games`]. Each method answers `None`
/// for another game's value.
pub trait WireGame: Sync {
    /// The game itself: its engine's [`GameKind`].
    fn kind(&self) -> &'static dyn GameKind;

    /// The game's name: its member of every `oneof game`, its record's
    /// `game:` header ([`GameKind::name`]).
    fn name(&self) -> &'static str {
        self.kind().name()
    }

    /// The game's name as people write it (`PÜNCT`).
    fn title(&self) -> &'static str;

    /// Its rules from the wire, defaults filled in, checked (errors name the
    /// fields of `part`); `None` if `rules` is another game's.
    fn rules(
        &self,
        rules: &pb::game_rules::Game,
        part: Part,
    ) -> Option<Result<GameRules, SessionError>>;

    /// Its rules to the wire, every option explicit.
    fn rules_pb(&self, rules: &GameRules) -> Option<pb::game_rules::Game>;

    /// A move from the wire, checked for syntax (errors name the fields of
    /// `part`).
    fn move_input(
        &self,
        m: &pb::r#move::Game,
        part: Part,
    ) -> Option<Result<MoveInput, SessionError>>;

    /// A played move to the wire.
    fn move_pb(&self, detail: &MoveDetail) -> Option<pb::r#move::Game>;

    /// A move given only in notation, as the wire carries it (the tools
    /// send it so; the referee reads and judges it).
    fn notation_pb(&self, notation: &str) -> pb::r#move::Game;

    /// A move in notation as a whole wire `Move` ([`WireGame::notation_pb`]).
    fn wire_move(&self, notation: &str) -> pb::Move {
        pb::Move {
            game: Some(self.notation_pb(notation)),
        }
    }

    /// What a built-in bot of a game whose bots read their seat's state
    /// ([`GameKind::bots_read_state`]) reads of `state`, in the game's own
    /// terms ([`crate::games::BotTurn::view`]); `None` for another game's
    /// state, an error when it cannot be read.
    fn bot_view(&self, _state: &pb::game_state::Game) -> Option<Result<Opaque, String>> {
        None
    }

    /// The game's details of an outcome.
    fn outcome_detail_pb(&self, outcome: &Outcome) -> Option<pb::outcome::Detail>;

    /// A state to the wire.
    fn state_pb(&self, snapshot: &SharedState) -> Option<pb::game_state::Game>;

    /// Strips `state` (if this game's) to what `SNAPSHOT_VIEW_COMPACT`
    /// sends: without its rules and the forms derived from the rest.
    fn compact_state(&self, state: &mut pb::game_state::Game);

    /// The end of a round a played move brought, with the next deal, in a
    /// game played in rounds.
    fn round_over_pb(&self, _detail: &MoveDetail) -> Option<pb::round_over::Game> {
        None
    }

    /// The public client entropy of its rules, in a game whose rules carry
    /// one.
    fn entropy<'a>(&self, _rules: &'a pb::game_rules::Game) -> Option<&'a [u8]> {
        None
    }

    /// What its state shows beside the board; `None` for another game's.
    fn sidelines(&self, state: &pb::game_state::Game) -> Option<Sidelines>;

    /// The notation of a move the server sent (canonical).
    fn notation_of<'a>(&self, m: &'a pb::r#move::Game) -> Option<&'a str>;

    /// A played move as a person reads it (by default its notation).
    fn played_text(&self, m: &pb::r#move::Game) -> Option<String> {
        self.notation_of(m).map(str::to_string)
    }

    /// The summary line of the round a played move ended, in a game played
    /// in rounds.
    fn round_ended_by<'a>(&self, _m: &'a pb::r#move::Game) -> Option<&'a str> {
        None
    }

    /// The summary line of a round-over notice, in a game played in
    /// rounds.
    fn round_over_summary<'a>(&self, _round: &'a pb::round_over::Game) -> Option<&'a str> {
        None
    }

    /// The text picture of a state the server sent.
    fn picture_of<'a>(&self, state: &'a pb::game_state::Game) -> Option<&'a str>;

    /// The card (or piece) the mover is given to place, in a game that
    /// deals one.
    fn revealed<'a>(&self, _state: &'a pb::game_state::Game) -> Option<&'a str> {
        None
    }
}

/// The games' titles as a sentence lists them (`PÜNCT, Dots and Punto`).
pub fn titles() -> String {
    let titles: Vec<&str> = WIRE_GAMES.iter().map(|g| g.title()).collect();
    match titles.split_last() {
        None => String::new(),
        Some((last, [])) => (*last).to_string(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

/// The names of the games, as a request's choices under `prefix`
/// (`rules.punct, rules.dots or rules.punto`).
pub fn choices(prefix: &str) -> String {
    let names: Vec<String> = WIRE_GAMES
        .iter()
        .map(|g| format!("{prefix}.{}", g.name()))
        .collect();
    match names.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::path::{Path, PathBuf};

    use super::*;

    /// The registry lists each game once, its wire and its engine under one
    /// name, the first the default; its catalog reads each game's records.
    #[test]
    fn the_registry_lists_every_game_once() {
        let names: Vec<&str> = WIRE_GAMES.iter().map(|g| g.name()).collect();
        assert_eq!(names, ["punct", "dots", "punto"]);
        assert_eq!(default_game().name(), "punct");
        for g in WIRE_GAMES {
            assert_eq!(wire_game(g.name()).map(|w| w.kind().name()), Some(g.name()));
        }
        // A record without a `game:` header is the default game's.
        let catalog = catalog();
        let read = catalog.import("SE@E5:F5,G5\n", None).unwrap();
        assert_eq!(read.game.rules().game_name(), "punct");
        let unknown = catalog.import("game: chess\n\ne4\n", None).unwrap_err();
        assert_eq!(unknown.reason, Some("UNKNOWN_GAME"));
        assert_eq!(titles(), "PÜNCT, Dots and Punto");
        assert_eq!(choices("rules"), "rules.punct, rules.dots or rules.punto");
        for g in WIRE_GAMES {
            let notation = g.notation_pb("x");
            assert_eq!(g.notation_of(&notation), Some("x"), "{}", g.name());
            assert!(
                WIRE_GAMES
                    .iter()
                    .filter(|other| other.notation_of(&notation).is_some())
                    .count()
                    == 1,
                "{}'s move is read by one game only",
                g.name()
            );
        }
    }

    /// Every `.rs` file under `dir`, as paths relative to the crate root.
    fn sources(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                sources(root, &path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path.strip_prefix(root).unwrap().to_path_buf());
            }
        }
    }

    /// The files compiled only for tests: each module declared right after
    /// `#[cfg(test)]` (`#[cfg(test)] mod tests;`).
    fn test_modules(root: &Path, files: &[PathBuf]) -> BTreeSet<PathBuf> {
        let mut tests = BTreeSet::new();
        for file in files {
            let text = std::fs::read_to_string(root.join(file)).unwrap();
            let lines: Vec<&str> = text.lines().map(str::trim).collect();
            let dir = match file.file_name().and_then(|n| n.to_str()) {
                Some("mod.rs" | "lib.rs" | "main.rs") => file.parent().unwrap().to_path_buf(),
                _ => file.with_extension(""),
            };
            for pair in lines.windows(2) {
                let declared = pair[1]
                    .trim_start_matches("pub(crate) ")
                    .strip_prefix("mod ")
                    .and_then(|rest| rest.strip_suffix(';'));
                if let (true, Some(name)) = (pair[0] == "#[cfg(test)]", declared) {
                    tests.insert(dir.join(format!("{name}.rs")));
                    // A test module's folder: every file in it.
                    tests.insert(dir.join(name));
                }
            }
        }
        tests
    }

    /// The code of a file as the scan reads it: without its unit tests
    /// (from a `#[cfg(test)]` module on), its comments, and the product's
    /// own name (`punct-referee`, its `PUNCT_` environment variables).
    fn code(text: &str) -> String {
        let mut out = String::new();
        let mut lines = text.lines().peekable();
        while let Some(line) = lines.next() {
            let next = lines.peek().map_or("", |l| l.trim());
            if line.trim() == "#[cfg(test)]" && next.starts_with("mod ") && next.ends_with('{') {
                break;
            }
            // A comment starts at a `//` outside a string literal.
            let mut cut = line.len();
            let mut quotes = 0;
            for (i, c) in line.char_indices() {
                match c {
                    '"' => quotes += 1,
                    '/' if quotes % 2 == 0 && line[i..].starts_with("//") => {
                        cut = i;
                        break;
                    }
                    _ => {}
                }
            }
            out.push_str(&line[..cut].replace("PUNCT_", ""));
            out.push('\n');
        }
        out.to_lowercase()
            .replace("punct-referee", "")
            .replace("punct_referee", "")
    }

    /// The files under `src/` whose code names a game (any of `spellings`)
    /// outside the games' places (engine folders, wire files), the registry
    /// (this file), the engines' common interface (`games/mod.rs`, whose
    /// default rules are PÜNCT's) and test-only modules.
    fn naming_files(spellings: &[&str]) -> Vec<String> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        sources(root, &root.join("src"), &mut files);
        let tests = test_modules(root, &files);
        // Every game's places: one game's words in another's engine are its
        // own vocabulary (PÜNCT's pieces are made of dots), and an engine
        // never imports another game (docs/ARCHITECTURE.md).
        let mut places = vec![
            "src/games/mod.rs".to_string(),
            "src/service/grpc/games/mod.rs".to_string(),
        ];
        for g in WIRE_GAMES {
            places.push(format!("src/games/{}/", g.name()));
            places.push(format!("src/service/grpc/games/{}.rs", g.name()));
        }
        files
            .iter()
            .filter(|f| !tests.iter().any(|t| f.starts_with(t)))
            .map(|f| f.to_string_lossy().replace('\\', "/"))
            .filter(|f| !places.iter().any(|p| f.starts_with(p.as_str())))
            .filter(|f| {
                let text = std::fs::read_to_string(root.join(f)).unwrap();
                let code = code(&text);
                spellings.iter().any(|s| code.contains(s))
            })
            .collect()
    }

    /// The files outside a game's places that still name it, per game: at
    /// most three. A game's places are its engine folder, its wire file and
    /// the registry; a file over the limit fails here: move the game's code
    /// into its engine folder ([`GameKind`]) or its wire file ([`WireGame`]).
    #[test]
    fn few_files_name_a_game_outside_its_places() {
        const MOST: usize = 3;
        let mut report = String::new();
        let mut over = Vec::new();
        for g in WIRE_GAMES {
            let title = g.title().to_lowercase();
            let mut spellings = vec![g.name()];
            if title != g.name() {
                spellings.push(&title);
            }
            let files = naming_files(&spellings);
            report.push_str(&format!("{}: {} files: {files:?}\n", g.name(), files.len()));
            if files.len() > MOST {
                over.push(g.name());
            }
        }
        // The scan reads code: the registry's own wire type is named across
        // the tools and the service.
        assert!(
            naming_files(&["wiregame"]).len() > MOST,
            "the scan finds names"
        );
        println!("{report}");
        assert!(
            over.is_empty(),
            "named outside their places in more than {MOST} files: {over:?}\n{report}"
        );
    }
}
