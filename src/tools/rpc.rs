//! The one RPC layer the tools share (the command-line client, the load
//! generator, the tournament runner): reading a server address from a flag,
//! connecting, creating or importing a game and keeping its seat tokens,
//! submitting a move by notation, and the reads they all make (a game's
//! snapshot, its legal moves, its record).
//!
//! Seats are handled here and nowhere else in `tools/`: a seat is its
//! position in seat order (`0` moves first: PÜNCT's White), tokens are kept
//! in that order, and [`WireSeat`] is how the protocol carries a seat. A
//! change to how the protocol numbers seats is a change to this file.

use std::collections::HashMap;
use std::fmt::{self, Write as _};
use std::net::{Ipv6Addr, SocketAddr};
use std::time::Duration;

use tonic::Status;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};
use tonic_types::StatusExt as _;

use crate::service::grpc::games::{WIRE_GAMES, WireGame};
use crate::service::grpc::pb::referee::v1 as pb;
use crate::service::grpc::pb::referee::v1::referee_service_client::RefereeServiceClient;

mod address;

pub use address::*;

/// A referee client over one HTTP/2 connection.
pub type Client = RefereeServiceClient<Channel>;

/// A referee client that sends a platform key with every call.
pub type KeyedClient = RefereeServiceClient<KeyedChannel>;

/// A [`Channel`] that adds the `authorization` header of its
/// [`Credentials`] to every request.
#[derive(Debug, Clone)]
pub struct KeyedChannel {
    channel: Channel,
    credentials: Credentials,
}

impl tower::Service<http::Request<tonic::body::Body>> for KeyedChannel {
    type Response = http::Response<tonic::body::Body>;
    type Error = tonic::transport::Error;
    type Future = <Channel as tower::Service<http::Request<tonic::body::Body>>>::Future;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        tower::Service::poll_ready(&mut self.channel, cx)
    }

    fn call(&mut self, mut request: http::Request<tonic::body::Body>) -> Self::Future {
        if let Some(bearer) = &self.credentials.bearer {
            request
                .headers_mut()
                .insert(http::header::AUTHORIZATION, bearer.clone());
        }
        tower::Service::call(&mut self.channel, request)
    }
}

/// What a referee client runs over: a plain [`Channel`], or one that adds
/// the key ([`KeyedClient`]); the calls below take either.
pub trait Transport:
    tonic::client::GrpcService<
        tonic::body::Body,
        ResponseBody = tonic::body::Body,
        Error = tonic::transport::Error,
    >
{
}

impl<T> Transport for T where
    T: tonic::client::GrpcService<
            tonic::body::Body,
            ResponseBody = tonic::body::Body,
            Error = tonic::transport::Error,
        >
{
}

/// The platform key a client sends as `authorization: Bearer <key>`
/// (docs/SECURITY.md); its `Debug` hides it, and the header is marked
/// sensitive so HTTP/2 never puts it in a compression table.
#[derive(Clone, Default)]
pub struct Credentials {
    bearer: Option<http::HeaderValue>,
}

impl Credentials {
    /// Sends `key` with every call.
    pub fn key(key: &str) -> Result<Credentials, String> {
        let mut bearer = http::HeaderValue::try_from(format!("Bearer {}", key.trim()))
            .map_err(|_| "the key is not printable ASCII".to_string())?;
        bearer.set_sensitive(true);
        Ok(Credentials {
            bearer: Some(bearer),
        })
    }
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let key = if self.bearer.is_some() {
            "<hidden>"
        } else {
            "none"
        };
        f.debug_struct("Credentials").field("key", &key).finish()
    }
}

/// What a client needs for TLS: the CA that signed the referee's
/// certificate (this client carries no system roots), and for mutual TLS
/// its own certificate and key (PEM text).
#[derive(Clone)]
pub struct TlsClient {
    /// PEM CA certificates.
    pub ca: String,
    /// PEM certificate chain and private key of this client.
    pub identity: Option<(String, String)>,
}

impl TlsClient {
    /// Reads the PEM files named by `--tls-ca`, `--tls-cert`, `--tls-key`.
    pub fn read(
        ca: &std::path::Path,
        identity: Option<(&std::path::Path, &std::path::Path)>,
    ) -> Result<TlsClient, String> {
        let read = |p: &std::path::Path| {
            std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))
        };
        Ok(TlsClient {
            ca: read(ca)?,
            identity: match identity {
                Some((cert, key)) => Some((read(cert)?, read(key)?)),
                None => None,
            },
        })
    }
}

impl fmt::Debug for TlsClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsClient")
            .field("identity", &self.identity.is_some())
            .finish()
    }
}

/// How long a connection attempt may take before it fails.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

// -------------------------------------------------------------------- seats

/// A seat as the protocol carries it: its number (1 = the first seat,
/// 2 = the second, …; 0 = none).
pub type WireSeat = u32;

/// "No seat" on the wire: in a request, the player to move.
pub const NO_SEAT: WireSeat = 0;

/// PÜNCT's seats' names, in seat order (White moves first): the names of
/// the functions below; a game's own names are in `Game.seats`
/// ([`seat_names_of`]) and in [`crate::games::GameKind::seat_names`].
const SEAT_NAMES: [&str; 2] = ["white", "black"];

/// The position in seat order (0 = the first seat) of a seat on the wire;
/// `None` for no seat.
pub fn seat_index(seat: WireSeat) -> Option<usize> {
    (seat as usize).checked_sub(1)
}

/// The lower-case name of the seat at `seat` (`white`, `black`).
pub fn seat_name(seat: usize) -> &'static str {
    SEAT_NAMES.get(seat).copied().unwrap_or("another seat")
}

/// Every seat's name, in seat order.
pub fn seat_names() -> &'static [&'static str] {
    &SEAT_NAMES
}

/// The seat called `name` (any case).
pub fn seat_by_name(name: &str) -> Option<usize> {
    SEAT_NAMES.iter().position(|n| n.eq_ignore_ascii_case(name))
}

/// The single winner's seat of an ended game; `None` for a draw (or a team
/// of winners, which a two-seat game never has).
pub fn winner(outcome: &pb::Outcome) -> Option<usize> {
    match outcome.winners.as_slice() {
        [seat] if !outcome.draw => seat_index(*seat),
        _ => None,
    }
}

/// The time left on a seat's clock, in a game with a clock.
pub fn remaining_ms(clock: &pb::ClockState, seat: usize) -> Option<u64> {
    clock.remaining_ms.get(seat).copied()
}

/// Whether each seat's player holds a stream, in seat order.
pub fn seats_connected(presence: &pb::Presence) -> Vec<bool> {
    presence.seats.iter().map(|s| s.connected).collect()
}

/// One token per seat, in seat order (`None` where a seat's token was not
/// given).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SeatTokens(Vec<Option<String>>);

impl SeatTokens {
    /// The tokens of a CreateGame or ImportGame answer, put in seat order.
    pub fn from_wire(seats: &[pb::SeatToken]) -> SeatTokens {
        let mut tokens = Vec::new();
        for given in seats {
            if let Some(seat) = seat_index(given.seat) {
                if tokens.len() <= seat {
                    tokens.resize(seat + 1, None);
                }
                tokens[seat] = Some(given.token.clone());
            }
        }
        SeatTokens(tokens)
    }

    /// Tokens kept elsewhere (e.g. a file), in seat order.
    pub fn new(tokens: Vec<Option<String>>) -> SeatTokens {
        SeatTokens(tokens)
    }

    /// The token of the seat at `seat`.
    pub fn get(&self, seat: usize) -> Option<&str> {
        self.0.get(seat)?.as_deref()
    }

    /// The seats with a token, in seat order.
    pub fn iter(&self) -> impl Iterator<Item = (usize, &str)> {
        self.0
            .iter()
            .enumerate()
            .filter_map(|(seat, token)| Some((seat, token.as_deref()?)))
    }

    /// Every seat's token, or `None` if there are none or one is missing.
    pub fn every_seat(&self) -> Option<Vec<String>> {
        if self.0.is_empty() {
            return None;
        }
        self.0.iter().cloned().collect()
    }
}

// ------------------------------------------------------------- game calls

/// A game just created or imported: its first snapshot and its seat tokens.
#[derive(Debug, Clone, Default)]
pub struct NewGame {
    /// The game as the server first shows it.
    pub game: pb::Game,
    /// Its seat tokens, in seat order.
    pub tokens: SeatTokens,
}

impl NewGame {
    /// The game's id.
    pub fn id(&self) -> &str {
        &self.game.game_id
    }
}

/// A CreateGame request for any game under `rules` (with its supplied
/// seed, if any).
pub fn create_request_for(
    rules: &crate::tools::games::ToolRules,
    labels: HashMap<String, String>,
    time_control: Option<pb::TimeControl>,
) -> pb::CreateGameRequest {
    pb::CreateGameRequest {
        rules: Some(rules.wire()),
        labels,
        time_control,
        seed: rules.seed_hex(),
        failure_policy: None,
        spectator_delay: None,
    }
}

/// CreateGame; the new game with its tokens.
pub async fn create_game(
    client: &mut RefereeServiceClient<impl Transport>,
    request: pb::CreateGameRequest,
) -> Result<NewGame, Status> {
    let created = client.create_game(request).await?.into_inner();
    Ok(NewGame {
        game: created.game.unwrap_or_default(),
        tokens: SeatTokens::from_wire(&created.seats),
    })
}

/// ImportGame of a record; the new game with its tokens.
pub async fn import_game(
    client: &mut RefereeServiceClient<impl Transport>,
    record: String,
) -> Result<NewGame, Status> {
    let imported = client
        .import_game(pb::ImportGameRequest {
            record,
            labels: HashMap::new(),
        })
        .await?
        .into_inner();
    Ok(NewGame {
        game: imported.game.unwrap_or_default(),
        tokens: SeatTokens::from_wire(&imported.seats),
    })
}

/// The first answer of the wire games to `read`.
fn read_wire<T>(read: impl Fn(&'static dyn WireGame) -> Option<T>) -> Option<T> {
    WIRE_GAMES.iter().find_map(|g| read(*g))
}

/// The notation of a move the server sent (canonical).
pub fn notation_of(m: &pb::Move) -> &str {
    m.game
        .as_ref()
        .and_then(|game| read_wire(|g| g.notation_of(game)))
        .unwrap_or_default()
}

/// A played move as a person reads it: its notation, and whatever else
/// its game shows of it (the card placed: `R7 on 1,0`).
pub fn played_text(m: &pb::Move) -> String {
    m.game
        .as_ref()
        .and_then(|game| read_wire(|g| g.played_text(game)))
        .unwrap_or_default()
}

/// The summary line of the round a played move ended (`round 1: ROW, seat
/// 2 wins, removes O8, seat 3 begins next`), if it ended one.
pub fn round_ended_by(m: &pb::Move) -> Option<&str> {
    let game = m.game.as_ref()?;
    read_wire(|g| g.round_ended_by(game))
}

/// SubmitMove of `mv` (any game's move: see
/// [`WireGame::wire_move`]) for the seat holding
/// `token`, answering `expected_ply`.
pub async fn submit_move(
    client: &mut RefereeServiceClient<impl Transport>,
    game_id: &str,
    token: &str,
    mv: pb::Move,
    expected_ply: u32,
    request_id: Option<&str>,
) -> Result<pb::SubmitMoveResponse, Status> {
    let request = pb::SubmitMoveRequest {
        game_id: game_id.to_string(),
        token: token.to_string(),
        r#move: Some(mv),
        expected_ply,
        request_id: request_id.unwrap_or_default().to_string(),
    };
    Ok(client.submit_move(request).await?.into_inner())
}

/// The seats' names of a game the server sent (`Game.seats`), in seat
/// order; PÜNCT's when it sent none.
pub fn seat_names_of(game: &pb::Game) -> Vec<String> {
    if game.seats.is_empty() {
        return SEAT_NAMES.iter().map(|s| s.to_string()).collect();
    }
    game.seats.iter().map(|s| s.name.clone()).collect()
}

/// The text picture of a state the server sent (any game's).
pub fn picture_of(state: &pb::GameState) -> &str {
    state
        .game
        .as_ref()
        .and_then(|game| read_wire(|g| g.picture_of(game)))
        .unwrap_or_default()
}

/// The card the mover is to place, in a game that deals one (`R7`).
pub fn revealed_card(state: &pb::GameState) -> Option<&str> {
    let game = state.game.as_ref()?;
    read_wire(|g| g.revealed(game))
}

/// GetGame: the game's snapshot now, as a spectator sees it.
pub async fn get_game(
    client: &mut RefereeServiceClient<impl Transport>,
    game_id: &str,
) -> Result<pb::Game, Status> {
    get_game_as(client, game_id, "").await
}

/// GetGame as the seat holding `token` sees it (empty: a spectator): what
/// a bot of a game with private information may know.
pub async fn get_game_as(
    client: &mut RefereeServiceClient<impl Transport>,
    game_id: &str,
    token: &str,
) -> Result<pb::Game, Status> {
    let request = pb::GetGameRequest {
        game_id: game_id.to_string(),
        token: token.to_string(),
        ..Default::default()
    };
    Ok(client
        .get_game(request)
        .await?
        .into_inner()
        .game
        .unwrap_or_default())
}

/// The legal moves of the player to move, as ListLegalMoves answers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LegalMoves {
    /// The ply they answer (pass it as `expected_ply`).
    pub ply: u32,
    /// The seat to move; `None` once the game is over.
    pub to_move: Option<usize>,
    /// The moves in canonical notation, sorted.
    pub notations: Vec<String>,
}

/// ListLegalMoves for the player to move.
pub async fn legal_moves(
    client: &mut RefereeServiceClient<impl Transport>,
    game_id: &str,
) -> Result<LegalMoves, Status> {
    let request = pb::ListLegalMovesRequest {
        game_id: game_id.to_string(),
        seat: NO_SEAT,
        token: String::new(),
        // Notation is all a bot needs: one text, the cheapest answer.
        view: pb::MovesView::Text as i32,
    };
    let legal = client.list_legal_moves(request).await?.into_inner();
    let text = std::str::from_utf8(&legal.notation_text)
        .map_err(|_| Status::internal("the legal moves' text is not UTF-8"))?;
    Ok(LegalMoves {
        ply: legal.ply,
        to_move: seat_index(legal.to_move),
        notations: text.lines().map(str::to_string).collect(),
    })
}

/// ExportGame: the game's record text.
pub async fn export_record(
    client: &mut RefereeServiceClient<impl Transport>,
    game_id: &str,
) -> Result<String, Status> {
    let request = pb::ExportGameRequest {
        game_id: game_id.to_string(),
        token: String::new(),
    };
    Ok(client.export_game(request).await?.into_inner().record)
}

/// Resign for the seat holding `token`.
pub async fn resign(
    client: &mut RefereeServiceClient<impl Transport>,
    game_id: &str,
    token: &str,
) -> Result<(), Status> {
    let request = pb::ResignRequest {
        game_id: game_id.to_string(),
        token: token.to_string(),
    };
    client.resign(request).await.map(|_| ())
}

// ------------------------------------------------------------------ refusals

/// The machine reason of a refusal (its ErrorInfo), if it has one.
pub fn refusal_reason(status: &Status) -> Option<String> {
    status.get_details_error_info().map(|info| info.reason)
}

/// A refused call as a person reads it: code, message, and the machine
/// reason from the ErrorInfo details when there is one.
pub fn describe_status(status: &Status) -> String {
    let mut text = format!("{:?}: {}", status.code(), status.message());
    if let Some(reason) = refusal_reason(status) {
        let _ = write!(text, " [{reason}]");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> String {
        ServerAddress::parse("--server", text)
            .map(|a| a.url().to_string())
            .unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    fn refusal(text: &str) -> String {
        ServerAddress::parse("--server", text)
            .expect_err(text)
            .to_string()
    }

    #[test]
    fn host_and_port_without_a_scheme_is_read_as_plaintext_http() {
        assert_eq!(url("127.0.0.1:50051"), "http://127.0.0.1:50051");
        assert_eq!(url("localhost:50051"), "http://localhost:50051");
        assert_eq!(
            url("referee.example-1.org:8080"),
            "http://referee.example-1.org:8080"
        );
    }

    #[test]
    fn a_bracketed_ipv6_host_is_read() {
        assert_eq!(url("[::1]:50051"), "http://[::1]:50051");
        assert_eq!(url("http://[::1]:50051"), "http://[::1]:50051");
    }

    #[test]
    fn http_urls_keep_working() {
        assert_eq!(url("http://127.0.0.1:50051"), "http://127.0.0.1:50051");
        assert_eq!(url("http://127.0.0.1:50051/"), "http://127.0.0.1:50051");
        assert_eq!(url("HTTP://localhost:1"), "http://localhost:1");
        assert_eq!(url("http://localhost"), "http://localhost");
    }

    #[test]
    fn https_without_a_ca_is_refused() {
        let text = refusal("https://127.0.0.1:50051");
        assert!(
            text.starts_with("--server: `https://127.0.0.1:50051`"),
            "{text}"
        );
        assert!(text.contains("TLS"), "{text}");
    }

    #[test]
    fn garbage_is_refused_naming_the_flag() {
        for bad in [
            "",
            "garbage",
            "no spaces:1",
            "host:port",
            "host:0",
            "host:70000",
            ":50051",
            "::1:50051",
            "[::1",
            "[nope]:1",
            "grpc://host:1",
            "http://host:1/path",
        ] {
            let e = ServerAddress::parse("--address", bad).expect_err(bad);
            assert_eq!(e.flag, "--address");
            let text = e.to_string();
            assert!(text.starts_with(&format!("--address: `{bad}` ")), "{text}");
            assert!(text.contains(":PORT"), "says what to write: {text}");
        }
        assert!(refusal("localhost").contains("no port"));
        assert!(refusal("::1:50051").contains("brackets"));
    }

    #[test]
    fn a_listener_address_is_its_url() {
        let v4: SocketAddr = "127.0.0.1:4000".parse().unwrap();
        let v6: SocketAddr = "[::1]:4000".parse().unwrap();
        assert_eq!(
            ServerAddress::of_listener(v4).unwrap().url(),
            "http://127.0.0.1:4000"
        );
        assert_eq!(
            ServerAddress::of_listener(v6).unwrap().url(),
            "http://[::1]:4000"
        );
    }

    #[test]
    fn seats_on_the_wire_are_positions_from_one() {
        assert_eq!(seat_index(NO_SEAT), None);
        assert_eq!(seat_index(1), Some(0));
        assert_eq!(seat_index(2), Some(1));
        assert_eq!(seat_name(0), "white");
        assert_eq!(seat_by_name("Black"), Some(1));
    }

    #[test]
    fn tokens_are_kept_in_seat_order_whatever_order_they_come_in() {
        let token = |seat: WireSeat, token: &str| pb::SeatToken {
            seat,
            token: token.into(),
            name: String::new(),
        };
        let tokens = SeatTokens::from_wire(&[token(2, "b"), token(NO_SEAT, "x"), token(1, "w")]);
        assert_eq!(
            (tokens.get(0), tokens.get(1), tokens.get(2)),
            (Some("w"), Some("b"), None)
        );
        assert_eq!(tokens.every_seat(), Some(vec!["w".into(), "b".into()]));
        let half = SeatTokens::from_wire(&[token(2, "b")]);
        assert_eq!(half.iter().collect::<Vec<_>>(), [(1, "b")]);
        assert_eq!(half.every_seat(), None);
        assert_eq!(SeatTokens::default().every_seat(), None);
    }

    #[test]
    fn a_draw_has_no_winner() {
        let won = pb::Outcome {
            winners: vec![2],
            ..Default::default()
        };
        let drawn = pb::Outcome {
            draw: true,
            ..Default::default()
        };
        assert_eq!((winner(&won), winner(&drawn)), (Some(1), None));
        assert_eq!(winner(&pb::Outcome::default()), None);
    }
}
