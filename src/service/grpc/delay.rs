//! The spectator delay on the wire (docs/SPECTATOR.md, "Delayed
//! spectators"): `SpectatorDelay` of `CreateGameRequest`, `TournamentSpec`
//! and `Game`. The typed field and the `spectator-delay` label are one
//! option: the field sets the label (labels are what is stored, replicated
//! and given to a tournament's games), and `Game` shows the label's delay.

use std::collections::BTreeMap;
use std::time::Duration;

use tonic::Status;

use super::error::invalid_argument;
use super::pb::referee::v1 as pb;
use crate::service::sessions::{DELAY_LABEL, SpectatorDelay};

/// The delay a typed field asks for (`None`: no delay), its bounds checked;
/// `field` is the field's path (`spectator_delay`, `spec.spectator_delay`).
fn requested(d: &pb::SpectatorDelay, field: &str) -> Result<Option<SpectatorDelay>, Status> {
    use pb::spectator_delay::Delay;
    match d.delay {
        Some(Delay::Plies(n)) => {
            SpectatorDelay::of_plies(n).map_err(|e| invalid_argument(&format!("{field}.plies"), e))
        }
        Some(Delay::Seconds(n)) => SpectatorDelay::of_seconds(n)
            .map_err(|e| invalid_argument(&format!("{field}.seconds"), e)),
        None => Err(invalid_argument(
            field,
            "set `plies` or `seconds` (0 for no delay), or leave the field out",
        )),
    }
}

/// Puts the typed delay `d` into `labels` as the `spectator-delay` label.
/// A label already there must say the same delay (it stays as written);
/// another delay is refused, naming both. A label that is no delay is left
/// for the labels' own check to refuse.
pub fn merge(
    labels: &mut BTreeMap<String, String>,
    d: Option<&pb::SpectatorDelay>,
    field: &str,
) -> Result<(), Status> {
    let Some(d) = d else {
        return Ok(());
    };
    let wanted = requested(d, field)?;
    match labels
        .get(DELAY_LABEL)
        .map(|v| (v, SpectatorDelay::parse(v)))
    {
        Some((_, Ok(labelled))) if labelled == wanted => Ok(()),
        Some((value, Ok(labelled))) => Err(invalid_argument(
            field,
            format!(
                "{} differs from the label `{DELAY_LABEL}: {value}` ({}): give one, or the same delay",
                said(wanted),
                said(labelled)
            ),
        )),
        Some((_, Err(_))) => Ok(()),
        None => {
            if let Some(delay) = wanted {
                labels.insert(DELAY_LABEL.to_string(), delay.label_value());
            }
            Ok(())
        }
    }
}

/// A delay in words, for a refusal.
fn said(d: Option<SpectatorDelay>) -> String {
    d.map_or_else(|| "no delay".to_string(), SpectatorDelay::label_value)
}

/// The delay `labels` set, to the wire (`None`: no delay).
pub fn spectator_delay_pb(labels: &BTreeMap<String, String>) -> Option<pb::SpectatorDelay> {
    use pb::spectator_delay::Delay;
    let delay = SpectatorDelay::of_labels(labels)?;
    Some(pb::SpectatorDelay {
        delay: Some(match delay {
            SpectatorDelay::Plies(n) => Delay::Plies(n),
            SpectatorDelay::Time(d) => Delay::Seconds(seconds(d)),
        }),
    })
}

fn seconds(d: Duration) -> u32 {
    u32::try_from(d.as_secs()).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pb::spectator_delay::Delay;

    fn typed(delay: Option<Delay>) -> pb::SpectatorDelay {
        pb::SpectatorDelay { delay }
    }

    fn field_of(status: &Status) -> String {
        use tonic_types::StatusExt;
        status.get_details_bad_request().unwrap().field_violations[0]
            .field
            .clone()
    }

    #[test]
    fn the_field_sets_the_label_and_the_game_shows_it() {
        let mut labels = BTreeMap::new();
        merge(
            &mut labels,
            Some(&typed(Some(Delay::Plies(3)))),
            "spectator_delay",
        )
        .unwrap();
        assert_eq!(labels[DELAY_LABEL], "3 plies");
        assert_eq!(
            spectator_delay_pb(&labels),
            Some(typed(Some(Delay::Plies(3))))
        );
        let mut labels = BTreeMap::new();
        merge(
            &mut labels,
            Some(&typed(Some(Delay::Seconds(90)))),
            "spectator_delay",
        )
        .unwrap();
        assert_eq!(labels[DELAY_LABEL], "90 s");
        assert_eq!(
            spectator_delay_pb(&labels),
            Some(typed(Some(Delay::Seconds(90))))
        );
        // Zero is no delay: no label, nothing shown.
        let mut labels = BTreeMap::new();
        merge(
            &mut labels,
            Some(&typed(Some(Delay::Seconds(0)))),
            "spectator_delay",
        )
        .unwrap();
        assert!(labels.is_empty());
        assert_eq!(spectator_delay_pb(&labels), None);
        // The label alone is shown as the field.
        let labels = BTreeMap::from([(DELAY_LABEL.to_string(), "1 ply".to_string())]);
        assert_eq!(
            spectator_delay_pb(&labels),
            Some(typed(Some(Delay::Plies(1))))
        );
    }

    #[test]
    fn a_label_must_say_the_same_delay() {
        let mut labels = BTreeMap::from([(DELAY_LABEL.to_string(), "2s".to_string())]);
        merge(
            &mut labels,
            Some(&typed(Some(Delay::Seconds(2)))),
            "spectator_delay",
        )
        .unwrap();
        assert_eq!(labels[DELAY_LABEL], "2s", "kept as written");
        let refused = merge(
            &mut labels,
            Some(&typed(Some(Delay::Plies(2)))),
            "spec.spectator_delay",
        )
        .unwrap_err();
        assert_eq!(refused.code(), tonic::Code::InvalidArgument);
        assert_eq!(field_of(&refused), "spec.spectator_delay");
        assert!(
            refused
                .message()
                .contains("2 plies differs from the label `spectator-delay: 2s` (2 s)"),
            "{}",
            refused.message()
        );
        assert_eq!(labels[DELAY_LABEL], "2s", "nothing changed");
        // No delay asked beside a label that delays: refused as well.
        let refused = merge(
            &mut labels,
            Some(&typed(Some(Delay::Plies(0)))),
            "spectator_delay",
        )
        .unwrap_err();
        assert!(
            refused.message().contains("no delay differs"),
            "{}",
            refused.message()
        );
    }

    #[test]
    fn bounds_and_an_empty_choice_are_refused_with_the_field() {
        let cases = [
            (
                Some(Delay::Plies(10_001)),
                "spectator_delay.plies",
                "10001 plies is longer than 10000",
            ),
            (
                Some(Delay::Seconds(86_401)),
                "spectator_delay.seconds",
                "86401 s is longer than 86400 s",
            ),
            (None, "spectator_delay", "set `plies` or `seconds`"),
        ];
        for (delay, field, words) in cases {
            let mut labels = BTreeMap::new();
            let refused = merge(&mut labels, Some(&typed(delay)), "spectator_delay").unwrap_err();
            assert_eq!(refused.code(), tonic::Code::InvalidArgument);
            assert_eq!(field_of(&refused), field);
            assert!(refused.message().contains(words), "{}", refused.message());
            assert!(labels.is_empty());
        }
        let mut labels = BTreeMap::new();
        merge(
            &mut labels,
            Some(&typed(Some(Delay::Plies(10_000)))),
            "spectator_delay",
        )
        .unwrap();
        merge(
            &mut BTreeMap::new(),
            Some(&typed(Some(Delay::Seconds(86_400)))),
            "x",
        )
        .unwrap();
    }
}
