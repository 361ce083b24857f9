//! `client watch`: follows a game from its first move, keeping a local
//! engine copy so each board drawn is exactly the position after that move;
//! moves before the current ply are replayed silently. A resync snapshot
//! (this watcher fell behind) is caught up from the exported record.

use std::io::Write as _;

use tokio_stream::StreamExt as _;

use super::display::{outcome_text, seat_title};
use super::{Connection, refused};
use crate::games::punct::{Game, GameRecord, RuleOptions, render};
use crate::service::grpc::pb::referee::v1 as pb;
use crate::tools::rpc;

/// Prints the board after each move of `game_id` until the game ends.
pub async fn run(c: &mut Connection, game_id: &str) -> Result<(), String> {
    let now = rpc::get_game(&mut c.client, game_id)
        .await
        .map_err(refused)?;
    let options = server_record(&mut c.client, game_id).await?.options;
    let mut follower = Follower::new(options, now.ply);
    let request = pb::WatchGameRequest {
        game_id: game_id.to_string(),
        from_ply: Some(0),
        // A spectator's stream: watching does not mark a seat present.
        token: String::new(),
    };
    let mut stream = c
        .client
        .watch_game(request)
        .await
        .map_err(refused)?
        .into_inner();
    while let Some(item) = stream.next().await {
        let item = item.map_err(refused)?;
        match item.item {
            Some(pb::watch_game_response::Item::Snapshot(snap)) if item.resync => {
                let record = server_record(&mut c.client, game_id).await?;
                follower.resync(&record, snap.ply)?;
            }
            Some(pb::watch_game_response::Item::Snapshot(_)) => follower.start(),
            Some(pb::watch_game_response::Item::Presence(p)) => follower.presence(&p),
            // A PÜNCT game has no rounds.
            Some(pb::watch_game_response::Item::RoundOver(_)) => {}
            Some(pb::watch_game_response::Item::Event(event)) => match follower.event(event)? {
                Followed::GameOver => return Ok(()),
                Followed::Playing => {}
            },
            None => {}
        }
    }
    Err("the server ended the stream before the game ended".into())
}

/// The game's record as the server exports it, read back.
async fn server_record(client: &mut rpc::Client, game_id: &str) -> Result<GameRecord, String> {
    let record = rpc::export_record(client, game_id).await.map_err(refused)?;
    GameRecord::parse_with_lines(&record)
        .map(|(r, _)| r)
        .map_err(|e| format!("the server's record: {e}"))
}

/// Whether the game goes on after an event.
#[derive(Debug, PartialEq, Eq)]
enum Followed {
    /// More moves to come.
    Playing,
    /// The game-over event came: the watch is done.
    GameOver,
}

/// The local copy of the watched game, and what has been printed of it.
struct Follower {
    options: RuleOptions,
    local: Game,
    /// The game's ply when the watch began: earlier moves are replayed
    /// without a board.
    began_at: u32,
    shown_start: bool,
    out: std::io::Stdout,
}

impl Follower {
    fn new(options: RuleOptions, began_at: u32) -> Follower {
        Follower {
            options,
            local: Game::new(options),
            began_at,
            shown_start: false,
            out: std::io::stdout(),
        }
    }

    /// The first snapshot: the empty board, if the game had not begun.
    fn start(&mut self) {
        if self.began_at == 0 && !self.shown_start {
            self.print_board();
        }
        self.shown_start = true;
    }

    /// A resync snapshot at `ply`: the local copy rebuilt from the record.
    fn resync(&mut self, record: &GameRecord, ply: u32) -> Result<(), String> {
        self.local = Game::new(self.options);
        for m in record.moves.iter().take(ply as usize) {
            self.local
                .play_notation(&m.to_string())
                .map_err(|e| format!("replaying `{m}`: {e}"))?;
        }
        let _ = writeln!(self.out, "(resynchronised at ply {ply})");
        self.shown_start = true;
        Ok(())
    }

    /// `(players: white connected, black away)`.
    fn presence(&mut self, presence: &pb::Presence) {
        let seats: Vec<String> = rpc::seats_connected(presence)
            .iter()
            .enumerate()
            .map(|(seat, &here)| {
                let state = if here { "connected" } else { "away" };
                format!("{} {state}", rpc::seat_name(seat))
            })
            .collect();
        let _ = writeln!(self.out, "(players: {})", seats.join(", "));
        let _ = self.out.flush();
    }

    /// A move (followed, and drawn if new) or the game's end (printed).
    fn event(&mut self, event: pb::GameEvent) -> Result<Followed, String> {
        match event.kind {
            Some(pb::game_event::Kind::MoveApplied(applied)) => {
                let text = applied
                    .r#move
                    .as_ref()
                    .map(rpc::notation_of)
                    .unwrap_or_default();
                self.local
                    .play_notation(text)
                    .map_err(|e| format!("following `{text}`: {e}"))?;
                if event.ply >= self.began_at {
                    let seat = seat_title(rpc::seat_index(applied.seat));
                    let _ = writeln!(self.out, "\nply {}: {seat} played {text}", event.ply);
                    self.print_board();
                }
                Ok(Followed::Playing)
            }
            Some(pb::game_event::Kind::GameOver(over)) => {
                if event.ply < self.began_at {
                    let _ = self
                        .out
                        .write_all(render::ascii(self.local.position()).as_bytes());
                }
                let outcome = over.outcome.unwrap_or_default();
                let _ = writeln!(self.out, "game over: {}", outcome_text(&outcome));
                let _ = self.out.flush();
                Ok(Followed::GameOver)
            }
            None => Ok(Followed::Playing),
        }
    }

    fn print_board(&mut self) {
        let _ = self
            .out
            .write_all(render::ascii(self.local.position()).as_bytes());
        let _ = self.out.flush();
    }
}
