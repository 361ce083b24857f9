//! Failure policies: what the referee does when a seat times out, plays an
//! illegal move or disconnects (docs/POLICIES.md). This module holds the
//! pure part: the policy, its bounds, and the reproducible draw of a
//! substituted move. The session applies it (`session/policy.rs`).

use std::collections::BTreeSet;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use sha2::{Digest, Sha256};

use super::SessionError;
use super::clock::{ClockMode, MAX_CLOCK_TIME, MoveStamp, TimeControl};
use crate::games::{MoveDetail, Seat};

/// The most substitutions a policy may allow per seat and game.
pub(super) const MAX_SUBSTITUTIONS: u32 = 1000;
/// Substitutions per seat and game when the policy does not say.
pub(super) const DEFAULT_SUBSTITUTIONS: u32 = 3;
/// Pause time per seat and game when the policy does not say.
pub(super) const DEFAULT_PAUSE: Duration = Duration::from_secs(60);
/// How long the seat to move must be gone before the disconnect policy
/// acts, when the policy does not say.
pub(super) const DEFAULT_DISCONNECT_AFTER: Duration = Duration::from_secs(5);

/// The label a game's policy is stored under with its row (docs/POLICIES.md,
/// "Restarts"): reserved, never one of the game's own labels (creation
/// refuses it; the session layer adds it to the stored row and takes it
/// off when it reads the row back).
pub const POLICY_LABEL: &str = "failure-policy";

/// What the referee does about one kind of failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FailureAction {
    /// What happens without a policy (the default).
    #[default]
    Lose,
    /// Play a legal move drawn at random for the seat, within the cap.
    Substitute,
    /// Hold the seat's flag for a bounded time (timeouts, disconnects).
    Pause,
}

/// A kind of failure of a seat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// Its clock ran out.
    Timeout,
    /// It submitted a move the rules refuse.
    IllegalMove,
    /// It was to move and held no stream for the disconnect time.
    Disconnect,
}

impl FailureAction {
    /// The stable name (`LOSE`, `SUBSTITUTE`, `PAUSE`).
    pub const fn name(self) -> &'static str {
        match self {
            FailureAction::Lose => "LOSE",
            FailureAction::Substitute => "SUBSTITUTE",
            FailureAction::Pause => "PAUSE",
        }
    }

    fn of_name(name: &str) -> Option<FailureAction> {
        [
            FailureAction::Lose,
            FailureAction::Substitute,
            FailureAction::Pause,
        ]
        .into_iter()
        .find(|a| a.name() == name)
    }
}

impl FailureKind {
    /// The stable name (`TIMEOUT`, `ILLEGAL_MOVE`, `DISCONNECT`).
    pub const fn name(self) -> &'static str {
        match self {
            FailureKind::Timeout => "TIMEOUT",
            FailureKind::IllegalMove => "ILLEGAL_MOVE",
            FailureKind::Disconnect => "DISCONNECT",
        }
    }
}

/// Why the failure policy ended a game (beside the outcome's reason).
pub const SUBSTITUTION_CAP: &str = "SUBSTITUTION_CAP";
/// The seat's pause time ran out.
pub const PAUSE_EXHAUSTED: &str = "PAUSE_EXHAUSTED";

/// A game's failure policy, fixed at creation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FailurePolicy {
    /// When the seat's clock runs out.
    pub on_timeout: FailureAction,
    /// When the seat submits a move the rules refuse.
    pub on_illegal_move: FailureAction,
    /// When the seat to move holds no stream for `disconnect_after`.
    pub on_disconnect: FailureAction,
    /// Substitutions per seat and game (every kind counted together).
    pub max_substitutions: u32,
    /// Pause time per seat and game.
    pub pause: Duration,
    /// How long the seat to move must be gone for `on_disconnect` to act.
    pub disconnect_after: Duration,
}

impl Default for FailurePolicy {
    fn default() -> FailurePolicy {
        FailurePolicy {
            on_timeout: FailureAction::Lose,
            on_illegal_move: FailureAction::Lose,
            on_disconnect: FailureAction::Lose,
            max_substitutions: DEFAULT_SUBSTITUTIONS,
            pause: DEFAULT_PAUSE,
            disconnect_after: DEFAULT_DISCONNECT_AFTER,
        }
    }
}

impl FailurePolicy {
    /// The action for `kind`.
    pub fn action(&self, kind: FailureKind) -> FailureAction {
        match kind {
            FailureKind::Timeout => self.on_timeout,
            FailureKind::IllegalMove => self.on_illegal_move,
            FailureKind::Disconnect => self.on_disconnect,
        }
    }

    /// Whether every failure loses, as without a policy.
    pub fn is_lose(&self) -> bool {
        [self.on_timeout, self.on_illegal_move, self.on_disconnect]
            .iter()
            .all(|a| *a == FailureAction::Lose)
    }

    /// The policy as stored ([`POLICY_LABEL`]): `timeout=SUBSTITUTE
    /// illegal_move=LOSE disconnect=PAUSE max_substitutions=3
    /// pause_ms=60000 disconnect_after_ms=5000`.
    pub fn to_stored(&self) -> String {
        format!(
            "timeout={} illegal_move={} disconnect={} max_substitutions={} pause_ms={} disconnect_after_ms={}",
            self.on_timeout.name(),
            self.on_illegal_move.name(),
            self.on_disconnect.name(),
            self.max_substitutions,
            self.pause.as_millis(),
            self.disconnect_after.as_millis(),
        )
    }

    /// Reads a policy [`FailurePolicy::to_stored`] wrote; `Err` says what
    /// is wrong with it.
    pub fn of_stored(text: &str) -> Result<FailurePolicy, String> {
        let mut policy = FailurePolicy::default();
        let mut seen = BTreeSet::new();
        for part in text.split_whitespace() {
            let (key, value) = part
                .split_once('=')
                .ok_or_else(|| format!("`{part}` is not key=value"))?;
            let action = || FailureAction::of_name(value).ok_or(format!("{key}: `{value}`"));
            let number = || {
                value
                    .parse::<u64>()
                    .map_err(|_| format!("{key}: `{value}`"))
            };
            match key {
                "timeout" => policy.on_timeout = action()?,
                "illegal_move" => policy.on_illegal_move = action()?,
                "disconnect" => policy.on_disconnect = action()?,
                "max_substitutions" => {
                    policy.max_substitutions =
                        u32::try_from(number()?).map_err(|_| format!("{key}: `{value}`"))?;
                }
                "pause_ms" => policy.pause = Duration::from_millis(number()?),
                "disconnect_after_ms" => policy.disconnect_after = Duration::from_millis(number()?),
                _ => return Err(format!("unknown key `{key}`")),
            }
            seen.insert(key);
        }
        if seen.len() != 6 {
            return Err("every key must be given once".into());
        }
        policy.check().map_err(|e| e.to_string())?;
        Ok(policy)
    }

    /// Checks the bounds and that PAUSE is not asked of illegal moves (a
    /// refused move already leaves the seat its clock to try again).
    pub fn check(&self) -> Result<(), SessionError> {
        let bad = |field: &'static str, description: String| {
            Err(SessionError::InvalidArgument { field, description })
        };
        if self.on_illegal_move == FailureAction::Pause {
            return bad(
                "failure_policy.on_illegal_move",
                "PAUSE applies to timeouts and disconnects: an illegal move is LOSE or SUBSTITUTE"
                    .into(),
            );
        }
        if !(1..=MAX_SUBSTITUTIONS).contains(&self.max_substitutions) {
            return bad(
                "failure_policy.max_substitutions",
                format!("must be 1..={MAX_SUBSTITUTIONS} (0: {DEFAULT_SUBSTITUTIONS})"),
            );
        }
        let times = [
            ("failure_policy.pause_ms", self.pause),
            ("failure_policy.disconnect_after_ms", self.disconnect_after),
        ];
        for (field, d) in times {
            if d.is_zero() || d > MAX_CLOCK_TIME {
                return bad(
                    field,
                    format!("must be 1..={} milliseconds", MAX_CLOCK_TIME.as_millis()),
                );
            }
        }
        Ok(())
    }
}

/// A move the referee played for a seat that failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Substitution {
    /// The ply after the move.
    pub ply: u32,
    /// The seat it was played for.
    pub seat: Seat,
    /// The failure.
    pub kind: FailureKind,
    /// The rule the seat's own move broke (illegal moves).
    pub refused: Option<&'static str>,
    /// The move played (as a viewer may see it, in views).
    pub detail: MoveDetail,
}

impl Substitution {
    /// The mark stored with the move ([`crate::service::storage::MoveRow::substituted`]):
    /// the failure's name, and for an illegal move `:` and the rule the
    /// seat's own move broke (`ILLEGAL_MOVE:OCCUPIED`).
    pub fn mark(&self) -> String {
        mark(self.kind, self.refused)
    }
}

/// The stored mark of a move substituted for `kind` ([`Substitution::mark`]).
fn mark(kind: FailureKind, refused: Option<&str>) -> String {
    match refused {
        Some(reason) => format!("{}:{reason}", kind.name()),
        None => kind.name().to_string(),
    }
}

/// The failure and refusal a stored mark names ([`Substitution::mark`]);
/// `None` for a mark no version wrote.
pub(super) fn of_mark(mark: &str) -> Option<(FailureKind, Option<&'static str>)> {
    let (name, reason) = match mark.split_once(':') {
        Some((name, reason)) => (name, Some(reason)),
        None => (mark, None),
    };
    let kind = [
        FailureKind::Timeout,
        FailureKind::IllegalMove,
        FailureKind::Disconnect,
    ]
    .into_iter()
    .find(|k| k.name() == name)?;
    match (kind, reason) {
        (FailureKind::IllegalMove, Some(reason)) => Some((kind, Some(intern_reason(reason)?))),
        (FailureKind::IllegalMove, None) | (_, Some(_)) => None,
        (_, None) => Some((kind, None)),
    }
}

/// A refusal's reason read back from storage, as the `'static` name a rule
/// gives it: each distinct name is kept once for the process (reasons are
/// the few upper-case names the games' rules use: anything else is not
/// one).
fn intern_reason(reason: &str) -> Option<&'static str> {
    let name_like = (1..=64).contains(&reason.len())
        && reason
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
    if !name_like {
        return None;
    }
    static REASONS: OnceLock<Mutex<BTreeSet<&'static str>>> = OnceLock::new();
    let mut known = REASONS
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(&kept) = known.get(reason) {
        return Some(kept);
    }
    let kept: &'static str = Box::leak(reason.to_owned().into_boxed_str());
    known.insert(kept);
    Some(kept)
}

/// The seed a game's substitutions are drawn from: a hash of its id, so
/// that anyone holding the record and the id replays the same draws, and no
/// seat can choose it.
pub fn substitution_seed(game_id: &str) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"punct-referee substitution v1\0");
    h.update(game_id.as_bytes());
    h.finalize().into()
}

/// The index of the legal move substituted at the move making `ply` (the
/// ply after it), among `n` legal moves sorted by notation: uniform, drawn
/// from `SHA-256(seed || ply || counter)` as a big-endian u64 by rejection
/// (docs/POLICIES.md, "Reproducing the draws"). `n` must not be 0.
pub fn pick(seed: &[u8; 32], ply: u32, n: usize) -> usize {
    let n = n.max(1) as u64;
    // The largest multiple of n that fits: draws at or above it are
    // rejected, so every index is equally likely.
    let zone = u64::MAX - u64::MAX % n;
    for counter in 0u32.. {
        let mut h = Sha256::new();
        h.update(seed);
        h.update(ply.to_be_bytes());
        h.update(counter.to_be_bytes());
        let digest = h.finalize();
        let mut first = [0u8; 8];
        first.copy_from_slice(&digest[..8]);
        let x = u64::from_be_bytes(first);
        if x < zone {
            return usize::try_from(x % n).unwrap_or(0);
        }
    }
    0
}

/// The pause time each of `seats` seats has used, from the times of the
/// game's moves under `control` (docs/POLICIES.md, "Restarts"): the time a
/// seat took past its flag. Only a held flag lets a seat move after its
/// flag fell, so this is what the held flags used; it is what a game read
/// back from storage has used, its moves' stored times being the clock's.
pub(super) fn pause_used(
    control: TimeControl,
    seats: usize,
    stamps: &[MoveStamp],
) -> Vec<Duration> {
    let mut paused = vec![Duration::ZERO; seats];
    let mut remaining = vec![
        match control.mode {
            ClockMode::Untimed => return paused,
            ClockMode::Fischer { initial, .. } => initial,
            ClockMode::PerMove { per_move } => per_move,
        };
        seats
    ];
    let mut moved = vec![false; seats];
    let mut turn_started = Duration::ZERO;
    for s in stamps {
        let i = s.mover.index();
        // What the clock charged: the move's time less its lag credit
        // (docs/LAG.md).
        let credit = Duration::from_millis(u64::from(s.compensated_ms));
        let elapsed = s.at.saturating_sub(turn_started).saturating_sub(credit);
        turn_started = s.at;
        let (Some(left), Some(seen)) = (remaining.get_mut(i), moved.get_mut(i)) else {
            continue;
        };
        // The first move under a first-move deadline runs no clock.
        let first = control.first_move.is_some() && !*seen;
        *seen = true;
        if first {
            continue;
        }
        if let Some(p) = paused.get_mut(i) {
            *p += elapsed.saturating_sub(*left);
        }
        *left = match control.mode {
            ClockMode::Fischer { increment, .. } => left.saturating_sub(elapsed) + increment,
            ClockMode::PerMove { per_move } => per_move,
            ClockMode::Untimed => Duration::ZERO,
        };
    }
    paused
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pause_used_is_the_time_past_the_flag_of_each_move() {
        let ms = Duration::from_millis;
        let stamp = |seat: usize, at: u64| MoveStamp {
            mover: Seat::new(seat).unwrap(),
            next: None,
            at: ms(at),
            compensated_ms: 0,
        };
        let white = |at| stamp(0, at);
        let black = |at| stamp(1, at);
        // Per move, 150 ms, first moves free: white's second move comes
        // 850 ms into its turn (700 ms past its flag), black's in time,
        // white's third 200 ms in (50 ms past).
        let per_move = TimeControl {
            mode: ClockMode::PerMove { per_move: ms(150) },
            first_move: Some(Duration::from_secs(60)),
            lag: None,
        };
        let stamps = [
            white(5_000),
            black(9_000),
            white(9_850),
            black(9_900),
            white(10_100),
        ];
        assert_eq!(pause_used(per_move, 2, &stamps), [ms(750), ms(0)]);
        // Without a first-move deadline the first moves run the clock too.
        let counted = TimeControl {
            first_move: None,
            ..per_move
        };
        assert_eq!(
            pause_used(counted, 2, &stamps),
            [ms(4_850 + 700 + 50), ms(3_850)]
        );
        // Fischer: what is left carries over, with the increment.
        let fischer = TimeControl {
            mode: ClockMode::Fischer {
                initial: ms(1_000),
                increment: ms(100),
            },
            first_move: None,
            lag: None,
        };
        // White: 600 of 1 000 (500 left), then 700 of 500 (200 past).
        let stamps = [white(600), black(700), white(1_400)];
        assert_eq!(pause_used(fischer, 2, &stamps), [ms(200), ms(0)]);
        // A lag credit is not charged, so not paused either (docs/LAG.md).
        let credited = [
            white(600),
            black(700),
            MoveStamp {
                compensated_ms: 150,
                ..white(1_400)
            },
        ];
        assert_eq!(pause_used(fischer, 2, &credited), [ms(50), ms(0)]);
        // Untimed: no flag, no pause.
        assert_eq!(
            pause_used(TimeControl::default(), 2, &stamps),
            [ms(0), ms(0)]
        );
    }

    #[test]
    fn the_draw_depends_only_on_the_seed_and_the_ply_and_covers_every_move() {
        let seed = substitution_seed("0123456789abcdef0123456789abcdef");
        assert_eq!(pick(&seed, 7, 10), pick(&seed, 7, 10));
        let mut seen = [0u32; 5];
        for ply in 1..=500 {
            seen[pick(&seed, ply, 5)] += 1;
        }
        // 500 draws over 5 moves: each far from 0 and from 500.
        assert!(seen.iter().all(|c| (50..=150).contains(c)), "{seen:?}");
        assert_ne!(seed, substitution_seed("0123456789abcdef0123456789abcdee"));
    }

    #[test]
    fn a_policy_and_its_marks_read_back_as_stored() {
        let policy = FailurePolicy {
            on_timeout: FailureAction::Substitute,
            on_illegal_move: FailureAction::Substitute,
            on_disconnect: FailureAction::Pause,
            max_substitutions: 7,
            pause: Duration::from_millis(1234),
            disconnect_after: Duration::from_millis(99),
        };
        assert_eq!(FailurePolicy::of_stored(&policy.to_stored()), Ok(policy));
        assert!(FailurePolicy::of_stored("timeout=SUBSTITUTE").is_err());
        let pause_illegal = policy
            .to_stored()
            .replace("illegal_move=SUBSTITUTE", "illegal_move=PAUSE");
        assert!(FailurePolicy::of_stored(&pause_illegal).is_err());
        let illegal = mark(FailureKind::IllegalMove, Some("OCCUPIED"));
        assert_eq!(illegal, "ILLEGAL_MOVE:OCCUPIED");
        assert_eq!(
            of_mark(&illegal),
            Some((FailureKind::IllegalMove, Some("OCCUPIED")))
        );
        assert_eq!(of_mark("TIMEOUT"), Some((FailureKind::Timeout, None)));
        assert_eq!(of_mark("DISCONNECT"), Some((FailureKind::Disconnect, None)));
        for bad in [
            "",
            "LATE",
            "TIMEOUT:X",
            "ILLEGAL_MOVE",
            "ILLEGAL_MOVE:bad reason",
        ] {
            assert_eq!(of_mark(bad), None, "{bad}");
        }
    }

    #[test]
    fn bounds_are_checked() {
        assert!(FailurePolicy::default().check().is_ok());
        let pause_illegal = FailurePolicy {
            on_illegal_move: FailureAction::Pause,
            ..FailurePolicy::default()
        };
        assert!(pause_illegal.check().is_err());
        let no_cap = FailurePolicy {
            max_substitutions: 0,
            ..FailurePolicy::default()
        };
        assert!(no_cap.check().is_err());
        let no_pause = FailurePolicy {
            pause: Duration::ZERO,
            ..FailurePolicy::default()
        };
        assert!(no_pause.check().is_err());
    }
}
