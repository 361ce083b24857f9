//! `client webhooks …` against a real server with keys and a durable
//! store: add prints the secret once, list never shows it, deliveries and
//! replay follow a delivery that failed, delete removes the endpoint; the
//! key must carry `webhooks:admin`.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::common::process::{self, BIN};

fn client(server: &str, tokens: &Path, key: Option<&str>, args: &[&str]) -> Output {
    let mut command = Command::new(BIN);
    command
        .args(["client", "--server", server, "--tokens"])
        .arg(tokens)
        .args(args)
        .env_remove("PUNCT_KEY");
    if let Some(key) = key {
        command.env("PUNCT_KEY", key);
    }
    command.output().expect("the binary runs")
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A key of `name` with `scopes`, appended to `file`.
fn new_key(file: &Path, name: &str, scopes: &[&str]) -> String {
    let mut command = Command::new(BIN);
    command.args(["keys", "--name", name, "--file"]).arg(file);
    for scope in scopes {
        command.args(["--scope", scope]);
    }
    let out = command.output().unwrap();
    assert!(out.status.success(), "{:?}", text(&out));
    text(&out).0.trim().to_owned()
}

#[test]
fn a_platform_adds_lists_replays_and_deletes_webhook_endpoints() {
    let dir = std::env::temp_dir().join(format!("punct-webhooks-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let keys = dir.join("keys.jsonl");
    let admin = new_key(&keys, "platform", &["webhooks:admin", "games:create"]);
    let player = new_key(&keys, "lobby", &["games:create"]);
    let data = dir.join("data");
    let (mut child, addr) = process::start(
        &mut process::serve(&[
            "--no-http",
            "--metrics-listen",
            "127.0.0.1:0",
            "--data-dir",
            data.to_str().unwrap(),
            "--keys",
            keys.to_str().unwrap(),
            "--webhook-allow-private",
            "--webhook-max-attempts",
            "1",
        ]),
        "a durable server with keys",
    );
    let server = format!("http://{addr}");
    let tokens = dir.join("tokens.json");
    // Nobody listens there: every attempt fails, and with one attempt
    // allowed the delivery is failed at once.
    let port = process::free_port();
    let url = format!("http://127.0.0.1:{port}/hook");

    // Without webhooks:admin, refused; nothing registered.
    for key in [None, Some(player.as_str())] {
        let out = client(&server, &tokens, key, &["webhooks", "add", &url]);
        assert!(!out.status.success(), "{:?}", text(&out));
    }
    let add = client(
        &server,
        &tokens,
        Some(&admin),
        &["webhooks", "add", &url, "--description", "ops"],
    );
    let (out, err) = text(&add);
    assert!(add.status.success(), "{out}{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    let (id, secret) = (lines[0], lines[1]);
    assert!(
        id.starts_with("whe_") && secret.starts_with("whsec_"),
        "{out}"
    );
    assert!(err.contains("not shown again"), "{err}");
    // A bad kind is refused with the field named.
    let bad = client(
        &server,
        &tokens,
        Some(&admin),
        &["webhooks", "add", &url, "--events", "game.nope"],
    );
    assert!(
        !bad.status.success() && text(&bad).1.contains("InvalidArgument"),
        "{:?}",
        text(&bad)
    );

    let list = client(&server, &tokens, Some(&admin), &["webhooks", "list"]);
    let (listed, _) = text(&list);
    assert!(list.status.success());
    assert_eq!(listed.lines().count(), 1, "{listed}");
    let row: Vec<&str> = listed.trim_end().split('\t').collect();
    assert_eq!(
        (row[0], row[1], row[2], row[4]),
        (id, url.as_str(), "game.created,game.ended", "ops")
    );
    let secret_b64 = secret.trim_start_matches("whsec_");
    assert!(
        !listed.contains(secret_b64),
        "no secret in a list: {listed}"
    );

    // A game created: its game.created delivery fails (nobody listens).
    let new = client(&server, &tokens, Some(&admin), &["new"]);
    assert!(new.status.success(), "{:?}", text(&new));
    let game = text(&new).0.lines().next().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(30);
    let failed = loop {
        let out = client(
            &server,
            &tokens,
            Some(&admin),
            &["webhooks", "deliveries", id, "--status", "failed"],
        );
        let (listed, err) = text(&out);
        assert!(out.status.success(), "{err}");
        if let Some(line) = listed.lines().next() {
            break line.to_owned();
        }
        assert!(Instant::now() < deadline, "no failed delivery");
        std::thread::sleep(Duration::from_millis(100));
    };
    let fields: Vec<&str> = failed.split('\t').collect();
    assert!(fields[0].starts_with("msg_"), "{failed}");
    assert_eq!(
        (fields[1], fields[2], fields[3], fields[4]),
        ("game.created", game.as_str(), "failed", "1"),
        "{failed}"
    );
    assert!(!fields[6].is_empty(), "the last error: {failed}");

    let replay = client(
        &server,
        &tokens,
        Some(&admin),
        &["webhooks", "replay", id, "--event", fields[0]],
    );
    assert_eq!(text(&replay).0.trim(), "1 replayed", "{:?}", text(&replay));
    let unknown = client(
        &server,
        &tokens,
        Some(&admin),
        &[
            "webhooks",
            "replay",
            id,
            "--event",
            "msg_0123456789abcdef0123456789abcdef",
        ],
    );
    assert_eq!(
        text(&unknown).0.trim(),
        "0 replayed",
        "{:?}",
        text(&unknown)
    );

    let delete = client(&server, &tokens, Some(&admin), &["webhooks", "delete", id]);
    assert_eq!(text(&delete).0.trim(), format!("deleted {id}"));
    let list = client(&server, &tokens, Some(&admin), &["webhooks", "list"]);
    assert_eq!(text(&list).0, "");
    let again = client(&server, &tokens, Some(&admin), &["webhooks", "delete", id]);
    assert!(
        !again.status.success() && text(&again).1.contains("NotFound"),
        "{:?}",
        text(&again)
    );

    process::stop(&mut child);
    let _ = std::fs::remove_dir_all(&dir);
}
