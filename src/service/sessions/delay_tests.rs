//! View non-interference, as a property: what a viewer is sent is a
//! function of what that viewer may know. For random games of every kind
//! (PÜNCT, Dots with and without a drawn start, Punto with 2 and 3
//! players), two games that differ only in what a delayed spectator may
//! not know yet give that spectator identical bytes on every read surface
//! (the gRPC game and its picture, legal moves, record, watch snapshot,
//! the refusal of a later ply, the HTTP JSON of the game and its listing),
//! while the seats read the live games.

use std::collections::BTreeMap;
use std::sync::Arc;

use proptest::prelude::*;
use prost::Message as _;

use super::*;
use crate::games::{GameRules, dots, punto};
use crate::service::grpc::convert;
use crate::service::http::json;

/// The kinds of game the property runs over.
fn kind_rules(kind: u8) -> GameRules {
    match kind % 5 {
        0 => GameRules::default(),
        1 => GameRules::new(dots::RuleOptions::new(6, 6, dots::Start::Cross, 0).unwrap()),
        2 => {
            GameRules::new(dots::RuleOptions::new(12, 12, dots::Start::QuadrupleCross, 0).unwrap())
        }
        3 => GameRules::new(punto::RuleOptions::default()),
        _ => GameRules::new(punto::RuleOptions::of(punto::Configuration::ThreePlayers)),
    }
}

/// A game of `kind` from `seed`, labelled `labels`, after the moves picked
/// by `picks` (each an index into the legal moves of the ply, wrapped);
/// `None` if it ended before all were played.
async fn played(
    store: &SessionStore,
    kind: u8,
    seed: [u8; 32],
    delay: &str,
    control: TimeControl,
    picks: &[u16],
) -> Option<(Arc<Session>, Vec<String>)> {
    let rules = kind_rules(kind);
    let labels = BTreeMap::from([
        ("event".to_string(), "props".to_string()),
        (DELAY_LABEL.to_string(), delay.to_string()),
    ]);
    // A game without a random setup refuses a seed.
    let (s, tokens) = match store
        .create_timed(rules.clone(), labels.clone(), control, Some(seed))
        .await
    {
        Ok(created) => created,
        Err(_) => store
            .create_timed(rules, labels, control, None)
            .await
            .unwrap(),
    };
    let tokens: Vec<String> = tokens.iter().map(ToString::to_string).collect();
    for pick in picks {
        let (ply, to_move, moves) = s.legal_moves(None, Role::Platform(None));
        let seat = to_move?;
        if moves.is_empty() {
            return None;
        }
        let mv = moves[usize::from(*pick) % moves.len()].detail.to_input();
        let role = s.role_of(&tokens[seat.index()], false).unwrap();
        s.submit(role, mv, ply, None).await.unwrap();
    }
    (!s.finished()).then_some((s, tokens))
}

/// Every surface's bytes for `role`, without what names the game itself
/// (its id and creation time, and the head of its move chain, whose root
/// commits to the id: docs/RECEIPTS.md).
async fn surfaces(s: &Arc<Session>, role: Role) -> Vec<Vec<u8>> {
    // The labels are the same in both games; a protobuf map is encoded in
    // no fixed order, so they are left out of the bytes compared.
    let anonymous = |mut g: crate::service::grpc::pb::referee::v1::Game| {
        g.game_id.clear();
        g.created_unix_ms = 0;
        g.chain_head.clear();
        g.labels.clear();
        g.encode_to_vec()
    };
    let json_of = |value: serde_json::Value| {
        let mut value = value;
        if let Some(map) = value.as_object_mut() {
            map.remove("id");
            map.remove("created_unix_ms");
            map.remove("chain_head");
        }
        value.to_string().into_bytes()
    };
    let mut out = Vec::new();
    let view = s.view_for(role, true);
    out.push(anonymous(convert::game_pb(&view)));
    out.push(s.export(role).into_bytes());
    let (ply, to_move, moves) = match s.released_legal_moves(None, role) {
        Some(answer) => answer,
        None => {
            let (ply, to_move, moves) = s.legal_moves(None, role);
            (ply, to_move, moves.to_vec())
        }
    };
    let notations: Vec<&str> = moves.iter().map(|m| m.detail.notation.as_str()).collect();
    out.push(format!("{ply} {to_move:?} {notations:?}").into_bytes());
    for p in 0..=view.ply {
        let at = s.view_at(Some(p), role).unwrap();
        let svg = at
            .snapshot
            .as_ref()
            .map(|st| st.svg(at.last_move.as_ref(), at.outcome.as_ref()))
            .unwrap_or_default();
        out.push(svg.into_bytes());
    }
    out.push(
        s.view_at(Some(view.ply + 1), role)
            .unwrap_err()
            .to_string()
            .into_bytes(),
    );
    let (detail_view, events) = match role {
        Role::Spectator => s.spectator_view_with_events(),
        _ => s.view_with_events(),
    };
    out.push(json_of(
        serde_json::to_value(json::detail(&detail_view, &events)).unwrap(),
    ));
    out.push(json_of(
        serde_json::to_value(json::summary(&s.view_for(role, false))).unwrap(),
    ));
    let mut watch = s.watch(None, role).unwrap();
    match watch.next().await {
        Ok(Some(WatchItem::Snapshot { view, .. })) => out.push(anonymous(convert::game_pb(&view))),
        other => panic!("a watch starts with a snapshot, not {other:?}"),
    }
    out
}

/// Asserts two viewers' surfaces are the same bytes, naming the first that
/// is not.
fn same_bytes(a: &[Vec<u8>], b: &[Vec<u8>]) {
    assert_eq!(a.len(), b.len(), "as many surfaces");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!(
            x == y,
            "surface {i} differs:\n{}\n---\n{}",
            String::from_utf8_lossy(x),
            String::from_utf8_lossy(y)
        );
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// A ply delay of `k`: the same first moves, then `k` different ones.
    #[test]
    fn a_ply_delayed_spectator_cannot_tell_games_apart_by_their_last_plies(
        kind in 0u8..5,
        seed in any::<[u8; 32]>(),
        prefix in proptest::collection::vec(any::<u16>(), 0..8),
        k in 1usize..4,
        one in proptest::collection::vec(any::<u16>(), 3),
        other in proptest::collection::vec(any::<u16>(), 3),
    ) {
        runtime().block_on(async {
            let store = SessionStore::new(Limits::default());
            let delay = format!("{k} plies");
            let a_moves: Vec<u16> = prefix.iter().chain(&one[..k]).copied().collect();
            let b_moves: Vec<u16> = prefix.iter().chain(&other[..k]).copied().collect();
            let untimed = TimeControl::default();
            let a = played(&store, kind, seed, &delay, untimed, &a_moves).await;
            let b = played(&store, kind, seed, &delay, untimed, &b_moves).await;
            let (Some((a, _)), Some((b, _))) = (a, b) else {
                return;
            };
            let live = u32::try_from(a_moves.len()).unwrap();
            assert_eq!(a.view_for(Role::Spectator, false).ply, live - k as u32);
            same_bytes(&surfaces(&a, Role::Spectator).await, &surfaces(&b, Role::Spectator).await);
            // The seats and the platform read the live games.
            for s in [&a, &b] {
                assert_eq!(s.view_for(Role::Seat(crate::games::Seat::FIRST), false).ply, live);
                assert_eq!(s.view_for(Role::Platform(None), false).ply, live);
            }
        });
    }

    /// A time delay no move has outlived: games of different lengths and
    /// moves are the same game to a spectator (its start).
    #[test]
    fn a_time_delayed_spectator_cannot_tell_games_apart_by_moves_not_yet_shown(
        kind in 0u8..5,
        seed in any::<[u8; 32]>(),
        one in proptest::collection::vec(any::<u16>(), 0..6),
        other in proptest::collection::vec(any::<u16>(), 0..6),
    ) {
        runtime().block_on(async {
            let store = SessionStore::new(Limits::default());
            // Timed: a clock read now would tell whether a move was played.
            let timed = TimeControl {
                lag: None,
                mode: ClockMode::Fischer {
                    initial: std::time::Duration::from_secs(300),
                    increment: std::time::Duration::from_secs(2),
                },
                first_move: None,
            };
            let a = played(&store, kind, seed, "3600 s", timed, &one).await;
            let b = played(&store, kind, seed, "3600 s", timed, &other).await;
            let (Some((a, _)), Some((b, _))) = (a, b) else {
                return;
            };
            assert_eq!(a.view_for(Role::Spectator, false).ply, 0);
            same_bytes(&surfaces(&a, Role::Spectator).await, &surfaces(&b, Role::Spectator).await);
        });
    }
}
