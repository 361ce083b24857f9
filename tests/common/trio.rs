//! Trio: a tiny three-seat counting game for tests only (never shipped),
//! behind the same [`Game`] trait as PÜNCT. It exercises what PÜNCT does
//! not: three seats, a turn order the moves decide, rounds, team wins,
//! per-seat scores, a seeded setup with its commitment, and private values
//! each seat alone sees. Test files include it with
//! `#[path = "common/trio.rs"] mod trio;`. Its rules, as a page in `docs/rules/` would
//! give them:
//!
//! 1. Seats: red, green, blue (seats 1, 2, 3).
//! 2. Setup, from the 32-byte seed `s`: the target is `10 + s[0] % 6`
//!    (10..=15), the first mover is seat `s[1] % 3` (0 = red), and seat
//!    `i`'s secret is `1 + s[2 + i] % 3` (1..=3). The seed's SHA-256 is
//!    published from the start; the seed itself once the game is over.
//! 3. A round starts with the count at 0. A move `N>seat` adds `N` (1..=3)
//!    to the count and names who moves next: either other seat, never the
//!    mover, so a seat can be skipped.
//! 4. Adding exactly your own secret earns a bonus point. Only you see your
//!    secret, your bonus and whether your moves matched, until the outcome.
//! 5. Reaching the target exactly scores 2 points for the mover (a hit);
//!    passing it scores 1 point for each other seat (a bust). Either way the
//!    round ends and the next starts at 0, the seat named moving. The game
//!    ends after its rounds (3 unless the rules say otherwise), so within
//!    `rounds × 15` plies.
//! 6. A seat's score is its points plus its bonus. The top score wins alone
//!    (`HIGH_SCORE`); two seats sharing it win together (`SHARED_SCORE`);
//!    three equal scores are a draw (`DEADLOCK`).
//! 7. Referee endings: a resigning seat's two opponents win together; a
//!    seat that runs out of time or leaves loses to the better of the two
//!    others (to both if they are level); draws and aborts have no winner.
//! 8. Record: `game: trio`, `rounds: N`, `commitment: HEX`, free tags, and
//!    once over `seed: HEX` and `result: WINNERS REASON [LOSER]` (winners
//!    joined by `+`, or `nobody`; the loser of a referee ending that has
//!    one); a blank line; one move a line.

use std::fmt;
use std::str::FromStr;

use punct_referee::games::{
    Game, GameRules, GameState, MoveDetail, MoveError, MoveInput, MoveReport, Opaque, Outcome,
    RecordError, RefereeAction, Replayed, Rules, Seat, SeatSet, Setup, SharedState, Viewer, hex,
    parse_seed,
};

/// The seats, in seat order (rule 1).
pub const SEAT_NAMES: &[&str] = &["red", "green", "blue"];
const SEATS: usize = 3;
/// The amounts a move may add (rule 3).
const AMOUNTS: std::ops::RangeInclusive<u8> = 1..=3;

/// Trio's options: how many rounds a game lasts (rule 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrioRules {
    /// Rounds before the game ends (1..=9).
    pub rounds: u8,
}

impl Default for TrioRules {
    fn default() -> Self {
        TrioRules { rounds: 3 }
    }
}

impl Rules for TrioRules {
    fn game_name(&self) -> &'static str {
        "trio"
    }

    fn variant_name(&self) -> &'static str {
        "trio"
    }

    fn seeded(&self) -> bool {
        true
    }

    /// Without a setup (never asked of a seeded game) the seed is all zero.
    fn start(&self, setup: Option<Setup>) -> Box<dyn Game> {
        let setup = setup.unwrap_or(Setup {
            seed: [0; 32],
            supplied: true,
        });
        Box::new(TrioGame::new(*self, setup))
    }
}

/// What the seed decides (rule 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deal {
    /// The count that ends a round exactly.
    pub target: u8,
    /// Who moves first.
    pub first: Seat,
    /// Each seat's secret, seat order.
    pub secrets: [u8; SEATS],
}

impl Deal {
    /// The deal of `seed` (rule 2).
    pub fn from_seed(seed: &[u8; 32]) -> Deal {
        Deal {
            target: 10 + seed[0] % 6,
            first: seat(usize::from(seed[1] % 3)),
            secrets: [0, 1, 2].map(|i| 1 + seed[2 + i] % 3),
        }
    }
}

fn seat(index: usize) -> Seat {
    Seat::new(index).expect("a trio seat")
}

fn seat_name(seat: Seat) -> &'static str {
    SEAT_NAMES.get(seat.index()).copied().unwrap_or("?")
}

fn seat_named(name: &str) -> Option<Seat> {
    SEAT_NAMES
        .iter()
        .position(|n| n.eq_ignore_ascii_case(name.trim()))
        .map(seat)
}

/// A move: add `amount` to the count and hand the turn to `next` (rule 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TrioMove {
    /// What is added to the count.
    pub amount: u8,
    /// Who moves next.
    pub next: Seat,
}

impl fmt::Display for TrioMove {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}>{}", self.amount, seat_name(self.next))
    }
}

/// Why a text is not a trio move (syntax, before any rule).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a trio move: write the amount and the next seat, as `2>green`")]
pub struct NotationError(String);

impl FromStr for TrioMove {
    type Err = NotationError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let malformed = || NotationError(text.trim().chars().take(40).collect());
        let (amount, next) = text.split_once('>').ok_or_else(malformed)?;
        Ok(TrioMove {
            amount: amount.trim().parse().map_err(|_| malformed())?,
            next: seat_named(next).ok_or_else(malformed)?,
        })
    }
}

/// How a move ended its round, if it did (rule 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoundEnd {
    /// The count reached the target exactly.
    Hit,
    /// The count passed the target.
    Bust,
}

/// What a move did, as a viewer may see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrioMoveDetail {
    /// The move.
    pub mv: TrioMove,
    /// Who played it.
    pub mover: Seat,
    /// Whether it added the mover's secret (rule 4); `None` when hidden.
    pub matched: Option<bool>,
    /// The count after it (0 once a round ended).
    pub count: u8,
    /// How it ended its round, if it did.
    pub round_end: Option<RoundEnd>,
}

impl TrioMoveDetail {
    fn kind(&self) -> &'static str {
        match self.round_end {
            None => "add",
            Some(RoundEnd::Hit) => "hit",
            Some(RoundEnd::Bust) => "bust",
        }
    }

    fn to_detail(self) -> MoveDetail {
        MoveDetail {
            notation: self.mv.to_string(),
            kind: self.kind(),
            payload: Opaque::new(self),
        }
    }
}

/// Why a move is refused: one variant a rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The game is over.
    #[error("the game is over")]
    GameOver,
    /// Rule 3: 1, 2 or 3.
    #[error("add 1, 2 or 3, not {0}")]
    AmountOutOfRange(u8),
    /// Rule 3: the mover names another seat.
    #[error("name another seat to move next, not yourself")]
    NamesItself,
    /// Rule 1: three seats.
    #[error("trio has three seats: red, green and blue")]
    NoSuchSeat,
}

impl Refusal {
    /// The rule's stable name.
    pub const fn reason(self) -> &'static str {
        match self {
            Refusal::GameOver => "GAME_OVER",
            Refusal::AmountOutOfRange(_) => "AMOUNT_OUT_OF_RANGE",
            Refusal::NamesItself => "NAMES_ITSELF",
            Refusal::NoSuchSeat => "NO_SUCH_SEAT",
        }
    }
}

impl From<Refusal> for MoveError {
    fn from(refusal: Refusal) -> MoveError {
        MoveError::Illegal {
            reason: refusal.reason(),
            message: refusal.to_string(),
        }
    }
}

/// The table between moves under the board rules (rules 3–5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Table {
    round: u8,
    count: u8,
    /// `None` once the last round ended.
    to_move: Option<Seat>,
    points: [i64; SEATS],
    bonus: [i64; SEATS],
}

impl Table {
    fn start(deal: &Deal) -> Table {
        Table {
            round: 1,
            count: 0,
            to_move: Some(deal.first),
            points: [0; SEATS],
            bonus: [0; SEATS],
        }
    }

    /// Whether the player to move may play `mv` (rules 1 and 3).
    fn check(&self, mv: TrioMove) -> Result<Seat, Refusal> {
        let mover = self.to_move.ok_or(Refusal::GameOver)?;
        if mv.next.index() >= SEATS {
            return Err(Refusal::NoSuchSeat);
        }
        if !AMOUNTS.contains(&mv.amount) {
            return Err(Refusal::AmountOutOfRange(mv.amount));
        }
        if mv.next == mover {
            return Err(Refusal::NamesItself);
        }
        Ok(mover)
    }

    /// Plays `mv`, checked, for `mover` (rules 3–5).
    fn apply(
        &mut self,
        rules: &TrioRules,
        deal: &Deal,
        mover: Seat,
        mv: TrioMove,
    ) -> TrioMoveDetail {
        let matched = mv.amount == deal.secrets[mover.index()];
        if matched {
            self.bonus[mover.index()] += 1;
        }
        self.count += mv.amount;
        let round_end = match self.count.cmp(&deal.target) {
            std::cmp::Ordering::Less => None,
            std::cmp::Ordering::Equal => Some(RoundEnd::Hit),
            std::cmp::Ordering::Greater => Some(RoundEnd::Bust),
        };
        match round_end {
            Some(RoundEnd::Hit) => self.points[mover.index()] += 2,
            Some(RoundEnd::Bust) => {
                for other in Seat::all(SEATS).filter(|&s| s != mover) {
                    self.points[other.index()] += 1;
                }
            }
            None => {}
        }
        self.to_move = Some(mv.next);
        if round_end.is_some() {
            self.count = 0;
            self.round += 1;
            if self.round > rules.rounds {
                self.to_move = None;
            }
        }
        TrioMoveDetail {
            mv,
            mover,
            matched: Some(matched),
            count: self.count,
            round_end,
        }
    }

    /// Each seat's points plus bonus (rule 6).
    fn scores(&self) -> [i64; SEATS] {
        [0, 1, 2].map(|i| self.points[i] + self.bonus[i])
    }

    /// The outcome of the board rules once the last round ended (rule 6).
    fn outcome(&self) -> Option<Outcome> {
        if self.to_move.is_some() {
            return None;
        }
        let scores = self.scores();
        let top = best_of(&scores, SeatSet::all(SEATS));
        let reason = match top.len() {
            1 => "HIGH_SCORE",
            2 => "SHARED_SCORE",
            _ => "DEADLOCK",
        };
        let winners = if top.len() == SEATS {
            SeatSet::EMPTY
        } else {
            top
        };
        Some(with_scores(winners, reason, scores))
    }
}

/// The seats of `among` with the highest score.
fn best_of(scores: &[i64; SEATS], among: SeatSet) -> SeatSet {
    let best = among.iter().map(|s| scores[s.index()]).max();
    among
        .iter()
        .filter(|s| Some(scores[s.index()]) == best)
        .collect()
}

fn with_scores(winners: SeatSet, reason: &'static str, scores: [i64; SEATS]) -> Outcome {
    Outcome {
        scores: scores.to_vec(),
        ..Outcome::new(winners, reason)
    }
}

/// The winners of a referee ending (rule 7).
fn referee_outcome(ending: RefereeAction, scores: [i64; SEATS]) -> Outcome {
    let winners = match ending {
        RefereeAction::Resignation { loser } => SeatSet::all_but(loser, SEATS),
        RefereeAction::Timeout { loser } | RefereeAction::Abandoned { loser } => {
            best_of(&scores, SeatSet::all_but(loser, SEATS))
        }
        RefereeAction::DrawAgreement | RefereeAction::Aborted => SeatSet::EMPTY,
    };
    with_scores(winners, ending.reason(), scores)
}

/// A trio position as one viewer sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrioState {
    /// Who it is for.
    pub viewer: Viewer,
    /// The round's target.
    pub target: u8,
    /// The round being played (past the last once over).
    pub round: u8,
    /// Rounds in the game.
    pub rounds: u8,
    /// The count this round.
    pub count: u8,
    /// Who moves next.
    pub to_move: Option<Seat>,
    /// Each seat's points (public).
    pub points: [i64; SEATS],
    /// Each seat's secret, where the viewer may see it.
    pub secrets: [Option<u8>; SEATS],
    /// Each seat's bonus, where the viewer may see it.
    pub bonus: [Option<i64>; SEATS],
}

impl GameState for TrioState {
    fn svg(&self, last_move: Option<&MoveDetail>, outcome: Option<&Outcome>) -> String {
        let mut lines = vec![format!(
            "round {} of {}, count {} of {}",
            self.round.min(self.rounds),
            self.rounds,
            self.count,
            self.target
        )];
        for s in Seat::all(SEATS) {
            let shown = |v: Option<String>| v.unwrap_or_else(|| "?".into());
            lines.push(format!(
                "{}{}: {} points, secret {}, bonus {}",
                if self.to_move == Some(s) { "▶ " } else { "" },
                seat_name(s),
                self.points[s.index()],
                shown(self.secrets[s.index()].map(|v| v.to_string())),
                shown(self.bonus[s.index()].map(|v| v.to_string())),
            ));
        }
        if let Some(mv) = last_move {
            lines.push(format!("last: {}", mv.notation));
        }
        if let Some(v) = outcome {
            lines.push(format!("{} {}", winners_text(v.winners), v.reason));
        }
        let text: String = lines
            .iter()
            .enumerate()
            .map(|(i, l)| format!("<text x=\"8\" y=\"{}\">{l}</text>", 20 + 20 * i))
            .collect();
        format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"320\" height=\"{}\">{text}</svg>",
            30 + 20 * lines.len()
        )
    }
}

/// One trio game.
#[derive(Debug, Clone)]
pub struct TrioGame {
    rules: TrioRules,
    setup: Setup,
    deal: Deal,
    table: Table,
    /// Every move played, in order, as the server sees it.
    played: Vec<TrioMoveDetail>,
    /// A referee ending and its outcome, if one ended the game.
    concluded: Option<(RefereeAction, Outcome)>,
}

impl TrioGame {
    /// A new game under `rules`, set up from `setup` (rule 2).
    pub fn new(rules: TrioRules, setup: Setup) -> TrioGame {
        let deal = Deal::from_seed(&setup.seed);
        TrioGame {
            rules,
            setup,
            deal,
            table: Table::start(&deal),
            played: Vec::new(),
            concluded: None,
        }
    }

    /// The trio move `input` names: a [`TrioMove`], or a move's detail
    /// given back.
    fn move_of(input: &MoveInput) -> Result<TrioMove, MoveError> {
        if let Some(mv) = input.get::<TrioMove>() {
            return Ok(*mv);
        }
        if let Some(detail) = input.get::<TrioMoveDetail>() {
            return Ok(detail.mv);
        }
        Err(MoveError::Malformed {
            field: "move",
            description: "not a trio move".into(),
        })
    }

    /// The table after the first `ply` moves, if there were that many.
    fn table_at(&self, ply: u32) -> Option<Table> {
        let moves = self.played.get(..ply as usize)?;
        let mut table = Table::start(&self.deal);
        for detail in moves {
            table.apply(&self.rules, &self.deal, detail.mover, detail.mv);
        }
        Some(table)
    }

    fn snapshot_of(&self, table: &Table, to_move: Option<Seat>, viewer: Viewer) -> SharedState {
        let sees = |s: Seat| viewer == Viewer::Seat(s);
        SharedState::new(TrioState {
            viewer,
            target: self.deal.target,
            round: table.round,
            rounds: self.rules.rounds,
            count: table.count,
            to_move,
            points: table.points,
            secrets: [0, 1, 2].map(|i| sees(seat(i)).then_some(self.deal.secrets[i])),
            bonus: [0, 1, 2].map(|i| sees(seat(i)).then_some(table.bonus[i])),
        })
    }

    fn report(&self, detail: TrioMoveDetail, ply: u32, table: &Table) -> MoveReport {
        MoveReport {
            seat: detail.mover,
            ply,
            next: table.to_move,
            outcome: table.outcome().map(Box::new),
            detail: detail.to_detail(),
        }
    }

    fn result_line(&self) -> Option<String> {
        let outcome = self.outcome()?;
        let mut line = format!("{} {}", winners_text(outcome.winners), outcome.reason);
        if let Some((
            RefereeAction::Resignation { loser }
            | RefereeAction::Timeout { loser }
            | RefereeAction::Abandoned { loser },
            _,
        )) = self.concluded
        {
            line = format!("{line} {}", seat_name(loser));
        }
        Some(line)
    }
}

fn winners_text(winners: SeatSet) -> String {
    if winners.is_empty() {
        return "nobody".into();
    }
    winners.iter().map(seat_name).collect::<Vec<_>>().join("+")
}

impl Game for TrioGame {
    fn rules(&self) -> GameRules {
        GameRules::new(self.rules)
    }

    fn seat_names(&self) -> &'static [&'static str] {
        SEAT_NAMES
    }

    fn ply(&self) -> u32 {
        self.played.len() as u32
    }

    fn to_move(&self) -> Option<Seat> {
        self.concluded
            .is_none()
            .then_some(self.table.to_move)
            .flatten()
    }

    fn outcome(&self) -> Option<Outcome> {
        match &self.concluded {
            Some((_, outcome)) => Some(outcome.clone()),
            None => self.table.outcome(),
        }
    }

    fn setup(&self) -> Option<Setup> {
        Some(self.setup)
    }

    fn play(&mut self, input: &MoveInput) -> Result<MoveReport, MoveError> {
        let mv = TrioGame::move_of(input)?;
        if self.concluded.is_some() {
            return Err(Refusal::GameOver.into());
        }
        let mover = self.table.check(mv)?;
        let detail = self.table.apply(&self.rules, &self.deal, mover, mv);
        self.played.push(detail);
        Ok(self.report(detail, self.ply(), &self.table))
    }

    fn legal_moves(&self) -> Vec<MoveReport> {
        let Some(mover) = self.to_move() else {
            return Vec::new();
        };
        let mut moves: Vec<MoveReport> = AMOUNTS
            .flat_map(|amount| {
                Seat::all(SEATS)
                    .filter(move |&next| next != mover)
                    .map(move |next| TrioMove { amount, next })
            })
            .map(|mv| {
                let mut table = self.table;
                let detail = table.apply(&self.rules, &self.deal, mover, mv);
                self.report(detail, self.ply() + 1, &table)
            })
            .collect();
        moves.sort_by(|a, b| a.detail.notation.cmp(&b.detail.notation));
        moves
    }

    fn snapshot(&self, viewer: Viewer) -> SharedState {
        self.snapshot_of(&self.table, self.to_move(), viewer)
    }

    fn snapshot_at(&self, ply: u32, viewer: Viewer) -> Option<SharedState> {
        let table = self.table_at(ply)?;
        Some(self.snapshot_of(&table, table.to_move, viewer))
    }

    /// Each seat's secret is its own (rule 4).
    fn hides_information(&self) -> bool {
        true
    }

    /// Whether the move matched the mover's secret is the mover's to know
    /// (rule 4).
    fn redact(&self, detail: &MoveDetail, viewer: Viewer) -> MoveDetail {
        match detail.get::<TrioMoveDetail>() {
            Some(trio) if viewer != Viewer::Seat(trio.mover) => TrioMoveDetail {
                matched: None,
                ..*trio
            }
            .to_detail(),
            _ => detail.clone(),
        }
    }

    fn last_move(&self) -> Option<MoveDetail> {
        self.played.last().map(|d| d.to_detail())
    }

    fn record(&self, tags: &[(String, String)], _viewer: Viewer) -> String {
        let mut text = format!("game: trio\nrounds: {}\n", self.rules.rounds);
        text += &format!("commitment: {}\n", hex(&self.setup.commitment()));
        for (key, value) in tags {
            if !RESERVED_KEYS.contains(&key.to_ascii_lowercase().as_str()) {
                text += &format!("{key}: {value}\n");
            }
        }
        if let Some(result) = self.result_line() {
            text += &format!("seed: {}\nresult: {result}\n", hex(&self.setup.seed));
        }
        text.push('\n');
        for detail in &self.played {
            text += &format!("{}\n", detail.mv);
        }
        text
    }

    fn conclude(&mut self, ending: RefereeAction) -> Result<Outcome, MoveError> {
        if self.outcome().is_some() {
            return Err(Refusal::GameOver.into());
        }
        let outcome = referee_outcome(ending, self.table.scores());
        self.concluded = Some((ending, outcome.clone()));
        Ok(outcome)
    }

    fn clone_box(&self) -> Box<dyn Game> {
        Box::new(self.clone())
    }

    fn same_move(&self, ply: u32, input: &MoveInput, played: &MoveDetail) -> bool {
        let (Ok(mv), Some(played)) = (TrioGame::move_of(input), played.get::<TrioMoveDetail>())
        else {
            return false;
        };
        ply <= self.ply() && mv == played.mv
    }

    fn rules_header(&self) -> String {
        format!("game: trio\nrounds: {}\n", self.rules.rounds)
    }
}

/// Header keys with a meaning of their own (rule 8); any other is a tag.
const RESERVED_KEYS: [&str; 5] = ["game", "rounds", "commitment", "seed", "result"];

/// A record as read, before replaying (rule 8).
#[derive(Debug, Default)]
struct RecordText {
    rounds: Option<u8>,
    commitment: Option<[u8; 32]>,
    seed: Option<[u8; 32]>,
    /// The result line and its line number.
    result: Option<(String, usize)>,
    tags: Vec<(String, String)>,
    /// Each move and its line number.
    moves: Vec<(TrioMove, usize)>,
}

fn record_error(line: Option<usize>, reason: Option<&'static str>, message: String) -> RecordError {
    RecordError {
        line,
        reason,
        message,
    }
}

fn is_key(key: &str) -> bool {
    let mut chars = key.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

impl RecordText {
    fn parse(text: &str) -> Result<RecordText, RecordError> {
        let mut record = RecordText::default();
        let mut in_header = true;
        let mut seen: Vec<&str> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let (line_no, line) = (i + 1, raw.trim());
            if line.starts_with('#') {
                continue;
            }
            if line.is_empty() {
                in_header = false;
                continue;
            }
            if in_header
                && let Some((key, value)) = line.split_once(':')
                && is_key(key.trim())
            {
                record.header(key.trim(), value.trim(), line_no, &mut seen)?;
                continue;
            }
            in_header = false;
            let mv = line
                .parse()
                .map_err(|e: NotationError| record_error(Some(line_no), None, e.to_string()))?;
            record.moves.push((mv, line_no));
        }
        Ok(record)
    }

    fn header<'k>(
        &mut self,
        key: &'k str,
        value: &str,
        line: usize,
        seen: &mut Vec<&'k str>,
    ) -> Result<(), RecordError> {
        let lower = key.to_ascii_lowercase();
        let Some(&known) = RESERVED_KEYS.iter().find(|&&k| k == lower) else {
            self.tags.push((key.to_string(), value.to_string()));
            return Ok(());
        };
        let bad = |what: &str| record_error(Some(line), None, format!("{known} `{value}`: {what}"));
        if seen.contains(&known) {
            return Err(bad("given twice"));
        }
        seen.push(known);
        match known {
            "game" if value.eq_ignore_ascii_case("trio") => {}
            "game" => return Err(bad("not a trio record")),
            "rounds" => {
                let rounds = value.parse().ok().filter(|r| (1..=9).contains(r));
                self.rounds = Some(rounds.ok_or_else(|| bad("not 1..=9"))?);
            }
            "commitment" => {
                self.commitment = Some(parse_seed(value).ok_or_else(|| bad("not 64 hex digits"))?)
            }
            "seed" => self.seed = Some(parse_seed(value).ok_or_else(|| bad("not 64 hex digits"))?),
            _ => self.result = Some((value.to_string(), line)),
        }
        Ok(())
    }

    /// The setup to replay from: the record's seed or the server's, checked
    /// against each other and against the commitment (rule 2).
    fn setup(&self, given: Option<Setup>) -> Result<Setup, RecordError> {
        let mismatch = |what: &str| record_error(None, Some("SEED_MISMATCH"), what.to_string());
        let setup = match (self.seed, given) {
            (Some(seed), Some(given)) if seed != given.seed => {
                return Err(mismatch("the record's seed is not the game's"));
            }
            (Some(seed), _) => Setup {
                seed,
                supplied: false,
            },
            (None, Some(given)) => given,
            (None, None) => {
                return Err(record_error(
                    None,
                    Some("SEED_NOT_REVEALED"),
                    "the record does not reveal its seed: the game is not over".into(),
                ));
            }
        };
        match self.commitment {
            Some(c) if c != setup.commitment() => {
                Err(mismatch("the seed does not match the commitment"))
            }
            _ => Ok(setup),
        }
    }
}

/// Reads and replays a trio record (rule 8), following the
/// [`Importer`](punct_referee::games::Importer) contract: without `seed`,
/// only a record that reveals its seed replays.
pub fn import(text: &str, seed: Option<Setup>) -> Result<Replayed, RecordError> {
    let record = RecordText::parse(text)?;
    let setup = record.setup(seed)?;
    let rules = TrioRules {
        rounds: record.rounds.unwrap_or(TrioRules::default().rounds),
    };
    let mut game = TrioGame::new(rules, setup);
    let mut moves = Vec::with_capacity(record.moves.len());
    for &(mv, line) in &record.moves {
        let report = game.play(&MoveInput::new(mv)).map_err(|e| {
            let reason = match &e {
                MoveError::Illegal { reason, .. } => Some(*reason),
                MoveError::Malformed { .. } => None,
            };
            record_error(Some(line), reason, format!("`{mv}`: {e}"))
        })?;
        moves.push(report);
    }
    if let Some((result, line)) = &record.result {
        apply_result(&mut game, result, *line)?;
    }
    Ok(Replayed {
        game: Box::new(game),
        moves,
        tags: record.tags,
    })
}

/// Checks a `result:` line against the replayed game, concluding it when
/// the line names a referee ending (rule 8).
fn apply_result(game: &mut TrioGame, result: &str, line: usize) -> Result<(), RecordError> {
    let bad = || record_error(Some(line), None, format!("`{result}` is not a trio result"));
    let words: Vec<&str> = result.split_whitespace().collect();
    let (winners, reason, loser) = match words.as_slice() {
        [w, r] => (*w, *r, None),
        [w, r, l] => (*w, *r, Some(seat_named(l).ok_or_else(bad)?)),
        _ => return Err(bad()),
    };
    let winners: SeatSet = if winners.eq_ignore_ascii_case("nobody") {
        SeatSet::EMPTY
    } else {
        let seats: Option<Vec<Seat>> = winners.split('+').map(seat_named).collect();
        seats.ok_or_else(bad)?.into_iter().collect()
    };
    let reason = reason.to_ascii_uppercase();
    let outcome = match game.outcome() {
        Some(outcome) => outcome,
        None => {
            let ending =
                referee_ending(&reason, loser).ok_or_else(|| mismatch(result, "unfinished"))?;
            game.conclude(ending)
                .map_err(|e| mismatch(result, &e.to_string()))?
        }
    };
    if outcome.winners != winners || outcome.reason != reason {
        let actual = format!("{} {}", winners_text(outcome.winners), outcome.reason);
        return Err(mismatch(result, &actual));
    }
    Ok(())
}

fn mismatch(stated: &str, actual: &str) -> RecordError {
    record_error(
        None,
        Some("RESULT_MISMATCH"),
        format!("the record says `{stated}` but the moves give `{actual}`"),
    )
}

/// The referee ending a result line names (rule 7), if it is one.
fn referee_ending(reason: &str, loser: Option<Seat>) -> Option<RefereeAction> {
    match (reason, loser) {
        ("RESIGNATION", Some(loser)) => Some(RefereeAction::Resignation { loser }),
        ("TIMEOUT", Some(loser)) => Some(RefereeAction::Timeout { loser }),
        ("ABANDONED", Some(loser)) => Some(RefereeAction::Abandoned { loser }),
        ("DRAW_AGREEMENT", None) => Some(RefereeAction::DrawAgreement),
        ("ABORTED", None) => Some(RefereeAction::Aborted),
        _ => None,
    }
}

/// A trio move as notation text, as the service's syntax check makes it.
pub fn notation(text: &str) -> Option<MoveInput> {
    text.parse::<TrioMove>().ok().map(MoveInput::new)
}
