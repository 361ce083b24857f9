//! Criterion benchmarks of the PÜNCT engine (results in docs/BENCHMARKS.md).
//!
//! * `movegen`: full legal-move generation (`legal_moves_into` into a reused
//!   Vec) at the start and after 20 and 40 seeded uniform random plies;
//! * `play`: `Engine::play` (validate + apply + outcome) of one move on a
//!   cloned game, the clone excluded (`iter_batched`); `clone` measures the
//!   clone alone;
//! * `games`: complete random games (uniform over the legal moves), one
//!   element per game, so the throughput is games per second on one core;
//! * `perft`: perft depth 2 from the start;
//! * `eval`: the greedy bot's work per move: `connection_distance` of one
//!   colour, and `rank_moves` (every legal move scored one ply ahead) at the
//!   start and after 20 random plies;
//! * `dots`: the Dots engine (`games::dots`) on the default 39 × 32 field
//!   with the cross: `placement/uniform-random-full-game` plays one whole
//!   game of placements in a seeded random order of the cells (a cell no
//!   longer playable is refused, as a client's move would be), so the time
//!   per placement is the iteration time over the placements made (printed
//!   when the bench starts); `large-enclosure` is one move closing a ring
//!   an area of 1110 cells; `legal` lists the legal moves into a reused Vec at
//!   the start and after 600 random placements.
//!
//! Run with `cargo bench --bench engine`. Positions are found by a seed search
//! that is deterministic, so every run measures the same positions.
#![allow(
    unreachable_pub,
    reason = "helpers are `pub` for the modules of this benchmark binary, which is all that can reach them"
)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{
    BatchSize, BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group, criterion_main,
};
use punct_referee::games::punct::{Colour, Engine, Move, RuleOptions, Variant, eval};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

const VARIANTS: [Variant; 2] = [Variant::Standard, Variant::Basic];

/// Plays `plies` uniform random legal moves with `seed`; `None` if the game
/// ended before or on the last of them.
fn random_plies(options: RuleOptions, seed: u64, plies: u32) -> Option<Engine> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut game = Engine::new(options);
    for _ in 0..plies {
        let moves = game.legal_moves();
        if moves.is_empty() {
            return None;
        }
        game.play(moves[rng.random_range(0..moves.len())]).ok()?;
    }
    (!game.is_over()).then_some(game)
}

/// The first seed (from 1) whose random game is still running after `plies`.
fn running_after(variant: Variant, plies: u32) -> (u64, Engine) {
    (1u64..)
        .find_map(|seed| random_plies(RuleOptions::of(variant), seed, plies).map(|g| (seed, g)))
        .expect("some seed keeps the game running")
}

/// A complete uniform random game; returns its length in plies.
fn random_game(options: RuleOptions, seed: u64) -> u32 {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut game = Engine::new(options);
    while !game.is_over() {
        let moves = game.legal_moves();
        if moves.is_empty() {
            break;
        }
        let _ = game.play(moves[rng.random_range(0..moves.len())]);
    }
    game.position().ply()
}

fn movegen(c: &mut Criterion) {
    let mut group = c.benchmark_group("movegen");
    let mut buf: Vec<Move> = Vec::with_capacity(8192);
    for variant in VARIANTS {
        for plies in [0u32, 20, 40] {
            let (seed, game) = running_after(variant, plies);
            let pos = *game.position();
            buf.clear();
            pos.legal_moves_into(variant, &mut buf);
            let shifts = buf
                .iter()
                .filter(|m| matches!(m, Move::Shift { .. }))
                .count();
            let on_board = pos.pieces_on_board().count();
            eprintln!(
                "movegen {variant} ply {plies}: seed {seed}, {on_board} pieces on the board, \
                 {} legal moves ({shifts} moves of pieces)",
                buf.len()
            );
            group.throughput(Throughput::Elements(buf.len() as u64));
            group.bench_with_input(
                BenchmarkId::new(variant.name(), format!("ply{plies}")),
                &pos,
                |b, pos| {
                    b.iter(|| {
                        buf.clear();
                        black_box(pos).legal_moves_into(variant, &mut buf);
                        black_box(buf.len())
                    })
                },
            );
        }
    }
    group.finish();
}

fn play(c: &mut Criterion) {
    let mut group = c.benchmark_group("play");
    for variant in VARIANTS {
        for plies in [20u32, 40] {
            let (seed, game) = running_after(variant, plies);
            let moves = game.legal_moves();
            let mut rng = StdRng::seed_from_u64(seed ^ 0xB);
            let place = moves
                .iter()
                .copied()
                .filter(|m| matches!(m, Move::Place { .. }))
                .collect::<Vec<_>>();
            let shift = moves
                .iter()
                .copied()
                .filter(|m| matches!(m, Move::Shift { .. }))
                .collect::<Vec<_>>();
            for (kind, list) in [("place", place), ("shift", shift)] {
                if list.is_empty() {
                    eprintln!("play {variant} ply {plies}: no {kind} move");
                    continue;
                }
                let mv = list[rng.random_range(0..list.len())];
                eprintln!(
                    "play {variant} ply {plies} {kind}: {}",
                    game.position().notate(mv).expect("legal")
                );
                group.bench_function(
                    BenchmarkId::new(variant.name(), format!("ply{plies}-{kind}")),
                    |b| {
                        b.iter_batched(
                            || game.clone(),
                            |mut g| {
                                let played = g.play(black_box(mv));
                                (g, played)
                            },
                            BatchSize::SmallInput,
                        )
                    },
                );
            }
        }
    }
    group.finish();

    let mut group = c.benchmark_group("clone");
    for variant in VARIANTS {
        let (_, game) = running_after(variant, 40);
        group.bench_function(BenchmarkId::new(variant.name(), "ply40"), |b| {
            b.iter(|| black_box(&game).clone())
        });
    }
    group.finish();
}

fn games(c: &mut Criterion) {
    let mut group = c.benchmark_group("games");
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(30);
    group.throughput(Throughput::Elements(1));
    for variant in VARIANTS {
        let options = RuleOptions::of(variant);
        let mut seed = 0u64;
        group.bench_function(BenchmarkId::new(variant.name(), "uniform-random"), |b| {
            b.iter(|| {
                seed += 1;
                black_box(random_game(options, seed))
            })
        });
    }
    group.finish();
}

fn perft(c: &mut Criterion) {
    let mut group = c.benchmark_group("perft");
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(5));
    for variant in VARIANTS {
        let game = Engine::new(RuleOptions::of(variant));
        eprintln!("perft {variant} depth 2: {:?}", game.perft(2));
        group.bench_function(BenchmarkId::new(variant.name(), "depth2"), |b| {
            b.iter(|| black_box(&game).perft(2))
        });
    }
    group.finish();
}

fn evaluation(c: &mut Criterion) {
    let mut group = c.benchmark_group("eval");
    let start = Engine::new(RuleOptions::default());
    let (_, mid) = running_after(Variant::Standard, 20);
    for (name, game) in [("start", &start), ("after20", &mid)] {
        let pos = *game.position();
        group.bench_function(BenchmarkId::new("connection_distance", name), |b| {
            b.iter(|| eval::connection_distance(black_box(&pos), Colour::White))
        });
        eprintln!(
            "eval {name}: {} legal moves",
            pos.legal_moves(Variant::Standard).len()
        );
        group.bench_function(BenchmarkId::new("rank_moves", name), |b| {
            b.iter(|| eval::rank_moves(black_box(&pos), Variant::Standard, 1))
        });
    }
    group.finish();
}

criterion_group!(
    benches, movegen, play, games, perft, evaluation, dots, punto
);
criterion_main!(benches);

mod dots_positions {
    //! The Dots positions the `dots` group measures.

    use punct_referee::games::dots::{Engine, Move, Point, RuleOptions};
    use rand::SeedableRng;
    use rand::rngs::StdRng;
    use rand::seq::SliceRandom;

    /// Every cell of the default field, in a random order drawn from `seed`.
    pub fn cell_order(seed: u64) -> Vec<Move> {
        let o = RuleOptions::default();
        let mut cells: Vec<Move> = (1..=u16::from(o.height()))
            .flat_map(|y| (1..=u16::from(o.width())).map(move |x| Move::Place(Point::new(x, y))))
            .collect();
        cells.shuffle(&mut StdRng::seed_from_u64(seed));
        cells
    }

    /// Plays `order` to the end of the game; how many placements were made.
    pub fn play_out(game: &mut Engine, order: &[Move]) -> u32 {
        let mut placed = 0;
        for &mv in order {
            if game.is_over() {
                break;
            }
            if game.play(mv).is_ok() {
                placed += 1;
            }
        }
        placed
    }

    /// Red's ring around columns 3..=37 and rows 3..=30, one dot short,
    /// with Blue's cross dots and a line of Blue dots inside and Blue's
    /// other dots on the border with gaps: the game and Red's closing move.
    pub fn ring_one_short() -> (Engine, Move) {
        let o = RuleOptions::default();
        let (w, h) = (u16::from(o.width()), u16::from(o.height()));
        let mut ring = Vec::new();
        for x in 2..w {
            ring.push(Point::new(x, 2));
            ring.push(Point::new(x, h - 1));
        }
        for y in 3..h - 1 {
            ring.push(Point::new(2, y));
            ring.push(Point::new(w - 1, y));
        }
        let mut border = Vec::new();
        for x in 1..=w {
            border.push(Point::new(x, 1));
            border.push(Point::new(x, h));
        }
        for y in 2..h {
            border.push(Point::new(1, y));
            border.push(Point::new(w, y));
        }
        // Every fifth border cell stays empty, so Blue closes nothing.
        // The rest of Blue's moves: a line inside the ring.
        let blue: Vec<Point> = border
            .into_iter()
            .enumerate()
            .filter(|(i, _)| i % 5 != 4)
            .map(|(_, p)| p)
            .chain((5..w - 4).map(|x| Point::new(x, 10)))
            .collect();
        let closing = ring.pop().map_or(Move::Ground, Move::Place);
        let mut game = Engine::new(o, None).expect("default options");
        assert!(
            blue.len() >= ring.len(),
            "Blue has a move for each ring dot"
        );
        for (red, blue) in ring.iter().zip(&blue) {
            game.play(Move::Place(*red)).expect("ring dot");
            game.play(Move::Place(*blue)).expect("border dot");
        }
        (game, closing)
    }
}

fn dots(c: &mut Criterion) {
    use punct_referee::games::dots::{Engine, Move, RuleOptions};
    let mut group = c.benchmark_group("dots");
    let orders: Vec<Vec<Move>> = (1..=32).map(dots_positions::cell_order).collect();
    let fresh = Engine::new(RuleOptions::default(), None).expect("default options");
    let placed: u32 = orders
        .iter()
        .map(|order| dots_positions::play_out(&mut fresh.clone(), order))
        .sum();
    eprintln!(
        "dots: {:.1} placements per uniform random full 39x32 game (32 seeds)",
        f64::from(placed) / orders.len() as f64
    );
    group.sample_size(30);
    group.throughput(Throughput::Elements(1));
    let mut next = 0;
    group.bench_function("placement/uniform-random-full-game", |b| {
        b.iter_batched(
            || {
                next = (next + 1) % orders.len();
                (fresh.clone(), &orders[next])
            },
            |(mut game, order)| black_box(dots_positions::play_out(&mut game, order)),
            BatchSize::SmallInput,
        )
    });
    group.sample_size(100);
    group.throughput(Throughput::Elements(1));
    let (ring, closing) = dots_positions::ring_one_short();
    let mut check = ring.clone();
    let played = check.play(closing).expect("closing move");
    eprintln!(
        "dots: the closing move takes {} area(s); Red's score {}",
        played.placement.captures,
        check.scores()[0]
    );
    group.bench_function("large-enclosure", |b| {
        b.iter_batched(
            || ring.clone(),
            |mut game| black_box(game.play(closing)),
            BatchSize::SmallInput,
        )
    });
    let mut buf: Vec<Move> = Vec::with_capacity(4096);
    let mut later = fresh.clone();
    for &mv in orders[0].iter().take(600) {
        let _ = later.play(mv);
    }
    for (name, game) in [("legal/start", &fresh), ("legal/after-600", &later)] {
        group.bench_function(name, |b| {
            b.iter(|| {
                game.legal_moves_into(&mut buf);
                black_box(buf.len())
            })
        });
    }
    group.finish();
}

/// Punto positions for the `punto` group: seeded random play through the
/// engine `punto::Engine` (`docs/rules/punto.md`).
mod punto_positions {
    use punct_referee::games::punto::{Engine, RuleOptions};

    /// A small deterministic generator (the engine has no RNG of its own).
    pub struct Pick(pub u64);

    impl Pick {
        pub fn below(&mut self, n: usize) -> usize {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((self.0 >> 33) % n as u64) as usize
        }
    }

    /// The seed of match `n`.
    pub fn seed(n: u64) -> [u8; 32] {
        std::array::from_fn(|i| (n as u8).wrapping_mul(31).wrapping_add(i as u8))
    }

    /// One random legal placement; false once the match is over.
    pub fn step(m: &mut Engine, pick: &mut Pick) -> bool {
        let cells = m.legal_cells();
        let Some(&cell) = cells.as_slice().get(pick.below(cells.len().max(1))) else {
            return false;
        };
        m.play(cell).is_ok()
    }

    /// A whole random match: the placements it took.
    pub fn full_match(options: RuleOptions, n: u64) -> u32 {
        let mut m = Engine::new(options, &seed(n));
        let mut pick = Pick(n);
        while step(&mut m, &mut pick) {}
        m.ply()
    }

    /// A match `plies` placements into round 1 (fewer if the round ended).
    pub fn mid_round(options: RuleOptions, n: u64, plies: u32) -> Engine {
        let mut m = Engine::new(options, &seed(n));
        let mut pick = Pick(n);
        while m.ply() < plies && m.round().number() == 1 && step(&mut m, &mut pick) {}
        m
    }
}

fn punto(c: &mut Criterion) {
    use punct_referee::games::punto::{Engine, RuleOptions};
    let configurations = [
        (
            "2-players",
            RuleOptions::new(2, false, 2, 0, &[]).expect("options"),
        ),
        (
            "3-players",
            RuleOptions::new(3, false, 2, 0, &[]).expect("options"),
        ),
        (
            "4-players",
            RuleOptions::new(4, false, 2, 0, &[]).expect("options"),
        ),
        (
            "teams",
            RuleOptions::new(4, true, 2, 0, &[]).expect("options"),
        ),
    ];
    let mut group = c.benchmark_group("punto");
    // One move mid-round: list the legal cells, play one (the row check is
    // part of the placement); the clone of the position is not timed.
    for (name, options) in configurations {
        let positions: Vec<Engine> = (1..=16)
            .map(|n| punto_positions::mid_round(options, n, 14))
            .collect();
        let cells: usize = positions.iter().map(|m| m.legal_cells().len()).sum();
        eprintln!(
            "punto {name}: {:.1} legal cells on average 14 plies into round 1 (16 seeds)",
            cells as f64 / positions.len() as f64
        );
        let mut next = 0;
        group.bench_function(format!("move/{name}"), |b| {
            // The routine works on the match in place (`iter_batched_ref`):
            // moving a 3 KB `punto::Engine` in and out of criterion's batch by value
            // would time two copies of it, not the move. Its drop is not
            // timed either.
            b.iter_batched_ref(
                || {
                    next = (next + 1) % positions.len();
                    positions[next].clone()
                },
                |m| {
                    let cells = m.legal_cells();
                    let cell = cells.as_slice()[cells.len() / 2];
                    black_box(m.play(cell).is_ok())
                },
                BatchSize::SmallInput,
            )
        });
    }
    // The whole deal of round 1: the key and every deck (and, with 3
    // players, the neutral deal), as a new match does it.
    for (name, options) in configurations {
        let seed = punto_positions::seed(7);
        group.bench_function(format!("deal/{name}"), |b| {
            b.iter(|| black_box(Engine::new(options, black_box(&seed))))
        });
    }
    // Random full matches (to 2 round wins), from the deal to the end.
    group.sample_size(20);
    group.throughput(Throughput::Elements(1));
    for (name, options) in configurations {
        let plies: u32 = (1..=16)
            .map(|n| punto_positions::full_match(options, n))
            .sum();
        eprintln!(
            "punto {name}: {:.1} placements per random match (16 seeds)",
            f64::from(plies) / 16.0
        );
        let mut n = 0;
        group.bench_function(format!("match/{name}"), |b| {
            b.iter(|| {
                n += 1;
                black_box(punto_positions::full_match(options, n))
            })
        });
    }
    group.finish();
}
