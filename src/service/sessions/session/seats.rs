//! A game's seats: what the game calls each, the hash of each seat's token,
//! and who a caller is ([`Role`]).

use super::super::token::{Token, TokenHash};
use super::super::{GameId, SessionError};
use crate::games::{Seat, SeatSet, Viewer};

/// Who a caller is for one game: a seat (proved by its token), a spectator
/// (no token), or the platform (a key with `games:admin`, or the server
/// itself). Resolved once per call ([`super::Session::role_of`]) and given
/// to the session's calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// A player, at this seat.
    Seat(Seat),
    /// Anyone without a seat's token.
    Spectator,
    /// The platform running the game. A key with `games:admin` names the
    /// game by a seat's token, and is shown what that seat sees; the server
    /// itself names none (`None`) and is shown what a spectator sees.
    Platform(Option<Seat>),
}

impl Role {
    /// What this role is shown of the game: a seat its own view (the
    /// platform the view of the seat it named), anyone else what a
    /// spectator sees.
    pub fn viewer(self) -> Viewer {
        match self {
            Role::Seat(seat) | Role::Platform(Some(seat)) => Viewer::Seat(seat),
            Role::Spectator | Role::Platform(None) => Viewer::Spectator,
        }
    }

    /// The seat, for a player (the platform plays no seat).
    pub fn seat(self) -> Option<Seat> {
        match self {
            Role::Seat(seat) => Some(seat),
            Role::Spectator | Role::Platform(_) => None,
        }
    }
}

/// `TOKEN_MISSING`: a call only a seat may make came without a token.
fn token_missing() -> SessionError {
    SessionError::Unauthenticated {
        reason: "TOKEN_MISSING",
        message: "a seat token is required",
    }
}

/// The seats of one game.
#[derive(Debug)]
pub(super) struct Seats {
    /// What the game calls each seat; as many as it has seats.
    names: &'static [&'static str],
    token_hashes: Box<[TokenHash]>,
}

impl Seats {
    pub(super) fn new(names: &'static [&'static str], token_hashes: Vec<TokenHash>) -> Seats {
        Seats {
            names,
            token_hashes: token_hashes.into_boxed_slice(),
        }
    }

    /// How many seats the game has.
    pub(super) fn count(&self) -> usize {
        self.names.len()
    }

    /// What the game calls each seat, in seat order.
    pub(super) fn names(&self) -> &'static [&'static str] {
        self.names
    }

    /// What the game calls `seat`.
    pub(super) fn name(&self, seat: Seat) -> &'static str {
        self.names.get(seat.index()).copied().unwrap_or("?")
    }

    /// The names of `seats`, joined with `+` (`none` for no seat).
    pub(super) fn names_of(&self, seats: SeatSet) -> String {
        if seats.is_empty() {
            return "none".into();
        }
        seats
            .iter()
            .map(|s| self.name(s))
            .collect::<Vec<_>>()
            .join("+")
    }

    /// The role of a caller of game `id` bringing `token`: with `platform`
    /// (it holds the platform's key), the platform, naming the game by a
    /// seat's token, which it must bring; else the seat `token` proves, or
    /// a spectator without a token. A token that is given must be right.
    pub(super) fn role_of(
        &self,
        id: &GameId,
        token: &str,
        platform: bool,
    ) -> Result<Role, SessionError> {
        if platform {
            return self.seat_for(id, token).map(|s| Role::Platform(Some(s)));
        }
        if token.is_empty() {
            return Ok(Role::Spectator);
        }
        self.seat_for(id, token).map(Role::Seat)
    }

    /// The seat `role` plays: refused for a spectator (no token) and the
    /// platform (no seat's move is the platform's).
    pub(super) fn seat_of(id: &GameId, role: Role) -> Result<Seat, SessionError> {
        match role {
            Role::Seat(seat) => Ok(seat),
            Role::Spectator => Err(token_missing()),
            Role::Platform(_) => Err(SessionError::PermissionDenied(id.to_string())),
        }
    }

    /// The seat `token` proves in game `id`. Checks every seat, always, in
    /// constant time.
    pub(super) fn seat_for(&self, id: &GameId, token: &str) -> Result<Seat, SessionError> {
        if token.is_empty() {
            return Err(token_missing());
        }
        let Some(given) = Token::parse(token) else {
            return Err(SessionError::Unauthenticated {
                reason: "TOKEN_MALFORMED",
                message: "the seat token is not 32 hex digits",
            });
        };
        // The given token is hashed once; every seat is compared, whichever
        // matches: no early exit.
        let given = given.hash();
        let mut found = None;
        for (i, hash) in self.token_hashes.iter().enumerate() {
            if bool::from(hash.is(&given)) {
                found = Seat::new(i);
            }
        }
        let Some(seat) = found else {
            return Err(SessionError::PermissionDenied(id.to_string()));
        };
        // The seat, never the token, goes on the call's span.
        tracing::Span::current().record("seat", self.name(seat));
        Ok(seat)
    }
}
