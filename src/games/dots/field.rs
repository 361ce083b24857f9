//! The field: dots, captures and empty bases (docs/rules/dots.md §2.4, §6, §7.2).

use super::{Bits, Colour, IllegalMove, Point, RuleOptions, bits};

// --- The field -------------------------------------------------------------------

/// The state of one cell (docs/rules/dots.md §2.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cell {
    /// The dot placed there, if any.
    pub dot: Option<Colour>,
    /// Who holds the cell captured, if anyone.
    pub holder: Option<Colour>,
    /// The empty-base marker, if any.
    pub marker: Option<Colour>,
}

/// What taking one area did (docs/rules/dots.md §6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TakeKind {
    /// The area held a live enemy dot: everything in it is captured.
    Capture,
    /// It held none: an empty base.
    Base,
}

/// One area taken by a move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Take {
    /// Who took it (the mover, or its enemy under §6.5(c)).
    pub taker: Colour,
    /// Capture or empty base.
    pub kind: TakeKind,
    /// Every cell of the enclosed area (§6.2), wall included.
    pub area: Bits,
}

/// The areas a move took, in the order taken (at most four: one per
/// orthogonal neighbour of the dot). Reused from move to move.
#[derive(Debug, Clone)]
pub struct TakeLog {
    takes: [Take; 4],
    pub(super) len: usize,
}

impl Default for TakeLog {
    fn default() -> Self {
        let none = Take {
            taker: Colour::Red,
            kind: TakeKind::Base,
            area: Bits::EMPTY,
        };
        TakeLog {
            takes: [none; 4],
            len: 0,
        }
    }
}

impl TakeLog {
    /// The areas taken by the last move logged.
    pub fn takes(&self) -> &[Take] {
        &self.takes[..self.len]
    }

    fn push(&mut self, take: Take) {
        if let Some(slot) = self.takes.get_mut(self.len) {
            *slot = take;
            self.len += 1;
        }
    }
}

/// What a placement did, in counts (docs/rules/dots.md §6.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Placement {
    /// Regions closed by the move (§6.1).
    pub regions: u8,
    /// Areas captured by the mover.
    pub captures: u8,
    /// New empty bases of the mover.
    pub bases: u8,
    /// The dot fell into an enemy empty base and was captured (§6.5(c)).
    pub fell_into_base: bool,
}

/// The eight cells around a cell in clockwise order from the top: N, NE, E,
/// SE, S, SW, W, NW, as (dx, dy). Consecutive ones are orthogonal
/// neighbours of each other, so the ring is a closed orthogonal path.
const RING: [(isize, isize); 8] = [
    (0, -1),
    (1, -1),
    (1, 0),
    (1, 1),
    (0, 1),
    (-1, 1),
    (-1, 0),
    (-1, -1),
];

/// The arcs of a ring mask (bit i set: ring cell i is not a live dot of the
/// mover) that contain an orthogonal ring cell, as masks.
#[derive(Clone, Copy)]
struct Arcs {
    len: u8,
    masks: [u8; 4],
}

const fn arcs_of(mask: u8) -> Arcs {
    let mut arcs = Arcs {
        len: 0,
        masks: [0; 4],
    };
    if mask == 0xFF {
        arcs.len = 1;
        arcs.masks[0] = 0xFF;
        return arcs;
    }
    if mask == 0 {
        return arcs;
    }
    // Start just after a blocked ring cell and walk once around.
    let mut start = 0;
    while mask >> start & 1 == 1 {
        start += 1;
    }
    let mut current: u8 = 0;
    let mut step = 1;
    while step <= 8 {
        let i = (start + step) % 8;
        if mask >> i & 1 == 1 {
            current |= 1 << i;
        } else if current != 0 {
            if current & 0b0101_0101 != 0 {
                arcs.masks[arcs.len as usize] = current;
                arcs.len += 1;
            }
            current = 0;
        }
        step += 1;
    }
    arcs
}

const ARCS: [Arcs; 256] = {
    let mut table = [Arcs {
        len: 0,
        masks: [0; 4],
    }; 256];
    let mut m = 0;
    while m < 256 {
        table[m] = arcs_of(m as u8);
        m += 1;
    }
    table
};

/// The cells of one game (docs/rules/dots.md §2.4) and the placement rules (§6, §7.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    width: u8,
    height: u8,
    cells: Bits,
    edge: Bits,
    dots: [Bits; 2],
    /// `held[c]`: the cells whose holder is `c`.
    held: [Bits; 2],
    markers: [Bits; 2],
    /// Cells whose marker a §6.5(b) dissolution removed: they may still lie
    /// in a closed region of the base's owner, so a dot there is always
    /// checked with the full flood fills.
    dissolved: Bits,
    /// How many playable cells are left (no dot, no holder): kept so that
    /// [`Field::is_full`] after every move reads a number.
    free: u32,
}

impl Field {
    /// An empty field of a size that [`RuleOptions::new`] accepted.
    pub fn new(options: &RuleOptions) -> Field {
        let (w, h) = (usize::from(options.width), usize::from(options.height));
        Field {
            width: options.width,
            height: options.height,
            cells: Bits::field(w, h),
            edge: Bits::edge(w, h),
            dots: [Bits::EMPTY; 2],
            held: [Bits::EMPTY; 2],
            markers: [Bits::EMPTY; 2],
            dissolved: Bits::EMPTY,
            free: u32::from(options.width) * u32::from(options.height),
        }
    }

    /// W.
    pub const fn width(&self) -> u8 {
        self.width
    }

    /// H.
    pub const fn height(&self) -> u8 {
        self.height
    }

    /// The 0-based cell of `p`, if it is on the field.
    pub fn index_of(&self, p: Point) -> Option<(usize, usize)> {
        let (x, y) = p.index()?;
        (x < usize::from(self.width) && y < usize::from(self.height)).then_some((x, y))
    }

    /// Whether `p` is a cell of the field.
    pub fn contains(&self, p: Point) -> bool {
        self.index_of(p).is_some()
    }

    /// The state of the cell at `p` (all `None` off the field).
    pub fn cell(&self, p: Point) -> Cell {
        let Some((x, y)) = self.index_of(p) else {
            return Cell {
                dot: None,
                holder: None,
                marker: None,
            };
        };
        let of = |sets: &[Bits; 2]| {
            Colour::ALL
                .into_iter()
                .find(|c| sets[c.index()].contains(x, y))
        };
        Cell {
            dot: of(&self.dots),
            holder: of(&self.held),
            marker: of(&self.markers),
        }
    }

    /// Every cell with a dot of `colour`, live or held.
    pub fn dots(&self, colour: Colour) -> &Bits {
        &self.dots[colour.index()]
    }

    /// Every cell held by `colour` (docs/rules/dots.md §2.4).
    pub fn held(&self, colour: Colour) -> &Bits {
        &self.held[colour.index()]
    }

    /// Every cell with an empty-base marker of `colour`.
    pub fn markers(&self, colour: Colour) -> &Bits {
        &self.markers[colour.index()]
    }

    /// The live dots of `colour` (not held).
    pub fn live(&self, colour: Colour) -> Bits {
        self.dots[colour.index()].and_not(&self.held[colour.other().index()])
    }

    /// The playable cells: no dot, no holder (docs/rules/dots.md §2.4).
    pub fn playable(&self) -> Bits {
        let taken = self.dots[0] | self.dots[1] | self.held[0] | self.held[1];
        self.cells.and_not(&taken)
    }

    /// Whether no playable cell is left (docs/rules/dots.md §7.1).
    pub fn is_full(&self) -> bool {
        self.free == 0
    }

    /// The score of `colour`: the enemy dots it holds now (docs/rules/dots.md §6.7).
    pub fn score(&self, colour: Colour) -> u32 {
        (self.held[colour.index()] & self.dots[colour.other().index()]).len()
    }

    /// Both scores, Red first.
    pub fn scores(&self) -> [u32; 2] {
        [self.score(Colour::Red), self.score(Colour::Blue)]
    }

    /// Whether a dot may go on `p`: on the field (§8.1), no dot there (§5.2),
    /// not held (§5.3).
    pub fn check(&self, p: Point) -> Result<(usize, usize), IllegalMove> {
        let Some((x, y)) = self.index_of(p) else {
            return Err(IllegalMove::OffField {
                point: p,
                width: self.width,
                height: self.height,
            });
        };
        let taken = self.dots[0].0[y] | self.dots[1].0[y] | self.held[0].0[y] | self.held[1].0[y];
        if taken >> x & 1 == 0 {
            return Ok((x, y)); // the common case: one word test
        }
        for owner in Colour::ALL {
            if self.dots[owner.index()].contains(x, y) {
                return Err(IllegalMove::Occupied { point: p, owner });
            }
        }
        for holder in Colour::ALL {
            if self.held[holder.index()].contains(x, y) {
                return Err(IllegalMove::Held { point: p, holder });
            }
        }
        Ok((x, y))
    }

    /// Puts a start dot (docs/rules/dots.md §4: no capture processing).
    pub(crate) fn put_start_dot(&mut self, colour: Colour, p: Point) {
        if let Some((x, y)) = self.index_of(p) {
            self.dots[colour.index()].insert(x, y);
            self.free = self.playable().len();
        }
    }

    /// Places a dot of `mover` on `p` and applies docs/rules/dots.md §6.
    pub fn place(&mut self, mover: Colour, p: Point) -> Result<Placement, IllegalMove> {
        self.place_inner(mover, p, None)
    }

    /// [`Field::place`], writing the areas taken into `log`.
    pub fn place_logged(
        &mut self,
        mover: Colour,
        p: Point,
        log: &mut TakeLog,
    ) -> Result<Placement, IllegalMove> {
        self.place_inner(mover, p, Some(log))
    }

    fn place_inner(
        &mut self,
        m: Colour,
        p: Point,
        mut log: Option<&mut TakeLog>,
    ) -> Result<Placement, IllegalMove> {
        let (x, y) = self.check(p)?;
        if let Some(log) = log.as_deref_mut() {
            log.len = 0;
        }
        let e = m.other();
        // §6: note the marker, put the dot, remove the marker.
        let bit = 1u64 << x;
        let marker = if (self.markers[0].0[y] | self.markers[1].0[y]) & bit == 0 {
            None
        } else if self.markers[m.index()].0[y] & bit != 0 {
            Some(m)
        } else {
            Some(e)
        };
        self.dots[m.index()].0[y] |= bit;
        self.free -= 1; // `check` found the cell playable
        if marker.is_some() {
            self.markers[0].0[y] &= !bit;
            self.markers[1].0[y] &= !bit;
        }
        let mut placement = Placement::default();
        if marker == Some(m) {
            // §6.5(a): own base, nothing else happens.
            return Ok(placement);
        }
        let (non_mover, off_field) = self.ring(m, x, y);
        let arcs = ARCS[usize::from(non_mover)];
        if marker.is_none() && arcs.len <= 1 && !self.dissolved.contains(x, y) {
            // All of the dot's non-mover neighbours stay in one region with
            // the rest of the region the cell was in, which was open (a
            // closed one would have left a marker or a dissolved marker on
            // the cell): nothing closes (§6.1). See docs/DOTS.md.
            return Ok(placement);
        }
        self.enclose(m, x, y, arcs, off_field, &mut placement, &mut log);
        if marker == Some(e) {
            if placement.regions > 0 {
                self.dissolve_markers(x, y); // §6.5(b)
            } else {
                self.fall_into_base(e, x, y, &mut placement, &mut log); // §6.5(c)
            }
        }
        Ok(placement)
    }

    /// The ring around `(x, y)`: which ring cells are not live dots of `m`
    /// (off-field ones count as such: they stand for the open outside), and
    /// which are off the field.
    fn ring(&self, m: Colour, x: usize, y: usize) -> (u8, u8) {
        let (w, h) = (usize::from(self.width), usize::from(self.height));
        let (own, held) = (&self.dots[m.index()].0, &self.held[m.other().index()].0);
        // Columns x-1, x, x+1 of row r's live `m` dots as bits 0, 1, 2 (a
        // column off the field reads 0: no bit there).
        let window = |r: usize| -> u8 {
            let live = own[r] & !held[r];
            ((u128::from(live) << 1) >> x) as u8 & 7
        };
        let top = if y > 0 { window(y - 1) } else { 0 };
        let mid = window(y);
        let bottom = if y + 1 < h { window(y + 1) } else { 0 };
        // Into RING's order: N, NE, E, SE, S, SW, W, NW.
        let live = (top >> 1 & 1)
            | (top >> 2 & 1) << 1
            | (mid >> 2 & 1) << 2
            | (bottom >> 2 & 1) << 3
            | (bottom >> 1 & 1) << 4
            | (bottom & 1) << 5
            | (mid & 1) << 6
            | (top & 1) << 7;
        let mut off = 0u8;
        if y == 0 {
            off |= 0b1000_0011; // NW, N, NE
        }
        if y + 1 >= h {
            off |= 0b0011_1000; // SE, S, SW
        }
        if x == 0 {
            off |= 0b1110_0000; // SW, W, NW
        }
        if x + 1 >= w {
            off |= 0b0000_1110; // NE, E, SE
        }
        (!live, off)
    }

    /// §6.1–6.4: finds the regions closed by `m`'s dot at `(x, y)`, computes
    /// their enclosed areas and takes them, smallest first.
    #[allow(clippy::too_many_arguments)]
    fn enclose(
        &mut self,
        m: Colour,
        x: usize,
        y: usize,
        arcs: Arcs,
        off_field: u8,
        placement: &mut Placement,
        log: &mut Option<&mut TakeLog>,
    ) {
        let mut first = Bits::EMPTY;
        let Some(k) = self.first_closed(m, x, y, arcs, off_field, &mut first) else {
            return; // every arc reaches the edge: nothing closed (§6.1)
        };
        let mut regions = [first, Bits::EMPTY, Bits::EMPTY, Bits::EMPTY];
        // The arcs before the k-th are open; the k-th's region is
        // regions[0]; the later ones are flooded here.
        let h = usize::from(self.height);
        let (cells, own, held) = (
            &self.cells.0,
            &self.dots[m.index()].0,
            &self.held[m.other().index()].0,
        );
        let pass = |r: usize| cells[r] & !(own[r] & !held[r]);
        let mut n = 1;
        for &arc in &arcs.masks[k + 1..usize::from(arcs.len)] {
            if arc & off_field != 0 {
                continue; // the arc touches the outside: open (§6.1)
            }
            // Ring cells of one arc are connected: one flood per arc, from
            // its first orthogonal cell.
            let Some(i) = (0..8).step_by(2).find(|&i| arc >> i & 1 == 1) else {
                continue;
            };
            let (dx, dy) = RING[i];
            let (qx, qy) = (x.wrapping_add_signed(dx), y.wrapping_add_signed(dy));
            if self.edge.contains(qx, qy) || regions[..n].iter().any(|r| r.contains(qx, qy)) {
                continue; // open, or the same region reached around the other side
            }
            let mut region = Bits::EMPTY;
            region.insert(qx, qy);
            if !bits::flood_rows(&mut region, pass, qy, qy, h, Some(&self.edge)) {
                regions[n] = region;
                n += 1;
            }
        }
        placement.regions = n as u8;
        if n == 0 {
            return;
        }
        // §6.4: every area first, then take them in increasing size. Each
        // region becomes its area where it lies (no copies of whole sets).
        let mut sizes = [0u32; 4];
        for (size, region) in sizes.iter_mut().zip(&mut regions[..n]) {
            self.enclosed_area(region, m);
            *size = region.len();
        }
        let mut order = [0, 1, 2, 3];
        order[..n].sort_by_key(|&i| sizes[i]);
        for area in order[..n].iter().map(|&i| &regions[i]) {
            let kind = self.take(m, area);
            match kind {
                TakeKind::Capture => placement.captures += 1,
                TakeKind::Base => placement.bases += 1,
            }
            if let Some(log) = log.as_deref_mut() {
                log.push(Take {
                    taker: m,
                    kind,
                    area: *area,
                });
            }
        }
    }

    /// The first arc of the ring around `m`'s dot at `(x, y)` whose region
    /// is closed, that region left in `region`: one flood per arc that stays
    /// on the field, through the cells that are not live `m` dots, stopping
    /// at the edge. Most dots close nothing, so this is the common path of
    /// [`Field::enclose`]: it works in one set (`region`, empty on entry)
    /// and reads the passable cells of just the rows it visits.
    fn first_closed(
        &self,
        m: Colour,
        x: usize,
        y: usize,
        arcs: Arcs,
        off_field: u8,
        region: &mut Bits,
    ) -> Option<usize> {
        let h = usize::from(self.height);
        let (cells, own, held) = (
            &self.cells.0,
            &self.dots[m.index()].0,
            &self.held[m.other().index()].0,
        );
        let pass = |r: usize| cells[r] & !(own[r] & !held[r]);
        let mut touched = false;
        for (k, &arc) in arcs.masks[..usize::from(arcs.len)].iter().enumerate() {
            if arc & off_field != 0 {
                continue; // open (§6.1)
            }
            let Some(i) = (0..8).step_by(2).find(|&i| arc >> i & 1 == 1) else {
                continue;
            };
            let (dx, dy) = RING[i];
            let (qx, qy) = (x.wrapping_add_signed(dx), y.wrapping_add_signed(dy));
            if self.edge.contains(qx, qy) {
                continue; // an edge cell: open
            }
            if region.contains(qx, qy) {
                continue; // met by an earlier arc's flood, which reached the edge
            }
            if touched {
                region.0[..h].fill(0); // a flood stays in rows 0..h
            }
            touched = true;
            region.0[qy] = 1 << qx;
            if !bits::flood_rows(region, pass, qy, qy, h, Some(&self.edge)) {
                return Some(k);
            }
        }
        None
    }

    /// §6.2: turns the closed region `region` of `p` into its enclosed
    /// area: every cell from which no orthogonal path reaches the edge
    /// without stepping on the region or its wall (the live `p` dots next to
    /// it).
    fn enclosed_area(&self, region: &mut Bits, p: Colour) {
        let h = usize::from(self.height);
        let Some(r0) = (0..h).find(|&y| region.0[y] != 0) else {
            return; // an empty region: an empty area
        };
        let r1 = (r0..h).rev().find(|&y| region.0[y] != 0).unwrap_or(r0);
        // The wall: live `p` dots next to the region, so within one row of it.
        let (own, held) = (&self.dots[p.index()].0, &self.held[p.other().index()].0);
        let mut blocked = Bits::EMPTY;
        for y in r0.saturating_sub(1)..=(r1 + 1).min(h - 1) {
            let r = region.0[y];
            let above = if y > 0 { region.0[y - 1] } else { 0 };
            let below = if y + 1 < h { region.0[y + 1] } else { 0 };
            let grown = (r | r << 1 | r >> 1 | above | below) & self.cells.0[y];
            blocked.0[y] = r | (grown & own[y] & !held[y]);
        }
        // Only the bounding box of region and wall can be enclosed: any cell
        // outside it walks straight away from the box to the edge. Flood the
        // box and a one-cell frame around it, from the frame and the edge.
        let (mut y0, mut y1, mut columns) = (usize::MAX, 0, 0u64);
        for y in r0.saturating_sub(1)..=(r1 + 1).min(h - 1) {
            if blocked.0[y] != 0 {
                y0 = y0.min(y);
                y1 = y;
                columns |= blocked.0[y];
            }
        }
        if columns == 0 {
            return; // not reached: `blocked` holds the region, which is not empty
        }
        let x0 = columns.trailing_zeros() as usize;
        let x1 = 63 - columns.leading_zeros() as usize;
        let inner_cols = bits::row_mask(x1 + 1) & !bits::row_mask(x0);
        let frame_cols = bits::row_mask((x1 + 2).min(64)) & !bits::row_mask(x0.saturating_sub(1));
        let (fy0, fy1) = (y0.saturating_sub(1), (y1 + 1).min(h - 1));
        // Rows outside the frame are blocked (one comparison: `y - fy0`
        // wraps for rows above it).
        let pass = |y: usize| {
            if y.wrapping_sub(fy0) <= fy1 - fy0 {
                frame_cols & self.cells.0[y] & !blocked.0[y]
            } else {
                0
            }
        };
        let mut reached = Bits::EMPTY;
        for y in fy0..=fy1 {
            let inner = if y >= y0 && y <= y1 { inner_cols } else { 0 };
            reached.0[y] = pass(y) & (!inner | self.edge.0[y]);
        }
        bits::flood_rows(&mut reached, pass, fy0, fy1, h, None);
        // The region lies in rows y0..=y1 (it is part of `blocked`), and so
        // does the area: rewriting those rows leaves the area alone.
        for y in y0..=y1 {
            region.0[y] = inner_cols & self.cells.0[y] & !reached.0[y];
        }
    }

    /// §6.3: `p` takes the area `area`, word by word over the rows it spans.
    fn take(&mut self, p: Colour, area: &Bits) -> TakeKind {
        let (pi, qi) = (p.index(), p.other().index());
        let h = usize::from(self.height);
        let Some(y0) = (0..h).find(|&y| area.0[y] != 0) else {
            return TakeKind::Base; // an empty area marks nothing
        };
        let y1 = (y0..h).rev().find(|&y| area.0[y] != 0).unwrap_or(y0);
        let rows = y0..=y1;
        let playable = |f: &Field, y: usize| {
            f.cells.0[y] & !(f.dots[0].0[y] | f.dots[1].0[y] | f.held[0].0[y] | f.held[1].0[y])
        };
        let live_q = |f: &Field, y: usize| f.dots[qi].0[y] & !f.held[pi].0[y];
        if rows.clone().any(|y| area.0[y] & live_q(self, y) != 0) {
            // Capture: empty cells and Q's dots get holder P (Q's held empty
            // cells included), P's dots held by Q are freed, markers go.
            for y in rows {
                let a = area.0[y];
                let before = playable(self, y).count_ones();
                self.held[pi].0[y] |= a & !self.dots[pi].0[y];
                self.held[qi].0[y] &= !a;
                self.markers[0].0[y] &= !a;
                self.markers[1].0[y] &= !a;
                // Cells only become held here: never more playable ones.
                self.free -= before - playable(self, y).count_ones();
            }
            TakeKind::Capture
        } else {
            // Empty base: P's marker on every playable cell of the area.
            for y in rows {
                let marked = area.0[y] & playable(self, y);
                self.markers[pi].0[y] |= marked;
                self.markers[qi].0[y] &= !marked;
            }
            TakeKind::Base
        }
    }

    /// §6.5(b): the markers reachable from `(x, y)` through marked cells go.
    fn dissolve_markers(&mut self, x: usize, y: usize) {
        let marked = self.markers[0] | self.markers[1];
        let mut reached = Bits::EMPTY;
        for (dx, dy) in [(0, -1), (1, 0), (0, 1), (-1, 0)] {
            let (nx, ny) = (x.wrapping_add_signed(dx), y.wrapping_add_signed(dy));
            if marked.contains(nx, ny) {
                reached.insert(nx, ny);
            }
        }
        bits::flood(&mut reached, &marked, usize::from(self.height), None);
        self.markers[0] = self.markers[0].and_not(&reached);
        self.markers[1] = self.markers[1].and_not(&reached);
        self.dissolved |= reached;
    }

    /// §6.5(c): the mover's dot at `(x, y)` closed nothing inside `e`'s
    /// base, so `e` takes the area of its region around the dot.
    fn fall_into_base(
        &mut self,
        e: Colour,
        x: usize,
        y: usize,
        placement: &mut Placement,
        log: &mut Option<&mut TakeLog>,
    ) {
        let pass = self.cells.and_not(&self.live(e));
        let mut region = Bits::EMPTY;
        region.insert(x, y);
        if bits::flood(
            &mut region,
            &pass,
            usize::from(self.height),
            Some(&self.edge),
        ) {
            // The base's wall was captured since: its region is open and
            // nothing is taken (docs/DOTS.md).
            return;
        }
        self.enclosed_area(&mut region, e);
        let kind = self.take(e, &region);
        placement.fell_into_base = kind == TakeKind::Capture;
        if let Some(log) = log.as_deref_mut() {
            log.push(Take {
                taker: e,
                kind,
                area: region,
            });
        }
    }

    /// §7.2: `grounder` grounds; its groups of owned cells without an edge
    /// cell go to the other player. Returns how many of its dots were lost.
    pub fn ground(&mut self, grounder: Colour) -> u32 {
        let (g, o) = (grounder.index(), grounder.other().index());
        let owned = self.live(grounder) | self.held[g];
        let mut grounded = owned & self.edge;
        bits::flood(&mut grounded, &owned, usize::from(self.height), None);
        let lost = owned.and_not(&grounded);
        let lost_dots = (lost & self.dots[g]).len();
        self.held[o] |= lost.and_not(&self.dots[o]);
        self.held[g] = self.held[g].and_not(&lost);
        self.free = self.playable().len();
        lost_dots
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arcs_count_the_separated_neighbours() {
        // Nothing around: one arc. N and S blocked: two arcs (E side, W side).
        assert_eq!(ARCS[0xFF].len, 1);
        assert_eq!(ARCS[0b1110_1110].len, 2);
        // Only diagonals free: they touch no orthogonal cell.
        assert_eq!(ARCS[0b1010_1010].len, 0);
        // Only orthogonals free: four arcs.
        assert_eq!(ARCS[0b0101_0101].len, 4);
    }
}
