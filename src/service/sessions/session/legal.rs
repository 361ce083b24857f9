//! The legal moves of the current ply, computed once per ply and shared.

use std::sync::{Arc, OnceLock};

use bytes::Bytes;

use super::Session;
use super::seats::Role;
use crate::games::{MoveReport, Seat, Viewer};

/// The legal moves of one ply, shared by every caller of it, and their
/// notations as one text once someone asked for it.
#[derive(Debug, Default)]
pub(super) struct LegalList {
    moves: Arc<[MoveReport]>,
    text: OnceLock<Bytes>,
}

/// Each move's notation followed by a line feed.
fn joined(moves: &[MoveReport]) -> Bytes {
    let mut text = String::with_capacity(moves.iter().map(|m| m.detail.notation.len() + 1).sum());
    for m in moves {
        text.push_str(&m.detail.notation);
        text.push('\n');
    }
    Bytes::from(text)
}

impl Session {
    /// The legal moves of `seat` (the player to move when `None`): empty when
    /// it is not that seat's turn or the game is over. Also returns the ply
    /// and whose turn it is.
    /// Moves are shown as `role` may see them.
    pub fn legal_moves(
        &self,
        seat: Option<Seat>,
        role: Role,
    ) -> (u32, Option<Seat>, Arc<[MoveReport]>) {
        let (ply, to_move, all) = self.all_legal_moves();
        let moves = match (to_move, seat) {
            (Some(m), Some(s)) if m != s => Arc::from(Vec::new()),
            _ if self.private => self.redacted(&all.moves, role.viewer()).into(),
            _ => all.moves.clone(),
        };
        (ply, to_move, moves)
    }

    /// [`Session::legal_moves`] as one text: each move's notation followed
    /// by a line feed. Made once per ply and shared (a game with private
    /// information makes it per call, from the moves `role` may see).
    pub fn legal_text(&self, seat: Option<Seat>, role: Role) -> (u32, Option<Seat>, Bytes) {
        let (ply, to_move, all) = self.all_legal_moves();
        let text = match (to_move, seat) {
            (Some(m), Some(s)) if m != s => Bytes::new(),
            _ if self.private => joined(&self.redacted(&all.moves, role.viewer())),
            _ => all.text.get_or_init(|| joined(&all.moves)).clone(),
        };
        (ply, to_move, text)
    }

    /// `moves` as `viewer` may see them.
    pub(super) fn redacted(&self, moves: &[MoveReport], viewer: Viewer) -> Vec<MoveReport> {
        let st = self.lock();
        moves
            .iter()
            .map(|m| MoveReport {
                detail: st.game.redact(&m.detail, viewer),
                ..m.clone()
            })
            .collect()
    }

    /// Every legal move of the current ply, computed once per ply.
    pub(super) fn all_legal_moves(&self) -> (u32, Option<Seat>, Arc<LegalList>) {
        let game = {
            let st = self.lock_settled();
            let ply = st.game.ply();
            let to_move = st.game.to_move();
            match &st.legal {
                _ if to_move.is_none() => return (ply, None, Arc::new(LegalList::default())),
                Some((at, list)) if *at == ply => return (ply, to_move, list.clone()),
                _ => st.game.clone_box(),
            }
        };
        // Generation runs outside the lock: it is the slow part. Two callers
        // racing on a new ply both compute it; the list is the same.
        let list = Arc::new(LegalList {
            moves: game.legal_moves().into(),
            text: OnceLock::new(),
        });
        let ply = game.ply();
        let mut st = self.lock();
        if st.game.ply() == ply && st.game.outcome().is_none() {
            st.legal = Some((ply, list.clone()));
        }
        (ply, game.to_move(), list)
    }
}
