//! Helpers shared by the fuzz targets (docs/FUZZING.md): positions to try
//! input against, and the checks more than one target makes.

use std::sync::LazyLock;

use punct_referee::games::punct::{Engine, GameRecord, RuleOptions};
use punct_referee::games::{self, Replayed, Viewer};

pub mod targets;

/// The sample game of the docs (a standard game White wins by connection).
pub const SAMPLE_GAME: &str = include_str!("../../docs/pictures/sample-game.txt");

/// Positions to try moves on: the start, and every sixth ply of the sample
/// game until just before its end (stacks, covered pieces, both colours to
/// move).
pub static POSITIONS: LazyLock<Vec<Engine>> = LazyLock::new(|| {
    let record: GameRecord = SAMPLE_GAME.parse().expect("the sample game reads");
    let mut out = Vec::new();
    let mut game = Engine::new(record.options);
    for (i, mv) in record.moves.iter().enumerate() {
        if i % 6 == 0 || i + 1 == record.moves.len() {
            out.push(game.clone());
        }
        let m = game.resolve(*mv).expect("the sample game is legal");
        game.play(m).expect("the sample game is legal");
    }
    out
});

/// A fresh game of each position's options with the same moves, behind the
/// session layer's trait.
pub fn as_rules(game: &Engine) -> Box<dyn games::Game> {
    let mut rules = games::new_game(&games::GameRules::new(game.options()));
    for &mv in game.moves() {
        let input = games::MoveInput::new(games::PunctMoveInput {
            structured: Some(mv),
            notation: None,
        });
        rules
            .play(&input)
            .expect("a move the engine accepted replays");
    }
    rules
}

/// The default options, for targets that need one game.
pub fn default_game() -> Engine {
    Engine::new(RuleOptions::default())
}

/// Everything a client can observe of a game, to compare two games.
pub fn observable(g: &dyn games::Game) -> String {
    format!(
        "{:?}|{}|{:?}|{:?}|{:?}|{:?}|{}",
        g.rules(),
        g.ply(),
        g.to_move(),
        g.outcome(),
        g.snapshot(Viewer::Spectator),
        g.last_move(),
        g.record(&[], Viewer::Spectator),
    )
}

/// A record that imported exports to a record that imports to the same game
/// with the same tags, and exporting that gives the same text again.
pub fn check_export_round_trip(imported: &Replayed) {
    let exported = imported.game.record(&imported.tags, Viewer::Spectator);
    let again = punct_referee::service::grpc::games::catalog()
        .import(&exported, None)
        .unwrap_or_else(|e| {
            panic!("an exported record does not import again: {e}\n---\n{exported}")
        });
    assert_eq!(
        observable(imported.game.as_ref()),
        observable(again.game.as_ref()),
        "the re-imported game differs\n---\n{exported}"
    );
    assert_eq!(imported.tags, again.tags, "tags differ\n---\n{exported}");
    assert_eq!(imported.moves, again.moves, "move reports differ");
    assert_eq!(
        again.game.record(&again.tags, Viewer::Spectator),
        exported,
        "export is not stable"
    );
}
