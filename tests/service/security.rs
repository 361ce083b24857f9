//! Who may do what, through the real server (docs/SECURITY.md): TLS and
//! mutual TLS with certificates made here by rcgen (a certificate swapped on
//! disk serves new connections while an old one keeps working), platform
//! keys and their scopes, and the limits per client.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{Client, TestServer, rules, test_options};
use punct_referee::service::ServerOptions;
use punct_referee::service::edge::access::{Scope, new_key};
use punct_referee::service::edge::quota::QuotaOptions;
use punct_referee::service::edge::tls::TlsFiles;
use punct_referee::service::grpc::pb::punct::v1::Variant;
use punct_referee::service::grpc::pb::referee::v1 as pb;
use punct_referee::service::grpc::pb::referee::v1::referee_service_client::RefereeServiceClient;
use tokio_stream::StreamExt as _;
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity};
use tonic::{Code, Request, Status};
use tonic_types::StatusExt as _;

// ------------------------------------------------------------ certificates

/// A certificate authority made for one test.
struct Authority {
    issuer: rcgen::CertifiedIssuer<'static, rcgen::KeyPair>,
}

impl Authority {
    fn new(name: &str) -> Authority {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        let key = rcgen::KeyPair::generate().unwrap();
        Authority {
            issuer: rcgen::CertifiedIssuer::self_signed(params, key).unwrap(),
        }
    }

    fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// A leaf for `localhost` (certificate PEM, key PEM).
    fn leaf(&self, name: &str) -> (String, String) {
        let mut params =
            rcgen::CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])
                .unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        (cert.pem(), key.serialize_pem())
    }
}

/// A fresh directory for one test's files.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "punct-referee-security-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes a server certificate of `ca` into `dir` (cert.pem, key.pem).
fn write_server_cert(dir: &Path, ca: &Authority, name: &str) -> TlsFiles {
    let (cert, key) = ca.leaf(name);
    // Written next to the files, then renamed: the reload never sees half a file.
    for (file, text) in [("cert.pem", cert), ("key.pem", key)] {
        let tmp = dir.join(format!("{file}.tmp"));
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(tmp, dir.join(file)).unwrap();
    }
    TlsFiles {
        cert: dir.join("cert.pem"),
        key: dir.join("key.pem"),
        client_ca: None,
    }
}

fn tls_endpoint(server: &TestServer, ca: &Authority, identity: Option<Identity>) -> Endpoint {
    tls_endpoint_at(server.addr, ca, identity)
}

fn tls_endpoint_at(
    addr: std::net::SocketAddr,
    ca: &Authority,
    identity: Option<Identity>,
) -> Endpoint {
    let mut tls = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(ca.pem()))
        .domain_name("localhost");
    if let Some(identity) = identity {
        tls = tls.identity(identity);
    }
    Endpoint::from_shared(format!("https://{addr}"))
        .unwrap()
        .connect_timeout(Duration::from_secs(5))
        .tls_config(tls)
        .unwrap()
}

async fn tls_client(
    server: &TestServer,
    ca: &Authority,
) -> Result<Client, tonic::transport::Error> {
    Ok(RefereeServiceClient::new(
        tls_endpoint(server, ca, None).connect().await?,
    ))
}

/// Whether a call failed in the transport (no handler answered it: the
/// connection was refused, closed or its handshake failed).
fn transport_failure(status: &Status) -> bool {
    matches!(
        status.code(),
        Code::Unavailable | Code::Unknown | Code::Cancelled
    ) && std::error::Error::source(status).is_some()
}

async fn list(client: &mut Client) -> Result<usize, Status> {
    Ok(client
        .list_games(pb::ListGamesRequest::default())
        .await?
        .into_inner()
        .games
        .len())
}

// --------------------------------------------------------------------- TLS

#[tokio::test]
async fn tls_serves_calls_and_plaintext_clients_get_nothing() {
    let dir = scratch("tls");
    let ca = Authority::new("test CA");
    let server = TestServer::start_with(ServerOptions {
        tls: Some(write_server_cert(&dir, &ca, "server")),
        ..test_options()
    })
    .await;
    let mut client = tls_client(&server, &ca).await.expect("TLS handshake");
    let table = common::create(&mut client, Variant::Standard).await;
    assert_eq!(list(&mut client).await.unwrap(), 1);
    assert_eq!(common::get(&mut client, &table.id).await.game_id, table.id);

    // A plaintext client reaches no handler.
    let mut plain = RefereeServiceClient::new(server.endpoint().connect_lazy());
    let refused = plain
        .list_games(pb::ListGamesRequest::default())
        .await
        .unwrap_err();
    assert!(transport_failure(&refused), "{refused:?}");

    // A client that trusts another CA does not connect.
    assert!(
        tls_client(&server, &Authority::new("other CA"))
            .await
            .is_err()
    );
    server.stop().await.unwrap();
}

#[tokio::test]
async fn mutual_tls_refuses_a_client_without_a_certificate() {
    let dir = scratch("mtls");
    let ca = Authority::new("server CA");
    let clients_ca = Authority::new("clients CA");
    std::fs::write(dir.join("clients-ca.pem"), clients_ca.pem()).unwrap();
    let mut files = write_server_cert(&dir, &ca, "server");
    files.client_ca = Some(dir.join("clients-ca.pem"));
    let server = TestServer::start_with(ServerOptions {
        tls: Some(files),
        ..test_options()
    })
    .await;

    // Without a certificate: the handshake fails, no call is answered.
    let anonymous = tls_endpoint(&server, &ca, None).connect().await;
    let refused = match anonymous {
        Err(_) => None,
        Ok(channel) => Some(
            RefereeServiceClient::new(channel)
                .list_games(pb::ListGamesRequest::default())
                .await
                .unwrap_err(),
        ),
    };
    if let Some(status) = refused {
        assert!(transport_failure(&status), "{status:?}");
        assert!(
            format!("{status:?}").contains("CertificateRequired"),
            "{status:?}"
        );
    }

    // With a certificate from another CA: refused too.
    let (cert, key) = Authority::new("stranger").leaf("intruder");
    let stranger = tls_endpoint(&server, &ca, Some(Identity::from_pem(cert, key)))
        .connect()
        .await;
    if let Ok(channel) = stranger {
        let status = RefereeServiceClient::new(channel)
            .list_games(pb::ListGamesRequest::default())
            .await
            .unwrap_err();
        assert!(transport_failure(&status), "{status:?}");
    }

    // With the platform's certificate: served.
    let (cert, key) = clients_ca.leaf("lobby");
    let channel = tls_endpoint(&server, &ca, Some(Identity::from_pem(cert, key)))
        .connect()
        .await
        .expect("a client with a certificate connects");
    assert_eq!(
        list(&mut RefereeServiceClient::new(channel)).await.unwrap(),
        0
    );
    server.stop().await.unwrap();
}

#[tokio::test]
async fn a_certificate_swapped_on_disk_serves_new_connections_and_old_ones_keep_working() {
    let dir = scratch("swap");
    let first_ca = Authority::new("first CA");
    let second_ca = Authority::new("second CA");
    let server = TestServer::start_with(ServerOptions {
        tls: Some(write_server_cert(&dir, &first_ca, "first")),
        reload_poll: Duration::from_millis(50),
        ..test_options()
    })
    .await;
    let mut old = tls_client(&server, &first_ca).await.unwrap();
    let table = common::create(&mut old, Variant::Standard).await;

    write_server_cert(&dir, &second_ca, "second");
    // New connections get the new certificate once the change is seen.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut fresh = loop {
        if let Ok(client) = tls_client(&server, &second_ca).await {
            break client;
        }
        assert!(
            Instant::now() < deadline,
            "the new certificate was never served"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(common::get(&mut fresh, &table.id).await.game_id, table.id);
    assert!(
        tls_client(&server, &first_ca).await.is_err(),
        "new connections no longer get the first certificate"
    );
    // The connection made before the swap is still open and served (a
    // reconnect would fail: the server's certificate is no longer one its
    // CA signed).
    let moved = common::submit(&mut old, &table, 0, common::notation("a1")).await;
    let code = moved.map(|_| Code::Ok).unwrap_or_else(|s| s.code());
    assert_ne!(code, Code::Unavailable, "the old connection was dropped");
    assert_eq!(list(&mut old).await.unwrap(), 1);
    server.stop().await.unwrap();
}

// -------------------------------------------------------------------- keys

/// The keys of the key tests, by scope, and the file that lets them in.
struct Keyset {
    file: PathBuf,
    create: String,
    admin: String,
    read: String,
    tournaments: String,
}

fn keyset(name: &str) -> Keyset {
    let dir = scratch(name);
    let mut lines = Vec::new();
    let mut key = |name: &str, scopes: &[Scope]| {
        let (key, line) = new_key(name, scopes);
        lines.push(line);
        key
    };
    let create = key("creator", &[Scope::GamesCreate]);
    let admin = key("admin", &[Scope::GamesAdmin]);
    let read = key("reader", &[Scope::Read]);
    let tournaments = key("organiser", &[Scope::TournamentsManage]);
    let file = dir.join("keys.jsonl");
    std::fs::write(&file, lines.join("\n")).unwrap();
    Keyset {
        file,
        create,
        admin,
        read,
        tournaments,
    }
}

fn keyed<T>(message: T, key: Option<&str>) -> Request<T> {
    let mut request = Request::new(message);
    if let Some(key) = key {
        request
            .metadata_mut()
            .insert("authorization", format!("Bearer {key}").parse().unwrap());
    }
    request
}

/// The code of a call's answer, and its ErrorInfo reason when refused.
fn outcome<T>(result: Result<tonic::Response<T>, Status>) -> (Code, String) {
    match result {
        Ok(_) => (Code::Ok, String::new()),
        Err(s) => (
            s.code(),
            s.get_details_error_info()
                .map(|i| i.reason)
                .unwrap_or_default(),
        ),
    }
}

fn create_request() -> pb::CreateGameRequest {
    pb::CreateGameRequest {
        rules: Some(rules(Variant::Standard)),
        ..Default::default()
    }
}

async fn create_with(client: &mut Client, key: &str) -> common::Table {
    let r = client
        .create_game(keyed(create_request(), Some(key)))
        .await
        .expect("create")
        .into_inner();
    common::table_of(r.game.unwrap(), &r.seats)
}

/// A refusal for want of a scope (the scope is named in the message and the
/// ErrorInfo, checked once below).
fn denied(_scope: &str) -> (Code, String) {
    (Code::PermissionDenied, "SCOPE_MISSING".to_string())
}

fn missing() -> (Code, String) {
    (Code::Unauthenticated, "KEY_MISSING".to_string())
}

#[tokio::test]
async fn each_scope_allows_exactly_its_calls() {
    let keys = keyset("scopes");
    let server = TestServer::start_with(ServerOptions {
        keys_file: Some(keys.file.clone()),
        ..test_options()
    })
    .await;
    let mut c = server.client().await;
    let ok = (Code::Ok, String::new());

    // CreateGame: games:create only.
    for (key, expected) in [
        (Some(&keys.create), ok.clone()),
        (Some(&keys.admin), denied("games:create")),
        (Some(&keys.read), denied("games:create")),
        (Some(&keys.tournaments), denied("games:create")),
        (None, missing()),
    ] {
        let got = outcome(
            c.create_game(keyed(create_request(), key.map(String::as_str)))
                .await,
        );
        assert_eq!(got, expected, "CreateGame with {key:?}");
    }
    let refused = c
        .create_game(keyed(create_request(), Some(&keys.read)))
        .await
        .unwrap_err();
    assert!(
        refused.message().contains("games:create"),
        "{}",
        refused.message()
    );
    assert_eq!(
        refused.get_details_error_info().unwrap().metadata["scope"],
        "games:create"
    );

    let table = create_with(&mut c, &keys.create).await;

    // ListGames and ValidateMove: read only.
    for (key, expected) in [
        (Some(&keys.read), ok.clone()),
        (Some(&keys.create), denied("read")),
        (Some(&keys.admin), denied("read")),
        (None, missing()),
    ] {
        let got = outcome(
            c.list_games(keyed(
                pb::ListGamesRequest::default(),
                key.map(String::as_str),
            ))
            .await,
        );
        assert_eq!(got, expected, "ListGames with {key:?}");
    }
    let record = c
        .export_game(keyed(
            pb::ExportGameRequest {
                game_id: table.id.clone(),
                token: String::new(),
            },
            Some(&keys.read),
        ))
        .await
        .unwrap()
        .into_inner()
        .record;
    common::checked(&record);
    let validate = || pb::ValidateMoveRequest {
        history: Some(pb::validate_move_request::History::Record(record.clone())),
        r#move: Some(common::notation("a1")),
    };
    let (code, _) = outcome(c.validate_move(keyed(validate(), Some(&keys.read))).await);
    assert!(
        code != Code::PermissionDenied && code != Code::Unauthenticated,
        "a read key may validate: {code:?}"
    );
    assert_eq!(
        outcome(c.validate_move(keyed(validate(), Some(&keys.create))).await),
        denied("read")
    );

    // Reads of one game: a read key, or a seat token.
    let get = |token: &str| pb::GetGameRequest {
        game_id: table.id.clone(),
        token: token.to_string(),
        ..Default::default()
    };
    assert_eq!(
        outcome(c.get_game(keyed(get(""), Some(&keys.read))).await),
        ok
    );
    assert_eq!(
        outcome(c.get_game(keyed(get(&table.white), None)).await),
        ok
    );
    assert_eq!(outcome(c.get_game(keyed(get(""), None)).await), missing());
    assert_eq!(
        outcome(c.get_game(keyed(get(""), Some(&keys.create))).await),
        denied("read")
    );
    let watch = pb::WatchGameRequest {
        game_id: table.id.clone(),
        from_ply: None,
        token: String::new(),
    };
    assert_eq!(
        outcome(c.watch_game(keyed(watch.clone(), None)).await),
        missing()
    );
    let mut stream = c
        .watch_game(keyed(watch, Some(&keys.read)))
        .await
        .expect("a reader watches")
        .into_inner();
    assert!(stream.next().await.unwrap().is_ok(), "the first snapshot");
    drop(stream);

    // Moves: seat tokens, no key needed.
    let moved = common::submit(&mut c, &table, 0, common::notation("a1")).await;
    let code = moved.map(|_| Code::Ok).unwrap_or_else(|s| s.code());
    assert!(
        code != Code::PermissionDenied && code != Code::Unauthenticated,
        "a seat token moves without a key: {code:?}"
    );

    // AbortGame: games:admin (with the seat's token, as always).
    let fresh = create_with(&mut c, &keys.create).await;
    let abort = |key: Option<&str>| {
        keyed(
            pb::AbortGameRequest {
                game_id: fresh.id.clone(),
                token: fresh.white.clone(),
            },
            key,
        )
    };
    assert_eq!(outcome(c.abort_game(abort(None)).await), missing());
    assert_eq!(
        outcome(c.abort_game(abort(Some(&keys.create))).await),
        denied("games:admin")
    );
    assert_eq!(outcome(c.abort_game(abort(Some(&keys.admin))).await), ok);

    // ImportGame: games:create.
    let import = |key: Option<&str>| {
        keyed(
            pb::ImportGameRequest {
                record: record.clone(),
                labels: Default::default(),
            },
            key,
        )
    };
    assert_eq!(
        outcome(c.import_game(import(Some(&keys.read))).await),
        denied("games:create")
    );
    assert_eq!(outcome(c.import_game(import(None)).await), missing());
    assert_eq!(outcome(c.import_game(import(Some(&keys.create))).await), ok);

    // Health probes need nothing.
    let mut health = tonic_health::pb::health_client::HealthClient::new(server.channel().await);
    assert!(
        health
            .check(tonic_health::pb::HealthCheckRequest::default())
            .await
            .is_ok()
    );
    server.stop().await.unwrap();
}

/// In a game that has dealt (Punto: the first card is on show from the
/// creation) a seat cannot abort for a new deal; the platform's
/// `games:admin` key still aborts, with any seat's token naming the game.
#[tokio::test]
async fn only_the_platform_aborts_a_game_that_has_dealt() {
    use punct_referee::service::grpc::pb::punto::v1 as tpb;
    let punto = || pb::CreateGameRequest {
        rules: Some(pb::GameRules {
            game: Some(pb::game_rules::Game::Punto(tpb::RuleOptions {
                players: 2,
                ..Default::default()
            })),
        }),
        ..Default::default()
    };
    // Without keys nobody is the platform: a seat's abort is refused and
    // changes nothing.
    let open = TestServer::start().await;
    let mut c = open.client().await;
    let r = c.create_game(punto()).await.unwrap().into_inner();
    let id = r.game.unwrap().game_id;
    let s = c
        .abort_game(pb::AbortGameRequest {
            game_id: id.clone(),
            token: r.seats[0].token.clone(),
        })
        .await
        .expect_err("a seat's abort of a dealt game");
    assert_eq!(
        (s.code(), s.get_details_error_info().unwrap().reason),
        (Code::FailedPrecondition, "ABORT_AFTER_DEAL".to_string())
    );
    let g = c
        .get_game(pb::GetGameRequest {
            game_id: id,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .game
        .unwrap();
    assert_eq!(g.status, pb::GameStatus::InProgress as i32);

    // With keys: the games:admin key aborts it.
    let keys = keyset("dealt");
    let server = TestServer::start_with(ServerOptions {
        keys_file: Some(keys.file.clone()),
        ..test_options()
    })
    .await;
    let mut c = server.client().await;
    let r = c
        .create_game(keyed(punto(), Some(&keys.create)))
        .await
        .unwrap()
        .into_inner();
    let id = r.game.unwrap().game_id;
    let aborted = c
        .abort_game(keyed(
            pb::AbortGameRequest {
                game_id: id,
                token: r.seats[1].token.clone(),
            },
            Some(&keys.admin),
        ))
        .await
        .expect("the platform aborts")
        .into_inner()
        .game
        .unwrap();
    assert_eq!(aborted.outcome.unwrap().reason, "ABORTED");
    assert!(
        !aborted.setup.unwrap().seed.is_empty(),
        "over: the seed is out"
    );
}

#[tokio::test]
async fn a_wrong_key_is_refused_and_changes_nothing() {
    let keys = keyset("wrong");
    let server = TestServer::start_with(ServerOptions {
        keys_file: Some(keys.file.clone()),
        ..test_options()
    })
    .await;
    let mut c = server.client().await;
    let table = create_with(&mut c, &keys.create).await;
    let wrong = format!("{}x", keys.admin);
    let unknown = (Code::Unauthenticated, "KEY_UNKNOWN".to_string());
    assert_eq!(
        outcome(c.create_game(keyed(create_request(), Some(&wrong))).await),
        unknown
    );
    assert_eq!(
        outcome(
            c.abort_game(keyed(
                pb::AbortGameRequest {
                    game_id: table.id.clone(),
                    token: table.white.clone(),
                },
                Some(&wrong),
            ))
            .await
        ),
        unknown
    );
    // Even a move, which needs no key, is refused with a wrong one.
    let mut request = keyed(
        pb::SubmitMoveRequest {
            game_id: table.id.clone(),
            token: table.white.clone(),
            r#move: Some(common::notation("a1")),
            expected_ply: 0,
            request_id: String::new(),
        },
        Some(&wrong),
    );
    let status = c.submit_move(request).await.unwrap_err();
    assert_eq!(status.code(), Code::Unauthenticated);
    assert!(!status.message().contains(&wrong), "the key is not echoed");
    request = keyed(pb::SubmitMoveRequest::default(), Some("not-a-bearer"));
    request
        .metadata_mut()
        .insert("authorization", "Basic abc".parse().unwrap());
    assert_eq!(
        outcome(c.submit_move(request).await),
        (Code::Unauthenticated, "KEY_MALFORMED".to_string())
    );

    // Nothing changed: one game, in progress, no move.
    let games = c
        .list_games(keyed(pb::ListGamesRequest::default(), Some(&keys.read)))
        .await
        .unwrap()
        .into_inner()
        .games;
    assert_eq!(games.len(), 1);
    let game = c
        .get_game(keyed(
            pb::GetGameRequest {
                game_id: table.id.clone(),
                token: String::new(),
                ..Default::default()
            },
            Some(&keys.read),
        ))
        .await
        .unwrap()
        .into_inner()
        .game
        .unwrap();
    assert_eq!(game.ply, 0);
    assert_eq!(game.status(), pb::GameStatus::InProgress);
    server.stop().await.unwrap();
}

#[tokio::test]
async fn without_a_keys_file_everything_works_as_before() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    // An authorization header is ignored.
    let r = c
        .create_game(keyed(create_request(), Some("anything")))
        .await
        .unwrap()
        .into_inner();
    let table = common::table_of(r.game.unwrap(), &r.seats);
    assert_eq!(list(&mut c).await.unwrap(), 1);
    assert_eq!(common::get(&mut c, &table.id).await.ply, 0);
    server.stop().await.unwrap();
}

// ------------------------------------------------------------------ limits

#[tokio::test]
async fn a_client_over_its_rate_is_told_when_to_come_back_and_another_is_not_held_up() {
    let dir = scratch("rate");
    let (greedy, greedy_line) = new_key("greedy", &[Scope::Read]);
    let (polite, polite_line) = new_key("polite", &[Scope::Read]);
    std::fs::write(dir.join("keys"), format!("{greedy_line}\n{polite_line}\n")).unwrap();
    let server = TestServer::start_with(ServerOptions {
        keys_file: Some(dir.join("keys")),
        quotas: QuotaOptions {
            calls_per_second: 20,
            burst: 5,
            ..QuotaOptions::default()
        },
        ..test_options()
    })
    .await;
    let mut flood = server.client().await;
    let mut other = server.client().await;
    let call = |key: &str| keyed(pb::ListGamesRequest::default(), Some(key));

    // The greedy client floods; the polite one calls now and then, and each
    // of its calls passes.
    let mut refused = None;
    for i in 0..200 {
        match flood.list_games(call(&greedy)).await {
            Ok(_) => {}
            Err(status) => {
                refused = Some(status);
                break;
            }
        }
        if i % 2 == 0 {
            other
                .list_games(call(&polite))
                .await
                .expect("the polite client is not starved");
        }
    }
    let refused = refused.expect("the flood is refused");
    assert_eq!(refused.code(), Code::ResourceExhausted);
    assert_eq!(
        refused.get_details_quota_failure().unwrap().violations[0].subject,
        "calls_per_second"
    );
    assert_eq!(
        refused.get_details_error_info().unwrap().reason,
        "LIMIT_REACHED"
    );
    let wait = refused
        .get_details_retry_info()
        .and_then(|r| r.retry_delay)
        .expect("RetryInfo with a delay");
    assert!(
        wait > Duration::ZERO && wait <= Duration::from_millis(50),
        "{wait:?} at 20 calls a second"
    );
    other
        .list_games(call(&polite))
        .await
        .expect("the polite client still passes");
    tokio::time::sleep(wait).await;
    flood
        .list_games(call(&greedy))
        .await
        .expect("after the advised wait the next call passes");
    server.stop().await.unwrap();
}

#[tokio::test]
async fn games_and_watch_streams_are_bounded_per_client() {
    let dir = scratch("games");
    let (first, first_line) = new_key("first", &[Scope::GamesCreate, Scope::GamesAdmin]);
    let (second, second_line) = new_key("second", &[Scope::GamesCreate]);
    std::fs::write(dir.join("keys"), format!("{first_line}\n{second_line}\n")).unwrap();
    let server = TestServer::start_with(ServerOptions {
        keys_file: Some(dir.join("keys")),
        quotas: QuotaOptions {
            games: 1,
            watch_streams: 1,
            ..QuotaOptions::default()
        },
        ..test_options()
    })
    .await;
    let mut c = server.client().await;
    let table = create_with(&mut c, &first).await;
    let refused = c
        .create_game(keyed(create_request(), Some(&first)))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::ResourceExhausted);
    assert_eq!(
        refused.get_details_quota_failure().unwrap().violations[0].subject,
        "games_per_client"
    );
    assert!(refused.get_details_retry_info().is_none());
    // Another client is not held up by the first one's games.
    create_with(&mut c, &second).await;
    // Once its game ends, the first client may start another.
    c.abort_game(keyed(
        pb::AbortGameRequest {
            game_id: table.id.clone(),
            token: table.white.clone(),
        },
        Some(&first),
    ))
    .await
    .unwrap();
    let table = create_with(&mut c, &first).await;

    // Watch streams: one per client (here the seat's player, by address).
    let watch = || pb::WatchGameRequest {
        game_id: table.id.clone(),
        from_ply: None,
        token: table.white.clone(),
    };
    let mut open = c.watch_game(watch()).await.unwrap().into_inner();
    assert!(open.next().await.unwrap().is_ok());
    let refused = c.watch_game(watch()).await.unwrap_err();
    assert_eq!(refused.code(), Code::ResourceExhausted);
    assert_eq!(
        refused.get_details_quota_failure().unwrap().violations[0].subject,
        "watch_streams_per_client"
    );
    drop(open);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match c.watch_game(watch()).await {
            Ok(_) => break,
            Err(s) if s.code() == Code::ResourceExhausted && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(s) => panic!("the closed stream's place never came back: {s:?}"),
        }
    }
    server.stop().await.unwrap();
}

#[tokio::test]
async fn connections_per_client_address_are_bounded() {
    let server = TestServer::start_with(ServerOptions {
        quotas: QuotaOptions {
            connections: 1,
            ..QuotaOptions::default()
        },
        ..test_options()
    })
    .await;
    let mut first = server.client().await;
    assert_eq!(list(&mut first).await.unwrap(), 0);
    // A second connection from the same address is closed at once.
    let mut second = RefereeServiceClient::new(server.endpoint().connect_lazy());
    let status = second
        .list_games(pb::ListGamesRequest::default())
        .await
        .unwrap_err();
    assert!(transport_failure(&status), "{status:?}");
    assert_eq!(
        list(&mut first).await.unwrap(),
        0,
        "the first is still served"
    );
    drop(first);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let mut again = RefereeServiceClient::new(server.endpoint().connect_lazy());
        match list(&mut again).await {
            Ok(n) => {
                assert_eq!(n, 0);
                break;
            }
            Err(s) if Instant::now() < deadline => {
                assert!(transport_failure(&s), "{s:?}");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(s) => panic!("the closed connection's place never came back: {s:?}"),
        }
    }
    server.stop().await.unwrap();
}

// -------------------------------------------------------------------- HTTP

/// `GET path` over TLS on the HTTP port; the answer's head and body as
/// text (an event stream is read until its first event).
async fn https_get(addr: std::net::SocketAddr, ca: &Authority, path: &str) -> String {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    use tokio_rustls::rustls;
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(rustls::pki_types::CertificateDer::from(
            ca.issuer.der().to_vec(),
        ))
        .unwrap();
    let config = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let mut tls = connector.connect(name, tcp).await.expect("HTTPS handshake");
    tls.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .await
    .unwrap();
    let mut text = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    let read = async {
        loop {
            let n = tls.read(&mut chunk).await.unwrap_or(0);
            if n == 0 {
                break;
            }
            text.extend_from_slice(&chunk[..n]);
            let so_far = String::from_utf8_lossy(&text);
            if so_far.contains("text/event-stream") && so_far.contains("\n\n") {
                let body = so_far.split_once("\r\n\r\n").map_or("", |(_, b)| b);
                if body.contains("\n\n") {
                    break;
                }
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), read)
        .await
        .expect("an answer");
    String::from_utf8_lossy(&text).into_owned()
}

#[tokio::test]
async fn the_http_port_serves_tls_and_never_shows_a_token_a_key_or_an_unrevealed_seed() {
    use punct_referee::service::grpc::pb::punto::v1 as tpb;
    let dir = scratch("http");
    let ca = Authority::new("http CA");
    let keys = keyset("http-keys");
    let mut options = ServerOptions {
        tls: Some(write_server_cert(&dir, &ca, "server")),
        keys_file: Some(keys.file.clone()),
        ..test_options()
    };
    options.limits.max_sessions = 10;
    let server = TestServer::start_with_http(options, None).await;
    let http = server.http.unwrap();
    let mut c = tls_client(&server, &ca).await.unwrap();
    // A seeded game (Punto) with a seed the creator chose: secret until the end.
    let seed = "5eed".repeat(16);
    let r = c
        .create_game(keyed(
            pb::CreateGameRequest {
                rules: Some(pb::GameRules {
                    game: Some(pb::game_rules::Game::Punto(tpb::RuleOptions::default())),
                }),
                seed: seed.clone(),
                ..Default::default()
            },
            Some(&keys.create),
        ))
        .await
        .unwrap()
        .into_inner();
    let id = r.game.unwrap().game_id;
    let tokens: Vec<String> = r.seats.iter().map(|s| s.token.clone()).collect();
    assert_eq!(tokens.len(), 2);
    let secrets: Vec<&str> = tokens
        .iter()
        .map(String::as_str)
        .chain([
            seed.as_str(),
            keys.create.as_str(),
            keys.read.as_str(),
            keys.admin.as_str(),
        ])
        .collect();
    for path in [
        "/".to_string(),
        "/api/games".to_string(),
        format!("/api/games/{id}"),
        format!("/api/games/{id}/events"),
        format!("/games/{id}.svg"),
    ] {
        let answer = https_get(http, &ca, &path).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{path}: {answer}");
        for secret in &secrets {
            assert!(!answer.contains(secret), "{path} shows a secret: {answer}");
        }
        if path.starts_with("/api/games/") {
            assert!(answer.contains(&id), "{path} is about the game: {answer}");
        }
    }
    server.stop().await.unwrap();
}

// ---------------------------------------------------------------- the CLI

/// Runs `punct-referee client …` with `args`; its exit code, stdout, stderr.
async fn cli(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut command = tokio::process::Command::new(common::process::BIN);
    command.arg("client").args(args);
    for (name, value) in env {
        command.env(name, value);
    }
    // Generous: a loaded 2-core machine runs this binary's other tests
    // (hundreds of stalled connections) at the same time.
    let out = tokio::time::timeout(Duration::from_secs(120), command.output())
        .await
        .unwrap_or_else(|_| panic!("the client ends: {args:?}"))
        .expect("the client runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn the_cli_client_speaks_tls_and_sends_its_key() {
    let dir = scratch("cli");
    let ca = Authority::new("cli CA");
    let (key, line) = new_key("person", &[Scope::GamesCreate, Scope::Read]);
    std::fs::write(dir.join("keys"), line).unwrap();
    let server = TestServer::start_with(ServerOptions {
        tls: Some(write_server_cert(&dir, &ca, "server")),
        keys_file: Some(dir.join("keys")),
        ..test_options()
    })
    .await;
    std::fs::write(dir.join("ca.pem"), ca.pem()).unwrap();
    let ca_file = dir.join("ca.pem").display().to_string();
    let tokens = dir.join("tokens.json").display().to_string();
    let address = server.addr.to_string();
    let base = [
        "--server", &address, "--tls-ca", &ca_file, "--tokens", &tokens,
    ];
    let with_key = [("PUNCT_KEY", key.as_str())];

    // No key: refused, with the reason.
    let (code, _, err) = cli(&[&base[..], &["new"]].concat(), &[]).await;
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("KEY_MISSING"), "{err}");
    // The key from the environment: the game is made, listed and played.
    let (code, out, err) = cli(&[&base[..], &["new"]].concat(), &with_key).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        !out.contains(&key) && !err.contains(&key),
        "the key is not printed"
    );
    let (code, out, err) = cli(&[&base[..], &["moves"]].concat(), &with_key).await;
    assert_eq!(code, 0, "{err}");
    let first = out.lines().next().expect("a legal move").to_string();
    let (code, _, err) = cli(&[&base[..], &["play", &first]].concat(), &with_key).await;
    assert_eq!(code, 0, "{err}");
    // The key as a flag works the same.
    let (code, out, err) = cli(&[&base[..], &["--key", &key, "moves"]].concat(), &[]).await;
    assert_eq!(code, 0, "{err}");
    assert!(!out.is_empty());
    // Without --tls-ca the plaintext client reaches nothing.
    let (code, _, err) = cli(
        &["--server", &address, "--tokens", &tokens, "moves"],
        &with_key,
    )
    .await;
    assert_eq!(code, 1, "{err}");
    // https:// needs the CA.
    let (code, _, err) = cli(
        &[
            "--server",
            &format!("https://{address}"),
            "--tokens",
            &tokens,
            "moves",
        ],
        &with_key,
    )
    .await;
    assert_eq!(code, 1);
    assert!(err.contains("--tls-ca"), "{err}");
    // And https:// with it connects.
    let (code, _, err) = cli(
        &[
            "--server",
            &format!("https://{address}"),
            "--tls-ca",
            &ca_file,
            "--tokens",
            &tokens,
            "moves",
        ],
        &with_key,
    )
    .await;
    assert_eq!(code, 0, "{err}");
    server.stop().await.unwrap();
}

// ------------------------------------------------------------------ SIGHUP

#[cfg(unix)]
#[tokio::test]
async fn sighup_makes_a_running_binary_read_its_certificate_and_keys_again() {
    let dir = scratch("sighup");
    let first_ca = Authority::new("first CA");
    let second_ca = Authority::new("second CA");
    let files = write_server_cert(&dir, &first_ca, "first");
    let (old_key, old_line) = new_key("old", &[Scope::GamesCreate]);
    let keys = dir.join("keys.jsonl");
    std::fs::write(&keys, format!("{old_line}\n")).unwrap();
    let addr = common::process::free_address();
    let mut child = tokio::process::Command::new(common::process::BIN)
        .args([
            "--listen",
            &addr.to_string(),
            "--no-http",
            "--storage",
            "memory",
        ])
        .args(["--log", "warn", "--reload-poll-secs", "3600"])
        .arg("--tls-cert")
        .arg(&files.cert)
        .arg("--tls-key")
        .arg(&files.key)
        .arg("--keys")
        .arg(&keys)
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let pid = child.id().unwrap().to_string();
    let connect = |ca: &Authority| {
        let endpoint = tls_endpoint_at(addr, ca, None);
        async move { endpoint.connect().await.map(RefereeServiceClient::new) }
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut old = loop {
        if let Ok(client) = connect(&first_ca).await {
            break client;
        }
        assert!(Instant::now() < deadline, "the binary did not come up");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    create_with(&mut old, &old_key).await;

    // New files on disk; with a poll of an hour only SIGHUP makes them count.
    write_server_cert(&dir, &second_ca, "second");
    let (new_key_text, new_line) = new_key("new", &[Scope::GamesCreate]);
    std::fs::write(&keys, format!("{new_line}\n")).unwrap();
    assert!(
        connect(&first_ca).await.is_ok(),
        "nothing reloaded before SIGHUP"
    );
    let sent = std::process::Command::new("kill")
        .args(["-HUP", &pid])
        .status()
        .unwrap();
    assert!(sent.success());
    let mut fresh = loop {
        if let Ok(client) = connect(&second_ca).await {
            break client;
        }
        assert!(
            Instant::now() < deadline,
            "SIGHUP did not reload the certificate"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    create_with(&mut fresh, &new_key_text).await;
    assert_eq!(
        outcome(
            fresh
                .create_game(keyed(create_request(), Some(&old_key)))
                .await
        ),
        (Code::Unauthenticated, "KEY_UNKNOWN".to_string()),
        "the removed key no longer works"
    );
    // The connection from before keeps working (and still answers for the
    // old key's removal like any other).
    assert_eq!(
        outcome(
            old.create_game(keyed(create_request(), Some(&new_key_text)))
                .await
        ),
        (Code::Ok, String::new())
    );
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status();
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .expect("the binary stops on SIGTERM")
        .unwrap();
    assert!(status.success(), "{status:?}");
}

// ------------------------------------------------------------ `keys` command

#[tokio::test]
async fn the_keys_command_makes_keys_whose_lines_let_them_in() {
    let dir = scratch("keys-command");
    let file = dir.join("keys.jsonl");
    let run = |args: Vec<String>| async move {
        let out = tokio::process::Command::new(common::process::BIN)
            .arg("keys")
            .args(args)
            .output()
            .await
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let args = |name: &str, scopes: &[&str]| {
        let mut a = vec!["--name".to_string(), name.to_string()];
        for s in scopes {
            a.extend(["--scope".to_string(), s.to_string()]);
        }
        a.extend(["--file".to_string(), file.display().to_string()]);
        a
    };
    let (code, lobby, err) = run(args("lobby", &["games:create", "read"])).await;
    assert_eq!(code, 0, "{err}");
    let (code, ops, err) = run(args("ops", &["games:admin"])).await;
    assert_eq!(code, 0, "{err}");
    let (lobby, ops) = (lobby.trim().to_string(), ops.trim().to_string());
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(text.lines().count(), 2);
    assert!(
        !text.contains(&lobby) && !text.contains(&ops),
        "only hashes are kept"
    );
    // A second key of the same name is refused and the file is left as it was.
    let (code, _, err) = run(args("ops", &["read"])).await;
    assert_eq!(code, 2);
    assert!(err.contains("used twice"), "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
    // A scope that does not exist is refused by name.
    let (code, _, err) = run(args("x", &["games:play"])).await;
    assert_ne!(code, 0);
    assert!(err.contains("games:play"), "{err}");

    let server = TestServer::start_with(ServerOptions {
        keys_file: Some(file.clone()),
        ..test_options()
    })
    .await;
    let mut c = server.client().await;
    let table = create_with(&mut c, &lobby).await;
    assert_eq!(
        outcome(
            c.abort_game(keyed(
                pb::AbortGameRequest {
                    game_id: table.id.clone(),
                    token: table.white.clone(),
                },
                Some(&ops),
            ))
            .await
        ),
        (Code::Ok, String::new())
    );
    server.stop().await.unwrap();
}

/// SIGHUP with nothing to reload (no keys, no TLS) is logged and ignored:
/// the server keeps serving, and SIGTERM still drains it.
#[cfg(unix)]
#[tokio::test]
async fn sighup_without_keys_or_tls_keeps_the_server_serving() {
    let addr = common::process::free_address();
    let mut child = tokio::process::Command::new(common::process::BIN)
        .args([
            "--listen",
            &addr.to_string(),
            "--no-http",
            "--storage",
            "memory",
            "--log",
            "warn",
        ])
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let pid = child.id().unwrap().to_string();
    let endpoint = Endpoint::from_shared(format!("http://{addr}")).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut client = loop {
        if let Ok(channel) = endpoint.connect().await {
            break RefereeServiceClient::new(channel);
        }
        assert!(Instant::now() < deadline, "the binary did not come up");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(
        outcome(client.create_game(create_request()).await).0,
        Code::Ok
    );
    for _ in 0..3 {
        let sent = std::process::Command::new("kill")
            .args(["-HUP", &pid])
            .status()
            .unwrap();
        assert!(sent.success());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        child.try_wait().unwrap().is_none(),
        "SIGHUP stopped the server"
    );
    assert_eq!(
        outcome(client.create_game(create_request()).await).0,
        Code::Ok,
        "still serving after SIGHUP"
    );
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status();
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .expect("the binary stops on SIGTERM")
        .unwrap();
    assert!(status.success(), "{status:?}");
}

/// Stalled TLS handshakes from one address, past the default bound per
/// address, neither lock another client out nor stay past the handshake
/// timeout.
#[tokio::test]
async fn stalled_tls_handshakes_from_one_address_do_not_lock_others_out() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let dir = scratch("stalled-tls");
    let ca = Authority::new("stalled CA");
    let files = write_server_cert(&dir, &ca, "server");
    let addr = common::process::free_address();
    let mut child = tokio::process::Command::new(common::process::BIN)
        .args([
            "--listen",
            &addr.to_string(),
            "--no-http",
            "--storage",
            "memory",
            "--log",
            "warn",
            "--handshake-timeout-secs",
            "8",
        ])
        .arg("--tls-cert")
        .arg(&files.cert)
        .arg("--tls-key")
        .arg(&files.key)
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while tls_endpoint_at(addr, &ca, None).connect().await.is_err() {
        assert!(Instant::now() < deadline, "the binary did not come up");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // 300 connections from 127.0.0.2 that start a handshake and stall.
    let mut stalled = Vec::new();
    for _ in 0..300 {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind("127.0.0.2:0".parse().unwrap()).unwrap();
        let mut tcp = socket.connect(addr).await.unwrap();
        // The first bytes of a TLS record header, then nothing.
        let _ = tcp.write_all(&[0x16, 0x03, 0x01]).await;
        stalled.push(tcp);
    }
    let started = Instant::now();
    let mut client = RefereeServiceClient::new(
        tokio::time::timeout(
            Duration::from_secs(10),
            tls_endpoint_at(addr, &ca, None).connect(),
        )
        .await
        .expect("connected in time")
        .expect("connect"),
    );
    assert_eq!(
        outcome(client.create_game(create_request()).await).0,
        Code::Ok
    );
    // Served while the stalled handshakes still hold their slots (the
    // server's opening deadline is 8 s): they held up nobody.
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "served before the stalled handshakes timed out ({:?})",
        started.elapsed()
    );
    for (i, tcp) in stalled.iter_mut().enumerate() {
        let mut sink = [0u8; 512];
        let closed = tokio::time::timeout(Duration::from_secs(25), async {
            loop {
                match tcp.read(&mut sink).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
            }
        })
        .await;
        assert!(closed.is_ok(), "stalled handshake {i} still open");
    }
    let _ = child.kill().await;
}
