//! Punto through the real server (gRPC and the HTTP page): a 4-seat team
//! match and a 3-seat match played to the end with each seat's token and
//! moves picked from ListLegalMoves; the commitment in every snapshot, the
//! seed only after the end, and the deal recomputed by the test from the
//! revealed seed with the engine's deal functions; nothing hidden reaching
//! any seat or spectator; option and move errors; round-over notices on
//! watch streams; import and adjudication of records; resignation and draw
//! agreement among three seats.

use crate::common;
#[path = "service_punto/seeds.rs"]
mod seeds;

use std::net::SocketAddr;

use common::*;
use punct_referee::games::punto::{Card, CardCounts, Cell, Colour, Engine, Key, RuleOptions, deal};
use punct_referee::games::{Setup, hex, parse_seed};
use punct_referee::service::grpc::pb::punto::v1 as tpb;
use punct_referee::service::grpc::pb::referee::v1 as pb;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio_stream::StreamExt as _;
use tonic::Code;
use tonic_types::StatusExt;

fn rules(players: u32, team: bool, rounds_to_win: u32, entropy: &[u8]) -> pb::GameRules {
    pb::GameRules {
        game: Some(pb::game_rules::Game::Punto(tpb::RuleOptions {
            players,
            team,
            rounds_to_win: Some(rounds_to_win),
            max_rounds: 0,
            entropy: entropy.to_vec(),
        })),
    }
}

async fn create_with(
    c: &mut Client,
    rules: pb::GameRules,
    seed: &str,
) -> Result<(pb::Game, Vec<String>), tonic::Status> {
    let r = c
        .create_game(pb::CreateGameRequest {
            rules: Some(rules),
            seed: seed.to_string(),
            ..Default::default()
        })
        .await?
        .into_inner();
    let tokens = r.seats.iter().map(|s| s.token.clone()).collect();
    Ok((r.game.expect("game"), tokens))
}

fn state(g: &pb::Game) -> &tpb::GameState {
    match g.state.as_ref().and_then(|s| s.game.as_ref()) {
        Some(pb::game_state::Game::Punto(s)) => s,
        other => panic!("not a Punto state: {other:?}"),
    }
}

fn punto_of(m: &pb::Move) -> &tpb::Move {
    match &m.game {
        Some(pb::r#move::Game::Punto(p)) => p,
        other => panic!("not a Punto move: {other:?}"),
    }
}

fn cell_move(x: i32, y: i32) -> pb::Move {
    pb::Move {
        game: Some(pb::r#move::Game::Punto(Box::new(tpb::Move {
            cell: Some(tpb::Cell { x, y }),
            ..Default::default()
        }))),
    }
}

fn text_move(text: &str) -> pb::Move {
    pb::Move {
        game: Some(pb::r#move::Game::Punto(Box::new(tpb::Move {
            notation: text.to_string(),
            ..Default::default()
        }))),
    }
}

fn text(card: &Option<tpb::Card>) -> String {
    card.as_ref().map(|c| c.text.clone()).unwrap_or_default()
}

async fn get_as(c: &mut Client, id: &str, token: &str) -> pb::Game {
    c.get_game(pb::GetGameRequest {
        game_id: id.to_string(),
        token: token.to_string(),
        ..Default::default()
    })
    .await
    .expect("get")
    .into_inner()
    .game
    .expect("game")
}

async fn submit_move(
    c: &mut Client,
    id: &str,
    token: &str,
    mv: pb::Move,
    ply: u32,
) -> Result<pb::SubmitMoveResponse, tonic::Status> {
    c.submit_move(pb::SubmitMoveRequest {
        game_id: id.to_string(),
        token: token.to_string(),
        r#move: Some(mv),
        expected_ply: ply,
        request_id: String::new(),
    })
    .await
    .map(tonic::Response::into_inner)
}

async fn export(c: &mut Client, id: &str, token: &str) -> String {
    export_checked(c, id, token).await
}

fn bad_field(s: &tonic::Status) -> String {
    s.get_details_bad_request()
        .expect("BadRequest details")
        .field_violations[0]
        .field
        .clone()
}

fn reason(s: &tonic::Status) -> String {
    s.get_details_error_info()
        .expect("ErrorInfo details")
        .reason
}

/// No deck order, no seed: what every snapshot before the end must keep.
fn assert_secret_kept(g: &pb::Game) {
    let st = state(g);
    assert_eq!(st.seed, "", "the seed before the end");
    assert_eq!(g.setup.as_ref().expect("setup").seed, "");
    for d in &st.decks {
        assert!(d.order.is_empty(), "a deck order before the end: {d:?}");
        assert_eq!(d.contents.len() as u32, d.size);
    }
}

/// A tiny deterministic generator for picking moves.
struct Pick(u64);

impl Pick {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n as u64) as usize
    }
}

/// What a match played to the end left.
struct Played {
    /// Every placement's cell and card, in order.
    moves: Vec<(Cell, String)>,
    /// Every revealed card: (round, seat, card), the first one included.
    revealed: Vec<(u32, u32, String)>,
    /// The game after the last move.
    end: pb::Game,
    /// Records exported before the end (after ply 5).
    mid_record: String,
}

/// Plays `id` to its end with the seat tokens, checking what each snapshot
/// shows and hides.
async fn play_out(c: &mut Client, id: &str, tokens: &[String], seed: u64) -> Played {
    let mut pick = Pick(seed);
    let first = get(c, id).await;
    let commitment = state(&first).commitment.clone();
    assert_eq!(commitment.len(), 64);
    assert_eq!(first.setup.as_ref().unwrap().commitment, commitment);
    let mut revealed = vec![(1, 1, text(&state(&first).revealed))];
    let mut moves = Vec::new();
    let mut mid_record = String::new();
    loop {
        let g = get(c, id).await;
        let st = state(&g);
        assert_eq!(
            st.commitment, commitment,
            "the commitment in every snapshot"
        );
        assert_eq!(g.setup.as_ref().unwrap().commitment, commitment);
        if g.status == pb::GameStatus::Finished as i32 {
            break;
        }
        assert_secret_kept(&g);
        assert_eq!(g.ply, st.ply);
        assert_eq!(g.to_move, st.mover);
        // Every seat sees what a spectator sees (docs/rules/punto.md §11).
        if g.ply % 9 == 0 {
            for (i, t) in tokens.iter().enumerate() {
                let mine = get_as(c, id, t).await;
                assert_eq!(mine.viewer, i as u32 + 1);
                assert_eq!(state(&mine), st, "seat {}'s view", i + 1);
            }
        }
        if g.ply == 5 {
            mid_record = export(c, id, &tokens[0]).await;
            assert!(!mid_record.contains("\nseed:"), "{mid_record}");
            assert!(mid_record.contains(&format!("commitment: {commitment}")));
        }
        let mover = g.to_move as usize;
        let token = &tokens[mover - 1];
        let legal = c
            .list_legal_moves(pb::ListLegalMovesRequest {
                game_id: id.to_string(),
                seat: 0,
                token: token.clone(),
                ..Default::default()
            })
            .await
            .expect("legal moves")
            .into_inner();
        assert_eq!((legal.ply, legal.to_move), (g.ply, g.to_move));
        assert!(!legal.moves.is_empty());
        for m in &legal.moves {
            let p = punto_of(m);
            assert!(!p.played);
            assert_eq!(p.card, st.revealed);
            assert_eq!(p.seat, g.to_move);
            // A listed move never says what it would reveal.
            assert!(p.next.is_none() && p.round_result.is_none() && p.deal.is_empty());
        }
        // Another seat's token is not the mover's.
        let other = &tokens[mover % tokens.len()];
        let chosen = punto_of(&legal.moves[pick.below(legal.moves.len())]).clone();
        let cell = chosen.cell.expect("cell");
        let s = submit_move(c, id, other, cell_move(cell.x, cell.y), g.ply)
            .await
            .expect_err("not that seat's turn");
        assert_eq!(s.code(), Code::FailedPrecondition);
        assert_eq!(reason(&s), "NOT_YOUR_TURN");
        let r = submit_move(c, id, token, text_move(&chosen.notation), g.ply)
            .await
            .expect("a listed move is legal");
        let p = punto_of(r.r#move.as_ref().unwrap());
        assert!(p.played);
        assert_eq!((r.seat, r.ply), (g.to_move, g.ply + 1));
        assert_eq!(p.card, st.revealed);
        assert_eq!(p.notation, chosen.notation);
        moves.push((Cell::new(cell.x, cell.y), text(&p.card)));
        if let Some(next) = &p.next {
            assert_eq!(next.seat, r.to_move);
            revealed.push((next.round, next.seat, text(&next.card)));
        }
        if let Some(result) = &p.round_result {
            assert_eq!(result.round, st.round);
            if r.outcome.is_none() {
                assert_eq!(p.deal.len(), tokens.len(), "the next deal");
                assert_eq!(result.next_first, r.to_move);
            }
        } else {
            assert!(p.deal.is_empty());
        }
    }
    Played {
        moves,
        revealed,
        end: get(c, id).await,
        mid_record,
    }
}

/// Round 1's decks recomputed from the seed with the engine's deal
/// functions (docs/rules/punto.md §10.6), seat order, top first.
fn round_one_decks(options: &RuleOptions, seed: &[u8; 32]) -> Vec<Vec<Card>> {
    let key = Key::new(seed, options.entropy());
    let colour = |c| CardCounts::of_colour(c);
    match (options.players(), options.team()) {
        (3, _) => {
            let (shares, _) = deal::deal_neutral(&key, 1, &colour(Colour::Green), 0);
            [Colour::Red, Colour::Orange, Colour::Blue]
                .iter()
                .enumerate()
                .map(|(s, &c)| {
                    let cards = colour(c).plus(&CardCounts::of_cards(&shares[s]));
                    deal::deal_deck(&key, 1, s, &cards)
                })
                .collect()
        }
        (4, true) => {
            let (one, three) =
                deal::deal_team(&key, 1, 1, &colour(Colour::Red).plus(&colour(Colour::Blue)));
            let (two, four) = deal::deal_team(
                &key,
                1,
                2,
                &colour(Colour::Orange).plus(&colour(Colour::Green)),
            );
            vec![one, two, three, four]
        }
        (4, false) => [Colour::Red, Colour::Orange, Colour::Blue, Colour::Green]
            .iter()
            .enumerate()
            .map(|(s, &c)| deal::deal_deck(&key, 1, s, &colour(c)))
            .collect(),
        other => panic!("no such table here: {other:?}"),
    }
}

/// Checks the revealed seed against the commitment, every round-1 card
/// against the recomputed deal, and every card of the match against a
/// replay of the engine from the seed; returns the seed.
fn check_the_deal(p: &Played, options: &RuleOptions) -> [u8; 32] {
    let st = state(&p.end);
    let seed = parse_seed(&st.seed).expect("the seed once over");
    assert_eq!(p.end.setup.as_ref().unwrap().seed, st.seed);
    let setup = Setup {
        seed,
        supplied: false,
    };
    assert_eq!(hex(&setup.commitment()), st.commitment, "SHA-256(S) = C");
    // Round 1: each seat's revealed cards are its deck from the top.
    let decks = round_one_decks(options, &seed);
    for (seat, deck) in decks.iter().enumerate() {
        let seen: Vec<String> = p
            .revealed
            .iter()
            .filter(|(r, s, _)| *r == 1 && *s == seat as u32 + 1)
            .map(|(_, _, c)| c.clone())
            .collect();
        let dealt: Vec<String> = deck.iter().take(seen.len()).map(Card::to_string).collect();
        assert_eq!(seen, dealt, "seat {}'s round-1 cards", seat + 1);
    }
    assert!(p.revealed.iter().filter(|(r, _, _)| *r == 1).count() > 4);
    // Every card of every round: a replay from the seed.
    let mut engine = Engine::new(*options, &seed);
    for (cell, card) in &p.moves {
        assert_eq!(
            engine.revealed().map(|c| c.to_string()).as_ref(),
            Some(card)
        );
        engine.play(*cell).expect("the server's moves replay");
    }
    assert!(engine.is_over());
    assert_eq!(engine.results().len(), st.results.len());
    // Once over, every deck's remaining order is shown, and it is the deal's.
    for d in &st.decks {
        let seat = punct_referee::games::Seat::from_number(d.seat).unwrap();
        let order: Vec<String> = d.order.iter().map(|c| c.text.clone()).collect();
        let remaining: Vec<String> = engine
            .round()
            .deck(seat)
            .remaining()
            .iter()
            .map(Card::to_string)
            .collect();
        assert_eq!(order, remaining);
    }
    seed
}

#[tokio::test]
async fn a_team_match_is_played_to_the_end_and_its_deal_checked() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let entropy = [0xca, 0xfe];
    let (g, tokens) = create_with(&mut c, rules(4, true, 2, &entropy), "")
        .await
        .expect("create");
    assert_eq!(tokens.len(), 4);
    let names: Vec<&str> = g.seats.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "red-blue-1",
            "orange-green-1",
            "red-blue-2",
            "orange-green-2"
        ]
    );
    let st = state(&g);
    assert_eq!(st.rules.as_ref().unwrap().entropy, entropy);
    assert_eq!(st.row_length, 5);
    assert_eq!(st.sides.len(), 2);
    assert_eq!(st.sides[0].side.as_ref().unwrap().seats, [1, 3]);
    assert_eq!(st.sides[1].side.as_ref().unwrap().name, "team 2");
    assert_eq!(
        st.decks.iter().map(|d| d.size).collect::<Vec<_>>(),
        [17, 18, 18, 18],
        "36 cards a team, split 18/18, seat 1's first card revealed"
    );
    assert!(!g.setup.as_ref().unwrap().supplied);

    let played = play_out(&mut c, &g.game_id, &tokens, 7).await;
    let options = RuleOptions::new(4, true, 2, 0, &entropy).unwrap();
    check_the_deal(&played, &options);

    let end = &played.end;
    let outcome = end.outcome.as_ref().expect("outcome");
    assert_eq!(outcome.reason, "ROUNDS_WON");
    let Some(pb::outcome::Detail::Punto(detail)) = &outcome.detail else {
        panic!("no Punto detail: {outcome:?}");
    };
    let winner = detail.winner.as_ref().expect("a winning team");
    // A team wins together: both its seats are the winners.
    assert_eq!(outcome.winners, winner.seats);
    assert!(winner.team == 1 || winner.team == 2);
    assert_eq!(winner.name, format!("team {}", winner.team));
    assert_eq!(detail.round_wins[winner.team as usize - 1], 2);
    // Scores are each seat's team's round wins.
    let wins = &detail.round_wins;
    assert_eq!(
        outcome.scores,
        [wins[0], wins[1], wins[0], wins[1]].map(i64::from)
    );
    assert_eq!(end.to_move, 0);
    let record = export(&mut c, &end.game_id, "").await;
    assert!(record.contains(&format!("seed: {}", state(end).seed)));
    assert!(record.contains(&format!("result: team {}", winner.team)));
    assert!(record.contains("entropy: cafe"));
}

/// Every item of a watch stream until it ends.
async fn watch_all(mut c: Client, id: String) -> Vec<pb::WatchGameResponse> {
    let mut stream = c
        .watch_game(pb::WatchGameRequest {
            game_id: id,
            from_ply: None,
            token: String::new(),
        })
        .await
        .expect("watch")
        .into_inner();
    let mut items = Vec::new();
    while let Some(item) = within(60, stream.next()).await {
        items.push(item.expect("a watch item"));
    }
    items
}

#[tokio::test]
async fn a_three_seat_match_is_played_to_the_end_and_watched_round_by_round() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let (g, tokens) = create_with(&mut c, rules(3, false, 2, &[]), "")
        .await
        .expect("create");
    let names: Vec<&str> = g.seats.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["red", "orange", "blue"]);
    let st = state(&g);
    assert_eq!(st.row_length, 4);
    assert_eq!(st.neutral, tpb::Colour::Green as i32);
    // 18 of each seat's colour and 6 greens, the first card revealed.
    assert_eq!(
        st.decks.iter().map(|d| d.size).collect::<Vec<_>>(),
        [23, 24, 24]
    );
    assert!(st.decks.iter().all(|d| d.neutral.len() == 6));
    let watch_client = server.client().await;
    let watcher = tokio::spawn(watch_all(watch_client, g.game_id.clone()));
    // Let the watcher subscribe before the first move.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;

    let played = play_out(&mut c, &g.game_id, &tokens, 3).await;
    let options = RuleOptions::new(3, false, 2, 0, &[]).unwrap();
    let seed = check_the_deal(&played, &options);
    let end = &played.end;
    let outcome = end.outcome.as_ref().unwrap();
    assert_eq!(outcome.reason, "ROUNDS_WON");
    assert_eq!(outcome.winners.len(), 1, "one seat wins a 3-player match");
    let st = state(end);
    assert!(st.results.len() >= 2);
    assert!(st.ending.is_empty());

    // The watch stream: the snapshot, then each move's event; a move that
    // ended a round is followed by its round-over notice, which carries the
    // next deal (the same the move carries), then the next round's moves.
    let items = within(60, watcher).await.expect("watcher");
    assert!(matches!(
        items[0].item,
        Some(pb::watch_game_response::Item::Snapshot(_))
    ));
    let mut rounds_over = 0;
    let mut events = 0;
    for (i, item) in items.iter().enumerate() {
        let Some(pb::watch_game_response::Item::Event(e)) = &item.item else {
            continue;
        };
        events += 1;
        let Some(pb::game_event::Kind::MoveApplied(applied)) = &e.kind else {
            continue;
        };
        let m = punto_of(applied.r#move.as_ref().unwrap());
        let Some(result) = &m.round_result else {
            continue;
        };
        rounds_over += 1;
        let Some(pb::watch_game_response::Item::RoundOver(over)) = &items[i + 1].item else {
            panic!(
                "no round-over notice after the move that ended round {}",
                result.round
            );
        };
        assert_eq!((over.sequence, over.ply), (e.sequence, e.ply));
        assert_eq!(items[i + 1].sequence, e.sequence);
        let Some(pb::round_over::Game::Punto(over)) = &over.game else {
            panic!("not a Punto round");
        };
        assert_eq!(over.result.as_ref(), Some(result));
        assert_eq!(
            over.result.as_ref().unwrap(),
            &st.results[result.round as usize - 1]
        );
        assert_eq!(over.deal, m.deal);
        if over.next_round == 0 {
            assert!(over.deal.is_empty() && over.next.is_none());
            assert!(matches!(
                &items[i + 2].item,
                Some(pb::watch_game_response::Item::Event(pb::GameEvent {
                    kind: Some(pb::game_event::Kind::GameOver(_)),
                    ..
                }))
            ));
        } else {
            assert_eq!(over.next_round, result.round + 1);
            let next = over.next.as_ref().unwrap();
            assert_eq!(next.seat, result.next_first);
            assert_eq!(over.deal.len(), 3);
            // The deal's decks hold each seat's colour still in the match
            // and its neutral cards; no order before the end.
            for d in &over.deal {
                assert!(d.order.is_empty());
                assert_eq!(d.contents.len() as u32, d.size);
            }
            // The next event is the new round's first placement, of the
            // card the notice revealed.
            let Some(pb::watch_game_response::Item::Event(after)) = &items[i + 2].item else {
                panic!("the next round's first move");
            };
            let Some(pb::game_event::Kind::MoveApplied(first)) = &after.kind else {
                panic!("the next round's first move");
            };
            let first = punto_of(first.r#move.as_ref().unwrap());
            assert_eq!((first.round, first.seat), (over.next_round, next.seat));
            assert_eq!(first.card, next.card);
            assert_eq!(first.notation, "0,0");
        }
    }
    assert_eq!(rounds_over, st.results.len());
    assert_eq!(events, played.moves.len() + 1);

    // The finished record imports, checked against its seed; its outcome is
    // the match's.
    let record = export(&mut c, &end.game_id, &tokens[1]).await;
    assert!(record.contains(&format!("seed: {}", hex(&seed))));
    let imported = c
        .import_game(pb::ImportGameRequest {
            record: record.clone(),
            labels: Default::default(),
        })
        .await
        .expect("a finished record imports")
        .into_inner();
    let game = imported.game.unwrap();
    assert_eq!(imported.seats.len(), 3);
    assert_eq!(game.status, pb::GameStatus::Finished as i32);
    assert_eq!(game.outcome, end.outcome);
    assert_eq!(game.ply, end.ply);
    assert_eq!(state(&game).results, st.results);
    assert_eq!(game.setup.as_ref().unwrap().seed, hex(&seed));
    // Adjudication of the finished record: any move is GAME_OVER.
    let answer = c
        .validate_move(pb::ValidateMoveRequest {
            history: Some(pb::validate_move_request::History::Record(record.clone())),
            r#move: Some(cell_move(0, 0)),
        })
        .await
        .expect("validate")
        .into_inner();
    assert!(!answer.legal);
    assert_eq!(answer.reason, "GAME_OVER");
    // A wrong seed is caught.
    let other = "00".repeat(32);
    let forged = record.replace(&hex(&seed), &other);
    let s = c
        .import_game(pb::ImportGameRequest {
            record: forged,
            labels: Default::default(),
        })
        .await
        .expect_err("a forged seed");
    assert_eq!(s.code(), Code::InvalidArgument);
    assert_eq!(reason(&s), "SEED_MISMATCH");
    // An unfinished record is refused: its deck order is still secret.
    let history = played.mid_record.clone();
    let s = c
        .import_game(pb::ImportGameRequest {
            record: history.clone(),
            labels: Default::default(),
        })
        .await
        .expect_err("an unfinished record");
    assert_eq!(s.code(), Code::InvalidArgument);
    assert_eq!(reason(&s), "SEED_NOT_REVEALED");
    let s = c
        .validate_move(pb::ValidateMoveRequest {
            history: Some(pb::validate_move_request::History::Record(history)),
            r#move: Some(cell_move(1, 0)),
        })
        .await
        .expect_err("an unfinished record");
    assert_eq!(reason(&s), "SEED_NOT_REVEALED");
    // Rules and moves with the seed adjudicate a candidate.
    let first_moves: Vec<pb::Move> = played.moves[..3]
        .iter()
        .map(|(cell, _)| cell_move(cell.x, cell.y))
        .collect();
    let history = pb::GameHistory {
        rules: Some(rules(3, false, 2, &[])),
        moves: first_moves,
        seed: hex(&seed),
    };
    let (next, _) = played.moves[3];
    let answer = c
        .validate_move(pb::ValidateMoveRequest {
            history: Some(pb::validate_move_request::History::Moves(history.clone())),
            r#move: Some(cell_move(next.x, next.y)),
        })
        .await
        .expect("validate")
        .into_inner();
    assert!(answer.legal, "{answer:?}");
    assert_eq!((answer.seat, answer.ply), (1, 4));
    assert_eq!(
        text(&punto_of(answer.r#move.as_ref().unwrap()).card),
        played.moves[3].1
    );
    let answer = c
        .validate_move(pb::ValidateMoveRequest {
            history: Some(pb::validate_move_request::History::Moves(history)),
            r#move: Some(cell_move(5, 5)),
        })
        .await
        .expect("validate")
        .into_inner();
    assert!(!answer.legal);
    assert!(
        ["NOT_ADJACENT", "OUTSIDE_AREA"].contains(&answer.reason.as_str()),
        "{answer:?}"
    );
}

#[tokio::test]
async fn bad_options_name_their_field() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let cases: [(pb::GameRules, &str, &str); 5] = [
        (rules(5, false, 2, &[]), "rules.punto.players", "PLAYERS"),
        (
            rules(3, true, 2, &[]),
            "rules.punto.team",
            "TEAM_NEEDS_FOUR",
        ),
        (
            rules(2, false, 0, &[]),
            "rules.punto.rounds_to_win",
            "ROUNDS_TO_WIN",
        ),
        (
            pb::GameRules {
                game: Some(pb::game_rules::Game::Punto(tpb::RuleOptions {
                    max_rounds: 100,
                    ..Default::default()
                })),
            },
            "rules.punto.max_rounds",
            "MAX_ROUNDS",
        ),
        (
            rules(2, false, 2, &[7; 65]),
            "rules.punto.entropy",
            "ENTROPY_TOO_LONG",
        ),
    ];
    for (r, field, why) in cases {
        let s = create_with(&mut c, r, "").await.expect_err(field);
        assert_eq!(s.code(), Code::InvalidArgument);
        assert_eq!(bad_field(&s), field);
        assert!(s.message().contains(why), "{}", s.message());
    }
    // The same in a history's rules.
    let s = c
        .validate_move(pb::ValidateMoveRequest {
            history: Some(pb::validate_move_request::History::Moves(pb::GameHistory {
                rules: Some(rules(1, false, 2, &[])),
                moves: vec![],
                seed: "11".repeat(32),
            })),
            r#move: Some(cell_move(0, 0)),
        })
        .await
        .expect_err("one player");
    assert_eq!(bad_field(&s), "moves.rules.punto.players");
    // An empty message is the 2-player match to 2 round wins; a supplied
    // seed is allowed and said to be supplied.
    let (g, tokens) = create_with(
        &mut c,
        pb::GameRules {
            game: Some(pb::game_rules::Game::Punto(tpb::RuleOptions::default())),
        },
        &"ab".repeat(32),
    )
    .await
    .expect("defaults");
    assert_eq!(tokens.len(), 2);
    let r = state(&g).rules.clone().unwrap();
    assert_eq!(
        (r.players, r.team, r.rounds_to_win, r.max_rounds),
        (2, false, Some(2), 0)
    );
    assert!(g.setup.as_ref().unwrap().supplied);
    assert_eq!(
        g.rules.as_ref().unwrap().game,
        Some(pb::game_rules::Game::Punto(r))
    );
    // The deck of a supplied seed is the deal's.
    let options = RuleOptions::default();
    let seed = parse_seed(&"ab".repeat(32)).unwrap();
    let key = Key::new(&seed, &[]);
    let deck = deal::deal_deck(
        &key,
        1,
        0,
        &CardCounts::of_colour(Colour::Red).plus(&CardCounts::of_colour(Colour::Blue)),
    );
    assert_eq!(text(&state(&g).revealed), deck[0].to_string());
    assert_eq!(Engine::new(options, &seed).revealed(), Some(deck[0]));
}

#[tokio::test]
async fn bad_moves_are_refused_with_a_reason_and_change_nothing() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let (g, t) = create_with(&mut c, rules(3, false, 2, &[]), "")
        .await
        .expect("create");
    let id = &g.game_id;
    let malformed = [
        ("1, 2", "move.punto.notation"),
        ("+1,2", "move.punto.notation"),
    ];
    for (text, field) in malformed {
        let s = submit_move(&mut c, id, &t[0], text_move(text), 0)
            .await
            .expect_err(text);
        assert_eq!(s.code(), Code::InvalidArgument);
        assert_eq!(bad_field(&s), field);
        assert!(s.message().contains("MALFORMED"), "{}", s.message());
    }
    let both = pb::Move {
        game: Some(pb::r#move::Game::Punto(Box::new(tpb::Move {
            cell: Some(tpb::Cell { x: 0, y: 0 }),
            notation: "1,0".into(),
            ..Default::default()
        }))),
    };
    let s = submit_move(&mut c, id, &t[0], both, 0).await.unwrap_err();
    assert_eq!(bad_field(&s), "move.punto");
    // Spaces only: a notation given, and malformed (docs/rules/punto.md §4.4).
    let s = submit_move(&mut c, id, &t[0], text_move(" "), 0)
        .await
        .unwrap_err();
    assert_eq!(bad_field(&s), "move.punto.notation");
    assert!(s.message().contains("MALFORMED"), "{}", s.message());
    // A PÜNCT move is not a Punto move.
    let s = submit_move(&mut c, id, &t[0], notation("SE@E1:E2,E3"), 0)
        .await
        .unwrap_err();
    assert_eq!(s.code(), Code::InvalidArgument);
    // Rule refusals are FAILED_PRECONDITION with docs/rules/punto.md §5.3's reason.
    for mv in [
        cell_move(1, 0),
        cell_move(i32::MIN, i32::MAX),
        text_move("-99999999999,0"),
    ] {
        let s = submit_move(&mut c, id, &t[0], mv, 0).await.unwrap_err();
        assert_eq!(s.code(), Code::FailedPrecondition);
        assert_eq!(reason(&s), "FIRST_CARD_NOT_CENTER");
    }
    let r = submit_move(&mut c, id, &t[0], text_move(" 00,-0 "), 0)
        .await
        .expect("the centre, however written");
    assert_eq!(punto_of(r.r#move.as_ref().unwrap()).notation, "0,0");
    for (mv, why) in [
        (cell_move(3, 0), "NOT_ADJACENT"),
        (cell_move(i32::MIN, 0), "OUTSIDE_AREA"),
        (cell_move(6, 0), "OUTSIDE_AREA"),
    ] {
        let s = submit_move(&mut c, id, &t[1], mv, 1).await.unwrap_err();
        assert_eq!(reason(&s), why);
    }
    let after = get(&mut c, id).await;
    assert_eq!(after.ply, 1);
    assert_eq!(state(&after).table.as_ref().unwrap().stacks.len(), 1);
}

#[tokio::test]
async fn resignation_and_draws_among_three_and_four_seats() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    // 3 seats: a resigning seat loses; both others win together.
    let (g, t) = create_with(&mut c, rules(3, false, 2, &[]), "")
        .await
        .expect("create");
    submit_move(&mut c, &g.game_id, &t[0], cell_move(0, 0), 0)
        .await
        .unwrap();
    let before = get(&mut c, &g.game_id).await;
    assert_secret_kept(&before);
    let r = c
        .resign(pb::ResignRequest {
            game_id: g.game_id.clone(),
            token: t[1].clone(),
        })
        .await
        .expect("resign")
        .into_inner()
        .game
        .unwrap();
    let o = r.outcome.as_ref().unwrap();
    assert_eq!(
        (o.winners.as_slice(), o.reason.as_str()),
        (&[1, 3][..], "RESIGNATION")
    );
    assert_eq!(o.scores, [0, 0, 0]);
    assert!(o.detail.is_none(), "no board end");
    assert_eq!(r.to_move, 0);
    let st = state(&r);
    assert_eq!(st.ending, "RESIGNATION");
    assert_eq!(st.mover, 0);
    // The seed and every deck's order are revealed at any end.
    let seed = parse_seed(&st.seed).expect("the seed");
    assert_eq!(r.setup.as_ref().unwrap().seed, st.seed);
    assert!(st.decks.iter().all(|d| d.order.len() as u32 == d.size));
    let engine = {
        let mut m = Engine::new(RuleOptions::new(3, false, 2, 0, &[]).unwrap(), &seed);
        m.play(Cell::new(0, 0)).unwrap();
        m
    };
    assert_eq!(
        text(&state(&before).revealed),
        engine.revealed().unwrap().to_string()
    );
    let record = export(&mut c, &g.game_id, "").await;
    assert!(record.contains("ending: RESIGNATION seat 2"), "{record}");
    let imported = c
        .import_game(pb::ImportGameRequest {
            record,
            labels: Default::default(),
        })
        .await
        .expect("a resigned match imports")
        .into_inner()
        .game
        .unwrap();
    assert_eq!(imported.outcome, r.outcome);

    // Teams: the partner loses with the resigning seat.
    let (g, t) = create_with(&mut c, rules(4, true, 2, &[]), "")
        .await
        .expect("create");
    let r = c
        .resign(pb::ResignRequest {
            game_id: g.game_id.clone(),
            token: t[2].clone(),
        })
        .await
        .expect("resign")
        .into_inner()
        .game
        .unwrap();
    assert_eq!(r.outcome.as_ref().unwrap().winners, [2, 4]);

    // A draw needs every one of the three seats.
    let (g, t) = create_with(&mut c, rules(3, false, 2, &[]), "")
        .await
        .expect("create");
    let id = g.game_id.clone();
    let offer = c
        .offer_draw(pb::OfferDrawRequest {
            game_id: id.clone(),
            token: t[0].clone(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(!offer.agreed);
    let accept = |token: String| pb::AcceptDrawRequest {
        game_id: id.clone(),
        token,
    };
    let a = c
        .accept_draw(accept(t[2].clone()))
        .await
        .unwrap()
        .into_inner();
    assert!(!a.agreed);
    assert_eq!(a.game.unwrap().draw_offers, [1, 3]);
    let a = c
        .accept_draw(accept(t[1].clone()))
        .await
        .unwrap()
        .into_inner();
    assert!(a.agreed);
    let o = a.game.as_ref().unwrap().outcome.clone().unwrap();
    assert!(o.draw && o.winners.is_empty());
    assert_eq!(o.reason, "DRAW_AGREEMENT");
    assert_eq!(state(a.game.as_ref().unwrap()).seed.len(), 64);
}

/// `GET path` on the HTTP port: the status and the body.
async fn http_get(addr: SocketAddr, path: &str) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await
        .unwrap();
    let mut answer = String::new();
    within(10, stream.read_to_string(&mut answer))
        .await
        .unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").expect("a head");
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, body.to_string())
}

#[tokio::test]
async fn the_page_and_pictures_show_decks_and_rounds() {
    let server = TestServer::start_with_http(test_options(), None).await;
    let http = server.http.unwrap();
    let mut c = server.client().await;
    let (g, t) = create_with(&mut c, rules(3, false, 1, &[]), "")
        .await
        .expect("create");
    let id = g.game_id.clone();
    let (status, body) = http_get(http, &format!("/api/games/{id}")).await;
    assert_eq!(status, 200);
    let json: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(json["game"], "punto");
    assert_eq!(json["variant"], "3-players");
    assert_eq!(json["decks"].as_array().unwrap().len(), 3);
    assert_eq!(json["decks"][0]["seat"], "red");
    assert_eq!(json["decks"][0]["size"], 23);
    assert_eq!(
        json["decks"][1]["neutral"]
            .as_str()
            .unwrap()
            .split(' ')
            .count(),
        6
    );
    assert_eq!(json["rounds"].as_array().unwrap().len(), 0);
    assert!(!body.contains("order"), "{body}");
    assert!(!body.contains(&t[0]) && !body.contains(&t[1]));

    let played = play_out(&mut c, &id, &t, 11).await;
    let (_, body) = http_get(http, &format!("/api/games/{id}")).await;
    let json: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(json["status"], "finished");
    let rounds = json["rounds"].as_array().unwrap();
    // One round win ends it; a drawn round (a deadlock with equal rows,
    // which a random deal can give) is followed by another.
    assert_eq!(
        rounds.len(),
        state(&played.end).results.len(),
        "one line per finished round"
    );
    assert!(!rounds.is_empty());
    for (i, round) in rounds.iter().enumerate() {
        let line = round.as_str().unwrap();
        assert!(
            line.starts_with(&format!("round {}: ", i + 1)),
            "{rounds:?}"
        );
    }
    assert_eq!(json["moves"].as_array().unwrap().len(), played.moves.len());

    // The pictures: every ply, through gRPC and HTTP.
    for ply in [0, 1, played.moves.len() as u32] {
        let svg = c
            .render_position(pb::RenderPositionRequest {
                game_id: id.clone(),
                ply: Some(ply),
                token: String::new(),
            })
            .await
            .expect("render")
            .into_inner();
        assert_eq!(svg.ply, ply);
        assert!(svg.svg.contains("<svg"), "{}", svg.svg);
        let (status, body) = http_get(http, &format!("/games/{id}.svg?ply={ply}")).await;
        assert_eq!(status, 200);
        assert_eq!(body, svg.svg);
    }
}

/// The snapshot a watcher with `token` starts with.
async fn watch_snapshot(c: &mut Client, id: &str, token: &str) -> pb::Game {
    let mut stream = c
        .watch_game(pb::WatchGameRequest {
            game_id: id.to_string(),
            from_ply: None,
            token: token.to_string(),
        })
        .await
        .expect("watch")
        .into_inner();
    let first = within(10, stream.next())
        .await
        .expect("a first message")
        .expect("ok");
    match first.item {
        Some(pb::watch_game_response::Item::Snapshot(game)) => game,
        other => panic!("not a snapshot: {other:?}"),
    }
}

#[tokio::test]
async fn get_game_answers_encoded_once_per_state_equal_each_viewers_snapshot() {
    // GetGame's answer is encoded once per state and viewer and shared; it
    // must decode to what the full conversion (a watcher's snapshot) says,
    // for each seat and a spectator asking in turns, at every ply, and
    // after a draw offer (a change without a move).
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let (game, tokens) = create_with(&mut c, rules(3, false, 2, b""), "")
        .await
        .expect("create");
    let id = game.game_id;
    let viewers: Vec<String> = std::iter::once(String::new())
        .chain(tokens.iter().cloned())
        .collect();
    let mut seen_viewers = std::collections::BTreeSet::new();
    for ply in 0..8u32 {
        for round in 0..2 {
            for token in &viewers {
                let mut got = get_as(&mut c, &id, token).await;
                let mut watched = watch_snapshot(&mut c, &id, token).await;
                assert_eq!(got.ply, ply);
                // Presence counts time away: not comparable across calls.
                assert!(got.presence.is_some() && got.clock.is_some());
                got.presence = None;
                watched.presence = None;
                assert_eq!(got, watched, "ply {ply}, viewer {token:?}, pass {round}");
                seen_viewers.insert(got.viewer);
            }
        }
        if ply == 3 {
            c.offer_draw(pb::OfferDrawRequest {
                game_id: id.clone(),
                token: tokens[0].clone(),
            })
            .await
            .expect("offer");
            let offered = get_as(&mut c, &id, "").await;
            assert_eq!(offered.draw_offers, vec![1], "the offer is in the answer");
        }
        let mover = get_as(&mut c, &id, "").await.to_move as usize;
        let legal = c
            .list_legal_moves(pb::ListLegalMovesRequest {
                game_id: id.clone(),
                seat: mover as u32,
                token: tokens[mover - 1].clone(),
                ..Default::default()
            })
            .await
            .expect("legal")
            .into_inner();
        let mv = legal.moves[0].clone();
        submit_move(&mut c, &id, &tokens[mover - 1], mv, ply)
            .await
            .expect("legal move");
    }
    // Each answer names its own viewer: none was served another's.
    assert_eq!(seen_viewers, [0, 1, 2, 3].into());
}
