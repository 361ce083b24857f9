//! Stateless adjudication: is a move legal after a history, and what would
//! it do? No session is created.

use super::{SessionError, SessionStore};
use crate::games::{self, Catalog, GameRules, MoveError, MoveInput, MoveReport, Seat, Setup};

/// Where a stateless adjudication starts from.
#[derive(Debug, Clone)]
pub enum History {
    /// A game record text.
    Record(String),
    /// Rules and moves (and the seed, for a seeded game).
    Moves(GameRules, Option<[u8; 32]>, Vec<MoveInput>),
}

/// The answer of [`validate_move`].
#[derive(Debug, Clone)]
pub struct Adjudication {
    /// The seat to move after the history (`None` once it is over).
    pub seat: Option<Seat>,
    /// The move as it would be played, or why it cannot be.
    pub result: Result<MoveReport, MoveError>,
}

/// Stateless adjudication: is `mv` legal after `history`, and what would it
/// do? An illegal candidate is an answer (in `result`); a bad history is an
/// error. No session is created. Records are read with the games of this
/// build ([`SessionStore::validate_move`] uses the store's catalog).
pub fn validate_move(history: History, mv: &MoveInput) -> Result<Adjudication, SessionError> {
    validate_move_in(&crate::service::grpc::games::catalog(), history, mv)
}

/// [`validate_move`] with the games of `catalog`. A record of an unfinished
/// seeded game is refused (`SEED_NOT_REVEALED`): replaying it would need its
/// secret seed.
pub(super) fn validate_move_in(
    catalog: &Catalog,
    history: History,
    mv: &MoveInput,
) -> Result<Adjudication, SessionError> {
    let replayed = match history {
        History::Record(text) => catalog.import(&text, None).map_err(SessionError::Record)?,
        History::Moves(rules, seed, moves) => {
            let setup = setup_for(&rules, seed, "moves.seed")?;
            games::replay_moves(&rules, setup, &moves).map_err(|(i, e)| {
                SessionError::InvalidArgument {
                    field: "moves",
                    description: format!("move {} cannot be played: {e}", i + 1),
                }
            })?
        }
    };
    let mut game = replayed.game;
    let seat = game.to_move();
    let result = match game.play(mv) {
        Err(MoveError::Malformed { field, description }) => {
            return Err(SessionError::InvalidArgument { field, description });
        }
        other => other,
    };
    Ok(Adjudication { seat, result })
}

/// The setup of a replay of `rules` from a given seed (stateless
/// adjudication): a seeded game needs its seed, an unseeded one takes none.
pub(super) fn setup_for(
    rules: &GameRules,
    seed: Option<[u8; 32]>,
    field: &'static str,
) -> Result<Option<Setup>, SessionError> {
    match (rules.rules().seeded(), seed) {
        (true, Some(seed)) => Ok(Some(Setup {
            seed,
            supplied: true,
        })),
        (true, None) => Err(SessionError::InvalidArgument {
            field,
            description: format!(
                "{} is set up from a seed: give it (64 hex digits)",
                rules.game_name()
            ),
        }),
        (false, Some(_)) => Err(SessionError::InvalidArgument {
            field,
            description: format!("{} has no random setup: give no seed", rules.game_name()),
        }),
        (false, None) => Ok(None),
    }
}

impl SessionStore {
    /// Stateless adjudication with the games this store serves (see
    /// [`validate_move`]).
    pub fn validate_move(
        &self,
        history: History,
        mv: &MoveInput,
    ) -> Result<Adjudication, SessionError> {
        validate_move_in(&self.catalog, history, mv)
    }
}
