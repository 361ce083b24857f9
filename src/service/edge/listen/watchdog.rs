//! How long a connection may take to open and may stay idle: each
//! connection's [`Activity`] (its calls, counted by
//! [`super::CallsLayer`]) and the watchdog that closes it, from inside its
//! reads, once its opening is late or it has been idle too long.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Context;
use std::time::Duration;

use tokio::time::{Instant, Sleep};

/// The default of [`Timeouts::handshake`]: the TLS handshake and the
/// protocol's opening (HTTP/2 preface and SETTINGS, or the first request's
/// headers), counted from the accept.
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// The default idle timeout of the gRPC port: a connection with no call in
/// progress for that long is closed (a client's channel reconnects on its
/// next call).
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(300);
/// The default idle timeout of the HTTP port (keep-alive between requests,
/// and the time to send a later request's headers).
pub const DEFAULT_HTTP_IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a connection may take to open and may stay without a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// From the accept to the end of the opening: the TLS handshake, then
    /// the HTTP/2 preface and SETTINGS (gRPC port) or the first request's
    /// headers (HTTP port).
    pub handshake: Duration,
    /// How long a connection with no call in progress stays open.
    pub idle: Duration,
}

/// What a connection has done, shared by its watchdog and [`super::CallsLayer`].
#[derive(Debug)]
pub struct Activity {
    opened: AtomicBool,
    calls: AtomicUsize,
    idle_since: Mutex<Instant>,
}

impl Activity {
    fn new(since: Instant) -> Activity {
        Activity {
            opened: AtomicBool::new(false),
            calls: AtomicUsize::new(0),
            idle_since: Mutex::new(since),
        }
    }

    /// One call begins; it ends when the guard is dropped.
    pub fn begin(self: &Arc<Activity>) -> CallGuard {
        self.opened.store(true, Ordering::Release);
        self.calls.fetch_add(1, Ordering::AcqRel);
        CallGuard(self.clone())
    }
}

/// A call in progress on a connection (see [`Activity::begin`]).
#[derive(Debug)]
pub struct CallGuard(Arc<Activity>);

impl Drop for CallGuard {
    fn drop(&mut self) {
        if self.0.calls.fetch_sub(1, Ordering::AcqRel) == 1 {
            *self.0.idle_since.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
        }
    }
}

/// Counts the client's HTTP/2 connection preface (24 bytes) and the
/// SETTINGS frame that must follow it, as they are read.
#[derive(Debug)]
struct PrefaceCount {
    seen: usize,
    head: [u8; PREFACE_HEAD],
}

/// The preface and a frame header.
const PREFACE_HEAD: usize = 24 + 9;

impl PrefaceCount {
    /// Takes `bytes`, the next read; true once the whole opening is in.
    fn take(&mut self, bytes: &[u8]) -> bool {
        let mut bytes = bytes;
        if self.seen < PREFACE_HEAD {
            let n = bytes.len().min(PREFACE_HEAD - self.seen);
            self.head[self.seen..self.seen + n].copy_from_slice(&bytes[..n]);
            self.seen += n;
            bytes = &bytes[n..];
            if self.seen < PREFACE_HEAD {
                return false;
            }
        }
        let length = u32::from_be_bytes([0, self.head[24], self.head[25], self.head[26]]) as usize;
        self.seen += bytes.len();
        self.seen >= PREFACE_HEAD + length
    }
}

/// Closes a connection whose opening is late or which has been idle too
/// long, from inside its reads (the server always has a read pending).
pub(super) struct Watchdog {
    pub(super) port: &'static str,
    pub(super) activity: Arc<Activity>,
    timeouts: Timeouts,
    pub(super) opening_deadline: Instant,
    timer: Pin<Box<Sleep>>,
    /// On the gRPC port until the preface is in.
    preface: Option<PrefaceCount>,
}

impl Watchdog {
    pub(super) fn new(
        port: &'static str,
        accepted: Instant,
        timeouts: Timeouts,
        http2: bool,
    ) -> Watchdog {
        let opening_deadline = accepted + timeouts.handshake;
        Watchdog {
            port,
            activity: Arc::new(Activity::new(accepted)),
            timeouts,
            opening_deadline,
            timer: Box::pin(tokio::time::sleep_until(opening_deadline)),
            preface: http2.then_some(PrefaceCount {
                seen: 0,
                head: [0; PREFACE_HEAD],
            }),
        }
    }

    /// Why the connection must close now, if it must; otherwise the timer
    /// is set to the next moment to look again and will wake this task.
    pub(super) fn expired(&mut self, cx: &mut Context<'_>) -> Option<&'static str> {
        loop {
            if self.timer.as_mut().poll(cx).is_pending() {
                return None;
            }
            let now = Instant::now();
            let next = if !self.activity.opened.load(Ordering::Acquire) {
                if now >= self.opening_deadline {
                    return Some("opening");
                }
                self.opening_deadline
            } else if self.activity.calls.load(Ordering::Acquire) > 0 {
                now + self.timeouts.idle
            } else {
                let since = *self
                    .activity
                    .idle_since
                    .lock()
                    .unwrap_or_else(|e| e.into_inner());
                let at = since + self.timeouts.idle;
                if at <= now {
                    return Some("idle");
                }
                at
            };
            self.timer.as_mut().reset(next);
        }
    }

    pub(super) fn read(&mut self, bytes: &[u8]) {
        if let Some(preface) = &mut self.preface
            && !bytes.is_empty()
            && preface.take(bytes)
        {
            self.preface = None;
            self.activity.opened.store(true, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_http2_opening_is_the_preface_and_one_settings_frame() {
        let mut opening = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        opening.extend_from_slice(&[0, 0, 12, 4, 0, 0, 0, 0, 0]);
        opening.extend_from_slice(&[0; 12]);
        for split in [1, 5, 24, 32, 33, 40, opening.len()] {
            let mut count = PrefaceCount {
                seen: 0,
                head: [0; PREFACE_HEAD],
            };
            let mut done = false;
            for chunk in opening[..opening.len() - 1].chunks(split) {
                done = count.take(chunk);
            }
            assert!(!done, "one byte short, in chunks of {split}");
            assert!(count.take(&opening[opening.len() - 1..]), "{split}");
        }
    }
}
