//! Dots behind the game-agnostic [`Game`](crate::games::Game) trait, and its
//! options behind [`Rules`]: turns the session layer's neutral inputs into
//! engine calls and the engine's answers into neutral results, with the
//! payloads the service's Dots conversion reads back: [`DotsMoveInput`] (a
//! move given), [`DotsMoveInfo`] (a move played or listed, with what it did:
//! [`MoveEffect`]) and [`DotsState`] (every dot, the enclosures as closed
//! chains, the scores). Enclosure chains are traced here, from the areas the
//! engine logs, so the engine's hot path stays free of allocation.

use super::chain::outline;
use super::{
    Bits, Colour, EndReason, Engine, Field, IllegalMove, Move, Played, Point, Record, RuleOptions,
    Seed, TakeKind, TakeLog,
};
use crate::games::{
    Decision, Game, GameRules, GameState, MoveDetail, MoveError, MoveInput, MoveReport, Opaque,
    Outcome, RecordError, RefereeAction, Replayed, Rules, Seat, SeatSet, Setup, SharedState,
    Viewer, dots,
};

/// Dots' two seats, in seat order (docs/rules/dots.md §2.3, §10: Red is the first
/// seat and moves first).
pub const SEAT_NAMES: &[&str] = &["red", "blue"];

/// A Dots move as a client gave it: structured (a point or `ground`), as
/// notation already read (docs/rules/dots.md §8), or both (then they must agree).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DotsMoveInput {
    /// The structured move.
    pub structured: Option<Move>,
    /// The move read from notation.
    pub notation: Option<Move>,
}

/// An enclosure as clients draw it: who made it, capture or empty base, and
/// the closed chain of its wall dots (docs/rules/dots.md §6.2), clockwise on screen
/// from the topmost-leftmost dot; the last point joins the first.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Enclosure {
    /// Who took the area.
    pub owner: Colour,
    /// Capture or empty base (§6.3).
    pub kind: TakeKind,
    /// The wall dots around the area, in order.
    pub chain: Vec<Point>,
}

/// What a played move did (docs/rules/dots.md §6.6), from the mover's side.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MoveEffect {
    /// Enemy dots newly held by the mover.
    pub captured: Vec<Point>,
    /// The mover's dots freed by the mover (a recapture).
    pub freed: Vec<Point>,
    /// The mover's dots newly held by the enemy (§6.5(c), §7.2).
    pub lost: Vec<Point>,
    /// Enemy dots freed (§6.5(c), §7.2).
    pub regained: Vec<Point>,
    /// The areas the move took, in the order taken (§6.4).
    pub enclosures: Vec<Enclosure>,
    /// How many regions the move closed (§6.1).
    pub regions: u8,
    /// The scores after the move, Red first (§6.7).
    pub scores: [u32; 2],
}

/// A Dots move, played or legal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DotsMoveInfo {
    /// The move.
    pub mv: Move,
    /// The mover.
    pub colour: Colour,
    /// What it did: `Some` for a played move, `None` for a listed one.
    pub effect: Option<MoveEffect>,
}

/// One dot of a snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SnapshotDot {
    /// Where it is.
    pub point: Point,
    /// Whose dot it is.
    pub owner: Colour,
    /// Whether the other player holds it (§2.4).
    pub captured: bool,
}

/// A Dots position with what clients draw of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DotsState {
    /// The game's options.
    pub options: RuleOptions,
    /// Moves made.
    pub ply: u32,
    /// Who moves next; `None` once over.
    pub to_move: Option<Colour>,
    /// The scores, Red first (§6.7).
    pub scores: [u32; 2],
    /// Every dot in reading order.
    pub dots: Vec<SnapshotDot>,
    /// The enclosures standing now: captures whose wall dots are all still
    /// live, empty bases that still have a marker inside, in the order made.
    pub enclosures: Vec<Enclosure>,
    /// How the game ended (board endings; referee endings only in the
    /// current snapshot).
    pub outcome: Option<dots::Outcome>,
    /// Every cell (held empty cells, markers: see [`Field::text`]).
    pub field: Field,
}

impl GameState for DotsState {
    /// The field as SVG (`dots::svg`), the last move highlighted.
    fn svg(&self, last: Option<&MoveDetail>, _outcome: Option<&Outcome>) -> String {
        let last = last.and_then(|m| m.get::<DotsMoveInfo>()).map(|m| m.mv);
        super::svg::svg(self, last)
    }
}

impl Rules for RuleOptions {
    fn game_name(&self) -> &'static str {
        "dots"
    }

    fn variant_name(&self) -> &'static str {
        self.start().name()
    }

    /// Only the four crosses are drawn from a seed (docs/rules/dots.md §3, §4.4).
    fn seeded(&self) -> bool {
        self.start().needs_seed()
    }

    fn start(&self, setup: Option<Setup>) -> Box<dyn Game> {
        Box::new(DotsGame::new(*self, setup))
    }
}

/// The seat of a colour.
pub const fn seat_of(colour: Colour) -> Seat {
    match colour {
        Colour::Red => Seat::FIRST,
        Colour::Blue => Seat::SECOND,
    }
}

/// The colour of a seat (the first seat is Red; any other, Blue).
pub const fn colour_of(seat: Seat) -> Colour {
    match seat.index() {
        0 => Colour::Red,
        _ => Colour::Blue,
    }
}

fn outcome_of(outcome: dots::Outcome) -> Outcome {
    Outcome {
        winners: outcome
            .winner
            .map_or(SeatSet::EMPTY, |c| SeatSet::only(seat_of(c))),
        reason: outcome.reason.name(),
        scores: outcome.scores.iter().map(|&s| i64::from(s)).collect(),
        detail: Some(Opaque::new(outcome)),
    }
}

fn illegal(e: IllegalMove) -> MoveError {
    MoveError::Illegal {
        reason: e.reason(),
        message: e.to_string(),
    }
}

fn detail(info: DotsMoveInfo) -> MoveDetail {
    MoveDetail {
        notation: info.mv.to_string(),
        kind: info.mv.kind(),
        payload: Opaque::new(info),
    }
}

fn points(bits: &Bits) -> Vec<Point> {
    bits.iter().map(|(x, y)| Point::from_index(x, y)).collect()
}

/// An area taken during the game, kept to tell whether its enclosure still
/// stands.
#[derive(Debug, Clone)]
struct TakenArea {
    enclosure: Enclosure,
    area: Bits,
}

impl TakenArea {
    /// Whether the enclosure still stands on `field`.
    fn stands(&self, field: &Field) -> bool {
        let owner = self.enclosure.owner;
        let live = field.live(owner);
        let wall_live = self
            .enclosure
            .chain
            .iter()
            .all(|p| field.index_of(*p).is_some_and(|(x, y)| live.contains(x, y)));
        wall_live
            && match self.enclosure.kind {
                TakeKind::Capture => true,
                TakeKind::Base => self.area.intersects(field.markers(owner)),
            }
    }
}

/// The engine game with what the referee keeps beside it: every area
/// taken (for the enclosures) and every move's report.
#[derive(Debug, Clone)]
struct Tracked {
    game: Engine,
    areas: Vec<TakenArea>,
    played: Vec<DotsMoveInfo>,
    log: TakeLog,
}

impl Tracked {
    fn new(game: Engine) -> Tracked {
        Tracked {
            game,
            areas: Vec::new(),
            played: Vec::new(),
            log: TakeLog::default(),
        }
    }

    /// Plays `mv` and works out what it did.
    fn play(&mut self, mv: Move) -> Result<(DotsMoveInfo, Played), IllegalMove> {
        let field = self.game.field();
        let held_before = [*field.held(Colour::Red), *field.held(Colour::Blue)];
        let played = self.game.play_logged(mv, &mut self.log)?;
        let field = self.game.field();
        let (m, e) = (played.colour, played.colour.other());
        let (mi, ei) = (m.index(), e.index());
        let newly = |c: usize| field.held(Colour::ALL[c]).and_not(&held_before[c]);
        let released = |c: usize| held_before[c].and_not(field.held(Colour::ALL[c]));
        let mut effect = MoveEffect {
            captured: points(&(newly(mi) & *field.dots(e))),
            freed: points(&(released(ei) & *field.dots(m))),
            lost: points(&(newly(ei) & *field.dots(m))),
            regained: points(&(released(mi) & *field.dots(e))),
            enclosures: Vec::new(),
            regions: played.placement.regions,
            scores: field.scores(),
        };
        for take in self.log.takes() {
            let enclosure = Enclosure {
                owner: take.taker,
                kind: take.kind,
                chain: outline(&take.area),
            };
            effect.enclosures.push(enclosure.clone());
            self.areas.push(TakenArea {
                enclosure,
                area: take.area,
            });
        }
        let info = DotsMoveInfo {
            mv,
            colour: m,
            effect: Some(effect),
        };
        self.played.push(info.clone());
        Ok((info, played))
    }

    /// What playing `mv` would do, leaving the game as it is: the move is
    /// played and taken back, with no copy of what grows with the game
    /// (the moves, their reports, the areas taken).
    fn decide(&mut self, mv: Move) -> Result<(DotsMoveInfo, Played), IllegalMove> {
        let mark = self.game.mark();
        let areas = self.areas.len();
        let decided = self.play(mv)?;
        self.game.take_back(mark);
        self.areas.truncate(areas);
        self.played.pop();
        Ok(decided)
    }

    fn snapshot(&self) -> DotsState {
        let field = self.game.field();
        let mut dots = Vec::new();
        for colour in Colour::ALL {
            let held = field.held(colour.other());
            dots.extend(field.dots(colour).iter().map(|(x, y)| SnapshotDot {
                point: Point::from_index(x, y),
                owner: colour,
                captured: held.contains(x, y),
            }));
        }
        dots.sort_by_key(|d| (d.point.y, d.point.x));
        DotsState {
            options: self.game.options(),
            ply: self.game.ply(),
            to_move: (!self.game.is_over()).then(|| self.game.to_move()),
            scores: self.game.scores(),
            dots,
            enclosures: self
                .areas
                .iter()
                .filter(|a| a.stands(field))
                .map(|a| a.enclosure.clone())
                .collect(),
            outcome: self.game.outcome(),
            field: field.clone(),
        }
    }
}

/// One Dots game behind the session layer's trait.
#[derive(Debug, Clone)]
pub struct DotsGame {
    tracked: Tracked,
    setup: Option<Setup>,
}

impl DotsGame {
    /// A new game with `options`, set up from `setup` when the start needs
    /// a seed (a `quadruple-cross` game started without one uses 32 zero
    /// bytes, so the trait's `start` never fails; the session layer always
    /// gives one).
    pub fn new(options: RuleOptions, setup: Option<Setup>) -> DotsGame {
        let setup = options.start().needs_seed().then(|| {
            setup.unwrap_or(Setup {
                seed: [0; 32],
                supplied: true,
            })
        });
        let seed = setup.and_then(|s| Seed::new(&s.seed).ok());
        DotsGame {
            tracked: Tracked::new(Engine::start(options, seed)),
            setup,
        }
    }

    /// The engine's game.
    pub fn game(&self) -> &Engine {
        &self.tracked.game
    }

    /// The state now, as the payload of [`Game::snapshot`].
    pub fn dots_snapshot(&self) -> DotsState {
        self.tracked.snapshot()
    }

    /// The engine move `mv` names: a [`DotsMoveInput`], a played or listed
    /// move given back ([`DotsMoveInfo`]), or a bare [`Move`].
    pub fn input_of(mv: &MoveInput) -> Result<Move, MoveError> {
        if let Some(info) = mv.get::<DotsMoveInfo>() {
            return Ok(info.mv);
        }
        if let Some(&m) = mv.get::<Move>() {
            return Ok(m);
        }
        let Some(input) = mv.get::<DotsMoveInput>() else {
            return Err(MoveError::Malformed {
                field: "move",
                description: "not a Dots move (set move.dots)".into(),
            });
        };
        match (input.structured, input.notation) {
            (Some(a), Some(b)) if a != b => Err(MoveError::Malformed {
                field: "move",
                description: format!(
                    "the structured move `{a}` and the notation `{b}` name different moves"
                ),
            }),
            (Some(m), _) | (None, Some(m)) => Ok(m),
            (None, None) => Err(MoveError::Malformed {
                field: "move",
                description: "give the move as a point, as `ground` or as notation".into(),
            }),
        }
    }

    fn report(info: DotsMoveInfo, played: &Played) -> MoveReport {
        let seat = seat_of(played.colour);
        MoveReport {
            seat,
            ply: played.ply,
            // Dots alternates (docs/rules/dots.md §5.1).
            next: played
                .outcome
                .is_none()
                .then(|| seat.next(SEAT_NAMES.len())),
            outcome: played.outcome.map(outcome_of).map(Box::new),
            detail: detail(info),
        }
    }

    /// The game replayed to its first `ply` moves (board endings only).
    fn replayed(&self, ply: usize) -> Option<Tracked> {
        let moves = self.tracked.game.moves().get(..ply)?;
        let game = &self.tracked.game;
        let mut replay = Tracked::new(Engine::start(game.options(), game.seed().copied()));
        for &mv in moves {
            replay.play(mv).ok()?;
        }
        Some(replay)
    }
}

impl Game for DotsGame {
    fn rules(&self) -> GameRules {
        GameRules::new(self.tracked.game.options())
    }

    fn seat_names(&self) -> &'static [&'static str] {
        SEAT_NAMES
    }

    fn ply(&self) -> u32 {
        self.tracked.game.ply()
    }

    fn to_move(&self) -> Option<Seat> {
        let game = &self.tracked.game;
        (!game.is_over()).then(|| seat_of(game.to_move()))
    }

    fn outcome(&self) -> Option<Outcome> {
        self.tracked.game.outcome().map(outcome_of)
    }

    fn setup(&self) -> Option<Setup> {
        self.setup
    }

    fn play(&mut self, mv: &MoveInput) -> Result<MoveReport, MoveError> {
        let mv = DotsGame::input_of(mv)?;
        let (info, played) = self.tracked.play(mv).map_err(illegal)?;
        Ok(DotsGame::report(info, &played))
    }

    fn legal_moves(&self) -> Vec<MoveReport> {
        let game = &self.tracked.game;
        let colour = game.to_move();
        let seat = seat_of(colour);
        let mut out: Vec<MoveReport> = game
            .legal_moves()
            .into_iter()
            .map(|mv| MoveReport {
                seat,
                ply: game.ply() + 1,
                next: None,
                outcome: None,
                detail: detail(DotsMoveInfo {
                    mv,
                    colour,
                    effect: None,
                }),
            })
            .collect();
        out.sort_by(|a, b| a.detail.notation.cmp(&b.detail.notation));
        out
    }

    fn snapshot(&self, _viewer: Viewer) -> SharedState {
        SharedState::new(self.tracked.snapshot())
    }

    fn snapshot_at(&self, ply: u32, _viewer: Viewer) -> Option<SharedState> {
        let replay = self.replayed(usize::try_from(ply).ok()?)?;
        Some(SharedState::new(replay.snapshot()))
    }

    fn last_move(&self) -> Option<MoveDetail> {
        self.tracked.played.last().cloned().map(detail)
    }

    fn record(&self, _tags: &[(String, String)], _viewer: Viewer) -> String {
        // The seed is revealed once the game is over (docs/rules/dots.md §4.4). Tags
        // are not written: §9's canonical form has only its own keys.
        let game = &self.tracked.game;
        let mut record = Record::of(game, game.is_over());
        // A seed the creator supplied is marked (`x-seed: supplied`): its
        // start was chosen, not drawn.
        if self.setup.is_some_and(|s| s.supplied) {
            record
                .tags
                .push((SUPPLIED_TAG.0.to_string(), SUPPLIED_TAG.1.to_string()));
        }
        record.to_string()
    }

    fn conclude(&mut self, ending: RefereeAction) -> Result<Outcome, MoveError> {
        let reason = match ending {
            RefereeAction::Resignation { .. } => EndReason::Resign,
            RefereeAction::DrawAgreement => EndReason::DrawAgreement,
            RefereeAction::Aborted => EndReason::Abort,
            RefereeAction::Timeout { .. } => EndReason::Timeout,
            RefereeAction::Abandoned { .. } => EndReason::Abandon,
        };
        let winner = ending
            .default_outcome(SEAT_NAMES.len())
            .winner()
            .map(colour_of);
        let outcome = self
            .tracked
            .game
            .conclude(reason, winner)
            .map_err(illegal)?;
        Ok(outcome_of(outcome))
    }

    /// Played and taken back on this game: a copy would copy every move's
    /// report (tens of microseconds in a long game), a move costs a few.
    fn decide(&mut self, mv: &MoveInput) -> Result<Decision, MoveError> {
        let mv = DotsGame::input_of(mv)?;
        let (info, played) = self.tracked.decide(mv).map_err(illegal)?;
        Ok(Decision {
            report: DotsGame::report(info, &played),
            after: None,
        })
    }

    fn clone_box(&self) -> Box<dyn Game> {
        Box::new(self.clone())
    }

    fn same_move(&self, ply: u32, input: &MoveInput, played: &MoveDetail) -> bool {
        let (Ok(mv), Some(info)) = (DotsGame::input_of(input), played.get::<DotsMoveInfo>()) else {
            return false;
        };
        let moves = self.tracked.game.moves();
        usize::try_from(ply)
            .ok()
            .and_then(|i| moves.get(i))
            .is_some_and(|&m| m == info.mv && mv == info.mv)
    }

    fn rules_header(&self) -> String {
        let game = &self.tracked.game;
        let fresh = Engine::start(game.options(), game.seed().copied());
        Record::of(&fresh, false).to_string()
    }
}

/// The tag (written `x-seed: supplied`) that marks a seed the creator
/// supplied instead of the server drawing it.
const SUPPLIED_TAG: (&str, &str) = super::record::SUPPLIED_MARK;

/// Reads and replays a Dots record (docs/rules/dots.md §9). `seed` is the server's
/// own copy of an unfinished game's seed; without it a record that does not
/// reveal its seed is refused (`SEED_NOT_REVEALED`), and a seed that does not
/// match the commitment is `SEED_MISMATCH`. A seed of another length than the
/// 32 bytes of a [`Setup`] is refused (`SEED_LENGTH`): the referee could not
/// keep it, so the game could not be rebuilt from storage (docs/DOTS.md,
/// "Seed length").
pub fn import(text: &str, seed: Option<Setup>) -> Result<Replayed, RecordError> {
    let record = Record::parse(text).map_err(record_error)?;
    let given = seed.and_then(|s| Seed::new(&s.seed).ok());
    let resolved = record.resolve_seed(given).map_err(record_error)?;
    if let Some(s) = resolved.filter(|s| s.as_array().is_none()) {
        return Err(RecordError {
            line: None,
            reason: Some("SEED_LENGTH"),
            message: format!(
                "the record's seed has {} bytes: the referee keeps 32-byte seeds, so a \
                 record it imports gives its seed as 64 hex digits (docs/rules/dots.md §3 allows \
                 1 to 64 bytes; docs/DOTS.md, \"Seed length\")",
                s.as_bytes().len()
            ),
        });
    }
    let game = Engine::new(record.options, resolved)
        .map_err(|e| record_error(super::RecordError::Options(e)))?;
    let mut tracked = Tracked::new(game);
    let mut moves = Vec::with_capacity(record.moves.len());
    for (i, &mv) in record.moves.iter().enumerate() {
        let (info, played) = tracked
            .play(mv)
            .map_err(|e| record_error(record.illegal(i, e)))?;
        moves.push(DotsGame::report(info, &played));
    }
    record
        .apply_ending(&mut tracked.game)
        .map_err(record_error)?;
    // Without the server's own copy the seed is the record's. A finished
    // record is an archive: it keeps the mark it carries. A game that goes
    // on was set up from a seed its importer knows: supplied, whatever the
    // record says.
    let marked = record
        .tags
        .iter()
        .any(|(k, v)| (k.as_str(), v.as_str()) == SUPPLIED_TAG);
    let supplied = match seed {
        Some(given) => given.supplied,
        None => marked || !tracked.game.is_over(),
    };
    let setup = resolved.and_then(|s| s.as_array()).map(|bytes| Setup {
        seed: bytes,
        supplied,
    });
    // The mark is not a tag: it goes with the setup.
    let tags = record
        .tags
        .into_iter()
        .filter(|(k, v)| (k.as_str(), v.as_str()) != SUPPLIED_TAG)
        .collect();
    Ok(Replayed {
        game: Box::new(DotsGame { tracked, setup }),
        moves,
        tags,
    })
}

fn record_error(e: super::RecordError) -> RecordError {
    RecordError {
        line: e.line(),
        reason: Some(e.reason()),
        message: e.to_string(),
    }
}

/// The input of a move written in notation, as the service's syntax check
/// makes it (`None` if the text is not notation).
pub fn notation_input(text: &str) -> Option<MoveInput> {
    let mv = text.parse::<Move>().ok()?;
    Some(MoveInput::new(DotsMoveInput {
        structured: None,
        notation: Some(mv),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::games::conformance::{Bounds, Subject, run_all};
    use crate::games::dots::Start;

    fn subject(
        label: &'static str,
        width: u8,
        height: u8,
        start: Start,
        bounds: Bounds,
    ) -> Subject {
        let options = RuleOptions::new(width, height, start, 0).unwrap();
        Subject {
            label,
            rules: GameRules::new(options),
            import,
            notation: notation_input,
            never_legal: &["0,1", "1,0", "65,3", "3,65", "99999,99999"],
            seeded: start.needs_seed(),
            bounds,
        }
    }

    #[test]
    fn small_empty_fields_pass_the_conformance_suite() {
        let bounds = Bounds {
            games: 4,
            ply_cap: 40,
            checked_plies: 40,
            moves_per_ply: 20,
        };
        let s = subject("dots 4x4 empty", 4, 4, Start::Empty, bounds);
        for rng_seed in [1, 2, 3] {
            run_all(&s, rng_seed);
        }
        let s = subject("dots 6x5 cross", 6, 5, Start::Cross, bounds);
        run_all(&s, 4);
    }

    #[test]
    fn seeded_four_crosses_pass_the_conformance_suite() {
        let bounds = Bounds {
            games: 3,
            ply_cap: 100,
            checked_plies: 30,
            moves_per_ply: 10,
        };
        let s = subject(
            "dots 8x8 quadruple-cross",
            8,
            8,
            Start::QuadrupleCross,
            bounds,
        );
        for rng_seed in [5, 6] {
            run_all(&s, rng_seed);
        }
        let s = subject(
            "dots 12x10 double-cross",
            12,
            10,
            Start::DoubleCross,
            bounds,
        );
        run_all(&s, 7);
    }

    #[test]
    fn the_standard_field_passes_the_conformance_suite() {
        let bounds = Bounds {
            games: 1,
            ply_cap: 1300,
            checked_plies: 4,
            moves_per_ply: 4,
        };
        let s = subject("dots 39x32 cross", 39, 32, Start::Cross, bounds);
        run_all(&s, 8);
    }

    #[test]
    fn disagreeing_forms_are_malformed_and_foreign_ones_too() {
        let mut g = DotsGame::new(RuleOptions::default(), None);
        let input = MoveInput::new(DotsMoveInput {
            structured: Some(Move::Ground),
            notation: Some(Move::Place(Point::new(1, 1))),
        });
        assert!(matches!(g.play(&input), Err(MoveError::Malformed { .. })));
        let empty = MoveInput::new(DotsMoveInput::default());
        assert!(matches!(g.play(&empty), Err(MoveError::Malformed { .. })));
        assert!(matches!(
            g.play(&MoveInput::new(7u8)),
            Err(MoveError::Malformed { .. })
        ));
        assert_eq!(g.ply(), 0);
    }

    #[test]
    fn a_record_seed_the_referee_cannot_keep_is_refused() {
        // docs/rules/dots.md §4.4's "dots" seed (4 bytes) replays in the engine, but
        // a `Setup` holds 32 bytes: the session layer could not rebuild the
        // game from storage, so the import refuses it.
        let short =
            "game: dots\nwidth: 8\nheight: 8\nstart: quadruple-cross\nseed: 646f7473\n\n1,1\n";
        assert!(Record::parse(short).unwrap().replay(None).is_ok());
        let Err(e) = import(short, None) else {
            panic!("a 4-byte seed imported");
        };
        assert_eq!((e.reason, e.line), (Some("SEED_LENGTH"), None));
        assert!(e.message.contains("4 bytes"), "{}", e.message);
        // 32 bytes import, and the game keeps them as its setup.
        let seed = "5e".repeat(32);
        let full = short.replace("646f7473", &seed);
        let game = import(&full, None).expect("a 32-byte seed imports").game;
        assert_eq!(game.setup().map(|s| s.seed), Some([0x5e; 32]));
    }

    #[test]
    fn tags_are_not_written_and_old_x_keys_still_read() {
        let mut g = DotsGame::new(RuleOptions::default(), None);
        g.play(&notation_input("1,1").unwrap()).unwrap();
        let tags = vec![("event".to_string(), "club: night".to_string())];
        // §9's canonical form has only its own keys.
        let text = g.record(&tags, Viewer::Spectator);
        assert_eq!(
            text,
            "game: dots\nwidth: 39\nheight: 32\nstart: cross\n\n1,1\n"
        );
        let old = text.replace("\n\n", "\nx-event: club: night\n\n");
        let back = import(&old, None).unwrap();
        assert_eq!(back.tags, tags);
    }
}
