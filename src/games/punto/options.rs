//! Who plays and with which options: configurations, sides, entropy and
//! the rule options (docs/rules/punto.md §3, §10).

use std::fmt;

use super::{Colour, deal};
use crate::games::{Seat, SeatSet};

/// Who plays, and so who owns which colours (docs/rules/punto.md §3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Configuration {
    /// 2 players: seat 1 `R`+`B`, seat 2 `O`+`G`; rows of 5.
    #[default]
    TwoPlayers,
    /// 3 players: `R`, `O`, `B`; `G` is neutral; rows of 4.
    ThreePlayers,
    /// 4 players: `R`, `O`, `B`, `G`; rows of 4.
    FourPlayers,
    /// 4 players in two teams: seats 1+3 `R`+`B`, seats 2+4 `O`+`G`; rows
    /// of 5.
    Teams,
}

/// Seat names of each configuration (docs/rules/punto.md §3.1: by the colours owned).
const TWO_NAMES: &[&str] = &["red-blue", "orange-green"];
const THREE_NAMES: &[&str] = &["red", "orange", "blue"];
const FOUR_NAMES: &[&str] = &["red", "orange", "blue", "green"];
const TEAM_NAMES: &[&str] = &[
    "red-blue-1",
    "orange-green-1",
    "red-blue-2",
    "orange-green-2",
];

impl Configuration {
    /// The configuration of `players` (2..=4) and the team variant (4 only).
    pub fn of(players: u32, team: bool) -> Result<Configuration, OptionsError> {
        match (players, team) {
            (2, false) => Ok(Configuration::TwoPlayers),
            (3, false) => Ok(Configuration::ThreePlayers),
            (4, false) => Ok(Configuration::FourPlayers),
            (4, true) => Ok(Configuration::Teams),
            (2 | 3, true) => Err(OptionsError::TeamNeedsFour(players)),
            _ => Err(OptionsError::Players(players)),
        }
    }

    /// How many seats: 2, 3 or 4.
    pub const fn seats(self) -> usize {
        match self {
            Configuration::TwoPlayers => 2,
            Configuration::ThreePlayers => 3,
            Configuration::FourPlayers | Configuration::Teams => 4,
        }
    }

    /// Whether it is the team variant.
    pub const fn is_team(self) -> bool {
        matches!(self, Configuration::Teams)
    }

    /// How many sides win rounds: each seat, or the two teams (§3.1).
    pub const fn sides(self) -> usize {
        match self {
            Configuration::Teams => 2,
            other => other.seats(),
        }
    }

    /// The length `L` of a winning row (§3.1, §6).
    pub const fn row_length(self) -> u8 {
        match self {
            Configuration::TwoPlayers | Configuration::Teams => 5,
            Configuration::ThreePlayers | Configuration::FourPlayers => 4,
        }
    }

    /// The neutral colour (3 players: green, §3.1).
    pub const fn neutral(self) -> Option<Colour> {
        match self {
            Configuration::ThreePlayers => Some(Colour::Green),
            _ => None,
        }
    }

    /// The index of `seat`'s side (§3.1: team 1 = seats 1 and 3).
    pub const fn side_index(self, seat: Seat) -> usize {
        match self {
            Configuration::Teams => seat.index() % 2,
            _ => seat.index(),
        }
    }

    /// The side of index `side`.
    pub fn side(self, side: usize) -> Side {
        match self {
            Configuration::Teams if side == 0 => Side::Team(Team::One),
            Configuration::Teams => Side::Team(Team::Two),
            _ => Side::Seat(Seat::new(side).unwrap_or(Seat::FIRST)),
        }
    }

    /// The index of `side`, if it is one of this configuration.
    pub fn index_of(self, side: Side) -> Option<usize> {
        let index = match (self, side) {
            (Configuration::Teams, Side::Team(team)) => team.index(),
            (Configuration::Teams, Side::Seat(_)) | (_, Side::Team(_)) => return None,
            (_, Side::Seat(seat)) => seat.index(),
        };
        (index < self.sides()).then_some(index)
    }

    /// The side owning `colour` (§3.1); none for the neutral colour.
    pub const fn owner(self, colour: Colour) -> Option<usize> {
        match (self, colour) {
            (Configuration::TwoPlayers | Configuration::Teams, Colour::Red | Colour::Blue) => {
                Some(0)
            }
            (Configuration::TwoPlayers | Configuration::Teams, _) => Some(1),
            (Configuration::ThreePlayers, Colour::Green) => None,
            (_, colour) => Some(colour.index()),
        }
    }

    /// The colours side `side` owns (§3.1).
    pub fn colours(self, side: usize) -> &'static [Colour] {
        const RED_BLUE: &[Colour] = &[Colour::Red, Colour::Blue];
        const ORANGE_GREEN: &[Colour] = &[Colour::Orange, Colour::Green];
        match self {
            Configuration::TwoPlayers | Configuration::Teams if side == 0 => RED_BLUE,
            Configuration::TwoPlayers | Configuration::Teams => ORANGE_GREEN,
            _ => match side {
                0 => &[Colour::Red],
                1 => &[Colour::Orange],
                2 => &[Colour::Blue],
                _ => &[Colour::Green],
            },
        }
    }

    /// The seats of side `side`.
    pub fn seats_of(self, side: usize) -> SeatSet {
        Seat::all(self.seats())
            .filter(|&s| self.side_index(s) == side)
            .collect()
    }

    /// The side's lower-numbered seat (§8.3: the team's seat 1 or 2).
    pub fn lower_seat(self, side: usize) -> Seat {
        Seat::new(side).unwrap_or(Seat::FIRST)
    }

    /// What each seat is called, seat order (by the colours it plays, §3.1).
    pub const fn seat_names(self) -> &'static [&'static str] {
        match self {
            Configuration::TwoPlayers => TWO_NAMES,
            Configuration::ThreePlayers => THREE_NAMES,
            Configuration::FourPlayers => FOUR_NAMES,
            Configuration::Teams => TEAM_NAMES,
        }
    }

    /// A short label for logs and metrics.
    pub const fn name(self) -> &'static str {
        match self {
            Configuration::TwoPlayers => "2-players",
            Configuration::ThreePlayers => "3-players",
            Configuration::FourPlayers => "4-players",
            Configuration::Teams => "teams",
        }
    }
}

/// A team of the team variant (§3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Team {
    /// Seats 1 and 3, `R`+`B`.
    One,
    /// Seats 2 and 4, `O`+`G`.
    Two,
}

impl Team {
    /// 0 for team 1, 1 for team 2.
    pub const fn index(self) -> usize {
        match self {
            Team::One => 0,
            Team::Two => 1,
        }
    }

    /// 1 or 2.
    pub const fn number(self) -> u32 {
        self.index() as u32 + 1
    }
}

/// What wins rounds and the match (§3.1): a seat, or a team.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Side {
    /// A seat playing on its own.
    Seat(Seat),
    /// A team of the team variant.
    Team(Team),
}

impl fmt::Display for Side {
    /// `seat N` or `team N`, as in a record's `result` (§12).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Side::Seat(seat) => write!(f, "seat {}", seat.number()),
            Side::Team(team) => write!(f, "team {}", team.number()),
        }
    }
}

/// Creator entropy `E` (§10.2): 0 to 64 bytes, public.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Entropy {
    bytes: [u8; deal::MAX_ENTROPY],
    len: u8,
}

impl Entropy {
    /// No entropy (the default).
    pub const NONE: Entropy = Entropy {
        bytes: [0; deal::MAX_ENTROPY],
        len: 0,
    };

    /// The entropy `bytes`, if at most 64.
    pub fn new(bytes: &[u8]) -> Result<Entropy, OptionsError> {
        if bytes.len() > deal::MAX_ENTROPY {
            return Err(OptionsError::Entropy(bytes.len()));
        }
        let mut entropy = Entropy::NONE;
        entropy.bytes[..bytes.len()].copy_from_slice(bytes);
        entropy.len = bytes.len() as u8;
        Ok(entropy)
    }

    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

impl fmt::Debug for Entropy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Entropy({})", crate::games::hex(self.bytes()))
    }
}

/// Why rule options are refused (§3.1, §9, §10.2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OptionsError {
    /// Punto is for 2, 3 or 4 players.
    #[error("Punto is for 2, 3 or 4 players, not {0}")]
    Players(u32),
    /// The team variant needs 4 players.
    #[error("the team variant is for 4 players, not {0}")]
    TeamNeedsFour(u32),
    /// `rounds_to_win` is 1 to 9 (§9.1).
    #[error("rounds_to_win is 1 to 9, not {0}")]
    RoundsToWin(u32),
    /// `max_rounds` is 0 to 99 (§9.2).
    #[error("max_rounds is 0 (no limit) to 99, not {0}")]
    MaxRounds(u32),
    /// Entropy is 0 to 64 bytes (§10.2).
    #[error("the entropy is 0 to 64 bytes, not {0}")]
    Entropy(usize),
}

impl OptionsError {
    /// The stable reason (`PLAYERS`, `TEAM_NEEDS_FOUR`, `ROUNDS_TO_WIN`,
    /// `MAX_ROUNDS`, `ENTROPY_TOO_LONG`).
    pub const fn reason(&self) -> &'static str {
        match self {
            OptionsError::Players(_) => "PLAYERS",
            OptionsError::TeamNeedsFour(_) => "TEAM_NEEDS_FOUR",
            OptionsError::RoundsToWin(_) => "ROUNDS_TO_WIN",
            OptionsError::MaxRounds(_) => "MAX_ROUNDS",
            OptionsError::Entropy(_) => "ENTROPY_TOO_LONG",
        }
    }

    /// The option at fault (`players`, `team`, `rounds_to_win`,
    /// `max_rounds`, `entropy`).
    pub const fn field(&self) -> &'static str {
        match self {
            OptionsError::Players(_) => "players",
            OptionsError::TeamNeedsFour(_) => "team",
            OptionsError::RoundsToWin(_) => "rounds_to_win",
            OptionsError::MaxRounds(_) => "max_rounds",
            OptionsError::Entropy(_) => "entropy",
        }
    }
}

/// The options a match is created with (§3.1, §9, §10.2); valid by
/// construction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RuleOptions {
    configuration: Configuration,
    rounds_to_win: u8,
    max_rounds: u8,
    entropy: Entropy,
}

impl Default for RuleOptions {
    /// 2 players, 2 rounds to win, no round limit, no entropy.
    fn default() -> Self {
        RuleOptions::of(Configuration::TwoPlayers)
    }
}

impl RuleOptions {
    /// Default `rounds_to_win` (§9.1).
    pub const DEFAULT_ROUNDS_TO_WIN: u32 = 2;

    /// `configuration` with the default options.
    pub const fn of(configuration: Configuration) -> RuleOptions {
        RuleOptions {
            configuration,
            rounds_to_win: Self::DEFAULT_ROUNDS_TO_WIN as u8,
            max_rounds: 0,
            entropy: Entropy::NONE,
        }
    }

    /// Every option, checked.
    pub fn new(
        players: u32,
        team: bool,
        rounds_to_win: u32,
        max_rounds: u32,
        entropy: &[u8],
    ) -> Result<RuleOptions, OptionsError> {
        RuleOptions::of(Configuration::of(players, team)?)
            .with_rounds_to_win(rounds_to_win)?
            .with_max_rounds(max_rounds)?
            .with_entropy(entropy)
    }

    /// The same with `rounds_to_win` (1..=9, §9.1).
    pub fn with_rounds_to_win(self, rounds_to_win: u32) -> Result<RuleOptions, OptionsError> {
        match u8::try_from(rounds_to_win) {
            Ok(n @ 1..=9) => Ok(RuleOptions {
                rounds_to_win: n,
                ..self
            }),
            _ => Err(OptionsError::RoundsToWin(rounds_to_win)),
        }
    }

    /// The same with `max_rounds` (0..=99, 0 = no limit, §9.2).
    pub fn with_max_rounds(self, max_rounds: u32) -> Result<RuleOptions, OptionsError> {
        match u8::try_from(max_rounds) {
            Ok(n @ 0..=99) => Ok(RuleOptions {
                max_rounds: n,
                ..self
            }),
            _ => Err(OptionsError::MaxRounds(max_rounds)),
        }
    }

    /// The same with creator entropy (0..=64 bytes, §10.2).
    pub fn with_entropy(self, entropy: &[u8]) -> Result<RuleOptions, OptionsError> {
        Ok(RuleOptions {
            entropy: Entropy::new(entropy)?,
            ..self
        })
    }

    /// Who plays.
    pub const fn configuration(&self) -> Configuration {
        self.configuration
    }

    /// 2, 3 or 4.
    pub const fn players(&self) -> usize {
        self.configuration.seats()
    }

    /// Whether it is the team variant.
    pub const fn team(&self) -> bool {
        self.configuration.is_team()
    }

    /// Round wins that win the match (§9.1).
    pub const fn rounds_to_win(&self) -> u32 {
        self.rounds_to_win as u32
    }

    /// Rounds after which the match ends; 0 = no limit (§9.2).
    pub const fn max_rounds(&self) -> u32 {
        self.max_rounds as u32
    }

    /// The creator's entropy `E` (§10.2).
    pub fn entropy(&self) -> &[u8] {
        self.entropy.bytes()
    }
}
