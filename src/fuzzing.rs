//! What the fuzz targets in `fuzz/` drive (docs/FUZZING.md); not a supported
//! API, hidden from the docs.
//!
//! [`convert_request`] decodes bytes as one of the service's request
//! messages, exactly as tonic's codec would, and runs the decoded message
//! through the same proto → domain conversion as its handler in
//! [`crate::service::grpc::service`] (and, for the stateless calls, through the domain
//! code behind it), without a server or a session store. A refusal comes back
//! as the `tonic::Status` the client would receive.

use prost::Message;
use tonic::Status;

use crate::games::{self, MoveInput};
use crate::service::grpc::convert;
use crate::service::grpc::error::status;
use crate::service::grpc::games::Part;
use crate::service::grpc::pb::referee::v1 as pb;
use crate::service::sessions::{self, Adjudication, ListQuery, TimeControl, Token};

/// The request messages [`convert_request`] knows, in selector order.
pub const REQUESTS: [&str; 15] = [
    "CreateGame",
    "GetGame",
    "ListGames",
    "ListLegalMoves",
    "SubmitMove",
    "WatchGame",
    "Resign",
    "OfferDraw",
    "AcceptDraw",
    "AbortGame",
    "ValidateMove",
    "ExportGame",
    "ImportGame",
    "ClaimVictory",
    "RenderPosition",
];

/// What a request converted into: the domain values its handler hands to the
/// session layer (or, for the stateless calls, the answer).
#[derive(Debug)]
pub enum Converted {
    /// `CreateGame`: rules (checked), time control (checked), labels (left to
    /// the store's check).
    CreateGame(games::GameRules, TimeControl),
    /// `ListGames`: the query (status checked; page token and labels are the
    /// store's).
    ListGames(ListQuery),
    /// `SubmitMove`: the move, syntax checked, and whether the token is one
    /// at all.
    SubmitMove(MoveInput, Option<Token>),
    /// `ValidateMove`: the adjudication (the call needs no session).
    ValidateMove(Adjudication),
    /// `ImportGame`: the replayed record (the store then adds tokens).
    ImportGame(games::Replayed),
    /// A call whose fields are only ids, tokens, seats and plies: whether the
    /// token (if any) is one at all.
    Lookup(Option<Token>),
}

fn decode<M: Message + Default>(bytes: &[u8]) -> Option<M> {
    M::decode(bytes).ok()
}

fn token(text: &str) -> Option<Token> {
    Token::parse(text)
}

/// Decodes `bytes` as request `REQUESTS[selector % REQUESTS.len()]` and
/// converts it like its handler. `None` when prost cannot decode the bytes
/// (tonic then answers before any handler runs); otherwise the domain values
/// or the status a client would be sent.
pub fn convert_request(selector: u8, bytes: &[u8]) -> Option<Result<Converted, Status>> {
    let converted = match usize::from(selector) % REQUESTS.len() {
        0 => {
            let req: pb::CreateGameRequest = decode(bytes)?;
            create_game(&req)
        }
        1 => decode::<pb::GetGameRequest>(bytes).map(|_| Ok(Converted::Lookup(None)))?,
        2 => {
            let req: pb::ListGamesRequest = decode(bytes)?;
            convert::list_query(req)
                .map(Converted::ListGames)
                .map_err(status)
        }
        3 => {
            let req: pb::ListLegalMovesRequest = decode(bytes)?;
            convert::seat(req.seat, crate::games::MAX_SEATS, "seat")
                .map(|_| Converted::Lookup(None))
                .map_err(status)
        }
        4 => {
            let req: pb::SubmitMoveRequest = decode(bytes)?;
            convert::move_input(req.r#move.as_ref(), &Part::Request)
                .map(|mv| Converted::SubmitMove(mv, token(&req.token)))
                .map_err(status)
        }
        5 => {
            let req: pb::WatchGameRequest = decode(bytes)?;
            Ok(Converted::Lookup(token(&req.token)))
        }
        6 => decode::<pb::ResignRequest>(bytes).map(|r| Ok(Converted::Lookup(token(&r.token))))?,
        7 => {
            decode::<pb::OfferDrawRequest>(bytes).map(|r| Ok(Converted::Lookup(token(&r.token))))?
        }
        8 => decode::<pb::AcceptDrawRequest>(bytes)
            .map(|r| Ok(Converted::Lookup(token(&r.token))))?,
        9 => {
            decode::<pb::AbortGameRequest>(bytes).map(|r| Ok(Converted::Lookup(token(&r.token))))?
        }
        10 => {
            let req: pb::ValidateMoveRequest = decode(bytes)?;
            convert::validate_move_request(req)
                .and_then(|(history, mv)| sessions::validate_move(history, &mv))
                .map(Converted::ValidateMove)
                .map_err(status)
        }
        11 => decode::<pb::ExportGameRequest>(bytes).map(|_| Ok(Converted::Lookup(None)))?,
        12 => {
            let req: pb::ImportGameRequest = decode(bytes)?;
            crate::service::grpc::games::catalog()
                .import(&req.record, None)
                .map(Converted::ImportGame)
                .map_err(|e| status(sessions::SessionError::Record(e)))
        }
        13 => decode::<pb::ClaimVictoryRequest>(bytes)
            .map(|r| Ok(Converted::Lookup(token(&r.token))))?,
        _ => decode::<pb::RenderPositionRequest>(bytes).map(|_| Ok(Converted::Lookup(None)))?,
    };
    Some(converted)
}

fn create_game(req: &pb::CreateGameRequest) -> Result<Converted, Status> {
    let rules = convert::game_rules(req.rules.as_ref(), &Part::Request).map_err(status)?;
    let time_control = convert::time_control(req.time_control.as_ref());
    time_control.check().map_err(status)?;
    let _labels = convert::labels(&req.labels);
    Ok(Converted::CreateGame(rules, time_control))
}
