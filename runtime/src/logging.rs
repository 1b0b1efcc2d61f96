//! What a rank tells the outside: its log, and its departure reports to
//! mclaunch.
//!
//! * [`init`] installs the `tracing` subscriber every mcast binary uses
//!   (`RUST_LOG`, warnings by default, on stderr), with a layer that turns
//!   the runtime's "peer lost" events into departure reports.
//! * [`RateLimit`] keeps a repeated warning (a port scanner knocking on a
//!   rank's listener) to one line per interval, with a count of what it
//!   held back.
//! * Departure reports: mclaunch gives every rank the write end of one pipe
//!   and names its descriptor in [`ENV_REPORT_FD`]. When this rank declares
//!   a peer lost it writes one line, `lost ME PEER REASON`, before anything
//!   in this rank can act on the loss (so before it can exit because of
//!   it). mclaunch reads the pipe before it looks at any rank's exit, so a
//!   rank that fails because it lost a peer is not blamed for the failure,
//!   and the peer is (README "Failure semantics").

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::filter::{filter_fn, EnvFilter};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;

/// The environment variable naming the departure-report pipe's descriptor.
pub const ENV_REPORT_FD: &str = "MCAST_REPORT_FD";

/// Longest reason written in a report (a report line stays well below
/// `PIPE_BUF`, so concurrent writers never interleave).
const MAX_REASON: usize = 300;

/// Install the subscriber for a binary: `RUST_LOG` (default `warn`) on
/// stderr, and departure reports (whatever `RUST_LOG` says). Does nothing
/// if the program already installed one. Call it first thing in `main`.
pub fn init() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_filter(filter);
    let _ = tracing_subscriber::registry()
        .with(fmt)
        .with(Reporter.with_filter(filter_fn(|m| {
            m.target().starts_with("mcast") && *m.level() == tracing::Level::ERROR
        })))
        .try_init();
}

/// Tell mclaunch (if it gave us a report pipe) that this rank declared
/// `peer` lost. Each peer is reported once.
pub(crate) fn report_lost(peer: usize, reason: &str) {
    let Some(pipe) = report_pipe() else { return };
    let mut done = pipe.reported.lock().unwrap_or_else(|e| e.into_inner());
    if done.contains(&peer) {
        return;
    }
    done.push(peer);
    let line = report_line(pipe.me, peer, reason);
    // SAFETY: writes from a valid buffer to a descriptor we checked is a
    // pipe; a short or failed write only loses the report.
    unsafe { libc::write(pipe.fd, line.as_ptr().cast(), line.len()) };
}

/// `lost ME PEER REASON\n`, the reason on one line and bounded.
fn report_line(me: usize, peer: usize, reason: &str) -> String {
    let mut why: String = reason
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if why.len() > MAX_REASON {
        let mut end = MAX_REASON;
        while !why.is_char_boundary(end) {
            end -= 1;
        }
        why.truncate(end);
    }
    format!("lost {me} {peer} {why}\n")
}

struct ReportPipe {
    fd: libc::c_int,
    me: usize,
    reported: Mutex<Vec<usize>>,
}

/// The report pipe, if mclaunch named one and it is a pipe.
fn report_pipe() -> Option<&'static ReportPipe> {
    static PIPE: OnceLock<Option<ReportPipe>> = OnceLock::new();
    PIPE.get_or_init(|| {
        let fd: libc::c_int = std::env::var(ENV_REPORT_FD).ok()?.trim().parse().ok()?;
        let me: usize = std::env::var("MCAST_RANK").ok()?.trim().parse().ok()?;
        // SAFETY: fstat writes into a zeroed struct we own.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        if unsafe { libc::fstat(fd, &mut st) } != 0 || st.st_mode & libc::S_IFMT != libc::S_IFIFO {
            return None;
        }
        Some(ReportPipe {
            fd,
            me,
            reported: Mutex::new(Vec::new()),
        })
    })
    .as_ref()
}

/// Sees the runtime's `peer lost` error events (every place that declares a
/// peer lost logs one, at the moment it does) and reports them.
struct Reporter;

impl<S: Subscriber> Layer<S> for Reporter {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut v = LostVisit::default();
        event.record(&mut v);
        if v.message.as_deref() == Some("peer lost") {
            if let Some(rank) = v.rank {
                report_lost(rank as usize, v.reason.as_deref().unwrap_or(""));
            }
        }
    }
}

#[derive(Default)]
struct LostVisit {
    message: Option<String>,
    rank: Option<u64>,
    reason: Option<String>,
}

impl Visit for LostVisit {
    fn record_u64(&mut self, field: &Field, value: u64) {
        if field.name() == "rank" {
            self.rank = Some(value);
        }
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        if field.name() == "rank" {
            self.rank = u64::try_from(value).ok();
        }
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "reason" {
            self.reason = Some(value.to_string());
        }
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        match field.name() {
            "message" => self.message = Some(format!("{value:?}")),
            "reason" => self.reason = Some(format!("{value:?}")),
            "rank" => self.rank = format!("{value:?}").parse().ok(),
            _ => {}
        }
    }
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

    #[test]
    fn report_lines_are_one_bounded_line() {
        assert_eq!(report_line(2, 5, "gone\nreally"), "lost 2 5 gone really\n");
        let long = "é".repeat(400);
        let l = report_line(0, 1, &long);
        assert!(l.len() <= MAX_REASON + 20 && l.ends_with('\n'));
    }

    #[test]
    fn the_inbox_loss_event_is_seen_as_a_report() {
        // Pins the coupling with the inbox: its `peer lost` event carries
        // the rank and the reason.
        type Events = Vec<(Option<String>, Option<u64>)>;
        struct Seen(std::sync::Arc<Mutex<Events>>);
        impl<S: Subscriber> Layer<S> for Seen {
            fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
                let mut v = LostVisit::default();
                event.record(&mut v);
                self.0.lock().unwrap().push((v.message, v.rank));
            }
        }
        let seen = std::sync::Arc::new(Mutex::new(Vec::new()));
        let sub = tracing_subscriber::registry().with(Seen(seen.clone()));
        tracing::subscriber::with_default(sub, || {
            crate::inbox::Inbox::new(0, 1 << 20).lost(3, "gone".into());
        });
        let seen = seen.lock().unwrap();
        assert!(
            seen.contains(&(Some("peer lost".into()), Some(3))),
            "{seen:?}"
        );
    }
}
