//! How many connections may be open at once, per client address and in
//! all, and the process's file descriptor limit those bounds come from.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

/// The default bound on connections open at once per client address, over
/// both ports: room for a NAT of a few hundred bots with a channel each,
/// while one address alone cannot use up the server's descriptors (it is
/// lowered to half of the total bound when that is smaller).
pub const DEFAULT_MAX_CONNECTIONS_PER_CLIENT: usize = 256;
/// File descriptors kept out of the automatic total bound on connections:
/// storage files, the database pool, the listeners, logs.
pub const DESCRIPTOR_RESERVE: usize = 64;

/// The bounds on connections open at once, per client address and in
/// all, shared by both ports; `0` is no bound.
#[derive(Debug, Clone, Default)]
pub struct ConnectionLimit {
    max: usize,
    total: usize,
    open: Arc<Mutex<OpenConnections>>,
}

#[derive(Debug, Default)]
struct OpenConnections {
    by_ip: HashMap<IpAddr, usize>,
    total: usize,
}

/// Why a connection was not let in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refusal {
    PerClient,
    Total,
}

impl Refusal {
    pub(super) fn reason(self) -> &'static str {
        match self {
            Refusal::PerClient => "per_client",
            Refusal::Total => "total",
        }
    }
}

impl ConnectionLimit {
    /// At most `max` connections per client address (`0`: any number).
    pub fn new(max: usize) -> ConnectionLimit {
        ConnectionLimit::with_total(max, 0)
    }

    /// At most `max` connections per client address and `total` in all
    /// (each `0`: any number).
    pub fn with_total(max: usize, total: usize) -> ConnectionLimit {
        ConnectionLimit {
            max,
            total,
            open: Arc::default(),
        }
    }

    /// The bound per client address (`0`: none).
    pub fn per_client(&self) -> usize {
        self.max
    }

    /// The bound over all addresses (`0`: none).
    pub fn total(&self) -> usize {
        self.total
    }

    /// A slot for one more connection from `ip`, or why not.
    pub(super) fn take(&self, ip: IpAddr) -> Result<ConnectionSlot, Refusal> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if self.total > 0 && open.total >= self.total {
            return Err(Refusal::Total);
        }
        let count = open.by_ip.entry(ip).or_insert(0);
        if self.max > 0 && *count >= self.max {
            return Err(Refusal::PerClient);
        }
        *count += 1;
        open.total += 1;
        Ok(ConnectionSlot {
            ip,
            open: self.open.clone(),
        })
    }
}

/// One open connection's place in its [`ConnectionLimit`]; given back on drop.
#[derive(Debug)]
pub(super) struct ConnectionSlot {
    ip: IpAddr,
    open: Arc<Mutex<OpenConnections>>,
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        open.total = open.total.saturating_sub(1);
        if let Some(count) = open.by_ip.get_mut(&self.ip) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                open.by_ip.remove(&self.ip);
            }
        }
    }
}

/// The total bound on connections when none is configured: the process's
/// file descriptor limit less [`DESCRIPTOR_RESERVE`] (at least 16), or
/// none when the limit is not known.
pub fn automatic_total(descriptors: Option<u64>) -> usize {
    match descriptors {
        Some(n) => usize::try_from(n)
            .unwrap_or(usize::MAX)
            .saturating_sub(DESCRIPTOR_RESERVE)
            .max(16),
        None => 0,
    }
}

/// The per-address bound in force: `per_client`, lowered to half of
/// `total` when that is smaller, so that one address never holds every
/// connection the server can open.
pub fn effective_per_client(per_client: usize, total: usize) -> usize {
    if total == 0 {
        return per_client;
    }
    let half = (total / 2).max(1);
    if per_client == 0 || per_client > half {
        half
    } else {
        per_client
    }
}

/// Raises the soft limit on open files to the hard limit (as most servers
/// do at start: the soft default is often 1024 or less) and returns the
/// limit now in force; `None` where it cannot be read.
pub fn raise_descriptor_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes into the struct it is given, which lives
        // for the call.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
            return None;
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: limit.rlim_max,
                rlim_max: limit.rlim_max,
            };
            // SAFETY: setrlimit only reads the struct it is given.
            if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
                limit.rlim_cur = limit.rlim_max;
            }
        }
        if limit.rlim_cur == libc::RLIM_INFINITY {
            return None;
        }
        // rlim_t is u64 here but not on every Unix.
        #[allow(clippy::unnecessary_cast)]
        Some(limit.rlim_cur as u64)
    }
    #[cfg(not(unix))]
    {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_per_address_are_bounded_and_given_back() {
        let limit = ConnectionLimit::new(2);
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let first = limit.take(a).unwrap();
        let _second = limit.take(a).unwrap();
        assert_eq!(
            limit.take(a).err(),
            Some(Refusal::PerClient),
            "a third from the same address"
        );
        let _other = limit.take(b).unwrap();
        drop(first);
        assert!(limit.take(a).is_ok(), "a slot came back");
        let unbounded = ConnectionLimit::new(0);
        let held: Vec<_> = (0..100).map(|_| unbounded.take(a).unwrap()).collect();
        drop(held);
        let open = unbounded.open.lock().unwrap();
        assert!(open.by_ip.is_empty());
        assert_eq!(open.total, 0);
    }

    #[test]
    fn connections_in_all_are_bounded() {
        let limit = ConnectionLimit::with_total(0, 3);
        let held: Vec<_> = (1..=3u8)
            .map(|i| limit.take(IpAddr::from([10, 0, 0, i])).unwrap())
            .collect();
        assert_eq!(
            limit.take("10.0.0.9".parse().unwrap()).err(),
            Some(Refusal::Total)
        );
        drop(held);
        assert!(limit.take("10.0.0.9".parse().unwrap()).is_ok());
    }

    #[test]
    fn one_address_never_gets_every_descriptor() {
        assert_eq!(automatic_total(Some(1024)), 1024 - DESCRIPTOR_RESERVE);
        assert_eq!(automatic_total(Some(10)), 16);
        assert_eq!(automatic_total(None), 0);
        // 512 descriptors: 448 connections, at most 224 from one address.
        let total = automatic_total(Some(512));
        assert_eq!(effective_per_client(256, total), 224);
        assert_eq!(effective_per_client(0, total), 224);
        assert_eq!(effective_per_client(256, 1_000_000), 256);
        assert_eq!(effective_per_client(0, 0), 0);
        assert_eq!(effective_per_client(7, 0), 7);
    }
}
