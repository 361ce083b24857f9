//! Property tests of the Dots engine over thousands of random games on
//! several sizes and start positions (docs/rules/dots.md §12): every legal move plays
//! and only those; the field equals, move after move, a direct cell-by-cell
//! implementation of §6–§7.2 written from the text (no bitsets, no
//! shortcuts); scores equal the captured dots counted from the state; no
//! captured cell is ever playable again; a dot grounded to the edge is never
//! captured; markers only on playable cells; records round-trip; a refused
//! move changes nothing; games end with a valid result. Black-box: only
//! `punct_referee::games::…`.

use proptest::prelude::*;
use punct_referee::games::dots::{
    Colour, EndReason, Engine, Move, Point, Record, RuleOptions, Seed, Start,
};

// --- A direct implementation of docs/rules/dots.md §6 and §7.2 ----------------------------------

/// The field as docs/rules/dots.md §2.4 describes it, cell by cell.
#[derive(Clone)]
struct Direct {
    w: usize,
    h: usize,
    dot: Vec<Option<Colour>>,
    holder: Vec<Option<Colour>>,
    marker: Vec<Option<Colour>>,
}

impl Direct {
    fn of(game: &Engine) -> Direct {
        let field = game.field();
        let (w, h) = (usize::from(field.width()), usize::from(field.height()));
        let mut d = Direct {
            w,
            h,
            dot: vec![None; w * h],
            holder: vec![None; w * h],
            marker: vec![None; w * h],
        };
        for i in 0..w * h {
            let cell = field.cell(Point::new((i % w) as u16 + 1, (i / w) as u16 + 1));
            (d.dot[i], d.holder[i], d.marker[i]) = (cell.dot, cell.holder, cell.marker);
        }
        d
    }

    fn neighbours(&self, i: usize) -> Vec<usize> {
        let (x, y) = (i % self.w, i / self.w);
        let mut out = Vec::new();
        if x > 0 {
            out.push(i - 1);
        }
        if x + 1 < self.w {
            out.push(i + 1);
        }
        if y > 0 {
            out.push(i - self.w);
        }
        if y + 1 < self.h {
            out.push(i + self.w);
        }
        out
    }

    fn is_edge(&self, i: usize) -> bool {
        let (x, y) = (i % self.w, i / self.w);
        x == 0 || y == 0 || x + 1 == self.w || y + 1 == self.h
    }

    fn live(&self, i: usize, c: Colour) -> bool {
        self.dot[i] == Some(c) && self.holder[i].is_none()
    }

    fn playable(&self, i: usize) -> bool {
        self.dot[i].is_none() && self.holder[i].is_none()
    }

    /// The cells reachable from `from` through cells where `pass` holds.
    fn reach(&self, from: &[usize], pass: impl Fn(usize) -> bool) -> Vec<bool> {
        let mut seen = vec![false; self.w * self.h];
        let mut stack: Vec<usize> = from.iter().copied().filter(|&i| pass(i)).collect();
        for &i in &stack {
            seen[i] = true;
        }
        while let Some(i) = stack.pop() {
            for n in self.neighbours(i) {
                if !seen[n] && pass(n) {
                    seen[n] = true;
                    stack.push(n);
                }
            }
        }
        seen
    }

    /// §6.1: the region of `q` for player `p`, if closed (the search stops
    /// at the first edge cell).
    fn closed_region(&self, q: usize, p: Colour) -> Option<Vec<bool>> {
        let mut region = vec![false; self.w * self.h];
        let mut stack = vec![q];
        region[q] = true;
        while let Some(i) = stack.pop() {
            if self.is_edge(i) {
                return None;
            }
            for n in self.neighbours(i) {
                if !region[n] && !self.live(n, p) {
                    region[n] = true;
                    stack.push(n);
                }
            }
        }
        Some(region)
    }

    /// §6.2: the enclosed area of region `c` of player `p`.
    fn area(&self, c: &[bool], p: Colour) -> Vec<bool> {
        let n = self.w * self.h;
        let wall: Vec<bool> = (0..n)
            .map(|i| self.live(i, p) && self.neighbours(i).iter().any(|&j| c[j]))
            .collect();
        let blocked = |i: usize| c[i] || wall[i];
        let edges: Vec<usize> = (0..n).filter(|&i| self.is_edge(i) && !blocked(i)).collect();
        let reached = self.reach(&edges, |i| !blocked(i));
        reached.iter().map(|r| !r).collect()
    }

    /// §6.3.
    fn take(&mut self, p: Colour, area: &[bool]) {
        let q = p.other();
        let capture = (0..area.len()).any(|i| area[i] && self.live(i, q));
        for i in (0..area.len()).filter(|&i| area[i]) {
            if capture {
                match self.dot[i] {
                    None => {
                        self.holder[i] = Some(p);
                        self.marker[i] = None;
                    }
                    Some(c) if c == q => self.holder[i] = Some(p),
                    Some(_) => self.holder[i] = None, // P's dot: freed (or live)
                }
            } else if self.playable(i) {
                self.marker[i] = Some(p);
            }
        }
    }

    /// §6 for `m`'s dot at `i`.
    fn place(&mut self, m: Colour, i: usize) {
        let e = m.other();
        let k = self.marker[i];
        self.dot[i] = Some(m);
        self.marker[i] = None;
        if k == Some(m) {
            return; // §6.5(a)
        }
        let mut regions: Vec<Vec<bool>> = Vec::new();
        for q in self.neighbours(i) {
            if self.live(q, m) || regions.iter().any(|r| r[q]) {
                continue;
            }
            if let Some(r) = self.closed_region(q, m) {
                regions.push(r);
            }
        }
        let mut areas: Vec<Vec<bool>> = regions.iter().map(|r| self.area(r, m)).collect();
        areas.sort_by_key(|a| a.iter().filter(|&&b| b).count());
        for a in &areas {
            self.take(m, a);
        }
        if k == Some(e) {
            if !regions.is_empty() {
                // §6.5(b)
                let marked = |j: usize| self.marker[j].is_some();
                let from = self.neighbours(i);
                let gone = self.reach(&from, marked);
                for (j, g) in gone.iter().enumerate() {
                    if *g {
                        self.marker[j] = None;
                    }
                }
            } else if let Some(r) = self.closed_region(i, e) {
                // §6.5(c)
                let a = self.area(&r, e);
                self.take(e, &a);
            }
        }
    }

    /// §7.2.
    fn ground(&mut self, g: Colour) {
        let o = g.other();
        let n = self.w * self.h;
        let owned = |i: usize| self.live(i, g) || self.holder[i] == Some(g);
        let edges: Vec<usize> = (0..n).filter(|&i| self.is_edge(i)).collect();
        let grounded = self.reach(&edges, owned);
        let lost: Vec<usize> = (0..n).filter(|&i| owned(i) && !grounded[i]).collect();
        for i in lost {
            {
                self.holder[i] = if self.dot[i] == Some(o) {
                    None
                } else {
                    Some(o)
                };
            }
        }
    }

    fn text(&self) -> String {
        let mut out = String::new();
        for y in 0..self.h {
            for x in 0..self.w {
                let i = y * self.w + x;
                out.push(match (self.dot[i], self.holder[i], self.marker[i]) {
                    (Some(Colour::Red), None, _) => 'R',
                    (Some(Colour::Blue), None, _) => 'B',
                    (Some(Colour::Red), Some(_), _) => 'r',
                    (Some(Colour::Blue), Some(_), _) => 'b',
                    (None, Some(Colour::Red), _) => '1',
                    (None, Some(Colour::Blue), _) => '2',
                    (None, None, Some(Colour::Red)) => '3',
                    (None, None, Some(Colour::Blue)) => '4',
                    (None, None, None) => '.',
                });
            }
            out.push('\n');
        }
        out
    }
}

// --- Random games ----------------------------------------------------------------------

/// SplitMix64, so a failing case is reproduced from its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// A game on a field at least as large as `start` needs.
fn start_game(width: u8, height: u8, start: Start, seed: u64) -> Option<Engine> {
    let (min_w, min_h) = start.min_size();
    let options = RuleOptions::new(width.max(min_w), height.max(min_h), start, 0).ok()?;
    let seed = start
        .needs_seed()
        .then(|| Seed::new(&seed.to_be_bytes()).ok())
        .flatten();
    Engine::new(options, seed).ok()
}

fn index(game: &Engine, p: Point) -> usize {
    usize::from(p.y - 1) * usize::from(game.field().width()) + usize::from(p.x - 1)
}

/// Checks every invariant of the position; `held_ever` and `grounded_ever`
/// carry what earlier positions promised.
fn check_position(game: &Engine, held_ever: &mut [bool], grounded_ever: &mut [Option<Colour>]) {
    let field = game.field();
    let (w, h) = (usize::from(field.width()), usize::from(field.height()));
    let direct = Direct::of(game);
    let mut scores = [0u32; 2];
    let grounding = game
        .outcome()
        .is_some_and(|o| o.reason == EndReason::Ground);
    let edges: Vec<usize> = (0..w * h).filter(|&i| direct.is_edge(i)).collect();
    // The cells of each player's open regions (§6.1).
    let open = Colour::ALL.map(|c| direct.reach(&edges, |i| !direct.live(i, c)));
    for i in 0..w * h {
        let point = Point::new((i % w) as u16 + 1, (i / w) as u16 + 1);
        let cell = field.cell(point);
        if let (Some(dot), Some(holder)) = (cell.dot, cell.holder) {
            assert_ne!(dot, holder, "{point:?}: a dot held by its own colour");
            scores[holder.index()] += 1;
        }
        if let Some(owner) = cell.marker.filter(|_| !grounding) {
            assert!(
                !open[owner.index()][i],
                "{point:?}: a marker in an open region of its owner"
            );
        }
        if cell.marker.is_some() {
            assert!(
                cell.dot.is_none() && cell.holder.is_none(),
                "{point:?}: a marker off a playable cell"
            );
        }
        if held_ever[i] {
            assert!(
                cell.holder.is_some() || cell.dot.is_some(),
                "{point:?} was held and is free again"
            );
            assert!(
                game.check(Move::Place(point)).is_err(),
                "{point:?}: a captured cell is playable"
            );
        }
        if cell.holder.is_some() {
            held_ever[i] = true;
        }
        if let Some(owner) = grounded_ever[i] {
            assert_eq!(
                cell.holder, None,
                "{point:?}: a grounded {owner} dot was captured"
            );
        }
        // Every held cell lies in a closed region of its holder (§12),
        // except what grounding gave away (§7.2: it moves no marker either).
        if let Some(holder) = cell.holder.filter(|_| !grounding) {
            assert!(
                !open[holder.index()][i],
                "{point:?}: held in an open region"
            );
        }
    }
    assert_eq!(game.scores(), scores, "scores are the held enemy dots");
    // Live dots grounded through owned cells now are never captured later.
    for colour in Colour::ALL {
        let owned = |i: usize| direct.live(i, colour) || direct.holder[i] == Some(colour);
        let grounded = direct.reach(&edges, owned);
        for i in 0..w * h {
            if grounded[i] && direct.live(i, colour) {
                grounded_ever[i] = Some(colour);
            }
        }
    }
}

/// Plays a random game, checking everything; `ground_one_in` is the chance
/// of grounding at each move.
fn random_game(mut game: Engine, rng_seed: u64, ground_one_in: usize, deep: bool) {
    let mut rng = Rng(rng_seed);
    let mut direct = Direct::of(&game);
    let cells = usize::from(game.field().width()) * usize::from(game.field().height());
    let (mut held_ever, mut grounded_ever) = (vec![false; cells], vec![None; cells]);
    let mut legal = Vec::new();
    while !game.is_over() {
        game.legal_moves_into(&mut legal);
        assert_eq!(legal.last(), Some(&Move::Ground));
        assert_eq!(legal.len() as u32, game.field().playable().len() + 1);
        // Every listed move is legal; refusals change nothing.
        if deep || rng.below(8) == 0 {
            for mv in legal.iter().take(3) {
                let mut copy = game.clone();
                assert!(copy.play(*mv).is_ok(), "listed {mv} refused");
            }
            for _ in 0..3 {
                let x = rng.below(usize::from(game.field().width()) + 2) as u16;
                let y = rng.below(usize::from(game.field().height()) + 2) as u16;
                let mv = Move::Place(Point::new(x, y));
                if legal.contains(&mv) {
                    continue;
                }
                let mut copy = game.clone();
                assert!(copy.play(mv).is_err(), "unlisted {mv} accepted");
                assert_eq!(copy, game, "refusing {mv} changed the game");
            }
        }
        let mv = if rng.below(ground_one_in) == 0 {
            Move::Ground
        } else {
            legal[rng.below(legal.len() - 1)]
        };
        let mover = game.to_move();
        let played = game.play(mv).expect("a listed move plays");
        match mv {
            Move::Place(p) => direct.place(mover, index(&game, p)),
            Move::Ground => direct.ground(mover),
        }
        assert_eq!(
            game.field().text(),
            direct.text(),
            "after {mv} (move {})",
            game.ply()
        );
        check_position(&game, &mut held_ever, &mut grounded_ever);
        if let Some(outcome) = played.outcome {
            let expected = match mv {
                Move::Ground => EndReason::Ground,
                Move::Place(_) => EndReason::Full,
            };
            assert_eq!(outcome.reason, expected);
            assert_eq!(outcome.scores, game.scores());
            let by_score = punct_referee::games::dots::Outcome::by_score(expected, game.scores());
            assert_eq!(outcome.winner, by_score.winner);
            if expected == EndReason::Full {
                assert!(game.field().playable().is_empty());
            }
        }
    }
    assert!(game.legal_moves().is_empty());
    // Records round-trip, with the seed revealed and without.
    let text = Record::of(&game, true).to_string();
    let record = Record::parse(&text).expect("own record reads");
    assert_eq!(record.to_string(), text);
    assert_eq!(record.replay(None).expect("own record replays"), game);
    let hidden = Record::parse(&Record::of(&game, false).to_string()).expect("reads");
    assert_eq!(
        hidden
            .replay(game.seed().copied())
            .expect("replays with the seed"),
        game
    );
}

fn starts() -> impl Strategy<Value = Start> {
    prop_oneof![
        Just(Start::Empty),
        Just(Start::Cross),
        Just(Start::DoubleCross),
        Just(Start::QuadrupleCross),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, ..ProptestConfig::default() })]

    #[test]
    fn small_fields_agree_with_the_rules_text(
        width in 4u8..=12, height in 4u8..=12, start in starts(), seed: u64, rng_seed: u64,
    ) {
        if let Some(game) = start_game(width, height, start, seed) {
            random_game(game, rng_seed, 400, true);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 100, ..ProptestConfig::default() })]

    #[test]
    fn medium_fields_agree_with_the_rules_text(
        width in 13u8..=24, height in 13u8..=24, start in starts(), seed: u64, rng_seed: u64,
    ) {
        if let Some(game) = start_game(width, height, start, seed) {
            random_game(game, rng_seed, 1000, false);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]

    #[test]
    fn full_standard_fields_agree_with_the_rules_text(start in starts(), seed: u64, rng_seed: u64) {
        if let Some(game) = start_game(39, 32, start, seed) {
            random_game(game, rng_seed, 5000, false);
        }
    }

}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1, ..ProptestConfig::default() })]

    #[test]
    fn the_largest_field_agrees_with_the_rules_text(seed: u64, rng_seed: u64) {
        if let Some(game) = start_game(64, 64, Start::QuadrupleCross, seed) {
            random_game(game, rng_seed, 20000, false);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// Notation and records never panic, whatever the text.
    #[test]
    fn any_text_is_read_or_refused(text in "\\PC{0,80}") {
        let _ = text.parse::<Move>();
        let _ = Record::parse(&text).map(|r| r.replay(None));
        let _ = punct_referee::games::dots::referee::import(&text, None);
    }

    /// A record with one character changed replays or is refused, and a
    /// refusal names a reason.
    #[test]
    fn a_damaged_record_is_replayed_or_refused(rng_seed: u64, at: usize, c in "[ -~\n]") {
        let mut game = start_game(6, 6, Start::QuadrupleCross, rng_seed).expect("6x6 raised to 8x8");
        let mut rng = Rng(rng_seed);
        for _ in 0..30 {
            let legal = game.legal_moves();
            if legal.len() < 2 { break; }
            let _ = game.play(legal[rng.below(legal.len() - 1)]);
        }
        let text = Record::of(&game, true).to_string();
        let mut chars: Vec<char> = text.chars().collect();
        let i = at % chars.len();
        chars[i] = c.chars().next().unwrap_or(' ');
        let damaged: String = chars.into_iter().collect();
        match Record::parse(&damaged).and_then(|r| r.replay(None)) {
            Ok(replayed) => prop_assert!(replayed.ply() <= game.ply() + 1),
            Err(e) => prop_assert!(!e.reason().is_empty() && !e.to_string().is_empty()),
        }
    }
}
