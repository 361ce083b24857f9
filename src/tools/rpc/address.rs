//! Where a tool connects: the server address forms (host, port, IPv6,
//! `http://`/`https://` URLs) and their readable refusals.

use super::*;

/// A referee's address as a flag gives it: `host:port` (as grpcurl takes
/// it), `[v6]:port`, or `http://host[:port]`; TLS (`https://`) once
/// [`ServerAddress::with_tls`] gave the CA.
#[derive(Debug, Clone)]
pub struct ServerAddress {
    /// `http://host:port` (or `https://` with TLS), the form tonic connects to.
    url: String,
    /// The endpoint of `url`, checked once when the address was read.
    endpoint: Endpoint,
    /// The key sent with every call.
    credentials: Credentials,
}

/// Why a flag's text is not a server address.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{flag}: `{text}` {problem}")]
pub struct AddressError {
    /// The flag (or variable) that gave the text.
    pub flag: String,
    /// The text as given.
    pub text: String,
    /// What is wrong with it, and what to write instead.
    pub problem: String,
}

/// What to write instead, ending every [`AddressError`].
const WRITE_INSTEAD: &str =
    "write HOST:PORT (e.g. 127.0.0.1:50051, the server's default) or http://HOST:PORT";

impl ServerAddress {
    /// Reads `text`, given by `flag` (named in the error).
    pub fn parse(flag: &str, text: &str) -> Result<ServerAddress, AddressError> {
        let fail = |problem: String| AddressError {
            flag: flag.to_string(),
            text: text.to_string(),
            problem,
        };
        let trimmed = text.trim();
        let authority = match trimmed.split_once("://") {
            None => {
                let (host, port) = host_and_port(trimmed).map_err(fail)?;
                let port = port.ok_or_else(|| fail(format!("has no port: {WRITE_INSTEAD}")))?;
                format!("{host}:{port}")
            }
            Some((scheme, rest)) => {
                match scheme.to_ascii_lowercase().as_str() {
                    "http" => {}
                    "https" => {
                        return Err(fail(format!(
                            "asks for TLS: give the CA of the referee's certificate with --tls-ca \
                             (this client carries no system roots), or {WRITE_INSTEAD}"
                        )));
                    }
                    _ => return Err(fail(format!("has an unknown scheme: {WRITE_INSTEAD}"))),
                }
                let rest = rest.strip_suffix('/').unwrap_or(rest);
                if rest.contains(['/', '?', '#']) {
                    return Err(fail(format!("has a path: {WRITE_INSTEAD}")));
                }
                let (host, port) = host_and_port(rest).map_err(fail)?;
                match port {
                    Some(port) => format!("{host}:{port}"),
                    None => host.to_string(),
                }
            }
        };
        let url = format!("http://{authority}");
        let endpoint = Endpoint::from_shared(url.clone())
            .map_err(|e| fail(format!("is not an address ({e}): {WRITE_INSTEAD}")))?;
        Ok(ServerAddress {
            url,
            endpoint,
            credentials: Credentials::default(),
        })
    }

    /// [`ServerAddress::parse`], with TLS when `tls` is given (then
    /// `https://` is accepted too) and `credentials` sent with every call.
    pub fn parse_secure(
        flag: &str,
        text: &str,
        tls: Option<&TlsClient>,
        credentials: Credentials,
    ) -> Result<ServerAddress, String> {
        let trimmed = text.trim();
        let plain = match (tls, trimmed.get(..8)) {
            (Some(_), Some(scheme)) if scheme.eq_ignore_ascii_case("https://") => {
                format!("http://{}", &trimmed[8..])
            }
            _ => trimmed.to_string(),
        };
        let mut address = ServerAddress::parse(flag, &plain).map_err(|e| {
            // Name what was written, not the rewritten text.
            AddressError {
                text: text.to_string(),
                ..e
            }
            .to_string()
        })?;
        if let Some(tls) = tls {
            address = address.with_tls(tls)?;
        }
        address.credentials = credentials;
        Ok(address)
    }

    /// The same address over TLS, trusting `tls.ca`.
    pub fn with_tls(self, tls: &TlsClient) -> Result<ServerAddress, String> {
        let url = self.url.replacen("http://", "https://", 1);
        let mut config = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(&tls.ca));
        if let Some((cert, key)) = &tls.identity {
            config = config.identity(Identity::from_pem(cert, key));
        }
        let endpoint = Endpoint::from_shared(url.clone())
            .and_then(|e| e.tls_config(config))
            .map_err(|e| format!("TLS for {url}: {}", error_chain(&e)))?;
        Ok(ServerAddress {
            url,
            endpoint,
            credentials: self.credentials,
        })
    }

    /// The address of a server this process started on `addr` (a
    /// loopback listener of its own).
    pub fn of_listener(addr: SocketAddr) -> Result<ServerAddress, AddressError> {
        ServerAddress::parse("listener", &addr.to_string())
    }

    /// `http://host:port` (`https://` with TLS).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The endpoint to connect to: a bounded connect time, no Nagle delay.
    pub fn endpoint(&self) -> Endpoint {
        self.endpoint
            .clone()
            .connect_timeout(CONNECT_TIMEOUT)
            .tcp_nodelay(true)
    }

    /// Opens one HTTP/2 connection.
    pub async fn channel(&self) -> Result<Channel, String> {
        self.endpoint().connect().await.map_err(|e| {
            format!(
                "cannot reach the referee at {}: {}",
                self.url,
                error_chain(&e)
            )
        })
    }

    /// Opens a connection and a referee client on it.
    pub async fn connect(&self) -> Result<Client, String> {
        Ok(Client::new(self.channel().await?))
    }

    /// Opens a connection and a client on it that sends this address's key.
    pub async fn connect_keyed(&self) -> Result<KeyedClient, String> {
        Ok(RefereeServiceClient::new(self.keyed_channel().await?))
    }

    /// Opens a connection that sends this address's key with every call,
    /// for a client of any service (clones share the connection).
    pub async fn keyed_channel(&self) -> Result<KeyedChannel, String> {
        Ok(KeyedChannel {
            channel: self.channel().await?,
            credentials: self.credentials.clone(),
        })
    }
}

impl fmt::Display for ServerAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.url)
    }
}

/// Splits `host[:port]`; the host a name, an IPv4 address or a bracketed
/// IPv6 address. On failure, the problem as [`AddressError::problem`].
fn host_and_port(text: &str) -> Result<(&str, Option<u16>), String> {
    let not_host_port = || format!("is not a server address: {WRITE_INSTEAD}");
    let (host, port) = if let Some(inner) = text.strip_prefix('[') {
        let (v6, after) = inner.split_once(']').ok_or_else(not_host_port)?;
        v6.parse::<Ipv6Addr>().map_err(|_| not_host_port())?;
        let port = match after {
            "" => None,
            _ => Some(after.strip_prefix(':').ok_or_else(not_host_port)?),
        };
        (&text[..v6.len() + 2], port)
    } else {
        match text.rsplit_once(':') {
            Some((host, _)) if host.contains(':') => {
                return Err(
                    "has an IPv6 host without brackets: write [IPV6]:PORT, e.g. [::1]:50051"
                        .to_string(),
                );
            }
            Some((host, port)) => (host, Some(port)),
            None => (text, None),
        }
    };
    let named = !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'));
    if !(named || host.starts_with('[')) {
        return Err(not_host_port());
    }
    let port = match port {
        None => None,
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 => Some(n),
            _ => return Err(format!("has no valid port (1 to 65535): {WRITE_INSTEAD}")),
        },
    };
    Ok((host, port))
}

/// An error with its causes, `outer: inner: …` (tonic's transport error
/// alone says only "transport error").
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(e) = cause {
        // Some layers repeat their cause's words: say them once.
        let words = e.to_string();
        if !text.ends_with(&words) {
            let _ = write!(text, ": {words}");
        }
        cause = e.source();
    }
    text
}
