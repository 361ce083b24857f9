//! The row codec both SQL backends share: how a game's rows are written as
//! column values and read back into a [`StoredGame`], whatever the
//! database. A backend keeps only its SQL and its column types: it hands
//! the values it read to an [`Assembly`] (games, then their seats and
//! moves) and takes the values it writes from the encoders below (sealed
//! seed, clock columns, labels, the texts of seat sets and scores).
//!
//! The text formats (docs/STORAGE.md): a set of seats is their numbers,
//! ascending, joined by commas (`1,3`; empty for none); scores are
//! comma-separated in seat order; labels are a JSON object; a clock time
//! that is zero is stored as NULL.

use std::collections::{BTreeMap, HashMap};

use super::{
    ClockRow, GameRow, MoveLag, MoveRow, OutcomeRow, SeatRow, ServerSecret, StorageError,
    StoredGame,
};
use crate::games::{Seat, SeatSet, Setup};

/// A set of seats as stored: their numbers, ascending, joined by commas
/// (`1,3`); empty for none.
pub fn seats_text(seats: SeatSet) -> String {
    seats
        .iter()
        .map(|s| s.number().to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// The seats a stored text names (see [`seats_text`]).
pub fn seats_of_text(text: &str) -> Result<SeatSet, StorageError> {
    text.split(',')
        .filter(|t| !t.is_empty())
        .map(|t| {
            t.trim()
                .parse::<u32>()
                .ok()
                .and_then(Seat::from_number)
                .ok_or_else(|| StorageError::Corrupt(format!("stored seat `{t}` is no seat")))
        })
        .collect()
}

/// Scores as stored: comma-separated, in seat order; empty for none.
pub fn scores_text(scores: &[i64]) -> String {
    scores
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// The scores a stored text names (see [`scores_text`]).
pub fn scores_of_text(text: &str) -> Result<Vec<i64>, StorageError> {
    text.split(',')
        .filter(|t| !t.is_empty())
        .map(|t| {
            t.trim()
                .parse::<i64>()
                .map_err(|_| StorageError::Corrupt(format!("stored score `{t}` is no number")))
        })
        .collect()
}

/// A row that cannot be read back: what is wrong with it, naming its game
/// (`game `g1`: clock mode `x``). Each backend makes it its own error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BadRow(pub String);

/// A milliseconds value as stored (saturating at `i64::MAX`).
pub(crate) fn ms(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// A move's latency ledger as stored: charged, compensated and estimate
/// in columns `first`, `first + 1` and `first + 2` (a move stored without
/// one was charged all its time: the ledger's migration fills it in).
pub(crate) fn stored_lag(r: &rusqlite::Row<'_>, first: usize) -> rusqlite::Result<MoveLag> {
    let non_negative = |v: i64| v.max(0) as u64;
    Ok(MoveLag {
        charged_ms: r.get::<_, Option<i64>>(first)?.map_or(0, non_negative),
        compensated_ms: r.get::<_, Option<i64>>(first + 1)?.map_or(0, non_negative),
        lag_ms: r.get::<_, Option<i64>>(first + 2)?.map(non_negative),
    })
}

/// A time of the clock as stored: NULL for zero.
pub(crate) fn nonzero(v: u64) -> Option<i64> {
    (v != 0).then(|| ms(v))
}

/// The clock columns of a game: initial, increment, per move, first move.
pub(crate) type ClockColumns = (Option<i64>, Option<i64>, Option<i64>, Option<i64>);

/// The stored columns of `clock` (its mode is stored as it is).
pub(crate) fn clock_columns(clock: &ClockRow) -> ClockColumns {
    (
        nonzero(clock.initial_ms),
        nonzero(clock.increment_ms),
        nonzero(clock.per_move_ms),
        clock.first_move_ms.map(ms),
    )
}

/// A game's labels as stored: a JSON object.
pub(crate) fn labels_json(labels: &BTreeMap<String, String>) -> Result<String, StorageError> {
    serde_json::to_string(labels).map_err(|e| StorageError::Unavailable(format!("labels: {e}")))
}

/// The seed of `game` sealed with `secret` (the database alone reveals no
/// deck), or none for a game without a seed.
pub(crate) fn sealed_seed(game: &GameRow, secret: &ServerSecret) -> Option<[u8; 32]> {
    game.setup.map(|s| secret.seal_seed(&game.id, &s.seed))
}

/// A standing draw offer as stored: NULL for none.
pub(crate) fn offers_column(seats: SeatSet) -> Option<String> {
    (!seats.is_empty()).then(|| seats_text(seats))
}

/// The columns an ending sets beside its status, ply and time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EndColumns<'a> {
    /// The winners of a finished game (NULL when expired).
    pub winners: Option<String>,
    /// Why it ended (NULL for none).
    pub reason: Option<&'a str>,
    /// The scores (NULL for none).
    pub scores: Option<String>,
    /// The failure policy's ending (NULL for none).
    pub failure_ending: Option<&'a str>,
}

/// The columns `end` sets.
pub(crate) fn end_columns(end: &OutcomeRow) -> EndColumns<'_> {
    EndColumns {
        winners: (end.status == "finished").then(|| seats_text(end.winners)),
        reason: (!end.reason.is_empty()).then_some(end.reason.as_str()),
        scores: (!end.scores.is_empty()).then(|| scores_text(&end.scores)),
        failure_ending: end.failure_ending.as_deref(),
    }
}

/// The column values of one row of `games`, as a backend read them.
#[derive(Debug, Clone, Default)]
pub(crate) struct GameColumns {
    pub id: String,
    pub game: String,
    pub variant: String,
    pub options: String,
    /// The sealed seed's bytes (`None`: no seed).
    pub seed: Option<Vec<u8>>,
    pub seed_supplied: bool,
    pub clock_mode: String,
    pub clock_initial_ms: Option<i64>,
    pub clock_increment_ms: Option<i64>,
    pub clock_per_move_ms: Option<i64>,
    pub first_move_ms: Option<i64>,
    /// Lag compensation's cap per move and quota (NULL: none).
    pub lag_max_per_move_ms: Option<i64>,
    pub lag_quota_ms: Option<i64>,
    /// The labels' JSON.
    pub labels: String,
    pub draw_offers: Option<String>,
    pub created_at_ms: i64,
    pub ply: i64,
    pub status: String,
    pub winners: Option<String>,
    pub scores: Option<String>,
    pub reason: Option<String>,
    pub finished_at_ms: Option<i64>,
    pub forfeits: bool,
    /// The failure policy's ending ([`OutcomeRow::failure_ending`]).
    pub failure_ending: Option<String>,
}

/// The column values of one row of `moves` (its game aside).
#[derive(Debug, Clone, Default)]
pub(crate) struct MoveColumns {
    pub ply: i64,
    /// The seat's number (`None`: not a number).
    pub seat: Option<i64>,
    pub notation: String,
    pub request_id: Option<String>,
    pub clock_ms: i64,
    pub played_at_ms: i64,
    /// The substitution mark ([`MoveRow::substituted`]).
    pub substituted: Option<String>,
    /// The latency ledger ([`MoveRow::lag`]).
    pub charged_ms: Option<i64>,
    pub compensated_ms: Option<i64>,
    pub lag_ms: Option<i64>,
}

/// Stored games put together from their rows: the games first, then the
/// seats and the moves of each, in order; [`Assembly::finish`] checks that
/// each game's moves make its ply.
#[derive(Debug, Default)]
pub(crate) struct Assembly {
    games: Vec<StoredGame>,
    plies: Vec<i64>,
    index: HashMap<String, usize>,
}

impl Assembly {
    /// An empty assembly.
    pub(crate) fn new() -> Assembly {
        Assembly::default()
    }

    /// The ids of the games read so far, in order.
    pub(crate) fn ids(&self) -> Vec<String> {
        self.games.iter().map(|g| g.game.id.clone()).collect()
    }

    /// Whether no game was read.
    pub(crate) fn is_empty(&self) -> bool {
        self.games.is_empty()
    }

    /// Reads one game's row (its seed unsealed with `secret`).
    pub(crate) fn push_game(
        &mut self,
        row: GameColumns,
        secret: &ServerSecret,
    ) -> Result<(), BadRow> {
        let bad = |what: String| BadRow(format!("game `{}`: {what}", row.id));
        let setup = match &row.seed {
            None => None,
            Some(bytes) => {
                let sealed: [u8; 32] = bytes
                    .as_slice()
                    .try_into()
                    .map_err(|_| bad("bad seed".into()))?;
                Some(Setup {
                    seed: secret.unseal_seed(&row.id, &sealed),
                    supplied: row.seed_supplied,
                })
            }
        };
        let labels: BTreeMap<String, String> =
            serde_json::from_str(&row.labels).map_err(|e| bad(format!("labels: {e}")))?;
        let mode = clock_mode(&row.clock_mode)
            .ok_or_else(|| bad(format!("clock mode `{}`", row.clock_mode)))?;
        let draw_offers = seats_of_text(row.draw_offers.as_deref().unwrap_or(""))
            .map_err(|e| bad(format!("draw offers: {e}")))?;
        let end = end_of(&row)?;
        let non_negative = |v: Option<i64>| v.map(|v| v.max(0) as u64);
        let game = GameRow {
            id: row.id.clone(),
            game: row.game,
            variant: row.variant,
            options: row.options,
            seats: Vec::new(),
            setup,
            clock: ClockRow {
                mode,
                initial_ms: non_negative(row.clock_initial_ms).unwrap_or(0),
                increment_ms: non_negative(row.clock_increment_ms).unwrap_or(0),
                per_move_ms: non_negative(row.clock_per_move_ms).unwrap_or(0),
                first_move_ms: non_negative(row.first_move_ms),
                lag_max_per_move_ms: non_negative(row.lag_max_per_move_ms).unwrap_or(0),
                lag_quota_ms: non_negative(row.lag_quota_ms).unwrap_or(0),
            },
            labels,
            forfeits: row.forfeits,
            created_at_ms: row.created_at_ms,
        };
        self.index.insert(row.id, self.games.len());
        self.games.push(StoredGame {
            game,
            moves: Vec::new(),
            draw_offers,
            end,
        });
        self.plies.push(row.ply);
        Ok(())
    }

    /// Reads a seat of game `game_id` (seats come in order: 1, 2, …; a seat
    /// of a game not read is skipped).
    pub(crate) fn push_seat(
        &mut self,
        game_id: &str,
        number: i64,
        name: String,
        token_sha256: &[u8],
    ) -> Result<(), BadRow> {
        let Some(&i) = self.index.get(game_id) else {
            return Ok(());
        };
        let seats = &mut self.games[i].game.seats;
        if number != seats.len() as i64 + 1 {
            return Err(BadRow(format!("game `{game_id}`: seats are not 1, 2, …")));
        }
        let token_sha256 = token_sha256
            .try_into()
            .map_err(|_| BadRow(format!("game `{game_id}`: bad token hash")))?;
        seats.push(SeatRow { name, token_sha256 });
        Ok(())
    }

    /// Reads a move of game `game_id` (moves come in ply order; a move of a
    /// game not read is skipped).
    pub(crate) fn push_move(&mut self, game_id: &str, row: MoveColumns) -> Result<(), BadRow> {
        let Some(&i) = self.index.get(game_id) else {
            return Ok(());
        };
        let bad = |what: String| BadRow(format!("game `{game_id}`: {what}"));
        let seat = row
            .seat
            .and_then(|n| u32::try_from(n).ok())
            .and_then(Seat::from_number)
            .ok_or_else(|| bad("bad seat".into()))?;
        self.games[i].moves.push(MoveRow {
            game_id: game_id.to_string(),
            ply: u32::try_from(row.ply).map_err(|_| bad(format!("move ply {}", row.ply)))?,
            seat,
            notation: row.notation,
            request_id: row.request_id,
            clock_ms: row.clock_ms.max(0) as u64,
            played_at_ms: row.played_at_ms,
            draw_offers: SeatSet::EMPTY,
            substituted: row.substituted,
            lag: MoveLag {
                charged_ms: row.charged_ms.map_or(0, |v| v.max(0) as u64),
                compensated_ms: row.compensated_ms.map_or(0, |v| v.max(0) as u64),
                lag_ms: row.lag_ms.map(|v| v.max(0) as u64),
            },
        });
        Ok(())
    }

    /// Whether a game read is still in progress (only those can have
    /// moves in the journal: a game's journaled moves are folded in the
    /// transaction that ends it).
    pub(crate) fn any_in_progress(&self) -> bool {
        self.games.iter().any(|g| g.end.is_none())
    }

    /// Reads a journaled move of game `game_id` (journal order): a move
    /// after the game's folded ones, which also makes the game's ply and
    /// standing draw offer (`draw_offers`, as the column stores them). A
    /// move of a game not read is skipped.
    pub(crate) fn push_journaled(
        &mut self,
        game_id: &str,
        row: MoveColumns,
        draw_offers: Option<&str>,
    ) -> Result<(), BadRow> {
        let Some(&i) = self.index.get(game_id) else {
            return Ok(());
        };
        let offers = seats_of_text(draw_offers.unwrap_or(""))
            .map_err(|e| BadRow(format!("game `{game_id}`: journal draw offers: {e}")))?;
        let ply = row.ply;
        self.push_move(game_id, row)?;
        self.plies[i] = ply;
        self.games[i].draw_offers = offers;
        Ok(())
    }

    /// The games, each checked: moves and the game's ply are written in
    /// one transaction, so a mismatch means the rows were changed behind
    /// the server's back.
    pub(crate) fn finish(self) -> Result<Vec<StoredGame>, BadRow> {
        for (game, ply) in self.games.iter().zip(&self.plies) {
            let moves = &game.moves;
            if *ply != moves.len() as i64
                || moves
                    .iter()
                    .enumerate()
                    .any(|(i, m)| m.ply as usize != i + 1)
            {
                return Err(BadRow(format!(
                    "game `{}`: {} stored moves do not make its ply {ply}",
                    game.game.id,
                    moves.len()
                )));
            }
        }
        Ok(self.games)
    }
}

/// The clock mode a stored text names.
fn clock_mode(text: &str) -> Option<&'static str> {
    match text {
        "none" => Some("none"),
        "fischer" => Some("fischer"),
        "per_move" => Some("per_move"),
        _ => None,
    }
}

/// How the game of `row` left play (`None`: in progress).
fn end_of(row: &GameColumns) -> Result<Option<OutcomeRow>, BadRow> {
    let bad = |what: String| BadRow(format!("game `{}`: {what}", row.id));
    let status = match row.status.as_str() {
        "in_progress" => return Ok(None),
        "finished" => "finished",
        "expired" => "expired",
        other => return Err(bad(format!("status `{other}`"))),
    };
    Ok(Some(OutcomeRow {
        game_id: row.id.clone(),
        status,
        winners: seats_of_text(row.winners.as_deref().unwrap_or(""))
            .map_err(|e| bad(format!("winners: {e}")))?,
        scores: scores_of_text(row.scores.as_deref().unwrap_or(""))
            .map_err(|e| bad(format!("scores: {e}")))?,
        reason: row.reason.clone().unwrap_or_default(),
        ply: u32::try_from(row.ply).map_err(|_| bad(format!("ply {}", row.ply)))?,
        at_ms: row.finished_at_ms.unwrap_or(0),
        failure_ending: row.failure_ending.clone(),
    }))
}

/// 32 bytes as lowercase hex (how SQLite stores hashes and sealed seeds).
pub(crate) fn hex(bytes: &[u8; 32]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The 32 bytes a hex text names (`None`: not 64 hex digits).
pub(crate) fn unhex(text: &str) -> Option<[u8; 32]> {
    let bytes = text.as_bytes();
    if bytes.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in bytes.chunks_exact(2).enumerate() {
        let hi = (pair[0] as char).to_digit(16)?;
        let lo = (pair[1] as char).to_digit(16)?;
        out[i] = (hi * 16 + lo) as u8;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn columns(id: &str) -> GameColumns {
        GameColumns {
            id: id.into(),
            game: "punct".into(),
            variant: "standard".into(),
            clock_mode: "fischer".into(),
            clock_initial_ms: Some(60_000),
            clock_increment_ms: Some(-5),
            labels: r#"{"a":"b"}"#.into(),
            status: "finished".into(),
            winners: Some("2".into()),
            scores: Some("3,4".into()),
            ply: 1,
            ..GameColumns::default()
        }
    }

    fn one_move(ply: i64) -> MoveColumns {
        MoveColumns {
            ply,
            seat: Some(1),
            notation: "a1".into(),
            ..MoveColumns::default()
        }
    }

    #[test]
    fn a_game_is_assembled_from_its_rows() {
        let secret = ServerSecret::random();
        let mut rows = Assembly::new();
        rows.push_game(columns("g"), &secret).unwrap();
        rows.push_seat("g", 1, "white".into(), &[7; 32]).unwrap();
        rows.push_seat("g", 2, "black".into(), &[8; 32]).unwrap();
        rows.push_seat("other", 1, "x".into(), &[8; 32]).unwrap();
        rows.push_move("g", one_move(1)).unwrap();
        let games = rows.finish().unwrap();
        let g = &games[0];
        assert_eq!(g.game.clock.mode, "fischer");
        assert_eq!(g.game.clock.initial_ms, 60_000);
        assert_eq!(g.game.clock.increment_ms, 0, "a negative time reads as 0");
        assert_eq!(g.game.labels["a"], "b");
        assert_eq!(g.game.seats.len(), 2);
        assert_eq!(g.moves[0].seat, Seat::from_number(1).unwrap());
        let end = g.end.as_ref().unwrap();
        assert_eq!(
            end.winners,
            SeatSet::from_iter([Seat::from_number(2).unwrap()])
        );
        assert_eq!(end.scores, vec![3, 4]);
    }

    #[test]
    fn damaged_rows_name_their_game_and_what_is_wrong() {
        let secret = ServerSecret::random();
        let mut bad_mode = columns("g");
        bad_mode.clock_mode = "sundial".into();
        let e = Assembly::new().push_game(bad_mode, &secret).unwrap_err();
        assert_eq!(e.0, "game `g`: clock mode `sundial`");
        let mut short_seed = columns("g");
        short_seed.seed = Some(vec![1, 2, 3]);
        let e = Assembly::new().push_game(short_seed, &secret).unwrap_err();
        assert_eq!(e.0, "game `g`: bad seed");
        let mut rows = Assembly::new();
        rows.push_game(columns("g"), &secret).unwrap();
        let e = rows.push_seat("g", 2, "x".into(), &[0; 32]).unwrap_err();
        assert_eq!(e.0, "game `g`: seats are not 1, 2, …");
        let e = rows.finish().unwrap_err();
        assert_eq!(e.0, "game `g`: 0 stored moves do not make its ply 1");
    }

    #[test]
    fn a_sealed_seed_reads_back_as_written() {
        let secret = ServerSecret::random();
        let mut game = columns("g");
        game.status = "in_progress".into();
        game.ply = 0;
        let row = GameRow {
            id: "g".into(),
            game: String::new(),
            variant: String::new(),
            options: String::new(),
            seats: Vec::new(),
            setup: Some(Setup {
                seed: [9; 32],
                supplied: true,
            }),
            clock: ClockRow::default(),
            labels: BTreeMap::new(),
            forfeits: false,
            created_at_ms: 0,
        };
        let sealed = sealed_seed(&row, &secret).unwrap();
        assert_ne!(sealed, [9; 32], "sealed at rest");
        assert_eq!(unhex(&hex(&sealed)), Some(sealed));
        game.seed = Some(sealed.to_vec());
        game.seed_supplied = true;
        let mut rows = Assembly::new();
        rows.push_game(game, &secret).unwrap();
        let games = rows.finish().unwrap();
        assert_eq!(games[0].game.setup, row.setup);
        assert!(games[0].end.is_none());
    }
}
