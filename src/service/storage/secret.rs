//! The server secret: 32 random bytes kept outside the database, so that
//! the database alone (a backup, a dump, a copy of the file) reveals no
//! deck and no seat token (docs/SECURITY.md, "At rest").
//!
//! What it does:
//! * the seed of every stored game is sealed with it: XORed with an
//!   HMAC-SHA256 keystream of the secret and the game id
//!   ([`ServerSecret::seal_seed`]; the game id makes each keystream
//!   different, and a game's seed is written once);
//! * the seat tokens of tournament games are derived from it, the
//!   tournament and the game ([`ServerSecret::seat_token`]), so a
//!   tournament can hand an entrant its seats again after a restart, or on
//!   another replica, without storing them;
//! * a tournament document is stored with its seeds (its openings' and its
//!   `setup_seed_base`) sealed the same way, keyed by the tournament
//!   ([`ServerSecret::seal_document_seeds`]), and read back through
//!   [`ServerSecret::unseal_document_seeds`];
//! * seat tokens and seeds a tournament document of an older version held
//!   in the clear are sealed when the database is migrated
//!   ([`ServerSecret::seal_document`]);
//! * a key check value, HMAC(secret, fixed text), is stored in the
//!   database: a server whose secret does not match refuses to start
//!   instead of reading garbage decks.
//!
//! The secret lives in a file of 64 hex digits: created at the first start
//! (owner-only permissions) when missing, or given with `--secret-file`.

use std::fmt;
use std::io::Write as _;
use std::path::Path;
use std::sync::OnceLock;

use ring::hmac;

use super::StorageError;

/// The secret file's name in the data directory, by default.
pub const SECRET_FILE: &str = "referee.secret";

/// What the key check value is the HMAC of.
const CHECK_TEXT: &[u8] = b"punct-referee key check v1";
/// Domain of the seeds' keystreams.
const SEED_DOMAIN: &[u8] = b"punct-referee seed seal v1";
/// Domain of derived tournament seat tokens.
const TOKEN_DOMAIN: &[u8] = b"punct-referee tournament seat token v1";
/// Domain of the keystreams of sealed legacy seat tokens.
const SEALED_TOKEN_DOMAIN: &[u8] = b"punct-referee sealed seat token v1";
/// Domain of the keystreams of a tournament document's seeds.
const TOURNAMENT_SEED_DOMAIN: &[u8] = b"punct-referee tournament seed seal v1";

/// The server secret (module docs). Its `Debug` hides the value.
#[derive(Clone)]
pub struct ServerSecret {
    key: hmac::Key,
    check: String,
}

impl fmt::Debug for ServerSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerSecret")
            .field("check", &self.check)
            .finish_non_exhaustive()
    }
}

impl ServerSecret {
    /// The secret of these bytes.
    pub fn from_bytes(bytes: &[u8; 32]) -> ServerSecret {
        let key = hmac::Key::new(hmac::HMAC_SHA256, bytes);
        let check = crate::games::hex(hmac::sign(&key, CHECK_TEXT).as_ref());
        ServerSecret { key, check }
    }

    /// A fresh random secret.
    pub fn random() -> ServerSecret {
        ServerSecret::from_bytes(&rand::random())
    }

    /// A random secret drawn once per process: the secret of a store that
    /// keeps nothing at rest (`--storage memory`, the tests' in-memory
    /// backend), and of a PostgreSQL store opened without a secret file
    /// (tests and tools; the server always gives one).
    pub fn ephemeral() -> &'static ServerSecret {
        static SECRET: OnceLock<ServerSecret> = OnceLock::new();
        SECRET.get_or_init(ServerSecret::random)
    }

    /// Reads the secret file at `path`, or creates it with a fresh secret
    /// (mode 0600) when there is none. Two servers creating it at once
    /// agree on one: the file appears whole, by a link that fails if it
    /// exists, and the loser reads the winner's.
    pub fn load_or_create(path: &Path) -> Result<ServerSecret, StorageError> {
        match std::fs::read_to_string(path) {
            Ok(text) => return ServerSecret::parse(path, &text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(StorageError::Config(format!(
                    "cannot read the server secret file {}: {e}",
                    path.display()
                )));
            }
        }
        let bytes: [u8; 32] = rand::random();
        let text = format!("{}\n", crate::games::hex(&bytes));
        let cannot = |e: std::io::Error| {
            StorageError::Config(format!(
                "cannot create the server secret file {}: {e}",
                path.display()
            ))
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(cannot)?;
        }
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        let written = (|| {
            let mut file = owner_only().open(&tmp)?;
            file.write_all(text.as_bytes())?;
            file.sync_all()
        })();
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(cannot(e));
        }
        let linked = std::fs::hard_link(&tmp, path);
        let _ = std::fs::remove_file(&tmp);
        match linked {
            Ok(()) => {
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
                    && let Ok(dir) = std::fs::File::open(dir)
                {
                    let _ = dir.sync_all();
                }
                tracing::info!(file = %path.display(), "server secret created: back it up with the database");
                Ok(ServerSecret::from_bytes(&bytes))
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let text = std::fs::read_to_string(path).map_err(cannot)?;
                ServerSecret::parse(path, &text)
            }
            Err(e) => Err(cannot(e)),
        }
    }

    fn parse(path: &Path, text: &str) -> Result<ServerSecret, StorageError> {
        let bytes = crate::games::parse_seed(text).ok_or_else(|| {
            StorageError::Config(format!(
                "the server secret file {} does not hold 64 hex digits \
                 (create one with `openssl rand -hex 32`, or remove it to have one created)",
                path.display()
            ))
        })?;
        warn_if_readable_by_others(path, "server secret");
        Ok(ServerSecret::from_bytes(&bytes))
    }

    /// The key check value the database stores (64 hex digits): proves a
    /// secret is the one the database was written with, and reveals
    /// nothing of it.
    pub fn check_value(&self) -> &str {
        &self.check
    }

    /// Fails with a readable message unless `stored` (the database's key
    /// check value) is this secret's. `secret_file` names the file for the
    /// message.
    pub fn verify(&self, stored: &str, database: &str) -> Result<(), StorageError> {
        if stored == self.check {
            return Ok(());
        }
        Err(StorageError::Config(format!(
            "the server secret does not match the database {database}: it was written with \
             another secret file. Start with the secret file it was written with \
             (--secret-file; every replica of a cluster needs the same file). \
             See docs/STORAGE.md, \"The server secret\""
        )))
    }

    /// HMAC-SHA256 of `domain` and `parts`, each part prefixed with its
    /// length (so no two lists of parts give the same input).
    fn mac(&self, domain: &[u8], parts: &[&[u8]]) -> [u8; 32] {
        let mut ctx = hmac::Context::with_key(&self.key);
        ctx.update(domain);
        for part in parts {
            ctx.update(&(part.len() as u64).to_be_bytes());
            ctx.update(part);
        }
        let mut out = [0u8; 32];
        out.copy_from_slice(ctx.sign().as_ref());
        out
    }

    /// Game `game_id`'s seed as stored: XORed with the game's keystream.
    /// Sealing twice gives the seed back, so this also unseals.
    pub fn seal_seed(&self, game_id: &str, seed: &[u8; 32]) -> [u8; 32] {
        let stream = self.mac(SEED_DOMAIN, &[game_id.as_bytes()]);
        std::array::from_fn(|i| seed[i] ^ stream[i])
    }

    /// The seed of game `game_id` whose stored form is `sealed`.
    pub fn unseal_seed(&self, game_id: &str, sealed: &[u8; 32]) -> [u8; 32] {
        self.seal_seed(game_id, sealed)
    }

    /// The token (16 bytes) of seat `seat` (0-based) of tournament
    /// `tournament_id`'s game `game_id`: the same on every replica with this
    /// secret, and unguessable without it.
    pub fn seat_token(&self, tournament_id: &str, game_id: &str, seat: usize) -> [u8; 16] {
        let mac = self.mac(
            TOKEN_DOMAIN,
            &[
                tournament_id.as_bytes(),
                game_id.as_bytes(),
                &(seat as u64).to_be_bytes(),
            ],
        );
        std::array::from_fn(|i| mac[i])
    }

    /// A seat token stored sealed (see [`ServerSecret::seal_document`]);
    /// sealing twice gives the token back.
    pub fn seal_token(
        &self,
        tournament_id: &str,
        game_id: &str,
        seat: usize,
        token: &[u8; 16],
    ) -> [u8; 16] {
        let mac = self.mac(
            SEALED_TOKEN_DOMAIN,
            &[
                tournament_id.as_bytes(),
                game_id.as_bytes(),
                &(seat as u64).to_be_bytes(),
            ],
        );
        std::array::from_fn(|i| token[i] ^ mac[i])
    }

    /// The keystream of tournament `tournament_id`'s seed in `slot`
    /// (`opening <i>` or `base`).
    fn tournament_stream(&self, tournament_id: &str, slot: &str) -> [u8; 32] {
        self.mac(
            TOURNAMENT_SEED_DOMAIN,
            &[tournament_id.as_bytes(), slot.as_bytes()],
        )
    }

    /// A stored tournament document (`document`, JSON) with everything an
    /// older version held in the clear sealed: the seat tokens of its games
    /// in progress (`"tokens"` in a game's `state` become `"sealed_tokens"`,
    /// hex, seat order, so the seats keep their tokens) and its seeds
    /// ([`ServerSecret::seal_document_seeds`]); `None` when nothing in it
    /// is in the clear.
    pub fn seal_document(&self, document: &str) -> Result<Option<String>, SealError> {
        if !document.contains("\"tokens\"")
            && !document.contains("\"seed\":\"")
            && !document.contains("\"setup_seed_base\":")
        {
            return Ok(None);
        }
        let mut doc: serde_json::Value = serde_json::from_str(document)?;
        let tokens = self.seal_value_tokens(&mut doc)?;
        let seeds = self.seal_document_seeds(&mut doc)?;
        if !tokens && !seeds {
            return Ok(None);
        }
        Ok(Some(serde_json::to_string(&doc)?))
    }

    /// Seals the plain seat tokens of `doc`'s games (see
    /// [`ServerSecret::seal_document`]); whether there were any.
    fn seal_value_tokens(&self, doc: &mut serde_json::Value) -> Result<bool, SealError> {
        let id = document_id(doc);
        let mut changed = false;
        let games = doc
            .get_mut("games")
            .and_then(|g| g.as_array_mut())
            .into_iter()
            .flatten();
        for game in games {
            let Some(state) = game.get_mut("state").and_then(|s| s.as_object_mut()) else {
                continue;
            };
            let Some(tokens) = state.remove("tokens") else {
                continue;
            };
            changed = true;
            let game_id = state
                .get("game_id")
                .and_then(|v| v.as_str())
                .unwrap_or_default()
                .to_string();
            let tokens = tokens.as_array().cloned().unwrap_or_default();
            if tokens.is_empty() {
                continue;
            }
            let mut sealed = Vec::with_capacity(tokens.len());
            for (seat, token) in tokens.iter().enumerate() {
                let bytes =
                    token
                        .as_str()
                        .and_then(parse_token)
                        .ok_or_else(|| SealError::Token {
                            tournament: id.clone(),
                        })?;
                let s = self.seal_token(&id, &game_id, seat, &bytes);
                sealed.push(serde_json::Value::String(crate::games::hex(&s)));
            }
            state.insert("sealed_tokens".into(), serde_json::Value::Array(sealed));
        }
        Ok(changed)
    }

    /// Seals the seeds of tournament document `doc` in place: each
    /// opening's `seed` (64 hex digits) becomes `sealed_seed`, and
    /// `setup_seed_base` (a number) becomes `sealed_seed_base` (16 hex
    /// digits), each XORed with a keystream of the secret, the tournament
    /// and the slot; whether there was anything to seal.
    pub fn seal_document_seeds(&self, doc: &mut serde_json::Value) -> Result<bool, SealError> {
        self.turn_document_seeds(doc, Turn::Seal)
    }

    /// The inverse of [`ServerSecret::seal_document_seeds`]: `doc` as the
    /// tournament holds it. Plain seeds (a document written before they
    /// were sealed) are left as they are.
    pub fn unseal_document_seeds(&self, doc: &mut serde_json::Value) -> Result<(), SealError> {
        self.turn_document_seeds(doc, Turn::Unseal).map(drop)
    }

    /// Seals or unseals (the same XOR) every seed of `doc` in the form
    /// `turn` reads, writing it in the form `turn` writes; whether any was.
    fn turn_document_seeds(
        &self,
        doc: &mut serde_json::Value,
        turn: Turn,
    ) -> Result<bool, SealError> {
        let id = document_id(doc);
        let (seed_from, seed_to, base_from, base_to) = turn.keys();
        let mut changed = false;
        let openings = doc
            .get_mut("openings")
            .and_then(|o| o.as_array_mut())
            .into_iter()
            .flatten();
        for (i, opening) in openings.enumerate() {
            let Some(opening) = opening.as_object_mut() else {
                continue;
            };
            let Some(text) = opening.remove(seed_from).filter(|v| !v.is_null()) else {
                continue;
            };
            let bytes = text
                .as_str()
                .and_then(crate::games::parse_seed)
                .ok_or_else(|| SealError::Seed {
                    tournament: id.clone(),
                    opening: i,
                    field: seed_from,
                })?;
            let stream = self.tournament_stream(&id, &format!("opening {i}"));
            let turned: [u8; 32] = std::array::from_fn(|k| bytes[k] ^ stream[k]);
            opening.insert(seed_to.into(), crate::games::hex(&turned).into());
            changed = true;
        }
        let Some(object) = doc.as_object_mut() else {
            return Ok(changed);
        };
        let Some(base) = object.remove(base_from).filter(|v| !v.is_null()) else {
            return Ok(changed);
        };
        let bytes = match turn {
            Turn::Seal => base.as_u64().map(u64::to_be_bytes),
            Turn::Unseal => base.as_str().and_then(parse_base),
        }
        .ok_or_else(|| SealError::SeedBase {
            tournament: id.clone(),
            field: base_from,
        })?;
        let stream = self.tournament_stream(&id, "base");
        let turned: [u8; 8] = std::array::from_fn(|k| bytes[k] ^ stream[k]);
        let value = match turn {
            Turn::Seal => crate::games::hex(&turned).into(),
            Turn::Unseal => u64::from_be_bytes(turned).into(),
        };
        object.insert(base_to.into(), value);
        Ok(true)
    }
}

/// Why a stored tournament document cannot be sealed or unsealed: it is
/// not JSON, or a token or seed in it is not one.
#[derive(Debug, thiserror::Error)]
pub enum SealError {
    /// The document is not (or cannot be written as) JSON.
    #[error("tournament document: {0}")]
    Json(#[from] serde_json::Error),
    /// A game's stored seat token is not 32 hex digits.
    #[error("tournament `{tournament}`: a stored seat token is no token")]
    Token {
        /// The tournament's id.
        tournament: String,
    },
    /// An opening's seed is not 64 hex digits.
    #[error("tournament `{tournament}`: opening {opening}'s {field} is no seed")]
    Seed {
        /// The tournament's id.
        tournament: String,
        /// The opening's index.
        opening: usize,
        /// The key read (`seed` or `sealed_seed`).
        field: &'static str,
    },
    /// The seed base is neither a number nor 16 hex digits.
    #[error("tournament `{tournament}`: {field} is no seed base")]
    SeedBase {
        /// The tournament's id.
        tournament: String,
        /// The key read (`setup_seed_base` or `sealed_seed_base`).
        field: &'static str,
    },
}

/// Which way [`ServerSecret::turn_document_seeds`] goes.
#[derive(Clone, Copy)]
enum Turn {
    Seal,
    Unseal,
}

impl Turn {
    /// The keys read and written: the openings' seed, the base.
    fn keys(self) -> (&'static str, &'static str, &'static str, &'static str) {
        match self {
            Turn::Seal => ("seed", "sealed_seed", "setup_seed_base", "sealed_seed_base"),
            Turn::Unseal => ("sealed_seed", "seed", "sealed_seed_base", "setup_seed_base"),
        }
    }
}

/// A tournament document's id (empty if it has none).
fn document_id(doc: &serde_json::Value) -> String {
    doc.get("id")
        .and_then(|v| v.as_str())
        .unwrap_or_default()
        .to_string()
}

/// 16 hex digits as 8 bytes.
fn parse_base(text: &str) -> Option<[u8; 8]> {
    if text.len() != 16 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let mut out = [0u8; 8];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

/// 32 hex digits as 16 bytes.
pub fn parse_token(text: &str) -> Option<[u8; 16]> {
    if text.len() != 32 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let mut out = [0u8; 16];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

#[cfg(unix)]
fn owner_only() -> std::fs::OpenOptions {
    use std::os::unix::fs::OpenOptionsExt;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true).mode(0o600);
    options
}

#[cfg(not(unix))]
fn owner_only() -> std::fs::OpenOptions {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    options
}

/// A secret file anyone may read is still used, with a warning naming
/// `what` it holds. (Group access is left alone: a Kubernetes Secret is
/// mounted for the pod's group, `fsGroup`.)
pub(crate) fn warn_if_readable_by_others(path: &Path, what: &str) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if let Ok(meta) = std::fs::metadata(path)
            && meta.permissions().mode() & 0o007 != 0
        {
            tracing::warn!(
                file = %path.display(),
                mode = format!("{:o}", meta.permissions().mode() & 0o777),
                "the {what} file is readable by anyone: chmod 600 it"
            );
        }
    }
    #[cfg(not(unix))]
    let _ = path;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealing_hides_the_seed_and_gives_it_back() {
        let secret = ServerSecret::from_bytes(&[7; 32]);
        let seed = [0x5a; 32];
        let sealed = secret.seal_seed("g1", &seed);
        assert_ne!(sealed, seed);
        assert_ne!(sealed, secret.seal_seed("g2", &seed), "per game");
        assert_eq!(secret.unseal_seed("g1", &sealed), seed);
        let other = ServerSecret::from_bytes(&[8; 32]);
        assert_ne!(other.unseal_seed("g1", &sealed), seed);
        assert_ne!(secret.check_value(), other.check_value());
        assert!(secret.verify(other.check_value(), "db").is_err());
        assert!(secret.verify(secret.check_value(), "db").is_ok());
    }

    #[test]
    fn seat_tokens_are_derived_per_tournament_game_and_seat() {
        let secret = ServerSecret::from_bytes(&[1; 32]);
        let a = secret.seat_token("t", "g", 0);
        assert_eq!(a, secret.seat_token("t", "g", 0));
        assert_ne!(a, secret.seat_token("t", "g", 1));
        assert_ne!(a, secret.seat_token("t", "h", 0));
        assert_ne!(a, secret.seat_token("u", "g", 0));
        assert_ne!(
            a,
            ServerSecret::from_bytes(&[2; 32]).seat_token("t", "g", 0)
        );
    }

    #[test]
    fn plain_document_tokens_are_sealed_once() {
        let secret = ServerSecret::from_bytes(&[3; 32]);
        let token = "0123456789abcdef0123456789abcdef";
        let doc = format!(
            r#"{{"id":"t1","games":[{{"number":1,"state":{{"state":"playing","game_id":"g1","tokens":["{token}"]}}}},{{"number":2,"state":{{"state":"pending"}}}}]}}"#
        );
        let sealed = secret.seal_document(&doc).unwrap().unwrap();
        assert!(!sealed.contains(token), "{sealed}");
        assert!(!sealed.contains("\"tokens\""));
        assert_eq!(secret.seal_document(&sealed).unwrap(), None);
        let v: serde_json::Value = serde_json::from_str(&sealed).unwrap();
        let stored = v["games"][0]["state"]["sealed_tokens"][0].as_str().unwrap();
        let back = secret.seal_token("t1", "g1", 0, &parse_token(stored).unwrap());
        assert_eq!(crate::games::hex(&back), token);
    }

    #[test]
    fn tournament_seeds_are_sealed_per_tournament_and_given_back() {
        let secret = ServerSecret::from_bytes(&[4; 32]);
        let seed = "5e".repeat(32);
        let base = 0x0123_4567_89ab_cdef_u64;
        let plain = format!(
            r#"{{"id":"t1","openings":[{{"moves":[],"seed":"{seed}"}},{{"moves":["a"],"seed":null}}],"setup_seed_base":{base}}}"#
        );
        let sealed = secret.seal_document(&plain).unwrap().unwrap();
        assert!(!sealed.contains(&seed), "{sealed}");
        assert!(!sealed.contains(&base.to_string()), "{sealed}");
        assert!(!sealed.contains("setup_seed_base"), "{sealed}");
        assert_eq!(secret.seal_document(&sealed).unwrap(), None, "once");
        let mut v: serde_json::Value = serde_json::from_str(&sealed).unwrap();
        secret.unseal_document_seeds(&mut v).unwrap();
        assert_eq!(v["openings"][0]["seed"], seed.as_str());
        assert!(v["openings"][1]["seed"].is_null());
        assert_eq!(v["setup_seed_base"], base);
        // Another tournament's keystream, and another secret's, differ.
        let moved = sealed.replace("\"t1\"", "\"t2\"");
        let mut w: serde_json::Value = serde_json::from_str(&moved).unwrap();
        secret.unseal_document_seeds(&mut w).unwrap();
        assert_ne!(w["openings"][0]["seed"], seed.as_str());
        let mut x: serde_json::Value = serde_json::from_str(&sealed).unwrap();
        ServerSecret::from_bytes(&[5; 32])
            .unseal_document_seeds(&mut x)
            .unwrap();
        assert_ne!(x["setup_seed_base"], base);
    }

    #[test]
    fn the_secret_file_is_created_owner_only_and_read_back() {
        let dir = super::super::conformance::tempdir();
        let path = dir.join("sub").join(SECRET_FILE);
        let first = ServerSecret::load_or_create(&path).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let again = ServerSecret::load_or_create(&path).unwrap();
        assert_eq!(first.check_value(), again.check_value());
        std::fs::write(&path, "not hex\n").unwrap();
        let e = ServerSecret::load_or_create(&path).unwrap_err();
        assert!(e.message().contains("64 hex digits"), "{e}");
        let _ = std::fs::remove_dir_all(dir);
    }
}
