//! Who plays whom, and in which seat: pure scheduling of a tournament
//! (docs/TOURNAMENTS.md, "Formats"). No I/O, no clock: the runner in
//! [`super`] asks for the fixed schedule at the start ([`fixed`]) and, in a
//! Swiss, for each next round once the last has ended ([`swiss_round`]).
//!
//! * Round robin: rounds by the circle method (one entrant fixed, the others
//!   turning round it; an odd field gets a rest each round), the first
//!   game's seats alternating from round to round. Tables of more seats:
//!   every group of the table's size, packed into rounds where nobody plays
//!   twice. Double: the same rounds again with the seats turned round.
//! * Gauntlet: the first entrant against every other (every group of the
//!   others one fewer than the table).
//! * Swiss: entrants ordered by points, each paired with the nearest one it
//!   has not met (a search that backs up when a pairing leaves someone
//!   without a partner); an odd field's lowest entrant without a bye yet
//!   gets one.
//!
//! Every meeting of a group is `games` games, its seating rotated by one
//! seat from one game to the next (`A B C`, `B C A`, `C A B`); with
//! openings, `games` games per opening. So with a multiple of the table's
//! seats each entrant of a group sits in each seat equally often, and each
//! opening is played from every seat.

use std::collections::BTreeSet;

/// Who plays whom.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Format {
    /// Every group meets once.
    RoundRobin,
    /// Every group meets twice, the second time with the seats turned round.
    DoubleRoundRobin,
    /// The first entrant meets every other.
    Gauntlet,
    /// This many rounds of pairings by score, without repeats.
    Swiss {
        /// The rounds, fewer than the entrants.
        rounds: u32,
    },
}

/// One game to play: its round, the entrants in seat order, the opening.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Planned {
    /// The round, from 1.
    pub round: u32,
    /// Entrant indexes, seat 1 first.
    pub seats: Vec<usize>,
    /// The opening's index, when the tournament has openings.
    pub opening: Option<usize>,
}

/// How every meeting is played.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meeting {
    /// Seats at a table (2 to 4).
    pub table: usize,
    /// Games per meeting (per opening, with openings).
    pub games: u32,
    /// Openings (0: none).
    pub openings: usize,
}

/// Why a format cannot be scheduled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    /// Fewer entrants than a table has seats, or than two.
    #[error("{entrants} entrants cannot fill a table of {table} seats")]
    TooFewEntrants {
        /// Entrants entered.
        entrants: usize,
        /// Seats at a table.
        table: usize,
    },
    /// A Swiss of as many rounds as entrants (or more) must pair some twice.
    #[error("a Swiss of {rounds} rounds needs more than {rounds} entrants (it has {entrants})")]
    TooManyRounds {
        /// Rounds asked for.
        rounds: u32,
        /// Entrants entered.
        entrants: usize,
    },
    /// A Swiss pairs two; this game seats more.
    #[error("a Swiss pairs two entrants, but this game seats {0} at a table")]
    SwissTable(usize),
}

/// Checks that `entrants` can play `format` at tables of `table` seats.
pub fn check(format: Format, entrants: usize, table: usize) -> Result<(), ScheduleError> {
    if entrants < table.max(2) {
        return Err(ScheduleError::TooFewEntrants { entrants, table });
    }
    if let Format::Swiss { rounds } = format {
        if table != 2 {
            return Err(ScheduleError::SwissTable(table));
        }
        if rounds as usize >= entrants || rounds == 0 {
            return Err(ScheduleError::TooManyRounds { rounds, entrants });
        }
    }
    Ok(())
}

/// How many games `format` schedules for `entrants` (a Swiss: over all its
/// rounds, byes not counted), computed without building the schedule, so
/// that a schedule too large to hold is refused before it is built.
pub fn game_count(format: Format, entrants: usize, meeting: Meeting) -> u128 {
    let choose = |n: usize, k: usize| -> u128 {
        if k > n {
            return 0;
        }
        (0..k).fold(1u128, |acc, i| {
            acc.saturating_mul((n - i) as u128) / (i as u128 + 1)
        })
    };
    let per_meeting = u128::from(meeting.games).saturating_mul(meeting.openings.max(1) as u128);
    let meetings = match format {
        Format::RoundRobin => choose(entrants, meeting.table),
        Format::DoubleRoundRobin => choose(entrants, meeting.table).saturating_mul(2),
        Format::Gauntlet => choose(entrants.saturating_sub(1), meeting.table.saturating_sub(1)),
        Format::Swiss { rounds } => (entrants / 2) as u128 * u128::from(rounds),
    };
    meetings.saturating_mul(per_meeting)
}

/// The whole schedule of a round robin, double round robin or gauntlet, by
/// round; empty for a Swiss (its rounds come one at a time).
pub fn fixed(
    format: Format,
    entrants: usize,
    meeting: Meeting,
) -> Result<Vec<Planned>, ScheduleError> {
    check(format, entrants, meeting.table)?;
    let rounds: Vec<Vec<Vec<usize>>> = match format {
        Format::RoundRobin => round_robin_rounds(entrants, meeting.table),
        Format::DoubleRoundRobin => {
            let first = round_robin_rounds(entrants, meeting.table);
            let second = first
                .iter()
                .map(|round| {
                    round
                        .iter()
                        .map(|group| group.iter().rev().copied().collect())
                        .collect()
                })
                .collect::<Vec<_>>();
            first.into_iter().chain(second).collect()
        }
        Format::Gauntlet => combinations(&(1..entrants).collect::<Vec<_>>(), meeting.table - 1)
            .into_iter()
            .map(|others| vec![std::iter::once(0).chain(others).collect()])
            .collect(),
        Format::Swiss { .. } => return Ok(Vec::new()),
    };
    let mut out = Vec::new();
    for (r, groups) in rounds.iter().enumerate() {
        for group in groups {
            out.extend(meeting_games(r as u32 + 1, group, meeting));
        }
    }
    Ok(out)
}

/// The rounds this format has (a Swiss: its rounds).
pub fn round_count(format: Format, planned: &[Planned]) -> u32 {
    match format {
        Format::Swiss { rounds } => rounds,
        _ => planned.iter().map(|p| p.round).max().unwrap_or(0),
    }
}

/// The games of one meeting of `group` (its first seating as given) in
/// round `round`: per opening, `games` games with the seating rotated.
pub fn meeting_games(round: u32, group: &[usize], meeting: Meeting) -> Vec<Planned> {
    let openings: Vec<Option<usize>> = if meeting.openings == 0 {
        vec![None]
    } else {
        (0..meeting.openings).map(Some).collect()
    };
    let t = group.len();
    let mut out = Vec::new();
    for opening in openings {
        for k in 0..meeting.games as usize {
            out.push(Planned {
                round,
                seats: (0..t).map(|i| group[(i + k) % t]).collect(),
                opening,
            });
        }
    }
    out
}

/// Round robin rounds: with two seats the circle method, the fixed
/// entrant's colour and every other pair's alternating by round; with more,
/// every group of `table` entrants packed greedily into rounds where nobody
/// plays twice.
fn round_robin_rounds(entrants: usize, table: usize) -> Vec<Vec<Vec<usize>>> {
    if table == 2 {
        return circle_rounds(entrants);
    }
    let mut rounds: Vec<(BTreeSet<usize>, Vec<Vec<usize>>)> = Vec::new();
    for group in combinations(&(0..entrants).collect::<Vec<_>>(), table) {
        match rounds
            .iter_mut()
            .find(|(busy, _)| group.iter().all(|e| !busy.contains(e)))
        {
            Some((busy, groups)) => {
                busy.extend(group.iter().copied());
                groups.push(group);
            }
            None => rounds.push((group.iter().copied().collect(), vec![group])),
        }
    }
    rounds.into_iter().map(|(_, groups)| groups).collect()
}

/// The circle method: `n − 1` rounds (`n` rounds for an odd `n`, each with
/// one entrant resting), every pair once.
fn circle_rounds(entrants: usize) -> Vec<Vec<Vec<usize>>> {
    // An odd field gets a "rest" slot (usize::MAX): its partner sits out.
    let mut ring: Vec<usize> = (0..entrants).collect();
    if entrants % 2 == 1 {
        ring.push(usize::MAX);
    }
    let n = ring.len();
    let mut rounds = Vec::new();
    for r in 0..n - 1 {
        let mut round = Vec::new();
        for i in 0..n / 2 {
            let (a, b) = (ring[i], ring[n - 1 - i]);
            if a == usize::MAX || b == usize::MAX {
                continue;
            }
            // Alternate who sits first, by round and by board.
            if (r + i) % 2 == 0 {
                round.push(vec![a, b]);
            } else {
                round.push(vec![b, a]);
            }
        }
        rounds.push(round);
        // Keep the first fixed, turn the others by one.
        let last = ring.pop().unwrap_or(usize::MAX);
        ring.insert(1, last);
    }
    rounds
}

/// Every choice of `k` items of `items`, in lexicographic order.
pub fn combinations(items: &[usize], k: usize) -> Vec<Vec<usize>> {
    if k == 0 {
        return vec![Vec::new()];
    }
    let mut out = Vec::new();
    for (i, &first) in items.iter().enumerate() {
        for rest in combinations(&items[i + 1..], k - 1) {
            out.push(std::iter::once(first).chain(rest).collect());
        }
    }
    out
}

/// What a Swiss pairing knows of each entrant so far.
#[derive(Debug, Clone, Default)]
pub struct SwissEntrant {
    /// Its points.
    pub points: f64,
    /// The entrants it has met.
    pub met: BTreeSet<usize>,
    /// Whether it has had a bye.
    pub had_bye: bool,
    /// Games in the first seat minus games in the second.
    pub first_seat_balance: i32,
}

/// One Swiss round: the pairs (first seat first) and the bye, if the field
/// is odd. Entrants are ranked by points (then index); each is paired with
/// the nearest-ranked one it has not met, backing up when that leaves
/// someone without a partner. Only when no pairing without a repeat exists
/// (possible only late in long Swiss events) are repeats allowed. The
/// entrant that has sat first less often sits first.
pub fn swiss_round(field: &[SwissEntrant]) -> (Vec<[usize; 2]>, Option<usize>) {
    let mut ranked: Vec<usize> = (0..field.len()).collect();
    ranked.sort_by(|&a, &b| field[b].points.total_cmp(&field[a].points).then(a.cmp(&b)));
    // The bye: the lowest-ranked entrant without one whose absence leaves a
    // pairable field.
    let bye_candidates: Vec<Option<usize>> = if field.len() % 2 == 1 {
        let mut c: Vec<Option<usize>> = ranked
            .iter()
            .rev()
            .filter(|&&e| !field[e].had_bye)
            .map(|&e| Some(e))
            .collect();
        c.extend(ranked.iter().rev().map(|&e| Some(e)));
        c
    } else {
        vec![None]
    };
    for allow_repeats in [false, true] {
        for &bye in &bye_candidates {
            let rest: Vec<usize> = ranked.iter().copied().filter(|&e| Some(e) != bye).collect();
            let mut budget = 200_000u32;
            if let Some(pairs) = pair_up(&rest, field, allow_repeats, &mut budget) {
                let seated = pairs
                    .into_iter()
                    .map(|[a, b]| {
                        if field[b].first_seat_balance < field[a].first_seat_balance {
                            [b, a]
                        } else {
                            [a, b]
                        }
                    })
                    .collect();
                return (seated, bye);
            }
        }
    }
    (Vec::new(), None)
}

/// A perfect matching of `rest` (ranked) without repeats (unless allowed),
/// nearest ranks first; `None` when there is none (or the search budget ran
/// out).
fn pair_up(
    rest: &[usize],
    field: &[SwissEntrant],
    allow_repeats: bool,
    budget: &mut u32,
) -> Option<Vec<[usize; 2]>> {
    let Some((&first, others)) = rest.split_first() else {
        return Some(Vec::new());
    };
    for (i, &partner) in others.iter().enumerate() {
        if *budget == 0 {
            return None;
        }
        *budget -= 1;
        if !allow_repeats && field[first].met.contains(&partner) {
            continue;
        }
        let remaining: Vec<usize> = others
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != i)
            .map(|(_, &e)| e)
            .collect();
        if let Some(mut pairs) = pair_up(&remaining, field, allow_repeats, budget) {
            pairs.insert(0, [first, partner]);
            return Some(pairs);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const TWO: Meeting = Meeting {
        table: 2,
        games: 1,
        openings: 0,
    };

    fn pairs_of(planned: &[Planned]) -> Vec<(usize, usize)> {
        planned.iter().map(|p| (p.seats[0], p.seats[1])).collect()
    }

    #[test]
    fn round_robin_of_four_meets_every_pair_once_in_three_rounds() {
        let games = fixed(Format::RoundRobin, 4, TWO).unwrap();
        assert_eq!(games.len(), 6);
        assert_eq!(round_count(Format::RoundRobin, &games), 3);
        let mut met: Vec<(usize, usize)> = pairs_of(&games)
            .into_iter()
            .map(|(a, b)| (a.min(b), a.max(b)))
            .collect();
        met.sort();
        assert_eq!(met, [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]);
        for round in 1..=3 {
            let mut busy: Vec<usize> = games
                .iter()
                .filter(|g| g.round == round)
                .flat_map(|g| g.seats.clone())
                .collect();
            busy.sort();
            assert_eq!(busy, [0, 1, 2, 3], "round {round}");
        }
    }

    #[test]
    fn an_odd_round_robin_rests_one_entrant_a_round() {
        let games = fixed(Format::RoundRobin, 5, TWO).unwrap();
        assert_eq!(games.len(), 10);
        assert_eq!(round_count(Format::RoundRobin, &games), 5);
        assert!(
            (1..=5).all(|r| games.iter().filter(|g| g.round == r).count() == 2),
            "two games a round"
        );
    }

    #[test]
    fn double_round_robin_turns_every_seating_round() {
        let games = fixed(Format::DoubleRoundRobin, 4, TWO).unwrap();
        assert_eq!(games.len(), 12);
        let (first, second) = games.split_at(6);
        for (a, b) in first.iter().zip(second) {
            assert_eq!(a.seats, vec![b.seats[1], b.seats[0]]);
            assert_eq!(a.round + 3, b.round);
        }
    }

    #[test]
    fn gauntlet_puts_the_first_entrant_in_every_game() {
        let games = fixed(Format::Gauntlet, 3, Meeting { games: 2, ..TWO }).unwrap();
        assert_eq!(pairs_of(&games), [(0, 1), (1, 0), (0, 2), (2, 0)]);
        assert_eq!(
            games.iter().map(|g| g.round).collect::<Vec<_>>(),
            [1, 1, 2, 2]
        );
    }

    #[test]
    fn openings_are_played_from_both_sides() {
        let games = fixed(
            Format::RoundRobin,
            2,
            Meeting {
                table: 2,
                games: 2,
                openings: 3,
            },
        )
        .unwrap();
        assert_eq!(games.len(), 6);
        for o in 0..3 {
            let seatings: Vec<Vec<usize>> = games
                .iter()
                .filter(|g| g.opening == Some(o))
                .map(|g| g.seats.clone())
                .collect();
            assert_eq!(seatings, [vec![0, 1], vec![1, 0]], "opening {o}");
        }
    }

    #[test]
    fn tables_of_three_rotate_every_seat_evenly() {
        let meeting = Meeting {
            table: 3,
            games: 3,
            openings: 0,
        };
        let games = fixed(Format::RoundRobin, 4, meeting).unwrap();
        assert_eq!(games.len(), 12);
        let mut seat_counts = [[0; 3]; 4];
        for g in &games {
            for (seat, &e) in g.seats.iter().enumerate() {
                seat_counts[e][seat] += 1;
            }
        }
        assert_eq!(seat_counts, [[3; 3]; 4]);
        // Two groups of 3 out of 4 always share someone: one group a round.
        assert_eq!(round_count(Format::RoundRobin, &games), 4);
    }

    #[test]
    fn game_counts_agree_with_the_schedules() {
        for (format, n, table, games, openings) in [
            (Format::RoundRobin, 5, 2, 2, 0),
            (Format::DoubleRoundRobin, 4, 2, 1, 3),
            (Format::Gauntlet, 6, 2, 4, 0),
            (Format::RoundRobin, 5, 3, 3, 0),
            (Format::Gauntlet, 5, 4, 4, 2),
        ] {
            let meeting = Meeting {
                table,
                games,
                openings,
            };
            let planned = fixed(format, n, meeting).unwrap();
            assert_eq!(game_count(format, n, meeting), planned.len() as u128);
        }
        // Far too many to build: counted, not built.
        let huge = Meeting {
            table: 4,
            games: 1000,
            openings: 1000,
        };
        assert!(game_count(Format::RoundRobin, 256, huge) > 10_000_000_000_000);
    }

    #[test]
    fn unschedulable_formats_are_refused() {
        assert_eq!(
            check(Format::Swiss { rounds: 4 }, 4, 2),
            Err(ScheduleError::TooManyRounds {
                rounds: 4,
                entrants: 4
            })
        );
        assert_eq!(
            check(Format::Swiss { rounds: 2 }, 6, 3),
            Err(ScheduleError::SwissTable(3))
        );
        assert_eq!(
            check(Format::RoundRobin, 2, 3),
            Err(ScheduleError::TooFewEntrants {
                entrants: 2,
                table: 3
            })
        );
        assert!(check(Format::Swiss { rounds: 3 }, 4, 2).is_ok());
    }

    /// Plays a Swiss of `n` entrants over `rounds` rounds with results from
    /// `outcomes` (the first seat's points per game), as the runner does.
    fn play_swiss(n: usize, rounds: u32, outcomes: &[u8]) -> Vec<SwissEntrant> {
        let mut field = vec![SwissEntrant::default(); n];
        let mut k = 0;
        for _ in 0..rounds {
            let (pairs, bye) = swiss_round(&field);
            assert_eq!(pairs.len(), n / 2);
            assert_eq!(bye.is_some(), n % 2 == 1);
            if let Some(b) = bye {
                assert!(!field[b].had_bye, "a second bye");
                field[b].had_bye = true;
                field[b].points += 1.0;
            }
            for [a, b] in pairs {
                assert!(!field[a].met.contains(&b), "{a} and {b} met twice");
                field[a].met.insert(b);
                field[b].met.insert(a);
                field[a].first_seat_balance += 1;
                field[b].first_seat_balance -= 1;
                let first = f64::from(outcomes[k % outcomes.len()]) / 2.0;
                k += 1;
                field[a].points += first;
                field[b].points += 1.0 - first;
            }
        }
        field
    }

    proptest! {
        #[test]
        fn a_swiss_of_nine_never_pairs_twice(
            outcomes in proptest::collection::vec(0u8..=2, 1..64),
            rounds in 1u32..=6,
        ) {
            let field = play_swiss(9, rounds, &outcomes);
            // Every entrant met `rounds` others, or one fewer with its bye.
            for e in &field {
                let expected = rounds as usize - usize::from(e.had_bye);
                prop_assert_eq!(e.met.len(), expected);
                prop_assert!(e.first_seat_balance.abs() <= rounds as i32);
            }
            let total: f64 = field.iter().map(|e| e.points).sum();
            prop_assert_eq!(total, f64::from(rounds) * 5.0);
        }

        #[test]
        fn round_robin_seats_are_balanced_at_any_size(n in 2usize..10, games in 1u32..4) {
            let planned = fixed(Format::RoundRobin, n, Meeting { table: 2, games: games * 2, openings: 0 }).unwrap();
            prop_assert_eq!(planned.len(), n * (n - 1) / 2 * games as usize * 2);
            let mut first = vec![0; n];
            let mut second = vec![0; n];
            for p in &planned {
                first[p.seats[0]] += 1;
                second[p.seats[1]] += 1;
            }
            prop_assert_eq!(first, second);
            // Nobody plays twice in a round.
            for r in 1..=round_count(Format::RoundRobin, &planned) {
                let mut busy: Vec<usize> = planned.iter().filter(|p| p.round == r).flat_map(|p| p.seats.clone()).collect();
                let len = busy.len();
                busy.sort();
                busy.dedup();
                prop_assert_eq!(busy.len() * 2 * games as usize, len);
            }
        }

        #[test]
        fn punto_tables_rotate_seats_evenly(n in 3usize..7, table in 3usize..=4) {
            prop_assume!(n >= table);
            let planned = fixed(Format::RoundRobin, n, Meeting { table, games: table as u32, openings: 0 }).unwrap();
            let mut counts = vec![vec![0u32; table]; n];
            for p in &planned {
                for (seat, &e) in p.seats.iter().enumerate() {
                    counts[e][seat] += 1;
                }
            }
            for row in &counts {
                prop_assert!(row.iter().all(|&c| c == row[0]));
            }
        }
    }
}
