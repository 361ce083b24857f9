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
use crate::service::grpc::games::{Part, WireGame};
use crate::service::grpc::pb::referee::v1 as pb;
use crate::service::grpc::pb::referee::v1::tournament_service_client::TournamentServiceClient;
use crate::tools::bots::{Answer, Bot, BotSpec, Turn};
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
#[derive(Default)]
struct Seat {
    history: Vec<String>,
    to_move: u32,
    ply: u32,
    clock: Option<pb::ClockState>,
}

/// What one item of the watch came to.
enum Taken {
    /// The game goes on.
    Playing,
    /// Events were skipped: the game is followed again from its start.
    Resync,
    /// The game is over.
    Over(pb::Outcome),
}

impl Seat {
    /// Takes one item of the watch into the turn state.
    fn take(&mut self, item: pb::WatchGameResponse) -> Taken {
        match item.item {
            Some(pb::watch_game_response::Item::Snapshot(_)) if item.resync => Taken::Resync,
            Some(pb::watch_game_response::Item::Snapshot(g)) => {
                self.to_move = g.to_move;
                self.ply = g.ply;
                self.clock = g.clock;
                Taken::Playing
            }
            Some(pb::watch_game_response::Item::Event(e)) => match e.kind {
                Some(pb::game_event::Kind::MoveApplied(m)) => {
                    self.history.push(
                        m.r#move
                            .as_ref()
                            .map(rpc::notation_of)
                            .unwrap_or_default()
                            .to_string(),
                    );
                    self.to_move = m.to_move;
                    self.ply = e.ply;
                    self.clock = e.clock;
                    Taken::Playing
                }
                Some(pb::game_event::Kind::GameOver(over)) => {
                    Taken::Over(over.outcome.unwrap_or_default())
                }
                None => Taken::Playing,
            },
            _ => Taken::Playing,
        }
    }
}

/// Where a step of a seat's play leads.
enum Flow {
    /// On with the watch.
    Read,
    /// The game is followed again from its start.
    Rewatch,
    /// The seat's play is over.
    Ended(Ending),
}

/// How a seat's play ended.
struct Ending {
    /// The result line the bot is told, if it is told one.
    told: Option<String>,
    /// Why the bot gave the game up, if it did.
    forfeit: Option<String>,
}

/// One seat of one game, as its task plays it.
struct SeatPlay {
    client: Client,
    a: pb::GameAssignment,
    bot: EntrantBot,
    game: &'static dyn WireGame,
    seat_names: &'static [&'static str],
    seat_name: &'static str,
    player: Bot,
    patience: Patience,
}

/// Plays one seat of one game to its end.
async fn play_seat(
    client: Client,
    a: pb::GameAssignment,
    bot: EntrantBot,
) -> Result<SeatReport, Status> {
    let mut play = SeatPlay::new(client, a, bot)?;
    let ending = loop {
        if let Flow::Ended(ending) = play.follow().await? {
            break ending;
        }
    };
    let report = SeatReport {
        number: play.a.number,
        game_id: play.a.game_id.clone(),
        forfeit: ending.forfeit,
    };
    if let Some(result) = ending.told {
        play.player.finish(&result).await;
    }
    Ok(report)
}

impl SeatPlay {
    /// The seat of assignment `a`, played by `bot`.
    fn new(client: Client, a: pb::GameAssignment, bot: EntrantBot) -> Result<SeatPlay, Status> {
        let rules = convert::game_rules(a.rules.as_ref(), &Part::Request)?;
        let seed = bot
            .setup_seed_base
            .filter(|_| rules.rules().seeded())
            .map(|base| crate::service::tournaments::game_seed(base, a.number));
        let rules = ToolRules { rules, seed };
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
        let player = bot.spec.player(seed, &rules, bot.move_timeout);
        let patience = Patience::new(bot.resume_for);
        Ok(SeatPlay {
            client,
            game: rules.game(),
            a,
            bot,
            seat_names,
            seat_name,
            player,
            patience,
        })
    }

    /// The answer of a call; `None` when the referee could not answer it
    /// now and the game is to be followed again from its start (when the
    /// bot resumes); the failure when the seat's play ends.
    async fn answered<T>(&mut self, call: Result<T, Status>) -> Result<Option<T>, Status> {
        match call {
            Ok(answer) => {
                self.patience.answered();
                Ok(Some(answer))
            }
            Err(s) if self.patience.again(&s).await => Ok(None),
            Err(s) => Err(s),
        }
    }

    /// Follows the game from its start, playing the seat's turns, until
    /// its play ends or the game is to be followed again.
    async fn follow(&mut self) -> Result<Flow, Status> {
        let request = pb::WatchGameRequest {
            game_id: self.a.game_id.clone(),
            from_ply: Some(0),
            token: self.a.seat_token.clone(),
        };
        let called = self.client.watch_game(request).await;
        let Some(watch) = self.answered(called).await? else {
            return Ok(Flow::Rewatch);
        };
        let mut watch = watch.into_inner();
        let mut seat = Seat::default();
        let mut answered: Option<u32> = None;
        while let Some(item) = watch.next().await {
            let Some(item) = self.answered(item).await? else {
                return Ok(Flow::Rewatch);
            };
            match seat.take(item) {
                Taken::Playing => {}
                Taken::Resync => return Ok(Flow::Rewatch),
                Taken::Over(outcome) => {
                    return Ok(Flow::Ended(Ending {
                        told: Some(result_line(self.seat_names, &outcome)),
                        forfeit: None,
                    }));
                }
            }
            if seat.to_move != self.a.seat || answered == Some(seat.ply) {
                continue;
            }
            answered = Some(seat.ply);
            match self.turn(&seat).await? {
                Flow::Read => {}
                flow => return Ok(flow),
            }
        }
        Ok(Flow::Ended(Ending {
            told: None,
            forfeit: None,
        }))
    }

    /// The seat's turn at `seat.ply`: the bot chooses and its move is
    /// submitted, or it gives the game up.
    async fn turn(&mut self, seat: &Seat) -> Result<Flow, Status> {
        let Some(legal) = self.legal_at(seat.ply).await? else {
            return Ok(Flow::Rewatch);
        };
        if legal.ply != seat.ply || legal.to_move != self.a.seat {
            // The watch is catching up on moves already played.
            return Ok(Flow::Read);
        }
        let state = if self.game.kind().bots_read_state() {
            let called =
                rpc::get_game_as(&mut self.client, &self.a.game_id, &self.a.seat_token).await;
            match self.answered(called).await? {
                Some(game) => game.state,
                None => return Ok(Flow::Rewatch),
            }
        } else {
            None
        };
        let clock_ms = seat
            .clock
            .as_ref()
            .filter(|_| self.bot.tell_clock)
            .and_then(|c| rpc::remaining_ms(c, self.a.seat as usize - 1));
        let turn = Turn {
            game_id: &self.a.game_id,
            ply: seat.ply,
            seat: self.seat_name,
            history: &seat.history,
            legal: &legal.notations,
            clock_ms,
            state: state.as_ref(),
        };
        let why = match self.player.choose(&turn).await {
            Ok(Answer::Move(text)) => match self.submit(&text, seat.ply).await? {
                Ok(flow) => return Ok(flow),
                Err(why) => why,
            },
            Ok(Answer::Resign) => "resigned".to_string(),
            Err(e) => e.to_string(),
        };
        self.give_up(&why).await
    }

    /// The legal moves at `ply`; `None` when the game is to be followed
    /// again from its start.
    ///
    /// An answer behind the watch is asked for again: in a cluster the
    /// watch may come from a follower, which shows a move once it is
    /// stored, a moment before its owner has applied it and answers from it
    /// (docs/CLUSTER.md, "Watchers on any replica"). Nothing else would
    /// come to end the wait: it is this seat's turn. Past a while the game
    /// is followed again from its start.
    async fn legal_at(&mut self, ply: u32) -> Result<Option<pb::ListLegalMovesResponse>, Status> {
        let mut behind_since: Option<Instant> = None;
        loop {
            let called = self
                .client
                .list_legal_moves(pb::ListLegalMovesRequest {
                    game_id: self.a.game_id.clone(),
                    seat: 0,
                    token: self.a.seat_token.clone(),
                    view: pb::MovesView::Notation as i32,
                })
                .await;
            let Some(legal) = self.answered(called).await? else {
                return Ok(None);
            };
            let legal = legal.into_inner();
            if legal.ply >= ply {
                return Ok(Some(legal));
            }
            if behind_since.get_or_insert_with(Instant::now).elapsed() >= BEHIND_FOR {
                return Ok(None);
            }
            tokio::time::sleep(BEHIND_RETRY).await;
        }
    }

    /// Submits the bot's move at `ply`: where play goes on, or why the
    /// referee refused the move (the bot then gives the game up).
    async fn submit(&mut self, text: &str, ply: u32) -> Result<Result<Flow, String>, Status> {
        let mv = self.game.wire_move(text);
        let submitted = rpc::submit_move(
            &mut self.client,
            &self.a.game_id,
            &self.a.seat_token,
            mv,
            ply,
            None,
        )
        .await;
        match submitted {
            Ok(_) => Ok(Ok(Flow::Read)),
            // Late (the flag fell) or stale: the watch says what happened.
            Err(s)
                if matches!(s.code(), tonic::Code::Aborted)
                    || rpc::refusal_reason(&s).as_deref() == Some("GAME_OVER") =>
            {
                Ok(Ok(Flow::Read))
            }
            Err(s) if s.code() == tonic::Code::FailedPrecondition => {
                Ok(Err(format!("illegal move `{text}`: {}", s.message())))
            }
            Err(s) if s.code() == tonic::Code::InvalidArgument => {
                Ok(Err(format!("unreadable move `{text}`: {}", s.message())))
            }
            // Not known to be played: the watch says.
            Err(s) if self.patience.again(&s).await => Ok(Ok(Flow::Rewatch)),
            Err(s) => Err(s),
        }
    }

    /// The bot gives the game up (`why`); the watch then sees the end.
    async fn give_up(&mut self, why: &str) -> Result<Flow, Status> {
        match rpc::resign(&mut self.client, &self.a.game_id, &self.a.seat_token).await {
            Ok(()) => Ok(Flow::Ended(Ending {
                told: Some("resigned".to_string()),
                forfeit: Some(format!(
                    "{} ({}): {why}",
                    self.bot.spec.name, self.seat_name
                )),
            })),
            Err(s) if s.code() == tonic::Code::FailedPrecondition => Ok(Flow::Read),
            Err(s) if self.patience.again(&s).await => Ok(Flow::Rewatch),
            Err(s) => Err(s),
        }
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
