//! Legality (docs/rules/punct.md §4): the one function that decides whether a move is
//! legal and why not ([`Position::check`]), and legal-move generation built on
//! the very same landing rule, so the two cannot disagree.
//!
//! Generation is allocation-free: it walks precomputed shape tables and calls a
//! visitor per legal move, which pushes, counts or stops early.

use std::ops::ControlFlow;

use super::board::Space;
use super::piece::{Colour, Footprint, PieceCode, footprint, shapes};
use super::position::{Landing, PieceId, Position};
use super::{Move, Variant};

/// Why a move is illegal: one variant per rule, each with a sentence
/// (`Display`) and a stable machine name ([`IllegalMove::reason`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum IllegalMove {
    /// The game has ended (docs/rules/punct.md §5).
    #[error("the game is over")]
    GameOver,
    /// It is the other player's turn (docs/rules/punct.md §4).
    #[error("it is {to_move}'s turn")]
    NotYourTurn {
        /// Who is to move.
        to_move: Colour,
    },
    /// No piece of this code is left in the mover's supply (docs/rules/punct.md §4.1).
    #[error("no {code} piece is left in the supply")]
    NoPieceInSupply {
        /// The code asked for.
        code: PieceCode,
    },
    /// A dot of the piece would lie off the board (docs/rules/punct.md §4.2.3).
    #[error("the piece would have a dot off the board")]
    OffBoard,
    /// The spaces given are not the shape of the piece in any rotation (docs/rules/punct.md §7).
    #[error("those spaces are not a {code} piece with its PÜNCT on {punct}")]
    ShapeMismatch {
        /// The piece's code.
        code: PieceCode,
        /// The PÜNCT space given.
        punct: Space,
    },
    /// A placement onto a space that is not empty (docs/rules/punct.md §4.1).
    #[error("{space} is not empty: new pieces go on empty spaces at level 0")]
    SpaceNotEmpty {
        /// The first space that is not empty.
        space: Space,
    },
    /// White's first placement in the basic game touches the centre (docs/rules/punct.md §4.1).
    #[error("the first piece of the basic game may not cover the centre hexagon ({space})")]
    CentreFirstTurn {
        /// A centre space the piece would cover.
        space: Space,
    },
    /// A placement in the standard game touches the centre (docs/rules/punct.md §4.1).
    #[error("in the standard game no piece may be placed on the centre hexagon ({space})")]
    CentreStandard {
        /// A centre space the piece would cover.
        space: Space,
    },
    /// No piece has its PÜNCT on top of the space named as the origin (docs/rules/punct.md §7).
    #[error("there is no piece on {space}")]
    NoPieceAt {
        /// The origin given.
        space: Space,
    },
    /// The piece on top of the origin is the opponent's (docs/rules/punct.md §4.2).
    #[error("the piece on {space} is not yours")]
    NotYourPiece {
        /// The origin given.
        space: Space,
    },
    /// The top dot of the origin is a minor dot, not a PÜNCT (docs/rules/punct.md §7).
    #[error("the top dot on {space} is a minor dot: name a piece by its PÜNCT")]
    NotAPunct {
        /// The origin given.
        space: Space,
    },
    /// The piece has a covered dot (docs/rules/punct.md §3).
    #[error("the piece on {space} is covered and cannot move")]
    PieceImmobile {
        /// The origin given.
        space: Space,
    },
    /// The destination is not on a straight line from the origin (docs/rules/punct.md §4.2.1).
    #[error("{to} is not on a straight line from {from}")]
    NotStraightLine {
        /// Origin.
        from: Space,
        /// Destination.
        to: Space,
    },
    /// The three spaces do not offer a level to rest on (docs/rules/punct.md §3).
    #[error("the piece would not be supported: its spaces are not at one height")]
    Unsupported,
    /// A triangle cannot bridge (docs/rules/punct.md §3).
    #[error("a {code} piece has no ends and cannot bridge")]
    BridgeNotAllowed {
        /// The piece's code.
        code: PieceCode,
    },
    /// A jump whose PÜNCT would come down on the opponent's dot (docs/rules/punct.md §4.2.4).
    #[error("a jumping piece's PÜNCT must come down on your own piece, not on {space}")]
    PunctNotOnOwnDot {
        /// The PÜNCT's destination.
        space: Space,
    },
    /// A bridging SM/AM with its PÜNCT over an empty space (docs/rules/punct.md §4.2.4).
    #[error("a bridge's PÜNCT cannot hang over the empty space {space}")]
    PunctOverEmpty {
        /// The PÜNCT's destination.
        space: Space,
    },
    /// The piece would end where it started (docs/rules/punct.md §4.2.5).
    #[error("the piece would end where it started")]
    NoChange,
}

impl IllegalMove {
    /// Stable machine-readable name (`PIECE_IMMOBILE`, …), used on the wire and
    /// in metrics.
    pub const fn reason(&self) -> &'static str {
        match self {
            IllegalMove::GameOver => "GAME_OVER",
            IllegalMove::NotYourTurn { .. } => "NOT_YOUR_TURN",
            IllegalMove::NoPieceInSupply { .. } => "NO_PIECE_IN_SUPPLY",
            IllegalMove::OffBoard => "OFF_BOARD",
            IllegalMove::ShapeMismatch { .. } => "SHAPE_MISMATCH",
            IllegalMove::SpaceNotEmpty { .. } => "SPACE_NOT_EMPTY",
            IllegalMove::CentreFirstTurn { .. } => "CENTRE_FIRST_TURN",
            IllegalMove::CentreStandard { .. } => "CENTRE_STANDARD",
            IllegalMove::NoPieceAt { .. } => "NO_PIECE_AT",
            IllegalMove::NotYourPiece { .. } => "NOT_YOUR_PIECE",
            IllegalMove::NotAPunct { .. } => "NOT_A_PUNCT",
            IllegalMove::PieceImmobile { .. } => "PIECE_IMMOBILE",
            IllegalMove::NotStraightLine { .. } => "NOT_STRAIGHT_LINE",
            IllegalMove::Unsupported => "UNSUPPORTED",
            IllegalMove::BridgeNotAllowed { .. } => "BRIDGE_NOT_ALLOWED",
            IllegalMove::PunctNotOnOwnDot { .. } => "PUNCT_NOT_ON_OWN_DOT",
            IllegalMove::PunctOverEmpty { .. } => "PUNCT_OVER_EMPTY",
            IllegalMove::NoChange => "NO_CHANGE",
        }
    }

    /// Every reason name, for documentation and metrics pre-registration.
    pub const ALL_REASONS: [&'static str; 18] = [
        "GAME_OVER",
        "NOT_YOUR_TURN",
        "NO_PIECE_IN_SUPPLY",
        "OFF_BOARD",
        "SHAPE_MISMATCH",
        "SPACE_NOT_EMPTY",
        "CENTRE_FIRST_TURN",
        "CENTRE_STANDARD",
        "NO_PIECE_AT",
        "NOT_YOUR_PIECE",
        "NOT_A_PUNCT",
        "PIECE_IMMOBILE",
        "NOT_STRAIGHT_LINE",
        "UNSUPPORTED",
        "BRIDGE_NOT_ALLOWED",
        "PUNCT_NOT_ON_OWN_DOT",
        "PUNCT_OVER_EMPTY",
        "NO_CHANGE",
    ];
}

impl Position {
    /// Whether `mv` is legal for the player to move in `variant`, and if so how
    /// the piece comes to rest. Does not know whether the game is over (see
    /// [`super::Engine::validate`]).
    pub fn check(&self, variant: Variant, mv: Move) -> Result<Landing, IllegalMove> {
        match mv {
            Move::Place {
                code,
                punct,
                rotation,
            } => {
                if self.supply(self.to_move(), code) == 0 {
                    return Err(IllegalMove::NoPieceInSupply { code });
                }
                let fp = footprint(code, punct, rotation).ok_or(IllegalMove::OffBoard)?;
                if let Some(&space) = fp.iter().find(|s| self.height(**s) != 0) {
                    return Err(IllegalMove::SpaceNotEmpty { space });
                }
                if let Some(&space) = fp.iter().find(|s| s.is_centre()) {
                    match variant {
                        Variant::Standard => return Err(IllegalMove::CentreStandard { space }),
                        Variant::Basic if self.ply() == 0 => {
                            return Err(IllegalMove::CentreFirstTurn { space });
                        }
                        Variant::Basic => {}
                    }
                }
                Ok(Landing {
                    level: 0,
                    bridge: false,
                })
            }
            Move::Shift { from, to, rotation } => {
                let id = self.mover_at(from)?;
                if !from.in_line_with(to) {
                    return Err(IllegalMove::NotStraightLine { from, to });
                }
                let code = id.code();
                let fp = footprint(code, to, rotation).ok_or(IllegalMove::OffBoard)?;
                self.landing(id, fp)
            }
        }
    }

    /// The mover's mobile piece named by its PÜNCT on `from`, or why there is none.
    pub(crate) fn mover_at(&self, from: Space) -> Result<PieceId, IllegalMove> {
        let me = self.to_move();
        let Some(top) = self.top_piece(from) else {
            return Err(IllegalMove::NoPieceAt { space: from });
        };
        if let Some(id) = self.punct_on_top(from) {
            if id.colour() != me {
                return Err(IllegalMove::NotYourPiece { space: from });
            }
            if !self.is_mobile(id) {
                return Err(IllegalMove::PieceImmobile { space: from });
            }
            return Ok(id);
        }
        // The top dot is a minor dot. A piece of the mover's with its PÜNCT lower
        // in this stack is covered, which says more than "not a PÜNCT".
        let covered_own = self
            .stack(from)
            .iter()
            .any(|d| d.is_punct && d.piece.colour() == me);
        if covered_own {
            Err(IllegalMove::PieceImmobile { space: from })
        } else if top.colour() != me {
            Err(IllegalMove::NotYourPiece { space: from })
        } else {
            Err(IllegalMove::NotAPunct { space: from })
        }
    }

    /// The landing rule (docs/rules/punct.md §3 and §4.2.3-5) for mobile piece `id` lifted
    /// and put down on `fp` (PÜNCT first).
    #[inline]
    fn landing(&self, id: PieceId, fp: Footprint) -> Result<Landing, IllegalMove> {
        let lifted = Some(id);
        let code = id.code();
        let h = [
            self.height_without(fp[0], lifted),
            self.height_without(fp[1], lifted),
            self.height_without(fp[2], lifted),
        ];
        let landing = if h[0] == h[1] && h[1] == h[2] {
            Landing {
                level: h[0],
                bridge: false,
            }
        } else {
            match code.middle_dot() {
                Some(m) => {
                    let (e1, e2) = match m {
                        0 => (1, 2),
                        _ => (0, 2),
                    };
                    if h[e1] == h[e2] && h[e1] >= 1 && h[m] < h[e1] {
                        Landing {
                            level: h[e1],
                            bridge: true,
                        }
                    } else {
                        return Err(IllegalMove::Unsupported);
                    }
                }
                None => {
                    // A triangle with two spaces at one height above the third
                    // would be a bridge, which it cannot be.
                    let top = h[0].max(h[1]).max(h[2]);
                    let at_top = h.iter().filter(|&&x| x == top).count();
                    if at_top == 2 {
                        return Err(IllegalMove::BridgeNotAllowed { code });
                    }
                    return Err(IllegalMove::Unsupported);
                }
            }
        };
        let current = self.piece_spaces(id);
        if let Some(cur) = current
            && cur[0] == fp[0]
            && same_spaces(cur, fp)
        {
            return Err(IllegalMove::NoChange);
        }
        if landing.level >= 1 {
            let punct = fp[0];
            let below = self.top_without(punct, lifted);
            match below {
                None => return Err(IllegalMove::PunctOverEmpty { space: punct }),
                Some(p) if p.colour() != id.colour() => {
                    return Err(IllegalMove::PunctNotOnOwnDot { space: punct });
                }
                Some(_) => {}
            }
        }
        Ok(landing)
    }

    /// Calls `visit` with every legal move of the player to move, one per
    /// distinct resulting position (docs/rules/punct.md §4), until it breaks.
    pub fn for_each_legal_move<B>(
        &self,
        variant: Variant,
        mut visit: impl FnMut(Move) -> ControlFlow<B>,
    ) -> ControlFlow<B> {
        let me = self.to_move();
        // Placements: one per code in supply, whatever the number of identical pieces.
        let centre_banned = match variant {
            Variant::Standard => true,
            Variant::Basic => self.ply() == 0,
        };
        for code in PieceCode::ALL {
            if self.supply(me, code) == 0 {
                continue;
            }
            for shape in shapes(code) {
                if (centre_banned && shape.touches_centre)
                    || shape.spaces.iter().any(|s| self.height(*s) != 0)
                {
                    continue;
                }
                visit(Move::Place {
                    code,
                    punct: shape.punct,
                    rotation: shape.rotation,
                })?;
            }
        }
        // Moves of mobile pieces: every destination on the 6 lines, every rotation.
        for id in PieceId::of(me) {
            if !self.is_mobile(id) {
                continue;
            }
            let Some(cur) = self.piece_spaces(id) else {
                continue;
            };
            let from = cur[0];
            let code = id.code();
            let mut dest = |to: Space| -> ControlFlow<B> {
                for rotation in 0..code.distinct_rotations() {
                    if let Some(fp) = footprint(code, to, rotation)
                        && self.landing(id, fp).is_ok()
                    {
                        visit(Move::Shift { from, to, rotation })?;
                    }
                }
                ControlFlow::Continue(())
            };
            dest(from)?;
            for d in 0..6 {
                for to in from.ray(d) {
                    dest(to)?;
                }
            }
        }
        ControlFlow::Continue(())
    }

    /// All legal moves of the player to move, appended to `out`.
    pub fn legal_moves_into(&self, variant: Variant, out: &mut Vec<Move>) {
        let _ = self.for_each_legal_move::<()>(variant, |m| {
            out.push(m);
            ControlFlow::Continue(())
        });
    }

    /// All legal moves of the player to move.
    pub fn legal_moves(&self, variant: Variant) -> Vec<Move> {
        let mut out = Vec::new();
        self.legal_moves_into(variant, &mut out);
        out
    }

    /// Number of legal moves of the player to move.
    pub fn count_legal_moves(&self, variant: Variant) -> u64 {
        let mut n = 0;
        let _ = self.for_each_legal_move::<()>(variant, |_| {
            n += 1;
            ControlFlow::Continue(())
        });
        n
    }

    /// Whether the player to move has any legal move (stops at the first).
    pub fn has_legal_move(&self, variant: Variant) -> bool {
        self.for_each_legal_move(variant, |_| ControlFlow::Break(()))
            .is_break()
    }
}

#[inline]
fn same_spaces(a: Footprint, b: Footprint) -> bool {
    a.iter().all(|s| b.contains(s))
}
