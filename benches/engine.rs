//! Criterion benchmarks of the PÜNCT engine (results in docs/BENCHMARKS.md).
//!
//! * `movegen`: full legal-move generation (`legal_moves_into` into a reused
//!   Vec) at the start and after 20 and 40 seeded uniform random plies;
//! * `play`: `Game::play` (validate + apply + outcome) of one move on a
//!   cloned game, the clone excluded (`iter_batched`); `clone` measures the
//!   clone alone;
//! * `games`: complete random games (uniform over the legal moves), one
//!   element per game, so the throughput is games per second on one core;
//! * `perft`: perft depth 2 from the start;
//! * `eval`: the greedy bot's work per move: `connection_distance` of one
//!   colour, and `rank_moves` (every legal move scored one ply ahead) at the
//!   start and after 20 random plies.
//!
//! Run with `cargo bench --bench engine`. Positions are found by a seed search
//! that is deterministic, so every run measures the same positions.

use std::hint::black_box;
use std::time::Duration;

use criterion::{
    BatchSize, BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group, criterion_main,
};
use punct_referee::games::punct::{Colour, Game, Move, RuleOptions, Variant, eval};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

const VARIANTS: [Variant; 2] = [Variant::Standard, Variant::Basic];

/// Plays `plies` uniform random legal moves with `seed`; `None` if the game
/// ended before or on the last of them.
fn random_plies(options: RuleOptions, seed: u64, plies: u32) -> Option<Game> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut game = Game::new(options);
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
fn running_after(variant: Variant, plies: u32) -> (u64, Game) {
    (1u64..)
        .find_map(|seed| random_plies(RuleOptions::of(variant), seed, plies).map(|g| (seed, g)))
        .expect("some seed keeps the game running")
}

/// A complete uniform random game; returns its length in plies.
fn random_game(options: RuleOptions, seed: u64) -> u32 {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut game = Game::new(options);
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
        let game = Game::new(RuleOptions::of(variant));
        eprintln!("perft {variant} depth 2: {:?}", game.perft(2));
        group.bench_function(BenchmarkId::new(variant.name(), "depth2"), |b| {
            b.iter(|| black_box(&game).perft(2))
        });
    }
    group.finish();
}

fn evaluation(c: &mut Criterion) {
    let mut group = c.benchmark_group("eval");
    let start = Game::new(RuleOptions::default());
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

criterion_group!(benches, movegen, play, games, perft, evaluation);
criterion_main!(benches);
