//! Every record the server exports is canonical per its game's rules: games
//! of each game and option set (seeded and unseeded starts, client entropy),
//! finished by each ending (the board, resignation, draw agreement, abort,
//! timeout), unfinished, and imported, all read by the strict readers of
//! `tests/common/strict_records.rs`; and those readers refuse a record with
//! a key the rules do not know.

use std::time::Duration;

use punct_referee::service::grpc::pb::dots::v1 as dpb;
use punct_referee::service::grpc::pb::punct::v1 as ppb;
use punct_referee::service::grpc::pb::punto::v1 as tpb;
use punct_referee::service::grpc::pb::referee::v1 as pb;

use crate::common::{self, Client, TestServer, checked, export_checked, strict_records};

fn dots(start: dpb::Start) -> pb::GameRules {
    pb::GameRules {
        game: Some(pb::game_rules::Game::Dots(dpb::RuleOptions {
            width: 8,
            height: 8,
            start: start as i32,
            ..Default::default()
        })),
    }
}

fn punto(players: u32, team: bool, entropy: &[u8]) -> pb::GameRules {
    pb::GameRules {
        game: Some(pb::game_rules::Game::Punto(tpb::RuleOptions {
            players,
            team,
            rounds_to_win: Some(1),
            entropy: entropy.to_vec(),
            ..Default::default()
        })),
    }
}

fn punct(variant: ppb::Variant, max_plies: Option<u32>) -> pb::GameRules {
    pb::GameRules {
        game: Some(pb::game_rules::Game::Punct(ppb::RuleOptions {
            variant: variant as i32,
            max_plies,
            ..Default::default()
        })),
    }
}

/// A move of `rules`' game in notation.
fn text_move(rules: &pb::GameRules, text: &str) -> pb::Move {
    let game = match rules.game.as_ref() {
        Some(pb::game_rules::Game::Dots(_)) => pb::r#move::Game::Dots(Box::new(dpb::Move {
            notation: text.into(),
            ..Default::default()
        })),
        Some(pb::game_rules::Game::Punto(_)) => pb::r#move::Game::Punto(Box::new(tpb::Move {
            notation: text.into(),
            ..Default::default()
        })),
        _ => return common::notation(text),
    };
    pb::Move { game: Some(game) }
}

struct Game {
    id: String,
    tokens: Vec<String>,
    rules: pb::GameRules,
}

async fn create(
    c: &mut Client,
    rules: pb::GameRules,
    seed: &str,
    time_control: Option<pb::TimeControl>,
) -> Game {
    let r = c
        .create_game(pb::CreateGameRequest {
            rules: Some(rules.clone()),
            labels: [("event".to_string(), "records".to_string())].into(),
            time_control,
            seed: seed.into(),
            ..Default::default()
        })
        .await
        .expect("create")
        .into_inner();
    Game {
        id: r.game.unwrap().game_id,
        tokens: r.seats.into_iter().map(|s| s.token).collect(),
        rules,
    }
}

/// Plays up to `n` moves (the `pick`-th legal move, modulo their number),
/// stopping at the end of the game; whether it ended.
async fn play(c: &mut Client, g: &Game, n: usize, pick: usize) -> bool {
    for i in 0..n {
        let legal = c
            .list_legal_moves(pb::ListLegalMovesRequest {
                game_id: g.id.clone(),
                view: pb::MovesView::Notation as i32,
                ..Default::default()
            })
            .await
            .expect("legal moves")
            .into_inner();
        if legal.to_move == 0 || legal.notations.is_empty() {
            return true;
        }
        let text = &legal.notations[(i * 7 + pick) % legal.notations.len()];
        c.submit_move(pb::SubmitMoveRequest {
            game_id: g.id.clone(),
            token: g.tokens[legal.to_move as usize - 1].clone(),
            r#move: Some(text_move(&g.rules, text)),
            expected_ply: legal.ply,
            ..Default::default()
        })
        .await
        .expect("a legal move");
    }
    common::get(c, &g.id).await.outcome.is_some()
}

/// Exports `g`, checks it strictly, imports it and checks the import's
/// export too (the round trip of ImportGame); returns the first reading.
async fn export_and_reimport(c: &mut Client, g: &Game) -> strict_records::Checked {
    let record = export_checked(c, &g.id, "").await;
    let read = checked(&record);
    // A record that withholds its seed (a seeded game in progress) cannot
    // be replayed by anyone until the end.
    if !read.ended && (read.game == "punto" || record.contains("\nx-commitment: ")) {
        return read;
    }
    let imported = c
        .import_game(pb::ImportGameRequest {
            record: record.clone(),
            labels: Default::default(),
        })
        .await
        .unwrap_or_else(|e| panic!("import of our own record: {e}\n{record}"));
    let id = imported.into_inner().game.unwrap().game_id;
    let again = export_checked(c, &id, "").await;
    assert_eq!(checked(&again), read, "{record}\n{again}");
    read
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_exported_record_is_canonical_for_its_game() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let seed = "00".repeat(31) + "2a";
    let all_rules = [
        ("dots empty", dots(dpb::Start::Empty), ""),
        ("dots cross", dots(dpb::Start::Cross), ""),
        ("dots double-cross", dots(dpb::Start::DoubleCross), ""),
        ("dots quadruple-cross", dots(dpb::Start::QuadrupleCross), ""),
        (
            "dots quadruple-cross, seed given",
            dots(dpb::Start::QuadrupleCross),
            seed.as_str(),
        ),
        ("punto 2", punto(2, false, &[]), ""),
        ("punto 3", punto(3, false, &[]), ""),
        ("punto 4", punto(4, false, &[]), ""),
        ("punto teams, entropy", punto(4, true, &[1, 2, 3]), ""),
        ("punct standard", punct(ppb::Variant::Standard, None), ""),
        (
            "punct basic, 40 plies",
            punct(ppb::Variant::Basic, Some(40)),
            "",
        ),
    ];
    for (what, rules, seed) in all_rules {
        // Unfinished, with a few moves, and without any.
        let g = create(&mut c, rules.clone(), seed, None).await;
        let read = export_and_reimport(&mut c, &g).await;
        assert!(!read.ended && read.moves == 0, "{what}: {read:?}");
        assert!(!play(&mut c, &g, 3, 1).await, "{what}");
        let read = export_and_reimport(&mut c, &g).await;
        assert!(!read.ended && read.moves == 3, "{what}: {read:?}");
        // Played to the board's end (or the move limit).
        let g = create(&mut c, rules.clone(), seed, None).await;
        assert!(play(&mut c, &g, 3000, 0).await, "{what}: the game ends");
        let read = export_and_reimport(&mut c, &g).await;
        assert!(read.ended, "{what}: {read:?}");
        // The referee's endings, after one move.
        for ending in ["resign", "draw", "abort"] {
            let g = create(&mut c, rules.clone(), seed, None).await;
            play(&mut c, &g, 1, 0).await;
            let mover = g.tokens[1].clone();
            match ending {
                "resign" => {
                    c.resign(pb::ResignRequest {
                        game_id: g.id.clone(),
                        token: mover,
                    })
                    .await
                    .expect("resign");
                }
                "draw" => {
                    c.offer_draw(pb::OfferDrawRequest {
                        game_id: g.id.clone(),
                        token: g.tokens[0].clone(),
                    })
                    .await
                    .expect("offer");
                    for t in &g.tokens[1..] {
                        c.accept_draw(pb::AcceptDrawRequest {
                            game_id: g.id.clone(),
                            token: t.clone(),
                        })
                        .await
                        .expect("accept");
                    }
                }
                _ => {
                    let aborted = c
                        .abort_game(pb::AbortGameRequest {
                            game_id: g.id.clone(),
                            token: mover,
                        })
                        .await;
                    // A seat cannot abort a game that has dealt (Punto from
                    // its start; docs/API.md): no abort record to read.
                    if what.starts_with("punto") {
                        let refused = aborted.expect_err("a seat's abort of a dealt game");
                        assert_eq!(refused.code(), tonic::Code::FailedPrecondition, "{what}");
                        continue;
                    }
                    aborted.expect("abort");
                }
            }
            let read = export_and_reimport(&mut c, &g).await;
            assert!(read.ended, "{what}, {ending}: {read:?}");
            let seats = g.tokens.len() as u32;
            if ending == "resign" {
                assert!(!read.winners.contains(&2), "{what}: {read:?}");
                assert!(!read.winners.is_empty() && read.winners.len() < seats as usize);
            } else {
                assert!(read.winners.is_empty(), "{what}, {ending}: {read:?}");
            }
        }
        // A flag that falls.
        let g = create(
            &mut c,
            rules.clone(),
            seed,
            Some(pb::TimeControl {
                lag_compensation: None,
                mode: Some(pb::time_control::Mode::PerMove(pb::PerMoveClock {
                    move_ms: 200,
                })),
                first_move_deadline_ms: None,
            }),
        )
        .await;
        play(&mut c, &g, 1, 0).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let read = export_and_reimport(&mut c, &g).await;
        assert!(read.ended && !read.winners.is_empty(), "{what}: {read:?}");
    }
}

#[test]
fn the_strict_readers_refuse_what_the_rules_refuse() {
    let c = "0".repeat(64);
    let good = [
        "game: dots\nwidth: 8\nheight: 8\nstart: empty\n\n3,2\nground\n".to_string(),
        format!(
            "game: punto\nplayers: 2\nteam: no\nrounds_to_win: 2\nmax_rounds: 0\ncommitment: {c}\n\nround 1\nR7 0,0\n"
        ),
        "game: punct\nvariant: standard\nx-event: club\n\nSE@E5:F5,G5\n".to_string(),
    ];
    for text in &good {
        strict_records::check(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    }
    let bad = [
        // Unknown keys (Dots allows none, not even `x-` in canonical form;
        // Punto's canonical contents are §12's list; PÜNCT's own keys are
        // `x-`).
        "game: dots\nwidth: 8\nheight: 8\nstart: empty\nevent: club\n\n".to_string(),
        "game: dots\nwidth: 8\nheight: 8\nstart: empty\nx-event: club\n\n".to_string(),
        "game: dots\nwidth: 8\nheight: 8\nstart: quadruple-cross\ncommitment: 00\n\n".to_string(),
        format!(
            "game: punto\nplayers: 2\nteam: no\nrounds_to_win: 2\nmax_rounds: 0\ncommitment: {c}\nred-blue: bot1\n\nround 1\n"
        ),
        "game: punct\nvariant: standard\nevent: club\n\n".to_string(),
        // Out of order, CR LF, no final LF, lenient spacing, bad moves.
        "game: dots\nheight: 8\nwidth: 8\nstart: empty\n\n".to_string(),
        "game: dots\r\nwidth: 8\r\nheight: 8\r\nstart: empty\r\n\r\n".to_string(),
        "game: dots\nwidth: 8\nheight: 8\nstart: empty\n\n3,2".to_string(),
        "game: dots\nwidth:  8\nheight: 8\nstart: empty\n\n".to_string(),
        "game: dots\nwidth: 8\nheight: 8\nstart: empty\n\n03,2\n".to_string(),
        format!(
            "game: punto\nplayers: 2\nteam: no\nrounds_to_win: 2\nmax_rounds: 0\ncommitment: {c}\n\nround 1\nR7 -0,0\n"
        ),
        "game: punct\nvariant: standard\n\nSE@E5:G5,F5\n".to_string(),
    ];
    for text in &bad {
        assert!(
            strict_records::check(text).is_err(),
            "accepted a non-canonical record:\n{text}"
        );
    }
}
