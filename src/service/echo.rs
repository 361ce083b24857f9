//! How errors quote what a caller sent: never more than a bounded part of
//! it. A caller's input can be as long as a message may be (megabytes); an
//! error that quoted it whole would put it into the `grpc-message` and
//! `grpc-status-details-bin` headers, over the 16 KiB of metadata a
//! standard gRPC client accepts, and the client would see a client-side
//! `RESOURCE_EXHAUSTED` instead of the refusal. So every quote of input in
//! an error goes through [`echo`] (at most [`ECHO_MAX_CHARS`] characters),
//! and every message and detail the gRPC and HTTP errors carry is bounded
//! again as a whole by [`clip`] at [`MESSAGE_MAX_CHARS`] (docs/API.md,
//! "Errors").

use std::borrow::Cow;

/// The most characters of one piece of input an error quotes.
pub const ECHO_MAX_CHARS: usize = 64;

/// The most characters of an error message, or of one string of its
/// details, as sent.
pub const MESSAGE_MAX_CHARS: usize = 512;

/// `input` as an error quotes it: whole when it has at most
/// [`ECHO_MAX_CHARS`] characters, else its start, an ellipsis and its full
/// length (`abc…` (100000 bytes)).
pub fn echo(input: &str) -> Cow<'_, str> {
    clip(input, ECHO_MAX_CHARS)
}

/// `text` whole when it has at most `max` characters, else its first `max`
/// characters, an ellipsis and its full length in bytes.
pub fn clip(text: &str, max: usize) -> Cow<'_, str> {
    match text.char_indices().nth(max) {
        None => Cow::Borrowed(text),
        Some((end, _)) => Cow::Owned(format!("{}… ({} bytes)", &text[..end], text.len())),
    }
}

/// [`clip`] at [`MESSAGE_MAX_CHARS`], owned.
pub fn bounded(text: impl Into<String>) -> String {
    let text = text.into();
    match clip(&text, MESSAGE_MAX_CHARS) {
        Cow::Borrowed(_) => text,
        Cow::Owned(clipped) => clipped,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_input_is_quoted_whole_and_long_input_in_part_with_its_length() {
        assert_eq!(echo("g-123"), "g-123");
        let exact = "x".repeat(ECHO_MAX_CHARS);
        assert_eq!(echo(&exact), exact.as_str());
        let long = "a".repeat(100_000);
        let quoted = echo(&long);
        assert_eq!(
            quoted,
            format!("{}… (100000 bytes)", "a".repeat(ECHO_MAX_CHARS))
        );
        // Cut on a character, never inside one.
        let wide = "é".repeat(1000);
        let quoted = echo(&wide);
        assert!(quoted.starts_with(&"é".repeat(ECHO_MAX_CHARS)));
        assert!(quoted.ends_with("… (2000 bytes)"), "{quoted}");
        assert_eq!(bounded("short"), "short");
        assert!(bounded("b".repeat(10_000)).len() < MESSAGE_MAX_CHARS + 32);
    }
}
