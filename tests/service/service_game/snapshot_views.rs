//! GetGame's views (docs/API.md "Compact reads"): at every ply of seeded
//! random games of every game, for a spectator and for every seat,
//! `SNAPSHOT_VIEW_COMPACT` is the full snapshot with exactly the fields the
//! contract names left out, and what it leaves out of a PÜNCT board (each
//! space's stack) is rebuilt from the pieces it keeps to the very stacks
//! the full view lists. The unspecified view is the full one; an unknown
//! view is refused.

use crate::common::*;
use punct_referee::games::punct::Space;
use punct_referee::service::grpc::pb::dots::v1 as dpb;
use punct_referee::service::grpc::pb::punct::v1 as ppb;
use punct_referee::service::grpc::pb::punto::v1 as tpb;
use punct_referee::service::grpc::pb::referee::v1 as pb;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

async fn get_view(client: &mut Client, id: &str, token: &str, view: i32) -> pb::Game {
    client
        .get_game(pb::GetGameRequest {
            game_id: id.to_string(),
            token: token.to_string(),
            view,
        })
        .await
        .expect("get")
        .into_inner()
        .game
        .expect("game")
}

/// What changes with time alone (the clock runs, a seat's absence grows):
/// left out of both sides of a comparison.
fn timeless(mut game: pb::Game) -> pb::Game {
    game.clock = None;
    game.presence = None;
    game
}

/// The compact view as the contract describes it, written from the
/// proto's comments (not from the server's code).
fn expected_compact(full: &pb::Game) -> pb::Game {
    let mut game = full.clone();
    game.labels.clear();
    game.rules = None;
    game.time_control = None;
    game.created_unix_ms = 0;
    game.seats.clear();
    game.setup = None;
    match game.state.as_mut().and_then(|s| s.game.as_mut()) {
        Some(pb::game_state::Game::Punct(s)) => {
            s.rules = None;
            s.picture = String::new();
            if let Some(board) = s.board.as_mut() {
                board.spaces = Vec::new();
            }
        }
        Some(pb::game_state::Game::Dots(s)) => {
            s.rules = None;
            s.picture = String::new();
        }
        Some(pb::game_state::Game::Punto(s)) => {
            s.rules = None;
            s.picture = String::new();
        }
        None => {}
    }
    game
}

/// Each occupied space's stack, bottom first, in the board's canonical
/// order, rebuilt from the pieces alone as a client would.
fn stacks_from_pieces(pieces: &[ppb::Piece]) -> Vec<ppb::SpaceStack> {
    let mut stacks: Vec<ppb::SpaceStack> = Vec::new();
    for space in Space::all() {
        let name = space.to_string();
        let mut dots: Vec<ppb::Dot> = pieces
            .iter()
            .filter(|p| p.spaces.contains(&name))
            .map(|p| ppb::Dot {
                colour: p.colour,
                piece_id: p.id,
                code: p.code.clone(),
                level: p.level,
                punct: p.punct == name,
            })
            .collect();
        if dots.is_empty() {
            continue;
        }
        dots.sort_by_key(|d| d.level);
        let top = dots.last().expect("a dot");
        stacks.push(ppb::SpaceStack {
            space: name,
            centre: space.is_centre(),
            height: top.level + 1,
            top: top.colour,
            dots,
        });
    }
    stacks
}

/// A move of `game` written as `text`.
fn wire_move(game: &pb::game_rules::Game, text: &str) -> pb::Move {
    use pb::r#move::Game;
    let notation = text.to_string();
    pb::Move {
        game: Some(match game {
            pb::game_rules::Game::Punct(_) => Game::Punct(ppb::Move {
                notation,
                ..Default::default()
            }),
            pb::game_rules::Game::Dots(_) => Game::Dots(Box::new(dpb::Move {
                notation,
                ..Default::default()
            })),
            pb::game_rules::Game::Punto(_) => Game::Punto(Box::new(tpb::Move {
                notation,
                ..Default::default()
            })),
        }),
    }
}

/// Plays a seeded random game of `rules` to its end or `max_plies`,
/// comparing the views at every ply for a spectator and every seat.
/// Returns the plies played.
async fn compare_views_over(
    client: &mut Client,
    rules: pb::GameRules,
    seed: &str,
    rng: &mut StdRng,
    max_plies: u32,
) -> u32 {
    let rules_game = rules.game.clone().expect("a game");
    let created = client
        .create_game(pb::CreateGameRequest {
            rules: Some(rules),
            seed: seed.to_string(),
            labels: [("event".to_string(), "views".to_string())].into(),
            ..Default::default()
        })
        .await
        .expect("create")
        .into_inner();
    let id = created.game.expect("game").game_id;
    let tokens: Vec<(u32, String)> = created
        .seats
        .iter()
        .map(|s| (s.seat, s.token.clone()))
        .collect();
    let viewers: Vec<&str> = std::iter::once("")
        .chain(tokens.iter().map(|(_, t)| t.as_str()))
        .collect();
    for ply in 0..=max_plies {
        let mut to_move = NO_SEAT;
        for &token in &viewers {
            let full = get_view(client, &id, token, pb::SnapshotView::Full as i32).await;
            let compact = get_view(client, &id, token, pb::SnapshotView::Compact as i32).await;
            let unspecified =
                get_view(client, &id, token, pb::SnapshotView::Unspecified as i32).await;
            assert_eq!(full.ply, ply);
            assert!(full.rules.is_some() && !full.seats.is_empty());
            assert_eq!(
                timeless(unspecified),
                timeless(full.clone()),
                "unspecified is the full view (ply {ply})"
            );
            assert_eq!(
                timeless(compact.clone()),
                timeless(expected_compact(&full)),
                "ply {ply}, viewer {:?}",
                full.viewer
            );
            if let Some(pb::game_state::Game::Punct(s)) =
                full.state.as_ref().and_then(|s| s.game.as_ref())
            {
                let Some(pb::game_state::Game::Punct(c)) =
                    compact.state.as_ref().and_then(|s| s.game.as_ref())
                else {
                    panic!("a PÜNCT state");
                };
                let (full_board, board) = (s.board.as_ref().unwrap(), c.board.as_ref().unwrap());
                assert_eq!(
                    stacks_from_pieces(&board.pieces),
                    full_board.spaces,
                    "the stacks follow from the pieces (ply {ply})"
                );
                assert!(!s.picture.is_empty() && c.picture.is_empty());
            }
            to_move = full.to_move;
        }
        if to_move == NO_SEAT || ply == max_plies {
            return ply;
        }
        let token = &tokens.iter().find(|(s, _)| *s == to_move).expect("mover").1;
        let legal = client
            .list_legal_moves(pb::ListLegalMovesRequest {
                game_id: id.clone(),
                seat: to_move,
                token: token.clone(),
                view: pb::MovesView::Text as i32,
            })
            .await
            .expect("legal")
            .into_inner();
        let text = String::from_utf8(legal.notation_text.to_vec()).expect("utf-8");
        let moves: Vec<&str> = text.lines().collect();
        assert!(
            !moves.is_empty(),
            "a game in progress has moves (ply {ply})"
        );
        let pick = moves[rng.random_range(0..moves.len())];
        client
            .submit_move(pb::SubmitMoveRequest {
                game_id: id.clone(),
                token: token.clone(),
                r#move: Some(wire_move(&rules_game, pick)),
                expected_ply: ply,
                request_id: String::new(),
            })
            .await
            .unwrap_or_else(|s| panic!("{pick} at ply {ply}: {}", s.message()));
    }
    max_plies
}

#[tokio::test]
async fn the_compact_view_is_the_full_one_less_what_never_changes_or_is_derived() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    let mut rng = StdRng::seed_from_u64(0x5649_4557);
    let punct = |variant: ppb::Variant| rules(variant);
    let dots = |width: u32, height: u32, start: dpb::Start| pb::GameRules {
        game: Some(pb::game_rules::Game::Dots(dpb::RuleOptions {
            width,
            height,
            start: start as i32,
            max_moves: 0,
        })),
    };
    let punto = |players: u32, team: bool| pb::GameRules {
        game: Some(pb::game_rules::Game::Punto(tpb::RuleOptions {
            players,
            team,
            rounds_to_win: Some(1),
            max_rounds: 0,
            entropy: b"views".to_vec(),
        })),
    };
    let mut played = Vec::new();
    for (rules, seed, plies) in [
        (punct(ppb::Variant::Standard), String::new(), 60),
        (punct(ppb::Variant::Standard), String::new(), 60),
        (punct(ppb::Variant::Basic), String::new(), 60),
        (dots(9, 9, dpb::Start::Cross), String::new(), 40),
        (dots(12, 10, dpb::Start::Empty), String::new(), 40),
        (punto(2, false), String::new(), 40),
        (punto(4, true), String::new(), 40),
        (punto(3, false), "5a".repeat(32), 40),
    ] {
        played.push(compare_views_over(&mut client, rules, &seed, &mut rng, plies).await);
    }
    // The games were long enough to stack pieces and fill boards.
    assert!(played.iter().all(|&p| p >= 10), "plies played: {played:?}");

    // An unknown view is refused, naming the field.
    let table = create(&mut client, ppb::Variant::Standard).await;
    let bad = client
        .get_game(pb::GetGameRequest {
            game_id: table.id.clone(),
            token: String::new(),
            view: 9,
        })
        .await
        .unwrap_err();
    assert_eq!(bad.code(), tonic::Code::InvalidArgument);
    assert_eq!(bad.message(), "view: 9 is not a SnapshotView");
    server.stop().await.unwrap();
}
