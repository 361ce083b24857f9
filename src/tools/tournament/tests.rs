use super::*;

#[test]
fn round_robin_alternates_colours_and_gauntlet_centres_on_the_first() {
    let rr = schedule(3, Format::RoundRobin, 2);
    let pairs: Vec<(usize, usize)> = rr.iter().map(|p| (p.white, p.black)).collect();
    assert_eq!(pairs, [(0, 1), (1, 0), (0, 2), (2, 0), (1, 2), (2, 1)]);
    assert_eq!(
        rr.iter().map(|p| p.number).collect::<Vec<_>>(),
        [1, 2, 3, 4, 5, 6]
    );
    let g = schedule(3, Format::Gauntlet, 1);
    let pairs: Vec<(usize, usize)> = g.iter().map(|p| (p.white, p.black)).collect();
    assert_eq!(pairs, [(0, 1), (0, 2)]);
}

fn result(number: u32, white: usize, black: usize, white_points: f64) -> PlayedGame {
    PlayedGame {
        pairing: Pairing::of(number, &[white, black]),
        game_id: format!("g{number}"),
        white_points,
        points: vec![white_points, 1.0 - white_points],
        reason: "CONNECTION".into(),
        plies: 10,
        forfeit: None,
        record: String::new(),
        record_path: None,
    }
}

#[test]
fn report_counts_points_from_both_colours() {
    let names = vec!["a".to_string(), "b".to_string()];
    let r = report(
        &names,
        vec![
            result(2, 1, 0, 0.0),
            result(1, 0, 1, 1.0),
            result(3, 0, 1, 0.5),
        ],
    );
    assert_eq!(r.games[0].pairing.number, 1);
    let a = &r.standings[0];
    assert_eq!(
        (a.name.as_str(), a.wins, a.draws, a.losses, a.score),
        ("a", 2, 1, 0, 2.5)
    );
    let b = &r.standings[1];
    assert_eq!((b.wins, b.draws, b.losses, b.score), (0, 1, 2, 0.5));
    assert_eq!(r.cross[0][1], 2.5);
    assert_eq!(r.meetings[1][0], 3);
    let text = r.to_string();
    assert!(text.contains("2.5/3"), "{text}");
    assert!(text.lines().nth(1).unwrap().contains("a"), "{text}");
}

#[test]
fn larger_tables_rotate_every_bot_through_every_seat() {
    // 4 bots at tables of 3: the 4 groups of 3, 3 games each.
    let games = schedule_for(4, Format::RoundRobin, 3, 3);
    assert_eq!(games.len(), 12);
    let seatings: Vec<Vec<usize>> = games[..3].iter().map(Pairing::seats).collect();
    assert_eq!(seatings, [[0, 1, 2], [1, 2, 0], [2, 0, 1]]);
    let mut seat_counts = [[0; 3]; 4];
    for g in &games {
        for (seat, bot) in g.seats().into_iter().enumerate() {
            seat_counts[bot][seat] += 1;
        }
    }
    assert_eq!(seat_counts, [[3; 3]; 4], "each bot 3 times in each seat");
    // A gauntlet at tables of 4: the first bot with each 3 of 4 others.
    let gauntlet = schedule_for(5, Format::Gauntlet, 4, 4);
    assert_eq!(gauntlet.len(), 16);
    assert!(gauntlet.iter().all(|g| g.seats().contains(&0)));
    assert_eq!(gauntlet[1].seats(), [1, 2, 3, 0]);
    // Two seats: exactly the usual schedule; too few bots: none.
    assert_eq!(
        schedule_for(3, Format::RoundRobin, 2, 2),
        schedule(3, Format::RoundRobin, 2)
    );
    assert!(schedule_for(2, Format::RoundRobin, 2, 3).is_empty());
}

#[test]
fn openings_files_read_moves_and_seeds() {
    let seed = "ab".repeat(32);
    let text = format!("# two openings\n1,1 8,8\n\nseed={seed} 2,2  # seeded\n");
    let openings = parse_openings(&text).unwrap();
    assert_eq!(
        openings,
        [
            Opening {
                moves: vec!["1,1".into(), "8,8".into()],
                seed: None
            },
            Opening {
                moves: vec!["2,2".into()],
                seed: Some([0xab; 32])
            },
        ]
    );
    assert!(
        parse_openings("seed=12 1,1")
            .unwrap_err()
            .contains("line 1")
    );
    assert!(parse_openings("1,1 seed=00").is_err());
}

#[test]
fn larger_tables_share_each_games_point() {
    let names: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
    let game = |number, seats: &[usize], points: Vec<f64>| PlayedGame {
        pairing: Pairing::of(number, seats),
        game_id: format!("g{number}"),
        white_points: points[0],
        points,
        reason: "ROUNDS_WON".into(),
        plies: 30,
        forfeit: None,
        record: String::new(),
        record_path: None,
    };
    let third = 1.0 / 3.0;
    let r = report(
        &names,
        vec![
            // a wins; then b and c win together (a resigned); a draw.
            game(1, &[0, 1, 2], vec![1.0, 0.0, 0.0]),
            game(2, &[1, 2, 0], vec![0.5, 0.5, 0.0]),
            game(3, &[2, 0, 1], vec![third, third, third]),
        ],
    );
    let line = |name: &str| r.standings.iter().find(|s| s.name == name).unwrap();
    let a = line("a");
    assert_eq!((a.games, a.wins, a.draws, a.losses), (3, 1, 1, 1));
    assert!((a.score - (1.0 + third)).abs() < 1e-12);
    let b = line("b");
    assert_eq!((b.wins, b.draws, b.losses), (1, 1, 1));
    assert!((b.score - (0.5 + third)).abs() < 1e-12);
    assert_eq!(r.standings[0].name, "a");
    // Pairwise: a beat b and c in game 1, lost to both in game 2, drew
    // both in game 3; b and c drew games 1, 2 and 3 between them.
    assert_eq!((r.cross[0][1], r.meetings[0][1]), (1.5, 3));
    assert_eq!((r.cross[1][2], r.cross[2][1]), (1.5, 1.5));
    let total: f64 = r.standings.iter().map(|s| s.score).sum();
    assert!((total - 3.0).abs() < 1e-12);
}
