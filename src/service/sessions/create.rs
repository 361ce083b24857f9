//! Creating games: new, seeded, timed or imported; stored before their
//! tokens are handed out, under the session limit.

use super::policy::{FailurePolicy, POLICY_LABEL};
use super::session::{Receipts, SessionInit};
use super::{
    ClockMode, GameId, MAX_LABEL_KEY, MAX_LABEL_VALUE, MAX_LABELS, Session, SessionError,
    SessionStore, TimeControl, Token,
};
use crate::games::lazy::LazyGame;
use crate::games::{GameRules, Replayed, SeatSet, Setup};
use crate::service::storage::{self, ClockRow, GameRow, MoveRow, Write};
use crate::service::telemetry;
use rand::TryRng as _;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// A place under the session limit, given back on drop unless kept.
pub(super) struct Reservation<'a>(Option<&'a AtomicUsize>);

impl Reservation<'_> {
    fn keep(mut self) {
        self.0 = None;
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        if let Some(count) = self.0 {
            count.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// The setup of a new game of `rules`: `None` for a game without a random
/// setup (a seed given for one is refused), else the creator's seed, where
/// the game allows one, or 32 bytes from the operating system's
/// cryptographic RNG.
pub(super) fn new_setup(
    rules: &GameRules,
    seed: Option<[u8; 32]>,
) -> Result<Option<Setup>, SessionError> {
    let r = rules.rules();
    match seed {
        Some(_) if !r.seeded() => Err(SessionError::InvalidArgument {
            field: "seed",
            description: format!("{} has no random setup: give no seed", rules.game_name()),
        }),
        Some(_) if !r.seed_may_be_supplied() => Err(SessionError::InvalidArgument {
            field: "seed",
            description: format!("{} draws its own seed: give none", rules.game_name()),
        }),
        Some(seed) => Ok(Some(Setup {
            seed,
            supplied: true,
        })),
        None if r.seeded() => {
            let mut seed = [0u8; 32];
            rand::rngs::SysRng
                .try_fill_bytes(&mut seed)
                .map_err(|e| SessionError::Unavailable(format!("no random seed: {e}")))?;
            Ok(Some(Setup {
                seed,
                supplied: false,
            }))
        }
        None => Ok(None),
    }
}

/// The stored form of a time control.
pub(super) fn clock_row(tc: TimeControl) -> ClockRow {
    let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    let first_move_ms = tc.first_move.map(ms);
    let row = clock_mode_row(tc, first_move_ms);
    match tc.lag {
        Some(lag) => ClockRow {
            lag_max_per_move_ms: u64::from(lag.max_per_move_ms),
            lag_quota_ms: u64::from(lag.quota_ms),
            ..row
        },
        None => row,
    }
}

/// The stored form of a time control's clock.
fn clock_mode_row(tc: TimeControl, first_move_ms: Option<u64>) -> ClockRow {
    let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    match tc.mode {
        ClockMode::Untimed => ClockRow {
            mode: "none",
            first_move_ms,
            ..ClockRow::default()
        },
        ClockMode::Fischer { initial, increment } => ClockRow {
            mode: "fischer",
            initial_ms: ms(initial),
            increment_ms: ms(increment),
            first_move_ms,
            ..ClockRow::default()
        },
        ClockMode::PerMove { per_move } => ClockRow {
            mode: "per_move",
            per_move_ms: ms(per_move),
            first_move_ms,
            ..ClockRow::default()
        },
    }
}

/// How a new game is seated: its seats' tokens, and what a seat's failure
/// to start or its abort means.
pub struct Seating<'a> {
    /// Makes seat `seat`'s token (0-based) from the new game's id.
    pub tokens: &'a (dyn Fn(&GameId, usize) -> Token + Sync),
    /// Whether a seat's abort and a missed first move are that seat's loss
    /// ([`Session::forfeits`]): a tournament's games.
    pub forfeits: bool,
    /// The game's failure policy (docs/POLICIES.md), stored with it.
    pub policy: FailurePolicy,
}

/// Checks labels as `CreateGame` does (count, keys, values, and that a
/// `spectator-delay` label is a delay).
pub fn check_labels(labels: &BTreeMap<String, String>) -> Result<(), SessionError> {
    let bad = |description: String| SessionError::InvalidArgument {
        field: "labels",
        description,
    };
    if labels.len() > MAX_LABELS {
        return Err(bad(format!("at most {MAX_LABELS} labels")));
    }
    for (k, v) in labels {
        let mut chars = k.chars();
        let key_ok = k.len() <= MAX_LABEL_KEY
            && chars.next().is_some_and(|c| c.is_ascii_alphabetic())
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !key_ok {
            return Err(bad(format!(
                "label key `{k}` must be 1-{MAX_LABEL_KEY} letters, digits, `_` or `-`, starting with a letter"
            )));
        }
        if v.len() > MAX_LABEL_VALUE || v.chars().any(char::is_control) || v.trim() != v {
            return Err(bad(format!(
                "label `{k}`: values are at most {MAX_LABEL_VALUE} bytes on one line, without surrounding spaces"
            )));
        }
    }
    if labels.contains_key(POLICY_LABEL) {
        return Err(bad(format!(
            "label `{POLICY_LABEL}` is reserved: a game's failure policy is `failure_policy`"
        )));
    }
    super::SpectatorDelay::check(labels)
}

impl SessionStore {
    /// Creates an untimed game; returns it and the seat tokens, in seat
    /// order.
    pub async fn create(
        &self,
        rules: GameRules,
        labels: BTreeMap<String, String>,
    ) -> Result<(Arc<Session>, Vec<Token>), SessionError> {
        self.create_timed(rules, labels, TimeControl::default(), None)
            .await
    }

    /// Creates a game with a time control; its clock (or first-move
    /// deadline) starts now, and a timer task ends the game when it runs out
    /// (call within a tokio runtime). A seeded game is set up from `seed`
    /// when the creator gives one (and the game allows it), else from a
    /// seed drawn here.
    pub async fn create_timed(
        &self,
        rules: GameRules,
        labels: BTreeMap<String, String>,
        time_control: TimeControl,
        seed: Option<[u8; 32]>,
    ) -> Result<(Arc<Session>, Vec<Token>), SessionError> {
        self.create_with_policy(rules, labels, time_control, seed, FailurePolicy::default())
            .await
    }

    /// [`SessionStore::create_timed`] under a failure policy, stored with
    /// the game (docs/POLICIES.md).
    pub async fn create_with_policy(
        &self,
        rules: GameRules,
        labels: BTreeMap<String, String>,
        time_control: TimeControl,
        seed: Option<[u8; 32]>,
        policy: FailurePolicy,
    ) -> Result<(Arc<Session>, Vec<Token>), SessionError> {
        let seating = Seating {
            tokens: &|_, _| Token::random(),
            forfeits: false,
            policy,
        };
        self.create_seated(rules, labels, time_control, seed, seating)
            .await
    }

    /// [`SessionStore::create_timed`] seated as `seating` says: how a
    /// tournament derives its seats' tokens from the server secret (so that
    /// it can hand them out again without storing them) and makes a seat's
    /// abort or missed first move its loss.
    pub async fn create_seated(
        &self,
        rules: GameRules,
        labels: BTreeMap<String, String>,
        time_control: TimeControl,
        seed: Option<[u8; 32]>,
        seating: Seating<'_>,
    ) -> Result<(Arc<Session>, Vec<Token>), SessionError> {
        check_labels(&labels)?;
        time_control.check()?;
        let setup = new_setup(&rules, seed)?;
        let replayed = Replayed {
            // Made at the first move: an idle game holds its rules and
            // setup, not a start position (`games::lazy`).
            game: Box::new(LazyGame::new(rules, setup)),
            moves: Vec::new(),
            tags: Vec::new(),
        };
        self.insert(replayed, labels, time_control, seating).await
    }

    /// Creates a game from a record, replayed and checked move by move. The
    /// record's free tags become labels; `labels` win over them.
    pub async fn import(
        &self,
        record: &str,
        labels: BTreeMap<String, String>,
    ) -> Result<(Arc<Session>, Vec<Token>), SessionError> {
        check_labels(&labels)?;
        let replayed = self
            .catalog
            .import(record, None)
            .map_err(SessionError::Record)?;
        let mut all: BTreeMap<String, String> = replayed.tags.iter().cloned().collect();
        all.extend(labels);
        check_labels(&all)?;
        let seating = Seating {
            tokens: &|_, _| Token::random(),
            forfeits: false,
            policy: FailurePolicy::default(),
        };
        self.insert(replayed, all, TimeControl::default(), seating)
            .await
    }

    /// Stores, then holds, a new session. The game is stored before its
    /// tokens are handed out; a storage failure creates nothing.
    pub(super) async fn insert(
        &self,
        replayed: Replayed,
        labels: BTreeMap<String, String>,
        time_control: TimeControl,
        seating: Seating<'_>,
    ) -> Result<(Arc<Session>, Vec<Token>), SessionError> {
        let reservation = self.reserve()?;
        let seats = replayed.game.seat_names().len();
        let id = GameId::random();
        let tokens: Vec<Token> = (0..seats).map(|seat| (seating.tokens)(&id, seat)).collect();
        let created_at = std::time::SystemTime::now();
        // The policy is stored as a reserved label of the row, never one
        // of the game's own labels (docs/POLICIES.md, "Restarts").
        let mut stored_labels = labels.clone();
        if !seating.policy.is_lose() {
            stored_labels.insert(POLICY_LABEL.to_string(), seating.policy.to_stored());
        }
        let write = Self::create_write(
            &id,
            &replayed,
            &stored_labels,
            &tokens,
            time_control,
            seating.forfeits,
            created_at,
        );
        drop(stored_labels);
        let session = Arc::new(Session::new(
            SessionInit {
                id,
                serial: self.serial.fetch_add(1, Ordering::SeqCst) + 1,
                labels,
                forfeits: seating.forfeits,
                token_hashes: tokens.iter().map(Token::hash).collect(),
                // Moved, not copied: a copy has room for one more move
                // (for deciding moves on), which an idle game would keep.
                game: replayed.game,
                history: &replayed.moves,
                time_control,
                created_at,
                clock: None,
                receipts: Receipts::new(),
                draw_offers: SeatSet::EMPTY,
                storage: self.storage.clone(),
                // A new game's lease is the first epoch.
                lease: Some(1),
                follower: false,
                archived: false,
                ended_ms: None,
                played_ms: &[],
            },
            &self.limits,
        ));
        // The write runs to its end even if the caller goes away, so what is
        // stored is also held.
        let storage = self.storage.clone();
        let stored = match tokio::runtime::Handle::try_current() {
            Ok(runtime) => runtime
                .spawn(storage.write(write))
                .await
                .unwrap_or_else(|e| Err(storage::StorageError::Unavailable(e.to_string()))),
            Err(_) => storage.write(write).await,
        };
        if let Err(e) = stored {
            tracing::warn!(error = %e, "game not created: storage failed");
            metrics::counter!(telemetry::STORAGE_FAILURES).increment(1);
            return Err(SessionError::Unavailable(e.to_string()));
        }
        reservation.keep();
        if !seating.policy.is_lose() {
            session.init_policy(seating.policy, Vec::new());
        }
        self.hold(session.clone());
        Ok((session, tokens))
    }

    /// Takes a place under the session limit (given back unless kept).
    pub(super) fn reserve(&self) -> Result<Reservation<'_>, SessionError> {
        let max = self.limits.max_sessions;
        if self.count.fetch_add(1, Ordering::SeqCst) >= max {
            self.count.fetch_sub(1, Ordering::SeqCst);
            return Err(SessionError::LimitReached {
                what: "sessions",
                max,
            });
        }
        Ok(Reservation(Some(&self.count)))
    }

    /// The storage row of a new game and the moves it was imported with.
    pub(super) fn create_write(
        id: &GameId,
        replayed: &Replayed,
        labels: &BTreeMap<String, String>,
        tokens: &[Token],
        time_control: TimeControl,
        forfeits: bool,
        created_at: std::time::SystemTime,
    ) -> Write {
        let rules = replayed.game.rules();
        let created_at_ms = storage::unix_ms(created_at);
        let game = GameRow {
            id: id.to_string(),
            game: rules.game_name().to_string(),
            variant: rules.variant_name().to_string(),
            options: replayed.game.rules_header(),
            seats: replayed
                .game
                .seat_names()
                .iter()
                .zip(tokens)
                .map(|(name, token)| storage::SeatRow {
                    name: (*name).to_string(),
                    token_sha256: token.hash().0,
                })
                .collect(),
            setup: replayed.game.setup(),
            clock: clock_row(time_control),
            labels: labels.clone(),
            forfeits,
            created_at_ms,
        };
        let moves = replayed
            .moves
            .iter()
            .map(|r| MoveRow {
                lag: storage::MoveLag::default(),
                game_id: id.to_string(),
                ply: r.ply,
                seat: r.seat,
                notation: r.detail.notation.clone(),
                request_id: None,
                clock_ms: 0,
                played_at_ms: created_at_ms,
                draw_offers: SeatSet::EMPTY,
                substituted: None,
            })
            .collect();
        let end = replayed.game.outcome().map(|v| storage::OutcomeRow {
            game_id: id.to_string(),
            status: "finished",
            winners: v.winners,
            scores: v.scores.clone(),
            reason: v.reason.to_string(),
            ply: replayed.game.ply(),
            at_ms: created_at_ms,
            failure_ending: None,
        });
        Write::Create(game, moves, end)
    }

    /// Puts a session in the map, starts its timer, logs and counts it
    /// (its moves so far were imported or recovered).
    pub(super) fn hold(&self, session: Arc<Session>) {
        // 128 random bits do not collide.
        self.sessions.insert(session.id().clone(), session.clone());
        session.start_timer();
        let view = session.view(false);
        let rules = view.rules;
        let finished = view.outcome.is_some();
        tracing::Span::current().record("game_id", session.id().as_str());
        tracing::info!(
            game_id = %session.id(),
            game = rules.game_name(),
            variant = rules.variant_name(),
            imported_moves = view.ply,
            finished,
            "game created"
        );
        metrics::counter!(
            telemetry::GAMES_CREATED,
            "game" => rules.game_name(),
            "variant" => rules.variant_name(),
        )
        .increment(1);
        metrics::gauge!(telemetry::SESSIONS_ACTIVE).increment(1.0);
        if !finished {
            metrics::gauge!(telemetry::GAMES_IN_PROGRESS).increment(1.0);
        }
    }
}
