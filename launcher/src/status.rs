//! Human-readable descriptions of exit statuses, signals and rank sets.

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::Duration;

/// The conventional name of a signal (`"SIGKILL"`), or `None` for unusual numbers.
pub fn signal_name(sig: i32) -> Option<&'static str> {
    Some(match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGCHLD => "SIGCHLD",
        libc::SIGCONT => "SIGCONT",
        libc::SIGSTOP => "SIGSTOP",
        libc::SIGTSTP => "SIGTSTP",
        libc::SIGTTIN => "SIGTTIN",
        libc::SIGTTOU => "SIGTTOU",
        libc::SIGURG => "SIGURG",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGVTALRM => "SIGVTALRM",
        libc::SIGPROF => "SIGPROF",
        libc::SIGWINCH => "SIGWINCH",
        libc::SIGIO => "SIGIO",
        libc::SIGPWR => "SIGPWR",
        libc::SIGSYS => "SIGSYS",
        _ => return None,
    })
}

/// `"signal 9 (SIGKILL)"`, or `"signal 40"` when the number has no usual name.
pub fn describe_signal(sig: i32) -> String {
    match signal_name(sig) {
        Some(name) => format!("signal {sig} ({name})"),
        None => format!("signal {sig}"),
    }
}

/// How a process ended, as the tail of a sentence about it:
/// `"exited with status 7"` or `"was killed by signal 9 (SIGKILL)"`.
pub fn describe_status(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        format!("exited with status {code}")
    } else if let Some(sig) = status.signal() {
        let core = if status.core_dumped() {
            " (core dumped)"
        } else {
            ""
        };
        format!("was killed by {}{core}", describe_signal(sig))
    } else {
        format!("ended with {status}")
    }
}

/// The exit code a shell would report for `status`: the exit code, or 128 + signal.
pub fn shell_exit_code(status: ExitStatus) -> u8 {
    if let Some(code) = status.code() {
        // An exit code is the low 8 bits; a non-zero status must stay non-zero.
        match u8::try_from(code & 0xff) {
            Ok(0) if code != 0 => 1,
            Ok(c) => c,
            Err(_) => 1,
        }
    } else if let Some(sig) = status.signal() {
        u8::try_from(128 + sig).unwrap_or(255)
    } else {
        1
    }
}

/// Format a list of ranks compactly: `"0, 2, 5-9"`. The input need not be sorted.
pub fn format_ranks(ranks: &[u32]) -> String {
    let mut sorted = ranks.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end = sorted[i];
        }
        parts.push(match end - start {
            0 => format!("{start}"),
            1 => format!("{start}, {end}"),
            _ => format!("{start}-{end}"),
        });
        i += 1;
    }
    parts.join(", ")
}

/// `"rank 3"` or `"ranks 0, 2"`: a noun phrase for a rank set.
pub fn ranks_phrase(ranks: &[u32]) -> String {
    if ranks.len() == 1 {
        format!("rank {}", ranks[0])
    } else {
        format!("ranks {}", format_ranks(ranks))
    }
}

/// A duration for messages: `"30 s"`, `"1.5 s"`.
pub fn format_secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{} s", (s * 1000.0).round() / 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from_raw(raw: i32) -> ExitStatus {
        ExitStatus::from_raw(raw)
    }

    #[test]
    fn statuses() {
        let exit7 = from_raw(7 << 8);
        assert_eq!(describe_status(exit7), "exited with status 7");
        assert_eq!(shell_exit_code(exit7), 7);
        let killed = from_raw(libc::SIGKILL);
        assert_eq!(describe_status(killed), "was killed by signal 9 (SIGKILL)");
        assert_eq!(shell_exit_code(killed), 137);
        assert_eq!(shell_exit_code(from_raw(0)), 0);
        assert_eq!(describe_signal(61), "signal 61");
    }

    #[test]
    fn rank_lists() {
        assert_eq!(format_ranks(&[]), "");
        assert_eq!(format_ranks(&[3]), "3");
        assert_eq!(
            format_ranks(&[5, 0, 1, 2, 3, 7, 8, 9, 11]),
            "0-3, 5, 7-9, 11"
        );
        assert_eq!(format_ranks(&[1, 2]), "1, 2");
        assert_eq!(ranks_phrase(&[2]), "rank 2");
        assert_eq!(ranks_phrase(&[0, 1]), "ranks 0, 1");
    }

    #[test]
    fn seconds() {
        assert_eq!(format_secs(Duration::from_secs(30)), "30 s");
        assert_eq!(format_secs(Duration::from_millis(1500)), "1.5 s");
    }
}
