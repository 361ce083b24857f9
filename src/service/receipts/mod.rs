//! Results a platform can prove (docs/RECEIPTS.md): the referee key
//! ([`key`]), the hash chain of a game's moves ([`chain`]), signed receipts
//! of finished games and tournaments ([`receipt`]), and the offline check
//! of a record against its receipt ([`verify_game`]), which
//! `punct-referee verify` runs.

pub mod chain;
pub mod key;
pub mod receipt;

use base64::Engine as _;

use crate::games::{Catalog, Outcome};

pub use key::{KeyError, KeyList, PublicKeyEntry, RefereeKey};
pub use receipt::{
    GAME_RECEIPT, GamePayload, Receipt, ReceiptOutcome, TOURNAMENT_RECEIPT, TournamentGame,
    TournamentPayload, TournamentStanding, VerifyError, sha256_hex,
};

/// Standard base64 with padding.
pub(crate) fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Bytes from standard base64 (padding optional).
pub(crate) fn b64_decode(text: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .or_else(|_| base64::engine::general_purpose::STANDARD_NO_PAD.decode(text.trim()))
        .ok()
}

/// An outcome as a receipt writes it.
pub fn receipt_outcome(outcome: &Outcome) -> ReceiptOutcome {
    ReceiptOutcome {
        winners: outcome.winners.iter().map(|s| s.number()).collect(),
        reason: outcome.reason.to_string(),
        scores: outcome.scores.clone(),
    }
}

fn outcome_text(o: &ReceiptOutcome) -> String {
    let winners: Vec<String> = o.winners.iter().map(u32::to_string).collect();
    format!("winners [{}], {}", winners.join(", "), o.reason)
}

/// Checks offline that `record` is the record `receipt` signs, with a key
/// of `keys`: the signature, then the record replays (with the games of
/// `catalog`) under the signed rules, has the signed number of moves, its
/// moves chain to the signed head, it ends as signed, and its bytes hash to
/// the signed SHA-256. The first check that fails is the reason given.
pub fn verify_game(
    record: &str,
    receipt: &Receipt,
    keys: &KeyList,
    catalog: &Catalog,
) -> Result<GamePayload, VerifyError> {
    let payload: GamePayload = receipt.verified(keys)?;
    if payload.kind != GAME_RECEIPT {
        return Err(VerifyError::Malformed(format!(
            "payload type `{}`, not {GAME_RECEIPT}",
            payload.kind
        )));
    }
    let replayed = catalog
        .import(record, None)
        .map_err(|e| VerifyError::Record(e.to_string()))?;
    if replayed.game.rules_header() != payload.rules {
        return Err(VerifyError::Rules);
    }
    let moves = u32::try_from(replayed.moves.len()).unwrap_or(u32::MAX);
    if moves != payload.ply {
        return Err(VerifyError::MoveCount {
            record: moves,
            signed: payload.ply,
        });
    }
    let commitment = replayed.game.setup().map(|s| s.commitment());
    let root = chain::root(&payload.game_id, &payload.rules, commitment.as_ref());
    let head = chain::head(root, replayed.moves.iter().map(|m| m.detail.notation()));
    if crate::games::hex(&head) != payload.chain_head {
        return Err(VerifyError::Chain);
    }
    let outcome = replayed.game.outcome().map(|o| receipt_outcome(&o));
    if outcome.as_ref().map(|o| (&o.winners, &o.reason))
        != Some((&payload.outcome.winners, &payload.outcome.reason))
    {
        return Err(VerifyError::Outcome {
            record: outcome.map_or_else(|| "in progress".to_string(), |o| outcome_text(&o)),
            signed: outcome_text(&payload.outcome),
        });
    }
    let actual = sha256_hex(record.as_bytes());
    if actual != payload.record_sha256 {
        return Err(VerifyError::RecordHash {
            actual,
            signed: payload.record_sha256,
        });
    }
    Ok(payload)
}
