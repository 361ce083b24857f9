//! Game records (docs/rules/dots.md §9): `key: value` header lines, one blank line,
//! one move a line. [`Record`] reads them leniently (keys in any case,
//! spaces, `#` comments, blank move lines, CR LF) and writes the canonical
//! form: the keys of §9's table and nothing else, with one exception
//! (docs/DOTS.md, "Seeds and records"): the record of an unfinished
//! `quadruple-cross` game withholds its secret seed (§4.4) and writes its
//! commitment as `x-commitment:`. Reading stays lenient where older records
//! need it: a `commitment:` line, `end: abandon`, and `x-` tags, read back
//! without the `x-` (nothing writes them any more).

use std::fmt;

use super::{
    Colour, EndReason, Engine, IllegalMove, Move, NotationError, OptionsError, Outcome,
    RuleOptions, Seed, Start,
};

/// A record's `result:` (§9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResultTag {
    /// `1-0`.
    RedWins,
    /// `0-1`.
    BlueWins,
    /// `1/2-1/2`.
    Draw,
    /// `*`: aborted.
    Aborted,
}

impl ResultTag {
    /// The text in the record.
    pub const fn text(self) -> &'static str {
        match self {
            ResultTag::RedWins => "1-0",
            ResultTag::BlueWins => "0-1",
            ResultTag::Draw => "1/2-1/2",
            ResultTag::Aborted => "*",
        }
    }

    /// The result of that text.
    pub fn from_text(text: &str) -> Option<ResultTag> {
        [
            ResultTag::RedWins,
            ResultTag::BlueWins,
            ResultTag::Draw,
            ResultTag::Aborted,
        ]
        .into_iter()
        .find(|r| r.text() == text.trim())
    }

    /// The result of an outcome.
    pub const fn of(outcome: &Outcome) -> ResultTag {
        match (outcome.reason, outcome.winner) {
            (EndReason::Abort, _) => ResultTag::Aborted,
            (_, Some(Colour::Red)) => ResultTag::RedWins,
            (_, Some(Colour::Blue)) => ResultTag::BlueWins,
            (_, None) => ResultTag::Draw,
        }
    }

    /// The winner it names.
    pub const fn winner(self) -> Option<Colour> {
        match self {
            ResultTag::RedWins => Some(Colour::Red),
            ResultTag::BlueWins => Some(Colour::Blue),
            ResultTag::Draw | ResultTag::Aborted => None,
        }
    }
}

/// The end of a finished game as its record states it: `result`, `score`,
/// `end` (§9: given together).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StatedOutcome {
    /// `result:`.
    pub result: ResultTag,
    /// `score:`, Red first.
    pub score: [u32; 2],
    /// `end:`.
    pub end: EndReason,
}

impl StatedOutcome {
    /// What a record says of this outcome.
    pub const fn of(outcome: &Outcome) -> StatedOutcome {
        StatedOutcome {
            result: ResultTag::of(outcome),
            score: outcome.scores,
            end: outcome.reason,
        }
    }
}

/// A game record (§9).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Record {
    /// `width`, `height`, `start`, `max-moves`.
    pub options: RuleOptions,
    /// `seed:`, when the record reveals it.
    pub seed: Option<Seed>,
    /// `commitment:`, the SHA-256 of the seed.
    pub commitment: Option<[u8; 32]>,
    /// `result`, `score` and `end`, once the game has ended.
    pub ending: Option<StatedOutcome>,
    /// The `x-` header lines, without the `x-`, in order.
    pub tags: Vec<(String, String)>,
    /// The moves, in order.
    pub moves: Vec<Move>,
    /// The 1-based line of each move in the text read (empty if written).
    pub move_lines: Vec<usize>,
}

/// Why a record is refused (§9).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// A header line is not `key: value`.
    #[error(
        "line {line}: a header line is `key: value` (a blank line ends the header; docs/rules/dots.md §9)"
    )]
    HeaderSyntax {
        /// The 1-based line.
        line: usize,
    },
    /// A key §9 does not know, not starting with `x-`.
    #[error(
        "line {line}: unknown header key `{key}` (free keys start with `x-`; docs/rules/dots.md §9)"
    )]
    UnknownKey {
        /// The 1-based line.
        line: usize,
        /// The key.
        key: String,
    },
    /// A key given twice.
    #[error("line {line}: the key `{key}` is given twice (docs/rules/dots.md §9)")]
    DuplicateKey {
        /// The 1-based line.
        line: usize,
        /// The key.
        key: String,
    },
    /// A value that is not what its key takes.
    #[error("line {line}: `{value}` is not a value of `{key}` (docs/rules/dots.md §9)")]
    BadValue {
        /// The 1-based line.
        line: usize,
        /// The key.
        key: String,
        /// The value, cut to 80 characters.
        value: String,
    },
    /// `game:` names another game.
    #[error("line {line}: `game: {game}` is not a Dots record (docs/rules/dots.md §9)")]
    NotDots {
        /// The 1-based line.
        line: usize,
        /// The game named.
        game: String,
    },
    /// No `game:` line.
    #[error("the record has no `game: dots` line (docs/rules/dots.md §9)")]
    MissingGame,
    /// Options (or a seed) no game may have.
    #[error("{0}")]
    Options(OptionsError),
    /// Only some of `result`, `score`, `end`.
    #[error("`result`, `score` and `end` are given together or not at all (docs/rules/dots.md §9)")]
    IncompleteEnding,
    /// A move line that is not notation.
    #[error("line {line}: {error}")]
    MoveSyntax {
        /// The 1-based line.
        line: usize,
        /// Why.
        error: NotationError,
    },
    /// A move refused on replay.
    #[error("line {line} (move {ply}, `{mv}`): {error}")]
    Illegal {
        /// The 1-based line (0 if not read from text).
        line: usize,
        /// The 1-based move number.
        ply: usize,
        /// The move.
        mv: Move,
        /// Why it is illegal.
        error: IllegalMove,
    },
    /// A `quadruple-cross` record whose seed nobody gave.
    #[error(
        "the record of a `quadruple-cross` game does not reveal its seed (docs/rules/dots.md §4.4)"
    )]
    SeedNotRevealed,
    /// A seed that is not the one committed to (or two different seeds).
    #[error("the seed does not match the record's commitment (docs/rules/dots.md §4.4)")]
    SeedMismatch,
    /// `result`/`end` disagree with the moves.
    #[error("the record says `{stated}` but the moves give `{actual}` (docs/rules/dots.md §9)")]
    ResultMismatch {
        /// What the record says.
        stated: String,
        /// What replaying gave.
        actual: String,
    },
    /// `score` disagrees with the position.
    #[error("the record gives the score {}-{} but the position has {}-{} (docs/rules/dots.md §9)", stated[0], stated[1], actual[0], actual[1])]
    ScoreMismatch {
        /// What the record says.
        stated: [u32; 2],
        /// The position's score.
        actual: [u32; 2],
    },
}

impl RecordError {
    /// The stable name of the refusal (an illegal move's own reason).
    pub fn reason(&self) -> &'static str {
        match self {
            RecordError::HeaderSyntax { .. } => "HEADER_SYNTAX",
            RecordError::UnknownKey { .. } => "UNKNOWN_KEY",
            RecordError::DuplicateKey { .. } => "DUPLICATE_KEY",
            RecordError::BadValue { .. } => "BAD_VALUE",
            RecordError::NotDots { .. } => "NOT_DOTS",
            RecordError::MissingGame => "MISSING_GAME",
            RecordError::Options(e) => e.reason(),
            RecordError::IncompleteEnding => "ENDING_INCOMPLETE",
            RecordError::MoveSyntax { error, .. } => error.reason(),
            RecordError::Illegal { error, .. } => error.reason(),
            RecordError::SeedNotRevealed => "SEED_NOT_REVEALED",
            RecordError::SeedMismatch => "SEED_MISMATCH",
            RecordError::ResultMismatch { .. } => "RESULT_MISMATCH",
            RecordError::ScoreMismatch { .. } => "SCORE_MISMATCH",
        }
    }

    /// The 1-based line at fault, if one is.
    pub fn line(&self) -> Option<usize> {
        match self {
            RecordError::HeaderSyntax { line }
            | RecordError::UnknownKey { line, .. }
            | RecordError::DuplicateKey { line, .. }
            | RecordError::BadValue { line, .. }
            | RecordError::NotDots { line, .. }
            | RecordError::MoveSyntax { line, .. } => Some(*line),
            RecordError::Illegal { line, .. } => (*line > 0).then_some(*line),
            _ => None,
        }
    }
}

/// The header lines read so far.
#[derive(Default)]
struct Header {
    game: bool,
    width: Option<u8>,
    height: Option<u8>,
    start: Option<Start>,
    max_moves: Option<u32>,
    result: Option<ResultTag>,
    score: Option<[u32; 2]>,
    end: Option<EndReason>,
}

fn decimal<T: std::str::FromStr>(value: &str) -> Option<T> {
    (!value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()))
        .then(|| value.parse().ok())
        .flatten()
}

fn commitment_of(value: &str) -> Option<[u8; 32]> {
    crate::games::parse_seed(value)
}

impl Record {
    /// The record of `game`; with `reveal_seed`, its seed too (the
    /// commitment always goes with a seeded game).
    pub fn of(game: &Engine, reveal_seed: bool) -> Record {
        Record {
            options: game.options(),
            seed: game.seed().copied().filter(|_| reveal_seed),
            commitment: game.seed().map(Seed::commitment),
            ending: game.outcome().as_ref().map(StatedOutcome::of),
            tags: Vec::new(),
            moves: game.moves().to_vec(),
            move_lines: Vec::new(),
        }
    }

    /// Reads a record (§9).
    pub fn parse(text: &str) -> Result<Record, RecordError> {
        let mut record = Record::default();
        let mut header = Header::default();
        let mut seen: Vec<String> = Vec::new();
        let mut in_header = true;
        for (i, raw) in text.lines().enumerate() {
            let line_no = i + 1;
            let line = raw.trim();
            if line.starts_with('#') {
                continue;
            }
            if in_header {
                if line.is_empty() {
                    in_header = seen.is_empty();
                    continue;
                }
                let (key, value) = line
                    .split_once(':')
                    .ok_or(RecordError::HeaderSyntax { line: line_no })?;
                let (key, value) = (key.trim(), value.trim());
                if key.is_empty() {
                    return Err(RecordError::HeaderSyntax { line: line_no });
                }
                let lower = key.to_ascii_lowercase();
                if seen.contains(&lower) {
                    return Err(RecordError::DuplicateKey {
                        line: line_no,
                        key: key.to_string(),
                    });
                }
                seen.push(lower.clone());
                record.read_key(&mut header, line_no, key, &lower, value)?;
                continue;
            }
            if line.is_empty() {
                continue;
            }
            let mv = line
                .parse::<Move>()
                .map_err(|error| RecordError::MoveSyntax {
                    line: line_no,
                    error,
                })?;
            record.moves.push(mv);
            record.move_lines.push(line_no);
        }
        record.finish(header)?;
        Ok(record)
    }

    /// One header line.
    fn read_key(
        &mut self,
        header: &mut Header,
        line: usize,
        key: &str,
        lower: &str,
        value: &str,
    ) -> Result<(), RecordError> {
        let bad = || RecordError::BadValue {
            line,
            key: key.to_string(),
            value: value.chars().take(80).collect(),
        };
        match lower {
            "game" if value.eq_ignore_ascii_case("dots") => header.game = true,
            "game" => {
                return Err(RecordError::NotDots {
                    line,
                    game: value.chars().take(80).collect(),
                });
            }
            "width" => header.width = Some(decimal(value).ok_or_else(bad)?),
            "height" => header.height = Some(decimal(value).ok_or_else(bad)?),
            "start" => header.start = Some(Start::from_name(value).ok_or_else(bad)?),
            "max-moves" => header.max_moves = Some(decimal(value).ok_or_else(bad)?),
            "seed" => self.seed = Some(Seed::from_hex(value).ok_or_else(bad)?),
            // `commitment` is the key older records wrote; §9 knows neither.
            "commitment" | "x-commitment" => {
                self.commitment = Some(commitment_of(value).ok_or_else(bad)?)
            }
            "result" => header.result = Some(ResultTag::from_text(value).ok_or_else(bad)?),
            "score" => {
                let (r, b) = value.split_once('-').ok_or_else(bad)?;
                let score = [decimal(r.trim()), decimal(b.trim())];
                match score {
                    [Some(r), Some(b)] => header.score = Some([r, b]),
                    _ => return Err(bad()),
                }
            }
            "end" => header.end = Some(EndReason::from_record_name(value).ok_or_else(bad)?),
            _ if lower.starts_with("x-") => {
                let tag = key.get(2..).unwrap_or_default();
                self.tags.push((tag.to_string(), value.to_string()));
            }
            _ => {
                return Err(RecordError::UnknownKey {
                    line,
                    key: key.chars().take(80).collect(),
                });
            }
        }
        Ok(())
    }

    /// Checks the header as a whole: the game, the options, the seed and
    /// the ending.
    fn finish(&mut self, header: Header) -> Result<(), RecordError> {
        if !header.game {
            return Err(RecordError::MissingGame);
        }
        let defaults = RuleOptions::default();
        self.options = RuleOptions::new(
            header.width.unwrap_or(defaults.width()),
            header.height.unwrap_or(defaults.height()),
            header.start.unwrap_or(defaults.start()),
            header.max_moves.unwrap_or(0),
        )
        .map_err(RecordError::Options)?;
        let start = self.options.start();
        if !start.needs_seed() && (self.seed.is_some() || self.commitment.is_some()) {
            return Err(RecordError::Options(OptionsError::SeedNotAllowed { start }));
        }
        self.ending = match (header.result, header.score, header.end) {
            (None, None, None) => None,
            (Some(result), Some(score), Some(end)) => Some(StatedOutcome { result, score, end }),
            _ => return Err(RecordError::IncompleteEnding),
        };
        Ok(())
    }

    /// The seed to replay with: the record's, or `given` (the server's),
    /// which must agree with each other and with the commitment (§4.4).
    pub fn resolve_seed(&self, given: Option<Seed>) -> Result<Option<Seed>, RecordError> {
        if !self.options.start().needs_seed() {
            return Ok(None);
        }
        let seed = match (self.seed, given) {
            (Some(a), Some(b)) if a != b => return Err(RecordError::SeedMismatch),
            (a, b) => a.or(b).ok_or(RecordError::SeedNotRevealed)?,
        };
        if self.commitment.is_some_and(|c| c != seed.commitment()) {
            return Err(RecordError::SeedMismatch);
        }
        Ok(Some(seed))
    }

    /// The error for move `i` refused on replay.
    pub fn illegal(&self, i: usize, error: IllegalMove) -> RecordError {
        RecordError::Illegal {
            line: self.move_lines.get(i).copied().unwrap_or(0),
            ply: i + 1,
            mv: self.moves.get(i).copied().unwrap_or(Move::Ground),
            error,
        }
    }

    /// Checks the stated ending against `game`, replayed from the moves,
    /// and concludes it for a referee action (§9, §7.5).
    pub fn apply_ending(&self, game: &mut Engine) -> Result<(), RecordError> {
        let Some(stated) = self.ending else {
            return Ok(());
        };
        let text = |e: &StatedOutcome| format!("{} ({})", e.result.text(), e.end.record_name());
        let mismatch = |actual: String| RecordError::ResultMismatch {
            stated: text(&stated),
            actual,
        };
        if let Some(outcome) = game.outcome() {
            let actual = StatedOutcome::of(&outcome);
            if (actual.result, actual.end) != (stated.result, stated.end) {
                return Err(mismatch(text(&actual)));
            }
            if actual.score != stated.score {
                return Err(RecordError::ScoreMismatch {
                    stated: stated.score,
                    actual: actual.score,
                });
            }
            return Ok(());
        }
        // A referee action ends a game the moves leave in progress (§9).
        let fits = match stated.end {
            EndReason::Resign | EndReason::Timeout | EndReason::Abandon => {
                stated.result.winner().is_some()
            }
            EndReason::DrawAgreement => stated.result == ResultTag::Draw,
            EndReason::Abort => stated.result == ResultTag::Aborted,
            EndReason::Full | EndReason::Ground | EndReason::MoveLimit => false,
        };
        if !fits {
            return Err(mismatch("a game in progress".to_string()));
        }
        if stated.score != game.scores() {
            return Err(RecordError::ScoreMismatch {
                stated: stated.score,
                actual: game.scores(),
            });
        }
        game.conclude(stated.end, stated.result.winner())
            .map_err(|error| self.illegal(self.moves.len(), error))?;
        Ok(())
    }

    /// Replays the record (with the server's seed `given`, if any).
    pub fn replay(&self, given: Option<Seed>) -> Result<Engine, RecordError> {
        let seed = self.resolve_seed(given)?;
        let mut game = Engine::new(self.options, seed).map_err(RecordError::Options)?;
        for (i, &mv) in self.moves.iter().enumerate() {
            game.play(mv).map_err(|e| self.illegal(i, e))?;
        }
        self.apply_ending(&mut game)?;
        Ok(game)
    }
}

impl std::str::FromStr for Record {
    type Err = RecordError;
    fn from_str(s: &str) -> Result<Record, RecordError> {
        Record::parse(s)
    }
}

/// The tag (`x-seed: supplied`, read without the `x-`) that marks a seed a
/// client supplied: the one tag a written record keeps.
pub const SUPPLIED_MARK: (&str, &str) = ("seed", "supplied");

impl fmt::Display for Record {
    /// The canonical form (§9): the keys of §9's table that apply, in its
    /// order, nothing else. Tags are never written (§9's canonical form has
    /// no `x-` keys). Two exceptions: a `quadruple-cross` record that
    /// withholds its seed (a game not over, §4.4) writes the commitment as
    /// `x-commitment:` after the keys of §9, since §9's canonical form cannot
    /// be written without the seed; and a seed a client supplied is marked
    /// `x-seed: supplied`, last (docs/DOTS.md, "Canonical records").
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let o = &self.options;
        writeln!(f, "game: dots")?;
        writeln!(f, "width: {}", o.width())?;
        writeln!(f, "height: {}", o.height())?;
        writeln!(f, "start: {}", o.start())?;
        if let Some(seed) = &self.seed {
            writeln!(f, "seed: {}", seed.hex())?;
        }
        if o.max_moves() != 0 {
            writeln!(f, "max-moves: {}", o.max_moves())?;
        }
        if let Some(e) = &self.ending {
            writeln!(f, "result: {}", e.result.text())?;
            writeln!(f, "score: {}-{}", e.score[0], e.score[1])?;
            writeln!(f, "end: {}", e.end.record_name())?;
        }
        if let (None, Some(c)) = (&self.seed, self.commitment) {
            writeln!(f, "x-commitment: {}", crate::games::hex(&c))?;
        }
        if self
            .tags
            .iter()
            .any(|(k, v)| (k.as_str(), v.as_str()) == SUPPLIED_MARK)
        {
            writeln!(f, "x-seed: supplied")?;
        }
        writeln!(f)?;
        for mv in &self.moves {
            writeln!(f, "{mv}")?;
        }
        Ok(())
    }
}
