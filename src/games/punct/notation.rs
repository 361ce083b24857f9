//! Notation (docs/rules/punct.md §7): moves as text (`SE@E5:F5,G5`, `E5>H8:I8,J8`) and
//! game records (header lines, a blank line, one turn per line).
//!
//! Parsing is lenient (any case, spaces around the separators, minor spaces in
//! either order); formatting is canonical. A notated move is position-free
//! text; [`Position::resolve`] turns it into a [`Move`] on a given position.

use std::fmt;
use std::str::FromStr;

use super::board::{Space, SpaceParseError};
use super::movegen::IllegalMove;
use super::outcome::EndReason;
use super::piece::{
    Colour, PieceCode, PieceCodeParseError, footprint, rotation_for, sorted_minors,
};
use super::position::Position;
use super::{EndOnSupply, Engine, Move, RuleOptions};

/// Longest move text accepted (anything longer is garbage, not a move).
pub const MAX_MOVE_TEXT: usize = 64;

/// A move as written (docs/rules/punct.md §7), minor spaces in canonical order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NotatedMove {
    /// `SE@E5:F5,G5`: code, PÜNCT space, the two minor spaces.
    Place {
        /// The piece code.
        code: PieceCode,
        /// The PÜNCT space.
        punct: Space,
        /// The minor spaces, ascending.
        minors: [Space; 2],
    },
    /// `E5>H8:I8,J8`: current PÜNCT space, destination PÜNCT space, the two
    /// destination minor spaces.
    Shift {
        /// The moving piece's PÜNCT space.
        from: Space,
        /// The PÜNCT's destination.
        to: Space,
        /// The destination minor spaces, ascending.
        minors: [Space; 2],
    },
}

impl NotatedMove {
    /// A placement, minors put in canonical order.
    pub fn place(code: PieceCode, punct: Space, minors: [Space; 2]) -> NotatedMove {
        NotatedMove::Place {
            code,
            punct,
            minors: sort2(minors),
        }
    }

    /// A move, minors put in canonical order.
    pub fn shift(from: Space, to: Space, minors: [Space; 2]) -> NotatedMove {
        NotatedMove::Shift {
            from,
            to,
            minors: sort2(minors),
        }
    }
}

fn sort2([a, b]: [Space; 2]) -> [Space; 2] {
    if a <= b { [a, b] } else { [b, a] }
}

impl fmt::Display for NotatedMove {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotatedMove::Place {
                code,
                punct,
                minors,
            } => write!(f, "{code}@{punct}:{},{}", minors[0], minors[1]),
            NotatedMove::Shift { from, to, minors } => {
                write!(f, "{from}>{to}:{},{}", minors[0], minors[1])
            }
        }
    }
}

/// Why a move text could not be read (a syntax error, before any rule applies).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotationError {
    /// Nothing was given.
    #[error("empty move")]
    Empty,
    /// Longer than [`MAX_MOVE_TEXT`].
    #[error("move text longer than {MAX_MOVE_TEXT} characters")]
    TooLong,
    /// Not of the form `CODE@P:M,M` or `FROM>TO:M,M`.
    #[error("`{0}` is not a move: write a placement as `SE@E5:F5,G5` or a move as `E5>H8:I8,J8`")]
    Malformed(String),
    /// A space name is wrong.
    #[error(transparent)]
    Space(#[from] SpaceParseError),
    /// A piece code is wrong.
    #[error(transparent)]
    Code(#[from] PieceCodeParseError),
    /// The two minor spaces are the same space.
    #[error("the two minor spaces must differ")]
    RepeatedSpace,
}

impl FromStr for NotatedMove {
    type Err = NotationError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.len() > MAX_MOVE_TEXT {
            return Err(NotationError::TooLong);
        }
        let t = s.trim();
        if t.is_empty() {
            return Err(NotationError::Empty);
        }
        let malformed = || NotationError::Malformed(t.to_string());
        let (head, minors) = t.split_once(':').ok_or_else(malformed)?;
        let (m1, m2) = minors.split_once(',').ok_or_else(malformed)?;
        let minors = [m1.parse::<Space>()?, m2.parse::<Space>()?];
        if minors[0] == minors[1] {
            return Err(NotationError::RepeatedSpace);
        }
        if let Some((code, punct)) = head.split_once('@') {
            Ok(NotatedMove::place(code.parse()?, punct.parse()?, minors))
        } else if let Some((from, to)) = head.split_once('>') {
            Ok(NotatedMove::shift(from.parse()?, to.parse()?, minors))
        } else {
            Err(malformed())
        }
    }
}

/// Why a move given as text cannot be played.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MoveError {
    /// The text is not a move.
    #[error(transparent)]
    Syntax(#[from] NotationError),
    /// The move is not legal here.
    #[error(transparent)]
    Illegal(#[from] IllegalMove),
}

impl Position {
    /// The notation of `mv` on this position, if its pieces and spaces exist.
    pub fn notate(&self, mv: Move) -> Option<NotatedMove> {
        match mv {
            Move::Place {
                code,
                punct,
                rotation,
            } => {
                let fp = footprint(code, punct, rotation)?;
                Some(NotatedMove::Place {
                    code,
                    punct,
                    minors: sorted_minors(fp),
                })
            }
            Move::Shift { from, to, rotation } => {
                let id = self.punct_on_top(from)?;
                let fp = footprint(id.code(), to, rotation)?;
                Some(NotatedMove::Shift {
                    from,
                    to,
                    minors: sorted_minors(fp),
                })
            }
        }
    }

    /// Turns notation into a [`Move`]: finds the moving piece and the rotation
    /// whose minor dots are the ones written (docs/rules/punct.md §7: the code must match
    /// the geometry; a move's spaces must be a rotation of the moving piece).
    pub fn resolve(&self, notated: NotatedMove) -> Result<Move, IllegalMove> {
        match notated {
            NotatedMove::Place {
                code,
                punct,
                minors,
            } => {
                let rotation = rotation_for(code, punct, minors)
                    .ok_or(IllegalMove::ShapeMismatch { code, punct })?;
                Ok(Move::Place {
                    code,
                    punct,
                    rotation,
                })
            }
            NotatedMove::Shift { from, to, minors } => {
                let code = self.mover_at(from)?.code();
                let rotation = rotation_for(code, to, minors)
                    .ok_or(IllegalMove::ShapeMismatch { code, punct: to })?;
                Ok(Move::Shift { from, to, rotation })
            }
        }
    }
}

/// A finished game's result line: `white CONNECTION`, `draw LAST_PIECE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatedOutcome {
    /// The winner, or `None` for a draw.
    pub winner: Option<Colour>,
    /// Why the game ended.
    pub reason: EndReason,
}

impl fmt::Display for StatedOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.winner {
            Some(c) => write!(f, "{c} {}", self.reason),
            None => write!(f, "draw {}", self.reason),
        }
    }
}

impl FromStr for StatedOutcome {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut words = s.split_whitespace();
        let (Some(who), Some(reason), None) = (words.next(), words.next(), words.next()) else {
            return Err(format!(
                "`{}` is not a result (`white|black|draw REASON`)",
                s.trim()
            ));
        };
        let winner = match who.to_ascii_lowercase().as_str() {
            "white" => Some(Colour::White),
            "black" => Some(Colour::Black),
            "draw" => None,
            other => return Err(format!("`{other}` is not white, black or draw")),
        };
        Ok(StatedOutcome {
            winner,
            reason: reason.parse()?,
        })
    }
}

/// A game record (docs/rules/punct.md §7): options, free tags, result and moves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GameRecord {
    /// Variant and rule options (`variant:`, and the options that differ from
    /// the defaults).
    pub options: RuleOptions,
    /// Other header lines (`white: alice`, `event: …`), in order. Keys are
    /// letters, digits, `_` and `-`; values are single trimmed lines.
    pub tags: Vec<(String, String)>,
    /// The `result:` line, when the game is finished.
    pub result: Option<StatedOutcome>,
    /// The turns, in order.
    pub moves: Vec<NotatedMove>,
}

/// Why a game record could not be read or replayed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// A header line is wrong.
    #[error("line {line}: {message}")]
    Header {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A move line is not notation.
    #[error("line {line}: {error}")]
    Notation {
        /// 1-based line number.
        line: usize,
        /// The syntax error.
        error: NotationError,
    },
    /// A move is illegal when replayed.
    #[error("line {line} (turn {turn}, `{text}`): {error}")]
    Illegal {
        /// 1-based line number (0 when the record was not read from text).
        line: usize,
        /// 1-based turn number.
        turn: usize,
        /// The move as written.
        text: String,
        /// Why it is illegal.
        error: IllegalMove,
    },
    /// The `result:` line disagrees with the moves.
    #[error("the record says `{stated}` but the moves give `{actual}`")]
    ResultMismatch {
        /// The `result:` line.
        stated: String,
        /// What replaying gave (`unfinished` if the game goes on).
        actual: String,
    },
}

impl RecordError {
    /// The 1-based line the error is on, if any.
    pub fn line(&self) -> Option<usize> {
        match self {
            RecordError::Header { line, .. }
            | RecordError::Notation { line, .. }
            | RecordError::Illegal { line, .. } => Some(*line),
            RecordError::ResultMismatch { .. } => None,
        }
    }
}

fn is_key(k: &str) -> bool {
    let mut chars = k.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

impl GameRecord {
    /// Header keys with a meaning of their own (the game, its options and the
    /// result); every other `key: value` header line is a free tag.
    pub const RESERVED_KEYS: [&'static str; 6] = [
        "game",
        "variant",
        "end_on_supply",
        "max_plies",
        "repetition_limit",
        "result",
    ];

    /// A record with default options and nothing else.
    pub fn new(options: RuleOptions) -> GameRecord {
        GameRecord {
            options,
            tags: Vec::new(),
            result: None,
            moves: Vec::new(),
        }
    }

    /// Reads a record; also returns the line number of each move.
    pub fn parse_with_lines(text: &str) -> Result<(GameRecord, Vec<usize>), RecordError> {
        let mut record = GameRecord::new(RuleOptions::default());
        let mut lines = Vec::new();
        let mut in_header = true;
        let mut seen: Vec<&str> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line_no = i + 1;
            let line = raw.trim();
            if line.starts_with('#') {
                continue;
            }
            if line.is_empty() {
                if !seen.is_empty() || !record.tags.is_empty() {
                    in_header = false;
                }
                continue;
            }
            if in_header
                && let Some((k, v)) = line.split_once(':')
                && is_key(k.trim())
            {
                let key = k.trim();
                let value = v.trim();
                let header_err = |message: String| RecordError::Header {
                    line: line_no,
                    message,
                };
                let lower = key.to_ascii_lowercase();
                if let Some(&known) = GameRecord::RESERVED_KEYS.iter().find(|&&k| k == lower) {
                    if seen.contains(&known) {
                        return Err(header_err(format!("`{known}` is given twice")));
                    }
                    seen.push(known);
                    match known {
                        "game" if value.eq_ignore_ascii_case("punct") => {}
                        "game" => {
                            return Err(header_err(format!("`{value}` is not a PÜNCT record")));
                        }
                        "variant" => record.options.variant = value.parse().map_err(header_err)?,
                        "end_on_supply" => {
                            record.options.end_on_supply = value.parse().map_err(header_err)?
                        }
                        "max_plies" => {
                            record.options.max_plies = value.parse().map_err(|_| {
                                header_err(format!("max_plies `{value}` is not a number"))
                            })?
                        }
                        "repetition_limit" => {
                            record.options.repetition_limit = value.parse().map_err(|_| {
                                header_err(format!("repetition_limit `{value}` is not a number"))
                            })?
                        }
                        _ => record.result = Some(value.parse().map_err(header_err)?),
                    }
                } else {
                    // Tags are written `x-<tag>` (older records wrote them
                    // bare; both read back as the tag).
                    let tag = match key.get(..2) {
                        Some(p) if p.eq_ignore_ascii_case("x-") && key.len() > 2 => &key[2..],
                        _ => key,
                    };
                    record.tags.push((tag.to_string(), value.to_string()));
                }
                continue;
            }
            in_header = false;
            let mv = line
                .parse::<NotatedMove>()
                .map_err(|error| RecordError::Notation {
                    line: line_no,
                    error,
                })?;
            record.moves.push(mv);
            lines.push(line_no);
        }
        Ok((record, lines))
    }

    /// Replays the moves from the start, checking each; the result line, if
    /// any, must agree with the board (or name a referee action on an
    /// unfinished game). `lines` gives each move's line number for errors.
    pub fn replay_with_lines(&self, lines: &[usize]) -> Result<Engine, RecordError> {
        let mut game = Engine::new(self.options);
        for (i, mv) in self.moves.iter().enumerate() {
            let illegal = |error| RecordError::Illegal {
                line: lines.get(i).copied().unwrap_or(0),
                turn: i + 1,
                text: mv.to_string(),
                error,
            };
            let m = game.resolve(*mv).map_err(illegal)?;
            game.play(m).map_err(illegal)?;
        }
        let actual = game.outcome().map(|o| StatedOutcome {
            winner: o.winner,
            reason: o.reason,
        });
        match (self.result, actual) {
            (None, _) => {}
            (Some(stated), Some(actual)) if stated == actual => {}
            (Some(stated), None) if !stated.reason.is_board_rule() => {
                let _ = game.conclude(super::Outcome::referee(stated.winner, stated.reason));
            }
            (Some(stated), actual) => {
                return Err(RecordError::ResultMismatch {
                    stated: stated.to_string(),
                    actual: actual.map_or("unfinished".to_string(), |a| a.to_string()),
                });
            }
        }
        Ok(game)
    }

    /// Replays the record (see [`GameRecord::replay_with_lines`]); errors give
    /// the turn number.
    pub fn replay(&self) -> Result<Engine, RecordError> {
        self.replay_with_lines(&[])
    }
}

impl FromStr for GameRecord {
    type Err = RecordError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        GameRecord::parse_with_lines(s).map(|(r, _)| r)
    }
}

impl fmt::Display for GameRecord {
    /// Canonical text: `game`, `variant`, non-default options, the tags as
    /// `x-<tag>` lines (keys of the service's own, kept apart from any key
    /// the rules may name), `result`, a blank line, then one move a line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let defaults = RuleOptions::default();
        writeln!(f, "game: punct")?;
        writeln!(f, "variant: {}", self.options.variant)?;
        if self.options.end_on_supply != defaults.end_on_supply {
            writeln!(f, "end_on_supply: {}", self.options.end_on_supply.name())?;
        }
        if self.options.max_plies != defaults.max_plies {
            writeln!(f, "max_plies: {}", self.options.max_plies)?;
        }
        if self.options.repetition_limit != defaults.repetition_limit {
            writeln!(f, "repetition_limit: {}", self.options.repetition_limit)?;
        }
        for (k, v) in &self.tags {
            writeln!(f, "x-{k}: {v}")?;
        }
        if let Some(r) = self.result {
            writeln!(f, "result: {r}")?;
        }
        writeln!(f)?;
        for mv in &self.moves {
            writeln!(f, "{mv}")?;
        }
        Ok(())
    }
}

impl Engine {
    /// Reads and replays a game record, refusing at the first bad line.
    pub fn from_record_text(text: &str) -> Result<Engine, RecordError> {
        let (record, lines) = GameRecord::parse_with_lines(text)?;
        record.replay_with_lines(&lines)
    }
}

// Keep the option enums' text forms next to the record that uses them.
impl fmt::Display for EndOnSupply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::games::punct::{EndReason, Variant};

    fn sp(s: &str) -> Space {
        s.parse().unwrap()
    }

    #[test]
    fn parses_canonical_and_lenient_forms() {
        let canonical = NotatedMove::place(PieceCode::SE, sp("E5"), [sp("F5"), sp("G5")]);
        for text in [
            "SE@E5:F5,G5",
            "se@e5:f5,g5",
            "  SE @ E5 : G5 , F5  ",
            "Se@E5:g5,F5",
        ] {
            assert_eq!(text.parse::<NotatedMove>(), Ok(canonical), "{text}");
        }
        assert_eq!(canonical.to_string(), "SE@E5:F5,G5");
        let shift: NotatedMove = " e5 > h8 : j8 , i8 ".parse().unwrap();
        assert_eq!(shift.to_string(), "E5>H8:I8,J8");
    }

    #[test]
    fn minor_spaces_sort_by_column_then_row() {
        // B10 sorts before C1 (column first), A8 before B2.
        let m = NotatedMove::shift(sp("A2"), sp("A2"), [sp("C1"), sp("B10")]);
        assert_eq!(m.to_string(), "A2>A2:B10,C1");
    }

    #[test]
    fn refuses_garbled_moves_with_a_reason() {
        assert_eq!("".parse::<NotatedMove>(), Err(NotationError::Empty));
        assert_eq!("   ".parse::<NotatedMove>(), Err(NotationError::Empty));
        assert!(matches!(
            "SE@E5".parse::<NotatedMove>(),
            Err(NotationError::Malformed(_))
        ));
        assert!(matches!(
            "E5-H8:I8,J8".parse::<NotatedMove>(),
            Err(NotationError::Malformed(_))
        ));
        assert!(matches!(
            "XX@E5:F5,G5".parse::<NotatedMove>(),
            Err(NotationError::Code(_))
        ));
        assert!(matches!(
            "SE@5E:F5,G5".parse::<NotatedMove>(),
            Err(NotationError::Space(SpaceParseError::Malformed(_)))
        ));
        assert!(matches!(
            "SE@A1:F5,G5".parse::<NotatedMove>(),
            Err(NotationError::Space(SpaceParseError::OffBoard(_)))
        ));
        assert_eq!(
            "SE@E5:F5,F5".parse::<NotatedMove>(),
            Err(NotationError::RepeatedSpace)
        );
        assert_eq!(
            "A".repeat(65).parse::<NotatedMove>(),
            Err(NotationError::TooLong)
        );
        // Every error reads as a sentence naming the culprit.
        let e = "SE@E5:F5,G55"
            .parse::<NotatedMove>()
            .unwrap_err()
            .to_string();
        assert!(e.contains("G55"), "{e}");
    }

    #[test]
    fn placement_code_must_match_geometry() {
        let game = Engine::new(RuleOptions::default());
        // E5 F5 G5 is straight with the PÜNCT at an end: SE, not SM or T.
        assert!(game.parse_move("SE@E5:F5,G5").is_ok());
        assert_eq!(
            game.parse_move("SM@E5:F5,G5"),
            Err(MoveError::Illegal(IllegalMove::ShapeMismatch {
                code: PieceCode::SM,
                punct: sp("E5")
            }))
        );
        assert!(game.parse_move("SM@F5:E5,G5").is_ok());
        assert!(game.parse_move("T@E5:F5,F6").is_ok());
        assert!(game.parse_move("T@E5:F5,G6").is_err());
    }

    fn sample_record() -> GameRecord {
        let mut game = Engine::new(RuleOptions {
            variant: Variant::Basic,
            max_plies: 40,
            ..RuleOptions::default()
        });
        for m in ["SE@E5:F5,G5", "T@J3:K3,K4", "E5>E6:F6,G6", "J3>J4:K4,K5"] {
            game.play_notation(m).unwrap();
        }
        let mut r = game.record();
        r.tags.push(("white".into(), "alice".into()));
        r.tags.push(("event".into(), "club night: round 2".into()));
        r
    }

    #[test]
    fn record_formats_canonically_and_round_trips() {
        let r = sample_record();
        let text = r.to_string();
        assert_eq!(
            text,
            "game: punct\nvariant: basic\nmax_plies: 40\nx-white: alice\nx-event: club night: round 2\n\n\
             SE@E5:F5,G5\nT@J3:K3,K4\nE5>E6:F6,G6\nJ3>J4:K4,K5\n"
        );
        assert_eq!(text.parse::<GameRecord>(), Ok(r.clone()));
        let game = r.replay().unwrap();
        assert_eq!(game.position().ply(), 4);
        assert_eq!(game.options().variant, Variant::Basic);
    }

    #[test]
    fn record_reader_accepts_comments_case_and_no_header() {
        let text = "# a friendly game\nGame: PUNCT\nVariant: Standard\n\n# opening\nse@e5:g5,f5\n\n t@j3:k3,k4 \n";
        let (r, lines) = GameRecord::parse_with_lines(text).unwrap();
        assert_eq!(r.moves.len(), 2);
        assert_eq!(lines, vec![6, 8]);
        let bare: GameRecord = "SE@E5:F5,G5\nT@J3:K3,K4\n".parse().unwrap();
        assert_eq!(bare.moves, r.moves);
        assert_eq!(bare.options, RuleOptions::default());
    }

    #[test]
    fn replay_refuses_at_the_first_bad_move_with_line_and_reason() {
        let text =
            "game: punct\nvariant: standard\n\nSE@E5:F5,G5\nT@J3:K3,K4\nE5>E6:F6,G6\nE6>E7:F7,G7\n";
        // After E5>E6 it is Black's turn, and E6 holds White's piece.
        let err = Engine::from_record_text(text).unwrap_err();
        assert_eq!(
            err,
            RecordError::Illegal {
                line: 7,
                turn: 4,
                text: "E6>E7:F7,G7".into(),
                error: IllegalMove::NotYourPiece { space: sp("E6") },
            }
        );
        assert_eq!(err.line(), Some(7));
        let garbled =
            Engine::from_record_text("game: punct\n\nSE@E5:F5,G5\nnonsense\n").unwrap_err();
        assert!(
            matches!(garbled, RecordError::Notation { line: 4, .. }),
            "{garbled}"
        );
        let bad_header = Engine::from_record_text("game: chess\n\n").unwrap_err();
        assert!(matches!(bad_header, RecordError::Header { line: 1, .. }));
        let twice = Engine::from_record_text("variant: basic\nvariant: basic\n").unwrap_err();
        assert!(matches!(twice, RecordError::Header { line: 2, .. }));
    }

    #[test]
    fn result_line_must_agree_with_the_board() {
        let text = "game: punct\nresult: white CONNECTION\n\nSE@E5:F5,G5\n";
        assert!(matches!(
            Engine::from_record_text(text),
            Err(RecordError::ResultMismatch { .. })
        ));
        // A referee action on an unfinished game is taken as stated.
        let text = "game: punct\nresult: black RESIGNATION\n\nSE@E5:F5,G5\n";
        let game = Engine::from_record_text(text).unwrap();
        let o = game.outcome().unwrap();
        assert_eq!(
            (o.winner, o.reason),
            (Some(Colour::Black), EndReason::Resignation)
        );
        assert_eq!(
            game.record().to_string().lines().nth(2),
            Some("result: black RESIGNATION")
        );
    }
}
