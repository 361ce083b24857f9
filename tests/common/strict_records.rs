//! Strict readers of game records, one per game, written from the grammar
//! of each game's rules (`docs/rules/<game>.md`: Dots §9, Punto §12, PÜNCT §7), never
//! from the engine's parser: each accepts exactly the canonical form its
//! rules define and names the first thing that is not. Every record the
//! test suite exports goes through [`check`] (through
//! [`super::export_checked`]).
//!
//! What "canonical" means here, per game:
//! * **Dots** (§9 "Canonical form"): the keys of §9's table that apply, in
//!   its order, `key: value` with one space, one empty line, one canonical
//!   move a line, every line ended by one LF, no comments, no `x-` keys.
//!   The two exceptions the service documents (docs/DOTS.md): the record of
//!   an unfinished `quadruple-cross` game withholds its secret seed (§4.4)
//!   and gives `x-commitment: <64 hex>` after §9's keys instead; a seed a
//!   client supplied is marked `x-seed: supplied`, last.
//! * **Punto** (§12): the header keys and order of §12's canonical listing
//!   (`entropy`, `seed` and `result` only when they apply), plus the one
//!   header of the service's own §9.4 allows for a referee end
//!   (`ending: RESIGNATION seat 2`, docs/PUNTO.md), and `x-seed: supplied`
//!   (before `seed`) for a seed a client chose; no other key; the body
//!   `round N` lines numbered from 1 and `C7 X,Y` placements in canonical
//!   text.
//! * **PÜNCT** (§7): `game: punct`, `variant:`, the rule options that
//!   differ from the defaults, `x-` keys of the service's own, `result:`
//!   when finished, a blank line, one canonical turn a line.

use sha2::{Digest, Sha256};

/// What a strict reader learnt from a record: enough to recount results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    /// `dots`, `punto` or `punct`.
    pub game: &'static str,
    /// The number of seats.
    pub seats: u32,
    /// Whether the record states an end.
    pub ended: bool,
    /// The seats (1-based) that won, empty for a draw, an abort or a game
    /// in progress.
    pub winners: Vec<u32>,
    /// The stated end reason (the record's own word for it), if any.
    pub reason: Option<String>,
    /// The number of moves (placements for Punto).
    pub moves: usize,
}

/// Reads `text` strictly as the record of the game its first line names.
pub fn check(text: &str) -> Result<Checked, String> {
    match text.split('\n').next() {
        Some("game: dots") => dots(text),
        Some("game: punto") => punto(text),
        Some("game: punct") => punct(text),
        first => Err(format!(
            "line 1: `{}` is not `game: dots`, `game: punto` or `game: punct`",
            first.unwrap_or_default()
        )),
    }
}

/// The lines of a canonical text: LF endings only, the last line ended
/// too, no CR, no tab, no trailing spaces. Returns the header lines and the
/// body lines (split at the first empty line).
fn lines(text: &str) -> Result<(Vec<&str>, Vec<&str>), String> {
    if !text.ends_with('\n') {
        return Err("the last line does not end with LF".into());
    }
    let all: Vec<&str> = text[..text.len() - 1].split('\n').collect();
    for (i, l) in all.iter().enumerate() {
        if l.contains('\r') {
            return Err(format!("line {}: CR (line ends are LF only)", i + 1));
        }
        if l.contains('\t') || l.ends_with(' ') || l.starts_with(' ') {
            return Err(format!("line {}: `{l}`: stray spaces or tabs", i + 1));
        }
        if l.starts_with('#') {
            return Err(format!("line {}: a comment", i + 1));
        }
    }
    let blank = all
        .iter()
        .position(|l| l.is_empty())
        .ok_or("no empty line after the header")?;
    let (header, rest) = all.split_at(blank);
    let body = &rest[1..];
    if let Some(i) = body.iter().position(|l| l.is_empty()) {
        return Err(format!(
            "line {}: a second empty line (the body has none)",
            blank + 2 + i + 1
        ));
    }
    Ok((header.to_vec(), body.to_vec()))
}

/// `key: value` with exactly one space after the colon.
fn key_value(n: usize, line: &str) -> Result<(&str, &str), String> {
    let (k, v) = line
        .split_once(": ")
        .ok_or_else(|| format!("line {n}: `{line}` is not `key: value`"))?;
    if k.is_empty() || v.is_empty() || v.starts_with(' ') {
        return Err(format!("line {n}: `{line}` is not `key: value`"));
    }
    Ok((k, v))
}

/// A canonical decimal: ASCII digits, no leading zero (but `0`).
fn decimal(text: &str) -> Option<u64> {
    let ok = !text.is_empty()
        && text.bytes().all(|b| b.is_ascii_digit())
        && (text == "0" || !text.starts_with('0'))
        && text.len() <= 18;
    ok.then(|| text.parse().ok()).flatten()
}

/// Lower-case hex of whole bytes.
fn lower_hex(text: &str) -> bool {
    !text.is_empty()
        && text.len().is_multiple_of(2)
        && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn sha256_hex(hex: &str) -> String {
    let bytes: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
        .collect();
    Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The header keys in order, each checked against its expected place:
/// `expected` lists the keys allowed, in canonical order; each appears at
/// most once and in that order.
struct Keys<'a> {
    order: &'a [&'a str],
    next: usize,
}

impl<'a> Keys<'a> {
    fn take(&mut self, n: usize, key: &str) -> Result<(), String> {
        match self.order[self.next..].iter().position(|k| *k == key) {
            Some(i) => {
                self.next += i + 1;
                Ok(())
            }
            None if self.order.contains(&key) => Err(format!(
                "line {n}: `{key}` out of the canonical order ({})",
                self.order.join(", ")
            )),
            None => Err(format!(
                "line {n}: unknown key `{key}` (the canonical keys are {})",
                self.order.join(", ")
            )),
        }
    }
}

// ---------------------------------------------------------------- Dots §9

/// A Dots record in the canonical form of docs/rules/dots.md §9.
pub fn dots(text: &str) -> Result<Checked, String> {
    let (header, body) = lines(text)?;
    let order = [
        "game",
        "width",
        "height",
        "start",
        "seed",
        "max-moves",
        "result",
        "score",
        "end",
        "x-commitment",
        "x-seed",
    ];
    let mut keys = Keys {
        order: &order,
        next: 0,
    };
    let (mut width, mut height, mut start) = (None, None, None);
    let (mut seed, mut result, mut score, mut end, mut commitment) = (None, None, None, None, None);
    for (i, line) in header.iter().enumerate() {
        let n = i + 1;
        let (k, v) = key_value(n, line)?;
        keys.take(n, k)?;
        let bad = || format!("line {n}: `{v}` is not a value of `{k}`");
        match k {
            "game" if v == "dots" => {}
            "width" => {
                width = Some(
                    decimal(v)
                        .filter(|w| (4..=64).contains(w))
                        .ok_or_else(bad)?,
                )
            }
            "height" => {
                height = Some(
                    decimal(v)
                        .filter(|h| (4..=64).contains(h))
                        .ok_or_else(bad)?,
                )
            }
            "start" => {
                ["empty", "cross", "double-cross", "quadruple-cross"]
                    .contains(&v)
                    .then_some(())
                    .ok_or_else(bad)?;
                start = Some(v);
            }
            "seed" => {
                (lower_hex(v) && v.len() <= 128)
                    .then_some(())
                    .ok_or_else(bad)?;
                seed = Some(v);
            }
            "max-moves" => {
                decimal(v).filter(|&m| m != 0).ok_or_else(bad)?;
            }
            "result" => {
                ["1-0", "0-1", "1/2-1/2", "*"]
                    .contains(&v)
                    .then_some(())
                    .ok_or_else(bad)?;
                result = Some(v);
            }
            "score" => {
                let (r, b) = v.split_once('-').ok_or_else(bad)?;
                decimal(r).zip(decimal(b)).ok_or_else(bad)?;
                score = Some(v);
            }
            "end" => {
                [
                    "full",
                    "ground",
                    "move-limit",
                    "resign",
                    "draw-agreement",
                    "timeout",
                    "abort",
                ]
                .contains(&v)
                .then_some(())
                .ok_or_else(bad)?;
                end = Some(v);
            }
            "x-seed" => (v == "supplied").then_some(()).ok_or_else(bad)?,
            "x-commitment" => {
                (lower_hex(v) && v.len() == 64)
                    .then_some(())
                    .ok_or_else(bad)?;
                commitment = Some(v);
            }
            _ => return Err(bad()),
        }
    }
    let (Some(width), Some(height), Some(start)) = (width, height, start) else {
        return Err("`width`, `height` and `start` are always in a canonical record".into());
    };
    if header.first() != Some(&"game: dots") {
        return Err("line 1 is not `game: dots`".into());
    }
    let ended = match (result, score, end) {
        (None, None, None) => false,
        (Some(_), Some(_), Some(_)) => true,
        _ => return Err("`result`, `score` and `end` come together".into()),
    };
    let seeded = start == "quadruple-cross";
    match (seeded, seed, commitment) {
        (false, None, None) => {}
        (false, _, _) => return Err(format!("`seed` or a commitment with `start: {start}`")),
        (true, Some(_), None) => {}
        (true, None, Some(_)) if !ended => {}
        (true, None, Some(_)) => {
            return Err("a finished `quadruple-cross` record must give its `seed`".into());
        }
        (true, Some(_), Some(_)) => {
            return Err("`x-commitment` goes only where the seed is withheld".into());
        }
        (true, None, None) => return Err("`start: quadruple-cross` without `seed`".into()),
    }
    if let (Some(r), Some(e)) = (result, end) {
        let fits = match e {
            "abort" => r == "*",
            "draw-agreement" => r == "1/2-1/2",
            "resign" | "timeout" => r == "1-0" || r == "0-1",
            _ => r != "*",
        };
        if !fits {
            return Err(format!("`result: {r}` does not go with `end: {e}`"));
        }
    }
    for (i, m) in body.iter().enumerate() {
        let n = header.len() + 2 + i;
        if *m == "ground" {
            continue;
        }
        let point = m
            .split_once(',')
            .and_then(|(x, y)| decimal(x).zip(decimal(y)));
        match point {
            Some((x, y)) if (1..=width).contains(&x) && (1..=height).contains(&y) => {}
            _ => return Err(format!("line {n}: `{m}` is not a canonical move (§8)")),
        }
    }
    let winners = match result {
        Some("1-0") => vec![1],
        Some("0-1") => vec![2],
        _ => Vec::new(),
    };
    Ok(Checked {
        game: "dots",
        seats: 2,
        ended,
        winners,
        reason: end.map(str::to_string),
        moves: body.len(),
    })
}

// -------------------------------------------------------------- Punto §12

/// A canonical Punto card (`R7`, §2).
fn punto_card(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() == 2 && b"ROBG".contains(&b[0]) && (b'1'..=b'9').contains(&b[1])
}

/// A canonical Punto coordinate (§4.4): no leading zero, no `-0`, inside
/// the area.
fn punto_number(text: &str) -> Option<i64> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, text),
    };
    let v = decimal(digits)? as i64;
    if negative && v == 0 {
        return None;
    }
    let v = if negative { -v } else { v };
    (-5..=5).contains(&v).then_some(v)
}

/// A Punto record in the canonical form of docs/rules/punto.md §12.
pub fn punto(text: &str) -> Result<Checked, String> {
    let (header, body) = lines(text)?;
    let order = [
        "game",
        "players",
        "team",
        "rounds_to_win",
        "max_rounds",
        "commitment",
        "entropy",
        "x-seed",
        "seed",
        "result",
        "ending",
    ];
    let mut keys = Keys {
        order: &order,
        next: 0,
    };
    let (mut players, mut team, mut commitment, mut seed) = (None, None, None, None);
    let (mut result, mut ending) = (None, None);
    let mut required = 0;
    for (i, line) in header.iter().enumerate() {
        let n = i + 1;
        let (k, v) = key_value(n, line)?;
        keys.take(n, k)?;
        let bad = || format!("line {n}: `{v}` is not a value of `{k}`");
        match k {
            "game" if v == "punto" => required += 1,
            "players" => {
                players = Some(decimal(v).filter(|p| (2..=4).contains(p)).ok_or_else(bad)?);
                required += 1;
            }
            "team" => {
                team = Some(match v {
                    "yes" => true,
                    "no" => false,
                    _ => return Err(bad()),
                });
                required += 1;
            }
            "rounds_to_win" => {
                decimal(v).filter(|r| (1..=9).contains(r)).ok_or_else(bad)?;
                required += 1;
            }
            "max_rounds" => {
                decimal(v).filter(|&r| r <= 99).ok_or_else(bad)?;
                required += 1;
            }
            "commitment" => {
                (lower_hex(v) && v.len() == 64)
                    .then_some(())
                    .ok_or_else(bad)?;
                commitment = Some(v);
                required += 1;
            }
            "entropy" => lower_hex(v).then_some(()).ok_or_else(bad)?,
            "x-seed" => (v == "supplied").then_some(()).ok_or_else(bad)?,
            "seed" => {
                (lower_hex(v) && v.len() == 64)
                    .then_some(())
                    .ok_or_else(bad)?;
                seed = Some(v);
            }
            "result" => result = Some(v),
            "ending" => ending = Some(v),
            _ => return Err(bad()),
        }
    }
    if required != 6 {
        return Err(
            "the canonical header always gives game, players, team, rounds_to_win, max_rounds and commitment"
                .into(),
        );
    }
    let (Some(players), Some(team)) = (players, team) else {
        unreachable!("counted above");
    };
    if team && players != 4 {
        return Err("`team: yes` needs `players: 4` (§3.1)".into());
    }
    if let (Some(seed), Some(c)) = (seed, commitment)
        && sha256_hex(seed) != c
    {
        return Err("SHA-256 of `seed` is not `commitment` (§10.7)".into());
    }
    let ended = result.is_some() || ending.is_some();
    if result.is_some() && ending.is_some() {
        return Err("`result` (a board end) and `ending` (a referee end) both given".into());
    }
    if ended != seed.is_some() {
        return Err("`seed` is given exactly once the match is over (§12, §10.7)".into());
    }
    let team_of = |seat: u32| if seat % 2 == 1 { 1 } else { 2 };
    let side_seats = |side_team: bool, n: u32| -> Vec<u32> {
        if side_team {
            (1..=4).filter(|&s| team_of(s) == n).collect()
        } else {
            vec![n]
        }
    };
    let mut winners = Vec::new();
    let mut reason = None;
    if let Some(r) = result {
        let words: Vec<&str> = r.split(' ').collect();
        match words[..] {
            ["draw"] => {}
            ["seat", n] if !team => {
                let n = decimal(n).filter(|&n| (1..=players).contains(&n));
                winners = side_seats(
                    false,
                    n.ok_or(format!("`result: {r}`: no such seat"))? as u32,
                );
            }
            ["team", n] if team => {
                let n = decimal(n).filter(|&n| n == 1 || n == 2);
                winners = side_seats(
                    true,
                    n.ok_or(format!("`result: {r}`: no such team"))? as u32,
                );
            }
            _ => return Err(format!("`result: {r}` is not `seat N`, `team N` or `draw`")),
        }
        reason = Some("result".to_string());
    }
    if let Some(e) = ending {
        let words: Vec<&str> = e.split(' ').collect();
        match words[..] {
            ["DRAW_AGREEMENT" | "ABORTED"] => {}
            ["RESIGNATION" | "TIMEOUT" | "ABANDONED", "seat", n] => {
                let loser = decimal(n)
                    .filter(|&n| (1..=players).contains(&n))
                    .ok_or(format!("`ending: {e}`: no such seat"))?
                    as u32;
                winners = (1..=players as u32)
                    .filter(|&s| {
                        if team {
                            team_of(s) != team_of(loser)
                        } else {
                            s != loser
                        }
                    })
                    .collect();
            }
            _ => return Err(format!("`ending: {e}` is not a referee end of the service")),
        }
        reason = Some(words[0].to_string());
    }
    // The body: `round N` lines from 1, each but the last with placements,
    // the first placement of each round on 0,0 (§5.1).
    let mut round = 0;
    let mut placed_in_round = 0;
    let mut placements = 0;
    for (i, l) in body.iter().enumerate() {
        let n = header.len() + 2 + i;
        if let Some(number) = l.strip_prefix("round ") {
            if round > 0 && placed_in_round == 0 {
                return Err(format!("line {n}: round {round} has no placement"));
            }
            if decimal(number) != Some(round + 1) {
                return Err(format!(
                    "line {n}: `{l}` where `round {}` is due",
                    round + 1
                ));
            }
            round += 1;
            placed_in_round = 0;
            continue;
        }
        if round == 0 {
            return Err(format!("line {n}: `{l}` before `round 1`"));
        }
        let (card, cell) = l
            .split_once(' ')
            .ok_or_else(|| format!("line {n}: `{l}` is not `CARD X,Y`"))?;
        let xy = cell
            .split_once(',')
            .and_then(|(x, y)| punto_number(x).zip(punto_number(y)));
        if !punto_card(card) || xy.is_none() {
            return Err(format!(
                "line {n}: `{l}` is not a canonical `CARD X,Y` (§2, §4.4)"
            ));
        }
        if placed_in_round == 0 && xy != Some((0, 0)) {
            return Err(format!(
                "line {n}: the first card of a round goes on 0,0 (§5.1)"
            ));
        }
        placed_in_round += 1;
        placements += 1;
    }
    if round == 0 && !ended {
        return Err("a match in progress has begun its first round: `round 1` is missing".into());
    }
    Ok(Checked {
        game: "punto",
        seats: players as u32,
        ended,
        winners,
        reason,
        moves: placements,
    })
}

// -------------------------------------------------------------- PÜNCT §7

/// A canonical PÜNCT space (§1): column letter, row number, on the board.
fn punct_space(text: &str) -> Option<(u8, u64)> {
    let (&c, row) = text.as_bytes().split_first()?;
    let x = c.checked_sub(b'A').filter(|&x| x <= 16)?;
    let y = decimal(std::str::from_utf8(row).ok()?).filter(|y| (1..=17).contains(y))?;
    let d = y as i64 - i64::from(x);
    let corner = ["A1", "A9", "I1", "I17", "Q9", "Q17"].contains(&text);
    ((-7..=9).contains(&d) && !corner).then_some((x, y))
}

/// A canonical PÜNCT turn (§7): `CODE@P:M1,M2` or `P>Q:M1,M2`, the minor
/// spaces distinct and in ascending order (column, then row).
fn punct_turn(text: &str) -> bool {
    let Some((head, minors)) = text.split_once(':') else {
        return false;
    };
    let Some((m1, m2)) = minors.split_once(',') else {
        return false;
    };
    let (Some(a), Some(b)) = (punct_space(m1), punct_space(m2)) else {
        return false;
    };
    if a >= b {
        return false;
    }
    if let Some((code, p)) = head.split_once('@') {
        ["SM", "SE", "AM", "AL", "AR", "T"].contains(&code) && punct_space(p).is_some()
    } else if let Some((from, to)) = head.split_once('>') {
        punct_space(from).is_some() && punct_space(to).is_some()
    } else {
        false
    }
}

/// A PÜNCT record in the canonical form of docs/rules/punct.md §7.
pub fn punct(text: &str) -> Result<Checked, String> {
    let (header, body) = lines(text)?;
    let mut result = None;
    let mut stage = 0; // 0 game, 1 variant, 2 options, 3 x- keys, 4 result
    for (i, line) in header.iter().enumerate() {
        let n = i + 1;
        let (k, v) = key_value(n, line)?;
        let bad = || format!("line {n}: `{v}` is not a value of `{k}`");
        let at = match k {
            "game" if v == "punct" => 0,
            "variant" if ["basic", "standard"].contains(&v) => 1,
            "end_on_supply" if v == "both_exhausted" => 2,
            "max_plies" if decimal(v).is_some_and(|p| p != 1000) => 2,
            "repetition_limit" if decimal(v).is_some_and(|p| p != 3) => 2,
            "result" => {
                result = Some(v);
                4
            }
            "game" | "variant" | "end_on_supply" | "max_plies" | "repetition_limit" => {
                return Err(bad());
            }
            _ if k.starts_with("x-")
                && k.len() > 2
                && k.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') =>
            {
                3
            }
            _ => {
                return Err(format!(
                    "line {n}: unknown key `{k}` (own keys start with `x-`)"
                ));
            }
        };
        if (n == 1) != (at == 0) || (n == 2) != (at == 1) || at < stage {
            return Err(format!("line {n}: `{k}` out of the canonical order"));
        }
        stage = at.max(stage);
    }
    if header.len() < 2 {
        return Err("the header gives at least `game` and `variant`".into());
    }
    let mut winners = Vec::new();
    let mut reason = None;
    if let Some(r) = result {
        let (who, why) = r
            .split_once(' ')
            .ok_or_else(|| format!("`result: {r}` is not `white|black|draw REASON`"))?;
        let reasons = [
            "CONNECTION",
            "LAST_PIECE",
            "CENTER_COUNT",
            "NO_LEGAL_MOVE",
            "REPETITION",
            "MOVE_LIMIT",
            "RESIGNATION",
            "DRAW_AGREEMENT",
            "TIMEOUT",
            "ABANDONED",
            "ABORTED",
        ];
        if !reasons.contains(&why) {
            return Err(format!("`result: {r}`: `{why}` is no end reason"));
        }
        match who {
            "white" => winners = vec![1],
            "black" => winners = vec![2],
            "draw" => {}
            _ => {
                return Err(format!(
                    "`result: {r}`: `{who}` is not white, black or draw"
                ));
            }
        }
        reason = Some(why.to_string());
    }
    for (i, t) in body.iter().enumerate() {
        if !punct_turn(t) {
            return Err(format!(
                "line {}: `{t}` is not a canonical turn (§7)",
                header.len() + 2 + i
            ));
        }
    }
    Ok(Checked {
        game: "punct",
        seats: 2,
        ended: result.is_some(),
        winners,
        reason,
        moves: body.len(),
    })
}
