//! One tournament game, in steps of one job each: create it on the referee
//! (`create`), seat the bots (`seat_players`, one per seat), play turns
//! until the game ends or a bot forfeits (`Table::play`), then read the
//! result, tell the bots, and keep the record (`finish`).

use std::path::PathBuf;

use super::{Client, Config, GameResult, Pairing, TournamentError};
use crate::service::grpc::pb::referee::v1 as pb;
use crate::tools::bots::{Answer, Player, Turn};
use crate::tools::games::{ToolGame, ToolRules};
use crate::tools::rpc::{self, NewGame, SeatTokens};

/// Plays one game to its end and exports its record.
pub async fn play_game(
    mut client: Client,
    config: &Config,
    pairing: Pairing,
) -> Result<GameResult, TournamentError> {
    let rules = game_rules(config, pairing);
    let created = create(&mut client, config, &rules, pairing).await?;
    let mut table = Table {
        client,
        game_id: created.id().to_string(),
        tokens: created.tokens,
        players: seat_players(config, &rules, pairing),
        history: Vec::new(),
        game: rules.game(),
        seats: rules.seat_names(),
    };
    let forfeit = table.play(config, pairing).await?;
    finish(table, config, pairing, forfeit).await
}

/// The rules of game `pairing`: the tournament's, with a seed of the
/// game's own when they are seeded and none was given (from the
/// tournament's seed and the game's number).
fn game_rules(config: &Config, pairing: Pairing) -> ToolRules {
    config.rules.with_seed_if_needed(|| {
        use sha2::Digest as _;
        let mut hash = sha2::Sha256::new();
        hash.update(b"tournament/setup/v1");
        hash.update(config.seed.to_be_bytes());
        hash.update(pairing.number.to_be_bytes());
        hash.finalize().into()
    })
}

/// Creates the game on the referee, labelled with the tournament, the round
/// and the bots (by the game's names of their seats).
async fn create(
    client: &mut Client,
    config: &Config,
    rules: &ToolRules,
    pairing: Pairing,
) -> Result<NewGame, TournamentError> {
    let seats = rules.seat_names();
    let mut labels: std::collections::HashMap<String, String> = [
        ("tournament", config.name.clone()),
        ("round", pairing.number.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    for (seat, &bot) in pairing.seats().iter().enumerate() {
        let name = seats.get(seat).copied().unwrap_or("seat");
        labels.insert(name.to_string(), config.bots[bot].name.clone());
    }
    let request = rpc::create_request_for(rules, labels, config.time_control);
    Ok(rpc::create_game(client, request).await?)
}

/// A fresh player per seat, in seat order. Each side's choices depend only
/// on the seed, the game and the seat.
fn seat_players(config: &Config, rules: &ToolRules, pairing: Pairing) -> Vec<Player> {
    let seats = pairing.seats();
    let n = seats.len() as u64;
    seats
        .iter()
        .enumerate()
        .map(|(seat, &bot)| {
            let seed = config
                .seed
                .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                .wrapping_add(u64::from(pairing.number) * n + seat as u64);
            config.bots[bot].player(seed, rules, config.move_timeout)
        })
        .collect()
}

/// A game in play: the referee, the seats' tokens and players, the moves so
/// far.
struct Table {
    client: Client,
    game_id: String,
    tokens: SeatTokens,
    players: Vec<Player>,
    history: Vec<String>,
    /// What the tools know of the game played.
    game: &'static ToolGame,
    /// Its seats' names, seat order.
    seats: &'static [&'static str],
}

/// The turn the referee waits for.
struct Pending {
    /// The ply the move answers.
    ply: u32,
    /// The seat to move.
    seat: usize,
    /// The legal moves, notation.
    legal: Vec<String>,
    /// With a clock, the mover's time left.
    clock_ms: Option<u64>,
}

/// What the referee made of a bot's move.
enum Submitted {
    /// Played, in canonical notation.
    Played(String),
    /// The game ended while the bot thought (its flag fell).
    GameOver,
    /// Refused: the bot forfeits, for this reason.
    Refused(String),
}

impl Table {
    /// Plays turns until the game ends; the forfeit, if a bot lost that way.
    async fn play(
        &mut self,
        config: &Config,
        pairing: Pairing,
    ) -> Result<Option<String>, TournamentError> {
        while let Some(pending) = self.next_turn(config.time_control.is_some()).await? {
            let seat = pending.seat;
            // A game whose bots need their seat's view: read with its token.
            let view = if self.game.bots_read_state {
                let token = self.tokens.get(seat).unwrap_or_default();
                rpc::get_game_as(&mut self.client, &self.game_id, token)
                    .await?
                    .state
            } else {
                None
            };
            let turn = Turn {
                game_id: &self.game_id,
                ply: pending.ply,
                seat: seat_name(self.seats, seat),
                history: &self.history,
                legal: &pending.legal,
                clock_ms: pending.clock_ms,
                state: view.as_ref(),
            };
            let why = match self.players[seat].choose(&turn).await {
                Ok(Answer::Move(text)) => match self.submit(seat, &text, pending.ply).await? {
                    Submitted::Played(notation) => {
                        self.history.push(notation);
                        continue;
                    }
                    Submitted::GameOver => return Ok(None),
                    Submitted::Refused(why) => why,
                },
                Ok(Answer::Resign) => "resigned".to_string(),
                Err(e) => e.to_string(),
            };
            let bot = &config.bots[pairing.seats()[seat]].name;
            let forfeit = format!("{bot} ({}): {why}", seat_name(self.seats, seat));
            return self.forfeit(seat, forfeit).await;
        }
        Ok(None)
    }

    /// The legal moves and, in a timed game, the mover's clock; `None` once
    /// the game is over.
    async fn next_turn(&mut self, timed: bool) -> Result<Option<Pending>, TournamentError> {
        let legal = rpc::legal_moves(&mut self.client, &self.game_id).await?;
        let Some(seat) = legal.to_move else {
            return Ok(None);
        };
        // With a clock, the mover's time left, as the referee reads it now.
        let clock_ms = if timed {
            let game = rpc::get_game(&mut self.client, &self.game_id).await?;
            if game.status == pb::GameStatus::Finished as i32 {
                return Ok(None);
            }
            rpc::remaining_ms(&game.clock.unwrap_or_default(), seat)
        } else {
            None
        };
        Ok(Some(Pending {
            ply: legal.ply,
            seat,
            legal: legal.notations,
            clock_ms,
        }))
    }

    /// Submits the bot's move `text` for `seat` at `ply`.
    async fn submit(
        &mut self,
        seat: usize,
        text: &str,
        ply: u32,
    ) -> Result<Submitted, TournamentError> {
        let token = self.tokens.get(seat).unwrap_or_default();
        let mv = (self.game.wire_move)(text);
        match rpc::submit_move(&mut self.client, &self.game_id, token, mv, ply, None).await {
            Ok(reply) => Ok(Submitted::Played(
                reply
                    .r#move
                    .as_ref()
                    .map(rpc::notation_of)
                    .unwrap_or_default()
                    .to_string(),
            )),
            // Its flag fell while it thought: nothing to forfeit.
            Err(s)
                if s.code() == tonic::Code::FailedPrecondition
                    && rpc::refusal_reason(&s).as_deref() == Some("GAME_OVER") =>
            {
                Ok(Submitted::GameOver)
            }
            Err(s) if s.code() == tonic::Code::FailedPrecondition => Ok(Submitted::Refused(
                format!("illegal move `{text}`: {}", s.message()),
            )),
            Err(s) if s.code() == tonic::Code::InvalidArgument => Ok(Submitted::Refused(format!(
                "unreadable move `{text}`: {}",
                s.message()
            ))),
            Err(s) => Err(s.into()),
        }
    }

    /// Resigns `seat`'s game: the forfeit stands, unless the game was
    /// already over (a flag fell meanwhile: the clock's verdict stands).
    async fn forfeit(
        &mut self,
        seat: usize,
        forfeit: String,
    ) -> Result<Option<String>, TournamentError> {
        let token = self.tokens.get(seat).unwrap_or_default();
        match rpc::resign(&mut self.client, &self.game_id, token).await {
            Err(s) if s.code() == tonic::Code::FailedPrecondition => Ok(None),
            Err(s) => Err(s.into()),
            Ok(()) => Ok(Some(forfeit)),
        }
    }
}

/// Reads the ended game, tells the bots its result, and keeps its record.
async fn finish(
    mut table: Table,
    config: &Config,
    pairing: Pairing,
    forfeit: Option<String>,
) -> Result<GameResult, TournamentError> {
    let game = rpc::get_game(&mut table.client, &table.game_id).await?;
    let outcome = game.outcome.unwrap_or_default();
    let line = result_line(table.seats, &outcome);
    for player in table.players {
        player.finish(&line).await;
    }
    let record = rpc::export_record(&mut table.client, &table.game_id).await?;
    let record_path = write_record(config, pairing, &record)?;
    let points = seat_points(table.seats.len(), &outcome);
    Ok(GameResult {
        pairing,
        game_id: table.game_id,
        white_points: points.first().copied().unwrap_or(0.0),
        points,
        reason: outcome.reason,
        plies: game.ply,
        forfeit,
        record,
        record_path,
    })
}

/// Every seat's points: the game's one point shared by its winners (1 to a
/// single winner, ½ to each of two), or by all `seats` when nobody won (½
/// each in a two-seat draw).
fn seat_points(seats: usize, outcome: &pb::Outcome) -> Vec<f64> {
    let winners: Vec<usize> = if outcome.draw {
        Vec::new()
    } else {
        outcome
            .winners
            .iter()
            .filter_map(|&w| rpc::seat_index(w))
            .filter(|&w| w < seats)
            .collect()
    };
    (0..seats)
        .map(|seat| {
            if winners.is_empty() {
                1.0 / seats as f64
            } else if winners.contains(&seat) {
                1.0 / winners.len() as f64
            } else {
                0.0
            }
        })
        .collect()
}

/// The name of `seat` among `seats`.
fn seat_name(seats: &[&'static str], seat: usize) -> &'static str {
    seats.get(seat).copied().unwrap_or("another seat")
}

/// The result as the bots are told it: `white CONNECTION`, `draw MOVE_LIMIT`
/// (Dots: `red GROUND`); several winners (a team, the seats left after a
/// resignation) joined by commas: `red-blue-1,red-blue-2 ROUNDS_WON`.
fn result_line(seats: &[&'static str], outcome: &pb::Outcome) -> String {
    let winners: Vec<&str> = outcome
        .winners
        .iter()
        .filter_map(|&w| rpc::seat_index(w))
        .map(|w| seat_name(seats, w))
        .collect();
    if outcome.draw || winners.is_empty() {
        format!("draw {}", outcome.reason)
    } else {
        format!("{} {}", winners.join(","), outcome.reason)
    }
}

/// Writes the record to the records folder, if there is one:
/// `0001-WHITE-vs-BLACK.txt` (one name per seat).
fn write_record(
    config: &Config,
    pairing: Pairing,
    record: &str,
) -> Result<Option<PathBuf>, TournamentError> {
    let Some(dir) = &config.records else {
        return Ok(None);
    };
    let names: Vec<String> = pairing
        .seats()
        .iter()
        .map(|&bot| file_safe(&config.bots[bot].name))
        .collect();
    let path = dir.join(format!("{:04}-{}.txt", pairing.number, names.join("-vs-")));
    std::fs::write(&path, record)?;
    Ok(Some(path))
}

/// A bot's name as a file name: anything but letters, digits, `-_.` as `_`.
fn file_safe(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}
