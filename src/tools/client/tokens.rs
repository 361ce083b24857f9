//! The seat-token file of the command-line client: the tokens of the games
//! this person created or imported, by game and seat name, and which game
//! was the last, so that `moves` and `play` need no game id. Written with
//! mode 0600 through a temporary file renamed over it.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::tools::rpc::{self, NewGame, SeatTokens, ServerAddress};

/// The seat tokens of the games this person created or imported.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct TokenFile {
    /// Game id → its seats.
    pub games: BTreeMap<String, GameTokens>,
    /// The game created or imported last: the default of `moves` and `play`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last: Option<String>,
}

/// One game's tokens: the server, then one entry per seat, keyed by the
/// seat's name (`"white": "…"`).
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct GameTokens {
    /// The server the game lives on.
    pub server: String,
    /// Seat name → its token.
    #[serde(flatten)]
    pub seats: BTreeMap<String, String>,
}

impl GameTokens {
    /// The entry of a PÜNCT game on `server` with `tokens`.
    pub fn new(server: &ServerAddress, tokens: &SeatTokens) -> GameTokens {
        let names: Vec<String> = rpc::seat_names().iter().map(|s| s.to_string()).collect();
        GameTokens::named(server, tokens, &names)
    }

    /// The entry of a game on `server` whose seats are called `names`.
    pub fn named(server: &ServerAddress, tokens: &SeatTokens, names: &[String]) -> GameTokens {
        GameTokens {
            server: server.url().to_string(),
            seats: tokens
                .iter()
                .filter_map(|(seat, token)| Some((names.get(seat)?.clone(), token.to_string())))
                .collect(),
        }
    }

    /// The token of the seat at `seat` of a PÜNCT game, if kept.
    pub fn token(&self, seat: usize) -> Option<&str> {
        self.token_of(rpc::seat_name(seat))
    }

    /// The token of the seat called `name`, if kept.
    pub fn token_of(&self, name: &str) -> Option<&str> {
        self.seats.get(name).map(String::as_str)
    }
}

/// The token file's default place.
pub fn default_token_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("punct").join("tokens.json"))
}

/// Adds a new game's tokens to the file at `path`, as the last game.
pub fn keep(path: &Path, server: &ServerAddress, game: &NewGame) -> Result<(), String> {
    let mut file = TokenFile::load(path)?;
    let names = rpc::seat_names_of(&game.game);
    file.games.insert(
        game.id().to_string(),
        GameTokens::named(server, &game.tokens, &names),
    );
    file.last = Some(game.id().to_string());
    file.save(path)
}

impl TokenFile {
    /// Reads the file; a missing file is an empty one.
    pub fn load(path: &Path) -> Result<TokenFile, String> {
        match std::fs::read_to_string(path) {
            Ok(text) => serde_json::from_str(&text)
                .map_err(|e| format!("{}: not a token file: {e}", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(TokenFile::default()),
            Err(e) => Err(format!("{}: {e}", path.display())),
        }
    }

    /// The game `given`, or else the last one kept in this file (read from
    /// `path`, named in the error).
    pub fn game_or_last(&self, given: Option<String>, path: &Path) -> Result<String, String> {
        given.or_else(|| self.last.clone()).ok_or_else(|| {
            format!(
                "no game given, and no last game in {}: give a game id, or create one with `client new`",
                path.display()
            )
        })
    }

    /// Writes the file readable by its owner only (0600), through a temporary
    /// file renamed over it, so a crash never leaves half a file.
    pub fn save(&self, path: &Path) -> Result<(), String> {
        let fail = |e: std::io::Error| format!("{}: {e}", path.display());
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(fail)?;
        }
        let text = serde_json::to_string_pretty(self).map_err(|e| e.to_string())?;
        let tmp = path.with_extension("json.tmp");
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(&tmp).map_err(fail)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            file.set_permissions(std::fs::Permissions::from_mode(0o600))
                .map_err(fail)?;
        }
        file.write_all(text.as_bytes()).map_err(fail)?;
        file.sync_all().map_err(fail)?;
        std::fs::rename(&tmp, path).map_err(fail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_file_round_trips_with_owner_only_permissions() {
        let dir = std::env::temp_dir().join(format!("punct-tokens-{}", std::process::id()));
        let path = dir.join("sub").join("tokens.json");
        let mut file = TokenFile::default();
        let server = ServerAddress::parse("--server", "http://x:1").unwrap();
        let tokens = SeatTokens::new(vec![Some("a".repeat(32)), None]);
        file.games
            .insert("g1".into(), GameTokens::new(&server, &tokens));
        file.save(&path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let json: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(json["games"]["g1"]["white"], "a".repeat(32), "{text}");
        let back = TokenFile::load(&path).unwrap();
        assert_eq!(back.games["g1"].token(0), Some(&*"a".repeat(32)));
        assert_eq!(back.games["g1"].token(1), None);
        assert_eq!(back.games["g1"].server, "http://x:1");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert!(
            TokenFile::load(&dir.join("missing.json"))
                .unwrap()
                .games
                .is_empty()
        );
        std::fs::write(&path, "not json").unwrap();
        assert!(
            TokenFile::load(&path)
                .unwrap_err()
                .contains("not a token file")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_last_game_kept_is_the_default_game() {
        let dir = std::env::temp_dir().join(format!("punct-last-{}", std::process::id()));
        let path = dir.join("tokens.json");
        let server = ServerAddress::parse("--server", "127.0.0.1:1").unwrap();
        let game = |id: &str| NewGame {
            game: crate::service::grpc::pb::referee::v1::Game {
                game_id: id.into(),
                ..Default::default()
            },
            tokens: SeatTokens::default(),
        };
        let empty = TokenFile::load(&path).unwrap();
        assert!(
            empty
                .game_or_last(None, &path)
                .unwrap_err()
                .contains("no game given")
        );
        keep(&path, &server, &game("g1")).unwrap();
        keep(&path, &server, &game("g2")).unwrap();
        let file = TokenFile::load(&path).unwrap();
        assert_eq!(file.game_or_last(None, &path).unwrap(), "g2");
        assert_eq!(file.game_or_last(Some("g1".into()), &path).unwrap(), "g1");
        // A file written before `last` existed still reads.
        std::fs::write(
            &path,
            r#"{"games": {"g": {"server": "http://x", "black": "b"}}}"#,
        )
        .unwrap();
        let old = TokenFile::load(&path).unwrap();
        assert_eq!((old.last, old.games["g"].token(1)), (None, Some("b")));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
