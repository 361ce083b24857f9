//! The fair shuffle of docs/rules/punto.md §10, bit for bit: the key
//! `K = SHA-256("PUNTO-KEY-V1" ‖ S ‖ E)` (§10.2), the streams of 64-bit
//! words named by a label, a round and an index (§10.3), uniform numbers by
//! rejection (§10.4), Fisher–Yates from the canonical order (§10.5), and
//! the deal of a round's decks, neutral cards and team piles (§10.6). The
//! test vectors of §14 are checked in this file's tests.

use sha2::{Digest as _, Sha256};

use super::card::{Card, CardCounts, Colour};

/// The 12 ASCII bytes the key is derived under (docs/rules/punto.md §10.2).
pub const KEY_LABEL: &[u8; 12] = b"PUNTO-KEY-V1";
/// Most bytes of creator entropy (docs/rules/punto.md §10.2).
pub const MAX_ENTROPY: usize = 64;

/// The key every shuffle of a match is derived from (docs/rules/punto.md §10.2).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key([u8; 32]);

impl std::fmt::Debug for Key {
    /// Never shows the key itself: it reveals every deck order.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Key(…)")
    }
}

impl Key {
    /// `K = SHA-256("PUNTO-KEY-V1" ‖ seed ‖ entropy)` (docs/rules/punto.md §10.2).
    pub fn new(seed: &[u8; 32], entropy: &[u8]) -> Key {
        let mut hash = Sha256::new();
        hash.update(KEY_LABEL);
        hash.update(seed);
        hash.update(entropy);
        Key(hash.finalize().into())
    }

    /// The key's 32 bytes.
    pub fn bytes(&self) -> [u8; 32] {
        self.0
    }

    /// The stream named (`label`, `round`, `index`) (docs/rules/punto.md §10.3).
    pub fn stream(&self, label: Label, round: u32, index: u32) -> Stream {
        Stream {
            key: self.0,
            label,
            round,
            index,
            block: 0,
            words: [0; 4],
            used: 4,
        }
    }
}

/// The labels of the streams of a match (docs/rules/punto.md §10.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Label {
    /// `deck`: a seat's deck (not in the team variant); index = seat 1..N.
    Deck,
    /// `team`: a team's pile (team variant); index = team 1 or 2.
    Team,
    /// `neutral`: the neutral deal of a round (3 players); index 0.
    Neutral,
}

impl Label {
    /// The ASCII text hashed into each block.
    pub const fn text(self) -> &'static str {
        match self {
            Label::Deck => "deck",
            Label::Team => "team",
            Label::Neutral => "neutral",
        }
    }
}

/// A stream of random words (docs/rules/punto.md §10.3): block `j` is
/// `SHA-256(K ‖ label ‖ 0x00 ‖ u32be(r) ‖ u32be(i) ‖ u32be(j))`, read as four
/// big-endian 64-bit words; words are used one at a time, never twice.
#[derive(Clone)]
pub struct Stream {
    key: [u8; 32],
    label: Label,
    round: u32,
    index: u32,
    /// The next block to compute.
    block: u32,
    words: [u64; 4],
    /// Words of `words` already used (4: compute the next block).
    used: usize,
}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Stream({}, {}, {})",
            self.label.text(),
            self.round,
            self.index
        )
    }
}

impl Stream {
    /// Block `j` of this stream, as bytes (docs/rules/punto.md §10.3).
    pub fn block(&self, j: u32) -> [u8; 32] {
        let mut hash = Sha256::new();
        hash.update(self.key);
        hash.update(self.label.text().as_bytes());
        hash.update([0u8]);
        hash.update(self.round.to_be_bytes());
        hash.update(self.index.to_be_bytes());
        hash.update(j.to_be_bytes());
        hash.finalize().into()
    }

    /// The next word (docs/rules/punto.md §10.3).
    pub fn next_word(&mut self) -> u64 {
        if self.used == 4 {
            let block = self.block(self.block);
            for (word, bytes) in self.words.iter_mut().zip(block.chunks_exact(8)) {
                let mut eight = [0u8; 8];
                eight.copy_from_slice(bytes);
                *word = u64::from_be_bytes(eight);
            }
            // 2^32 blocks are far beyond any shuffle (36 words at most).
            self.block = self.block.wrapping_add(1);
            self.used = 0;
        }
        let word = self.words[self.used];
        self.used += 1;
        word
    }

    /// A uniform number in `0..bound` by rejection (docs/rules/punto.md §10.4);
    /// `bound` 0 is taken as 1.
    pub fn below(&mut self, bound: u64) -> u64 {
        uniform_below(bound, || self.next_word())
    }
}

/// A uniform number in `0..bound` from the words `next` gives (docs/rules/punto.md
/// §10.4): with `rem = 2^64 mod bound`, a word `w ≥ 2^64 − rem` is discarded
/// and the next one taken; otherwise the result is `w mod bound`. `bound` 0
/// is taken as 1.
pub fn uniform_below(bound: u64, mut next: impl FnMut() -> u64) -> u64 {
    let bound = bound.max(1);
    // rem = ((2^64 − 1) mod b + 1) mod b, in 64-bit arithmetic (§10.4).
    let rem = (u64::MAX % bound + 1) % bound;
    loop {
        let word = next();
        if rem == 0 || word <= u64::MAX - rem {
            return word % bound;
        }
    }
}

/// Shuffles `cards` with `stream` (docs/rules/punto.md §10.5): sorted into canonical
/// order, then Fisher–Yates from the last position down; position 0 is the
/// top. A list of 0 or 1 card draws no word.
pub fn shuffle(cards: &mut [Card], stream: &mut Stream) {
    cards.sort_unstable();
    for k in (1..cards.len()).rev() {
        let j = stream.below(k as u64 + 1) as usize;
        cards.swap(k, j);
    }
}

/// `cards` in canonical order, shuffled with `stream` (docs/rules/punto.md §10.5).
pub fn shuffled(cards: &CardCounts, stream: &mut Stream) -> Vec<Card> {
    let mut list: Vec<Card> = cards.iter().collect();
    shuffle(&mut list, stream);
    list
}

/// The seat (0-based) that neutral card `p` of a deal starting with seat
/// `first` (0-based) goes to, with 3 seats (docs/rules/punto.md §10.6 step 1).
pub const fn neutral_seat(first: usize, p: usize) -> usize {
    (first + p) % 3
}

/// The neutral deal of round `round` (docs/rules/punto.md §3.3, §10.6 step 1): `pool`
/// shuffled with stream (`neutral`, round, 0), dealt one at a time from
/// seat `first` (0-based) round the 3 seats; each seat's share, in the order
/// dealt, and the shuffled pool.
pub fn deal_neutral(
    key: &Key,
    round: u32,
    pool: &CardCounts,
    first: usize,
) -> ([Vec<Card>; 3], Vec<Card>) {
    let pile = shuffled(pool, &mut key.stream(Label::Neutral, round, 0));
    let mut shares: [Vec<Card>; 3] = Default::default();
    for (p, &card) in pile.iter().enumerate() {
        shares[neutral_seat(first, p)].push(card);
    }
    (shares, pile)
}

/// Seat `seat`'s (0-based) deck of round `round`, top first: `cards`
/// shuffled with stream (`deck`, round, seat + 1) (docs/rules/punto.md §10.6 step 2).
pub fn deal_deck(key: &Key, round: u32, seat: usize, cards: &CardCounts) -> Vec<Card> {
    shuffled(cards, &mut key.stream(Label::Deck, round, seat as u32 + 1))
}

/// A team's two decks of round `round` (docs/rules/punto.md §3.2, §10.6 step 2): its
/// pile shuffled with stream (`team`, round, team) (team 1 or 2), the first
/// `ceil(n / 2)` cards to its lower seat, the rest to the other, in order.
pub fn deal_team(key: &Key, round: u32, team: u32, pile: &CardCounts) -> (Vec<Card>, Vec<Card>) {
    let mut cards = shuffled(pile, &mut key.stream(Label::Team, round, team));
    let upper = cards.split_off(cards.len().div_ceil(2));
    (cards, upper)
}

/// The colours a seat's deck draws on besides neutral cards, by
/// configuration (docs/rules/punto.md §3.1): used by the deal of [`super::Engine`].
pub(crate) fn colours_of(colours: &[Colour], counts: &CardCounts) -> CardCounts {
    colours
        .iter()
        .fold(CardCounts::EMPTY, |acc, &c| acc.plus(&counts.only(c)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(bytes: &[u8]) -> String {
        crate::games::hex(bytes)
    }

    fn seed() -> [u8; 32] {
        std::array::from_fn(|i| i as u8)
    }

    #[test]
    fn the_key_is_the_hash_of_label_seed_and_entropy() {
        // docs/rules/punto.md §14.
        assert_eq!(
            hex(&Key::new(&seed(), &[]).bytes()),
            "8338a0e43e22b14982eb50bf76aefc1d646783b589718dc1475b4e7b05b3cf04"
        );
        assert_eq!(
            hex(&Key::new(&seed(), &[0xca, 0xfe]).bytes()),
            "2ccefea290c6097d5327807e216a2f84633054d64774c5d59ab98746625896f7"
        );
    }

    #[test]
    fn a_bound_that_divides_two_to_the_64_rejects_nothing() {
        let key = Key::new(&seed(), &[]);
        let mut a = key.stream(Label::Deck, 1, 1);
        let mut b = key.stream(Label::Deck, 1, 1);
        for _ in 0..9 {
            assert_eq!(a.below(4), b.next_word() % 4);
        }
    }

    #[test]
    fn words_at_or_above_the_rejection_limit_are_discarded() {
        // docs/rules/punto.md §10.4: b = 36, rem = 16: 18446744073709551600 and above
        // are discarded, the word just below is kept.
        let mut words = [u64::MAX, 18446744073709551600, 18446744073709551599, 7].into_iter();
        let drawn = uniform_below(36, || words.next().unwrap_or(0));
        assert_eq!(drawn, 18446744073709551599 % 36);
        assert_eq!(
            words.next(),
            Some(7),
            "exactly the two words at or above the limit went"
        );
    }
}
