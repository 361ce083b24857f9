//! Whose seed a match is dealt from, said everywhere; the full commitment on
//! the page; and no seat calling a dealt match off for a new deal.

use super::*;
use sha2::Digest as _;

fn sha256_hex(bytes: &[u8]) -> String {
    hex(&sha2::Sha256::digest(bytes))
}

async fn json(http: SocketAddr, id: &str) -> serde_json::Value {
    let (status, body) = http_get(http, &format!("/api/games/{id}")).await;
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).expect("JSON")
}

/// A record of a two-player match with `seed` and no card placed yet: the
/// importer chose every deck.
fn chosen_record(seed: &[u8; 32]) -> String {
    format!(
        "game: punto\nplayers: 2\ncommitment: {}\nseed: {}\n\nround 1\n",
        sha256_hex(seed),
        hex(seed)
    )
}

#[tokio::test]
async fn a_seed_from_a_client_is_marked_supplied_over_grpc_http_and_in_the_record() {
    let server = TestServer::start_with_http(test_options(), None).await;
    let http = server.http.unwrap();
    let mut c = server.client().await;

    // An unfinished record with the importer's own seed and no move: a live
    // match whose decks the importer knows.
    let seed = [7u8; 32];
    let imported = c
        .import_game(pb::ImportGameRequest {
            record: chosen_record(&seed),
            labels: Default::default(),
        })
        .await
        .expect("a record that carries its seed imports")
        .into_inner();
    let game = imported.game.unwrap();
    assert_eq!(game.status, pb::GameStatus::InProgress as i32);
    let setup = game.setup.clone().unwrap();
    assert!(
        setup.supplied,
        "an imported seed is the importer's: {setup:?}"
    );
    assert_eq!(setup.commitment, sha256_hex(&seed));
    let record = export(&mut c, &game.game_id, "").await;
    assert!(record.contains("\nx-seed: supplied\n"), "{record}");
    let j = json(http, &game.game_id).await;
    assert_eq!(j["setup"]["supplied"], true, "{j}");
    assert_eq!(j["setup"]["commitment"], sha256_hex(&seed));
    assert!(j["setup"]["seed"].is_null(), "{j}");

    // CreateGame with a seed: supplied too.
    let (seeded, seeded_tokens) = create_with(&mut c, rules(2, false, 1, &[]), &hex(&[9u8; 32]))
        .await
        .expect("create with a seed");
    assert!(seeded.setup.as_ref().unwrap().supplied);
    let record = export(&mut c, &seeded.game_id, "").await;
    assert!(record.contains("\nx-seed: supplied\n"), "{record}");
    assert_eq!(json(http, &seeded.game_id).await["setup"]["supplied"], true);

    // A server-drawn seed is not, and its record has no mark.
    let (g, t) = create_with(&mut c, rules(2, false, 1, &[]), "")
        .await
        .expect("create");
    assert!(!g.setup.as_ref().unwrap().supplied);
    let record = export(&mut c, &g.game_id, "").await;
    assert!(!record.contains("x-seed"), "{record}");
    assert_eq!(json(http, &g.game_id).await["setup"]["supplied"], false);

    // A finished record is an archive: imported again it keeps the mark it
    // carries (read in as the mark, not as a tag), and exports the same.
    for (game, tokens, supplied) in [(&seeded, &seeded_tokens, true), (&g, &t, false)] {
        let played = play_out(&mut c, &game.game_id, tokens, 5).await;
        let finished = export(&mut c, &played.end.game_id, "").await;
        assert_eq!(
            finished.matches("x-seed: supplied").count(),
            usize::from(supplied),
            "{finished}"
        );
        let again = c
            .import_game(pb::ImportGameRequest {
                record: finished.clone(),
                labels: Default::default(),
            })
            .await
            .expect("a finished record imports")
            .into_inner()
            .game
            .unwrap();
        assert_eq!(again.setup.as_ref().unwrap().supplied, supplied);
        assert!(again.labels.is_empty(), "{:?}", again.labels);
        assert_eq!(export(&mut c, &again.game_id, "").await, finished);
    }
}

#[tokio::test]
async fn the_json_page_and_picture_show_the_full_commitment_and_the_seed_after_the_end() {
    let server = TestServer::start_with_http(test_options(), None).await;
    let http = server.http.unwrap();
    let mut c = server.client().await;
    let (g, t) = create_with(&mut c, rules(2, false, 1, &[0xab, 0xcd]), "")
        .await
        .expect("create");
    let id = g.game_id.clone();
    let commitment = g.setup.as_ref().unwrap().commitment.clone();
    assert_eq!(commitment.len(), 64);

    let j = json(http, &id).await;
    assert_eq!(j["setup"]["commitment"], commitment.as_str(), "in full");
    assert!(j["setup"]["seed"].is_null());
    assert_eq!(j["setup"]["supplied"], false);
    assert_eq!(j["setup"]["entropy"], "abcd");
    let (_, svg) = http_get(http, &format!("/games/{id}.svg")).await;
    assert!(svg.contains(&commitment[..32]) && svg.contains(&commitment[32..]));
    let (_, page) = http_get(http, "/app.js").await;
    assert!(page.contains("renderSetup"), "the page shows the setup");

    let played = play_out(&mut c, &id, &t, 3).await;
    let seed = played.end.setup.as_ref().unwrap().seed.clone();
    assert_eq!(seed.len(), 64);
    let j = json(http, &id).await;
    assert_eq!(j["setup"]["seed"], seed.as_str());
    assert_eq!(j["setup"]["commitment"], commitment.as_str());
    // What the docs tell a spectator to run: SHA-256 of the seed's bytes.
    assert_eq!(sha256_hex(&parse_seed(&seed).unwrap()), commitment);
    let (_, svg) = http_get(http, &format!("/games/{id}.svg")).await;
    assert!(svg.contains(&seed[..32]) && svg.contains(&seed[32..]));
}

#[tokio::test]
async fn a_seat_cannot_abort_a_dealt_match_for_a_new_deal() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let (g, t) = create_with(&mut c, rules(2, false, 1, &[]), "")
        .await
        .expect("create");
    let id = g.game_id.clone();
    // The first card is on show from the start: no seat may abort, before
    // or after its first card, and the refusal changes nothing.
    for token in &t {
        let s = c
            .abort_game(pb::AbortGameRequest {
                game_id: id.clone(),
                token: token.clone(),
            })
            .await
            .expect_err("a seat's abort of a dealt match");
        assert_eq!(s.code(), Code::FailedPrecondition);
        assert_eq!(reason(&s), "ABORT_AFTER_DEAL");
    }
    let now = get_as(&mut c, &id, &t[0]).await;
    assert_eq!(now.status, pb::GameStatus::InProgress as i32);
    assert_eq!(now.ply, 0);
    assert_eq!(now.setup, g.setup, "the same deal");
    let mover = now.to_move as usize - 1;
    submit_move(&mut c, &id, &t[mover], cell_move(0, 0), 0)
        .await
        .expect("the first card");
    let s = c
        .abort_game(pb::AbortGameRequest {
            game_id: id.clone(),
            token: t[1 - mover].clone(),
        })
        .await
        .expect_err("after a card too");
    assert_eq!(reason(&s), "ABORT_AFTER_DEAL");
    // Resigning is the way out.
    let r = c
        .resign(pb::ResignRequest {
            game_id: id.clone(),
            token: t[1 - mover].clone(),
        })
        .await
        .expect("resign")
        .into_inner()
        .game
        .unwrap();
    assert_eq!(r.outcome.unwrap().reason, "RESIGNATION");
}
