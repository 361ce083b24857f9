//! Game-record text (docs/rules/punct.md §7) as `ImportGame` and `ValidateMove` read it:
//! any text is imported or refused with a message (and a line, when a line is
//! at fault), never a panic; a record that imports exports to a record that
//! imports to the same game, and the engine's own parser agrees with the
//! session layer's import.

use super::check_export_round_trip;
use punct_referee::games::punct::{Engine, GameRecord};

/// One input, checked; panics on a finding.
pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let engine = Engine::from_record_text(text);
    match punct_referee::service::grpc::games::catalog().import(text, None) {
        Ok(imported) => {
            let game = engine.unwrap_or_else(|e| panic!("imported, but the engine refuses: {e}"));
            assert_eq!(imported.game.ply(), game.position().ply());
            assert_eq!(imported.moves.len(), game.moves().len());
            check_export_round_trip(&imported);
            // The engine's canonical record text reads back to the same record.
            let record: GameRecord = text.parse().expect("a record that imported parses");
            let canonical = record.to_string();
            let back: GameRecord = canonical
                .parse()
                .unwrap_or_else(|e| panic!("canonical record does not parse: {e}\n{canonical}"));
            assert_eq!(back, record);
        }
        Err(e) => {
            assert!(
                engine.is_err(),
                "the engine imports what the session layer refuses"
            );
            assert!(!e.message.is_empty(), "an error without a message");
            if let Some(line) = e.line {
                assert!(
                    line >= 1 && line <= text.lines().count().max(1),
                    "line {line} is outside the text"
                );
            }
        }
    }
}
