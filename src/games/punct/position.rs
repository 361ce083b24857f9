//! A PÜNCT position (docs/rules/punct.md §3): where every piece is, the stacks of dots on
//! every space, both supplies, the player to move and the ply count.
//!
//! The representation is plain fixed-size data (`Copy`, no allocation). Each
//! space keeps its top piece and its height; each dot of a piece on the board
//! keeps the piece directly under it in its space. Because only uncovered pieces
//! ever leave a space, a space's stack is a linked list from its top dot down,
//! and lifting a piece restores the spaces below it exactly.

use super::board::{SPACE_COUNT, Space, SpaceSet};
use super::piece::{Colour, Footprint, PieceCode, footprint};

/// Pieces per player.
pub const PIECES_PER_PLAYER: usize = 18;
/// Pieces in the game (both players).
pub const PIECE_COUNT: usize = 2 * PIECES_PER_PLAYER;
const NO_PIECE: u8 = u8::MAX;

/// Identifies one of the 36 physical pieces: White's are 0..18, Black's 18..36,
/// each colour's ordered `SM SM SE SE SE SE AM AM AL AL AR AR T T T T T T`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PieceId(u8);

const CODE_OF: [PieceCode; PIECES_PER_PLAYER] = {
    let mut t = [PieceCode::T; PIECES_PER_PLAYER];
    let mut i = 0;
    let mut c = 0;
    while c < 6 {
        let code = PieceCode::ALL[c];
        let mut k = 0;
        while k < code.count() {
            t[i] = code;
            i += 1;
            k += 1;
        }
        c += 1;
    }
    t
};

/// First piece index (within a colour) of each code.
const FIRST_OF: [u8; 6] = [0, 2, 6, 8, 10, 12];

impl PieceId {
    /// The piece with number `i` (0..36).
    pub const fn from_index(i: usize) -> Option<PieceId> {
        if i < PIECE_COUNT {
            Some(PieceId(i as u8))
        } else {
            None
        }
    }

    /// Number 0..36.
    #[inline]
    pub const fn index(self) -> usize {
        self.0 as usize
    }

    /// The owner.
    #[inline]
    pub const fn colour(self) -> Colour {
        if (self.0 as usize) < PIECES_PER_PLAYER {
            Colour::White
        } else {
            Colour::Black
        }
    }

    /// The kind of piece.
    #[inline]
    pub const fn code(self) -> PieceCode {
        CODE_OF[self.0 as usize % PIECES_PER_PLAYER]
    }

    /// All pieces of `colour`.
    pub fn of(colour: Colour) -> impl Iterator<Item = PieceId> {
        let base = (colour.index() * PIECES_PER_PLAYER) as u8;
        (base..base + PIECES_PER_PLAYER as u8).map(PieceId)
    }

    fn range(colour: Colour, code: PieceCode) -> std::ops::Range<u8> {
        let base = (colour.index() * PIECES_PER_PLAYER) as u8 + FIRST_OF[code.index()];
        base..base + code.count()
    }
}

/// Where a piece on the board lies: PÜNCT space, canonical rotation and level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Placement {
    /// The space of the PÜNCT dot.
    pub punct: Space,
    /// Rotation 0..6 (0..3 for `SM`, whose `r` and `r + 3` are the same).
    pub rotation: u8,
    /// The level of all three dots (0 = on the board).
    pub level: u8,
}

/// One dot in a space's stack, as seen by [`Position::stack`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dot {
    /// The piece the dot belongs to.
    pub piece: PieceId,
    /// Its level.
    pub level: u8,
    /// Whether it is that piece's PÜNCT.
    pub is_punct: bool,
}

/// A piece on the board, as seen by [`Position::pieces_on_board`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BoardPiece {
    /// Which piece.
    pub id: PieceId,
    /// Where it lies.
    pub placement: Placement,
    /// Its three spaces, PÜNCT first.
    pub spaces: Footprint,
    /// Whether it may move (no dot covered, docs/rules/punct.md §3).
    pub mobile: bool,
}

/// How a validated move comes to rest (docs/rules/punct.md §3), found by validation and
/// used by [`Position::apply_landing`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Landing {
    /// The level of the piece's dots.
    pub level: u8,
    /// Whether the middle dot is unsupported (a bridge).
    pub bridge: bool,
}

/// A complete PÜNCT position.
#[derive(Clone, Copy)]
pub struct Position {
    placements: [Option<Placement>; PIECE_COUNT],
    /// Cached footprint of each piece on the board (stale when not on the board).
    spaces: [Footprint; PIECE_COUNT],
    /// For each piece's dot k, the piece whose dot lies directly below it.
    under: [[u8; 3]; PIECE_COUNT],
    top: [u8; SPACE_COUNT],
    height: [u8; SPACE_COUNT],
    /// Spaces whose top dot is White's / Black's.
    tops: [SpaceSet; 2],
    supply: [[u8; 6]; 2],
    to_move: Colour,
    ply: u32,
    hash: u64,
}

impl PartialEq for Position {
    /// Positions are equal when they are the same game situation (docs/rules/punct.md §6
    /// repetition): same pieces on the same spaces and levels, same supplies,
    /// same player to move. Identical pieces are interchangeable; the ply is
    /// not part of the position.
    fn eq(&self, other: &Self) -> bool {
        self.hash == other.hash && self.key() == other.key()
    }
}
impl Eq for Position {}

impl std::fmt::Debug for Position {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", super::render::ascii(self))
    }
}

/// The exact identity of a position for repetition (docs/rules/punct.md §6): each group
/// of identical pieces sorted, so that which physical piece is where does not
/// matter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PositionKey {
    hash: u64,
    pieces: [u32; PIECE_COUNT],
    to_move: Colour,
}

impl PositionKey {
    /// A 64-bit hash of the position (equal positions have equal hashes).
    pub fn hash64(&self) -> u64 {
        self.hash
    }
}

#[inline]
fn mix(mut z: u64) -> u64 {
    // splitmix64 finaliser.
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

const BLACK_TO_MOVE_KEY: u64 = 0x5851_F42D_4C95_7F2D;

#[inline]
fn piece_key(id: PieceId, p: Placement) -> u64 {
    let group = (id.colour().index() * 6 + id.code().index()) as u64;
    mix(group << 32 | (p.punct.index() as u64) << 16 | (p.rotation as u64) << 8 | p.level as u64)
}

impl Default for Position {
    fn default() -> Self {
        Position::start()
    }
}

impl Position {
    /// The start: an empty board, full supplies, White to move, ply 0.
    pub fn start() -> Position {
        let full = PieceCode::ALL.map(PieceCode::count);
        let supply = [full, full];
        let any = Space::CENTRE;
        Position {
            placements: [None; PIECE_COUNT],
            spaces: [[any; 3]; PIECE_COUNT],
            under: [[NO_PIECE; 3]; PIECE_COUNT],
            top: [NO_PIECE; SPACE_COUNT],
            height: [0; SPACE_COUNT],
            tops: [SpaceSet::EMPTY; 2],
            supply,
            to_move: Colour::White,
            ply: 0,
            hash: 0,
        }
    }

    /// The player whose turn it is.
    #[inline]
    pub fn to_move(&self) -> Colour {
        self.to_move
    }

    /// Turns played so far (0 at the start).
    #[inline]
    pub fn ply(&self) -> u32 {
        self.ply
    }

    /// Height of a space: 1 + the level of its highest dot, 0 if it has none.
    #[inline]
    pub fn height(&self, s: Space) -> u8 {
        self.height[s.index()]
    }

    /// The piece whose dot is on top of `s`, if any.
    #[inline]
    pub fn top_piece(&self, s: Space) -> Option<PieceId> {
        let t = self.top[s.index()];
        (t != NO_PIECE).then_some(PieceId(t))
    }

    /// The colour of the top dot of `s` (what is "seen from above").
    #[inline]
    pub fn top_colour(&self, s: Space) -> Option<Colour> {
        self.top_piece(s).map(PieceId::colour)
    }

    /// Spaces whose top dot is `colour`'s.
    #[inline]
    pub fn tops_of(&self, colour: Colour) -> SpaceSet {
        self.tops[colour.index()]
    }

    /// Where a piece lies, or `None` while it is in its owner's supply.
    #[inline]
    pub fn placement(&self, id: PieceId) -> Option<Placement> {
        self.placements[id.index()]
    }

    /// The spaces of a piece on the board.
    #[inline]
    pub fn piece_spaces(&self, id: PieceId) -> Option<Footprint> {
        self.placements[id.index()].map(|_| self.spaces[id.index()])
    }

    /// Whether a piece on the board has no covered dot (docs/rules/punct.md §3).
    #[inline]
    pub fn is_mobile(&self, id: PieceId) -> bool {
        self.placements[id.index()].is_some()
            && self.spaces[id.index()]
                .iter()
                .all(|s| self.top[s.index()] == id.0)
    }

    /// Pieces of `code` that `colour` has not yet played.
    #[inline]
    pub fn supply(&self, colour: Colour, code: PieceCode) -> u8 {
        self.supply[colour.index()][code.index()]
    }

    /// Pieces `colour` has not yet played, all codes together.
    pub fn supply_total(&self, colour: Colour) -> u8 {
        self.supply[colour.index()].iter().sum()
    }

    /// The piece whose PÜNCT is the top dot of `s` (how the notation names a
    /// moving piece, docs/rules/punct.md §7).
    #[inline]
    pub fn punct_on_top(&self, s: Space) -> Option<PieceId> {
        let id = self.top_piece(s)?;
        (self.spaces[id.index()][0] == s).then_some(id)
    }

    /// The dots of `s` from the top down.
    pub fn stack(&self, s: Space) -> Vec<Dot> {
        let mut out = Vec::new();
        let mut cur = self.top[s.index()];
        while cur != NO_PIECE {
            let id = PieceId(cur);
            let k = self.dot_index(id, s);
            out.push(Dot {
                piece: id,
                level: self.placements[id.index()].map_or(0, |p| p.level),
                is_punct: k == 0,
            });
            cur = self.under[id.index()][k];
        }
        out
    }

    #[inline]
    fn dot_index(&self, id: PieceId, s: Space) -> usize {
        let fp = &self.spaces[id.index()];
        if fp[0] == s {
            0
        } else if fp[1] == s {
            1
        } else {
            2
        }
    }

    /// Every piece on the board, in piece order.
    pub fn pieces_on_board(&self) -> impl Iterator<Item = BoardPiece> + '_ {
        (0..PIECE_COUNT as u8).filter_map(move |i| {
            let id = PieceId(i);
            let placement = self.placements[id.index()]?;
            Some(BoardPiece {
                id,
                placement,
                spaces: self.spaces[id.index()],
                mobile: self.is_mobile(id),
            })
        })
    }

    /// The first piece of `code` in `colour`'s supply.
    pub(crate) fn supply_piece(&self, colour: Colour, code: PieceCode) -> Option<PieceId> {
        PieceId::range(colour, code)
            .map(PieceId)
            .find(|id| self.placements[id.index()].is_none())
    }

    /// Height of `s` once `lifted` (a mobile piece) has been taken off the board.
    #[inline]
    pub(crate) fn height_without(&self, s: Space, lifted: Option<PieceId>) -> u8 {
        match lifted {
            Some(id) if self.top[s.index()] == id.0 => {
                let below = self.under[id.index()][self.dot_index(id, s)];
                if below == NO_PIECE {
                    0
                } else {
                    self.placements[below as usize].map_or(0, |p| p.level + 1)
                }
            }
            _ => self.height[s.index()],
        }
    }

    /// Top piece of `s` once `lifted` (a mobile piece) has been taken off the board.
    #[inline]
    pub(crate) fn top_without(&self, s: Space, lifted: Option<PieceId>) -> Option<PieceId> {
        let t = self.top[s.index()];
        let t = match lifted {
            Some(id) if t == id.0 => self.under[id.index()][self.dot_index(id, s)],
            _ => t,
        };
        (t != NO_PIECE).then_some(PieceId(t))
    }

    #[inline]
    fn set_top(&mut self, s: Space, piece: u8, height: u8) {
        let i = s.index();
        self.top[i] = piece;
        self.height[i] = height;
        self.tops[0].remove(s);
        self.tops[1].remove(s);
        if piece != NO_PIECE {
            self.tops[PieceId(piece).colour().index()].insert(s);
        }
    }

    fn lift(&mut self, id: PieceId) {
        let fp = self.spaces[id.index()];
        let Some(p) = self.placements[id.index()] else {
            return;
        };
        for (k, s) in fp.iter().enumerate() {
            let below = self.under[id.index()][k];
            let h = if below == NO_PIECE {
                0
            } else {
                self.placements[below as usize].map_or(0, |p| p.level + 1)
            };
            self.set_top(*s, below, h);
            self.under[id.index()][k] = NO_PIECE;
        }
        self.hash ^= piece_key(id, p);
        self.placements[id.index()] = None;
    }

    fn put(&mut self, id: PieceId, fp: Footprint, p: Placement) {
        for (k, s) in fp.iter().enumerate() {
            self.under[id.index()][k] = self.top[s.index()];
            self.set_top(*s, id.0, p.level + 1);
        }
        self.spaces[id.index()] = fp;
        self.placements[id.index()] = Some(p);
        self.hash ^= piece_key(id, p);
    }

    /// Plays a move that validation accepted with `landing`, then passes the turn.
    /// The move must have been validated on this very position.
    pub(crate) fn apply_landing(&mut self, mv: super::Move, landing: Landing) {
        use super::Move;
        let colour = self.to_move;
        match mv {
            Move::Place {
                code,
                punct,
                rotation,
            } => {
                let Some(id) = self.supply_piece(colour, code) else {
                    return;
                };
                let rotation = code.canonical_rotation(rotation);
                let Some(fp) = footprint(code, punct, rotation) else {
                    return;
                };
                self.supply[colour.index()][code.index()] -= 1;
                self.put(
                    id,
                    fp,
                    Placement {
                        punct,
                        rotation,
                        level: 0,
                    },
                );
            }
            Move::Shift { from, to, rotation } => {
                let Some(id) = self.punct_on_top(from) else {
                    return;
                };
                let code = id.code();
                let rotation = code.canonical_rotation(rotation);
                let Some(fp) = footprint(code, to, rotation) else {
                    return;
                };
                self.lift(id);
                self.put(
                    id,
                    fp,
                    Placement {
                        punct: to,
                        rotation,
                        level: landing.level,
                    },
                );
            }
        }
        self.to_move = colour.opponent();
        self.hash ^= BLACK_TO_MOVE_KEY;
        self.ply += 1;
    }

    /// The exact repetition identity of this position (docs/rules/punct.md §6).
    pub fn key(&self) -> PositionKey {
        let mut pieces = [0u32; PIECE_COUNT];
        for (i, p) in self.placements.iter().enumerate() {
            if let Some(p) = p {
                pieces[i] = 1 << 31
                    | (p.punct.index() as u32) << 16
                    | (p.rotation as u32) << 8
                    | p.level as u32;
            }
        }
        for colour in Colour::BOTH {
            for code in PieceCode::ALL {
                let r = PieceId::range(colour, code);
                pieces[r.start as usize..r.end as usize].sort_unstable();
            }
        }
        PositionKey {
            hash: self.hash,
            pieces,
            to_move: self.to_move,
        }
    }

    /// A 64-bit hash of the position, equal for equal positions.
    #[inline]
    pub fn hash64(&self) -> u64 {
        self.hash
    }

    /// Checks the internal invariants; used by tests and debug assertions.
    /// Returns a description of the first broken invariant.
    pub fn check_invariants(&self) -> Result<(), String> {
        let mut height = [0u8; SPACE_COUNT];
        let mut dots = [0u32; SPACE_COUNT];
        for colour in Colour::BOTH {
            let mut on_board = 0;
            for id in PieceId::of(colour) {
                if let Some(p) = self.placements[id.index()] {
                    on_board += 1;
                    let fp = footprint(id.code(), p.punct, p.rotation)
                        .ok_or_else(|| format!("{id:?} lies off the board"))?;
                    if fp != self.spaces[id.index()] {
                        return Err(format!("{id:?}: cached spaces are stale"));
                    }
                    for s in fp {
                        height[s.index()] = height[s.index()].max(p.level + 1);
                        dots[s.index()] += 1;
                    }
                }
            }
            let supply: u32 = self.supply[colour.index()].iter().map(|&n| n as u32).sum();
            if supply + on_board != PIECES_PER_PLAYER as u32 {
                return Err(format!(
                    "{colour}: supply {supply} + board {on_board} != 18"
                ));
            }
            for code in PieceCode::ALL {
                let free = PieceId::range(colour, code)
                    .filter(|&i| self.placements[i as usize].is_none())
                    .count();
                if free != self.supply(colour, code) as usize {
                    return Err(format!("{colour} {code}: supply count disagrees"));
                }
            }
        }
        for s in Space::all() {
            if height[s.index()] != self.height[s.index()] {
                return Err(format!(
                    "{s}: height {} != {}",
                    self.height[s.index()],
                    height[s.index()]
                ));
            }
            let stack = self.stack(s);
            if stack.len() as u32 != dots[s.index()] {
                return Err(format!(
                    "{s}: stack has {} dots, pieces have {}",
                    stack.len(),
                    dots[s.index()]
                ));
            }
            if stack.windows(2).any(|w| w[0].level <= w[1].level) {
                return Err(format!("{s}: stack levels not strictly decreasing"));
            }
            let expect_top = self.top_colour(s);
            for c in Colour::BOTH {
                if self.tops[c.index()].contains(s) != (expect_top == Some(c)) {
                    return Err(format!("{s}: top-colour set disagrees"));
                }
            }
        }
        let mut hash = if self.to_move == Colour::Black {
            BLACK_TO_MOVE_KEY
        } else {
            0
        };
        for (i, p) in self.placements.iter().enumerate() {
            if let Some(p) = p {
                hash ^= piece_key(PieceId(i as u8), *p);
            }
        }
        if hash != self.hash {
            return Err("incremental hash disagrees".into());
        }
        Ok(())
    }

    /// Builds a position directly from pieces, for tests and tools: each entry
    /// is `(colour, code, punct, rotation, level)`, put down in the given order
    /// (so later entries lie on top). Support rules are not checked, only that
    /// each piece is on the board, exists in the supply and lies above what is
    /// under it.
    pub fn from_pieces(
        pieces: &[(Colour, PieceCode, Space, u8, u8)],
        to_move: Colour,
        ply: u32,
    ) -> Result<Position, String> {
        let mut pos = Position::start();
        for &(colour, code, punct, rotation, level) in pieces {
            let rotation = code.canonical_rotation(rotation);
            let fp = footprint(code, punct, rotation)
                .ok_or_else(|| format!("{code}@{punct} rotation {rotation} is off the board"))?;
            let id = pos
                .supply_piece(colour, code)
                .ok_or_else(|| format!("{colour} has no {code} left"))?;
            if fp.iter().any(|s| pos.height(*s) > level) {
                return Err(format!(
                    "{code}@{punct} at level {level} would sit under a dot"
                ));
            }
            pos.supply[colour.index()][code.index()] -= 1;
            pos.put(
                id,
                fp,
                Placement {
                    punct,
                    rotation,
                    level,
                },
            );
        }
        if to_move == Colour::Black {
            pos.hash ^= BLACK_TO_MOVE_KEY;
        }
        pos.to_move = to_move;
        pos.ply = ply;
        Ok(pos)
    }
}
