//! The start positions of docs/rules/dots.md §4: the cross, the double cross, and the
//! four crosses drawn from a seed with the exact SHA-256 number stream of
//! §4.4 (integer arithmetic only), so anyone can recompute them from the
//! seed. [`Seed`] is the seed itself (1..=64 bytes, §3) and its commitment.

use sha2::{Digest as _, Sha256};

use super::{Colour, OptionsError, Point, RuleOptions, Start};

/// The seed of a `quadruple-cross` game: 1 to 64 bytes (docs/rules/dots.md §3), kept
/// inline (no allocation).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Seed {
    len: u8,
    bytes: [u8; 64],
}

impl std::fmt::Debug for Seed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Seed({})", self.hex())
    }
}

impl Seed {
    /// The seed of these bytes (1..=64 of them).
    pub fn new(bytes: &[u8]) -> Result<Seed, OptionsError> {
        if bytes.is_empty() || bytes.len() > 64 {
            return Err(OptionsError::SeedLength { len: bytes.len() });
        }
        let mut seed = Seed {
            len: bytes.len() as u8,
            bytes: [0; 64],
        };
        seed.bytes[..bytes.len()].copy_from_slice(bytes);
        Ok(seed)
    }

    /// The seed written as hex digits (either case, an even number of 2 to
    /// 128), if that is what `text` is.
    pub fn from_hex(text: &str) -> Option<Seed> {
        let text = text.trim();
        if text.is_empty()
            || !text.len().is_multiple_of(2)
            || text.len() > 128
            || !text.bytes().all(|b| b.is_ascii_hexdigit())
        {
            return None;
        }
        let mut bytes = [0u8; 64];
        for (i, byte) in bytes.iter_mut().take(text.len() / 2).enumerate() {
            *byte = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
        }
        Seed::new(&bytes[..text.len() / 2]).ok()
    }

    /// The seed's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    /// The seed as 32 bytes, if it has exactly 32 (what the session layer's
    /// `Setup` carries).
    pub fn as_array(&self) -> Option<[u8; 32]> {
        self.as_bytes().try_into().ok()
    }

    /// Lower-case hex of the bytes (the record's `seed:`, §9).
    pub fn hex(&self) -> String {
        crate::games::hex(self.as_bytes())
    }

    /// `SHA-256(seed)`, published when the game is created (§4.4).
    pub fn commitment(&self) -> [u8; 32] {
        Sha256::digest(self.as_bytes()).into()
    }
}

/// The §4.4 number stream of `seed`: the four big-endian 64-bit words of
/// `SHA-256("dots/start/v1" ‖ seed ‖ k)` for k = 0, 1, 2, ….
pub fn stream(seed: &[u8]) -> impl Iterator<Item = u64> + '_ {
    (0u64..).flat_map(move |k| {
        let digest: [u8; 32] = Sha256::new()
            .chain_update(b"dots/start/v1")
            .chain_update(seed)
            .chain_update(k.to_be_bytes())
            .finalize()
            .into();
        let word = |i: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&digest[8 * i..8 * i + 8]);
            u64::from_be_bytes(b)
        };
        [word(0), word(1), word(2), word(3)]
    })
}

/// The offset range `(dmin, dmax)` of an axis of `n` cells (§4.4 step 2).
pub const fn offset_range(n: u32) -> (u32, u32) {
    let dmin = if n / 8 > 2 { n / 8 } else { 2 };
    let dmax = if 3 * n / 16 > dmin { 3 * n / 16 } else { dmin };
    (dmin, dmax)
}

/// The offset drawn from stream number `u` for an axis of `n` cells.
pub const fn offset(n: u32, u: u64) -> u32 {
    let (dmin, dmax) = offset_range(n);
    dmin + (u % (dmax - dmin + 1) as u64) as u32
}

/// The top-left points of the four crosses of `quadruple-cross` on a
/// `width` × `height` field (§4.4 step 3): top-left, top-right,
/// bottom-right, bottom-left.
pub fn quadruple_crosses(width: u8, height: u8, seed: &[u8]) -> [Point; 4] {
    let (w, h) = (u32::from(width), u32::from(height));
    let low = |n: u32, d: u32| (n / 2).saturating_sub(d);
    let high = |n: u32, d: u32| n - n / 2 + d;
    let mut numbers = stream(seed);
    let mut draw = |n: u32| offset(n, numbers.next().unwrap_or(0));
    let corners: [(bool, bool); 4] = [(false, false), (true, false), (true, true), (false, true)];
    corners.map(|(right, bottom)| {
        let dx = draw(w);
        let dy = draw(h);
        let x = if right { high(w, dx) } else { low(w, dx) };
        let y = if bottom { high(h, dy) } else { low(h, dy) };
        Point::new(x as u16, y as u16)
    })
}

/// The four dots of a cross at `at` (§4): Red top-left and bottom-right,
/// Blue top-right and bottom-left; `swapped` exchanges the colours.
pub fn cross(at: Point, swapped: bool) -> [(Point, Colour); 4] {
    let (a, b) = if swapped {
        (Colour::Blue, Colour::Red)
    } else {
        (Colour::Red, Colour::Blue)
    };
    [
        (at, a),
        (Point::new(at.x + 1, at.y), b),
        (Point::new(at.x, at.y + 1), b),
        (Point::new(at.x + 1, at.y + 1), a),
    ]
}

/// The start dots of a game (§4): none, one cross, two, or four from the
/// seed (a `quadruple-cross` without a seed has none).
pub fn start_dots(options: &RuleOptions, seed: Option<&Seed>) -> Vec<(Point, Colour)> {
    let (w, h) = (u16::from(options.width()), u16::from(options.height()));
    match options.start() {
        Start::Empty => Vec::new(),
        Start::Cross => cross(Point::new(w / 2, h / 2), false).to_vec(),
        Start::DoubleCross => {
            let mut dots = cross(Point::new(w / 2 - 1, h / 2), false).to_vec();
            dots.extend(cross(Point::new(w / 2 + 1, h / 2), true));
            dots
        }
        Start::QuadrupleCross => seed.map_or_else(Vec::new, |seed| {
            quadruple_crosses(options.width(), options.height(), seed.as_bytes())
                .into_iter()
                .flat_map(|at| cross(at, false))
                .collect()
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seed_hex(text: &str) -> Seed {
        Seed::from_hex(text).unwrap()
    }

    #[test]
    fn the_dots_seed_gives_the_published_block_and_commitment() {
        let seed = seed_hex("646f7473");
        let block: Vec<u64> = stream(seed.as_bytes()).take(4).collect();
        let hex: String = block.iter().map(|w| format!("{w:016x}")).collect();
        assert_eq!(
            hex,
            "498c8873d662296fef04041a2eedce19b65f82f5aa88497fce1b2fd0eb6c7740"
        );
        assert_eq!(
            crate::games::hex(&seed.commitment()),
            "0517cf1abcfd20eb941789b07f44fbfbe7ae3415fce3d0c834213235b2f228cc"
        );
    }

    #[test]
    fn seeds_are_one_to_64_bytes() {
        assert_eq!(Seed::new(&[]).unwrap_err().reason(), "SEED_LENGTH");
        assert_eq!(Seed::new(&[0; 65]).unwrap_err().reason(), "SEED_LENGTH");
        assert!(Seed::new(&[0; 64]).is_ok());
        assert!(Seed::from_hex("abc").is_none());
        assert_eq!(seed_hex("FF00").as_bytes(), &[0xff, 0]);
    }
}
