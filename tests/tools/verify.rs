//! `punct-referee verify` and `punct-referee referee-key`, run as a user
//! would, on a record and receipt a real server exported.

use std::process::Command;

use crate::common::process::BIN;
use crate::common::*;
use punct_referee::service::grpc::pb::punct::v1 as ppb;
use punct_referee::service::grpc::pb::referee::v1 as pb;

fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .args(args)
        .output()
        .expect("the binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn verify_accepts_the_exported_record_and_names_what_is_wrong_otherwise() {
    let dir = std::env::temp_dir().join(format!(
        "punct-verify-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let key_file = dir.join("referee.key");
    let path = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let server = TestServer::start_with(punct_referee::service::ServerOptions {
        referee_key_file: Some(key_file.clone()),
        ..test_options()
    })
    .await;
    let mut client = server.client().await;
    let table = create(&mut client, ppb::Variant::Standard).await;
    for (ply, mv) in CONNECTION_GAME.iter().enumerate() {
        submit(&mut client, &table, ply as u32, notation(mv))
            .await
            .expect("move");
    }
    let export = client
        .export_game(pb::ExportGameRequest {
            game_id: table.id.clone(),
            token: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    server.stop().await.unwrap();
    std::fs::write(path("game.txt"), &export.record).unwrap();
    std::fs::write(path("receipt.json"), &export.receipt).unwrap();

    // The public keys, from the key file the server used.
    let key_arg = key_file.to_str().unwrap();
    let (code, keys, err) = run(&["referee-key", "show", "--referee-key", key_arg]);
    assert_eq!(code, 0, "{err}");
    assert!(!keys.contains("PRIVATE"), "{keys}");
    let list: serde_json::Value = serde_json::from_str(&keys).unwrap();
    let key_id = list["current_key_id"].as_str().unwrap().to_string();
    std::fs::write(path("keys.json"), &keys).unwrap();
    std::fs::write(
        path("key.hex"),
        list["keys"][0]["public_key_hex"].as_str().unwrap(),
    )
    .unwrap();

    let (code, out, err) = run(&[
        "verify",
        &path("game.txt"),
        &path("receipt.json"),
        "--keys",
        &path("keys.json"),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with(&format!("verified: game {}", table.id)),
        "{out}"
    );
    assert!(out.contains("CONNECTION") && out.contains(&key_id), "{out}");
    let (code, _, err) = run(&[
        "verify",
        &path("game.txt"),
        &path("receipt.json"),
        "--key",
        &path("key.hex"),
    ]);
    assert_eq!(code, 0, "{err}");
    // Record and receipt in one JSON object.
    let both = serde_json::json!({"record": export.record, "receipt": export.receipt});
    std::fs::write(path("both.json"), both.to_string()).unwrap();
    let (code, _, err) = run(&["verify", &path("both.json"), "--keys", &path("keys.json")]);
    assert_eq!(code, 0, "{err}");

    // A changed header tag: not the record signed.
    let changed = export.record.replacen("standard", "basic", 1);
    std::fs::write(path("changed.txt"), &changed).unwrap();
    let (code, _, err) = run(&[
        "verify",
        &path("changed.txt"),
        &path("receipt.json"),
        "--keys",
        &path("keys.json"),
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("not verified ("), "{err}");
    // A removed move.
    let shorter = export.record.replacen("SE@M5:M6,M7\n", "", 1);
    std::fs::write(path("shorter.txt"), &shorter).unwrap();
    let (code, _, err) = run(&[
        "verify",
        &path("shorter.txt"),
        &path("receipt.json"),
        "--keys",
        &path("keys.json"),
    ]);
    assert_eq!(code, 1);
    assert!(
        err.contains("not verified (BAD_RECORD)") || err.contains("not verified (MOVE_COUNT)"),
        "{err}"
    );
    // A receipt whose signature was changed.
    let mut receipt: serde_json::Value = serde_json::from_str(&export.receipt).unwrap();
    let sig = receipt["signature"].as_str().unwrap().to_string();
    let flipped = format!(
        "{}{}",
        if sig.starts_with('A') { "B" } else { "A" },
        &sig[1..]
    );
    receipt["signature"] = flipped.into();
    std::fs::write(path("bad-sig.json"), receipt.to_string()).unwrap();
    let (code, _, err) = run(&[
        "verify",
        &path("game.txt"),
        &path("bad-sig.json"),
        "--keys",
        &path("keys.json"),
    ]);
    assert_eq!(code, 1);
    assert!(
        err.contains(&format!(
            "not verified (BAD_SIGNATURE): the signature is not by key {key_id}"
        )),
        "{err}"
    );

    // Rotated: the old receipt verifies with the new list, and is not by
    // the new key alone.
    let (code, out, err) = run(&["referee-key", "rotate", "--referee-key", key_arg]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&key_id), "{out}");
    let (_, keys, _) = run(&["referee-key", "show", "--referee-key", key_arg]);
    std::fs::write(path("keys2.json"), &keys).unwrap();
    let (code, _, err) = run(&[
        "verify",
        &path("game.txt"),
        &path("receipt.json"),
        "--keys",
        &path("keys2.json"),
    ]);
    assert_eq!(code, 0, "{err}");
    let list: serde_json::Value = serde_json::from_str(&keys).unwrap();
    let new_hex = list["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["key_id"] != key_id.as_str())
        .unwrap()["public_key_hex"]
        .as_str()
        .unwrap()
        .to_string();
    std::fs::write(path("new.hex"), new_hex).unwrap();
    let (code, _, err) = run(&[
        "verify",
        &path("game.txt"),
        &path("receipt.json"),
        "--key",
        &path("new.hex"),
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("(UNKNOWN_KEY)"), "{err}");

    // A file that is not there.
    let (code, _, err) = run(&[
        "verify",
        &path("missing.txt"),
        &path("receipt.json"),
        "--keys",
        &path("keys.json"),
    ]);
    assert_eq!(code, 2, "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
