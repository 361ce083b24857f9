//! The referee key: the Ed25519 key that signs receipts, and the keyring of
//! the public keys it replaced (docs/RECEIPTS.md, "The referee key").
//!
//! The private key lives in a file of its own (PKCS#8 in PEM, owner-only),
//! `referee.key` in the data directory by default, created at the first
//! start; the keyring, `referee.keyring.json` next to it, lists every
//! public key the server has signed with, each with the time it took over
//! (and was retired), so receipts signed before a rotation still verify.
//! The private key is never logged, shown or written anywhere else:
//! `Debug` prints the key id only.

use std::fmt;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use ring::rand::SystemRandom;
use ring::signature::{self, Ed25519KeyPair, KeyPair as _};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use super::{b64, b64_decode};

/// The key file's name in the data directory, by default.
pub const KEY_FILE: &str = "referee.key";

/// The signature algorithm's name in receipts and key lists.
pub const ALGORITHM: &str = "Ed25519";

/// Why the referee key could not be read, made or changed.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// A file could not be read or written.
    #[error("{what} {}: {source}", path.display())]
    Io {
        /// What was being done.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The key file holds no Ed25519 private key.
    #[error("{} is not an Ed25519 private key (PKCS#8, PEM or DER): {why}", path.display())]
    BadKey {
        /// The file.
        path: PathBuf,
        /// Why.
        why: String,
    },
    /// The keyring or key list is not the JSON it should be.
    #[error("{where_}: not a key list: {why}")]
    BadList {
        /// The file or address.
        where_: String,
        /// Why.
        why: String,
    },
    /// No randomness for a new key.
    #[error("cannot generate an Ed25519 key")]
    Generate,
}

/// The id of a public key: the first 8 bytes of its SHA-256, in hex.
pub fn key_id(public_key: &[u8]) -> String {
    crate::games::hex(&Sha256::digest(public_key)[..8])
}

/// One public key of a key list (the keyring file, the well-known
/// document).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PublicKeyEntry {
    /// Its id ([`key_id`]).
    pub key_id: String,
    /// The 32 bytes of the Ed25519 public key, standard base64.
    pub public_key: String,
    /// The same bytes in lower-case hex.
    #[serde(default)]
    pub public_key_hex: String,
    /// When it started signing, Unix milliseconds.
    #[serde(default)]
    pub since_unix_ms: i64,
    /// When a rotation retired it (it signs no more), Unix milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retired_unix_ms: Option<i64>,
}

impl PublicKeyEntry {
    fn of(public_key: &[u8], since_unix_ms: i64) -> PublicKeyEntry {
        PublicKeyEntry {
            key_id: key_id(public_key),
            public_key: b64(public_key),
            public_key_hex: crate::games::hex(public_key),
            since_unix_ms,
            retired_unix_ms: None,
        }
    }

    /// The public key's bytes, if its base64 is 32 bytes that hash to its id.
    pub fn bytes(&self) -> Option<Vec<u8>> {
        let bytes = b64_decode(&self.public_key)?;
        (bytes.len() == 32 && key_id(&bytes) == self.key_id).then_some(bytes)
    }
}

/// A list of public keys: the keyring file and the answer of
/// `/.well-known/punct-referee.json` and `GetRefereeKeys`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyList {
    /// Always [`ALGORITHM`].
    pub algorithm: String,
    /// The id of the key that signs now.
    #[serde(default)]
    pub current_key_id: String,
    /// Every key, the current one included, oldest first.
    pub keys: Vec<PublicKeyEntry>,
}

impl KeyList {
    /// The list's JSON text.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// A list from JSON text (`where_` names it in errors).
    pub fn parse(text: &str, where_: &str) -> Result<KeyList, KeyError> {
        let list: KeyList = serde_json::from_str(text).map_err(|e| KeyError::BadList {
            where_: where_.to_string(),
            why: e.to_string(),
        })?;
        if list.algorithm != ALGORITHM {
            return Err(KeyError::BadList {
                where_: where_.to_string(),
                why: format!("algorithm `{}`, not {ALGORITHM}", list.algorithm),
            });
        }
        Ok(list)
    }

    /// The public key with id `id`, if listed (and well formed).
    pub fn find(&self, id: &str) -> Option<Vec<u8>> {
        self.keys
            .iter()
            .find(|k| k.key_id == id)
            .and_then(PublicKeyEntry::bytes)
    }

    /// A list of the one public key `public_key`.
    pub fn single(public_key: &[u8]) -> KeyList {
        let entry = PublicKeyEntry::of(public_key, 0);
        KeyList {
            algorithm: ALGORITHM.to_string(),
            current_key_id: entry.key_id.clone(),
            keys: vec![entry],
        }
    }
}

/// The referee key (module docs). `Debug` shows its id only.
pub struct RefereeKey {
    pair: Ed25519KeyPair,
    id: String,
    list: KeyList,
    /// Whether it lives in this process only (`--storage memory` without
    /// a key file).
    ephemeral: bool,
}

impl fmt::Debug for RefereeKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RefereeKey")
            .field("key_id", &self.id)
            .field("ephemeral", &self.ephemeral)
            .finish_non_exhaustive()
    }
}

/// The keyring file of the key file `key`: `<name>.keyring.json` beside it.
pub fn keyring_path(key: &Path) -> PathBuf {
    key.with_extension("keyring.json")
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

fn generate() -> Result<Vec<u8>, KeyError> {
    Ed25519KeyPair::generate_pkcs8(&SystemRandom::new())
        .map(|d| d.as_ref().to_vec())
        .map_err(|_| KeyError::Generate)
}

fn pem(der: &[u8]) -> String {
    let body = b64(der);
    let mut out = String::from("-----BEGIN PRIVATE KEY-----\n");
    for chunk in body.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(chunk).unwrap_or_default());
        out.push('\n');
    }
    out.push_str("-----END PRIVATE KEY-----\n");
    out
}

fn pair_of(path: &Path, bytes: &[u8]) -> Result<Ed25519KeyPair, KeyError> {
    let bad = |why: String| KeyError::BadKey {
        path: path.to_path_buf(),
        why,
    };
    let der = match std::str::from_utf8(bytes) {
        Ok(text) if text.trim_start().starts_with("-----BEGIN") => {
            let body: String = text
                .lines()
                .map(str::trim)
                .filter(|l| !l.starts_with("-----") && !l.is_empty())
                .collect();
            b64_decode(&body).ok_or_else(|| bad("the PEM body is not base64".into()))?
        }
        _ => bytes.to_vec(),
    };
    Ed25519KeyPair::from_pkcs8_maybe_unchecked(&der).map_err(|e| bad(e.to_string()))
}

/// Writes `bytes` to `path` whole (a temporary file, synced, then renamed
/// or linked into place), owner-only when `private`. With `exclusive`, an
/// existing file is kept and `Ok(false)` says so.
fn write_whole(path: &Path, bytes: &[u8], private: bool, exclusive: bool) -> std::io::Result<bool> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let written = (|| {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        if private {
            use std::os::unix::fs::OpenOptionsExt as _;
            options.mode(0o600);
        }
        #[cfg(not(unix))]
        let _ = private;
        let mut file = options.open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    let placed = if exclusive {
        let linked = std::fs::hard_link(&tmp, path);
        let _ = std::fs::remove_file(&tmp);
        match linked {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(e),
        }
    } else {
        std::fs::rename(&tmp, path).map(|()| true).inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
        && let Ok(dir) = std::fs::File::open(dir)
    {
        let _ = dir.sync_all();
    }
    placed
}

fn read_keyring(path: &Path) -> Result<Option<KeyList>, KeyError> {
    match std::fs::read_to_string(path) {
        Ok(text) => KeyList::parse(&text, &path.display().to_string()).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(KeyError::Io {
            what: "cannot read the keyring",
            path: path.to_path_buf(),
            source,
        }),
    }
}

impl RefereeKey {
    fn with(
        pair: Ed25519KeyPair,
        ring: Option<KeyList>,
        since: i64,
        ephemeral: bool,
    ) -> RefereeKey {
        let public = pair.public_key().as_ref().to_vec();
        let id = key_id(&public);
        let mut keys: Vec<PublicKeyEntry> = ring
            .map(|r| r.keys)
            .unwrap_or_default()
            .into_iter()
            .filter(|k| k.bytes().is_some())
            .collect();
        if !keys.iter().any(|k| k.key_id == id) {
            keys.push(PublicKeyEntry::of(&public, since));
        }
        // The key in the key file signs: it is not retired, whatever a
        // keyring left by an interrupted rotation says.
        for k in &mut keys {
            if k.key_id == id {
                k.retired_unix_ms = None;
            }
            if k.public_key_hex.is_empty()
                && let Some(bytes) = k.bytes()
            {
                k.public_key_hex = crate::games::hex(&bytes);
            }
        }
        RefereeKey {
            pair,
            list: KeyList {
                algorithm: ALGORITHM.to_string(),
                current_key_id: id.clone(),
                keys,
            },
            id,
            ephemeral,
        }
    }

    /// A key of this process only.
    pub fn ephemeral() -> Result<RefereeKey, KeyError> {
        let der = generate()?;
        let pair = Ed25519KeyPair::from_pkcs8(&der).map_err(|_| KeyError::Generate)?;
        Ok(RefereeKey::with(pair, None, now_ms(), true))
    }

    /// The ephemeral key of this process, made at its first use: the key
    /// of a store given none (`--storage memory` without a key file, and
    /// tests).
    pub fn process() -> std::sync::Arc<RefereeKey> {
        static KEY: std::sync::OnceLock<std::sync::Arc<RefereeKey>> = std::sync::OnceLock::new();
        KEY.get_or_init(|| {
            // The system's random source failing is no state a server can
            // run in.
            std::sync::Arc::new(RefereeKey::ephemeral().expect("the system random source works"))
        })
        .clone()
    }

    /// Reads the key file at `path` and its keyring, or creates the key
    /// (mode 0600, written whole) when there is none. Two servers creating
    /// it at once agree on one: the file appears by a link that fails if it
    /// exists, and the loser reads the winner's.
    pub fn load_or_create(path: &Path) -> Result<RefereeKey, KeyError> {
        let io = |what: &'static str| {
            let path = path.to_path_buf();
            move |source| KeyError::Io { what, path, source }
        };
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let created = write_whole(path, pem(&generate()?).as_bytes(), true, true)
                    .map_err(io("cannot create the referee key file"))?;
                if created {
                    tracing::info!(file = %path.display(), "referee key created: every replica needs this file");
                }
                std::fs::read(path).map_err(io("cannot read the referee key file"))?
            }
            Err(e) => return Err(io("cannot read the referee key file")(e)),
        };
        crate::service::storage::secret::warn_if_readable_by_others(path, "referee key");
        let pair = pair_of(path, &bytes)?;
        let since = std::fs::metadata(path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_millis() as i64);
        let ring = read_keyring(&keyring_path(path))?;
        Ok(RefereeKey::with(pair, ring, since, false))
    }

    /// Replaces the key in `path` by a new one, listing the old public key
    /// in the keyring as retired now; returns the old and the new key ids.
    /// Running servers read the new key when restarted.
    pub fn rotate(path: &Path) -> Result<(String, String), KeyError> {
        let old = RefereeKey::load_or_create(path)?;
        let now = now_ms();
        let der = generate()?;
        let pair = Ed25519KeyPair::from_pkcs8(&der).map_err(|_| KeyError::Generate)?;
        let mut list = old.list.clone();
        for k in &mut list.keys {
            if k.key_id == old.id {
                k.retired_unix_ms = Some(now);
            }
        }
        let new = RefereeKey::with(pair, Some(list), now, false);
        // The keyring first: a rotation interrupted after it lists a key
        // nobody signs with, which is harmless; the key file is replaced
        // whole.
        let ring = keyring_path(path);
        write_whole(&ring, new.list.to_json().as_bytes(), false, false).map_err(|source| {
            KeyError::Io {
                what: "cannot write the keyring",
                path: ring.clone(),
                source,
            }
        })?;
        write_whole(path, pem(&der).as_bytes(), true, false).map_err(|source| KeyError::Io {
            what: "cannot replace the referee key file",
            path: path.to_path_buf(),
            source,
        })?;
        Ok((old.id, new.id))
    }

    /// The key's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Whether the key lives in this process only.
    pub fn is_ephemeral(&self) -> bool {
        self.ephemeral
    }

    /// The public key's 32 bytes.
    pub fn public_key(&self) -> &[u8] {
        self.pair.public_key().as_ref()
    }

    /// Every public key, the current one included.
    pub fn key_list(&self) -> &KeyList {
        &self.list
    }

    /// The signature of `message`.
    pub fn sign(&self, message: &[u8]) -> Vec<u8> {
        self.pair.sign(message).as_ref().to_vec()
    }
}

/// Whether `signature` is `public_key`'s over `message`.
pub fn verifies(public_key: &[u8], message: &[u8], signature: &[u8]) -> bool {
    signature::UnparsedPublicKey::new(&signature::ED25519, public_key)
        .verify(message, signature)
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_made_once_owner_only_and_read_back() {
        let dir = std::env::temp_dir().join(format!("rkey-{}-{}", std::process::id(), line!()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = dir.join(KEY_FILE);
        let first = RefereeKey::load_or_create(&path).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let again = RefereeKey::load_or_create(&path).unwrap();
        assert_eq!(first.id(), again.id());
        assert!(!format!("{first:?}").contains("PRIVATE"));
        let sig = first.sign(b"m");
        assert!(verifies(again.public_key(), b"m", &sig));
        assert!(!verifies(again.public_key(), b"n", &sig));

        let (old, new) = RefereeKey::rotate(&path).unwrap();
        assert_eq!(old, first.id());
        let rotated = RefereeKey::load_or_create(&path).unwrap();
        assert_eq!(rotated.id(), new);
        assert_ne!(old, new);
        let list = rotated.key_list();
        assert_eq!(list.current_key_id, new);
        let retired = list.keys.iter().find(|k| k.key_id == old).unwrap();
        assert!(retired.retired_unix_ms.is_some());
        assert_eq!(list.find(&old).unwrap(), first.public_key());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_file_that_is_no_key_is_refused() {
        let dir = std::env::temp_dir().join(format!("rkey-{}-{}", std::process::id(), line!()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(KEY_FILE);
        std::fs::write(&path, "not a key\n").unwrap();
        let e = RefereeKey::load_or_create(&path).unwrap_err();
        assert!(matches!(e, KeyError::BadKey { .. }), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
