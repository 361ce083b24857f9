//! `client new`: creates a game, keeps its seat tokens, prints its id and
//! board.

use super::display::describe_game;
use super::{Connection, refused, tokens};
use crate::tools::engine::VariantArg;
use crate::tools::games::GameChoice;
use crate::tools::rpc;

/// Creates a game of `choice` (the default game: of `variant`) with
/// `labels`.
pub(super) async fn run(
    c: &mut Connection,
    choice: &GameChoice,
    variant: VariantArg,
    labels: Vec<(String, String)>,
) -> Result<(), String> {
    let labels = labels.into_iter().collect();
    let request = choice.create_request(variant, labels)?;
    let created = rpc::create_game(&mut c.client, request)
        .await
        .map_err(refused)?;
    tokens::keep(&c.token_path, &c.server, &created)?;
    println!("{}", created.id());
    eprintln!("seat tokens kept in {}", c.token_path.display());
    print!("{}", describe_game(&created.game));
    Ok(())
}
