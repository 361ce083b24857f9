//! `client games`: the games the referee offers (ListGameKinds), each with
//! its seats and rule options.

use std::fmt::Write as _;

use super::{Connection, refused};
use crate::service::grpc::pb::referee::v1 as pb;

/// Prints every game the referee offers.
pub(super) async fn run(c: &mut Connection) -> Result<(), String> {
    let kinds = c
        .client
        .list_game_kinds(pb::ListGameKindsRequest {})
        .await
        .map_err(refused)?
        .into_inner()
        .kinds;
    print!("{}", describe(&kinds));
    Ok(())
}

/// One paragraph a game: its name and description, its default seats, then
/// one line an option (`name: type = default`, an enum's values) with its
/// meaning under it.
pub(super) fn describe(kinds: &[pb::GameKind]) -> String {
    let mut text = String::new();
    for (i, kind) in kinds.iter().enumerate() {
        if i > 0 {
            text.push('\n');
        }
        let _ = writeln!(text, "{}: {}", kind.name, kind.description);
        let _ = writeln!(text, "  seats: {}", kind.default_seats.join(", "));
        for option in &kind.options {
            let default = match option.default_value.as_str() {
                "" => "(empty)",
                d => d,
            };
            let _ = write!(text, "  {}: {} = {default}", option.name, option.value_type);
            if !option.values.is_empty() {
                let _ = write!(text, " (one of {})", option.values.join(", "));
            }
            text.push('\n');
            if !option.description.is_empty() {
                let _ = writeln!(text, "      {}", option.description);
            }
        }
    }
    text
}
