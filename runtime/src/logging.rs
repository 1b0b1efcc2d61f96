//! What a rank tells the outside: its log, and its departure reports to
//! mclaunch.
//!
//! * [`init`] installs the `tracing` subscriber every mcast binary uses
//!   (`RUST_LOG`, warnings by default, on stderr).
//! * [`RateLimit`] keeps a repeated warning (a port scanner knocking on a
//!   rank's listener) to one line per interval, with a count of what it
//!   held back.
//! * Departure reports to mclaunch are `crate::report`'s (the inbox makes
//!   them, whatever subscriber the program installed).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tracing_subscriber::filter::EnvFilter;
use tracing_subscriber::layer::{Layer, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;

pub use crate::report::ENV_REPORT_FD;

/// Install the subscriber for a binary: `RUST_LOG` (default `warn`) on
/// stderr. Does nothing
/// if the program already installed one. Call it first thing in `main`.
pub fn init() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_filter(filter);
    let _ = tracing_subscriber::registry().with(fmt).try_init();
}

/// At most one line per `interval` for one kind of repeated event; the
/// line that is let through says how many were held back before it.
#[derive(Debug, Clone)]
pub struct RateLimit {
    interval: Duration,
    last: Option<Instant>,
    held: u64,
}

impl RateLimit {
    /// A limiter letting one line through per `interval`.
    pub fn new(interval: Duration) -> RateLimit {
        RateLimit {
            interval,
            last: None,
            held: 0,
        }
    }

    /// An event happened at `now`: `Some(n)` to log it, mentioning the `n`
    /// events held back since the last line; `None` to hold it back.
    pub fn admit(&mut self, now: Instant) -> Option<u64> {
        match self.last {
            Some(last) if now.saturating_duration_since(last) < self.interval => {
                self.held += 1;
                None
            }
            _ => {
                self.last = Some(now);
                Some(std::mem::take(&mut self.held))
            }
        }
    }
}

/// Limiters by kind, for events logged from many places and tasks.
#[derive(Debug)]
pub struct RateLimits {
    interval: Duration,
    kinds: Mutex<HashMap<String, RateLimit>>,
}

/// More kinds than this share one limiter (a stranger cannot grow the map).
const MAX_KINDS: usize = 64;

impl RateLimits {
    /// Limiters letting one line per kind through per `interval`.
    pub fn new(interval: Duration) -> RateLimits {
        RateLimits {
            interval,
            kinds: Mutex::new(HashMap::new()),
        }
    }

    /// [`RateLimit::admit`] for `kind`.
    pub fn admit(&self, kind: &str, now: Instant) -> Option<u64> {
        let mut kinds = self.kinds.lock().unwrap_or_else(|e| e.into_inner());
        let kind = if kinds.contains_key(kind) || kinds.len() < MAX_KINDS {
            kind
        } else {
            "other"
        };
        kinds
            .entry(kind.to_string())
            .or_insert_with(|| RateLimit::new(self.interval))
            .admit(now)
    }
}

/// The kind of a refusal reason: its text with every number as `#`, cut
/// at 48 characters (`"handshake of 2147483648 bytes"` and `"handshake of
/// 9 bytes"` are one kind, `"wrong job token"` another).
pub fn reason_kind(why: &str) -> String {
    let mut kind = String::new();
    for c in why.chars() {
        if kind.chars().count() >= 48 {
            break;
        }
        if c.is_ascii_digit() {
            if !kind.ends_with('#') {
                kind.push('#');
            }
        } else {
            kind.push(c);
        }
    }
    kind
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_interval_then_the_count_held_back() {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let mut r = RateLimit::new(Duration::from_secs(1));
        assert_eq!(r.admit(ms(0)), Some(0));
        for i in 1..=5 {
            assert_eq!(r.admit(ms(i * 100)), None);
        }
        assert_eq!(r.admit(ms(999)), None);
        assert_eq!(r.admit(ms(1000)), Some(6));
        assert_eq!(r.admit(ms(1500)), None);
        assert_eq!(r.admit(ms(5000)), Some(1));
        assert_eq!(r.admit(ms(7000)), Some(0));
    }

    #[test]
    fn kinds_are_limited_separately_and_bounded() {
        let t0 = Instant::now();
        let l = RateLimits::new(Duration::from_secs(1));
        assert_eq!(l.admit("wrong job token", t0), Some(0));
        assert_eq!(l.admit("bad handshake", t0), Some(0));
        assert_eq!(l.admit("wrong job token", t0), None);
        for i in 0..200 {
            let _ = l.admit(&format!("kind {i}"), t0);
        }
        assert!(l.kinds.lock().unwrap().len() <= MAX_KINDS + 1);
        assert_eq!(
            l.admit("wrong job token", t0 + Duration::from_secs(1)),
            Some(1)
        );
    }

    #[test]
    fn refusal_reasons_fold_into_kinds() {
        assert_eq!(
            reason_kind("protocol error: handshake of 2147483648 bytes"),
            reason_kind("protocol error: handshake of 9 bytes")
        );
        assert_eq!(reason_kind("unexpected rank 12"), "unexpected rank #");
        assert_eq!(reason_kind("wrong job token"), "wrong job token");
        assert_eq!(reason_kind(&"x".repeat(500)).len(), 48);
    }
}
