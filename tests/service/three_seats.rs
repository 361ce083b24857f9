//! The session layer with a game of three seats (the tests' own game, trio):
//! turn order chosen by the game, team results, per-seat tokens, clocks and
//! presence, resignation, draw agreement, abort and victory claims among
//! three seats, the seed's commitment and reveal, per-viewer state in
//! snapshots and watch streams, and recovery from storage. Nothing here
//! names PÜNCT: the session layer serves any game through `Game`.

#[path = "../common/trio.rs"]
mod trio;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use punct_referee::games::{Catalog, GameRules, MoveInput, Seat, SeatSet, Setup, Viewer};
use punct_referee::service::sessions::{
    ClockMode, EventKind, History, Limits, Role, Session, SessionError, SessionStore, TimeControl,
    Watch, WatchItem,
};
use punct_referee::service::storage::Storage;
use punct_referee::service::storage::reference::ReferenceStorage;
use trio::{Deal, TrioMoveDetail, TrioRules, TrioState};

const RED: Seat = Seat::FIRST;
const GREEN: Seat = Seat::SECOND;

fn blue() -> Seat {
    Seat::new(2).unwrap()
}

/// A seed whose deal starts with red to move, target 12, and secrets
/// red 2, green 3, blue 1.
const SEED: [u8; 32] = {
    let mut s = [0u8; 32];
    s[0] = 2; // target 10 + 2
    s[1] = 0; // red first
    s[2] = 1; // red's secret 2
    s[3] = 2; // green's 3
    s[4] = 0; // blue's 1
    s
};

fn catalog() -> Catalog {
    punct_referee::service::grpc::games::catalog().with("trio", trio::import)
}

fn store_with(limits: Limits, storage: Arc<dyn Storage>) -> SessionStore {
    SessionStore::with_storage(limits, storage).with_catalog(catalog())
}

fn store() -> SessionStore {
    store_with(Limits::default(), Arc::new(ReferenceStorage::new()))
}

fn rules() -> GameRules {
    GameRules::new(TrioRules::default())
}

fn mv(text: &str) -> MoveInput {
    trio::notation(text).expect("trio notation")
}

/// A trio game from [`SEED`] and its three tokens, red first.
async fn new_game(store: &SessionStore, tc: TimeControl) -> (Arc<Session>, Vec<String>) {
    let (s, tokens) = store
        .create_timed(rules(), BTreeMap::new(), tc, Some(SEED))
        .await
        .expect("create");
    (s, tokens.iter().map(ToString::to_string).collect())
}

fn reason(e: &SessionError) -> &'static str {
    match e {
        SessionError::Rejected(punct_referee::games::MoveError::Illegal { reason, .. }) => reason,
        other => panic!("expected a rule refusal, got {other:?}"),
    }
}

/// The role `token` proves in `s`.
fn role(s: &Session, token: &str) -> Role {
    s.role_of(token, false).expect("a seat's token")
}

fn trio_state(s: &Session, viewer: Viewer) -> TrioState {
    s.view_as(viewer)
        .snapshot
        .expect("state")
        .get::<TrioState>()
        .expect("a trio state")
        .clone()
}

#[tokio::test]
async fn three_seats_get_three_tokens_and_the_game_names_them() {
    let st = store();
    let (s, tokens) = new_game(&st, TimeControl::default()).await;
    assert_eq!(tokens.len(), 3);
    assert_eq!(s.seat_names(), ["red", "green", "blue"]);
    let v = s.view(true);
    assert_eq!(v.seats, ["red", "green", "blue"]);
    assert_eq!(v.presence.len(), 3);
    assert_eq!(v.to_move, Some(Deal::from_seed(&SEED).first));
    // Each token proves its own seat.
    for (i, token) in tokens.iter().enumerate() {
        assert_eq!(
            role(&s, token).viewer(),
            Viewer::Seat(Seat::new(i).unwrap())
        );
    }
}

#[tokio::test]
async fn the_game_not_the_session_says_who_moves_next() {
    let st = store();
    let (s, t) = new_game(&st, TimeControl::default()).await;
    // Red moves first and hands the turn to blue, skipping green.
    let r = s
        .submit(role(&s, &t[0]), mv("1>blue"), 0, None)
        .await
        .unwrap();
    assert_eq!((r.report.seat, r.report.next), (RED, Some(blue())));
    assert_eq!(s.view(false).to_move, Some(blue()));
    let e = s
        .submit(role(&s, &t[1]), mv("1>red"), 1, None)
        .await
        .unwrap_err();
    assert_eq!(reason(&e), "NOT_YOUR_TURN");
    let r = s
        .submit(role(&s, &t[2]), mv("2>green"), 1, None)
        .await
        .unwrap();
    assert_eq!(r.report.next, Some(GREEN));
    // The legal moves are the seat to move's; another seat gets none.
    let (ply, to_move, moves) = s.legal_moves(Some(GREEN), Role::Spectator);
    assert_eq!((ply, to_move), (2, Some(GREEN)));
    assert!(!moves.is_empty() && moves.iter().all(|m| m.seat == GREEN));
    assert!(s.legal_moves(Some(RED), Role::Spectator).2.is_empty());
}

#[tokio::test]
async fn a_resignation_among_three_lets_the_two_others_win_together_and_reveals_the_seed() {
    let st = store();
    let (s, t) = new_game(&st, TimeControl::default()).await;
    let before = s.view(false);
    let setup = before.setup.clone().expect("a seeded game has a setup");
    let expected = Setup {
        seed: SEED,
        supplied: true,
    };
    assert_eq!(setup.commitment, expected.commitment());
    assert_eq!(
        (setup.seed, setup.supplied),
        (None, true),
        "no seed before the end"
    );
    let v = s.resign(role(&s, &t[1])).await.unwrap();
    let outcome = v.outcome.expect("over");
    assert_eq!(outcome.reason, "RESIGNATION");
    assert_eq!(outcome.winners, SeatSet::only(RED).with(blue()));
    assert_eq!(outcome.winner(), None, "a team, not one winner");
    assert_eq!(v.setup.unwrap().seed, Some(SEED), "revealed once over");
    // The exported record of the finished game carries the seed.
    let record = s.export(Role::Spectator);
    assert!(
        record.contains(&punct_referee::games::hex(&SEED)),
        "{record}"
    );
}

#[tokio::test]
async fn a_draw_needs_every_seat_and_a_move_by_another_seat_declines_it() {
    let st = store();
    let (s, t) = new_game(&st, TimeControl::default()).await;
    let (agreed, v) = s.offer_draw(role(&s, &t[0])).await.unwrap();
    assert!(!agreed);
    assert_eq!(v.draw_offers, SeatSet::only(RED));
    let (agreed, v) = s.accept_draw(role(&s, &t[1])).await.unwrap();
    assert!(!agreed, "blue has not agreed yet");
    assert_eq!(v.draw_offers, SeatSet::only(RED).with(GREEN));
    // Red (who agreed) moves: the offer stands.
    s.submit(role(&s, &t[0]), mv("1>blue"), 0, None)
        .await
        .unwrap();
    assert_eq!(s.view(false).draw_offers, SeatSet::only(RED).with(GREEN));
    // Blue, who has not agreed, moves: declined.
    s.submit(role(&s, &t[2]), mv("1>red"), 1, None)
        .await
        .unwrap();
    assert_eq!(s.view(false).draw_offers, SeatSet::EMPTY);
    assert_eq!(
        reason(&s.accept_draw(role(&s, &t[1])).await.unwrap_err()),
        "NO_DRAW_OFFER"
    );
    // Again, all three.
    s.offer_draw(role(&s, &t[2])).await.unwrap();
    s.accept_draw(role(&s, &t[0])).await.unwrap();
    let (agreed, v) = s.accept_draw(role(&s, &t[1])).await.unwrap();
    assert!(agreed);
    let outcome = v.outcome.unwrap();
    assert_eq!(
        (outcome.reason, outcome.winners),
        ("DRAW_AGREEMENT", SeatSet::EMPTY)
    );
}

#[tokio::test]
async fn abort_stays_possible_for_the_platform_until_every_seat_has_moved() {
    let st = store();
    let (s, t) = new_game(&st, TimeControl::default()).await;
    // Each seat has seen its dealt secret from the start: no seat may call
    // the game off for a new deal, before or after a move, and the refusal
    // changes nothing.
    assert_eq!(
        reason(&s.abort(role(&s, &t[1])).await.unwrap_err()),
        "ABORT_AFTER_DEAL"
    );
    // Red and blue move; green never has.
    s.submit(role(&s, &t[0]), mv("1>blue"), 0, None)
        .await
        .unwrap();
    s.submit(role(&s, &t[2]), mv("1>red"), 1, None)
        .await
        .unwrap();
    s.submit(role(&s, &t[0]), mv("1>blue"), 2, None)
        .await
        .unwrap();
    assert_eq!(
        reason(&s.abort(role(&s, &t[1])).await.unwrap_err()),
        "ABORT_AFTER_DEAL"
    );
    assert!(s.view(false).outcome.is_none());
    assert_eq!(s.view(false).ply, 3);
    // The platform may.
    let v = s.abort(s.role_of(&t[1], true).unwrap()).await.unwrap();
    assert_eq!(v.outcome.unwrap().reason, "ABORTED");

    let (s, t) = new_game(&st, TimeControl::default()).await;
    s.submit(role(&s, &t[0]), mv("1>green"), 0, None)
        .await
        .unwrap();
    s.submit(role(&s, &t[1]), mv("1>blue"), 1, None)
        .await
        .unwrap();
    s.submit(role(&s, &t[2]), mv("1>red"), 2, None)
        .await
        .unwrap();
    assert_eq!(
        reason(&s.abort(s.role_of(&t[0], true).unwrap()).await.unwrap_err()),
        "ABORT_TOO_LATE"
    );
}

#[tokio::test]
async fn clocks_and_presence_are_per_seat() {
    let st = store();
    let tc = TimeControl {
        lag: None,
        mode: ClockMode::Fischer {
            initial: Duration::from_secs(60),
            increment: Duration::ZERO,
        },
        first_move: None,
    };
    let (s, t) = new_game(&st, tc).await;
    let v = s.view(false);
    assert_eq!(v.clock.remaining.as_ref().map(Vec::len), Some(3));
    assert_eq!(v.clock.running, Some(RED));
    s.submit(role(&s, &t[0]), mv("1>blue"), 0, None)
        .await
        .unwrap();
    assert_eq!(s.view(false).clock.running, Some(blue()));
    // Blue's player watches: blue alone is present.
    let watch = s.watch(None, role(&s, &t[2])).unwrap();
    let present: Vec<bool> = s.presence().iter().map(|p| p.connected).collect();
    assert_eq!(present, [false, false, true]);
    drop(watch);
    assert!(s.presence().iter().all(|p| !p.connected));
}

#[tokio::test]
async fn a_victory_claim_among_three_is_against_the_seat_to_move() {
    let st = store_with(
        Limits {
            abandon_after: Duration::ZERO,
            ..Limits::default()
        },
        Arc::new(ReferenceStorage::new()),
    );
    let tc = TimeControl {
        lag: None,
        mode: ClockMode::Fischer {
            initial: Duration::from_secs(600),
            increment: Duration::ZERO,
        },
        first_move: None,
    };
    let (s, t) = new_game(&st, tc).await;
    let e = s.claim_victory(role(&s, &t[0]), None).await.unwrap_err();
    assert_eq!(reason(&e), "GAME_NOT_STARTED");
    s.submit(role(&s, &t[0]), mv("1>green"), 0, None)
        .await
        .unwrap();
    s.submit(role(&s, &t[1]), mv("1>blue"), 1, None)
        .await
        .unwrap();
    s.submit(role(&s, &t[2]), mv("1>green"), 2, None)
        .await
        .unwrap();
    // Green is to move and gone: red claims; green may not claim against
    // itself, and a present seat cannot be claimed against.
    let e = s.claim_victory(role(&s, &t[1]), None).await.unwrap_err();
    assert_eq!(reason(&e), "CLAIM_AGAINST_SELF");
    let blue_watch = s.watch(None, role(&s, &t[2])).unwrap();
    let e = s
        .claim_victory(role(&s, &t[0]), Some(blue()))
        .await
        .unwrap_err();
    assert_eq!(reason(&e), "OPPONENT_PRESENT");
    drop(blue_watch);
    let v = s.claim_victory(role(&s, &t[0]), None).await.unwrap();
    let outcome = v.outcome.unwrap();
    assert_eq!(outcome.reason, "ABANDONED");
    assert!(!outcome.winners.contains(GREEN), "the seat that left loses");
    assert!(!outcome.winners.is_empty());
}

/// Whether the next move a watcher is sent matched its mover's secret, as
/// that watcher may know it.
async fn next_move_matched(watch: &mut Watch) -> Option<bool> {
    loop {
        match watch.next().await.unwrap() {
            Some(WatchItem::Presence(_)) => continue,
            Some(WatchItem::Event(e)) => match &e.kind {
                EventKind::MoveApplied { report } => {
                    return report.detail.get::<TrioMoveDetail>().expect("trio").matched;
                }
                other => panic!("expected a move, got {other:?}"),
            },
            other => panic!("expected an event, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn each_seat_sees_only_its_own_secret_in_snapshots_and_streams() {
    let st = store();
    let (s, t) = new_game(&st, TimeControl::default()).await;
    let red_view = trio_state(&s, Viewer::Seat(RED));
    assert_eq!(red_view.secrets, [Some(2), None, None]);
    let spectator = trio_state(&s, Viewer::Spectator);
    assert_eq!(spectator.secrets, [None, None, None]);
    // Red plays its secret (2); green's stream does not learn it matched.
    let mut green_watch = s.watch(Some(0), role(&s, &t[1])).unwrap();
    let mut red_watch = s.watch(Some(0), role(&s, &t[0])).unwrap();
    s.submit(role(&s, &t[0]), mv("2>green"), 0, None)
        .await
        .unwrap();
    // The snapshot first, then the move (presence flips may come between).
    assert!(matches!(
        green_watch.next().await.unwrap(),
        Some(WatchItem::Snapshot { .. })
    ));
    assert!(matches!(
        red_watch.next().await.unwrap(),
        Some(WatchItem::Snapshot { .. })
    ));
    assert_eq!(next_move_matched(&mut green_watch).await, None);
    assert_eq!(next_move_matched(&mut red_watch).await, Some(true));
    // The legal moves shown to a spectator hide whether they would match.
    let (_, _, moves) = s.legal_moves(None, Role::Spectator);
    assert!(
        moves
            .iter()
            .all(|m| m.detail.get::<TrioMoveDetail>().unwrap().matched.is_none())
    );
}

#[tokio::test]
async fn a_stored_three_seat_game_comes_back_with_its_seed_and_turn() {
    let storage: Arc<dyn Storage> = Arc::new(ReferenceStorage::new());
    let first = store_with(Limits::default(), storage.clone());
    let (s, t) = new_game(&first, TimeControl::default()).await;
    s.submit(role(&s, &t[0]), mv("1>blue"), 0, Some("r1"))
        .await
        .unwrap();
    s.offer_draw(role(&s, &t[2])).await.unwrap();
    let id = s.id().to_string();
    let before = trio_state(&s, Viewer::Seat(blue()));
    drop(first);

    let again = store_with(Limits::default(), storage);
    assert_eq!(again.recover().unwrap(), 1);
    let s = again.get(&id).unwrap();
    assert_eq!(trio_state(&s, Viewer::Seat(blue())), before);
    let v = s.view(false);
    assert_eq!((v.ply, v.to_move), (1, Some(blue())));
    assert_eq!(v.draw_offers, SeatSet::only(blue()));
    assert_eq!(v.setup.unwrap().seed, None, "still secret");
    // Same tokens, and the retry is still recognised.
    let r = s
        .submit(role(&s, &t[0]), mv("1>blue"), 0, Some("r1"))
        .await
        .unwrap();
    assert!(r.replayed);
    s.submit(role(&s, &t[2]), mv("1>green"), 1, None)
        .await
        .unwrap();
}

#[tokio::test]
async fn an_unfinished_seeded_record_cannot_be_imported_but_a_finished_one_can() {
    let st = store();
    let (s, t) = new_game(&st, TimeControl::default()).await;
    s.submit(role(&s, &t[0]), mv("1>blue"), 0, None)
        .await
        .unwrap();
    let unfinished = s.export(Role::Spectator);
    match st.import(&unfinished, BTreeMap::new()).await {
        Err(SessionError::Record(e)) => assert_eq!(e.reason, Some("SEED_NOT_REVEALED")),
        other => panic!("expected SEED_NOT_REVEALED, got {other:?}"),
    }
    s.resign(role(&s, &t[1])).await.unwrap();
    let finished = s.export(Role::Spectator);
    let (imported, tokens) = st.import(&finished, BTreeMap::new()).await.unwrap();
    assert_eq!(tokens.len(), 3);
    let v = imported.view(false);
    assert_eq!(v.outcome.unwrap().winners, SeatSet::only(RED).with(blue()));
    assert_eq!(v.setup.unwrap().seed, Some(SEED));
}

#[tokio::test]
async fn adjudication_needs_the_seed_of_a_seeded_game() {
    let st = store();
    let (s, t) = new_game(&st, TimeControl::default()).await;
    s.submit(role(&s, &t[0]), mv("1>blue"), 0, None)
        .await
        .unwrap();
    // A record of the unfinished game would leak its future: refused.
    let record = s.export(Role::Spectator);
    match st.validate_move(History::Record(record), &mv("1>red")) {
        Err(SessionError::Record(e)) => assert_eq!(e.reason, Some("SEED_NOT_REVEALED")),
        other => panic!("expected SEED_NOT_REVEALED, got {other:?}"),
    }
    // Rules and moves need the seed, and then judge like the session does.
    let moves = vec![mv("1>blue")];
    let e = st
        .validate_move(History::Moves(rules(), None, moves.clone()), &mv("1>red"))
        .unwrap_err();
    assert!(
        matches!(
            e,
            SessionError::InvalidArgument {
                field: "moves.seed",
                ..
            }
        ),
        "{e:?}"
    );
    let a = st
        .validate_move(
            History::Moves(rules(), Some(SEED), moves.clone()),
            &mv("1>red"),
        )
        .unwrap();
    assert_eq!(a.seat, Some(blue()));
    assert_eq!(a.result.unwrap().next, Some(RED));
    let a = st
        .validate_move(History::Moves(rules(), Some(SEED), moves), &mv("1>blue"))
        .unwrap();
    assert!(a.result.is_err(), "a seat cannot hand the turn to itself");
}
