//! Human-readable descriptions of exit statuses, signals and rank sets.

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

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

pub use mcast::rendezvous::{format_ranks, format_secs, ranks_phrase};

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
}
