//! Departure reports: what a rank tells mclaunch when it declares a peer
//! lost. A leaf: imports nothing from this crate.
//!
//! mclaunch gives every rank the write end of one pipe and names its
//! descriptor in [`ENV_REPORT_FD`]. When this rank declares a peer lost it
//! writes one line, `lost ME PEER REASON`, before anything in this rank can
//! act on the loss (so before it can exit because of it). mclaunch reads the
//! pipe before it looks at any rank's exit, so a rank that fails because it
//! lost a peer is not blamed for the failure, and the peer is (README
//! "Failure semantics").
//!
//! The one caller is `Inbox::lost`, where every loss (a broken connection,
//! silence, a protocol violation, the fabric's notice) is recorded.

use std::sync::{Mutex, OnceLock};

/// The environment variable naming the departure-report pipe's descriptor.
pub const ENV_REPORT_FD: &str = "MCAST_REPORT_FD";

/// Longest reason written in a report (a report line stays well below
/// `PIPE_BUF`, so concurrent writers never interleave).
const MAX_REASON: usize = 300;

/// Tell mclaunch (if it gave us a report pipe) that this rank declared
/// `peer` lost. Each peer is reported once.
pub(crate) fn lost(peer: usize, reason: &str) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_lines_are_one_bounded_line() {
        assert_eq!(report_line(2, 5, "gone\nreally"), "lost 2 5 gone really\n");
        let long = "é".repeat(400);
        let l = report_line(0, 1, &long);
        assert!(l.len() <= MAX_REASON + 20 && l.ends_with('\n'));
    }
}
