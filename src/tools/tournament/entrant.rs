//! A local bot as an entrant of a tournament held by a referee
//! (docs/TOURNAMENTS.md, "Entrants"): it opens its `ConnectEntrant` stream
//! with its key and plays every game the referee sends it, one task per
//! game, on the normal `RefereeService` — `WatchGame` with its seat token
//! from ply 0 (so a game resumed after a reconnection is followed from its
//! first move), `ListLegalMoves` and `SubmitMove` on its turns. A bot that
//! fails, answers an illegal move or resigns gives the game up (`Resign`),
//! as in the local runner. Built-in and external-program bots alike
//! ([`BotSpec`]).
//!
//! With [`EntrantBot::resume_for`], a bot rides out a replica of a cluster
//! dying or a tournament or game changing owner (docs/TOURNAMENTS.md, "In
//! a cluster"): a stream that breaks, or a call the referee cannot answer
//! now (`UNAVAILABLE`, …), is made again — the entrant reconnects and gets
//! its games in progress again, each game is followed again from ply 0 —
//! until nothing but such failures has happened for that long.

use std::time::{Duration, Instant};

use tokio::task::JoinSet;
use tokio_stream::StreamExt as _;
use tonic::Status;
use tonic::transport::Channel;

use crate::service::grpc::convert;
use crate::service::grpc::games::Part;
use crate::service::grpc::pb::referee::v1 as pb;
use crate::service::grpc::pb::referee::v1::tournament_service_client::TournamentServiceClient;
use crate::tools::bots::{Answer, BotSpec, Turn};
use crate::tools::games::ToolRules;
use crate::tools::rpc::{self, Client};

/// How an entrant plays.
#[derive(Debug, Clone)]
pub struct EntrantBot {
    /// The bot.
    pub spec: BotSpec,
    /// Seed of a built-in bot's choices (with each game's number).
    pub seed: u64,
    /// Longest think of an external bot per move.
    pub move_timeout: Duration,
    /// Whether the bot is told its clock (the local runner hides the
    /// clock it had to give the games when none was asked for).
    pub tell_clock: bool,
    /// The base of the games' seeds, when the tournament supplies them
    /// (`setup_seed_base`): the bot may then follow its game's setup.
    pub setup_seed_base: Option<u64>,
    /// How long the bot keeps reconnecting and calling again while the
    /// referee fails to answer (zero: the first failure ends its play).
    pub resume_for: Duration,
}

impl EntrantBot {
    /// A bot told its clock, without the games' seeds.
    pub fn new(spec: BotSpec, seed: u64, move_timeout: Duration) -> EntrantBot {
        EntrantBot {
            spec,
            seed,
            move_timeout,
            tell_clock: true,
            setup_seed_base: None,
            resume_for: Duration::ZERO,
        }
    }

    /// The bot, reconnecting for up to `patience` after a failure (see
    /// [`EntrantBot::resume_for`]).
    pub fn resuming(mut self, patience: Duration) -> EntrantBot {
        self.resume_for = patience;
        self
    }
}

/// The wait before a call is made again.
const RETRY_AFTER: Duration = Duration::from_millis(200);

/// The wait before the legal moves are asked for again when the answer is
/// behind the watch (the owner is applying the move the watch showed).
const BEHIND_RETRY: Duration = Duration::from_millis(10);

/// How long answers behind the watch are asked for again before the game
/// is followed again from its start (and asked again): far longer than an
/// owner takes to apply a stored move. (A replica that lost a game may
/// answer from its copy until its lease surely ran out: the bot keeps
/// following and asking until then.)
const BEHIND_FOR: Duration = Duration::from_secs(2);

/// How long failures in a row are ridden out.
struct Patience {
    limit: Duration,
    since: Option<Instant>,
}

impl Patience {
    fn new(limit: Duration) -> Patience {
        Patience { limit, since: None }
    }

    /// Whether to call again after `status`: a failure to reach the
    /// referee or to be answered now (not a refusal of the call), within the
    /// limit since the first of the failures in a row. Waits a moment first.
    async fn again(&mut self, status: &Status) -> bool {
        let transient = matches!(
            status.code(),
            tonic::Code::Unavailable
                | tonic::Code::Unknown
                | tonic::Code::Internal
                | tonic::Code::Cancelled
                | tonic::Code::DeadlineExceeded
        ) || rpc::refusal_reason(status).as_deref() == Some("ALREADY_CONNECTED");
        if self.limit.is_zero() || !transient {
            return false;
        }
        let since = *self.since.get_or_insert_with(Instant::now);
        if since.elapsed() >= self.limit {
            return false;
        }
        tokio::time::sleep(RETRY_AFTER).await;
        true
    }

    /// A call went through: failures start over.
    fn answered(&mut self) {
        self.since = None;
    }
}

/// What one game of an entrant came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeatReport {
    /// The game's number in the tournament.
    pub number: u32,
    /// The game id.
    pub game_id: String,
    /// Why the bot gave the game up, if it did.
    pub forfeit: Option<String>,
}

/// Plays as the entrant holding `key` until the tournament ends; returns
/// the end message and what each of its games came to.
pub async fn play_entrant(
    channel: Channel,
    key: String,
    bot: EntrantBot,
) -> Result<(pb::TournamentEnded, Vec<SeatReport>), Status> {
    let mut tournaments = TournamentServiceClient::new(channel.clone());
    let mut games: JoinSet<Result<SeatReport, Status>> = JoinSet::new();
    let mut started = std::collections::BTreeSet::new();
    let mut patience = Patience::new(bot.resume_for);
    let ended = 'connect: loop {
        let connected = tournaments
            .connect_entrant(pb::ConnectEntrantRequest {
                entrant_key: key.clone(),
                tournament_id: String::new(),
            })
            .await;
        let mut stream = match connected {
            Ok(stream) => stream.into_inner(),
            Err(s) if patience.again(&s).await => continue,
            Err(s) => return Err(s),
        };
        while let Some(message) = stream.next().await {
            let message = match message {
                Ok(message) => message,
                // Reconnected, the games in progress come again.
                Err(s) if patience.again(&s).await => continue 'connect,
                Err(s) => return Err(s),
            };
            patience.answered();
            match message.event {
                // Sent again on a reconnection: one task per game.
                Some(pb::connect_entrant_response::Event::Game(assignment))
                    if started.insert(assignment.game_id.clone()) =>
                {
                    let client = Client::new(channel.clone());
                    games.spawn(play_seat(client, assignment, bot.clone()));
                }
                Some(pb::connect_entrant_response::Event::Game(_)) => {}
                Some(pb::connect_entrant_response::Event::Ended(end)) => break 'connect end,
                None => {}
            }
        }
        let early = Status::unavailable("the tournament stream ended early");
        if !patience.again(&early).await {
            return Err(early);
        }
    };
    let mut reports = Vec::new();
    while let Some(done) = games.join_next().await {
        match done {
            Ok(Ok(report)) => reports.push(report),
            Ok(Err(e)) => return Err(e),
            Err(e) => return Err(Status::internal(format!("game task: {e}"))),
        }
    }
    reports.sort_by_key(|r| r.number);
    Ok((ended, reports))
}

/// The turn state a seat's watch keeps.
struct Seat {
    history: Vec<String>,
    to_move: u32,
    ply: u32,
    clock: Option<pb::ClockState>,
}

/// Plays one seat of one game to its end.
#[allow(
    clippy::too_many_lines,
    reason = "one seat's game loop with its retries; to split into named steps"
)]
async fn play_seat(
    mut client: Client,
    a: pb::GameAssignment,
    bot: EntrantBot,
) -> Result<SeatReport, Status> {
    let rules = convert::game_rules(a.rules.as_ref(), &Part::Request)?;
    let seed = bot
        .setup_seed_base
        .filter(|_| rules.rules().seeded())
        .map(|base| crate::service::tournaments::game_seed(base, a.number));
    let rules = ToolRules { rules, seed };
    let game = rules.game();
    let seat_names = rules.seat_names();
    let seat_name = seat_names
        .get(a.seat.saturating_sub(1) as usize)
        .copied()
        .unwrap_or("seat");
    // As the local runner seeds it: the tournament's seed, the game, the
    // seat.
    let seats = seat_names.len() as u64;
    let seed = bot
        .seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(u64::from(a.number) * seats + u64::from(a.seat.saturating_sub(1)));
    let mut player = bot.spec.player(seed, &rules, bot.move_timeout);
    let report = |forfeit| SeatReport {
        number: a.number,
        game_id: a.game_id.clone(),
        forfeit,
    };
    let mut patience = Patience::new(bot.resume_for);
    // A call the referee could not answer now: the game is followed again
    // from its start (when the bot resumes), else its play ends.
    macro_rules! answered {
        ($call:expr, $again:lifetime) => {
            match $call {
                Ok(answer) => {
                    patience.answered();
                    answer
                }
                Err(s) if patience.again(&s).await => continue $again,
                Err(s) => return Err(s),
            }
        };
    }
    'watch: loop {
        let mut watch = answered!(
            client
                .watch_game(pb::WatchGameRequest {
                    game_id: a.game_id.clone(),
                    from_ply: Some(0),
                    token: a.seat_token.clone(),
                })
                .await,
            'watch
        )
        .into_inner();
        let mut seat = Seat {
            history: Vec::new(),
            to_move: 0,
            ply: 0,
            clock: None,
        };
        let mut answered: Option<u32> = None;
        while let Some(item) = watch.next().await {
            let item = answered!(item, 'watch);
            match item.item {
                Some(pb::watch_game_response::Item::Snapshot(g)) => {
                    if item.resync {
                        // Events were skipped: follow again from the start.
                        continue 'watch;
                    }
                    seat.to_move = g.to_move;
                    seat.ply = g.ply;
                    seat.clock = g.clock;
                }
                Some(pb::watch_game_response::Item::Event(e)) => match e.kind {
                    Some(pb::game_event::Kind::MoveApplied(m)) => {
                        seat.history.push(
                            m.r#move
                                .as_ref()
                                .map(rpc::notation_of)
                                .unwrap_or_default()
                                .to_string(),
                        );
                        seat.to_move = m.to_move;
                        seat.ply = e.ply;
                        seat.clock = e.clock;
                    }
                    Some(pb::game_event::Kind::GameOver(over)) => {
                        let outcome = over.outcome.unwrap_or_default();
                        player.finish(&result_line(seat_names, &outcome)).await;
                        return Ok(report(None));
                    }
                    None => {}
                },
                _ => {}
            }
            if seat.to_move != a.seat || answered == Some(seat.ply) {
                continue;
            }
            answered = Some(seat.ply);
            // An answer behind the watch is asked for again: in a cluster
            // the watch may come from a follower, which shows a move once
            // it is stored, a moment before its owner has applied it and
            // answers from it (docs/CLUSTER.md, "Watchers on any replica").
            // Nothing else would come to end the wait: it is this seat's
            // turn. Past a while the game is followed again from its start.
            let mut behind_since: Option<Instant> = None;
            let legal = loop {
                let legal = answered!(
                    client
                        .list_legal_moves(pb::ListLegalMovesRequest {
                            game_id: a.game_id.clone(),
                            seat: 0,
                            token: a.seat_token.clone(),
                            view: pb::MovesView::Notation as i32,
                        })
                        .await,
                    'watch
                )
                .into_inner();
                if legal.ply >= seat.ply {
                    break legal;
                }
                if behind_since.get_or_insert_with(Instant::now).elapsed() >= BEHIND_FOR {
                    continue 'watch;
                }
                tokio::time::sleep(BEHIND_RETRY).await;
            };
            if legal.ply != seat.ply || legal.to_move != a.seat {
                // The watch is catching up on moves already played.
                continue;
            }
            let state = if game.kind().bots_read_state() {
                answered!(
                    rpc::get_game_as(&mut client, &a.game_id, &a.seat_token).await,
                    'watch
                )
                .state
            } else {
                None
            };
            let clock_ms = seat
                .clock
                .as_ref()
                .filter(|_| bot.tell_clock)
                .and_then(|c| rpc::remaining_ms(c, a.seat as usize - 1));
            let turn = Turn {
                game_id: &a.game_id,
                ply: seat.ply,
                seat: seat_name,
                history: &seat.history,
                legal: &legal.notations,
                clock_ms,
                state: state.as_ref(),
            };
            let why = match player.choose(&turn).await {
                Ok(Answer::Move(text)) => {
                    let mv = game.wire_move(&text);
                    match rpc::submit_move(
                        &mut client,
                        &a.game_id,
                        &a.seat_token,
                        mv,
                        seat.ply,
                        None,
                    )
                    .await
                    {
                        Ok(_) => continue,
                        // Late (the flag fell) or stale: the watch says what
                        // happened.
                        Err(s)
                            if matches!(s.code(), tonic::Code::Aborted)
                                || rpc::refusal_reason(&s).as_deref() == Some("GAME_OVER") =>
                        {
                            continue;
                        }
                        Err(s) if s.code() == tonic::Code::FailedPrecondition => {
                            format!("illegal move `{text}`: {}", s.message())
                        }
                        Err(s) if s.code() == tonic::Code::InvalidArgument => {
                            format!("unreadable move `{text}`: {}", s.message())
                        }
                        // Not known to be played: the watch says.
                        Err(s) if patience.again(&s).await => continue 'watch,
                        Err(s) => return Err(s),
                    }
                }
                Ok(Answer::Resign) => "resigned".to_string(),
                Err(e) => e.to_string(),
            };
            // The bot gives the game up; the watch then sees the end.
            match rpc::resign(&mut client, &a.game_id, &a.seat_token).await {
                Ok(()) => {
                    player.finish("resigned").await;
                    return Ok(report(Some(format!(
                        "{} ({seat_name}): {why}",
                        bot.spec.name
                    ))));
                }
                Err(s) if s.code() == tonic::Code::FailedPrecondition => continue,
                Err(s) if patience.again(&s).await => continue 'watch,
                Err(s) => return Err(s),
            }
        }
        return Ok(report(None));
    }
}

/// The result as the bots are told it (docs/BOTS.md): `white CONNECTION`,
/// `draw MOVE_LIMIT`, several winners joined by commas.
pub fn result_line(seats: &[&str], outcome: &pb::Outcome) -> String {
    let winners: Vec<&str> = outcome
        .winners
        .iter()
        .filter_map(|&w| rpc::seat_index(w))
        .map(|w| seats.get(w).copied().unwrap_or("another seat"))
        .collect();
    if outcome.draw || winners.is_empty() {
        format!("draw {}", outcome.reason)
    } else {
        format!("{} {}", winners.join(","), outcome.reason)
    }
}
