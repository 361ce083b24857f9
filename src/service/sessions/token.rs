//! Seat tokens: 128 random bits, written as 32 lower-case hex digits, compared
//! in constant time so that response timing says nothing about a guess.

use std::fmt;

use subtle::ConstantTimeEq;

/// A secret that proves a seat. Its `Debug` hides the value so that it never
/// reaches a log by accident.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Token([u8; 16]);

impl Token {
    /// A fresh token from the thread-local CSPRNG (ChaCha, seeded by the OS).
    pub fn random() -> Token {
        Token(rand::random())
    }

    /// The token of these bytes (a token derived from the server secret,
    /// [`crate::service::storage::ServerSecret::seat_token`]).
    pub fn from_bytes(bytes: [u8; 16]) -> Token {
        Token(bytes)
    }

    /// Reads 32 hex digits (either case); `None` if it is not a token.
    pub fn parse(text: &str) -> Option<Token> {
        let bytes = text.as_bytes();
        if bytes.len() != 32 {
            return None;
        }
        let mut out = [0u8; 16];
        for (i, pair) in bytes.chunks_exact(2).enumerate() {
            let hi = (pair[0] as char).to_digit(16)?;
            let lo = (pair[1] as char).to_digit(16)?;
            out[i] = (hi * 16 + lo) as u8;
        }
        Some(Token(out))
    }

    /// Whether `self` equals `other`, in time independent of where they differ.
    pub fn matches(&self, other: &Token) -> subtle::Choice {
        self.0.ct_eq(&other.0)
    }

    /// The token's SHA-256: what a session keeps and storage writes, so
    /// that neither memory dumps nor the database hold a usable token.
    /// Tokens are 128 random bits, so no salt is needed.
    pub fn hash(&self) -> TokenHash {
        use sha2::Digest;
        TokenHash(sha2::Sha256::digest(self.0).into())
    }
}

/// The SHA-256 of a [`Token`].
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct TokenHash(pub [u8; 32]);

impl TokenHash {
    /// Whether `token` hashes to `self`, in constant time.
    pub fn matches(&self, token: &Token) -> subtle::Choice {
        self.is(&token.hash())
    }

    /// Whether `other` is the same hash, in constant time: for a token
    /// hashed once and compared with several seats'.
    pub fn is(&self, other: &TokenHash) -> subtle::Choice {
        self.0.ct_eq(&other.0)
    }
}

impl fmt::Debug for TokenHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TokenHash(…)")
    }
}

impl fmt::Display for Token {
    /// The secret as 32 hex digits: for the one response that hands it out.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(…)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_text_round_trips_and_debug_hides_it() {
        let t = Token::random();
        let text = t.to_string();
        assert_eq!(text.len(), 32);
        assert_eq!(Token::parse(&text), Some(t));
        assert_eq!(Token::parse(&text.to_uppercase()), Some(t));
        assert!(!format!("{t:?}").contains(&text));
    }

    #[test]
    fn malformed_tokens_are_not_tokens() {
        assert_eq!(Token::parse(""), None);
        assert_eq!(Token::parse("xyz"), None);
        assert_eq!(Token::parse(&"g".repeat(32)), None);
        assert_eq!(Token::parse(&"é".repeat(16)), None);
    }

    #[test]
    fn a_token_matches_its_hash_only() {
        let (a, b) = (Token::random(), Token::random());
        assert!(bool::from(a.hash().matches(&a)));
        assert!(!bool::from(a.hash().matches(&b)));
        // SHA-256 of sixteen zero bytes.
        let zero = Token([0; 16]).hash().0;
        assert_eq!(zero[..4], [0x37, 0x47, 0x08, 0xff]);
    }

    #[test]
    fn tokens_differ_and_compare() {
        let (a, b) = (Token::random(), Token::random());
        assert_ne!(a, b);
        assert!(bool::from(a.matches(&a)));
        assert!(!bool::from(a.matches(&b)));
    }
}
