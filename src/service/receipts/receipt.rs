//! Signed receipts (docs/RECEIPTS.md, "Receipts").
//!
//! A receipt is a JSON object `{"payload": "<JSON text>", "key_id": …,
//! "algorithm": "Ed25519", "signature": "<base64>"}`: the signature is over
//! the payload's exact bytes, so a verifier checks it first and only then
//! parses the payload (no canonical JSON is needed in any language).
//! Ed25519 signatures are deterministic: the same facts signed by the same
//! key give the same receipt, so a receipt is made on demand from what the
//! server keeps (the game's moves, outcome and end time).

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use super::key::{ALGORITHM, KeyList, RefereeKey, verifies};
use super::{b64, b64_decode};

/// The `type` of a game's receipt payload.
pub const GAME_RECEIPT: &str = "punct-referee/game-receipt/v1";
/// The `type` of a tournament's receipt payload.
pub const TOURNAMENT_RECEIPT: &str = "punct-referee/tournament-receipt/v1";

/// How a game ended, as a receipt says it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReceiptOutcome {
    /// The winning seats' numbers (from 1), ascending; empty: nobody won.
    pub winners: Vec<u32>,
    /// Why it ended (`CONNECTION`, `RESIGNATION`, …).
    pub reason: String,
    /// Each seat's score, where the game keeps scores.
    pub scores: Vec<i64>,
}

/// What a game's receipt signs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GamePayload {
    /// [`GAME_RECEIPT`].
    #[serde(rename = "type")]
    pub kind: String,
    /// The game's id.
    pub game_id: String,
    /// The game's short name (`punct`, `dots`, `punto`).
    pub game: String,
    /// The rules header: the record header lines of the game's rules.
    pub rules: String,
    /// The seed's commitment (hex), empty for an unseeded game.
    pub commitment: String,
    /// SHA-256 (hex) of the exported record's UTF-8 bytes (ExportGame
    /// without a token).
    pub record_sha256: String,
    /// The move chain's head after the last move (hex).
    pub chain_head: String,
    /// Moves played.
    pub ply: u32,
    /// How it ended.
    pub outcome: ReceiptOutcome,
    /// The id of the key that signs.
    pub key_id: String,
    /// When it ended, Unix milliseconds.
    pub ended_unix_ms: i64,
}

/// One game of a tournament's receipt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TournamentGame {
    /// The game's id.
    pub game_id: String,
    /// SHA-256 (hex) of the game's receipt JSON text; empty when the game
    /// has none (it was never played, or is no longer stored).
    pub receipt_sha256: String,
}

/// One row of a tournament's final standings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TournamentStanding {
    /// The entrant's name.
    pub entrant: String,
    /// Points (a win 1, a draw ½).
    pub points: f64,
    /// Games played.
    pub games: u32,
}

/// What a tournament's receipt signs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TournamentPayload {
    /// [`TOURNAMENT_RECEIPT`].
    #[serde(rename = "type")]
    pub kind: String,
    /// The tournament's id.
    pub tournament_id: String,
    /// The final standings, first place first.
    pub standings: Vec<TournamentStanding>,
    /// Its games, in the order they were scheduled.
    pub games: Vec<TournamentGame>,
    /// The id of the key that signs.
    pub key_id: String,
    /// When it ended, Unix milliseconds.
    pub ended_unix_ms: i64,
}

/// A signed receipt (module docs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Receipt {
    /// The exact JSON text signed.
    pub payload: String,
    /// The id of the key that signed.
    pub key_id: String,
    /// Always [`ALGORITHM`].
    pub algorithm: String,
    /// The Ed25519 signature of the payload's bytes, standard base64.
    pub signature: String,
}

/// Why a receipt (or a record with it) does not verify: each a reason a
/// person reads ([`std::fmt::Display`]) and a stable code ([`VerifyError::code`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// The receipt is not the JSON object of a receipt.
    #[error("the receipt is not a receipt: {0}")]
    Malformed(String),
    /// No listed key has the receipt's key id.
    #[error("the receipt is signed by key {0}, which is not among the keys given")]
    UnknownKey(String),
    /// The signature is not the named key's over the payload.
    #[error(
        "the signature is not by key {0} over this payload (the receipt was changed or signed by another key)"
    )]
    BadSignature(String),
    /// The payload names another key than the receipt.
    #[error("the payload names key {payload}, the receipt key {receipt}")]
    KeyMismatch {
        /// The payload's key id.
        payload: String,
        /// The receipt's.
        receipt: String,
    },
    /// The record does not parse or replay.
    #[error("the record does not replay: {0}")]
    Record(String),
    /// The record's hash is not the one signed.
    #[error(
        "the record is not the one the receipt signs (its SHA-256 is {actual}, the receipt's {signed})"
    )]
    RecordHash {
        /// The record's.
        actual: String,
        /// The receipt's.
        signed: String,
    },
    /// The record has another number of moves than the receipt says.
    #[error("the record has {record} moves, the receipt signs {signed}")]
    MoveCount {
        /// The record's.
        record: u32,
        /// The receipt's.
        signed: u32,
    },
    /// The record's moves do not chain to the signed head.
    #[error(
        "a move of the record differs from the record the receipt signs (its moves do not chain to the receipt's head)"
    )]
    Chain,
    /// The record is of other rules than the signed ones.
    #[error("the record's rules differ from the receipt's")]
    Rules,
    /// The record's outcome differs from the signed one.
    #[error("the record's outcome ({record}) differs from the receipt's ({signed})")]
    Outcome {
        /// The record's.
        record: String,
        /// The receipt's.
        signed: String,
    },
}

impl VerifyError {
    /// A stable upper-case name of the failure (exit reasons, tests).
    pub fn code(&self) -> &'static str {
        match self {
            VerifyError::Malformed(_) => "MALFORMED_RECEIPT",
            VerifyError::UnknownKey(_) => "UNKNOWN_KEY",
            VerifyError::BadSignature(_) => "BAD_SIGNATURE",
            VerifyError::KeyMismatch { .. } => "KEY_MISMATCH",
            VerifyError::Record(_) => "BAD_RECORD",
            VerifyError::RecordHash { .. } => "RECORD_HASH",
            VerifyError::MoveCount { .. } => "MOVE_COUNT",
            VerifyError::Chain => "CHAIN",
            VerifyError::Rules => "RULES",
            VerifyError::Outcome { .. } => "OUTCOME",
        }
    }
}

/// SHA-256 of `bytes`, lower-case hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    crate::games::hex(&Sha256::digest(bytes))
}

impl Receipt {
    /// `payload` serialised and signed with `key`.
    pub fn sign<P: Serialize>(payload: &P, key: &RefereeKey) -> Receipt {
        // A payload is plain strings and numbers: it always serialises.
        let payload = serde_json::to_string(payload).unwrap_or_default();
        let signature = b64(&key.sign(payload.as_bytes()));
        Receipt {
            payload,
            key_id: key.id().to_string(),
            algorithm: ALGORITHM.to_string(),
            signature,
        }
    }

    /// The receipt's JSON text (what APIs serve and exports carry).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The receipt as a JSON value (to embed in another document).
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }

    /// A receipt from its JSON text.
    pub fn parse(text: &str) -> Result<Receipt, VerifyError> {
        let r: Receipt =
            serde_json::from_str(text.trim()).map_err(|e| VerifyError::Malformed(e.to_string()))?;
        if r.algorithm != ALGORITHM {
            return Err(VerifyError::Malformed(format!(
                "algorithm `{}`, not {ALGORITHM}",
                r.algorithm
            )));
        }
        Ok(r)
    }

    /// Checks the signature with a key of `keys`, then parses the payload
    /// and checks it names the same key.
    pub fn verified<P: for<'de> Deserialize<'de> + PayloadKey>(
        &self,
        keys: &KeyList,
    ) -> Result<P, VerifyError> {
        let public = keys
            .find(&self.key_id)
            .ok_or_else(|| VerifyError::UnknownKey(self.key_id.clone()))?;
        let signature = b64_decode(&self.signature)
            .ok_or_else(|| VerifyError::Malformed("the signature is not base64".into()))?;
        if !verifies(&public, self.payload.as_bytes(), &signature) {
            return Err(VerifyError::BadSignature(self.key_id.clone()));
        }
        let payload: P = serde_json::from_str(&self.payload)
            .map_err(|e| VerifyError::Malformed(format!("payload: {e}")))?;
        if payload.key_id() != self.key_id {
            return Err(VerifyError::KeyMismatch {
                payload: payload.key_id().to_string(),
                receipt: self.key_id.clone(),
            });
        }
        Ok(payload)
    }
}

/// A payload names the key that signs it.
pub trait PayloadKey {
    /// The payload's key id.
    fn key_id(&self) -> &str;
}

impl PayloadKey for GamePayload {
    fn key_id(&self) -> &str {
        &self.key_id
    }
}

impl PayloadKey for TournamentPayload {
    fn key_id(&self) -> &str {
        &self.key_id
    }
}
