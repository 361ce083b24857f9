//! Receipts through the real server (docs/RECEIPTS.md): every kind of game
//! played to its end has a signed receipt that verifies against its record
//! with the keys the server serves; the chain head of each move event is
//! the one recomputed from the record; any changed byte of the record or
//! the receipt, a removed move and another key's receipt fail with their
//! reasons; the key survives a restart, and a rotation keeps the receipts
//! of the old key verifiable.

use crate::common;

use std::net::SocketAddr;

use common::*;
use punct_referee::games::hex;
use punct_referee::service::grpc::games::catalog;
use punct_referee::service::grpc::pb::dots::v1 as dpb;
use punct_referee::service::grpc::pb::punct::v1 as ppb;
use punct_referee::service::grpc::pb::punto::v1 as tpb;
use punct_referee::service::grpc::pb::referee::v1 as pb;
use punct_referee::service::receipts::{
    self, GamePayload, KeyList, PublicKeyEntry, Receipt, RefereeKey, VerifyError, chain,
};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio_stream::StreamExt as _;

/// A finished game as a platform keeps it.
struct Finished {
    id: String,
    record: String,
    receipt: String,
    /// `chain_head` of each MoveApplied event a watcher got, in order.
    event_heads: Vec<String>,
    /// `Game.chain_head` and `Game.receipt` of GetGame at the end.
    game: pb::Game,
    export_head: String,
}

/// The server's keys, as GetRefereeKeys gives them.
async fn keys(client: &mut Client) -> KeyList {
    let r = client
        .get_referee_keys(pb::GetRefereeKeysRequest {})
        .await
        .expect("keys")
        .into_inner();
    KeyList {
        algorithm: r.algorithm,
        current_key_id: r.current_key_id,
        keys: r
            .keys
            .iter()
            .map(|k| PublicKeyEntry {
                key_id: k.key_id.clone(),
                public_key: base64_of(&k.public_key),
                public_key_hex: hex(&k.public_key),
                since_unix_ms: k.since_unix_ms,
                retired_unix_ms: (k.retired_unix_ms != 0).then_some(k.retired_unix_ms),
            })
            .collect(),
    }
}

/// Standard base64 (the tests' own, to check the server's).
fn base64_of(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Plays the game `created` to its end: `script` first (moves given),
/// then the first legal move of each ply until `resign_after` moves, when
/// the seat to move resigns (or the game ends by the board before), while
/// a watcher collects the events.
async fn finish(
    client: &mut Client,
    created: pb::CreateGameResponse,
    script: &[pb::Move],
    resign_after: u32,
) -> Finished {
    let game = created.game.expect("game");
    let id = game.game_id.clone();
    let tokens: Vec<String> = created.seats.iter().map(|s| s.token.clone()).collect();
    let mut watch = client
        .watch_game(pb::WatchGameRequest {
            game_id: id.clone(),
            from_ply: None,
            token: String::new(),
        })
        .await
        .expect("watch")
        .into_inner();
    let watcher = tokio::spawn(async move {
        let mut heads = Vec::new();
        let mut first = None;
        while let Some(item) = watch.next().await {
            match item.expect("watch item").item {
                Some(pb::watch_game_response::Item::Snapshot(g)) => {
                    first.get_or_insert(g.chain_head);
                }
                Some(pb::watch_game_response::Item::Event(e)) => match e.kind {
                    Some(pb::game_event::Kind::MoveApplied(m)) => heads.push(m.chain_head),
                    Some(pb::game_event::Kind::GameOver(_)) => break,
                    None => {}
                },
                _ => {}
            }
        }
        (first.unwrap_or_default(), heads)
    });
    let mut ply = 0u32;
    loop {
        let g = get(client, &id).await;
        if g.status == pb::GameStatus::Finished as i32 {
            break;
        }
        let to_move = g.to_move as usize;
        let token = tokens[to_move - 1].clone();
        if ply >= resign_after && (ply as usize) >= script.len() {
            client
                .resign(pb::ResignRequest {
                    game_id: id.clone(),
                    token,
                })
                .await
                .expect("resign");
            break;
        }
        let mv = match script.get(ply as usize) {
            Some(mv) => mv.clone(),
            None => client
                .list_legal_moves(pb::ListLegalMovesRequest {
                    game_id: id.clone(),
                    token: token.clone(),
                    ..Default::default()
                })
                .await
                .expect("legal")
                .into_inner()
                .moves
                .first()
                .expect("a legal move")
                .clone(),
        };
        client
            .submit_move(pb::SubmitMoveRequest {
                game_id: id.clone(),
                token,
                r#move: Some(mv),
                expected_ply: ply,
                request_id: String::new(),
            })
            .await
            .expect("move");
        ply += 1;
    }
    let (root, event_heads) = within(10, watcher).await.expect("watcher");
    let export = client
        .export_game(pb::ExportGameRequest {
            game_id: id.clone(),
            token: String::new(),
        })
        .await
        .expect("export")
        .into_inner();
    let game = get(client, &id).await;
    assert!(!root.is_empty(), "the first snapshot has the chain's root");
    assert!(
        !export.receipt.is_empty(),
        "a finished game's export has its receipt"
    );
    Finished {
        id,
        record: export.record,
        receipt: export.receipt,
        event_heads,
        game,
        export_head: export.chain_head,
    }
}

/// The chain heads after each move of `record` of game `id`, recomputed
/// here from the record alone.
fn heads_of(id: &str, record: &str) -> Vec<String> {
    let replayed = catalog().import(record, None).expect("the record replays");
    let commitment = replayed.game.setup().map(|s| s.commitment());
    let mut h = chain::root(id, &replayed.game.rules_header(), commitment.as_ref());
    replayed
        .moves
        .iter()
        .map(|m| {
            h = chain::step(&h, m.detail.notation(), m.ply);
            hex(&h)
        })
        .collect()
}

fn verify(record: &str, receipt: &str, keys: &KeyList) -> Result<GamePayload, VerifyError> {
    receipts::verify_game(record, &Receipt::parse(receipt)?, keys, &catalog())
}

/// Every check a finished game's receipt passes, and the changes that make
/// it fail.
fn check_finished(f: &Finished, keys: &KeyList) {
    let payload = verify(&f.record, &f.receipt, keys)
        .unwrap_or_else(|e| panic!("{}: {e}\n{}\n{}", f.id, f.record, f.receipt));
    assert_eq!(payload.game_id, f.id);
    assert_eq!(payload.key_id, keys.current_key_id);
    assert_eq!(
        f.game.receipt, f.receipt,
        "GetGame and ExportGame carry one receipt"
    );
    // The events' heads are the ones recomputed from the record, one per
    // move, the last one signed.
    let heads = heads_of(&f.id, &f.record);
    assert_eq!(f.event_heads, heads, "{}", f.record);
    let last = heads.last().cloned().unwrap_or_default();
    assert_eq!(payload.chain_head, last);
    assert_eq!(f.game.chain_head, last);
    assert_eq!(f.export_head, last);
    assert_eq!(payload.ply as usize, heads.len());

    // Any changed byte of the record fails.
    let bytes = f.record.as_bytes();
    for i in 0..bytes.len() {
        let mut changed = bytes.to_vec();
        changed[i] = if bytes[i] == b'1' { b'2' } else { b'1' };
        let Ok(changed) = String::from_utf8(changed) else {
            continue;
        };
        assert!(
            verify(&changed, &f.receipt, keys).is_err(),
            "record byte {i} changed, still verified:\n{changed}"
        );
    }
    // Any changed byte of the receipt fails.
    let bytes = f.receipt.as_bytes();
    for i in 0..bytes.len() {
        let mut changed = bytes.to_vec();
        changed[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
        let Ok(changed) = String::from_utf8(changed) else {
            continue;
        };
        assert!(
            verify(&f.record, &changed, keys).is_err(),
            "receipt byte {i} changed, still verified: {changed}"
        );
    }
    // A changed payload keeps its signature: refused as not by the key.
    let mut receipt = Receipt::parse(&f.receipt).unwrap();
    receipt.payload = receipt
        .payload
        .replacen(&payload.chain_head, &"0".repeat(64), 1);
    let e = receipts::verify_game(&f.record, &receipt, keys, &catalog()).unwrap_err();
    assert_eq!(e.code(), "BAD_SIGNATURE", "{e}");
    assert!(e.to_string().contains(&keys.current_key_id), "{e}");

    // A removed move: the record no longer has the moves signed.
    let (head, body) = f.record.split_once("\n\n").expect("a header");
    let lines: Vec<&str> = body.lines().collect();
    let last_move = lines
        .iter()
        .rposition(|l| !l.trim().is_empty() && !l.starts_with("round "))
        .expect("a move line");
    let mut shorter: Vec<&str> = lines.clone();
    shorter.remove(last_move);
    let shorter = format!("{head}\n\n{}\n", shorter.join("\n"));
    let e = verify(&shorter, &f.receipt, keys).unwrap_err();
    assert!(
        matches!(e.code(), "MOVE_COUNT" | "BAD_RECORD"),
        "a removed move: {e}"
    );

    // The same facts signed by another key: not among the keys given; the
    // other key's receipt claiming this key's id: not by this key.
    let other = RefereeKey::ephemeral().unwrap();
    let forged = Receipt::sign(
        &GamePayload {
            key_id: other.id().to_string(),
            ..payload.clone()
        },
        &other,
    );
    let e = receipts::verify_game(&f.record, &forged, keys, &catalog()).unwrap_err();
    assert_eq!(e.code(), "UNKNOWN_KEY", "{e}");
    let claimed = Receipt {
        key_id: keys.current_key_id.clone(),
        ..Receipt::sign(&payload, &other)
    };
    let e = receipts::verify_game(&f.record, &claimed, keys, &catalog()).unwrap_err();
    assert_eq!(e.code(), "BAD_SIGNATURE", "{e}");
}

async fn http_json(addr: SocketAddr, path: &str) -> serde_json::Value {
    within(10, async {
        let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
        stream
            .write_all(
                format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
            )
            .await
            .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.unwrap();
        let (head, body) = answer.split_once("\r\n\r\n").expect("an answer");
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
    })
    .await
}

#[tokio::test]
async fn every_kind_of_finished_game_has_a_receipt_that_verifies_and_resists_tampering() {
    let server = TestServer::start_with_http(test_options(), None).await;
    let http = server.http.unwrap();
    let mut client = server.client().await;
    let keys = keys(&mut client).await;
    assert_eq!(keys.algorithm, "Ed25519");
    assert_eq!(keys.keys.len(), 1);
    assert!(keys.find(&keys.current_key_id).is_some());
    // The HTTP port serves the same list.
    let known = http_json(http, "/.well-known/punct-referee.json").await;
    assert_eq!(known["current_key_id"], keys.current_key_id.as_str());
    assert_eq!(
        known["keys"][0]["public_key"],
        keys.keys[0].public_key.as_str()
    );

    let create = |rules: pb::GameRules, labels: &[(&str, &str)]| pb::CreateGameRequest {
        rules: Some(rules),
        labels: labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..Default::default()
    };
    let punct_rules = rules(ppb::Variant::Standard);
    let dots_rules = pb::GameRules {
        game: Some(pb::game_rules::Game::Dots(dpb::RuleOptions {
            width: 4,
            height: 4,
            start: dpb::Start::Empty as i32,
            max_moves: 0,
        })),
    };
    let punto_rules = pb::GameRules {
        game: Some(pb::game_rules::Game::Punto(tpb::RuleOptions {
            players: 2,
            team: false,
            rounds_to_win: Some(1),
            max_rounds: 0,
            entropy: Vec::new(),
        })),
    };
    let connection: Vec<pb::Move> = CONNECTION_GAME.iter().map(|m| notation(m)).collect();
    let games = [
        // PÜNCT won on the board, with labels in its record.
        (
            create(punct_rules.clone(), &[("event", "cup")]),
            connection,
            0,
        ),
        // PÜNCT resigned.
        (create(punct_rules, &[]), Vec::new(), 3),
        // Dots played until the field is full.
        (create(dots_rules, &[]), Vec::new(), u32::MAX),
        // Punto (seeded, hidden deck) resigned after some moves.
        (create(punto_rules, &[]), Vec::new(), 6),
    ];
    for (request, script, resign_after) in games {
        let created = client
            .create_game(request)
            .await
            .expect("create")
            .into_inner();
        assert!(
            created.game.as_ref().unwrap().receipt.is_empty(),
            "no receipt before the end"
        );
        let f = finish(&mut client, created, &script, resign_after).await;
        check_finished(&f, &keys);
        // The HTTP JSON carries the head and the same receipt.
        let detail = http_json(http, &format!("/api/games/{}", f.id)).await;
        assert_eq!(detail["chain_head"], f.game.chain_head.as_str());
        let receipt: Receipt = serde_json::from_value(detail["receipt"].clone()).unwrap();
        assert_eq!(receipt.to_json(), f.receipt);
    }
    server.stop().await.unwrap();
}

#[tokio::test]
async fn the_key_survives_a_restart_and_a_rotation_keeps_old_receipts_verifiable() {
    use punct_referee::service::StorageConfig;
    use punct_referee::service::storage::sqlite::{SqliteOptions, SyncMode};
    let dir = std::env::temp_dir().join(format!(
        "punct-receipts-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    let key_file = dir.join("referee.key");
    let options = || punct_referee::service::ServerOptions {
        storage: StorageConfig::Sqlite(SqliteOptions {
            dir: dir.clone(),
            sync: SyncMode::Normal,
            max_bytes: None,
        }),
        referee_key_file: Some(key_file.clone()),
        ..test_options()
    };
    let server = TestServer::start_with(options()).await;
    let mut client = server.client().await;
    let first_keys = keys(&mut client).await;
    let created = client
        .create_game(pb::CreateGameRequest {
            rules: Some(rules(ppb::Variant::Standard)),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let connection: Vec<pb::Move> = CONNECTION_GAME.iter().map(|m| notation(m)).collect();
    let f = finish(&mut client, created, &connection, 0).await;
    check_finished(&f, &first_keys);
    server.stop().await.unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&key_file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "the key file is the owner's only");
    }

    // Restarted: the same key, and the finished game's receipt is the same
    // bytes (made again from what is stored).
    let server = TestServer::start_with(options()).await;
    let mut client = server.client().await;
    assert_eq!(keys(&mut client).await, first_keys);
    let again = client
        .export_game(pb::ExportGameRequest {
            game_id: f.id.clone(),
            token: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(again.record, f.record);
    assert_eq!(again.receipt, f.receipt);
    server.stop().await.unwrap();

    // Rotated: a new key signs, the old one stays listed and its receipt
    // verifies with the new list; the game's receipt is now the new key's.
    let (old, new) = RefereeKey::rotate(&key_file).unwrap();
    assert_eq!(old, first_keys.current_key_id);
    let server = TestServer::start_with(options()).await;
    let mut client = server.client().await;
    let rotated = keys(&mut client).await;
    assert_eq!(rotated.current_key_id, new);
    assert_eq!(rotated.keys.len(), 2);
    let retired = rotated
        .keys
        .iter()
        .find(|k| k.key_id == old)
        .expect("old key listed");
    assert!(retired.retired_unix_ms.is_some());
    verify(&f.record, &f.receipt, &rotated).expect("the old receipt still verifies");
    let now = client
        .export_game(pb::ExportGameRequest {
            game_id: f.id.clone(),
            token: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    let payload = verify(&now.record, &now.receipt, &rotated).unwrap();
    assert_eq!(payload.key_id, new);
    // The new key's receipt does not verify with the old list alone.
    let e = verify(&now.record, &now.receipt, &first_keys).unwrap_err();
    assert_eq!(e.code(), "UNKNOWN_KEY");
    server.stop().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// The receipts the kits' own suites verify (clients/python/tests/data,
/// clients/node/test/data): games of every kind a real server finished,
/// with its keys. They verify here too, so the kits and this verifier
/// agree on one set of bytes. `PUNCT_REFEREE_WRITE_RECEIPT_VECTORS=1`
/// writes them again from a new server.
#[tokio::test]
async fn the_kits_receipt_vectors_verify() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = [
        root.join("clients/python/tests/data/receipts.json"),
        root.join("clients/node/test/data/receipts.json"),
    ];
    if std::env::var_os("PUNCT_REFEREE_WRITE_RECEIPT_VECTORS").is_some() {
        let server = TestServer::start().await;
        let mut client = server.client().await;
        let keys = keys(&mut client).await;
        let mut games = Vec::new();
        let punto = pb::GameRules {
            game: Some(pb::game_rules::Game::Punto(tpb::RuleOptions {
                players: 2,
                team: false,
                rounds_to_win: Some(1),
                max_rounds: 0,
                entropy: Vec::new(),
            })),
        };
        let dots = pb::GameRules {
            game: Some(pb::game_rules::Game::Dots(dpb::RuleOptions {
                width: 4,
                height: 4,
                start: dpb::Start::Empty as i32,
                max_moves: 0,
            })),
        };
        let connection: Vec<pb::Move> = CONNECTION_GAME.iter().map(|m| notation(m)).collect();
        let requests = [
            (rules(ppb::Variant::Standard), connection, 0),
            (dots, Vec::new(), u32::MAX),
            (punto, Vec::new(), 8),
        ];
        for (rules, script, resign_after) in requests {
            let created = client
                .create_game(pb::CreateGameRequest {
                    rules: Some(rules),
                    labels: [("event".to_string(), "cup".to_string())].into(),
                    ..Default::default()
                })
                .await
                .unwrap()
                .into_inner();
            let f = finish(&mut client, created, &script, resign_after).await;
            games.push(serde_json::json!({
                "record": f.record,
                "receipt": f.receipt,
                "chain_heads": f.event_heads,
            }));
        }
        server.stop().await.unwrap();
        let text = serde_json::to_string_pretty(&serde_json::json!({
            "keys": keys,
            "games": games,
        }))
        .unwrap();
        for file in &files {
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, format!("{text}\n")).unwrap();
        }
    }
    let text = std::fs::read_to_string(&files[0]).unwrap();
    assert_eq!(
        std::fs::read_to_string(&files[1]).unwrap(),
        text,
        "one set of vectors"
    );
    let vectors: serde_json::Value = serde_json::from_str(&text).unwrap();
    let keys: KeyList = serde_json::from_value(vectors["keys"].clone()).unwrap();
    let games = vectors["games"].as_array().unwrap();
    let mut kinds: Vec<String> = Vec::new();
    for g in games {
        let record = g["record"].as_str().unwrap();
        let receipt = g["receipt"].as_str().unwrap();
        let payload = verify(record, receipt, &keys).unwrap();
        let heads: Vec<String> = serde_json::from_value(g["chain_heads"].clone()).unwrap();
        assert_eq!(heads, heads_of(&payload.game_id, record));
        kinds.push(payload.game);
    }
    assert_eq!(kinds, ["punct", "dots", "punto"]);
}
