//! Punto's cards (docs/rules/punto.md §2): four colours in the colour order `R O B G`,
//! values 1 to 9, two identical copies of each, written `R7`; the canonical
//! order every shuffle starts from; and [`CardCounts`], a multiset of cards
//! (deck contents, the cards still in the match).

use std::fmt;
use std::str::FromStr;

/// A card colour, in the colour order of docs/rules/punto.md §2.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Colour {
    /// `R`, red.
    Red,
    /// `O`, orange.
    Orange,
    /// `B`, blue.
    Blue,
    /// `G`, green.
    Green,
}

impl Colour {
    /// The four colours in colour order (docs/rules/punto.md §2).
    pub const ALL: [Colour; 4] = [Colour::Red, Colour::Orange, Colour::Blue, Colour::Green];

    /// 0 for red … 3 for green (the colour order).
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The colour at `index` of the colour order, if there is one.
    pub const fn from_index(index: usize) -> Option<Colour> {
        match index {
            0 => Some(Colour::Red),
            1 => Some(Colour::Orange),
            2 => Some(Colour::Blue),
            3 => Some(Colour::Green),
            _ => None,
        }
    }

    /// The colour's letter: `R`, `O`, `B`, `G`.
    pub const fn letter(self) -> char {
        match self {
            Colour::Red => 'R',
            Colour::Orange => 'O',
            Colour::Blue => 'B',
            Colour::Green => 'G',
        }
    }

    /// The colour of an upper-case letter.
    pub const fn from_letter(letter: u8) -> Option<Colour> {
        match letter {
            b'R' => Some(Colour::Red),
            b'O' => Some(Colour::Orange),
            b'B' => Some(Colour::Blue),
            b'G' => Some(Colour::Green),
            _ => None,
        }
    }

    /// The colour's English name (`red` …).
    pub const fn name(self) -> &'static str {
        match self {
            Colour::Red => "red",
            Colour::Orange => "orange",
            Colour::Blue => "blue",
            Colour::Green => "green",
        }
    }
}

impl fmt::Display for Colour {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A card: a colour and a value 1..=9 (docs/rules/punto.md §2). The two copies of a
/// card are the same value of this type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Card {
    colour: Colour,
    value: u8,
}

impl Card {
    /// Cards a match holds (docs/rules/punto.md §2).
    pub const IN_GAME: usize = 72;
    /// Distinct cards (each has two copies).
    pub const KINDS: usize = 36;
    /// Copies of each card.
    pub const COPIES: u8 = 2;
    /// A placeholder for fixed-size storage (never shown as a real card).
    pub(crate) const FILLER: Card = Card {
        colour: Colour::Red,
        value: 1,
    };

    /// The card of `colour` and `value`, if `value` is 1..=9.
    pub const fn new(colour: Colour, value: u8) -> Option<Card> {
        if value >= 1 && value <= 9 {
            Some(Card { colour, value })
        } else {
            None
        }
    }

    /// Its colour.
    pub const fn colour(self) -> Colour {
        self.colour
    }

    /// Its value, 1..=9.
    pub const fn value(self) -> u8 {
        self.value
    }

    /// Its place in the canonical order of distinct cards, 0..36 (docs/rules/punto.md
    /// §2: by colour order, then by value).
    pub const fn kind(self) -> usize {
        self.colour.index() * 9 + (self.value as usize - 1)
    }

    /// The card of canonical place `kind` (0..36).
    pub const fn of_kind(kind: usize) -> Option<Card> {
        match Colour::from_index(kind / 9) {
            Some(colour) => Some(Card {
                colour,
                value: (kind % 9) as u8 + 1,
            }),
            None => None,
        }
    }

    /// The canonical order key (docs/rules/punto.md §2): colour order, then value.
    pub const fn canonical_key(self) -> (Colour, u8) {
        (self.colour, self.value)
    }
}

impl PartialOrd for Card {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Card {
    /// The canonical order of docs/rules/punto.md §2.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.canonical_key().cmp(&other.canonical_key())
    }
}

impl fmt::Display for Card {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.colour.letter(), self.value)
    }
}

/// Why a text is not a card (docs/rules/punto.md §2: an upper-case colour letter and
/// one digit 1..9).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a card: write its colour letter R, O, B or G and its value 1 to 9, as `R7`")]
pub struct CardError(pub String);

impl FromStr for Card {
    type Err = CardError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || CardError(text.chars().take(16).collect());
        match text.as_bytes() {
            [letter, digit @ b'1'..=b'9'] => {
                let colour = Colour::from_letter(*letter).ok_or_else(bad)?;
                Card::new(colour, digit - b'0').ok_or_else(bad)
            }
            _ => Err(bad()),
        }
    }
}

/// How many copies of each card a collection holds (a multiset of cards).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CardCounts([u8; Card::KINDS]);

impl Default for CardCounts {
    /// No card.
    fn default() -> Self {
        CardCounts::EMPTY
    }
}

impl CardCounts {
    /// No card.
    pub const EMPTY: CardCounts = CardCounts([0; Card::KINDS]);
    /// All 72 cards of the game.
    pub const FULL: CardCounts = CardCounts([Card::COPIES; Card::KINDS]);

    /// Every card of `colour` (18).
    pub fn of_colour(colour: Colour) -> CardCounts {
        let mut counts = CardCounts::EMPTY;
        for value in 1..=9 {
            if let Some(card) = Card::new(colour, value) {
                counts.0[card.kind()] = Card::COPIES;
            }
        }
        counts
    }

    /// The copies of `card` held.
    pub const fn count(&self, card: Card) -> u8 {
        self.0[card.kind()]
    }

    /// Adds one copy of `card`.
    pub fn add(&mut self, card: Card) {
        let slot = &mut self.0[card.kind()];
        *slot = slot.saturating_add(1);
    }

    /// Takes one copy of `card` out; false when none was held.
    pub fn take(&mut self, card: Card) -> bool {
        let slot = &mut self.0[card.kind()];
        if *slot == 0 {
            return false;
        }
        *slot -= 1;
        true
    }

    /// How many cards it holds.
    pub fn len(&self) -> usize {
        self.0.iter().map(|&n| usize::from(n)).sum()
    }

    /// Whether it holds no card.
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&n| n == 0)
    }

    /// The cards of `colour` only.
    pub fn only(&self, colour: Colour) -> CardCounts {
        let mut out = CardCounts::EMPTY;
        let start = colour.index() * 9;
        out.0[start..start + 9].copy_from_slice(&self.0[start..start + 9]);
        out
    }

    /// Both collections together.
    pub fn plus(&self, other: &CardCounts) -> CardCounts {
        let mut out = *self;
        for (a, b) in out.0.iter_mut().zip(other.0) {
            *a = a.saturating_add(b);
        }
        out
    }

    /// Every card held, in canonical order (docs/rules/punto.md §2), copies adjacent.
    pub fn iter(&self) -> impl Iterator<Item = Card> + '_ {
        self.0.iter().enumerate().flat_map(|(kind, &n)| {
            Card::of_kind(kind)
                .into_iter()
                .flat_map(move |card| std::iter::repeat_n(card, usize::from(n)))
        })
    }

    /// The cards of `cards`, counted.
    pub fn of_cards(cards: &[Card]) -> CardCounts {
        let mut out = CardCounts::EMPTY;
        for &card in cards {
            out.add(card);
        }
        out
    }
}

impl fmt::Display for CardCounts {
    /// The cards in canonical order, separated by spaces.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, card) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{card}")?;
        }
        Ok(())
    }
}
