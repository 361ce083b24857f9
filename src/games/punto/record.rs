//! Game records (docs/rules/punto.md §12): reading (lenient exactly where §12 says),
//! the canonical text, and replaying with the seed, which checks the
//! commitment, the round lines, every revealed card against the deal, every
//! move, and a stated result.
//!
//! Two things beyond §12, both the service's own (§9.4): an `ending:` header
//! for a match ended by the referee (`ending: RESIGNATION seat 2`), and a
//! body of bare moves (`0,0` a line, no cards and no `round` lines), the
//! form the [`Game`](crate::games::Game) contract stores moves in; a body
//! with any `round` line is read strictly as §12 says.

use std::fmt::{self, Write as _};

use super::card::Card;
use super::table::Cell;
use super::{Engine, OptionsError, Placed, Refusal, RuleOptions, Side, Team, notation};
use crate::games::{RefereeAction, Seat, Setup, hex, parse_seed};

/// The header keys of §12 and the service's `ending`; any other key is a
/// free tag.
pub const RESERVED_KEYS: [&str; 11] = [
    "game",
    "players",
    "team",
    "rounds_to_win",
    "max_rounds",
    "commitment",
    "entropy",
    "seed",
    "result",
    "ending",
    SUPPLIED_KEY,
];

/// The header key that marks a seed the match's creator supplied instead of
/// the server drawing it (`x-seed: supplied`): whoever supplied it knew every
/// deck from the start. An `x-` key, which §12 readers ignore as unknown.
/// The importer reads it, not as a tag: a finished record keeps the mark it
/// carries, and a match imported unfinished is supplied whatever it says
/// (the importer knows its seed).
pub const SUPPLIED_KEY: &str = "x-seed";

/// A match's result as a record states it (§12): `seat N`, `team N` or
/// `draw`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StatedOutcome {
    /// That side won the match.
    Side(Side),
    /// The match was drawn.
    Draw,
}

impl fmt::Display for StatedOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StatedOutcome::Side(side) => write!(f, "{side}"),
            StatedOutcome::Draw => f.write_str("draw"),
        }
    }
}

/// One line of a record's body (§12), with its 1-based line number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BodyLine {
    /// `round N`.
    Round {
        /// N.
        number: u32,
        /// Where it was.
        line: usize,
    },
    /// `R7 0,0`, or a bare `0,0`.
    Placement {
        /// The card written, if any.
        card: Option<Card>,
        /// The cell.
        cell: Cell,
        /// Where it was.
        line: usize,
    },
}

/// A record as read, before any replay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The options of the header.
    pub options: RuleOptions,
    /// The commitment `C`.
    pub commitment: [u8; 32],
    /// The seed `S`, once revealed.
    pub seed: Option<[u8; 32]>,
    /// The stated result and its line.
    pub result: Option<(StatedOutcome, usize)>,
    /// The referee ending (the service's `ending` header) and its line.
    pub ending: Option<(RefereeAction, usize)>,
    /// Free header tags, in order.
    pub tags: Vec<(String, String)>,
    /// The body, in order.
    pub body: Vec<BodyLine>,
    /// Whether the header says the seed was supplied (`x-seed: supplied`).
    pub supplied: bool,
}

/// Why a record cannot be read or replayed: one variant per check of §12.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// A line breaks the record's syntax.
    #[error("line {line}: {what}")]
    Syntax {
        /// The line.
        line: usize,
        /// What is wrong.
        what: String,
    },
    /// A header key was given twice.
    #[error("line {line}: `{key}` is given twice")]
    DuplicateKey {
        /// The line of the second one.
        line: usize,
        /// The key.
        key: String,
    },
    /// A required header key is missing.
    #[error("the header has no `{0}` line")]
    MissingKey(&'static str),
    /// The record is of another game.
    #[error("line {line}: `{game}` is not punto")]
    NotPunto {
        /// The line.
        line: usize,
        /// The game named.
        game: String,
    },
    /// A header value is not of its key's form.
    #[error("line {line}: `{key}: {value}`: {why}")]
    BadValue {
        /// The line.
        line: usize,
        /// The key.
        key: &'static str,
        /// The value.
        value: String,
        /// Its form.
        why: &'static str,
    },
    /// The options do not go together.
    #[error("the header's options: {0}")]
    Options(OptionsError),
    /// No seed to replay with: neither in the record nor from the server.
    #[error(
        "the record does not reveal its seed (the match is not over), so it cannot be replayed"
    )]
    SeedNotRevealed,
    /// The seed is not the one committed to (or not the server's).
    #[error("{0}")]
    SeedMismatch(&'static str),
    /// A card or move text breaks its grammar (§2, §4.4).
    #[error("line {line}: {refusal}")]
    Malformed {
        /// The line.
        line: usize,
        /// The refusal.
        refusal: Refusal,
    },
    /// A `round` line out of order (§12).
    #[error("line {line}: `round {found}` where round {expected} {state}")]
    RoundOutOfOrder {
        /// The line.
        line: usize,
        /// The number written.
        found: u32,
        /// The round in play.
        expected: u32,
        /// Whether it was already announced, or the match is over.
        state: &'static str,
    },
    /// A placement after the end of its round, without the next `round`
    /// line (§12).
    #[error("line {line}: a placement before `round {round}`: write that line first")]
    MoveAfterRoundEnd {
        /// The line.
        line: usize,
        /// The round in play.
        round: u32,
    },
    /// A placement after the end of the match (§12).
    #[error("line {line}: a placement after the end of the match")]
    MoveAfterMatchEnd {
        /// The line.
        line: usize,
    },
    /// A card that is not the one the deal reveals (§10.7, §12).
    #[error(
        "line {line}: the record reveals {written}, but the deal gives seat {seat} {revealed} in round {round}"
    )]
    CardMismatch {
        /// The line.
        line: usize,
        /// The card written.
        written: Card,
        /// The card the deal reveals.
        revealed: Card,
        /// Whose card it is (1-based).
        seat: u32,
        /// The round.
        round: u32,
    },
    /// A move the rules refuse (§5.3).
    #[error("line {line}: `{cell}`: {refusal}")]
    Illegal {
        /// The line.
        line: usize,
        /// The move.
        cell: Cell,
        /// Why.
        refusal: Refusal,
    },
    /// The stated result is not the replay's.
    #[error("line {line}: the record says `{stated}`, the replay gives `{actual}`")]
    ResultMismatch {
        /// The line of the `result` (or `ending`) header.
        line: usize,
        /// What the record says.
        stated: String,
        /// What the replay gives.
        actual: String,
    },
}

impl RecordError {
    /// The stable reason: the refusal's for an illegal move (§5.3), else the
    /// check that failed.
    pub const fn reason(&self) -> &'static str {
        match self {
            RecordError::Syntax { .. } => "MALFORMED_RECORD",
            RecordError::DuplicateKey { .. } => "DUPLICATE_KEY",
            RecordError::MissingKey(_) => "MISSING_KEY",
            RecordError::NotPunto { .. } => "NOT_PUNTO",
            RecordError::BadValue { .. } => "BAD_HEADER_VALUE",
            RecordError::Options(_) => "INVALID_OPTIONS",
            RecordError::SeedNotRevealed => "SEED_NOT_REVEALED",
            RecordError::SeedMismatch(_) => "SEED_MISMATCH",
            RecordError::Malformed { .. } => "MALFORMED",
            RecordError::RoundOutOfOrder { .. } => "ROUND_OUT_OF_ORDER",
            RecordError::MoveAfterRoundEnd { .. } => "MOVE_AFTER_ROUND_END",
            RecordError::MoveAfterMatchEnd { .. } => "MOVE_AFTER_MATCH_END",
            RecordError::CardMismatch { .. } => "CARD_MISMATCH",
            RecordError::Illegal { refusal, .. } => refusal.reason(),
            RecordError::ResultMismatch { .. } => "RESULT_MISMATCH",
        }
    }

    /// The 1-based line at fault, if one is.
    pub const fn line(&self) -> Option<usize> {
        match self {
            RecordError::Syntax { line, .. }
            | RecordError::DuplicateKey { line, .. }
            | RecordError::NotPunto { line, .. }
            | RecordError::BadValue { line, .. }
            | RecordError::Malformed { line, .. }
            | RecordError::RoundOutOfOrder { line, .. }
            | RecordError::MoveAfterRoundEnd { line, .. }
            | RecordError::MoveAfterMatchEnd { line }
            | RecordError::CardMismatch { line, .. }
            | RecordError::Illegal { line, .. }
            | RecordError::ResultMismatch { line, .. } => Some(*line),
            RecordError::MissingKey(_)
            | RecordError::Options(_)
            | RecordError::SeedNotRevealed
            | RecordError::SeedMismatch(_) => None,
        }
    }
}

/// Whether `key` may be a header key: a letter, then letters, digits, `_`,
/// `-` or `.`.
pub fn is_key(key: &str) -> bool {
    let mut chars = key.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// A line without its LF, its CR before the LF, and surrounding spaces and
/// tabs (§12).
fn clean(line: &str) -> &str {
    let line = line.strip_suffix('\r').unwrap_or(line);
    line.trim_matches([' ', '\t'])
}

/// The header values read so far.
#[derive(Default)]
struct Header {
    game: bool,
    players: Option<u32>,
    team: Option<bool>,
    rounds_to_win: Option<u32>,
    max_rounds: Option<u32>,
    commitment: Option<[u8; 32]>,
    entropy: Vec<u8>,
    seed: Option<[u8; 32]>,
    result: Option<(StatedOutcome, usize)>,
    ending: Option<(RefereeAction, usize)>,
    tags: Vec<(String, String)>,
    seen: Vec<String>,
    supplied: bool,
}

impl Record {
    /// Reads a record (§12) without replaying it.
    pub fn parse(text: &str) -> Result<Record, RecordError> {
        let mut header = Header::default();
        let mut lines = text.split('\n').enumerate().map(|(i, l)| (i + 1, clean(l)));
        for (line, content) in lines.by_ref() {
            if content.is_empty() {
                break;
            }
            if content.starts_with('#') {
                continue;
            }
            header.read(line, content)?;
        }
        let mut body = Vec::new();
        for (line, content) in lines {
            if content.is_empty() || content.starts_with('#') {
                continue;
            }
            body.push(body_line(line, content)?);
        }
        header.finish(body)
    }

    /// The canonical header lines of `options` and `commitment` (§12),
    /// without tags, seed or result: what a match's rules are.
    pub fn rules_header(options: &RuleOptions, commitment: &[u8; 32]) -> String {
        let mut out = format!(
            "game: punto\nplayers: {}\nteam: {}\nrounds_to_win: {}\nmax_rounds: {}\ncommitment: {}\n",
            options.players(),
            if options.team() { "yes" } else { "no" },
            options.rounds_to_win(),
            options.max_rounds(),
            hex(commitment),
        );
        if !options.entropy().is_empty() {
            let _ = writeln!(out, "entropy: {}", hex(options.entropy()));
        }
        out
    }

    /// The canonical record of `game` (§12): its rules, `x-seed: supplied`
    /// when the creator `supplied` the seed, the seed once revealed, the
    /// result of a board end or the referee `ending` (the service's header
    /// §9.4 allows), and every round begun with its placements. Nothing
    /// else: §12's canonical contents have no place for labels
    /// (docs/PUNTO.md, "Header keys").
    pub fn canonical(
        game: &Engine,
        commitment: &[u8; 32],
        seed: Option<&[u8; 32]>,
        supplied: bool,
        ending: Option<RefereeAction>,
    ) -> String {
        let mut out = Record::rules_header(game.options(), commitment);
        if supplied {
            let _ = writeln!(out, "{SUPPLIED_KEY}: supplied");
        }
        if let Some(seed) = seed {
            let _ = writeln!(out, "seed: {}", hex(seed));
        }
        if let Some(outcome) = game.outcome() {
            let stated = outcome
                .winner
                .map_or(StatedOutcome::Draw, StatedOutcome::Side);
            let _ = writeln!(out, "result: {stated}");
        } else if let Some(ending) = ending {
            let _ = writeln!(out, "ending: {}", ending_text(ending));
        }
        out.push('\n');
        let mut round = 0;
        for played in game.history() {
            if played.round != round {
                round = played.round;
                let _ = writeln!(out, "round {round}");
            }
            let _ = writeln!(out, "{} {}", played.card, played.cell);
        }
        // §12: a match going on ends with its round's line, moves or not.
        if !game.is_over() && game.round().number() != round {
            let _ = writeln!(out, "round {}", game.round().number());
        }
        out
    }

    /// The seed to replay with: the record's or the server's, checked
    /// against each other and against the commitment (§10.7, §12).
    pub fn setup(&self, given: Option<Setup>) -> Result<Setup, RecordError> {
        let setup = match (self.seed, given) {
            (Some(seed), Some(given)) if seed != given.seed => {
                return Err(RecordError::SeedMismatch(
                    "the record's seed is not the match's",
                ));
            }
            // A seed read from the record came from whoever wrote it, not
            // from this server's draw: supplied, unless the server confirms
            // it as its own.
            (Some(seed), given) => Setup {
                seed,
                supplied: given.is_none_or(|g| g.supplied),
            },
            (None, Some(given)) => given,
            (None, None) => return Err(RecordError::SeedNotRevealed),
        };
        if setup.commitment() != self.commitment {
            return Err(RecordError::SeedMismatch(
                "SHA-256 of the seed is not the record's commitment",
            ));
        }
        Ok(setup)
    }

    /// Replays the body from `seed` (§12): round lines in order, each card
    /// the one the deal reveals, each move legal, nothing after the end,
    /// and a stated result the replay's. The match and each placement.
    pub fn replay(&self, seed: &[u8; 32]) -> Result<(Engine, Vec<Placed>), RecordError> {
        let mut game = Engine::new(self.options, seed);
        let mut placed = Vec::with_capacity(self.body.len());
        let strict = self
            .body
            .iter()
            .any(|l| matches!(l, BodyLine::Round { .. }));
        let mut announced = 0;
        for &line in &self.body {
            match line {
                BodyLine::Round { number, line } => {
                    let expected = game.round().number();
                    let state = if game.is_over() {
                        "was the last: the match is over"
                    } else if number == announced {
                        "was already begun"
                    } else {
                        "is in play"
                    };
                    if game.is_over() || number != expected || number == announced {
                        return Err(RecordError::RoundOutOfOrder {
                            line,
                            found: number,
                            expected,
                            state,
                        });
                    }
                    announced = number;
                }
                BodyLine::Placement { card, cell, line } => {
                    placed.push(replay_placement(
                        &mut game, strict, announced, card, cell, line,
                    )?);
                }
            }
        }
        self.check_result(&game)?;
        Ok((game, placed))
    }

    /// A `result` header must be the replay's board result (§12); an
    /// `ending` needs a match the board has not ended.
    fn check_result(&self, game: &Engine) -> Result<(), RecordError> {
        let actual = game
            .outcome()
            .map(|o| o.winner.map_or(StatedOutcome::Draw, StatedOutcome::Side));
        if let Some((stated, line)) = self.result
            && actual != Some(stated)
        {
            return Err(RecordError::ResultMismatch {
                line,
                stated: stated.to_string(),
                actual: actual.map_or("no result: the match goes on".into(), |a| a.to_string()),
            });
        }
        if let (Some((ending, line)), Some(actual)) = (self.ending, actual) {
            return Err(RecordError::ResultMismatch {
                line,
                stated: ending_text(ending),
                actual: format!("{actual}: the match ended on the board"),
            });
        }
        Ok(())
    }
}

/// One placement of a replay, checked as §12 says.
fn replay_placement(
    game: &mut Engine,
    strict: bool,
    announced: u32,
    card: Option<Card>,
    cell: Cell,
    line: usize,
) -> Result<Placed, RecordError> {
    if game.is_over() {
        return Err(RecordError::MoveAfterMatchEnd { line });
    }
    let round = game.round().number();
    if strict && announced != round {
        return Err(RecordError::MoveAfterRoundEnd { line, round });
    }
    if let (Some(written), Some(revealed), Some(seat)) = (card, game.revealed(), game.mover())
        && written != revealed
    {
        return Err(RecordError::CardMismatch {
            line,
            written,
            revealed,
            seat: seat.number(),
            round,
        });
    }
    game.play(cell).map_err(|refusal| RecordError::Illegal {
        line,
        cell,
        refusal,
    })
}

/// The `ending` header's value: the reason, and the seat that lost for an
/// ending that has one.
pub fn ending_text(ending: RefereeAction) -> String {
    match ending {
        RefereeAction::Resignation { loser }
        | RefereeAction::Timeout { loser }
        | RefereeAction::Abandoned { loser } => {
            format!("{} {loser}", ending.reason())
        }
        RefereeAction::DrawAgreement | RefereeAction::Aborted => ending.reason().to_string(),
    }
}

/// The ending an `ending` header names, if it is one.
fn parse_ending(value: &str) -> Option<RefereeAction> {
    let words: Vec<&str> = value.split_ascii_whitespace().collect();
    let loser = |number: &str| parse_number(number).and_then(Seat::from_number);
    match words[..] {
        ["DRAW_AGREEMENT"] => Some(RefereeAction::DrawAgreement),
        ["ABORTED"] => Some(RefereeAction::Aborted),
        [reason, "seat", number] => {
            let loser = loser(number)?;
            match reason {
                "RESIGNATION" => Some(RefereeAction::Resignation { loser }),
                "TIMEOUT" => Some(RefereeAction::Timeout { loser }),
                "ABANDONED" => Some(RefereeAction::Abandoned { loser }),
                _ => None,
            }
        }
        _ => None,
    }
}

/// A decimal number (ASCII digits only).
fn parse_number(text: &str) -> Option<u32> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// 32 bytes of lower-case hex (§12).
fn lower_hex_32(value: &str) -> Option<[u8; 32]> {
    if value.bytes().any(|b| b.is_ascii_uppercase()) {
        return None;
    }
    parse_seed(value)
}

/// Lower-case hex of any even length (§12: entropy).
fn lower_hex(value: &str) -> Option<Vec<u8>> {
    let ok = value.len().is_multiple_of(2)
        && value
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if !ok {
        return None;
    }
    (0..value.len() / 2)
        .map(|i| {
            value
                .get(2 * i..2 * i + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        })
        .collect()
}

/// A stated result: `seat N`, `team N` or `draw` (§12).
fn parse_result(value: &str) -> Option<StatedOutcome> {
    let words: Vec<&str> = value.split_ascii_whitespace().collect();
    match words[..] {
        ["draw"] => Some(StatedOutcome::Draw),
        ["seat", n] => {
            Seat::from_number(parse_number(n)?).map(|s| StatedOutcome::Side(Side::Seat(s)))
        }
        ["team", "1"] => Some(StatedOutcome::Side(Side::Team(Team::One))),
        ["team", "2"] => Some(StatedOutcome::Side(Side::Team(Team::Two))),
        _ => None,
    }
}

impl Header {
    /// Reads one header line `key: value`.
    fn read(&mut self, line: usize, content: &str) -> Result<(), RecordError> {
        let Some((key, value)) = content.split_once(':') else {
            return Err(RecordError::Syntax {
                line,
                what: format!("`{}` is not a `key: value` header line", shorten(content)),
            });
        };
        let value = value.trim_matches([' ', '\t']);
        if !is_key(key) {
            return Err(RecordError::Syntax {
                line,
                what: format!("`{}` is not a header key", shorten(key)),
            });
        }
        if self.seen.iter().any(|k| k == key) {
            return Err(RecordError::DuplicateKey {
                line,
                key: key.to_string(),
            });
        }
        self.seen.push(key.to_string());
        let Some(&known) = RESERVED_KEYS.iter().find(|&&k| k == key) else {
            self.tags.push((key.to_string(), value.to_string()));
            return Ok(());
        };
        let bad = |why| RecordError::BadValue {
            line,
            key: known,
            value: shorten(value),
            why,
        };
        match known {
            "game" if value == "punto" => self.game = true,
            "game" => {
                return Err(RecordError::NotPunto {
                    line,
                    game: shorten(value),
                });
            }
            "players" => self.players = Some(parse_number(value).ok_or_else(|| bad("a number"))?),
            "team" => {
                self.team = Some(match value {
                    "yes" => true,
                    "no" => false,
                    _ => return Err(bad("`yes` or `no`")),
                })
            }
            "rounds_to_win" => {
                self.rounds_to_win = Some(parse_number(value).ok_or_else(|| bad("a number"))?)
            }
            "max_rounds" => {
                self.max_rounds = Some(parse_number(value).ok_or_else(|| bad("a number"))?)
            }
            "commitment" => {
                self.commitment =
                    Some(lower_hex_32(value).ok_or_else(|| bad("64 lower-case hex digits"))?)
            }
            "seed" => {
                self.seed =
                    Some(lower_hex_32(value).ok_or_else(|| bad("64 lower-case hex digits"))?)
            }
            "entropy" => {
                self.entropy = lower_hex(value).ok_or_else(|| bad("lower-case hex bytes"))?
            }
            // Any other value is no claim of a supplied seed.
            SUPPLIED_KEY => self.supplied = value == "supplied",
            "result" => {
                let stated =
                    parse_result(value).ok_or_else(|| bad("`seat N`, `team N` or `draw`"))?;
                self.result = Some((stated, line));
            }
            _ => {
                let ending = parse_ending(value)
                    .ok_or_else(|| bad("a referee ending, as `RESIGNATION seat 2` or `ABORTED`"))?;
                self.ending = Some((ending, line));
            }
        }
        Ok(())
    }

    /// The record, once the header's required keys are checked (§12).
    fn finish(self, body: Vec<BodyLine>) -> Result<Record, RecordError> {
        if !self.game {
            return Err(RecordError::MissingKey("game"));
        }
        let players = self.players.ok_or(RecordError::MissingKey("players"))?;
        let commitment = self
            .commitment
            .ok_or(RecordError::MissingKey("commitment"))?;
        let options = RuleOptions::new(
            players,
            self.team.unwrap_or(false),
            self.rounds_to_win
                .unwrap_or(RuleOptions::DEFAULT_ROUNDS_TO_WIN),
            self.max_rounds.unwrap_or(0),
            &self.entropy,
        )
        .map_err(RecordError::Options)?;
        Ok(Record {
            options,
            commitment,
            seed: self.seed,
            result: self.result,
            ending: self.ending,
            tags: self.tags,
            body,
            supplied: self.supplied,
        })
    }
}

/// One body line (§12): `round N`, `CARD X,Y` (spaces or tabs between), or
/// a bare `X,Y`.
fn body_line(line: usize, content: &str) -> Result<BodyLine, RecordError> {
    let mut words = content.split([' ', '\t']).filter(|w| !w.is_empty());
    let (first, second, rest) = (words.next(), words.next(), words.next());
    let malformed = |refusal| RecordError::Malformed { line, refusal };
    match (first, second, rest) {
        (Some("round"), Some(number), None) => match parse_number(number) {
            Some(number) => Ok(BodyLine::Round { number, line }),
            None => Err(RecordError::Syntax {
                line,
                what: format!("`round {}`: the round number is decimal", shorten(number)),
            }),
        },
        (Some(card), Some(cell), None) => {
            let card = card
                .parse::<Card>()
                .map_err(|e| malformed(Refusal::Malformed(e.0)))?;
            let cell = notation::parse_cell(cell).map_err(malformed)?;
            Ok(BodyLine::Placement {
                card: Some(card),
                cell,
                line,
            })
        }
        (Some(cell), None, None) => Ok(BodyLine::Placement {
            card: None,
            cell: notation::parse_cell(cell).map_err(malformed)?,
            line,
        }),
        _ => Err(RecordError::Syntax {
            line,
            what: format!(
                "`{}` is neither `round N` nor a placement `R7 0,0`",
                shorten(content)
            ),
        }),
    }
}

/// At most 40 characters of `text`, for messages.
fn shorten(text: &str) -> String {
    text.chars().take(40).collect()
}
