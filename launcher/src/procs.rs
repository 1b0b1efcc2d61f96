//! Which process groups still have live members.
//!
//! `killpg(pgid, 0)` succeeds while a group holds any process, zombies
//! included, and a zombie orphan may linger for a long time where PID 1 is
//! slow to reap (containers, micro-VMs). A zombie has already exited, so
//! teardown counts only live processes, found in `/proc`.

use std::collections::HashSet;
use std::fs;
use std::io;

/// Parse `/proc/PID/stat` text into (state, process group).
fn parse_stat(stat: &str) -> Option<(char, libc::pid_t)> {
    // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses,
    // so fields are counted from its last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, pgrp))
}

/// The process groups that contain at least one process that has not exited.
pub fn live_groups() -> io::Result<HashSet<libc::pid_t>> {
    let mut live = HashSet::new();
    for entry in fs::read_dir("/proc")? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        // The process may be gone by now: skip it.
        let Ok(stat) = fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        if let Some((state, pgrp)) = parse_stat(&stat) {
            if state != 'Z' && state != 'X' {
                live.insert(pgrp);
            }
        }
    }
    Ok(live)
}

/// True when process group `pgid` has no process left (not even a zombie).
pub fn group_is_gone(pgid: libc::pid_t) -> bool {
    // SAFETY: signal 0 only checks for existence and permission.
    let r = unsafe { libc::killpg(pgid, 0) };
    r == -1 && io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_lines() {
        assert_eq!(
            parse_stat("123 (sleep) S 100 123 100 0 -1"),
            Some(('S', 123))
        );
        assert_eq!(parse_stat("7 (we (ird) Z) Z 1 55 55 0"), Some(('Z', 55)));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn own_group_is_live() {
        // SAFETY: getpgrp has no preconditions.
        let me = unsafe { libc::getpgrp() };
        assert!(live_groups().unwrap().contains(&me));
        assert!(!group_is_gone(me));
    }
}
