//! `Play`, one seat's game over one bidirectional stream, through the real
//! server: a whole game over two streams; refusals carried as messages
//! with exactly SubmitMove's status; retries by request id answered from
//! the first result, over either path; a stream resumed from a ply after a
//! reconnect; and the property that a random mix of Play and unary moves
//! (with reconnects) makes the same game, record and answers as unary
//! moves alone.

use crate::common;

use common::*;
use proptest::prelude::*;
use proptest::test_runner::{RngSeed, TestCaseError, TestRunner};
use punct_referee::service::grpc::pb::punct::v1 as ppb;
use punct_referee::service::grpc::pb::referee::v1 as pb;
use punct_referee::service::grpc::play::play_status;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Code;

use pb::play_response::Item;

/// One Play stream of a test: its sending half and its answers.
struct Player {
    tx: mpsc::Sender<pb::PlayRequest>,
    rx: tonic::Streaming<pb::PlayResponse>,
}

/// Opens a Play stream for `token`'s seat of game `id`.
async fn open(
    client: &mut Client,
    id: &str,
    token: &str,
    from_ply: Option<u32>,
) -> Result<Player, tonic::Status> {
    let (tx, rx) = mpsc::channel(16);
    tx.send(pb::PlayRequest {
        kind: Some(pb::play_request::Kind::Start(pb::PlayStart {
            game_id: id.to_string(),
            token: token.to_string(),
            from_ply,
            answer_pings: false,
        })),
    })
    .await
    .expect("queued");
    let rx = within(10, client.play(ReceiverStream::new(rx)))
        .await?
        .into_inner();
    Ok(Player { tx, rx })
}

impl Player {
    /// The next message; the stream must not end.
    async fn next(&mut self) -> pb::PlayResponse {
        within(10, self.rx.message())
            .await
            .expect("a message, not an error")
            .expect("the stream goes on")
    }

    /// Sends a move.
    async fn play(&self, mv: pb::Move, expected_ply: u32, request_id: &str) {
        self.tx
            .send(pb::PlayRequest {
                kind: Some(pb::play_request::Kind::Move(pb::PlayMove {
                    r#move: Some(mv),
                    expected_ply,
                    request_id: request_id.to_string(),
                })),
            })
            .await
            .expect("the stream takes moves");
    }

    /// The messages up to and with the next answer to a move.
    async fn until_answer(&mut self) -> (Vec<pb::PlayResponse>, pb::PlayResponse) {
        let mut before = Vec::new();
        loop {
            let m = self.next().await;
            if matches!(m.item, Some(Item::Accepted(_) | Item::Refused(_))) {
                return (before, m);
            }
            before.push(m);
        }
    }
}

fn snapshot_ply(m: &pb::PlayResponse) -> u32 {
    match &m.item {
        Some(Item::Snapshot(g)) => g.ply,
        other => panic!("not a snapshot: {other:?}"),
    }
}

fn event_of(m: &pb::PlayResponse) -> &pb::GameEvent {
    match &m.item {
        Some(Item::Event(e)) => e,
        other => panic!("not an event: {other:?}"),
    }
}

fn accepted(m: pb::PlayResponse) -> pb::MoveAccepted {
    match m.item {
        Some(Item::Accepted(a)) => a,
        other => panic!("not accepted: {other:?}"),
    }
}

fn refused(m: pb::PlayResponse) -> pb::MoveRefused {
    match m.item {
        Some(Item::Refused(r)) => r,
        other => panic!("not refused: {other:?}"),
    }
}

/// The events' sequences in `messages` (presence flips skipped).
fn sequences(messages: &[pb::PlayResponse]) -> Vec<u64> {
    messages
        .iter()
        .filter_map(|m| match &m.item {
            Some(Item::Event(e)) => Some(e.sequence),
            Some(Item::Presence(_)) => None,
            other => panic!("unexpected {other:?}"),
        })
        .collect()
}

/// Both seats play the scripted game over their own streams: each sees the
/// snapshot, then every event of both seats in order, each answer right
/// after its move's event; the game's end ends both streams with OK, and
/// the record is the unary game's.
#[tokio::test]
async fn two_seats_play_a_whole_game_over_their_streams() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let t = create(&mut c, ppb::Variant::Standard).await;
    let mut white = open(&mut c, &t.id, &t.white, None).await.unwrap();
    let mut black = open(&mut c, &t.id, &t.black, None).await.unwrap();
    assert_eq!(snapshot_ply(&white.next().await), 0);
    assert_eq!(snapshot_ply(&black.next().await), 0);
    let mut seen = [Vec::new(), Vec::new()];
    for (ply, text) in CONNECTION_GAME.iter().enumerate() {
        let ply = ply as u32;
        let (mover, other) = if ply.is_multiple_of(2) {
            (&mut white, &mut black)
        } else {
            (&mut black, &mut white)
        };
        mover.play(notation(text), ply, &format!("m{ply}")).await;
        let (before, answer) = mover.until_answer().await;
        let answer = accepted(answer);
        assert_eq!(answer.request_id, format!("m{ply}"));
        let result = answer.result.unwrap();
        assert_eq!(result.ply, ply + 1);
        assert!(!result.replayed);
        // The answer follows the event of its move.
        assert_eq!(
            sequences(&before).last(),
            Some(&u64::from(ply + 1)),
            "{before:?}"
        );
        let m = (ply % 2) as usize;
        seen[m].extend(sequences(&before));
        // The other seat sees the move as an event with its clock.
        loop {
            let e = other.next().await;
            if let Some(Item::Presence(_)) = e.item {
                continue;
            }
            let e = event_of(&e);
            seen[1 - m].push(e.sequence);
            assert!(e.clock.is_some());
            if e.sequence == u64::from(ply + 1) {
                break;
            }
        }
    }
    // The game is over: both get the game-over event, then the end (OK).
    for player in [&mut white, &mut black] {
        let over = loop {
            let m = player.next().await;
            if !matches!(m.item, Some(Item::Presence(_))) {
                break m;
            }
        };
        let e = event_of(&over);
        assert!(matches!(e.kind, Some(pb::game_event::Kind::GameOver(_))));
        assert_eq!(e.sequence, CONNECTION_GAME.len() as u64 + 1);
        assert!(within(10, player.rx.message()).await.unwrap().is_none());
    }
    let all: Vec<u64> = (1..=CONNECTION_GAME.len() as u64).collect();
    assert_eq!(seen[0], all, "white saw every move once, in order");
    assert_eq!(seen[1], all, "black saw every move once, in order");
    let game = get(&mut c, &t.id).await;
    assert_eq!(game.status, pb::GameStatus::Finished as i32);
    server.stop().await.unwrap();
}

/// `google.rpc.ErrorInfo`, its metadata in key order.
#[derive(Clone, PartialEq, prost::Message)]
struct SortedErrorInfo {
    #[prost(string, tag = "1")]
    reason: String,
    #[prost(string, tag = "2")]
    domain: String,
    #[prost(btree_map = "string, string", tag = "3")]
    metadata: std::collections::BTreeMap<String, String>,
}

/// `status` with its ErrorInfo's metadata encoded in key order (a map's
/// order on the wire is not fixed), to compare two statuses.
fn sorted(mut status: pb::PlayStatus) -> pb::PlayStatus {
    use prost::Message as _;
    for detail in &mut status.details {
        if detail.type_url.ends_with("google.rpc.ErrorInfo") {
            let info = SortedErrorInfo::decode(detail.value.as_slice()).expect("ErrorInfo");
            detail.value = info.encode_to_vec();
        }
    }
    status
}

/// Every kind of refused move gets, as a message, exactly the status
/// SubmitMove fails with for the same move (code, message, details), and
/// the stream goes on: the next good move is played.
#[tokio::test]
async fn refusals_over_play_are_submit_moves_and_the_stream_survives_them() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let t = create(&mut c, ppb::Variant::Standard).await;
    submit(&mut c, &t, 0, notation(CONNECTION_GAME[0]))
        .await
        .unwrap();
    // Black is to move at ply 1; white's stream tries everything.
    let mut white = open(&mut c, &t.id, &t.white, None).await.unwrap();
    let mut black = open(&mut c, &t.id, &t.black, None).await.unwrap();
    white.next().await;
    black.next().await;
    let long_id = "r".repeat(200);
    let cases: Vec<(&Player, pb::Move, u32, &str, &str, Code)> = vec![
        // Not white's turn.
        (
            &white,
            notation(CONNECTION_GAME[1]),
            1,
            "",
            &t.white,
            Code::FailedPrecondition,
        ),
        // A stale ply.
        (
            &black,
            notation(CONNECTION_GAME[1]),
            0,
            "",
            &t.black,
            Code::Aborted,
        ),
        // A ply from the future.
        (
            &black,
            notation(CONNECTION_GAME[1]),
            7,
            "",
            &t.black,
            Code::Aborted,
        ),
        // An illegal move (the space is taken).
        (
            &black,
            notation(CONNECTION_GAME[0]),
            1,
            "",
            &t.black,
            Code::FailedPrecondition,
        ),
        // Garbled notation.
        (
            &black,
            notation("SE@Z99:??"),
            1,
            "",
            &t.black,
            Code::InvalidArgument,
        ),
        // No move at all.
        (
            &black,
            pb::Move::default(),
            1,
            "",
            &t.black,
            Code::InvalidArgument,
        ),
        // A request id too long.
        (
            &black,
            notation(CONNECTION_GAME[1]),
            1,
            &long_id,
            &t.black,
            Code::InvalidArgument,
        ),
    ];
    for (player, mv, expected_ply, request_id, token, code) in cases {
        let unary = c
            .submit_move(pb::SubmitMoveRequest {
                game_id: t.id.clone(),
                token: token.to_string(),
                r#move: Some(mv.clone()),
                expected_ply,
                request_id: request_id.to_string(),
            })
            .await
            .expect_err("SubmitMove refuses it");
        assert_eq!(unary.code(), code, "{unary:?}");
        player.play(mv, expected_ply, request_id).await;
    }
    // Read the answers in the order sent, stream by stream.
    let mut answers = Vec::new();
    answers.push(refused(white.until_answer().await.1));
    for _ in 0..6 {
        answers.push(refused(black.until_answer().await.1));
    }
    // The same again, by SubmitMove, for comparison (nothing changed).
    let replay: Vec<(pb::Move, u32, &str, &str)> = vec![
        (notation(CONNECTION_GAME[1]), 1, "", &t.white),
        (notation(CONNECTION_GAME[1]), 0, "", &t.black),
        (notation(CONNECTION_GAME[1]), 7, "", &t.black),
        (notation(CONNECTION_GAME[0]), 1, "", &t.black),
        (notation("SE@Z99:??"), 1, "", &t.black),
        (pb::Move::default(), 1, "", &t.black),
        (notation(CONNECTION_GAME[1]), 1, &long_id, &t.black),
    ];
    for ((mv, expected_ply, request_id, token), answer) in replay.into_iter().zip(answers) {
        let unary = c
            .submit_move(pb::SubmitMoveRequest {
                game_id: t.id.clone(),
                token: token.to_string(),
                r#move: Some(mv),
                expected_ply,
                request_id: request_id.to_string(),
            })
            .await
            .unwrap_err();
        assert_eq!(answer.expected_ply, expected_ply);
        assert_eq!(answer.request_id, request_id);
        let status = answer.status.unwrap();
        assert_eq!(
            sorted(status.clone()),
            sorted(play_status(&unary)),
            "the same code, message and details"
        );
        assert!(
            !status.details.is_empty(),
            "machine-readable details: {status:?}"
        );
    }
    assert_eq!(get(&mut c, &t.id).await.ply, 1, "nothing was applied");
    // The streams are alive: black's good move is played and seen by both.
    black.play(notation(CONNECTION_GAME[1]), 1, "").await;
    let (before, answer) = black.until_answer().await;
    assert_eq!(accepted(answer).result.unwrap().ply, 2);
    assert_eq!(sequences(&before), vec![2]);
    assert_eq!(sequences(&[white.next().await]), vec![2]);
    server.stop().await.unwrap();
}

/// A start that is not a seat's, or no start, is refused as SubmitMove
/// and WatchGame refuse it; a second start ends the stream with
/// INVALID_ARGUMENT and the last ply sent.
#[tokio::test]
async fn a_play_stream_is_one_seats_and_starts_once() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let t = create(&mut c, ppb::Variant::Standard).await;
    let no_token = open(&mut c, &t.id, "", None).await.err().unwrap();
    assert_eq!(no_token.code(), Code::Unauthenticated);
    let wrong = open(&mut c, &t.id, &"0".repeat(32), None)
        .await
        .err()
        .unwrap();
    assert_eq!(wrong.code(), Code::PermissionDenied);
    let unknown = open(&mut c, &"0".repeat(32), &t.white, None)
        .await
        .err()
        .unwrap();
    assert_eq!(unknown.code(), Code::NotFound);
    let beyond = open(&mut c, &t.id, &t.white, Some(5)).await.err().unwrap();
    assert_eq!(beyond.code(), Code::OutOfRange);
    // A move first.
    let (tx, rx) = mpsc::channel(2);
    tx.send(pb::PlayRequest {
        kind: Some(pb::play_request::Kind::Move(pb::PlayMove::default())),
    })
    .await
    .unwrap();
    let first_move = within(10, c.play(ReceiverStream::new(rx)))
        .await
        .unwrap_err();
    assert_eq!(first_move.code(), Code::InvalidArgument);
    // A second start.
    let mut white = open(&mut c, &t.id, &t.white, None).await.unwrap();
    white.next().await;
    white
        .tx
        .send(pb::PlayRequest {
            kind: Some(pb::play_request::Kind::Start(pb::PlayStart::default())),
        })
        .await
        .unwrap();
    let ended = within(10, white.rx.message()).await.unwrap_err();
    assert_eq!(ended.code(), Code::InvalidArgument);
    assert_eq!(ended.metadata().get("referee-last-ply").unwrap(), "0");
    server.stop().await.unwrap();
}

/// A retry with the same request id gets the first answer, marked
/// replayed, whether it comes over the same stream, a new one, or
/// SubmitMove; the move is played once.
#[tokio::test]
async fn a_retried_request_id_is_answered_from_the_first_result_on_every_path() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let t = create(&mut c, ppb::Variant::Standard).await;
    let mut white = open(&mut c, &t.id, &t.white, None).await.unwrap();
    white.next().await;
    white.play(notation(CONNECTION_GAME[0]), 0, "first").await;
    let first = accepted(white.until_answer().await.1).result.unwrap();
    assert!(!first.replayed);
    // Over the same stream.
    white.play(notation(CONNECTION_GAME[0]), 0, "first").await;
    let (between, again) = white.until_answer().await;
    assert!(sequences(&between).is_empty(), "no new event: {between:?}");
    let again = accepted(again).result.unwrap();
    assert!(again.replayed);
    assert_eq!(
        pb::SubmitMoveResponse {
            replayed: false,
            ..again
        },
        first
    );
    // Over a new stream, after a reconnect.
    drop(white);
    let mut white = open(&mut c, &t.id, &t.white, Some(1)).await.unwrap();
    assert_eq!(snapshot_ply(&white.next().await), 1);
    white.play(notation(CONNECTION_GAME[0]), 0, "first").await;
    assert!(
        accepted(white.until_answer().await.1)
            .result
            .unwrap()
            .replayed
    );
    // And by SubmitMove.
    let unary = c
        .submit_move(pb::SubmitMoveRequest {
            game_id: t.id.clone(),
            token: t.white.clone(),
            r#move: Some(notation(CONNECTION_GAME[0])),
            expected_ply: 0,
            request_id: "first".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(unary.replayed);
    assert_eq!(
        pb::SubmitMoveResponse {
            replayed: false,
            ..unary
        },
        first
    );
    assert_eq!(get(&mut c, &t.id).await.ply, 1, "played once");
    server.stop().await.unwrap();
}

/// A stream that falls behind the game's ring (its client does not read)
/// gets a resync snapshot, as a watcher does, and then the rest in order.
#[tokio::test]
async fn a_play_stream_that_falls_behind_gets_a_resync() {
    use punct_referee::service::ServerOptions;
    use punct_referee::service::sessions::Limits;
    let server = TestServer::start_with(ServerOptions {
        limits: Limits {
            watch_buffer: 4,
            ..Limits::default()
        },
        ..test_options()
    })
    .await;
    let mut c = server.client().await;
    let t = create(&mut c, ppb::Variant::Standard).await;
    let lazy_channel = server
        .endpoint()
        .initial_stream_window_size(Some(1024))
        .connect()
        .await
        .unwrap();
    let mut lazy_client = pb::referee_service_client::RefereeServiceClient::new(lazy_channel);
    let mut black = open(&mut lazy_client, &t.id, &t.black, None).await.unwrap();
    let moves = &punct_referee::tools::load::random_games(8, 3)
        .into_iter()
        .max_by_key(|g| g.len())
        .unwrap();
    // An odd number of plies (black is to move after them), all by
    // SubmitMove while black's stream is not read.
    let total = ((moves.len() - 1).min(201) - 1) | 1;
    for (ply, text) in moves[..total].iter().enumerate() {
        submit(&mut c, &t, ply as u32, notation(text))
            .await
            .unwrap();
    }
    let mut last = u64::from(snapshot_ply(&black.next().await));
    let mut resyncs = 0;
    while last < total as u64 {
        let m = black.next().await;
        match &m.item {
            Some(Item::Snapshot(g)) => {
                assert!(m.resync);
                assert!(m.sequence > last);
                assert_eq!(u64::from(g.ply), m.sequence);
                resyncs += 1;
                last = m.sequence;
            }
            Some(Item::Event(e)) => {
                assert_eq!(e.sequence, last + 1, "in order, without gaps");
                last = e.sequence;
            }
            Some(Item::Presence(_)) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(resyncs >= 1, "the stream was resynchronised");
    // And it plays on.
    let ply = total as u32;
    black.play(notation(&moves[total]), ply, "").await;
    let (before, answer) = black.until_answer().await;
    assert_eq!(sequences(&before), vec![u64::from(ply) + 1]);
    assert_eq!(accepted(answer).result.unwrap().ply, ply + 1);
    server.stop().await.unwrap();
}

// ---------------------------------------------------------------------------
// The property: Play and unary moves mixed make the unary game
// ---------------------------------------------------------------------------

/// How one move of the mixed game is sent.
#[derive(Debug, Clone, Copy)]
enum Path {
    /// SubmitMove.
    Unary,
    /// The mover's Play stream.
    Play,
    /// The mover's Play stream, dropped and reopened from the last ply it
    /// saw just before.
    Reconnect,
}

fn path() -> impl Strategy<Value = Path> {
    prop_oneof![
        2 => Just(Path::Unary),
        3 => Just(Path::Play),
        1 => Just(Path::Reconnect),
    ]
}

/// A seat's stream in the mixed game and every event sequence it was sent,
/// over all its connections.
struct Seat {
    player: Option<Player>,
    token: String,
    seen: Vec<u64>,
    /// The ply of the last snapshot or event it was sent.
    last_ply: u32,
}

impl Seat {
    /// Reads until this seat's stream has been sent the event of `ply`.
    async fn catch_up(&mut self, ply: u32) -> Result<(), TestCaseError> {
        let Some(player) = self.player.as_mut() else {
            return Ok(());
        };
        while self.last_ply < ply {
            let m = player.next().await;
            match &m.item {
                Some(Item::Event(e)) => {
                    prop_assert_eq!(e.sequence, u64::from(self.last_ply) + 1);
                    self.seen.push(e.sequence);
                    self.last_ply = e.ply;
                }
                Some(Item::Presence(_)) => {}
                other => return Err(TestCaseError::fail(format!("unexpected {other:?}"))),
            }
        }
        Ok(())
    }

    /// (Re)opens the stream from its last ply (the first time: from the
    /// game now, at `ply`).
    async fn connect(&mut self, c: &mut Client, id: &str, ply: u32) -> Result<(), TestCaseError> {
        let from = self.player.take().map(|_| self.last_ply);
        let mut player = open(c, id, &self.token, from).await.expect("open");
        let snapshot = snapshot_ply(&player.next().await);
        prop_assert_eq!(snapshot, from.unwrap_or(ply));
        self.last_ply = snapshot;
        self.player = Some(player);
        Ok(())
    }
}

#[test]
fn a_mix_of_play_and_unary_moves_makes_the_unary_game() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let server = rt.block_on(TestServer::start());
    let client = rt.block_on(server.client());
    let pool = punct_referee::tools::load::random_games(16, 11);
    let mut runner = TestRunner::new(ProptestConfig {
        cases: 16,
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(0x504c_4159),
        ..ProptestConfig::default()
    });
    let case = (0..pool.len(), prop::collection::vec(path(), 1..60));
    runner
        .run(&case, |(game, paths)| {
            let moves = &pool[game];
            let n = paths.len().min(moves.len());
            let mut c = client.clone();
            rt.block_on(async {
                // The reference: the same moves by SubmitMove alone.
                let created = c
                    .create_game(pb::CreateGameRequest::default())
                    .await
                    .unwrap()
                    .into_inner();
                let reference_default = table_of(created.game.unwrap(), &created.seats);
                let mut unary_answers = Vec::new();
                for (ply, text) in moves[..n].iter().enumerate() {
                    let r = submit(&mut c, &reference_default, ply as u32, notation(text))
                        .await
                        .expect("the pool's moves are legal");
                    unary_answers.push(r);
                }
                // The mix.
                let created = c
                    .create_game(pb::CreateGameRequest::default())
                    .await
                    .unwrap()
                    .into_inner();
                let t = table_of(created.game.unwrap(), &created.seats);
                let mut seats = [&t.white, &t.black].map(|token| Seat {
                    player: None,
                    token: token.clone(),
                    seen: Vec::new(),
                    last_ply: 0,
                });
                for (ply, (text, how)) in moves[..n].iter().zip(&paths).enumerate() {
                    let ply = ply as u32;
                    let m = (ply % 2) as usize;
                    let answer = match how {
                        Path::Unary => submit(&mut c, &t, ply, notation(text))
                            .await
                            .expect("legal"),
                        Path::Play | Path::Reconnect => {
                            if seats[m].player.is_none() || matches!(how, Path::Reconnect) {
                                seats[m].connect(&mut c, &t.id, ply).await?;
                            }
                            let seat = &mut seats[m];
                            seat.catch_up(ply).await?;
                            let player = seat.player.as_mut().unwrap();
                            player.play(notation(text), ply, &format!("p{ply}")).await;
                            let (before, answer) = player.until_answer().await;
                            for e in sequences(&before) {
                                prop_assert_eq!(e, u64::from(seat.last_ply) + 1);
                                seat.seen.push(e);
                                seat.last_ply += 1;
                            }
                            let answer = accepted(answer);
                            prop_assert_eq!(&answer.request_id, &format!("p{ply}"));
                            answer.result.unwrap()
                        }
                    };
                    prop_assert_eq!(&answer, &unary_answers[ply as usize], "ply {}", ply);
                    for seat in &mut seats {
                        seat.catch_up(ply + 1).await?;
                    }
                }
                // Every stream was sent each event once, in order, from its
                // first connection on, across its reconnects.
                for seat in &seats {
                    if let Some(first) = seat.seen.first() {
                        let expected: Vec<u64> = (*first..=n as u64).collect();
                        prop_assert_eq!(&seat.seen, &expected);
                    }
                }
                let record = |token: String, id: String| {
                    let mut c = c.clone();
                    async move {
                        c.export_game(pb::ExportGameRequest { game_id: id, token })
                            .await
                            .unwrap()
                            .into_inner()
                            .record
                    }
                };
                let mixed = record(t.white.clone(), t.id.clone()).await;
                let alone = record(
                    reference_default.white.clone(),
                    reference_default.id.clone(),
                )
                .await;
                prop_assert_eq!(mixed, alone);
                Ok(())
            })
        })
        .unwrap();
    rt.block_on(server.stop()).unwrap();
}
