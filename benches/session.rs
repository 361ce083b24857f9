//! Criterion benchmark of the session layer's write path (results in
//! docs/BENCHMARKS.md): what the server does for `SubmitMove` between the
//! gRPC decoding and encoding, without the network.
//!
//! * `submit/punct-game`: one whole PÜNCT game per iteration, created in a
//!   [`SessionStore`] in memory and played to its end by
//!   [`Session::submit`] with moves in notation, as a client sends them;
//!   the throughput is in moves. The games come from a pool of 64 seeded
//!   uniform random games (about 67 plies each, like `punct-referee
//!   load`'s). Each iteration plays the pool in a new store, dropped
//!   untimed: the finished games stay in it while it runs, as the server
//!   keeps them, but memory is reused from one iteration to the next (the
//!   server's first touch of fresh pages is not measured here).
//!
//! Before measuring, the bench prints what a finished game keeps: the
//! bytes still allocated per game (and per ply) once the pool's 64 games
//! have been played in a store, counted by this binary's allocator.
//!
//! Run with `cargo bench --bench session`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use punct_referee::games::punct::referee::PunctMoveInput;
use punct_referee::games::punct::{Engine, NotatedMove, RuleOptions};
use punct_referee::games::{GameRules, MoveInput};
use punct_referee::service::sessions::{Limits, SessionStore};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

/// The system allocator, counting the bytes allocated and not yet freed.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call is passed on to the system allocator unchanged; only
// the count is added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        // SAFETY: the caller's contract, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// A complete uniform random game's moves in notation.
fn random_game(seed: u64) -> Vec<NotatedMove> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut game = Engine::new(RuleOptions::default());
    let mut notations = Vec::new();
    while !game.is_over() {
        let moves = game.legal_moves();
        let played = game
            .play(moves[rng.random_range(0..moves.len())])
            .expect("a generated move is legal");
        notations.push(played.notation);
    }
    notations
}

/// Creates a game and plays `moves` to the end, each seat with its token.
async fn play(store: &SessionStore, moves: &[NotatedMove]) {
    let (session, tokens) = store
        .create(GameRules::default(), BTreeMap::new())
        .await
        .expect("the store has room");
    let tokens: Vec<String> = tokens.iter().map(ToString::to_string).collect();
    for (ply, &notation) in moves.iter().enumerate() {
        let input = MoveInput::new(PunctMoveInput {
            structured: None,
            notation: Some(notation),
        });
        // PÜNCT alternates: white moves at even plies.
        let receipt = session
            .submit(
                session.role_of(&tokens[ply % 2], false).unwrap(),
                input,
                ply as u32,
                None,
            )
            .await
            .expect("a move of a replayed game is legal");
        assert_eq!(receipt.report.ply, ply as u32 + 1);
    }
}

/// Plays every game of `pool` in `store`, one after the other.
fn play_pool(runtime: &tokio::runtime::Runtime, store: &SessionStore, pool: &[Vec<NotatedMove>]) {
    runtime.block_on(async {
        for moves in pool {
            play(store, moves).await;
        }
    });
}

fn submit(c: &mut Criterion) {
    let pool: Vec<Vec<NotatedMove>> = (1..=64).map(random_game).collect();
    let plies: usize = pool.iter().map(Vec::len).sum();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    // What the finished games keep: the bytes still allocated once they are
    // played, less those of an empty store.
    let store = SessionStore::new(Limits::default());
    let before = LIVE.load(Ordering::Relaxed);
    play_pool(&runtime, &store, &pool);
    let kept = LIVE.load(Ordering::Relaxed) - before;
    eprintln!(
        "{} finished games of {:.1} plies on average keep {} bytes each ({:.0} per ply)",
        pool.len(),
        plies as f64 / pool.len() as f64,
        kept / pool.len() as isize,
        kept as f64 / plies as f64
    );
    drop(store);
    let mut group = c.benchmark_group("submit");
    group
        .throughput(Throughput::Elements(plies as u64))
        .measurement_time(Duration::from_secs(10));
    group.bench_function("punct-game", |b| {
        b.iter_batched(
            || SessionStore::new(Limits::default()),
            |store| {
                play_pool(&runtime, &store, &pool);
                store
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

criterion_group!(benches, submit);
criterion_main!(benches);
