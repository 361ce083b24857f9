//! TLS on both ports (`--tls-cert`, `--tls-key`, optional mutual TLS with
//! `--tls-client-ca`): rustls with the ring provider, no C crypto library.
//!
//! [`TlsConfig`] holds one rustls configuration per port (`h2` for gRPC,
//! `http/1.1` for the HTTP port), each swapped whole when the files are read
//! again. The accept tasks of [`crate::service::edge::listen`] ask for the current
//! one at every handshake, so a new certificate serves new connections
//! while the open ones keep the session they made.
//! [`super::reload::Reloader`] reads the files again on SIGHUP and when
//! they change on disk; a file that does not load leaves the old
//! configuration in force and says why in the log.
//!
//! Docs: docs/SECURITY.md.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::SystemTime;

use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject as _;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// The PEM files TLS is made of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// The certificate chain, leaf first.
    pub cert: PathBuf,
    /// The private key of the leaf (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
    /// Client certificates must chain to one of these (mutual TLS); `None`:
    /// clients show none.
    pub client_ca: Option<PathBuf>,
}

/// Why TLS cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A PEM file cannot be read or holds nothing usable.
    #[error("{what} {path}: {problem}")]
    File {
        /// Which file (`certificate`, `private key`, `client CA`).
        what: &'static str,
        /// Its path.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// rustls refused the certificate, the key or the CA.
    #[error("TLS configuration: {0}")]
    Config(String),
}

fn file_error(what: &'static str, path: &Path, problem: impl ToString) -> TlsError {
    TlsError::File {
        what,
        path: path.to_path_buf(),
        problem: problem.to_string(),
    }
}

fn certificates(what: &'static str, path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| file_error(what, path, e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| file_error(what, path, e))?;
    if certs.is_empty() {
        return Err(file_error(what, path, "holds no CERTIFICATE block"));
    }
    Ok(certs)
}

/// The rustls server configuration of `files`, offering `alpn`.
fn server_config(files: &TlsFiles, alpn: &[u8]) -> Result<rustls::ServerConfig, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let certs = certificates("certificate", &files.cert)?;
    let key = PrivateKeyDer::from_pem_file(&files.key)
        .map_err(|e| file_error("private key", &files.key, e))?;
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Config(e.to_string()))?;
    let builder = match &files.client_ca {
        None => builder.with_no_client_auth(),
        Some(path) => {
            let mut roots = rustls::RootCertStore::empty();
            for ca in certificates("client CA", path)? {
                roots
                    .add(ca)
                    .map_err(|e| file_error("client CA", path, e))?;
            }
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider,
            )
            .build()
            .map_err(|e| TlsError::Config(e.to_string()))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder
        .with_single_cert(certs, key)
        .map_err(|e| TlsError::Config(e.to_string()))?;
    config.alpn_protocols = vec![alpn.to_vec()];
    Ok(config)
}

/// What a file looked like when last read: its modification time and size.
pub(super) type Stamp = Vec<Option<(SystemTime, u64)>>;

pub(super) fn stamp(paths: &[&Path]) -> Stamp {
    paths
        .iter()
        .map(|p| {
            std::fs::metadata(p)
                .ok()
                .and_then(|m| Some((m.modified().ok()?, m.len())))
        })
        .collect()
}

/// The TLS configuration of both ports, reloadable (see the module docs).
#[derive(Debug)]
pub struct TlsConfig {
    files: TlsFiles,
    grpc: RwLock<Arc<rustls::ServerConfig>>,
    http: RwLock<Arc<rustls::ServerConfig>>,
    seen: Mutex<Stamp>,
}

impl TlsConfig {
    /// Reads `files`.
    pub fn load(files: TlsFiles) -> Result<Arc<TlsConfig>, TlsError> {
        let seen = stamp(&TlsConfig::paths_of(&files));
        let grpc = server_config(&files, b"h2")?;
        let http = server_config(&files, b"http/1.1")?;
        Ok(Arc::new(TlsConfig {
            files,
            grpc: RwLock::new(Arc::new(grpc)),
            http: RwLock::new(Arc::new(http)),
            seen: Mutex::new(seen),
        }))
    }

    fn paths_of(files: &TlsFiles) -> Vec<&Path> {
        let mut paths = vec![files.cert.as_path(), files.key.as_path()];
        paths.extend(files.client_ca.as_deref());
        paths
    }

    /// Whether clients must show a certificate.
    pub fn mutual(&self) -> bool {
        self.files.client_ca.is_some()
    }

    /// The configuration new gRPC connections get.
    pub fn grpc(&self) -> Arc<rustls::ServerConfig> {
        self.grpc.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The configuration new HTTP connections get.
    pub fn http(&self) -> Arc<rustls::ServerConfig> {
        self.http.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Reads the files again; on failure the configuration in force stays.
    pub fn reload(&self) -> Result<(), TlsError> {
        let seen = stamp(&TlsConfig::paths_of(&self.files));
        let grpc = server_config(&self.files, b"h2")?;
        let http = server_config(&self.files, b"http/1.1")?;
        *self.grpc.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(grpc);
        *self.http.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(http);
        *self.seen.lock().unwrap_or_else(|e| e.into_inner()) = seen;
        Ok(())
    }

    /// Whether a file changed since it was last read.
    pub(super) fn changed(&self) -> bool {
        let now = stamp(&TlsConfig::paths_of(&self.files));
        *self.seen.lock().unwrap_or_else(|e| e.into_inner()) != now
    }
}
