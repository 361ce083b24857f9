//! Property tests at the API boundary, through the real server on a socket:
//! any strings and numbers in any field of a request get a precise answer (a
//! specific gRPC code, a readable message and the details type docs/API.md
//! documents for that code), never a panic, `INTERNAL` or `UNKNOWN`, and a
//! refused call never changes the game (its snapshot, ply and record are the
//! same afterwards).
//!
//! `SubmitMove` is checked against an oracle that knows the order of the
//! server's checks (syntax, game, request id, token, retry — the same seat,
//! ply and move however written —, game over, ply, turn, rules) and plays
//! accepted moves on a local mirror of the game, so the
//! expected code, field or reason of every answer is exact. Syntax is judged by
//! the API layer's own conversion (fuzzed separately, fuzz/), the rules by the
//! engine (tests/properties.rs).
//!
//! Garbage bytes as a message body go through a raw tonic client with a bytes
//! codec: tonic's decoder answers `INTERNAL` ("failed to decode Protobuf
//! message") before any handler runs; the test asserts it is a clean status
//! and that the connection keeps serving.
//!
//! Proptest runs with a fixed seed and no failure persistence (deterministic),
//! and moderate case counts: every case is a few round trips on loopback.

use crate::common;

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use common::*;
use proptest::prelude::*;
use proptest::test_runner::{RngSeed, TestCaseError, TestRunner};
use punct_referee::games::{self, Game, MoveDetail, MoveError, Seat, Viewer};
use punct_referee::service::grpc::convert;
use punct_referee::service::grpc::games::punct::MOVE_FIELDS;
use punct_referee::service::grpc::pb::punct::v1 as ppb;
use punct_referee::service::grpc::pb::referee::v1 as pb;
use punct_referee::service::sessions::{SessionError, Token};
use tokio::runtime::Runtime;
use tonic::Code;
use tonic_types::StatusExt;

// ---------------------------------------------------------------------------
// Set-up
// ---------------------------------------------------------------------------

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(0x4150_4950_524f),
        ..ProptestConfig::default()
    }
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// Any text: arbitrary Unicode (controls, NUL, combining marks), printable
/// ASCII, long strings, and the empty string.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => any::<String>(),
        2 => "[ -~]{0,40}",
        1 => ".{100,300}",
        1 => Just(String::new()),
        1 => "[\\x00-\\x1f\\u{80}-\\u{10ffff}]{1,8}",
    ]
}

/// 32 hex digits: looks like an id or a token, is almost surely neither.
fn hex32() -> impl Strategy<Value = String> {
    "[0-9a-fA-F]{32}"
}

/// Notation-shaped text: mostly well-formed, often illegal, sometimes a
/// near miss (bad code, bad space, spaces around separators).
fn notation_like() -> impl Strategy<Value = String> {
    prop_oneof![
        "(SE|SM|AM|AL|AR|T|se|XX) ?@ ?[A-Ra-r][0-9]{1,2} ?: ?[A-Q][0-9]{1,2} ?, ?[A-Q][0-9]{1,2}",
        "[A-Q][0-9]{1,2} ?> ?[A-Q][0-9]{1,2}:[A-Q][0-9]{1,2},[A-Q][0-9]{1,2}",
        text(),
    ]
}

/// Space-shaped text, or anything.
fn space_like() -> impl Strategy<Value = String> {
    prop_oneof!["[A-Ra-r][0-9]{1,3}", text()]
}

/// A rotation: in range, just out of it, or any number.
fn rotation() -> impl Strategy<Value = u32> {
    prop_oneof![0u32..6, 6u32..8, any::<u32>()]
}

// ---------------------------------------------------------------------------
// What every refusal must look like
// ---------------------------------------------------------------------------

/// A refusal is one of the contract's codes with a message and the details
/// docs/API.md and src/service/grpc/error.rs document for it.
fn check_refusal(s: &tonic::Status) -> Result<(), TestCaseError> {
    prop_assert!(!s.message().is_empty(), "empty message: {s:?}");
    let error_info = |s: &tonic::Status| {
        let info = s.get_details_error_info();
        info.filter(|i| i.domain == "referee.v1" && !i.reason.is_empty())
    };
    match s.code() {
        Code::InvalidArgument | Code::OutOfRange => {
            let br = s.get_details_bad_request();
            prop_assert!(
                br.as_ref().is_some_and(|b| b
                    .field_violations
                    .iter()
                    .all(|v| !v.field.is_empty() && !v.description.is_empty())
                    && !b.field_violations.is_empty()),
                "no BadRequest: {s:?}"
            );
        }
        Code::NotFound => {
            let info = s.get_details_resource_info();
            prop_assert!(
                info.is_some_and(|i| i.resource_type == "referee.v1.Game"),
                "no ResourceInfo: {s:?}"
            );
        }
        Code::Unauthenticated => {
            let reason = error_info(s).map(|i| i.reason);
            prop_assert!(
                matches!(reason.as_deref(), Some("TOKEN_MISSING" | "TOKEN_MALFORMED")),
                "{s:?}"
            );
        }
        Code::PermissionDenied => {
            let reason = error_info(s).map(|i| i.reason);
            prop_assert_eq!(reason.as_deref(), Some("WRONG_TOKEN"));
        }
        Code::FailedPrecondition => prop_assert!(error_info(s).is_some(), "no ErrorInfo: {s:?}"),
        Code::Aborted => {
            let info = error_info(s);
            prop_assert!(
                info.is_some_and(|i| i.reason == "STALE_PLY"
                    && i.metadata.contains_key("expected_ply")
                    && i.metadata.contains_key("current_ply")),
                "{s:?}"
            );
        }
        other => prop_assert!(false, "unexpected code {other:?}: {s:?}"),
    }
    Ok(())
}

/// The field a BadRequest names first.
fn bad_field(s: &tonic::Status) -> String {
    s.get_details_bad_request()
        .and_then(|b| b.field_violations.first().map(|v| v.field.clone()))
        .unwrap_or_default()
}

fn error_reason(s: &tonic::Status) -> String {
    s.get_details_error_info()
        .map(|i| i.reason)
        .unwrap_or_default()
}

/// What a client can observe of a game, minus what moves with the clock
/// (presence's away times).
async fn observe(client: &mut Client, id: &str) -> (pb::Game, String, Vec<String>) {
    let mut game = get(client, id).await;
    game.presence = None;
    let record = export_checked(client, id, "").await;
    let legal = client
        .list_legal_moves(pb::ListLegalMovesRequest {
            game_id: id.to_string(),
            seat: 0,
            token: String::new(),
            ..Default::default()
        })
        .await
        .expect("legal moves")
        .into_inner()
        .moves
        .iter()
        .map(|m| punct_of(m).notation.clone())
        .collect();
    (game, record, legal)
}

// ---------------------------------------------------------------------------
// SubmitMove against an oracle
// ---------------------------------------------------------------------------

#[derive(Debug, Clone)]
enum IdSel {
    Real,
    Hex(String),
    Any(String),
}

#[derive(Debug, Clone)]
enum TokenSel {
    ToMove,
    ToMoveUpper,
    Waiting,
    Hex(String),
    Any(String),
}

#[derive(Debug, Clone)]
enum PlySel {
    Current,
    Offset(i8),
    Any(u32),
}

#[derive(Debug, Clone)]
enum MoveSel {
    /// A legal move (index into the legal list), as notation.
    LegalNotation(usize),
    /// A legal move, structured.
    LegalStructured(usize),
    /// A legal move in both forms, the notation from another legal move.
    Mismatch(usize, usize),
    Notation(String),
    Place(String, String, u32),
    Shift(String, String, u32),
    /// A `punct` member with no action and `notation`.
    EmptyPunct(String),
    /// No per-game member at all.
    NoGame,
}

#[derive(Debug, Clone)]
struct SubmitCase {
    id: IdSel,
    token: TokenSel,
    ply: PlySel,
    mv: MoveSel,
    request_id: String,
}

fn submit_case() -> impl Strategy<Value = SubmitCase> {
    let id = prop_oneof![
        6 => Just(IdSel::Real),
        1 => hex32().prop_map(IdSel::Hex),
        1 => text().prop_map(IdSel::Any),
    ];
    let token = prop_oneof![
        5 => Just(TokenSel::ToMove),
        1 => Just(TokenSel::ToMoveUpper),
        1 => Just(TokenSel::Waiting),
        1 => hex32().prop_map(TokenSel::Hex),
        1 => text().prop_map(TokenSel::Any),
    ];
    let ply = prop_oneof![
        5 => Just(PlySel::Current),
        1 => any::<i8>().prop_map(PlySel::Offset),
        1 => any::<u32>().prop_map(PlySel::Any),
    ];
    let mv = prop_oneof![
        3 => any::<usize>().prop_map(MoveSel::LegalNotation),
        2 => any::<usize>().prop_map(MoveSel::LegalStructured),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| MoveSel::Mismatch(a, b)),
        3 => notation_like().prop_map(MoveSel::Notation),
        2 => ("(SE|SM|AM|AL|AR|T|t)|.{0,4}", space_like(), rotation())
            .prop_map(|(c, p, r)| MoveSel::Place(c, p, r)),
        2 => (space_like(), space_like(), rotation()).prop_map(|(f, t, r)| MoveSel::Shift(f, t, r)),
        1 => prop_oneof![Just(String::new()), "[ \\t\\n]{1,4}"].prop_map(MoveSel::EmptyPunct),
        1 => Just(MoveSel::NoGame),
    ];
    let request_id = prop_oneof![
        4 => Just(String::new()),
        1 => "retry-[0-3]",
        1 => text(),
        1 => "[a-z]{129,140}",
    ];
    (id, token, ply, mv, request_id).prop_map(|(id, token, ply, mv, request_id)| SubmitCase {
        id,
        token,
        ply,
        mv,
        request_id,
    })
}

fn punct_move(p: ppb::Move) -> pb::Move {
    pb::Move {
        game: Some(pb::r#move::Game::Punct(p)),
    }
}

/// The wire move of `sel` on the mirror's position.
fn wire_move(sel: &MoveSel, legal: &[MoveDetail]) -> pb::Move {
    let pick = |i: usize| legal.get(i % legal.len().max(1)).cloned();
    match sel {
        MoveSel::LegalNotation(i) => match pick(*i) {
            Some(d) => notation(d.notation()),
            None => notation("SE@E5:F5,G5"),
        },
        MoveSel::LegalStructured(i) => match pick(*i) {
            Some(d) => {
                let mut m = convert::move_pb(&d);
                if let Some(pb::r#move::Game::Punct(p)) = m.game.as_mut() {
                    p.notation.clear();
                }
                m
            }
            None => place("SE", "E5", 0),
        },
        MoveSel::Mismatch(a, b) => match (pick(*a), pick(*b)) {
            (Some(x), Some(y)) => {
                let mut m = convert::move_pb(&x);
                if let Some(pb::r#move::Game::Punct(p)) = m.game.as_mut() {
                    p.notation = y.notation.clone();
                }
                m
            }
            _ => notation("SE@E5:F5,G5"),
        },
        MoveSel::Notation(t) => notation(t),
        MoveSel::Place(c, p, r) => place(c, p, *r),
        MoveSel::Shift(f, t, r) => shift(f, t, *r),
        MoveSel::EmptyPunct(n) => punct_move(ppb::Move {
            notation: n.clone(),
            ..Default::default()
        }),
        MoveSel::NoGame => pb::Move { game: None },
    }
}

/// The answer the server must give.
#[derive(Debug, Clone, PartialEq)]
enum Expect {
    /// Played (or, with `replayed`, the stored answer of a retry).
    Accepted { replayed: bool },
    /// Refused with this code and, where it has one, this field or reason.
    Refused(Code, String),
}

/// The local copy of the game and of the retries the server stored (seat,
/// expected ply and the move played, per request id).
struct Mirror {
    game: Box<dyn Game>,
    receipts: HashMap<String, (Seat, u32, MoveDetail)>,
}

fn seat_of_token(token: &str, table: &Table) -> Option<Seat> {
    let given = Token::parse(token)?.to_string();
    if given == table.white {
        Some(Seat::FIRST)
    } else if given == table.black {
        Some(Seat::SECOND)
    } else {
        None
    }
}

/// The server's checks, in its order (src/service/grpc/service.rs, src/service/sessions).
fn expect_submit(mirror: &Mirror, table: &Table, req: &pb::SubmitMoveRequest) -> Expect {
    let refused = |code, detail: &str| Expect::Refused(code, detail.to_string());
    let mv = match convert::move_input(req.r#move.as_ref(), &MOVE_FIELDS) {
        Ok(mv) => mv,
        Err(SessionError::InvalidArgument { field, .. }) => {
            return refused(Code::InvalidArgument, field);
        }
        Err(e) => panic!("conversion gave {e:?}"),
    };
    if req.game_id != table.id {
        return refused(Code::NotFound, "");
    }
    if req.request_id.len() > 128 {
        return refused(Code::InvalidArgument, "request_id");
    }
    if req.token.is_empty() {
        return refused(Code::Unauthenticated, "TOKEN_MISSING");
    }
    if Token::parse(&req.token).is_none() {
        return refused(Code::Unauthenticated, "TOKEN_MALFORMED");
    }
    let Some(seat) = seat_of_token(&req.token, table) else {
        return refused(Code::PermissionDenied, "WRONG_TOKEN");
    };
    // A retry is the same seat and ply and the same move, however written.
    if let Some((first_seat, first_ply, played)) = mirror.receipts.get(&req.request_id) {
        return if *first_seat == seat
            && *first_ply == req.expected_ply
            && mirror.game.same_move(req.expected_ply, &mv, played)
        {
            Expect::Accepted { replayed: true }
        } else {
            refused(Code::InvalidArgument, "request_id")
        };
    }
    let game = &mirror.game;
    if game.outcome().is_some() {
        return refused(Code::FailedPrecondition, "GAME_OVER");
    }
    if req.expected_ply != game.ply() {
        return refused(Code::Aborted, "STALE_PLY");
    }
    if Some(seat) != game.to_move() {
        return refused(Code::FailedPrecondition, "NOT_YOUR_TURN");
    }
    match game.clone_box().play(&mv) {
        Ok(_) => Expect::Accepted { replayed: false },
        Err(MoveError::Illegal { reason, .. }) => refused(Code::FailedPrecondition, reason),
        Err(MoveError::Malformed { field, .. }) => refused(Code::InvalidArgument, field),
    }
}

/// The code and the field or reason of a refusal, as [`Expect`] spells them.
fn answer_of(s: &tonic::Status) -> Expect {
    let detail = match s.code() {
        Code::InvalidArgument | Code::OutOfRange => bad_field(s),
        Code::NotFound => String::new(),
        _ => error_reason(s),
    };
    Expect::Refused(s.code(), detail)
}

#[test]
fn submit_move_answers_exactly_and_refusals_change_nothing() {
    let rt = runtime();
    let server = rt.block_on(TestServer::start());
    let mut client = rt.block_on(server.client());
    let table = rt.block_on(create(&mut client, ppb::Variant::Standard));
    let mirror = Mutex::new(Mirror {
        game: games::new_game(&games::GameRules::default()),
        receipts: HashMap::new(),
    });
    let accepted = Cell::new(0u32);
    let mut runner = TestRunner::new(config(160));
    runner
        .run(&submit_case(), |case| {
            let mut mirror = mirror.lock().unwrap();
            let legal: Vec<MoveDetail> = mirror
                .game
                .legal_moves()
                .iter()
                .map(|r| r.detail.clone())
                .collect();
            let ply = mirror.game.ply();
            let to_move = mirror.game.to_move();
            let (mine, theirs) = match to_move {
                Some(Seat::FIRST) => (&table.white, &table.black),
                _ => (&table.black, &table.white),
            };
            let req = pb::SubmitMoveRequest {
                game_id: match &case.id {
                    IdSel::Real => table.id.clone(),
                    IdSel::Hex(s) | IdSel::Any(s) => s.clone(),
                },
                token: match &case.token {
                    TokenSel::ToMove => mine.clone(),
                    TokenSel::ToMoveUpper => mine.to_uppercase(),
                    TokenSel::Waiting => theirs.clone(),
                    TokenSel::Hex(s) | TokenSel::Any(s) => s.clone(),
                },
                r#move: Some(wire_move(&case.mv, &legal)),
                expected_ply: match case.ply {
                    PlySel::Current => ply,
                    PlySel::Offset(d) => ply.saturating_add_signed(i32::from(d)),
                    PlySel::Any(p) => p,
                },
                request_id: case.request_id.clone(),
            };
            let expected = expect_submit(&mirror, &table, &req);
            let mut c = client.clone();
            let (before, answer, after) = rt.block_on(async {
                let before = observe(&mut c, &table.id).await;
                let answer = c.submit_move(req.clone()).await;
                let after = observe(&mut c, &table.id).await;
                (before, answer, after)
            });
            match answer {
                Ok(r) => {
                    let r = r.into_inner();
                    prop_assert_eq!(
                        &expected,
                        &Expect::Accepted {
                            replayed: r.replayed
                        },
                        "request {:?}",
                        req
                    );
                    if !r.replayed {
                        let mv = convert::move_input(req.r#move.as_ref(), &MOVE_FIELDS).unwrap();
                        let report = mirror.game.play(&mv).expect("the oracle said legal");
                        prop_assert_eq!(r.ply, report.ply);
                        prop_assert_eq!(
                            &punct_of(r.r#move.as_ref().unwrap()).notation,
                            &report.detail.notation()
                        );
                        if !req.request_id.is_empty() {
                            let seat = report.seat;
                            mirror.receipts.insert(
                                req.request_id.clone(),
                                (seat, req.expected_ply, report.detail),
                            );
                        }
                        accepted.set(accepted.get() + 1);
                    } else {
                        prop_assert_eq!(&before, &after, "a replayed retry changed the game");
                    }
                }
                Err(s) => {
                    check_refusal(&s)?;
                    prop_assert_eq!(answer_of(&s), expected, "request {:?}: {:?}", req, s);
                    prop_assert_eq!(&before, &after, "a refused call changed the game");
                }
            }
            // The server's game is the mirror's, move for move.
            prop_assert_eq!(after.0.ply, mirror.game.ply());
            prop_assert_eq!(&after.1, &mirror.game.record(&[], Viewer::Spectator));
            Ok(())
        })
        .unwrap();
    // The walk really played moves, not only refusals.
    let accepted = accepted.get();
    assert!(accepted >= 10, "only {accepted} moves were accepted");
    rt.block_on(server.stop()).unwrap();
}

// ---------------------------------------------------------------------------
// Seat actions and reads with any ids, tokens, seats and plies
// ---------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct CallCase {
    rpc: u8,
    id: IdSel,
    token: TokenSel,
    seat: u32,
    ply: Option<u32>,
}

fn call_case() -> impl Strategy<Value = CallCase> {
    let id = prop_oneof![
        4 => Just(IdSel::Real),
        1 => hex32().prop_map(IdSel::Hex),
        1 => text().prop_map(IdSel::Any),
    ];
    // Never a seat's own token for the calls that would end the game:
    // `Waiting` and `ToMove` are used only where the game refuses them.
    let token = prop_oneof![
        2 => Just(TokenSel::ToMove),
        1 => Just(TokenSel::Waiting),
        2 => hex32().prop_map(TokenSel::Hex),
        2 => text().prop_map(TokenSel::Any),
    ];
    let seat = prop_oneof![0u32..3, any::<u32>()];
    let ply = prop_oneof![
        Just(None),
        (0u32..8).prop_map(Some),
        any::<u32>().prop_map(Some)
    ];
    (0u8..10, id, token, seat, ply).prop_map(|(rpc, id, token, seat, ply)| CallCase {
        rpc,
        id,
        token,
        seat,
        ply,
    })
}

/// Every call but `SubmitMove` on a game at ply 4 (too late to abort, no draw
/// offer, no clock): resign and draw offers only with tokens of no seat,
/// every other call with any token. Each answer is what the contract says;
/// no refusal changes the game.
#[test]
fn other_calls_with_any_fields_answer_precisely_and_change_nothing() {
    let rt = runtime();
    let server = rt.block_on(TestServer::start());
    let mut client = rt.block_on(server.client());
    let table = rt.block_on(async {
        let t = create(&mut client, ppb::Variant::Standard).await;
        for (ply, m) in CONNECTION_GAME.iter().take(4).enumerate() {
            submit(&mut client, &t, ply as u32, notation(m))
                .await
                .expect("scripted move");
        }
        t
    });
    let mut runner = TestRunner::new(config(160));
    runner
        .run(&call_case(), |case| {
            let id = match &case.id {
                IdSel::Real => table.id.clone(),
                IdSel::Hex(s) | IdSel::Any(s) => s.clone(),
            };
            let real_game = id == table.id;
            let (token, token_seat) = match &case.token {
                TokenSel::ToMove | TokenSel::ToMoveUpper => (table.white.clone(), true),
                TokenSel::Waiting => (table.black.clone(), true),
                TokenSel::Hex(s) | TokenSel::Any(s) => (s.clone(), false),
            };
            // What a token check answers when the token proves no seat.
            let token_refusal = || -> Expect {
                if token.is_empty() {
                    Expect::Refused(Code::Unauthenticated, "TOKEN_MISSING".into())
                } else if Token::parse(&token).is_none() {
                    Expect::Refused(Code::Unauthenticated, "TOKEN_MALFORMED".into())
                } else {
                    Expect::Refused(Code::PermissionDenied, "WRONG_TOKEN".into())
                }
            };
            let not_found = Expect::Refused(Code::NotFound, String::new());
            let mut c = client.clone();
            let (before, answer, after) = rt.block_on(async {
                let before = observe(&mut c, &table.id).await;
                let (answer, expected): (Result<(), tonic::Status>, Expect) = match case.rpc {
                    // Seat actions that end the game: only tokens of no seat.
                    0 | 1 if token_seat => (Ok(()), Expect::Accepted { replayed: false }),
                    0 => {
                        let r = c
                            .resign(pb::ResignRequest {
                                game_id: id.clone(),
                                token: token.clone(),
                            })
                            .await;
                        let e = if real_game {
                            token_refusal()
                        } else {
                            not_found.clone()
                        };
                        (r.map(drop), e)
                    }
                    1 => {
                        let r = c
                            .offer_draw(pb::OfferDrawRequest {
                                game_id: id.clone(),
                                token: token.clone(),
                            })
                            .await;
                        let e = if real_game {
                            token_refusal()
                        } else {
                            not_found.clone()
                        };
                        (r.map(drop), e)
                    }
                    // Refused by the game even for a seat's own token.
                    2..=4 => {
                        let (r, reason) = match case.rpc {
                            2 => (
                                c.accept_draw(pb::AcceptDrawRequest {
                                    game_id: id.clone(),
                                    token: token.clone(),
                                })
                                .await
                                .map(drop),
                                "NO_DRAW_OFFER",
                            ),
                            3 => (
                                c.abort_game(pb::AbortGameRequest {
                                    game_id: id.clone(),
                                    token: token.clone(),
                                })
                                .await
                                .map(drop),
                                "ABORT_TOO_LATE",
                            ),
                            _ => (
                                c.claim_victory(pb::ClaimVictoryRequest {
                                    game_id: id.clone(),
                                    token: token.clone(),
                                    against: 0,
                                })
                                .await
                                .map(drop),
                                "NO_CLOCK",
                            ),
                        };
                        let e = match (real_game, token_seat) {
                            (false, _) => not_found.clone(),
                            (true, true) => {
                                Expect::Refused(Code::FailedPrecondition, reason.into())
                            }
                            (true, false) => token_refusal(),
                        };
                        (r, e)
                    }
                    5 => {
                        let r = c
                            .list_legal_moves(pb::ListLegalMovesRequest {
                                game_id: id.clone(),
                                seat: case.seat,
                                token: String::new(),
                                ..Default::default()
                            })
                            .await;
                        // The game is looked up first, so a seat out of
                        // range is refused against the game's own seats
                        // (PÜNCT's 1 and 2).
                        let e = if !real_game {
                            not_found.clone()
                        } else if !(0..3).contains(&case.seat) {
                            Expect::Refused(Code::InvalidArgument, "seat".into())
                        } else {
                            Expect::Accepted { replayed: false }
                        };
                        (r.map(drop), e)
                    }
                    6 => {
                        let r = c
                            .render_position(pb::RenderPositionRequest {
                                game_id: id.clone(),
                                ply: case.ply,
                                token: String::new(),
                            })
                            .await;
                        let e = match (real_game, case.ply) {
                            (false, _) => not_found.clone(),
                            (true, Some(p)) if p > 4 => {
                                Expect::Refused(Code::OutOfRange, "ply".into())
                            }
                            (true, _) => Expect::Accepted { replayed: false },
                        };
                        (r.map(drop), e)
                    }
                    7 => {
                        let r = c
                            .watch_game(pb::WatchGameRequest {
                                game_id: id.clone(),
                                from_ply: case.ply,
                                token: token.clone(),
                            })
                            .await;
                        // A watch answers its refusals before the stream.
                        let e = match (real_game, case.ply) {
                            (false, _) => not_found.clone(),
                            (true, _) if !token.is_empty() && !token_seat => token_refusal(),
                            (true, Some(p)) if p > 4 => {
                                Expect::Refused(Code::OutOfRange, "from_ply".into())
                            }
                            (true, _) => Expect::Accepted { replayed: false },
                        };
                        let r = match r {
                            // The first message is the snapshot; then drop the stream.
                            Ok(stream) => {
                                let mut stream = stream.into_inner();
                                let first = within(5, stream.message()).await;
                                match first {
                                    Ok(Some(m)) => {
                                        assert!(matches!(
                                            m.item,
                                            Some(pb::watch_game_response::Item::Snapshot(_))
                                        ));
                                        Ok(())
                                    }
                                    Ok(None) => panic!("a watch ended without a snapshot"),
                                    Err(s) => Err(s),
                                }
                            }
                            Err(s) => Err(s),
                        };
                        (r, e)
                    }
                    8 => {
                        let r = c
                            .get_game(pb::GetGameRequest {
                                game_id: id.clone(),
                                token: String::new(),
                                view: case.seat as i32,
                            })
                            .await;
                        // The view is checked before the game is looked up.
                        let e = if pb::SnapshotView::try_from(case.seat as i32).is_err() {
                            Expect::Refused(Code::InvalidArgument, "view".into())
                        } else if real_game {
                            Expect::Accepted { replayed: false }
                        } else {
                            not_found.clone()
                        };
                        (r.map(drop), e)
                    }
                    _ => {
                        let r = c
                            .export_game(pb::ExportGameRequest {
                                game_id: id.clone(),
                                token: String::new(),
                            })
                            .await;
                        let e = if real_game {
                            Expect::Accepted { replayed: false }
                        } else {
                            not_found.clone()
                        };
                        (r.map(drop), e)
                    }
                };
                // A watch's presence is over once its stream is dropped;
                // give the server a moment to see it.
                if case.rpc == 7 {
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                }
                let after = observe(&mut c, &table.id).await;
                (before, (answer, expected), after)
            });
            let (answer, expected) = answer;
            match answer {
                Ok(()) => prop_assert_eq!(expected, Expect::Accepted { replayed: false }),
                Err(s) => {
                    check_refusal(&s)?;
                    prop_assert_eq!(answer_of(&s), expected, "{:?}: {:?}", case, s);
                }
            }
            prop_assert_eq!(&before, &after, "the game changed: {:?}", case);
            Ok(())
        })
        .unwrap();
    rt.block_on(server.stop()).unwrap();
}

// ---------------------------------------------------------------------------
// Calls that create or read many games: CreateGame, ImportGame, ListGames,
// ValidateMove
// ---------------------------------------------------------------------------

/// Whether labels pass the store's rules (docs/API.md; src/service/sessions).
fn labels_ok(labels: &BTreeMap<String, String>) -> bool {
    labels.len() <= 16
        && labels.iter().all(|(k, v)| {
            let mut chars = k.chars();
            k.len() <= 63
                && chars.next().is_some_and(|c| c.is_ascii_alphabetic())
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                && v.len() <= 256
                && !v.chars().any(char::is_control)
                && v.trim() == v
        })
}

fn labels() -> impl Strategy<Value = HashMap<String, String>> {
    let key = prop_oneof![3 => "[a-z][a-z0-9_-]{0,10}", 1 => text(), 1 => "[a-z]{64}"];
    let value = prop_oneof![3 => "[ -~]{0,20}", 1 => text(), 1 => "[a-z]{257}"];
    prop::collection::hash_map(key, value, 0..4)
}

/// A record: the sample game with lines dropped, doubled or replaced by
/// any text, or any text at all.
fn record() -> impl Strategy<Value = String> {
    const SAMPLE: &str = include_str!("../../docs/pictures/sample-game.txt");
    let lines: Vec<String> = SAMPLE.lines().map(str::to_string).collect();
    let n = lines.len();
    prop_oneof![
        1 => Just(SAMPLE.to_string()),
        3 => (0..n, 0..4u8, text()).prop_map(move |(i, op, t)| {
            let mut l = lines.clone();
            match op {
                0 => {
                    l.remove(i);
                }
                1 => l.insert(i, l[i].clone()),
                2 => l[i] = t,
                _ => l.truncate(i),
            }
            l.join("\n")
        }),
        1 => text(),
    ]
}

#[derive(Debug, Clone)]
enum BigCall {
    Create {
        variant: i32,
        end_on_supply: i32,
        max_plies: Option<u32>,
        time: Option<(u64, u64)>,
        labels: HashMap<String, String>,
    },
    Import {
        record: String,
        labels: HashMap<String, String>,
    },
    List {
        status: i32,
        page_size: u32,
        page_token: String,
    },
    ValidateRecord {
        record: String,
        candidate: String,
    },
    ValidateMoves {
        variant: i32,
        moves: Vec<String>,
        candidate: String,
    },
}

fn big_call() -> impl Strategy<Value = BigCall> {
    let enum_value = || prop_oneof![0i32..3, any::<i32>()];
    prop_oneof![
        (
            enum_value(),
            enum_value(),
            prop::option::of(any::<u32>()),
            prop::option::of((any::<u64>(), any::<u64>())),
            labels()
        )
            .prop_map(|(variant, end_on_supply, max_plies, time, labels)| {
                BigCall::Create {
                    variant,
                    end_on_supply,
                    max_plies,
                    time,
                    labels,
                }
            }),
        (record(), labels()).prop_map(|(record, labels)| BigCall::Import { record, labels }),
        (
            enum_value(),
            any::<u32>(),
            prop_oneof![
                Just(String::new()),
                "-?[0-9]{1,13}\\.[0-9a-fA-F]{32}",
                "[0-9]{1,3}(\\.[0-9a-f]{0,33})?",
                text()
            ]
        )
            .prop_map(|(status, page_size, page_token)| BigCall::List {
                status,
                page_size,
                page_token,
            }),
        (record(), notation_like())
            .prop_map(|(record, candidate)| BigCall::ValidateRecord { record, candidate }),
        (
            enum_value(),
            prop::collection::vec(notation_like(), 0..4),
            notation_like()
        )
            .prop_map(|(variant, moves, candidate)| BigCall::ValidateMoves {
                variant,
                moves,
                candidate,
            }),
    ]
}

/// A ListGames page token: `<creation ms>.<game id>` (docs/STORAGE.md).
fn is_page_token(text: &str) -> bool {
    text.split_once('.').is_some_and(|(ms, id)| {
        ms.parse::<i64>().is_ok() && id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit())
    })
}

/// CreateGame, ImportGame, ListGames and ValidateMove with any fields: a
/// game is created exactly when its input is valid (else `INVALID_ARGUMENT`
/// naming the field), ListGames takes only its own page tokens, ValidateMove
/// answers or names what is wrong; a refusal creates nothing.
#[test]
fn creating_listing_and_adjudicating_with_any_fields_is_precise() {
    let rt = runtime();
    let server = rt.block_on(TestServer::start());
    let client = rt.block_on(server.client());
    let mut runner = TestRunner::new(config(160));
    runner
        .run(&big_call(), |call| {
            let mut c = client.clone();
            let count = |c: &mut Client| {
                let mut c = c.clone();
                async move {
                    c.list_games(pb::ListGamesRequest {
                        page_size: 500,
                        ..Default::default()
                    })
                    .await
                    .expect("list")
                    .into_inner()
                    .games
                    .len()
                }
            };
            let (games_before, answer, games_after) = rt.block_on(async {
                let before = count(&mut c).await;
                let answer: Result<(), tonic::Status> = match &call {
                    BigCall::Create {
                        variant,
                        end_on_supply,
                        max_plies,
                        time,
                        labels,
                    } => c
                        .create_game(pb::CreateGameRequest {
                            rules: Some(pb::GameRules {
                                game: Some(pb::game_rules::Game::Punct(ppb::RuleOptions {
                                    variant: *variant,
                                    end_on_supply: *end_on_supply,
                                    max_plies: *max_plies,
                                    repetition_limit: None,
                                })),
                            }),
                            labels: labels.clone(),
                            time_control: time.map(|(initial, increment)| pb::TimeControl {
                                lag_compensation: None,
                                mode: Some(pb::time_control::Mode::Fischer(pb::FischerClock {
                                    initial_ms: initial,
                                    increment_ms: increment,
                                })),
                                first_move_deadline_ms: None,
                            }),
                            seed: String::new(),
                            ..Default::default()
                        })
                        .await
                        .map(drop),
                    BigCall::Import { record, labels } => c
                        .import_game(pb::ImportGameRequest {
                            record: record.clone(),
                            labels: labels.clone(),
                        })
                        .await
                        .map(drop),
                    BigCall::List {
                        status,
                        page_size,
                        page_token,
                    } => c
                        .list_games(pb::ListGamesRequest {
                            status: *status,
                            page_size: *page_size,
                            page_token: page_token.clone(),
                            labels: HashMap::new(),
                        })
                        .await
                        .map(drop),
                    BigCall::ValidateRecord { record, candidate } => c
                        .validate_move(pb::ValidateMoveRequest {
                            history: Some(pb::validate_move_request::History::Record(
                                record.clone(),
                            )),
                            r#move: Some(notation(candidate)),
                        })
                        .await
                        .map(drop),
                    BigCall::ValidateMoves {
                        variant,
                        moves,
                        candidate,
                    } => c
                        .validate_move(pb::ValidateMoveRequest {
                            history: Some(pb::validate_move_request::History::Moves(
                                pb::GameHistory {
                                    rules: Some(rules_of(*variant)),
                                    moves: moves.iter().map(|m| notation(m)).collect(),
                                    seed: String::new(),
                                },
                            )),
                            r#move: Some(notation(candidate)),
                        })
                        .await
                        .map(drop),
                };
                let after = count(&mut c).await;
                (before, answer, after)
            });
            let created = games_after - games_before;
            // The field each call must name when it is refused, if it can be
            // told from the input alone.
            let expected_field: Option<&str> = match &call {
                BigCall::Create {
                    variant,
                    end_on_supply,
                    time,
                    labels,
                    ..
                } => {
                    if !(0..3).contains(variant) {
                        Some("rules.punct.variant")
                    } else if !(0..3).contains(end_on_supply) {
                        Some("rules.punct.end_on_supply")
                    } else if !labels_ok(&labels.clone().into_iter().collect()) {
                        Some("labels")
                    } else if time
                        .is_some_and(|(i, inc)| i == 0 || i > 24 * 3600 * 1000 || inc > 3600 * 1000)
                    {
                        None // a time_control.* field, checked below
                    } else {
                        Some("")
                    }
                }
                BigCall::Import { labels, .. }
                    if !labels_ok(&labels.clone().into_iter().collect()) =>
                {
                    Some("labels")
                }
                BigCall::Import { .. } => None,
                BigCall::List {
                    status, page_token, ..
                } => {
                    if !(0..3).contains(status) {
                        Some("status")
                    } else if !page_token.is_empty() && !is_page_token(page_token) {
                        Some("page_token")
                    } else {
                        Some("")
                    }
                }
                BigCall::ValidateRecord { .. } | BigCall::ValidateMoves { .. } => None,
            };
            match answer {
                Ok(()) => {
                    if let Some(field) = expected_field {
                        prop_assert_eq!(field, "", "accepted, but {} is bad: {:?}", field, call);
                    }
                    let creates = matches!(call, BigCall::Create { .. } | BigCall::Import { .. });
                    prop_assert_eq!(created, usize::from(creates));
                }
                Err(s) => {
                    check_refusal(&s)?;
                    prop_assert_eq!(s.code(), Code::InvalidArgument, "{:?}", s);
                    let field = bad_field(&s);
                    match (&call, expected_field) {
                        (_, Some(f)) => prop_assert_eq!(field.as_str(), f, "{:?}", s),
                        (BigCall::Create { .. }, None) => {
                            prop_assert!(field.starts_with("time_control."), "{:?}", s)
                        }
                        (BigCall::Import { .. } | BigCall::ValidateRecord { .. }, None) => {
                            // A bad record names it, with a reason; a good
                            // record with bad tags names the labels.
                            if field == "record" {
                                prop_assert!(!error_reason(&s).is_empty());
                            } else {
                                prop_assert!(
                                    field == "labels" || field.starts_with("move."),
                                    "{:?}",
                                    s
                                );
                            }
                        }
                        (_, None) => prop_assert!(
                            [
                                "moves",
                                "move.punct",
                                "move.punct.notation",
                                "moves.moves.punct.notation",
                                "moves.rules.punct.variant"
                            ]
                            .contains(&field.as_str()),
                            "{:?}",
                            s
                        ),
                    }
                    prop_assert_eq!(created, 0, "a refused call created a game");
                }
            }
            Ok(())
        })
        .unwrap();
    rt.block_on(server.stop()).unwrap();
}

fn rules_of(variant: i32) -> pb::GameRules {
    pb::GameRules {
        game: Some(pb::game_rules::Game::Punct(ppb::RuleOptions {
            variant,
            ..Default::default()
        })),
    }
}

// ---------------------------------------------------------------------------
// Garbage message bodies
// ---------------------------------------------------------------------------

mod raw {
    //! A tonic client codec that sends and receives message bodies as bytes.
    use prost::bytes::{Buf, BufMut};
    use tonic::Status;
    use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};

    #[derive(Debug, Clone, Copy, Default)]
    pub struct RawCodec;

    impl Codec for RawCodec {
        type Encode = Vec<u8>;
        type Decode = Vec<u8>;
        type Encoder = RawCodec;
        type Decoder = RawCodec;
        fn encoder(&mut self) -> RawCodec {
            RawCodec
        }
        fn decoder(&mut self) -> RawCodec {
            RawCodec
        }
    }

    impl Encoder for RawCodec {
        type Item = Vec<u8>;
        type Error = Status;
        fn encode(&mut self, item: Vec<u8>, buf: &mut EncodeBuf<'_>) -> Result<(), Status> {
            buf.put_slice(&item);
            Ok(())
        }
    }

    impl Decoder for RawCodec {
        type Item = Vec<u8>;
        type Error = Status;
        fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<Vec<u8>>, Status> {
            let out = buf.chunk().to_vec();
            buf.advance(out.len());
            Ok(Some(out))
        }
    }
}

const UNARY_METHODS: [&str; 14] = [
    "CreateGame",
    "GetGame",
    "ListGames",
    "ListLegalMoves",
    "SubmitMove",
    "Resign",
    "OfferDraw",
    "AcceptDraw",
    "AbortGame",
    "ValidateMove",
    "ExportGame",
    "ImportGame",
    "ClaimVictory",
    "RenderPosition",
];

/// Arbitrary bytes as the body of every unary method (and WatchGame): prost
/// either decodes them (protobuf is lenient: unknown fields are skipped) and
/// the handler answers like for any request, or tonic's decoder refuses them
/// with `INTERNAL` before a handler runs (tonic's choice; docs/FUZZING.md). In
/// both cases a clean status or answer, and the same connection keeps serving.
#[test]
fn garbage_bodies_get_a_clean_status_and_the_connection_survives() {
    let rt = runtime();
    let server = rt.block_on(TestServer::start());
    let channel = rt.block_on(server.channel());
    let mut client = pb::referee_service_client::RefereeServiceClient::new(channel.clone());
    let table = rt.block_on(create(&mut client, ppb::Variant::Standard));
    let before = rt.block_on(observe(&mut client, &table.id));
    let body = prop_oneof![
        prop::collection::vec(any::<u8>(), 0..64),
        // Field 1 (game id / record / page size …) as a length-delimited
        // string of invalid UTF-8.
        prop::collection::vec(0x80u8..0xff, 1..16).prop_map(|b| {
            let mut v = vec![0x0a, b.len() as u8];
            v.extend(b);
            v
        }),
        // A length prefix longer than the body.
        Just(vec![0x0a, 0x7f, b'a']),
    ];
    let mut runner = TestRunner::new(config(96));
    let decoded = Cell::new(0u32);
    let internal = Cell::new(0u32);
    runner
        .run(&(0..UNARY_METHODS.len() + 1, body), |(m, bytes)| {
            let path = match UNARY_METHODS.get(m) {
                Some(name) => format!("/referee.v1.RefereeService/{name}"),
                None => "/referee.v1.RefereeService/WatchGame".to_string(),
            };
            let answer = rt.block_on(async {
                let mut grpc = tonic::client::Grpc::new(channel.clone());
                grpc.ready().await.expect("the connection is ready");
                let path = http::uri::PathAndQuery::try_from(path.as_str()).unwrap();
                let request = tonic::Request::new(bytes.clone());
                if m == UNARY_METHODS.len() {
                    match grpc.server_streaming(request, path, raw::RawCodec).await {
                        Ok(stream) => {
                            let mut stream = stream.into_inner();
                            within(5, stream.message()).await.map(drop)
                        }
                        Err(s) => Err(s),
                    }
                } else {
                    grpc.unary(request, path, raw::RawCodec).await.map(drop)
                }
            });
            match answer {
                Ok(()) => decoded.set(decoded.get() + 1),
                Err(s) if s.code() == Code::Internal => {
                    prop_assert!(
                        s.message().contains("decode"),
                        "INTERNAL from something else than tonic's decoder: {:?}",
                        s
                    );
                    internal.set(internal.get() + 1);
                }
                Err(s) => {
                    check_refusal(&s)?;
                    decoded.set(decoded.get() + 1);
                }
            }
            Ok(())
        })
        .unwrap();
    let (decoded, internal) = (decoded.get(), internal.get());
    assert!(
        decoded > 0 && internal > 0,
        "decoded {decoded}, refused by tonic {internal}"
    );
    // The same connection still serves, and the game is untouched (a garbage
    // body that decodes names no real game: ids are 32 random hex digits).
    let after = rt.block_on(observe(&mut client, &table.id));
    assert_eq!(before, after);
    rt.block_on(server.stop()).unwrap();
}
