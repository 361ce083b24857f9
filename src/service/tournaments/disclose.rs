//! What any reader of a tournament may see, decided once for every
//! transport (gRPC and the HTTP JSON render it; neither decides): the
//! tournament's seeds as commitments until they are public
//! ([`Doc::seeds_public`]), each scheduled game's state in one summary.
//! docs/TOURNAMENTS.md, "Seeds".

use super::record::{Doc, GameDoc, PairingStatus};

/// A seed the tournament supplies: its commitment always, itself once the
/// tournament's seeds are public.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShownSeed {
    /// SHA-256 of the seed, 64 lower-case hex digits.
    pub commitment: String,
    /// The seed, 64 lower-case hex digits, once public.
    pub seed: Option<String>,
}

/// The tournament's own seeds as a reader may see them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShownSeeds {
    /// Each opening's seed (`None`: an opening without one).
    pub openings: Vec<Option<ShownSeed>>,
    /// The `setup_seed_base`, once public.
    pub setup_seed_base: Option<u64>,
    /// Whether the games' seeds derive from a `setup_seed_base`.
    pub setup_seeded: bool,
}

/// Where a scheduled game is, as a reader sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GameStatus {
    /// Not created yet.
    Pending,
    /// Being played.
    InProgress,
    /// Over, and counted.
    Finished,
    /// A Swiss bye.
    Bye,
    /// Not played (cancelled, or the SPRT decided first).
    Skipped,
}

impl GameStatus {
    /// The JSON name.
    pub fn name(self) -> &'static str {
        match self {
            GameStatus::Pending => "pending",
            GameStatus::InProgress => "in_progress",
            GameStatus::Finished => "finished",
            GameStatus::Bye => "bye",
            GameStatus::Skipped => "skipped",
        }
    }
}

/// One scheduled game as a reader sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ShownGame {
    /// Where it is.
    pub status: GameStatus,
    /// The game id, once created.
    pub game_id: Option<String>,
    /// Each seat's points, once over (a bye: its one entrant's point).
    pub points: Vec<f64>,
    /// The winning seats (0-based), once over.
    pub winners: Vec<usize>,
    /// Why it ended (`BYE` for a bye).
    pub reason: Option<String>,
    /// Turns played, once over.
    pub ply: u32,
    /// SHA-256 of the seed the tournament supplies to it (hex): the game's
    /// own commitment; `None` when the game draws its own.
    pub seed_commitment: Option<String>,
}

/// SHA-256 of a seed, as lower-case hex.
pub fn commitment_hex(seed: &[u8; 32]) -> String {
    use sha2::Digest as _;
    crate::games::hex(&sha2::Sha256::digest(seed))
}

impl Doc {
    /// The tournament's seeds as any reader may see them now.
    pub fn shown_seeds(&self) -> ShownSeeds {
        let public = self.seeds_public();
        ShownSeeds {
            openings: self
                .openings
                .iter()
                .map(|o| {
                    let seed = o.seed.as_deref().and_then(crate::games::parse_seed)?;
                    Some(ShownSeed {
                        commitment: commitment_hex(&seed),
                        seed: public.then(|| crate::games::hex(&seed)),
                    })
                })
                .collect(),
            setup_seed_base: self.setup_seed_base.filter(|_| public),
            setup_seeded: self.setup_seed_base.is_some(),
        }
    }

    /// Scheduled game `g` as any reader may see it.
    pub fn shown_game(&self, g: &GameDoc) -> ShownGame {
        let mut shown = ShownGame {
            status: GameStatus::Pending,
            game_id: g.state.game_id().map(str::to_string),
            points: Vec::new(),
            winners: Vec::new(),
            reason: None,
            ply: 0,
            seed_commitment: self.supplied_seed(g).map(|s| commitment_hex(&s)),
        };
        shown.status = match &g.state {
            PairingStatus::Pending => GameStatus::Pending,
            PairingStatus::Playing { .. } => GameStatus::InProgress,
            PairingStatus::Done {
                winners,
                points,
                reason,
                ply,
                ..
            } => {
                shown.points = points.clone();
                shown.winners = winners.clone();
                shown.reason = Some(reason.clone());
                shown.ply = *ply;
                GameStatus::Finished
            }
            PairingStatus::Bye => {
                shown.points = vec![1.0];
                shown.reason = Some("BYE".into());
                GameStatus::Bye
            }
            PairingStatus::Skipped { .. } => GameStatus::Skipped,
        };
        shown
    }

    /// Games counted so far: finished ones and byes.
    pub fn games_done(&self) -> usize {
        self.games
            .iter()
            .filter(|g| matches!(g.state, PairingStatus::Done { .. } | PairingStatus::Bye))
            .count()
    }
}
