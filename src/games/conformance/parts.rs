//! Small parts: the suite's RNG, random playthroughs, setups, viewers.

use super::*;

// --- Small parts -------------------------------------------------------------

/// SplitMix64: the suite's own small deterministic RNG.
pub(super) struct Rng(pub(super) u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// True one time in `n`.
    fn one_in(&mut self, n: u64) -> bool {
        self.next().is_multiple_of(n)
    }

    fn seed(&mut self) -> [u8; 32] {
        let mut seed = [0u8; 32];
        for chunk in seed.chunks_mut(8) {
            chunk.copy_from_slice(&self.next().to_le_bytes());
        }
        seed
    }
}

/// Up to `n` distinct items of `items`, in order.
pub(super) fn sample<'a, T>(items: &'a [T], n: usize, rng: &mut Rng) -> Vec<&'a T> {
    if items.len() <= n {
        return items.iter().collect();
    }
    let mut picked: Vec<usize> = Vec::with_capacity(n);
    while picked.len() < n {
        let i = rng.below(items.len());
        if !picked.contains(&i) {
            picked.push(i);
        }
    }
    picked.sort_unstable();
    picked.into_iter().map(|i| &items[i]).collect()
}

/// The random games every check of one run looks at: [`Bounds::games`]
/// played to the cap, and one more the referee ends early.
pub(super) fn playthroughs(subject: &Subject, rng_seed: u64) -> Vec<Playthrough> {
    let mut rng = Rng(rng_seed);
    (0..=subject.bounds.games)
        .map(|k| {
            let at = format!("{} (rng seed {rng_seed}, game {k})", subject.label);
            play_random(subject, &mut rng, at, k == subject.bounds.games)
        })
        .collect()
}

/// A random game: random legal moves (given as detail or as notation) up
/// to the cap, or, when `concluded`, to a random checked ply where a random
/// referee ending ends it.
pub(super) fn play_random(
    subject: &Subject,
    rng: &mut Rng,
    at: String,
    concluded: bool,
) -> Playthrough {
    let bounds = subject.bounds;
    let setup = draw_setup(subject, rng);
    let mut game = start(subject, setup);
    let stop = if concluded {
        rng.below(bounds.checked_plies.min(bounds.ply_cap) as usize + 1) as u32
    } else {
        bounds.ply_cap
    };
    let checked = bounds.checked_plies as usize;
    let (mut inputs, mut reports, mut kept) = (Vec::new(), Vec::new(), Vec::new());
    let mut legal = legal_moves_checked(&at, game.as_ref());
    let mut previous = Vec::new();
    while game.to_move().is_some() && game.ply() < stop {
        let pick = &legal[rng.below(legal.len())].detail;
        let input = if rng.one_in(2) {
            notation_input(subject, &at, &pick.notation)
        } else {
            pick.to_input()
        };
        reports.push(play_checked(&at, game.as_mut(), &input));
        inputs.push(input);
        let next = legal_moves_checked(&at, game.as_ref());
        previous = std::mem::replace(&mut legal, next);
        if kept.len() <= checked {
            kept.push(previous.clone());
        }
    }
    let ending = (concluded && game.to_move().is_some())
        .then(|| random_ending(rng, game.seat_names().len(), game.ply()));
    // Before the end: the position concluded, or the last one moved from.
    let before_end = match ending {
        Some(_) => legal.clone(),
        None => previous,
    };
    if kept.len() <= checked {
        kept.push(legal);
    }
    if let Some(ending) = ending {
        conclude_checked(&at, game.as_mut(), ending);
    }
    Playthrough {
        at,
        setup,
        inputs,
        reports,
        ending,
        game,
        legal: kept,
        before_end,
        sample_seed: rng.next(),
    }
}

pub(super) fn random_ending(rng: &mut Rng, seats: usize, ply: u32) -> RefereeAction {
    let endings: Vec<RefereeAction> = all_endings(seats)
        .into_iter()
        .filter(|e| *e != RefereeAction::Aborted || (ply as usize) < seats)
        .collect();
    endings[rng.below(endings.len())]
}

/// Every referee ending of a game of `seats` seats.
pub(super) fn all_endings(seats: usize) -> Vec<RefereeAction> {
    let mut endings = vec![RefereeAction::DrawAgreement, RefereeAction::Aborted];
    for loser in Seat::all(seats) {
        endings.push(RefereeAction::Resignation { loser });
        endings.push(RefereeAction::Timeout { loser });
        endings.push(RefereeAction::Abandoned { loser });
    }
    endings
}

pub(super) fn start(subject: &Subject, setup: Option<Setup>) -> Box<dyn Game> {
    subject.rules.rules().start(setup)
}

pub(super) fn draw_setup(subject: &Subject, rng: &mut Rng) -> Option<Setup> {
    subject.seeded.then(|| Setup {
        seed: rng.seed(),
        supplied: rng.one_in(2),
    })
}

pub(super) fn fixed_setup(subject: &Subject) -> Option<Setup> {
    subject.seeded.then_some(Setup {
        seed: [7; 32],
        supplied: true,
    })
}

pub(super) fn viewers(game: &dyn Game) -> Vec<Viewer> {
    let seats = Seat::all(game.seat_names().len()).map(Viewer::Seat);
    std::iter::once(Viewer::Spectator).chain(seats).collect()
}

pub(super) fn notations(moves: &[MoveReport]) -> Vec<String> {
    moves.iter().map(|m| m.detail.notation.clone()).collect()
}

pub(super) fn notation_input(subject: &Subject, at: &str, text: &str) -> MoveInput {
    (subject.notation)(text).unwrap_or_else(|| {
        fail(
            at,
            format!("the game's own notation `{text}` does not read"),
        )
    })
}

/// A move payload of no game.
#[derive(Debug)]
pub(super) struct ForeignMove;

pub(super) fn foreign_move() -> MoveInput {
    MoveInput::new(ForeignMove)
}

pub(super) fn sha256(bytes: &[u8]) -> [u8; 32] {
    sha2::Sha256::digest(bytes).into()
}

pub(super) fn contains_hex(text: &str, bytes: &[u8]) -> bool {
    text.to_ascii_lowercase().contains(&hex(bytes))
}

/// Another seed: every bit of `seed` flipped.
pub(super) fn flipped(seed: [u8; 32]) -> [u8; 32] {
    seed.map(|b| !b)
}
