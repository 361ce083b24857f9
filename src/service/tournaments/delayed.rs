//! A tournament as a spectator may see it while its games keep their
//! spectators behind (the `spectator-delay` label, docs/SPECTATOR.md): a
//! game whose end its spectators are not shown yet is still playing in
//! the schedule, and the standings, crosstable and SPRT count only the
//! results shown; the tournament is not over for them, nor are its seeds
//! public, until every end is shown. Seats and the platform read the
//! tournament as it is.

use super::record::{PairingStatus, TournamentStatus};
use super::{TournamentView, Tournaments, standings};
use crate::service::sessions::Role;

impl Tournaments {
    /// `view` as a spectator may see it now.
    pub fn as_spectators_see(&self, mut view: TournamentView) -> TournamentView {
        let mut hidden = false;
        for g in &mut view.doc.games {
            let PairingStatus::Done { game_id, .. } = &g.state else {
                continue;
            };
            // A game no longer held ended long ago (it is dropped only
            // after its finished time to live).
            let Ok(session) = self.sessions.get(game_id) else {
                continue;
            };
            if session.spectator_delay().is_none() {
                continue;
            }
            if session.view_for(Role::Spectator, false).outcome.is_none() {
                g.state = PairingStatus::Playing {
                    game_id: game_id.clone(),
                    sealed_tokens: Vec::new(),
                };
                hidden = true;
            }
        }
        if !hidden {
            return view;
        }
        if view.doc.status == TournamentStatus::Finished {
            view.doc.status = TournamentStatus::Running;
        }
        let (scored, byes) = view.doc.scored();
        view.table = standings::table(view.doc.entrants.len(), &scored, &byes);
        view.sprt = view
            .doc
            .sprt
            .map(|s| s.state(&view.doc.sprt_samples(view.pentanomial)));
        view
    }
}
