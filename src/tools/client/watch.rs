//! `client watch`: follows a game from its first move, keeping a local
//! engine copy so each board drawn is exactly the position after that move;
//! moves before the current ply are replayed silently. A resync snapshot
//! (this watcher fell behind) is caught up from the exported record.
//! PÜNCT follows with its own engine; any other game through the
//! game-agnostic trait and its entry of the registry of games
//! (a seeded game whose seed is still secret cannot be followed locally:
//! its boards are then the server's, read after each move).

use std::io::Write as _;

use tokio_stream::StreamExt as _;

use super::display::{outcome_text, outcome_text_in, seat_title, seat_title_in};
use super::{Connection, refused};
use crate::games::punct::{Engine, GameRecord, RuleOptions, render};
use crate::games::{Game, Setup, Viewer};
use crate::service::grpc::convert;
use crate::service::grpc::games::{Part, WIRE_GAMES, WireGame};
use crate::service::grpc::pb::referee::v1 as pb;
use crate::tools::games::game_of_wire;
use crate::tools::rpc;

/// Prints the board after each move of `game_id` until the game ends.
pub(super) async fn run(c: &mut Connection, game_id: &str) -> Result<(), String> {
    let now = rpc::get_game(&mut c.client, game_id)
        .await
        .map_err(refused)?;
    if !matches!(
        now.rules.as_ref().and_then(|r| r.game.as_ref()),
        None | Some(pb::game_rules::Game::Punct(_))
    ) {
        return watch_any(c, game_id, &now).await;
    }
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
async fn server_record(client: &mut rpc::KeyedClient, game_id: &str) -> Result<GameRecord, String> {
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
    local: Engine,
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
            local: Engine::new(options),
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
        self.local = Engine::new(self.options);
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
        let line = presence_line(presence, |seat| rpc::seat_name(seat).to_string());
        let _ = writeln!(self.out, "{line}");
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

/// The local copy of a watched game of any game but PÜNCT, if it can be
/// followed (its setup is known).
fn local_game(now: &pb::Game) -> Result<Option<Box<dyn Game>>, String> {
    let rules =
        convert::game_rules(now.rules.as_ref(), &Part::Request).map_err(|e| e.to_string())?;
    if !rules.rules().seeded() {
        return Ok(Some(rules.rules().start(None)));
    }
    let revealed = now
        .setup
        .as_ref()
        .and_then(|s| crate::games::parse_seed(&s.seed));
    Ok(revealed.map(|seed| {
        rules.rules().start(Some(Setup {
            seed,
            supplied: true,
        }))
    }))
}

/// [`run`] for any game but PÜNCT.
async fn watch_any(c: &mut Connection, game_id: &str, now: &pb::Game) -> Result<(), String> {
    let mut follower = AnyFollower::new(now)?;
    let request = pb::WatchGameRequest {
        game_id: game_id.to_string(),
        from_ply: Some(0),
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
            Some(pb::watch_game_response::Item::Snapshot(snap)) => {
                follower.snapshot(&snap, item.resync);
            }
            Some(pb::watch_game_response::Item::Event(event)) => {
                match follower.event(c, game_id, event).await? {
                    Followed::GameOver => return Ok(()),
                    Followed::Playing => {}
                }
            }
            Some(pb::watch_game_response::Item::Presence(p)) => follower.presence(&p),
            Some(pb::watch_game_response::Item::RoundOver(round)) => follower.round_over(&round),
            None => {}
        }
        let _ = follower.out.flush();
    }
    Err("the server ended the stream before the game ended".into())
}

/// The watched game of any game but PÜNCT: its local copy when it can be
/// followed, and what has been printed of it.
struct AnyFollower {
    tool: &'static dyn WireGame,
    names: Vec<String>,
    /// `None` while the game cannot be followed locally (its seed is still
    /// secret) or after a resync: boards are then the server's.
    local: Option<Box<dyn Game>>,
    /// The game's ply when the watch began: earlier moves are followed
    /// without a board.
    began_at: u32,
    out: std::io::Stdout,
}

impl AnyFollower {
    fn new(now: &pb::Game) -> Result<AnyFollower, String> {
        Ok(AnyFollower {
            tool: game_of_wire(now.rules.as_ref()),
            names: rpc::seat_names_of(now),
            local: local_game(now)?,
            began_at: now.ply,
            out: std::io::stdout(),
        })
    }

    /// A snapshot: the first draws the board if the game had not begun; a
    /// resync drops the local copy (this watcher fell behind).
    fn snapshot(&mut self, snap: &pb::Game, resync: bool) {
        if resync {
            self.local = None;
            let _ = writeln!(self.out, "(resynchronised at ply {})", snap.ply);
        } else if self.began_at == 0
            && let Some(state) = &snap.state
        {
            let _ = self.out.write_all(rpc::picture_of(state).as_bytes());
        }
    }

    /// A move (followed, and drawn if new) or the game's end (printed).
    async fn event(
        &mut self,
        c: &mut Connection,
        game_id: &str,
        event: pb::GameEvent,
    ) -> Result<Followed, String> {
        match event.kind {
            Some(pb::game_event::Kind::MoveApplied(applied)) => {
                self.follow(&applied)?;
                if event.ply >= self.began_at {
                    self.print_move(c, game_id, event.ply, &applied).await?;
                }
                Ok(Followed::Playing)
            }
            Some(pb::game_event::Kind::GameOver(over)) => {
                let outcome = over.outcome.unwrap_or_default();
                let _ = writeln!(
                    self.out,
                    "game over: {}",
                    outcome_text_in(&self.names, &outcome)
                );
                let _ = self.out.flush();
                Ok(Followed::GameOver)
            }
            None => Ok(Followed::Playing),
        }
    }

    /// Plays a move on the local copy, if there is one.
    fn follow(&mut self, applied: &pb::MoveApplied) -> Result<(), String> {
        let Some(game) = self.local.as_mut() else {
            return Ok(());
        };
        let text = applied
            .r#move
            .as_ref()
            .map(rpc::notation_of)
            .unwrap_or_default()
            .to_string();
        let input = self
            .tool
            .kind()
            .notation(&text)
            .ok_or_else(|| format!("following `{text}`: not a move"))?;
        game.play(&input)
            .map_err(|e| format!("following `{text}`: {e}"))?;
        Ok(())
    }

    /// `ply N: <seat> played <move>` and the board after it: the local
    /// copy's, or the server's when there is none.
    async fn print_move(
        &mut self,
        c: &mut Connection,
        game_id: &str,
        ply: u32,
        applied: &pb::MoveApplied,
    ) -> Result<(), String> {
        let seat = seat_title_in(&self.names, rpc::seat_index(applied.seat));
        let played = applied
            .r#move
            .as_ref()
            .map(rpc::played_text)
            .unwrap_or_default();
        let _ = writeln!(self.out, "\nply {ply}: {seat} played {played}");
        let picture = match self.local.as_ref() {
            Some(game) => self.tool.kind().picture(&game.snapshot(Viewer::Spectator)),
            None => {
                let game = rpc::get_game(&mut c.client, game_id)
                    .await
                    .map_err(refused)?;
                game.state
                    .as_ref()
                    .map(|s| rpc::picture_of(s).to_string())
                    .unwrap_or_default()
            }
        };
        let _ = self.out.write_all(picture.as_bytes());
        Ok(())
    }

    /// `(players: Alice connected, Bob away)`.
    fn presence(&mut self, presence: &pb::Presence) {
        let names = &self.names;
        let line = presence_line(presence, |seat| {
            names.get(seat).map_or("a seat", String::as_str).to_string()
        });
        let _ = writeln!(self.out, "{line}");
    }

    /// A round's end (Punto): its summary, when the game has one.
    fn round_over(&mut self, round: &pb::RoundOver) {
        let summary = round
            .game
            .as_ref()
            .and_then(|game| WIRE_GAMES.iter().find_map(|g| g.round_over_summary(game)));
        if let Some(summary) = summary {
            let _ = writeln!(self.out, "{summary}");
        }
    }
}

/// `(players: white connected, black away)`, each seat named by `name`.
fn presence_line(presence: &pb::Presence, name: impl Fn(usize) -> String) -> String {
    let seats: Vec<String> = rpc::seats_connected(presence)
        .iter()
        .enumerate()
        .map(|(seat, &here)| {
            let state = if here { "connected" } else { "away" };
            format!("{} {state}", name(seat))
        })
        .collect();
    format!("(players: {})", seats.join(", "))
}
