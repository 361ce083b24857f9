//! The HTTP client deliveries go through: one pool of kept-alive HTTP/1.1
//! connections per endpoint host (docs/WEBHOOKS.md, "Connections"). A
//! connection is opened by [`Connector`], which checks the URL and the
//! resolved address at every (re)connect exactly as a first connection
//! is checked, and is kept for [`IDLE`] after its last answer; redirects
//! are never followed.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_util::either::Either;

use super::WebhookOptions;
use super::deliver::{Refused, Target, public, signature, target};
use crate::service::storage::outbox::{DeliveryRow, EndpointRow};
use crate::service::storage::unix_ms;

/// How long a connection is kept open with no delivery on it.
pub const IDLE: Duration = Duration::from_secs(30);
/// Most idle connections kept per host (the worker makes at most 32
/// attempts at once).
const MAX_IDLE_PER_HOST: usize = 32;
/// The most of an answer's body read (so that its connection can be
/// used again); a longer body closes the connection.
const MAX_ANSWER: usize = 64 * 1024;

/// Sends deliveries over kept-alive connections (cheap to clone: the
/// clones share the pool).
#[derive(Clone)]
pub struct Sender {
    client: Client<Connector, Full<Bytes>>,
    options: Arc<WebhookOptions>,
}

impl std::fmt::Debug for Sender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sender").finish_non_exhaustive()
    }
}

impl Sender {
    /// A sender with an empty pool; must be made within a Tokio runtime.
    pub fn new(options: Arc<WebhookOptions>) -> Sender {
        let connector = Connector {
            options: options.clone(),
            tls: Arc::default(),
        };
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(IDLE)
            .pool_max_idle_per_host(MAX_IDLE_PER_HOST)
            .pool_timer(TokioTimer::new())
            .build(connector);
        Sender { client, options }
    }

    /// The options it was made with.
    pub fn options(&self) -> &WebhookOptions {
        &self.options
    }

    /// One attempt: Ok on a 2xx answer, else why not. Redirects are
    /// failures. The caller bounds the whole attempt.
    pub async fn post(&self, endpoint: &EndpointRow, delivery: &DeliveryRow) -> Result<(), String> {
        let target = target(&endpoint.url, &self.options).map_err(|r| match r {
            Refused::Malformed(m) | Refused::Host(m) => m,
        })?;
        let timestamp = unix_ms(std::time::SystemTime::now()) / 1000;
        let scheme = if target.tls { "https" } else { "http" };
        let request =
            http::Request::post(format!("{scheme}://{}{}", authority(&target), target.path))
                .header(http::header::HOST, authority(&target))
                .header(http::header::CONTENT_TYPE, "application/json")
                .header(http::header::USER_AGENT, "punct-referee-webhooks")
                .header("webhook-id", &delivery.event_id)
                .header("webhook-timestamp", timestamp.to_string())
                .header(
                    "webhook-signature",
                    signature(
                        &endpoint.secret,
                        &delivery.event_id,
                        timestamp,
                        &delivery.body,
                    ),
                )
                .body(Full::new(Bytes::from(delivery.body.clone())))
                .map_err(|e| e.to_string())?;
        let answer = self
            .client
            .request(request)
            .await
            .map_err(|e| describe(&e))?;
        let status = answer.status();
        // Read the (short) body so that the connection goes back to the
        // pool; a long one is dropped with its connection.
        let mut body = answer.into_body();
        let mut read = 0usize;
        while read <= MAX_ANSWER {
            match body.frame().await {
                Some(Ok(frame)) => read += frame.data_ref().map_or(0, Bytes::len),
                Some(Err(_)) | None => break,
            }
        }
        drop(body);
        if status.is_success() {
            Ok(())
        } else if status.is_redirection() {
            Err(format!("answered {status}: redirects are not followed"))
        } else {
            Err(format!("answered {status}"))
        }
    }
}

/// The client's error with its cause (the connector's reason: a refused
/// address, a timeout), as the delivery's `last_error`.
fn describe(e: &hyper_util::client::legacy::Error) -> String {
    let mut text = if e.is_connect() {
        String::new()
    } else {
        "HTTP: ".to_owned()
    };
    let mut cause: Option<&dyn std::error::Error> = std::error::Error::source(e);
    if cause.is_none() {
        text.push_str(&e.to_string());
    }
    let mut first = true;
    while let Some(c) = cause {
        if !first {
            text.push_str(": ");
        }
        text.push_str(&c.to_string());
        first = false;
        cause = c.source();
    }
    text
}

/// The Host header and the URI's authority of `target`.
fn authority(target: &Target) -> String {
    let host = if target.host.contains(':') {
        format!("[{}]", target.host)
    } else {
        target.host.clone()
    };
    match (target.tls, target.port) {
        (true, 443) | (false, 80) => host,
        (_, port) => format!("{host}:{port}"),
    }
}

/// Opens the pool's connections: checks the URL (scheme, allowed hosts),
/// resolves it, takes an address the flags allow, connects within the
/// connect timeout, and for https completes TLS against the CA file.
#[derive(Clone)]
struct Connector {
    options: Arc<WebhookOptions>,
    /// The TLS config, read from the CA file at the first https connection
    /// (read again while it cannot be).
    tls: Arc<Mutex<Option<Arc<tokio_rustls::rustls::ClientConfig>>>>,
}

/// A connection to an endpoint, plain or TLS.
pub struct Io(TokioIo<Either<TcpStream, TlsStream<TcpStream>>>);

impl Connection for Io {
    fn connected(&self) -> Connected {
        Connected::new()
    }
}

impl hyper::rt::Read for Io {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_read(cx, buf)
    }
}

impl hyper::rt::Write for Io {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().0).poll_write(cx, buf)
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_flush(cx)
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_shutdown(cx)
    }
    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().0).poll_write_vectored(cx, bufs)
    }
}

/// The connector's error: its reason, as text.
#[derive(Debug)]
pub struct ConnectError(String);

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConnectError {}

impl tower::Service<http::Uri> for Connector {
    type Response = Io;
    type Error = ConnectError;
    type Future = Pin<Box<dyn Future<Output = Result<Io, ConnectError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: http::Uri) -> Self::Future {
        let this = self.clone();
        Box::pin(async move { this.connect(&uri).await.map_err(ConnectError) })
    }
}

impl Connector {
    async fn connect(&self, uri: &http::Uri) -> Result<Io, String> {
        let options = &*self.options;
        let target = target(&uri.to_string(), options).map_err(|r| match r {
            Refused::Malformed(m) | Refused::Host(m) => m,
        })?;
        let addr = resolve(&target, options).await?;
        let connect = async {
            let tcp = TcpStream::connect(addr)
                .await
                .map_err(|e| format!("connect {addr}: {e}"))?;
            let _ = tcp.set_nodelay(true);
            Ok::<_, String>(tcp)
        };
        let tcp = tokio::time::timeout(options.connect_timeout, connect)
            .await
            .map_err(|_| format!("connect {addr}: timed out"))??;
        if !target.tls {
            return Ok(Io(TokioIo::new(Either::Left(tcp))));
        }
        let config = self.tls_config()?;
        let name = tokio_rustls::rustls::pki_types::ServerName::try_from(target.host.clone())
            .map_err(|e| e.to_string())?;
        let tls = tokio::time::timeout(
            options.connect_timeout,
            tokio_rustls::TlsConnector::from(config).connect(name, tcp),
        )
        .await
        .map_err(|_| "TLS handshake timed out".to_owned())?
        .map_err(|e| format!("TLS: {e}"))?;
        Ok(Io(TokioIo::new(Either::Right(tls))))
    }

    fn tls_config(&self) -> Result<Arc<tokio_rustls::rustls::ClientConfig>, String> {
        let mut held = self.tls.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(config) = &*held {
            return Ok(config.clone());
        }
        let config = tls_config(&self.options)?;
        *held = Some(config.clone());
        Ok(config)
    }
}

/// The address `target` resolves to that may be delivered to (the
/// resolved address is checked, not only the name).
async fn resolve(target: &Target, options: &WebhookOptions) -> Result<SocketAddr, String> {
    let found: Vec<SocketAddr> = tokio::net::lookup_host((target.host.as_str(), target.port))
        .await
        .map_err(|e| format!("cannot resolve `{}`: {e}", target.host))?
        .collect();
    found
        .iter()
        .copied()
        .find(|a| options.allow_private || public(a.ip()))
        .ok_or_else(|| {
            format!(
                "`{}` resolves only to loopback, private or link-local addresses",
                target.host
            )
        })
}

/// The TLS client config: the CA file's roots.
fn tls_config(options: &WebhookOptions) -> Result<Arc<tokio_rustls::rustls::ClientConfig>, String> {
    use tokio_rustls::rustls::pki_types::CertificateDer;
    use tokio_rustls::rustls::pki_types::pem::PemObject as _;
    let mut roots = tokio_rustls::rustls::RootCertStore::empty();
    let certs = CertificateDer::pem_file_iter(&options.ca_file)
        .map_err(|e| format!("CA file {}: {e}", options.ca_file.display()))?;
    for cert in certs.flatten() {
        let _ = roots.add(cert);
    }
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let config = tokio_rustls::rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint(url: &str) -> EndpointRow {
        EndpointRow {
            id: "whe_test".into(),
            url: url.into(),
            kinds: vec!["game.created".into()],
            secret: b"secret".to_vec(),
            description: String::new(),
            created_at_ms: 0,
        }
    }

    fn delivery() -> DeliveryRow {
        DeliveryRow {
            seq: 1,
            event_id: "evt_1".into(),
            endpoint_id: "whe_test".into(),
            kind: "game.created".into(),
            subject: "g".into(),
            body: "{}".into(),
            status: "pending".into(),
            attempts: 0,
            last_error: String::new(),
            created_at_ms: 0,
        }
    }

    #[tokio::test]
    async fn a_connection_is_checked_when_it_is_opened() {
        let sender = Sender::new(Arc::new(WebhookOptions::default()));
        // A name is checked by the address it resolves to.
        let err = sender
            .post(&endpoint("http://localhost:9/in"), &delivery())
            .await
            .unwrap_err();
        assert!(err.contains("resolves only to loopback"), "{err}");
        let listed = Sender::new(Arc::new(WebhookOptions {
            allowed_hosts: vec!["hooks.example.com".into()],
            allow_private: true,
            ..WebhookOptions::default()
        }));
        let err = listed
            .post(&endpoint("http://127.0.0.1:9/in"), &delivery())
            .await
            .unwrap_err();
        assert!(err.contains("not an allowed host"), "{err}");
    }

    #[tokio::test]
    async fn a_redirect_is_a_failure_and_is_not_followed() {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/in", listener.local_addr().unwrap());
        let requests = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let seen = requests.clone();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let seen = seen.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 8192];
                    while let Ok(n) = socket.read(&mut buf).await {
                        if n == 0 {
                            return;
                        }
                        let posts = buf[..n].windows(5).filter(|w| w == b"POST ").count();
                        if posts == 0 {
                            continue;
                        }
                        seen.fetch_add(posts, std::sync::atomic::Ordering::SeqCst);
                        let answer = "HTTP/1.1 302 Found\r\nlocation: http://127.0.0.1:9/\r\n\
                                      content-length: 0\r\n\r\n";
                        if socket.write_all(answer.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        let sender = Sender::new(Arc::new(WebhookOptions {
            allow_private: true,
            ..WebhookOptions::default()
        }));
        let err = sender.post(&endpoint(&url), &delivery()).await.unwrap_err();
        assert!(err.contains("redirects are not followed"), "{err}");
        assert_eq!(requests.load(std::sync::atomic::Ordering::SeqCst), 1);
    }
}
