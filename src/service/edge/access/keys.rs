//! The keys file: its keys (a name, the hash of the secret, the scopes),
//! reading and checking it, making a new key, finding the key a caller
//! presents in constant time, and the keys in force, swapped on reload.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;

use super::Scope;

/// One key of the keys file: its name, the hash of its secret, its scopes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key {
    /// The key's name: what logs, spans and metrics show.
    pub name: String,
    /// SHA-256 of the key's text.
    sha256: [u8; 32],
    /// What it may do.
    pub scopes: BTreeSet<Scope>,
}

impl Key {
    /// Whether the key carries `scope`.
    pub fn has(&self, scope: Scope) -> bool {
        self.scopes.contains(&scope)
    }
}

/// The keys of a keys file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Keyring {
    keys: Vec<Arc<Key>>,
}

/// Why a keys file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum KeysError {
    /// The file cannot be read.
    #[error("keys file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A line is not a key.
    #[error("keys file line {line}: {problem}")]
    Line {
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        problem: String,
    },
}

/// A line of the keys file as written.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyLine {
    name: String,
    sha256: String,
    scopes: Vec<String>,
}

/// The SHA-256 of `key`, as the keys file writes it (lowercase hex).
pub fn hash_hex(key: &str) -> String {
    Sha256::digest(key.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A fresh key: `prk_` and 256 random bits in hex (from the thread-local
/// CSPRNG), and the keys-file line that lets it in as `name` with `scopes`.
pub fn new_key(name: &str, scopes: &[Scope]) -> (String, String) {
    let bytes: [u8; 32] = rand::random();
    let key: String = std::iter::once("prk_".to_string())
        .chain(bytes.iter().map(|b| format!("{b:02x}")))
        .collect();
    let line = serde_json::json!({
        "name": name,
        "sha256": hash_hex(&key),
        "scopes": scopes.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
    })
    .to_string();
    (key, line)
}

fn parse_hash(text: &str) -> Option<[u8; 32]> {
    if text.len() != 64 || !text.is_ascii() {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

impl Keyring {
    /// Reads a keys file (see the module docs).
    pub fn load(path: &Path) -> Result<Keyring, KeysError> {
        let text = std::fs::read_to_string(path).map_err(|source| KeysError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Keyring::parse(&text)
    }

    /// Reads the text of a keys file.
    pub fn parse(text: &str) -> Result<Keyring, KeysError> {
        let mut keys: Vec<Arc<Key>> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let trimmed = raw.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let fail = |problem: String| KeysError::Line { line, problem };
            let parsed: KeyLine = serde_json::from_str(trimmed).map_err(|e| {
                fail(format!(
                    "not a key ({e}): write {{\"name\": …, \"sha256\": …, \"scopes\": […]}}"
                ))
            })?;
            if parsed.name.is_empty() || parsed.name.len() > 64 {
                return Err(fail("a key's name has 1 to 64 characters".into()));
            }
            if keys.iter().any(|k| k.name == parsed.name) {
                return Err(fail(format!("the name `{}` is used twice", parsed.name)));
            }
            let sha256 = parse_hash(&parsed.sha256.to_ascii_lowercase()).ok_or_else(|| {
                fail("sha256 is the key's SHA-256 in 64 hexadecimal digits".into())
            })?;
            if keys.iter().any(|k| k.sha256 == sha256) {
                return Err(fail("the same key is listed twice".into()));
            }
            let mut scopes = BTreeSet::new();
            for scope in &parsed.scopes {
                scopes.insert(Scope::parse(scope).ok_or_else(|| {
                    fail(format!(
                        "`{scope}` is not a scope: use {}",
                        Scope::ALL.map(Scope::as_str).join(", ")
                    ))
                })?);
            }
            keys.push(Arc::new(Key {
                name: parsed.name,
                sha256,
                scopes,
            }));
        }
        Ok(Keyring { keys })
    }

    /// How many keys there are.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The key whose text is `presented`, compared in constant time with
    /// every key (the loop never stops early).
    pub fn find(&self, presented: &str) -> Option<Arc<Key>> {
        let digest: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        let mut found = None;
        for key in &self.keys {
            if bool::from(key.sha256.ct_eq(&digest)) {
                found = Some(key.clone());
            }
        }
        found
    }
}

/// The keys in force, swapped whole on reload; `None`: keys are off.
#[derive(Debug, Clone, Default)]
pub struct Keys {
    current: Option<Arc<RwLock<Arc<Keyring>>>>,
    path: Option<PathBuf>,
}

impl Keys {
    /// No keys: everything is allowed (trusted networks).
    pub fn off() -> Keys {
        Keys::default()
    }

    /// These keys, not read from a file.
    pub fn fixed(keyring: Keyring) -> Keys {
        Keys {
            current: Some(Arc::new(RwLock::new(Arc::new(keyring)))),
            path: None,
        }
    }

    /// The keys of the file at `path`, read again on [`Keys::reload`].
    pub fn from_file(path: &Path) -> Result<Keys, KeysError> {
        let keyring = Keyring::load(path)?;
        Ok(Keys {
            current: Some(Arc::new(RwLock::new(Arc::new(keyring)))),
            path: Some(path.to_path_buf()),
        })
    }

    /// Whether keys are on.
    pub fn enabled(&self) -> bool {
        self.current.is_some()
    }

    /// The keys in force now.
    pub fn keyring(&self) -> Option<Arc<Keyring>> {
        self.current
            .as_ref()
            .map(|c| c.read().unwrap_or_else(|e| e.into_inner()).clone())
    }

    /// Reads the keys file again; on failure the keys in force stay.
    /// Returns how many keys are now in force.
    pub fn reload(&self) -> Result<usize, KeysError> {
        let (Some(current), Some(path)) = (&self.current, &self.path) else {
            return Ok(self.keyring().map_or(0, |k| k.len()));
        };
        let keyring = Keyring::load(path)?;
        let n = keyring.len();
        *current.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(keyring);
        Ok(n)
    }
}

/// A keys-file line for the key `key` (tests of the access parts).
#[cfg(test)]
pub(super) fn test_line(name: &str, key: &str, scopes: &[&str]) -> String {
    serde_json::json!({"name": name, "sha256": hash_hex(key), "scopes": scopes}).to_string()
}

#[cfg(test)]
mod tests {
    use super::test_line as line;
    use super::*;

    #[test]
    fn a_keys_file_reads_names_hashes_and_scopes() {
        let text = format!(
            "# platform keys\n\n{}\n{}\n",
            line("lobby", "k1", &["games:create", "read"]),
            line("ops", "k2", &["games:admin"])
        );
        let ring = Keyring::parse(&text).unwrap();
        assert_eq!(ring.len(), 2);
        let lobby = ring.find("k1").unwrap();
        assert_eq!(lobby.name, "lobby");
        assert_eq!(
            lobby.scopes,
            BTreeSet::from([Scope::GamesCreate, Scope::Read])
        );
        assert_eq!(ring.find("k2").unwrap().name, "ops");
        assert!(ring.find("k3").is_none());
        assert!(ring.find("").is_none());
    }

    #[test]
    fn a_new_key_is_let_in_by_its_line() {
        let (key, line) = new_key("lobby", &[Scope::GamesCreate, Scope::Read]);
        assert!(key.starts_with("prk_") && key.len() == 68, "{key}");
        assert!(!line.contains(&key));
        let ring = Keyring::parse(&line).unwrap();
        let found = ring.find(&key).unwrap();
        assert_eq!(found.name, "lobby");
        assert!(found.has(Scope::Read) && !found.has(Scope::GamesAdmin));
        assert_ne!(new_key("lobby", &[]).0, key, "keys are random");
    }

    #[test]
    fn bad_lines_are_refused_with_their_number() {
        for (text, expected) in [
            ("{\"name\": \"a\"}".to_string(), "line 1"),
            (
                format!("\n{}", line("a", "k", &["games:play"])),
                "`games:play` is not a scope",
            ),
            (
                format!("{}\n{}", line("a", "k", &[]), line("a", "j", &[])),
                "used twice",
            ),
            (
                format!("{}\n{}", line("a", "k", &[]), line("b", "k", &[])),
                "listed twice",
            ),
            (
                "{\"name\": \"a\", \"sha256\": \"abc\", \"scopes\": []}".to_string(),
                "64 hexadecimal digits",
            ),
        ] {
            let err = Keyring::parse(&text).unwrap_err().to_string();
            assert!(err.contains(expected), "{err} should say {expected}");
        }
    }
}
