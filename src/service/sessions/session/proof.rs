//! What makes a game's result provable (docs/RECEIPTS.md): the head of its
//! move chain, and the facts its receipt signs once it is over.

use super::super::GameId;
use super::{Session, State};
use crate::games::{Game, MoveReport, Viewer};
use crate::service::receipts::{self, GAME_RECEIPT, GamePayload, Receipt, RefereeKey, chain};

/// The root of the chain of game `id`, `game` (its rules and seed
/// commitment).
fn root_of(id: &GameId, game: &dyn Game) -> chain::Head {
    let commitment = game.setup().map(|s| s.commitment());
    chain::root(id.as_str(), &game.rules_header(), commitment.as_ref())
}

/// The chain head of game `id` after `history` (a new, imported or
/// recovered game: the chain is recomputed, never stored).
pub(in crate::service::sessions) fn chain_of(
    id: &GameId,
    game: &dyn Game,
    history: &[MoveReport],
) -> chain::Head {
    chain::head(
        root_of(id, game),
        history.iter().map(|r| r.detail.notation()),
    )
}

impl Session {
    /// The chain head after `ply` moves (recomputed from the log: only the
    /// current head is kept).
    pub(super) fn chain_at(&self, st: &State, ply: u32) -> chain::Head {
        let moves = (0..ply).filter_map(|p| st.log.move_at(p));
        chain::head(
            root_of(&self.id, &*st.game),
            moves.map(|r| r.detail.notation()),
        )
    }

    /// The chain head of the game now (after its last move).
    pub fn chain_head(&self) -> chain::Head {
        self.lock().chain
    }

    /// The chain head after move `ply`, written `notation`, from `prev`
    /// (the head before it): the game's own head while the game is still
    /// at that ply (it took that step when it played the move), so that
    /// the watchers of a game being played do not each hash every move
    /// again; the step from `prev` otherwise.
    pub(in crate::service::sessions) fn chain_after(
        &self,
        prev: &chain::Head,
        notation: &str,
        ply: u32,
    ) -> chain::Head {
        {
            let st = self.lock();
            if st.game.ply() == ply {
                return st.chain;
            }
        }
        chain::step(prev, notation, ply)
    }

    /// Notes the stored end time of a game a follower learns has ended.
    pub(in crate::service::sessions) fn note_end(&self, at_ms: i64) {
        self.handoff.note_end(at_ms);
    }

    /// What the receipt of this game signs, with `key_id` as the signer,
    /// once it is over (`None` before).
    pub fn receipt_payload(&self, key_id: &str) -> Option<GamePayload> {
        let (record, payload) = {
            let st = self.lock_settled();
            let outcome = st.game.outcome()?;
            // The record a spectator exports of the finished game.
            let tags = self.record_tags(&st, Viewer::Spectator, None);
            let payload = GamePayload {
                kind: GAME_RECEIPT.to_string(),
                game_id: self.id.to_string(),
                game: self.game_name.to_string(),
                rules: st.game.rules_header(),
                commitment: st
                    .game
                    .setup()
                    .map_or_else(String::new, |s| crate::games::hex(&s.commitment())),
                record_sha256: String::new(),
                chain_head: crate::games::hex(&st.chain),
                ply: st.game.ply(),
                outcome: receipts::receipt_outcome(&outcome),
                key_id: key_id.to_string(),
                ended_unix_ms: self.handoff.ended_ms().unwrap_or_default(),
            };
            (st.game.record(&tags, Viewer::Spectator), payload)
        };
        Some(GamePayload {
            record_sha256: receipts::sha256_hex(record.as_bytes()),
            ..payload
        })
    }

    /// The game's receipt signed with `key`, once it is over.
    pub fn signed_receipt(&self, key: &RefereeKey) -> Option<Receipt> {
        self.receipt_payload(key.id())
            .map(|payload| Receipt::sign(&payload, key))
    }
}
