//! The scopes a key may carry, and what each RPC needs when keys are on.

use std::fmt;

/// What a key may do. A key carries any set of them; none implies another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    /// Create and import games (CreateGame, ImportGame).
    GamesCreate,
    /// Abort games (AbortGame, still with the aborting seat's token).
    GamesAdmin,
    /// Create, run and abort tournaments (the tournament service's calls).
    TournamentsManage,
    /// Read any game without a seat token, list games, validate moves.
    Read,
    /// Register webhook endpoints and look after their deliveries
    /// (WebhookService).
    WebhooksAdmin,
}

impl Scope {
    /// Every scope, in the order the docs list them.
    pub const ALL: [Scope; 5] = [
        Scope::GamesCreate,
        Scope::GamesAdmin,
        Scope::TournamentsManage,
        Scope::Read,
        Scope::WebhooksAdmin,
    ];

    /// The scope's name in the keys file.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::GamesCreate => "games:create",
            Scope::GamesAdmin => "games:admin",
            Scope::TournamentsManage => "tournaments:manage",
            Scope::Read => "read",
            Scope::WebhooksAdmin => "webhooks:admin",
        }
    }

    /// The scope a keys file names `text`.
    pub fn parse(text: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|s| s.as_str() == text)
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What an RPC needs when keys are on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requirement {
    /// Nothing: a seat token authorises it (moves), or it is public (health,
    /// reflection).
    Open,
    /// A key with this scope.
    Scope(Scope),
    /// A key with `read`, or a seat token in the request (the handler checks
    /// which through [`super::Caller::may_read`]).
    ReadOrSeat,
}

/// What the RPC at `path` (`/package.Service/Method`) needs when keys are on
/// (the table of docs/SECURITY.md).
pub fn requirement(path: &str) -> Requirement {
    if path.starts_with("/referee.v1.WebhookService/") {
        return Requirement::Scope(Scope::WebhooksAdmin);
    }
    let Some(method) = path.strip_prefix("/referee.v1.RefereeService/") else {
        return match path.strip_prefix("/referee.v1.TournamentService/") {
            // The entrant key authorises the entrant's stream, as a seat
            // token does a move (docs/TOURNAMENTS.md).
            Some("ConnectEntrant") => Requirement::Open,
            Some("GetTournament" | "ListTournaments") => Requirement::Scope(Scope::Read),
            Some(_) => Requirement::Scope(Scope::TournamentsManage),
            None => Requirement::Open,
        };
    };
    match method {
        "CreateGame" | "ImportGame" => Requirement::Scope(Scope::GamesCreate),
        "AbortGame" => Requirement::Scope(Scope::GamesAdmin),
        "ListGames" | "ValidateMove" => Requirement::Scope(Scope::Read),
        "GetGame" | "ListLegalMoves" | "WatchGame" | "ExportGame" | "RenderPosition" => {
            Requirement::ReadOrSeat
        }
        // What the contract itself says: public, like reflection.
        "ListGameKinds" => Requirement::Open,
        // SubmitMove, Resign, OfferDraw, AcceptDraw, ClaimVictory: seat tokens.
        _ => Requirement::Open,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rpc_has_its_documented_requirement() {
        let r = |m: &str| requirement(&format!("/referee.v1.RefereeService/{m}"));
        assert_eq!(r("CreateGame"), Requirement::Scope(Scope::GamesCreate));
        assert_eq!(r("ImportGame"), Requirement::Scope(Scope::GamesCreate));
        assert_eq!(r("AbortGame"), Requirement::Scope(Scope::GamesAdmin));
        assert_eq!(r("ListGames"), Requirement::Scope(Scope::Read));
        assert_eq!(r("ValidateMove"), Requirement::Scope(Scope::Read));
        for m in [
            "GetGame",
            "ListLegalMoves",
            "WatchGame",
            "ExportGame",
            "RenderPosition",
        ] {
            assert_eq!(r(m), Requirement::ReadOrSeat, "{m}");
        }
        for m in [
            "SubmitMove",
            "Resign",
            "OfferDraw",
            "AcceptDraw",
            "ClaimVictory",
            "ListGameKinds",
        ] {
            assert_eq!(r(m), Requirement::Open, "{m}");
        }
        for m in [
            "CreateTournament",
            "AddEntrant",
            "StartTournament",
            "CancelTournament",
        ] {
            assert_eq!(
                requirement(&format!("/referee.v1.TournamentService/{m}")),
                Requirement::Scope(Scope::TournamentsManage),
                "{m}"
            );
        }
        for m in ["GetTournament", "ListTournaments"] {
            assert_eq!(
                requirement(&format!("/referee.v1.TournamentService/{m}")),
                Requirement::Scope(Scope::Read),
                "{m}"
            );
        }
        assert_eq!(
            requirement("/referee.v1.TournamentService/ConnectEntrant"),
            Requirement::Open,
            "the entrant key is the credential"
        );
        assert_eq!(
            requirement("/grpc.health.v1.Health/Check"),
            Requirement::Open
        );
    }
}
