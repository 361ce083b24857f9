//! Whole games through the real server: a connection win, the last-piece
//! endings of both variants, ValidateMove / ExportGame / ImportGame.

use crate::common;
// GetGame's views at every ply of random games of every game (in this
// binary rather than one of its own: one test target less to build).
#[path = "service_game/snapshot_views.rs"]
mod snapshot_views;

#[path = "service_game/records.rs"]
mod records;

use common::*;
use punct_referee::games::punct::{Engine, Move, RuleOptions, Variant};
use punct_referee::service::grpc::pb::punct::v1 as ppb;
use punct_referee::service::grpc::pb::referee::v1 as pb;

fn punct_outcome(o: &pb::Outcome) -> &ppb::OutcomeDetail {
    match o.detail.as_ref().expect("detail") {
        pb::outcome::Detail::Punct(d) => d,
        other => panic!("not a PÜNCT outcome: {other:?}"),
    }
}

fn punct_state(g: &pb::Game) -> &ppb::GameState {
    match g
        .state
        .as_ref()
        .and_then(|s| s.game.as_ref())
        .expect("state")
    {
        pb::game_state::Game::Punct(s) => s,
        other => panic!("not a PÜNCT state: {other:?}"),
    }
}

#[tokio::test]
async fn complete_game_ends_in_a_connection_win_seen_by_a_watcher() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    let table = create(&mut client, ppb::Variant::Standard).await;
    let mut watch = client
        .watch_game(pb::WatchGameRequest {
            game_id: table.id.clone(),
            from_ply: None,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();

    let mut last = None;
    for (ply, text) in CONNECTION_GAME.iter().enumerate() {
        let ply = ply as u32;
        // Alternate the two input forms: notation, and structured (resolved
        // from the notation by the legal-move list).
        let mv = if ply.is_multiple_of(2) {
            notation(text)
        } else {
            let legal = client
                .list_legal_moves(pb::ListLegalMovesRequest {
                    game_id: table.id.clone(),
                    seat: 0,
                    token: String::new(),
                    ..Default::default()
                })
                .await
                .unwrap()
                .into_inner();
            assert_eq!(legal.ply, ply);
            let found = legal
                .moves
                .iter()
                .find(|m| punct_of(m).notation == *text)
                .expect("legal");
            let mut structured = found.clone();
            if let Some(pb::r#move::Game::Punct(p)) = structured.game.as_mut() {
                p.notation.clear();
            }
            structured
        };
        let r = submit(&mut client, &table, ply, mv)
            .await
            .expect("legal move");
        assert_eq!(r.ply, ply + 1);
        assert_eq!(punct_of(r.r#move.as_ref().unwrap()).notation, *text);
        last = Some(r);
    }
    let last = last.unwrap();
    assert_eq!(last.status, pb::GameStatus::Finished as i32);
    let outcome = last.outcome.unwrap();
    assert_eq!(outcome.reason, "CONNECTION");
    assert_eq!(outcome.winners.first().copied().unwrap_or(NO_SEAT), WHITE);
    assert_eq!(punct_outcome(&outcome).sides, ppb::SidePair::Rows as i32);

    // The watcher saw the snapshot, every move in order, then game over, then
    // the stream ended cleanly.
    let first = within(5, watch.message()).await.unwrap().unwrap();
    assert!(matches!(
        first.item,
        Some(pb::watch_game_response::Item::Snapshot(_))
    ));
    for ply in 1..=11u64 {
        let m = within(5, watch.message()).await.unwrap().unwrap();
        match m.item {
            Some(pb::watch_game_response::Item::Event(e)) => {
                assert_eq!(e.sequence, ply);
                assert!(matches!(e.kind, Some(pb::game_event::Kind::MoveApplied(_))));
            }
            other => panic!("expected an event, got {other:?}"),
        }
    }
    let over = within(5, watch.message()).await.unwrap().unwrap();
    match over.item {
        Some(pb::watch_game_response::Item::Event(e)) => {
            assert_eq!(e.sequence, 12);
            assert!(matches!(e.kind, Some(pb::game_event::Kind::GameOver(_))));
        }
        other => panic!("expected game over, got {other:?}"),
    }
    assert!(within(5, watch.message()).await.unwrap().is_none());

    // The snapshot shows the board: stacks bottom first, pieces, supplies.
    let game = get(&mut client, &table.id).await;
    assert_eq!(game.to_move, NO_SEAT);
    let state = punct_state(&game);
    // Only the occupied spaces are listed: every piece's three (the
    // scripted game stacks none).
    let board = state.board.as_ref().unwrap();
    assert_eq!(board.spaces.len(), 3 * board.pieces.len());
    assert!(
        board
            .spaces
            .iter()
            .all(|s| s.height >= 1 && !s.dots.is_empty())
    );
    let e1 = state
        .board
        .as_ref()
        .unwrap()
        .spaces
        .iter()
        .find(|s| s.space == "E1")
        .unwrap();
    assert_eq!(
        (e1.height, e1.dots.len(), e1.top),
        (1, 1, ppb::Colour::White as i32)
    );
    assert!(e1.dots[0].punct);
    assert!(
        !board.spaces.iter().any(|s| s.space == "I9"),
        "the empty centre is not listed"
    );
    assert_eq!(state.board.as_ref().unwrap().pieces.len(), 11);
    let white_supply = &state.board.as_ref().unwrap().supplies[0];
    assert_eq!(white_supply.total, 18 - 6);
    assert_eq!(
        punct_of(game.last_move.as_ref().unwrap()).notation,
        "T@I16:J16,J17"
    );

    server.stop().await.unwrap();
}

/// Plays placements only (chosen with the local engine so that none ends the
/// game early), optionally moving one White piece into the centre first.
async fn play_to_supply_end(variant: Variant, white_takes_centre: bool) -> pb::SubmitMoveResponse {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    let pv = match variant {
        Variant::Standard => ppb::Variant::Standard,
        Variant::Basic => ppb::Variant::Basic,
    };
    let table = create(&mut client, pv).await;
    let mut local = Engine::new(RuleOptions::of(variant));
    let mut centre_taken = !white_takes_centre;
    loop {
        let ply = local.position().ply();
        let legal = local.legal_moves();
        let want_centre = !centre_taken && ply >= 4 && ply.is_multiple_of(2);
        let choice = legal
            .iter()
            .copied()
            .filter(|m| match m {
                Move::Place { .. } => !want_centre,
                Move::Shift { to, .. } => want_centre && to.is_centre(),
            })
            .find(|&m| {
                let mut trial = local.clone();
                let played = trial.play(m).expect("generated moves are legal");
                // Only the last placement of a supply may end the game.
                played.outcome.is_none()
                    || (played.outcome.unwrap().reason.name() != "CONNECTION"
                        && matches!(m, Move::Place { .. }))
            })
            .expect("a move that does not end the game early");
        if matches!(choice, Move::Shift { .. }) {
            centre_taken = true;
        }
        let text = local.position().notate(choice).unwrap().to_string();
        local.play(choice).unwrap();
        let r = submit(&mut client, &table, ply, notation(&text))
            .await
            .expect("legal");
        if r.status == pb::GameStatus::Finished as i32 {
            assert!(local.is_over());
            server.stop().await.unwrap();
            return r;
        }
    }
}

#[tokio::test]
async fn basic_game_ends_undecided_when_the_last_piece_is_placed() {
    let r = play_to_supply_end(Variant::Basic, false).await;
    let outcome = r.outcome.unwrap();
    assert_eq!(outcome.reason, "LAST_PIECE");
    assert!(outcome.draw);
    assert_eq!(outcome.winners.first().copied().unwrap_or(NO_SEAT), NO_SEAT);
    // White placed all 18 pieces: turn 35.
    assert_eq!(r.ply, 35);
}

#[tokio::test]
async fn standard_game_ends_with_a_centre_count_when_the_last_piece_is_placed() {
    let r = play_to_supply_end(Variant::Standard, false).await;
    let outcome = r.outcome.unwrap();
    assert_eq!(outcome.reason, "CENTER_COUNT");
    let d = punct_outcome(&outcome);
    assert!(d.centre_counted);
    assert_eq!((d.centre_white, d.centre_black), (0, 0));
    assert!(outcome.draw);
}

#[tokio::test]
async fn standard_centre_count_goes_to_the_player_on_the_centre() {
    let r = play_to_supply_end(Variant::Standard, true).await;
    let outcome = r.outcome.unwrap();
    assert_eq!(outcome.reason, "CENTER_COUNT");
    let d = punct_outcome(&outcome);
    assert!(d.centre_white > 0);
    assert_eq!(d.centre_black, 0);
    assert_eq!(outcome.winners.first().copied().unwrap_or(NO_SEAT), WHITE);
}

#[tokio::test]
async fn validate_export_import_round_trip() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    let table = create(&mut client, ppb::Variant::Standard).await;
    for (ply, text) in CONNECTION_GAME[..10].iter().enumerate() {
        submit(&mut client, &table, ply as u32, notation(text))
            .await
            .unwrap();
    }
    let record = export_checked(&mut client, &table.id, "").await;
    assert!(record.starts_with("game: punct\nvariant: standard\n"));
    assert_eq!(record.lines().filter(|l| l.contains('@')).count(), 10);

    // Stateless: the winning move is legal and would end the game...
    let v = client
        .validate_move(pb::ValidateMoveRequest {
            history: Some(pb::validate_move_request::History::Record(record.clone())),
            r#move: Some(notation(CONNECTION_GAME[10])),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(v.legal);
    assert_eq!(v.seat, WHITE);
    assert_eq!(v.ply, 11);
    assert_eq!(v.outcome.unwrap().reason, "CONNECTION");
    // ...a fifth SE piece is not, and the answer says why...
    let v = client
        .validate_move(pb::ValidateMoveRequest {
            history: Some(pb::validate_move_request::History::Record(record.clone())),
            r#move: Some(place("SE", "E1", 2)),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(!v.legal);
    assert_eq!(v.reason, "NO_PIECE_IN_SUPPLY");
    // ...and the same history given as structured moves gives the same answer.
    let v = client
        .validate_move(pb::ValidateMoveRequest {
            history: Some(pb::validate_move_request::History::Moves(pb::GameHistory {
                rules: Some(rules(ppb::Variant::Standard)),
                moves: CONNECTION_GAME[..10].iter().map(|t| notation(t)).collect(),
                seed: String::new(),
            })),
            r#move: Some(notation(CONNECTION_GAME[10])),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(v.legal);
    // No session was created by validation.
    let listed = client
        .list_games(pb::ListGamesRequest::default())
        .await
        .unwrap()
        .into_inner();
    assert_eq!(listed.games.len(), 1);

    // Import: a new session at the same point, playable to the same end.
    let imported = client
        .import_game(pb::ImportGameRequest {
            record: record.clone(),
            labels: [("event".to_string(), "replay".to_string())].into(),
        })
        .await
        .unwrap()
        .into_inner();
    let game = imported.game.clone().unwrap();
    assert_eq!(game.ply, 10);
    assert_eq!(game.labels["event"], "replay");
    let copy = table_of(game, &imported.seats);
    assert_ne!(copy.id, table.id);
    let r = submit(&mut client, &copy, 10, notation(CONNECTION_GAME[10]))
        .await
        .unwrap();
    assert_eq!(r.outcome.unwrap().reason, "CONNECTION");
    let exported = export_checked(&mut client, &copy.id, "").await;
    assert!(exported.contains("event: replay"));
    assert!(exported.contains("result: white CONNECTION"));
    // A finished record imports as a finished game.
    let again = client
        .import_game(pb::ImportGameRequest {
            record: exported,
            labels: Default::default(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(again.game.unwrap().status, pb::GameStatus::Finished as i32);
    server.stop().await.unwrap();
}

#[tokio::test]
async fn referee_actions_end_games_with_their_reasons() {
    let server = TestServer::start().await;
    let mut client = server.client().await;

    let t = create(&mut client, ppb::Variant::Standard).await;
    let g = client
        .resign(pb::ResignRequest {
            game_id: t.id.clone(),
            token: t.white.clone(),
        })
        .await
        .unwrap()
        .into_inner()
        .game
        .unwrap();
    let o = g.outcome.unwrap();
    assert_eq!(
        (
            o.reason.as_str(),
            o.winners.first().copied().unwrap_or(NO_SEAT)
        ),
        ("RESIGNATION", BLACK)
    );

    let t = create(&mut client, ppb::Variant::Standard).await;
    let offered = client
        .offer_draw(pb::OfferDrawRequest {
            game_id: t.id.clone(),
            token: t.white.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(!offered.agreed);
    assert_eq!(offered.game.unwrap().draw_offers, [WHITE]);
    let g = client
        .accept_draw(pb::AcceptDrawRequest {
            game_id: t.id.clone(),
            token: t.black.clone(),
        })
        .await
        .unwrap()
        .into_inner()
        .game
        .unwrap();
    assert_eq!(g.outcome.unwrap().reason, "DRAW_AGREEMENT");

    let t = create(&mut client, ppb::Variant::Basic).await;
    submit(&mut client, &t, 0, notation(CONNECTION_GAME[0]))
        .await
        .unwrap();
    let g = client
        .abort_game(pb::AbortGameRequest {
            game_id: t.id.clone(),
            token: t.black.clone(),
        })
        .await
        .unwrap()
        .into_inner()
        .game
        .unwrap();
    assert_eq!(g.outcome.unwrap().reason, "ABORTED");

    let finished = client
        .list_games(pb::ListGamesRequest {
            status: pb::GameStatus::Finished as i32,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(finished.games.len(), 3);
    server.stop().await.unwrap();
}

async fn legal(
    client: &mut Client,
    id: &str,
    view: pb::MovesView,
) -> Result<pb::ListLegalMovesResponse, tonic::Status> {
    client
        .list_legal_moves(pb::ListLegalMovesRequest {
            game_id: id.to_string(),
            view: view as i32,
            ..Default::default()
        })
        .await
        .map(tonic::Response::into_inner)
}

/// The notation view lists the same moves as the full one, in the same
/// order, at every ply of random games; the list of a ply follows the game
/// (a move, a resignation) although it is computed once per ply.
#[tokio::test]
async fn the_notation_view_lists_the_full_views_moves_at_every_ply() {
    use rand::{RngExt, SeedableRng};
    let server = TestServer::start().await;
    let mut client = server.client().await;
    let mut rng = rand::rngs::StdRng::seed_from_u64(16);
    for _ in 0..3 {
        let table = create(&mut client, ppb::Variant::Standard).await;
        for ply in 0..40u32 {
            let full = legal(&mut client, &table.id, pb::MovesView::Full)
                .await
                .unwrap();
            let compact = legal(&mut client, &table.id, pb::MovesView::Notation)
                .await
                .unwrap();
            let unspecified = legal(&mut client, &table.id, pb::MovesView::Unspecified)
                .await
                .unwrap();
            assert_eq!(unspecified, full, "unspecified is the full view");
            assert_eq!((compact.ply, compact.to_move), (full.ply, full.to_move));
            assert!(compact.moves.is_empty() && full.notations.is_empty());
            let full_notations: Vec<&str> = full
                .moves
                .iter()
                .map(|m| punct_of(m).notation.as_str())
                .collect();
            assert_eq!(compact.notations, full_notations, "ply {ply}");
            let text = legal(&mut client, &table.id, pb::MovesView::Text)
                .await
                .unwrap();
            assert!(text.moves.is_empty() && text.notations.is_empty());
            assert_eq!((text.ply, text.to_move), (full.ply, full.to_move));
            let lines: String = full_notations.iter().map(|n| format!("{n}\n")).collect();
            assert_eq!(text.notation_text, lines.as_bytes(), "ply {ply}");
            assert_eq!(full.ply, ply);
            if compact.notations.is_empty() {
                break;
            }
            let pick = &compact.notations[rng.random_range(0..compact.notations.len())];
            let r = submit(&mut client, &table, ply, notation(pick))
                .await
                .unwrap();
            if r.outcome.is_some() {
                break;
            }
        }
        let before = legal(&mut client, &table.id, pb::MovesView::Notation)
            .await
            .unwrap();
        if !before.notations.is_empty() {
            client
                .resign(pb::ResignRequest {
                    game_id: table.id.clone(),
                    token: table.token_at(before.ply).to_string(),
                })
                .await
                .unwrap();
        }
        let after = legal(&mut client, &table.id, pb::MovesView::Notation)
            .await
            .unwrap();
        assert!(after.notations.is_empty(), "a finished game has no moves");
        let after = legal(&mut client, &table.id, pb::MovesView::Text)
            .await
            .unwrap();
        assert!(after.notation_text.is_empty());
        assert_eq!(after.to_move, NO_SEAT);
    }
    let table = create(&mut client, ppb::Variant::Standard).await;
    let bad = client
        .list_legal_moves(pb::ListLegalMovesRequest {
            game_id: table.id.clone(),
            view: 7,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(bad.code(), tonic::Code::InvalidArgument);
    assert_eq!(bad.message(), "view: 7 is not a MovesView");
    server.stop().await.unwrap();
}

#[tokio::test]
async fn get_game_names_each_callers_view_of_one_shared_answer() {
    // An open game's answer is encoded once per state for every viewer;
    // only the viewer field (and the clock and presence) is the caller's.
    let server = TestServer::start().await;
    let mut client = server.client().await;
    let table = create(&mut client, ppb::Variant::Standard).await;
    submit(&mut client, &table, 0, notation(CONNECTION_GAME[0]))
        .await
        .unwrap();
    let mut answers = Vec::new();
    for (token, viewer) in [
        (table.white.clone(), WHITE),
        (String::new(), NO_SEAT),
        (table.black.clone(), BLACK),
        (table.white.clone(), WHITE),
    ] {
        let mut game = client
            .get_game(pb::GetGameRequest {
                game_id: table.id.clone(),
                token,
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner()
            .game
            .unwrap();
        assert_eq!(game.viewer, viewer);
        assert_eq!(game.ply, 1);
        assert!(game.clock.is_some() && game.presence.is_some());
        game.viewer = 0;
        game.presence = None;
        answers.push(game);
    }
    assert!(answers.windows(2).all(|w| w[0] == w[1]), "the same answer");
}
