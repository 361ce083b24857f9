//! The front door: who may come in, and how much. It owns everything a
//! connection and a call meet before a handler runs: the accept tasks of
//! both ports with their socket options, connection bounds and opening and
//! idle timeouts ([`listen`]), TLS ([`tls`]), platform keys and scopes
//! ([`access`]), the limits per client ([`quota`]), the shedding of calls
//! over the server's limit ([`overload`]), the statuses of those refusals
//! ([`refusal`]), and the reloading of the TLS and keys files ([`reload`]).
//! `Edge` opens all of it once for both ports. The rooms inside use it
//! (handlers read the [`access::Caller`] and count games and watch streams
//! in [`quota::ClientQuotas`]), never the other way round: the edge may not
//! touch sessions, storage, tournaments, the cluster or the wire types of
//! `grpc`/`http`, and imports nothing of the service but the bounded quoting
//! of `crate::service::echo`; a game is known to it only as a
//! [`quota::CountedGame`]. Its files form no import circle (docs/SECURITY.md).

pub mod access;
pub mod listen;
pub mod overload;
pub mod quota;
pub mod refusal;
pub mod reload;
pub mod tls;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use self::access::{Keys, KeysError};
use self::listen::{Accepting, ConnectionLimit, Timeouts};
use self::quota::{ClientQuotas, QuotaOptions};
use self::reload::Reloader;
use self::tls::{TlsConfig, TlsError, TlsFiles};

/// What the front door is opened with (the server's options that concern
/// it; see `crate::service::ServerOptions` for each).
#[derive(Debug, Clone)]
pub(crate) struct EdgeOptions {
    pub(crate) tls: Option<TlsFiles>,
    pub(crate) keys_file: Option<PathBuf>,
    pub(crate) quotas: QuotaOptions,
    pub(crate) reload_poll: Duration,
    pub(crate) max_connections: usize,
    pub(crate) handshake_timeout: Duration,
    pub(crate) idle_timeout: Duration,
    pub(crate) http_idle_timeout: Duration,
}

/// Why the front door could not open.
#[derive(Debug, thiserror::Error)]
pub(crate) enum OpenError {
    /// The TLS files cannot be used.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// The keys file cannot be used.
    #[error(transparent)]
    Keys(#[from] KeysError),
}

/// Who may connect and call: TLS, keys and per-client limits, opened once
/// for both ports.
pub(crate) struct Edge {
    tls: Option<Arc<TlsConfig>>,
    keys: Keys,
    quotas: Arc<ClientQuotas>,
    connections: ConnectionLimit,
    reloader: Reloader,
    handshake_timeout: Duration,
}

impl Edge {
    /// Reads the TLS and keys files and sets the connection bounds.
    pub(crate) fn open(options: &EdgeOptions) -> Result<Edge, OpenError> {
        let tls = options.tls.clone().map(TlsConfig::load).transpose()?;
        let keys = match &options.keys_file {
            Some(path) => Keys::from_file(path)?,
            None => Keys::off(),
        };
        if let (Some(path), Some(ring)) = (&options.keys_file, keys.keyring()) {
            tracing::info!(keys = ring.len(), file = %path.display(), "platform keys on");
        }
        if let Some(tls) = &tls {
            tracing::info!(mutual = tls.mutual(), "TLS on both ports");
        }
        Ok(Edge {
            handshake_timeout: options.handshake_timeout,
            reloader: Reloader {
                tls: tls.clone(),
                keys: keys.clone(),
                keys_file: options.keys_file.clone(),
                poll: options.reload_poll,
            },
            tls,
            keys,
            quotas: Arc::new(ClientQuotas::new(options.quotas)),
            connections: connection_limit(options),
        })
    }

    /// The platform keys (off without a keys file).
    pub(crate) fn keys(&self) -> &Keys {
        &self.keys
    }

    /// The per-client counts, shared by the rate layer, the handlers and
    /// the sweeper.
    pub(crate) fn quotas(&self) -> &Arc<ClientQuotas> {
        &self.quotas
    }

    /// What reads the TLS and keys files again.
    pub(crate) fn reloader(&self) -> &Reloader {
        &self.reloader
    }

    /// How a port takes connections: `idle` is its idle timeout, `http2`
    /// whether it is the HTTP/2-only gRPC port.
    fn accepting(
        &self,
        port: &'static str,
        keepalive: Option<Duration>,
        idle: Duration,
        http2: bool,
    ) -> Accepting {
        Accepting {
            port,
            tls: self.tls.clone(),
            limit: self.connections.clone(),
            keepalive,
            timeouts: Timeouts {
                handshake: self.handshake_timeout,
                idle,
            },
            http2,
        }
    }

    /// The HTTP port's connections, ready for axum: accepted on `listener`
    /// (TLS when on, the bound per address, `idle` its idle timeout) until
    /// `stop`.
    pub(crate) fn http_incoming(
        &self,
        listener: TcpListener,
        idle: Duration,
        stop: CancellationToken,
    ) -> listen::HttpIncoming {
        let local = listener
            .local_addr()
            .unwrap_or_else(|_| std::net::SocketAddr::from(([0, 0, 0, 0], 0)));
        let ready = listen::accept(listener, self.accepting("http", None, idle, false), stop);
        listen::HttpIncoming::new(ready, local)
    }

    /// The gRPC port's connections, ready for tonic: accepted on
    /// `listener` (TLS when on, the bound per address, TCP keepalive every
    /// `keepalive`, `idle` its idle timeout) until `stop`.
    pub(crate) fn grpc_incoming(
        &self,
        listener: TcpListener,
        keepalive: Duration,
        idle: Duration,
        stop: CancellationToken,
    ) -> impl tokio_stream::Stream<Item = Result<listen::Conn, std::io::Error>> + use<> {
        let how = self.accepting("grpc", Some(keepalive), idle, true);
        listen::grpc_incoming(listen::accept(listener, how, stop))
    }

    /// Warns when a port that is not on loopback serves plaintext, or when
    /// the gRPC port lets anyone in (no keys): right for a trusted network
    /// only.
    pub(crate) fn warn_if_open(&self, grpc: &TcpListener, http: Option<&TcpListener>) {
        let exposed = |l: &TcpListener| l.local_addr().is_ok_and(|a| !a.ip().is_loopback());
        if self.tls.is_none() {
            let ports = [Some(("grpc", grpc)), http.map(|l| ("http", l))];
            for (port, listener) in ports.into_iter().flatten() {
                if let Ok(address) = listener.local_addr().map(|a| a.to_string())
                    && exposed(listener)
                {
                    tracing::warn!(
                        port,
                        %address,
                        "plaintext on a non-loopback address: tokens and keys travel in the clear; \
                         use --tls-cert/--tls-key or a mesh (docs/SECURITY.md)"
                    );
                }
            }
        }
        if !self.keys.enabled() && exposed(grpc) {
            tracing::warn!(
                "no keys file: anyone who reaches the gRPC port may create and abort games; \
                 use --keys on an untrusted network (docs/SECURITY.md)"
            );
        }
    }
}

/// The connection bounds: the total (`0`: from the file descriptor limit,
/// raised first) and per client address (at most half the total).
fn connection_limit(options: &EdgeOptions) -> ConnectionLimit {
    let descriptors = listen::raise_descriptor_limit();
    let total = if options.max_connections > 0 {
        options.max_connections
    } else {
        listen::automatic_total(descriptors)
    };
    let per_client = listen::effective_per_client(options.quotas.connections, total);
    if per_client != options.quotas.connections {
        tracing::info!(
            configured = options.quotas.connections,
            per_client,
            total,
            "connections per client address lowered to half the total bound"
        );
    }
    tracing::info!(
        descriptors,
        max_connections = total,
        max_connections_per_client = per_client,
        handshake_timeout_secs = options.handshake_timeout.as_secs_f64(),
        idle_timeout_secs = options.idle_timeout.as_secs_f64(),
        http_idle_timeout_secs = options.http_idle_timeout.as_secs_f64(),
        "connection limits"
    );
    ConnectionLimit::with_total(per_client, total)
}
