//! Every error code of the contract, with its rich details decoded the way a
//! client in any language would (google.rpc.Status details via tonic-types),
//! and the promise that a refused call changes nothing.

use crate::common;

use common::*;
use punct_referee::service::ServerOptions;
use punct_referee::service::grpc::pb::punct::v1 as ppb;
use punct_referee::service::grpc::pb::referee::v1 as pb;
use punct_referee::service::sessions::Limits;
use tonic::Code;
use tonic_types::StatusExt;

fn bad_field(s: &tonic::Status) -> String {
    s.get_details_bad_request()
        .expect("BadRequest details")
        .field_violations[0]
        .field
        .clone()
}

fn reason(s: &tonic::Status) -> String {
    let info = s.get_details_error_info().expect("ErrorInfo details");
    assert_eq!(info.domain, "referee.v1");
    info.reason
}

async fn submit_with(
    client: &mut Client,
    id: &str,
    token: &str,
    mv: pb::Move,
    ply: u32,
) -> tonic::Status {
    client
        .submit_move(pb::SubmitMoveRequest {
            game_id: id.to_string(),
            token: token.to_string(),
            r#move: Some(mv),
            expected_ply: ply,
            request_id: String::new(),
        })
        .await
        .expect_err("the call must be refused")
}

#[tokio::test]
async fn malformed_input_is_invalid_argument_with_the_field() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let t = create(&mut c, ppb::Variant::Standard).await;

    let s = submit_with(&mut c, &t.id, &t.white, place("SE", "Z99", 0), 0).await;
    assert_eq!(s.code(), Code::InvalidArgument);
    assert_eq!(bad_field(&s), "move.punct.place.punct");
    assert!(s.message().contains("Z99"));

    let s = submit_with(&mut c, &t.id, &t.white, place("XX", "E5", 0), 0).await;
    assert_eq!(s.code(), Code::InvalidArgument);
    assert_eq!(bad_field(&s), "move.punct.place.code");

    let s = submit_with(&mut c, &t.id, &t.white, place("SE", "E5", 9), 0).await;
    assert_eq!(bad_field(&s), "move.punct.rotation");

    let s = submit_with(&mut c, &t.id, &t.white, notation("SE@E5;F5-G5"), 0).await;
    assert_eq!(s.code(), Code::InvalidArgument);
    assert_eq!(bad_field(&s), "move.punct.notation");

    let s = submit_with(&mut c, &t.id, &t.white, shift("E5", "Q1", 0), 0).await;
    assert_eq!(bad_field(&s), "move.punct.shift.to");

    let empty = pb::Move {
        game: Some(pb::r#move::Game::Punct(ppb::Move::default())),
    };
    let s = submit_with(&mut c, &t.id, &t.white, empty, 0).await;
    assert_eq!(bad_field(&s), "move.punct");

    // Both forms, naming different moves.
    let mut both = place("SE", "A5", 0);
    if let Some(pb::r#move::Game::Punct(p)) = both.game.as_mut() {
        p.notation = "SE@E5:F5,G5".into();
    }
    let s = submit_with(&mut c, &t.id, &t.white, both, 0).await;
    assert_eq!(s.code(), Code::InvalidArgument);
    assert_eq!(bad_field(&s), "move");

    let s = c
        .import_game(pb::ImportGameRequest {
            record: "game: punct\n\nSE@E1:E2,E3\nSE@E1:E2,E3\n".into(),
            labels: Default::default(),
        })
        .await
        .unwrap_err();
    assert_eq!(s.code(), Code::InvalidArgument);
    assert_eq!(bad_field(&s), "record");
    let info = s.get_details_error_info().unwrap();
    assert_eq!(
        (info.reason.as_str(), info.metadata["line"].as_str()),
        ("SPACE_NOT_EMPTY", "4")
    );

    let s = c
        .create_game(pb::CreateGameRequest {
            rules: None,
            labels: [("bad key".to_string(), "v".to_string())].into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(
        (s.code(), bad_field(&s).as_str()),
        (Code::InvalidArgument, "labels")
    );

    // None of it changed the game.
    assert_eq!(get(&mut c, &t.id).await.ply, 0);
    server.stop().await.unwrap();
}

#[tokio::test]
async fn unknown_game_is_not_found_with_resource_info() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let s = c
        .get_game(pb::GetGameRequest {
            game_id: "nope".into(),
            token: String::new(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(s.code(), Code::NotFound);
    let info = s.get_details_resource_info().expect("ResourceInfo");
    assert_eq!(
        (info.resource_type.as_str(), info.resource_name.as_str()),
        ("referee.v1.Game", "nope")
    );
    let s = submit_with(&mut c, "nope", "", notation("SE@E5:F5,G5"), 0).await;
    assert_eq!(s.code(), Code::NotFound);
    let s = c
        .watch_game(pb::WatchGameRequest {
            game_id: "nope".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(s.code(), Code::NotFound);
    server.stop().await.unwrap();
}

#[tokio::test]
async fn bad_tokens_are_unauthenticated_or_permission_denied() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let t = create(&mut c, ppb::Variant::Standard).await;
    let other = create(&mut c, ppb::Variant::Standard).await;
    let mv = || notation("SE@E5:F5,G5");

    let s = submit_with(&mut c, &t.id, "", mv(), 0).await;
    assert_eq!(
        (s.code(), reason(&s).as_str()),
        (Code::Unauthenticated, "TOKEN_MISSING")
    );
    let s = submit_with(&mut c, &t.id, "letmein", mv(), 0).await;
    assert_eq!(
        (s.code(), reason(&s).as_str()),
        (Code::Unauthenticated, "TOKEN_MALFORMED")
    );
    let s = submit_with(&mut c, &t.id, &other.white, mv(), 0).await;
    assert_eq!(
        (s.code(), reason(&s).as_str()),
        (Code::PermissionDenied, "WRONG_TOKEN")
    );
    let s = c
        .resign(pb::ResignRequest {
            game_id: t.id.clone(),
            token: other.black.clone(),
        })
        .await
        .unwrap_err();
    assert_eq!(s.code(), Code::PermissionDenied);

    // Reads never return a token.
    let game = get(&mut c, &t.id).await;
    let text = format!("{game:?}");
    assert!(!text.contains(&t.white) && !text.contains(&t.black));
    assert_eq!(game.ply, 0);
    server.stop().await.unwrap();
}

#[tokio::test]
async fn rule_breaks_are_failed_precondition_with_the_engine_reason() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let t = create(&mut c, ppb::Variant::Standard).await;

    // Out of turn.
    let s = submit_with(&mut c, &t.id, &t.black, notation("SE@E5:F5,G5"), 0).await;
    assert_eq!(
        (s.code(), reason(&s).as_str()),
        (Code::FailedPrecondition, "NOT_YOUR_TURN")
    );
    // On the centre in the standard game.
    let s = submit_with(&mut c, &t.id, &t.white, notation("SE@I9:J9,K9"), 0).await;
    assert_eq!(
        (s.code(), reason(&s).as_str()),
        (Code::FailedPrecondition, "CENTRE_STANDARD")
    );
    // Moving a piece that is not there.
    let s = submit_with(&mut c, &t.id, &t.white, shift("E5", "E6", 0), 0).await;
    assert_eq!(reason(&s), "NO_PIECE_AT");
    // Onto a taken space.
    submit(&mut c, &t, 0, notation("SE@E5:F5,G5"))
        .await
        .unwrap();
    let s = submit_with(&mut c, &t.id, &t.black, notation("SE@F5:F6,F7"), 1).await;
    assert_eq!(reason(&s), "SPACE_NOT_EMPTY");
    // The opponent's piece.
    let s = submit_with(&mut c, &t.id, &t.black, notation("E5>E8:F8,G8"), 1).await;
    assert_eq!(reason(&s), "NOT_YOUR_PIECE");
    // No draw offer standing; too late to abort.
    let s = c
        .accept_draw(pb::AcceptDrawRequest {
            game_id: t.id.clone(),
            token: t.black.clone(),
        })
        .await
        .unwrap_err();
    assert_eq!(
        (s.code(), reason(&s).as_str()),
        (Code::FailedPrecondition, "NO_DRAW_OFFER")
    );
    submit(&mut c, &t, 1, notation("SE@M5:M6,M7"))
        .await
        .unwrap();
    let s = c
        .abort_game(pb::AbortGameRequest {
            game_id: t.id.clone(),
            token: t.white.clone(),
        })
        .await
        .unwrap_err();
    assert_eq!(reason(&s), "ABORT_TOO_LATE");
    // Game over.
    c.resign(pb::ResignRequest {
        game_id: t.id.clone(),
        token: t.white.clone(),
    })
    .await
    .unwrap();
    let s = submit_with(&mut c, &t.id, &t.white, notation("SE@A5:A6,A7"), 2).await;
    assert_eq!(
        (s.code(), reason(&s).as_str()),
        (Code::FailedPrecondition, "GAME_OVER")
    );
    assert_eq!(get(&mut c, &t.id).await.ply, 2);
    server.stop().await.unwrap();
}

#[tokio::test]
async fn stale_ply_is_aborted_and_not_applied() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let t = create(&mut c, ppb::Variant::Standard).await;
    submit(&mut c, &t, 0, notation("SE@E5:F5,G5"))
        .await
        .unwrap();
    let s = submit_with(&mut c, &t.id, &t.black, notation("SE@M5:M6,M7"), 0).await;
    assert_eq!(
        (s.code(), reason(&s).as_str()),
        (Code::Aborted, "STALE_PLY")
    );
    let info = s.get_details_error_info().unwrap();
    assert_eq!(
        (
            info.metadata["expected_ply"].as_str(),
            info.metadata["current_ply"].as_str()
        ),
        ("0", "1")
    );
    assert_eq!(get(&mut c, &t.id).await.ply, 1);
    // A resume point beyond the game is out of range.
    let s = c
        .watch_game(pb::WatchGameRequest {
            game_id: t.id.clone(),
            from_ply: Some(5),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(
        (s.code(), bad_field(&s).as_str()),
        (Code::OutOfRange, "from_ply")
    );
    server.stop().await.unwrap();
}

#[tokio::test]
async fn limits_are_resource_exhausted_with_quota_failure() {
    let server = TestServer::start_with(ServerOptions {
        limits: Limits {
            max_sessions: 1,
            max_watchers_per_game: 1,
            ..Limits::default()
        },
        ..test_options()
    })
    .await;
    let mut c = server.client().await;
    let t = create(&mut c, ppb::Variant::Standard).await;
    let s = c
        .create_game(pb::CreateGameRequest::default())
        .await
        .unwrap_err();
    assert_eq!(
        (s.code(), reason(&s).as_str()),
        (Code::ResourceExhausted, "LIMIT_REACHED")
    );
    assert_eq!(
        s.get_details_quota_failure().unwrap().violations[0].subject,
        "sessions"
    );

    let _watching = c
        .watch_game(pb::WatchGameRequest {
            game_id: t.id.clone(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let s = c
        .watch_game(pb::WatchGameRequest {
            game_id: t.id.clone(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(s.code(), Code::ResourceExhausted);
    assert_eq!(
        s.get_details_quota_failure().unwrap().violations[0].subject,
        "watchers_per_game"
    );
    drop(_watching);
    server.stop().await.unwrap();
}

#[tokio::test]
async fn oversized_messages_are_refused() {
    let server = TestServer::start_with(ServerOptions {
        max_message_bytes: 1024,
        ..test_options()
    })
    .await;
    let mut c = server.client().await;
    let s = c
        .import_game(pb::ImportGameRequest {
            record: "#".repeat(4096),
            labels: Default::default(),
        })
        .await
        .unwrap_err();
    // tonic's decoder answers an oversized message with OUT_OF_RANGE.
    assert_eq!(s.code(), Code::OutOfRange, "{s:?}");
    assert!(s.message().contains("too large"), "{s:?}");
    server.stop().await.unwrap();
}

/// Regression (found by tests/api_properties.rs): bad rule options in
/// `ValidateMove`'s history named `CreateGame`'s field (`rules.punct.variant`),
/// a path that does not exist in that request.
#[tokio::test]
async fn bad_rules_in_a_history_name_the_history_fields() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let history = |variant: i32, end_on_supply: i32| pb::ValidateMoveRequest {
        history: Some(pb::validate_move_request::History::Moves(pb::GameHistory {
            rules: Some(pb::GameRules {
                game: Some(pb::game_rules::Game::Punct(ppb::RuleOptions {
                    variant,
                    end_on_supply,
                    ..Default::default()
                })),
            }),
            moves: vec![],
            seed: String::new(),
        })),
        r#move: Some(notation("SE@E5:F5,G5")),
    };
    let s = c.validate_move(history(99, 0)).await.unwrap_err();
    assert_eq!(
        (s.code(), bad_field(&s).as_str()),
        (Code::InvalidArgument, "moves.rules.punct.variant")
    );
    let s = c.validate_move(history(0, -1)).await.unwrap_err();
    assert_eq!(bad_field(&s), "moves.rules.punct.end_on_supply");
    let no_game = pb::ValidateMoveRequest {
        history: Some(pb::validate_move_request::History::Moves(pb::GameHistory {
            rules: Some(pb::GameRules { game: None }),
            moves: vec![],
            seed: String::new(),
        })),
        r#move: Some(notation("SE@E5:F5,G5")),
    };
    let s = c.validate_move(no_game).await.unwrap_err();
    assert_eq!(bad_field(&s), "moves.rules");
    // CreateGame keeps its own paths.
    let s = c
        .create_game(pb::CreateGameRequest {
            rules: Some(rules_with_variant(99)),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(bad_field(&s), "rules.punct.variant");
    server.stop().await.unwrap();
}

fn rules_with_variant(variant: i32) -> pb::GameRules {
    pb::GameRules {
        game: Some(pb::game_rules::Game::Punct(ppb::RuleOptions {
            variant,
            ..Default::default()
        })),
    }
}

/// A 100 KB id, a notation and a label: each refusal quotes only a bounded
/// part of the input (with its length), so the status fits the 16 KiB of
/// metadata a standard client takes and the client sees the real refusal,
/// not a client-side RESOURCE_EXHAUSTED.
#[tokio::test]
async fn huge_inputs_are_refused_with_a_short_status_a_standard_client_reads() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let huge = "x".repeat(100_000);
    let check = |s: tonic::Status, codes: &[Code]| {
        assert!(codes.contains(&s.code()), "{:?}: {}", s.code(), s.message());
        assert!(
            s.message().len() < 1024,
            "{} bytes of message",
            s.message().len()
        );
        // The encoded google.rpc.Status of grpc-status-details-bin.
        assert!(
            s.details().len() < 2048,
            "{} bytes of details",
            s.details().len()
        );
        let mut headers = http::HeaderMap::new();
        s.add_header(&mut headers).expect("headers");
        let size: usize = headers
            .iter()
            .map(|(k, v)| k.as_str().len() + v.len())
            .sum();
        assert!(size < 4096, "{size} bytes of status headers");
        s
    };
    let s = check(
        c.get_game(pb::GetGameRequest {
            game_id: huge.clone(),
            ..Default::default()
        })
        .await
        .unwrap_err(),
        &[Code::NotFound],
    );
    assert!(s.message().contains("… (100000 bytes)"), "{}", s.message());
    let info = s.get_details_resource_info().expect("ResourceInfo");
    assert!(info.resource_name.starts_with("xxxx"));
    assert!(info.resource_name.ends_with("… (100000 bytes)"));
    check(
        submit_with(&mut c, &huge, "", notation("SE@E5:F5,G5"), 0).await,
        &[Code::NotFound, Code::InvalidArgument],
    );
    check(
        c.watch_game(pb::WatchGameRequest {
            game_id: huge.clone(),
            ..Default::default()
        })
        .await
        .unwrap_err(),
        &[Code::NotFound, Code::InvalidArgument],
    );
    // Input quoted inside a sentence: a huge notation on a real game.
    let table = create(&mut c, ppb::Variant::Standard).await;
    check(
        submit_with(&mut c, &table.id, table.token_at(0), notation(&huge), 0).await,
        &[Code::InvalidArgument, Code::FailedPrecondition],
    );
    server.stop().await.unwrap();
}

/// A notation of spaces or tabs only is a malformed notation like any
/// other (Punto's docs/rules/punto.md §4.4: reason `MALFORMED`), in SubmitMove and in
/// ValidateMove, for every game; and nothing changes.
#[tokio::test]
async fn a_whitespace_only_notation_is_malformed_notation() {
    use punct_referee::service::grpc::pb::dots::v1 as dpb;
    use punct_referee::service::grpc::pb::punto::v1 as tpb;
    let server = TestServer::start().await;
    let mut c = server.client().await;
    // Each game's rules, how its notation goes into a move, and the field
    // a malformed notation is refused on.
    type Notated = fn(&str) -> pb::Move;
    let games: [(pb::GameRules, Notated, &str); 3] = [
        (
            pb::GameRules {
                game: Some(pb::game_rules::Game::Punto(tpb::RuleOptions {
                    players: 2,
                    ..Default::default()
                })),
            },
            |t| pb::Move {
                game: Some(pb::r#move::Game::Punto(Box::new(tpb::Move {
                    notation: t.into(),
                    ..Default::default()
                }))),
            },
            "move.punto.notation",
        ),
        (
            pb::GameRules {
                game: Some(pb::game_rules::Game::Dots(dpb::RuleOptions::default())),
            },
            |t| pb::Move {
                game: Some(pb::r#move::Game::Dots(Box::new(dpb::Move {
                    notation: t.into(),
                    ..Default::default()
                }))),
            },
            "move.dots.notation",
        ),
        (
            rules(ppb::Variant::Standard),
            notation,
            "move.punct.notation",
        ),
    ];
    for (rules, text, field) in games {
        let created = c
            .create_game(pb::CreateGameRequest {
                rules: Some(rules.clone()),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        let id = created.game.unwrap().game_id;
        let token = created.seats[0].token.clone();
        for blank in [" ", "\t", " \t "] {
            let s = submit_with(&mut c, &id, &token, text(blank), 0).await;
            assert_eq!(s.code(), Code::InvalidArgument, "{field} {blank:?}");
            assert_eq!(bad_field(&s), field, "{blank:?}");
            let s = c
                .validate_move(pb::ValidateMoveRequest {
                    history: Some(pb::validate_move_request::History::Moves(pb::GameHistory {
                        rules: Some(rules.clone()),
                        moves: Vec::new(),
                        seed: if field == "move.punto.notation" {
                            "00".repeat(32)
                        } else {
                            String::new()
                        },
                    })),
                    r#move: Some(text(blank)),
                })
                .await
                .unwrap_err();
            assert_eq!(s.code(), Code::InvalidArgument, "{field} {blank:?}");
            assert_eq!(bad_field(&s), field, "{blank:?}");
            if field == "move.punto.notation" {
                assert!(s.message().contains("MALFORMED"), "{}", s.message());
            }
        }
        assert_eq!(get(&mut c, &id).await.ply, 0);
    }
    server.stop().await.unwrap();
}

/// A seat the game does not have is refused with the game's own seat range
/// (a two-seat game's seats are 1 to 2), in ClaimVictory and
/// ListLegalMoves; a seat number no game has, on an unknown game, is
/// `NOT_FOUND`.
#[tokio::test]
async fn a_seat_out_of_range_names_the_games_own_seats() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let t = create(&mut c, ppb::Variant::Standard).await;
    for against in [3, 5, 99] {
        let s = c
            .claim_victory(pb::ClaimVictoryRequest {
                game_id: t.id.clone(),
                token: t.white.clone(),
                against,
            })
            .await
            .unwrap_err();
        assert_eq!(s.code(), Code::InvalidArgument);
        assert_eq!(bad_field(&s), "against");
        assert!(
            s.message().contains("the game's seats are 1 to 2"),
            "{}",
            s.message()
        );
        let s = c
            .list_legal_moves(pb::ListLegalMovesRequest {
                game_id: t.id.clone(),
                seat: against,
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(bad_field(&s), "seat");
        assert!(
            s.message().contains("the game's seats are 1 to 2"),
            "{}",
            s.message()
        );
    }
    let s = c
        .claim_victory(pb::ClaimVictoryRequest {
            game_id: "nope".into(),
            token: t.white.clone(),
            against: 5,
        })
        .await
        .unwrap_err();
    assert_eq!(s.code(), Code::NotFound);
    assert_eq!(get(&mut c, &t.id).await.outcome, None);
    server.stop().await.unwrap();
}
