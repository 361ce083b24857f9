//! Nothing recoverable at rest (docs/SECURITY.md, "At rest"): through the
//! real server on SQLite, the data directory holds no seed of a game and no
//! token, a restart keeps every deck and every seat, a server with another
//! secret file refuses to start, and a database of the previous version is
//! sealed in place at start with its old tokens still working.

use std::path::{Path, PathBuf};

use punct_referee::service::storage::ServerSecret;
use punct_referee::service::storage::secret::SECRET_FILE;
use punct_referee::service::storage::sqlite::DB_FILE;
use sha2::Digest as _;

use super::*;

type Referee = common::Client;

/// Every byte of every file in `dir` but the secret file (the database, its
/// log, its shared memory, the lock file).
fn data_files(dir: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.file_name().is_some_and(|n| n == SECRET_FILE) || !path.is_file() {
            continue;
        }
        out.extend(std::fs::read(&path).unwrap());
    }
    out
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Vec<u8> {
    (0..text.len() / 2)
        .map(|i| u8::from_str_radix(&text[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// What [`populate`] made, with every secret the clients were given.
struct Made {
    dots_id: String,
    dots_seed: String,
    dots_tokens: Vec<String>,
    punto_id: String,
    punto_commitment: String,
    punto_tokens: Vec<String>,
    keys: Vec<String>,
    assigned: pb::GameAssignment,
    /// A tournament's opening seed (hex) and another's `setup_seed_base`.
    opening_seed: String,
    seed_base: u64,
}

impl Made {
    /// Every secret, as the bytes that must not be in the data directory.
    fn secrets(&self) -> Vec<Vec<u8>> {
        let mut out = vec![
            self.dots_seed.clone().into_bytes(),
            self.dots_seed.to_ascii_uppercase().into_bytes(),
            unhex(&self.dots_seed),
            self.assigned.seat_token.clone().into_bytes(),
            self.opening_seed.clone().into_bytes(),
            self.opening_seed.to_ascii_uppercase().into_bytes(),
            unhex(&self.opening_seed),
            self.seed_base.to_string().into_bytes(),
        ];
        for t in self
            .dots_tokens
            .iter()
            .chain(&self.punto_tokens)
            .chain(&self.keys)
        {
            out.push(t.clone().into_bytes());
            out.push(unhex(t));
        }
        out
    }
}

/// The first game the entrant with `key` is given.
async fn assignment(t: &mut Tournaments, key: &str) -> pb::GameAssignment {
    let mut stream = loop {
        match t
            .connect_entrant(pb::ConnectEntrantRequest {
                entrant_key: key.to_string(),
                tournament_id: String::new(),
            })
            .await
        {
            Ok(stream) => break stream.into_inner(),
            // An earlier stream of the entrant may not be seen closed yet.
            Err(s) if s.code() == Code::FailedPrecondition => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(s) => panic!("{s:?}"),
        }
    };
    let event = tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .expect("a game within 10 s")
        .unwrap()
        .unwrap();
    match event.event {
        Some(pb::connect_entrant_response::Event::Game(game)) => game,
        other => panic!("a game first, got {other:?}"),
    }
}

/// A Dots game from a seed of the client (quadruple cross), a Punto game
/// from a seed the server draws, and a running tournament whose first
/// entrant was given its seat.
async fn populate(server: &TestServer) -> Made {
    let mut referee = server.client().await;
    let dots_seed = hex(&rand::random::<[u8; 32]>());
    let dots = referee
        .create_game(pb::CreateGameRequest {
            rules: Some(pb::GameRules {
                game: Some(pb::game_rules::Game::Dots(dpb::RuleOptions {
                    width: 39,
                    height: 32,
                    start: dpb::Start::QuadrupleCross as i32,
                    max_moves: 0,
                })),
            }),
            seed: dots_seed.clone(),
            ..Default::default()
        })
        .await
        .expect("a Dots game")
        .into_inner();
    let punto = referee
        .create_game(pb::CreateGameRequest {
            rules: Some(pb::GameRules {
                game: Some(pb::game_rules::Game::Punto(tpb::RuleOptions {
                    players: 2,
                    team: false,
                    rounds_to_win: Some(2),
                    max_rounds: 0,
                    entropy: Vec::new(),
                })),
            }),
            ..Default::default()
        })
        .await
        .expect("a Punto game")
        .into_inner();
    let punto_game = punto.game.clone().unwrap();
    let mut t = TournamentServiceClient::new(server.channel().await);
    let mut s = spec(dots_rules(), pb::TournamentFormat::RoundRobin, 1);
    s.time_control = Some(clock(600_000));
    let (created, keys) = create(&mut t, s, &["a", "b"]).await;
    start(&mut t, &created.tournament_id).await;
    let assigned = assignment(&mut t, &keys[0].entrant_key).await;
    // Two Punto tournaments, stored at creation with their seeds.
    let punto_rules = pb::GameRules {
        game: Some(pb::game_rules::Game::Punto(tpb::RuleOptions {
            players: 2,
            ..Default::default()
        })),
    };
    let opening_seed = hex(&rand::random::<[u8; 32]>());
    let mut s = spec(punto_rules.clone(), pb::TournamentFormat::RoundRobin, 2);
    s.openings = vec![pb::Opening {
        seed: opening_seed.clone(),
        ..Default::default()
    }];
    create(&mut t, s, &["c", "d"]).await;
    // Twenty digits: not found in the files by chance.
    let seed_base = 10_000_000_000_000_000_000 + rand::random::<u64>() % 1_000_000_000;
    let mut s = spec(punto_rules, pb::TournamentFormat::RoundRobin, 2);
    s.setup_seed_base = Some(seed_base);
    create(&mut t, s, &["e", "f"]).await;
    Made {
        opening_seed,
        seed_base,
        dots_id: dots.game.unwrap().game_id,
        dots_seed,
        dots_tokens: dots.seats.iter().map(|s| s.token.clone()).collect(),
        punto_id: punto_game.game_id,
        punto_commitment: punto_game.setup.unwrap().commitment,
        punto_tokens: punto.seats.iter().map(|s| s.token.clone()).collect(),
        keys: keys.iter().map(|k| k.entrant_key.clone()).collect(),
        assigned,
    }
}

fn assert_nothing_secret(dir: &Path, made: &Made, when: &str) {
    let bytes = data_files(dir);
    assert!(
        contains(&bytes, made.dots_id.as_bytes()),
        "{when}: the data is there"
    );
    for secret in made.secrets() {
        assert!(
            !contains(&bytes, &secret),
            "{when}: a secret is in the data directory: {} (dots seed {}, opening seed {})",
            String::from_utf8_lossy(&secret),
            made.dots_seed,
            made.opening_seed
        );
    }
}

async fn game(referee: &mut Referee, id: &str) -> pb::Game {
    common::get(referee, id).await
}

async fn resign(referee: &mut Referee, id: &str, token: &str) {
    referee
        .resign(pb::ResignRequest {
            game_id: id.to_string(),
            token: token.to_string(),
        })
        .await
        .expect("resign");
}

/// After a restart: the games go on with their decks (the same
/// commitments, the seeds revealed at the end match them and the Dots seed
/// is the client's), and the tournament's entrant gets the same seat token,
/// which moves.
async fn check_after_restart(server: &TestServer, made: &Made) -> Vec<u8> {
    let mut referee = server.client().await;
    let dots = game(&mut referee, &made.dots_id).await;
    let dots_commitment = dots.setup.as_ref().unwrap().commitment.clone();
    assert_eq!(
        dots.setup.as_ref().unwrap().seed,
        "",
        "secret until the end"
    );
    assert_eq!(
        dots_commitment,
        hex(&sha2::Sha256::digest(unhex(&made.dots_seed))),
        "the Dots deck is the client's after the restart"
    );
    let punto = game(&mut referee, &made.punto_id).await;
    assert_eq!(
        punto.setup.as_ref().unwrap().commitment,
        made.punto_commitment,
        "the same Punto deal after the restart"
    );
    let mut t = TournamentServiceClient::new(server.channel().await);
    let again = assignment(&mut t, &made.keys[0]).await;
    assert_eq!(
        (again.game_id.as_str(), again.seat_token.as_str()),
        (
            made.assigned.game_id.as_str(),
            made.assigned.seat_token.as_str()
        ),
        "the entrant gets its seat again"
    );
    referee
        .list_legal_moves(pb::ListLegalMovesRequest {
            game_id: again.game_id.clone(),
            seat: 0,
            token: again.seat_token.clone(),
            view: pb::MovesView::Notation as i32,
        })
        .await
        .expect("the seat token is the seat's");
    let got = referee
        .get_game(pb::GetGameRequest {
            game_id: again.game_id.clone(),
            token: again.seat_token.clone(),
            ..Default::default()
        })
        .await
        .expect("the seat token still works")
        .into_inner();
    assert_eq!(got.game.unwrap().viewer, again.seat);
    // The ends reveal the seeds: each matches its commitment.
    resign(&mut referee, &made.dots_id, &made.dots_tokens[0]).await;
    let over = game(&mut referee, &made.dots_id).await;
    assert_eq!(over.setup.unwrap().seed, made.dots_seed);
    resign(&mut referee, &made.punto_id, &made.punto_tokens[1]).await;
    let over = game(&mut referee, &made.punto_id).await;
    let seed = over.setup.unwrap().seed;
    assert_eq!(seed.len(), 64);
    assert_eq!(
        hex(&sha2::Sha256::digest(unhex(&seed))),
        made.punto_commitment
    );
    unhex(&seed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_data_directory_holds_no_seed_and_no_token_and_a_restart_keeps_every_deck() {
    let dir = temp_dir("at-rest");
    let server = TestServer::start_with(sqlite_options(&dir)).await;
    let made = populate(&server).await;
    assert_nothing_secret(&dir, &made, "while serving");
    server.stop().await.unwrap();
    assert_nothing_secret(&dir, &made, "stopped");
    let before = data_files(&dir);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.join(SECRET_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "the secret file is its owner's only");
    }
    let server = start_when_free(&dir).await;
    let punto_seed = check_after_restart(&server, &made).await;
    assert!(
        !contains(&before, &punto_seed) && !contains(&before, hex(&punto_seed).as_bytes()),
        "the Punto seed was not in the data directory while the game went on"
    );
    server.stop().await.unwrap();
    // Another secret file: the server refuses to start, and says why.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let options = ServerOptions {
        secret_file: Some(dir.join("another.secret")),
        ..sqlite_options(&dir)
    };
    let e = tokio::time::timeout(
        Duration::from_secs(20),
        punct_referee::service::run(listener, options, std::future::pending()),
    )
    .await
    .expect("refused at once")
    .unwrap_err()
    .to_string();
    assert!(e.contains("does not match the database"), "{e}");
    assert!(e.contains("--secret-file"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Turns the database of `dir` back into what version 3 wrote: seeds in
/// hex in the clear, the tournaments' seeds and the seat tokens of their
/// games in progress in the clear in their documents, no key check, no
/// `forfeits` column; and removes the secret file.
fn as_the_previous_version_wrote_it(dir: &Path) {
    let secret = ServerSecret::load_or_create(&dir.join(SECRET_FILE)).unwrap();
    let conn = rusqlite::Connection::open(dir.join(DB_FILE)).unwrap();
    let seeds: Vec<(String, String)> = conn
        .prepare("SELECT id, seed FROM games WHERE seed IS NOT NULL")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    for (id, sealed) in seeds {
        let sealed: [u8; 32] = unhex(&sealed).try_into().unwrap();
        conn.execute(
            "UPDATE games SET seed = ?2 WHERE id = ?1",
            [&id, &hex(&secret.unseal_seed(&id, &sealed))],
        )
        .unwrap();
    }
    let docs: Vec<(String, String)> = conn
        .prepare("SELECT id, document FROM tournaments")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    for (id, document) in docs {
        let mut doc: serde_json::Value = serde_json::from_str(&document).unwrap();
        secret.unseal_document_seeds(&mut doc).unwrap();
        for g in doc["games"].as_array_mut().unwrap() {
            let seats = g["seats"].as_array().unwrap().len();
            let state = g["state"].as_object_mut().unwrap();
            if state["state"] != "playing" {
                continue;
            }
            let game_id = state["game_id"].as_str().unwrap().to_string();
            let tokens: Vec<String> = (0..seats)
                .map(|s| hex(&secret.seat_token(&id, &game_id, s)))
                .collect();
            state.insert("tokens".into(), tokens.into());
        }
        conn.execute(
            "UPDATE tournaments SET document = ?2 WHERE id = ?1",
            [&id, &doc.to_string()],
        )
        .unwrap();
    }
    conn.execute_batch(
        "DROP TABLE meta; ALTER TABLE games DROP COLUMN forfeits; PRAGMA user_version = 3;",
    )
    .unwrap();
    drop(conn);
    std::fs::remove_file(dir.join(SECRET_FILE)).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_of_the_previous_version_is_sealed_at_start_and_its_tokens_still_work() {
    let dir = temp_dir("at-rest-migration");
    let server = TestServer::start_with(sqlite_options(&dir)).await;
    let made = populate(&server).await;
    server.stop().await.unwrap();
    as_the_previous_version_wrote_it(&dir);
    let bytes = data_files(&dir);
    assert!(contains(&bytes, made.dots_seed.as_bytes()), "plain before");
    assert!(contains(&bytes, made.assigned.seat_token.as_bytes()));
    assert!(contains(&bytes, made.opening_seed.as_bytes()));
    assert!(contains(&bytes, made.seed_base.to_string().as_bytes()));
    // The new start makes a new secret and seals everything with it; the
    // tokens given out before (the tournament's too) still work.
    let server = start_when_free(&dir).await;
    assert_nothing_secret(&dir, &made, "migrated");
    check_after_restart(&server, &made).await;
    server.stop().await.unwrap();
    assert_nothing_secret(&dir, &made, "migrated, stopped");
    let conn = rusqlite::Connection::open(dir.join(DB_FILE)).unwrap();
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(
        version,
        punct_referee::service::storage::sqlite::SCHEMA_VERSION
    );
    // The tournament's game keeps its forfeits (told by its label then);
    // the client's games have none.
    let forfeits = |id: &str| -> bool {
        conn.query_row("SELECT forfeits FROM games WHERE id = ?1", [id], |r| {
            r.get(0)
        })
        .unwrap()
    };
    assert!(forfeits(&made.assigned.game_id));
    assert!(!forfeits(&made.dots_id));
    drop(conn);
    let _ = std::fs::remove_dir_all(&dir);
}
