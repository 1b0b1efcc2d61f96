//! The guardian: a small process that kills the job's process groups when
//! mclaunch goes away without stopping them itself.
//!
//! Every rank leads its own process group, and everything it starts (a
//! wrapper's children: `sh -c 'prog; echo'`) is in that group unless it
//! leaves it. `PR_SET_PDEATHSIG` reaches only the rank's own process, so if
//! mclaunch is SIGKILLed, a wrapped program would be re-parented and run on.
//! The guardian is forked by mclaunch before anything else and holds the
//! read end of a pipe whose write end only mclaunch has (close-on-exec, and
//! the guardian closes every other descriptor). Each rank writes its own
//! process group id into it between fork and exec ([`Announcer`]), so no
//! program it runs can start before the guardian knows its group, however
//! soon after that mclaunch dies. At end of file — mclaunch
//! exited or was killed, whatever the way — the guardian sends SIGKILL to
//! every group it was told about and exits; after an orderly teardown
//! mclaunch disarms it first (`d`), so it never signals a group id that
//! might have been reused.
//!
//! Chosen over `PR_SET_CHILD_SUBREAPER` (a subreaper inherits orphans only
//! while it lives: it cannot act once it is SIGKILLed itself) and over a
//! cgroup (needs a delegated, writable cgroup, which a container or a plain
//! login usually does not give). Limit: a process that leaves its rank's
//! process group (`setsid`, a daemon) escapes it.
//!
//! The child runs between `fork` and `_exit` in a copy of a multi-threaded
//! process, so it makes only async-signal-safe system calls and never
//! allocates (the group list is allocated before the fork).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// The running guardian, seen from mclaunch.
pub(crate) struct Guardian {
    pid: libc::pid_t,
    /// The write end; dropping it (or mclaunch dying) arms the kill.
    tx: Option<OwnedFd>,
}

impl Guardian {
    /// Fork the guardian for a job of at most `groups` process groups.
    pub(crate) fn start(groups: usize) -> io::Result<Guardian> {
        let mut fds = [0; 2];
        // SAFETY: pipe2 writes two descriptors into the array.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: pipe2 just returned these; we own them.
        let (rx, tx) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        let mut list: Vec<libc::pid_t> = Vec::with_capacity(groups);
        // SAFETY: the child only runs `guard`, which makes async-signal-safe
        // calls on memory allocated before the fork, and never returns.
        match unsafe { libc::fork() } {
            -1 => Err(io::Error::last_os_error()),
            0 => unsafe { guard(rx.as_raw_fd(), tx.as_raw_fd(), &mut list) },
            pid => {
                drop(rx);
                Ok(Guardian { pid, tx: Some(tx) })
            }
        }
    }

    /// What a child uses to tell the guardian its process group between
    /// fork and exec; `None` once disarmed.
    pub(crate) fn announcer(&self) -> Option<Announcer> {
        self.tx.as_ref().map(|tx| Announcer(tx.as_raw_fd()))
    }

    fn send(&self, b: &[u8]) {
        if let Some(tx) = &self.tx {
            // SAFETY: writes from a buffer we own to our pipe. A line is far
            // below PIPE_BUF and the guardian reads continuously.
            unsafe { libc::write(tx.as_raw_fd(), b.as_ptr().cast(), b.len()) };
        }
    }

    /// The job is torn down: let the guardian exit without killing anything.
    pub(crate) fn disarm(mut self) {
        self.send(b"d\n");
        self.finish();
    }

    fn finish(&mut self) {
        if self.tx.take().is_some() {
            // SAFETY: reaps our own child.
            unsafe { libc::waitpid(self.pid, std::ptr::null_mut(), 0) };
        }
    }
}

impl Drop for Guardian {
    /// Closing the pipe without disarming: the guardian kills every group.
    fn drop(&mut self) {
        self.finish();
    }
}

/// The guardian's write end as a forked child sees it (inherited; it closes
/// at exec).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Announcer(RawFd);

impl Announcer {
    /// Between fork and exec, in a child that leads its own process group:
    /// tell the guardian that group. Async-signal-safe (getpid, and one
    /// write from a stack buffer, far below PIPE_BUF so it is atomic). Done
    /// here rather than by the parent after `spawn` returns, since the
    /// program may start its own children before the parent gets there.
    pub(crate) fn announce_self(self) -> io::Result<()> {
        // SAFETY: getpid has no preconditions.
        let line = pgid_line(unsafe { libc::getpid() });
        let (buf, len) = (&line.0, line.1);
        let from = buf.len() - len;
        // SAFETY: writes from a buffer we own to an inherited descriptor.
        let n = unsafe { libc::write(self.0, buf[from..].as_ptr().cast(), len) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        if n as usize != len {
            return Err(io::Error::from_raw_os_error(libc::EIO));
        }
        Ok(())
    }
}

/// `pid` in decimal followed by a newline, right-aligned in a fixed buffer
/// (no allocation); the second field is its length.
fn pgid_line(pid: libc::pid_t) -> ([u8; 12], usize) {
    let mut buf = [0u8; 12];
    let mut i = buf.len() - 1;
    buf[i] = b'\n';
    let mut v = pid.unsigned_abs();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    (buf, buf.len() - i)
}

/// The guardian's life: read group ids until disarmed or end of file.
///
/// # Safety
/// Only in the child of `fork`; `list` was allocated before it.
unsafe fn guard(rx: libc::c_int, tx: libc::c_int, list: &mut Vec<libc::pid_t>) -> ! {
    libc::close(tx);
    // A signal meant for the job (Ctrl-C to the foreground group) is
    // mclaunch's to handle; the guardian only acts on end of file.
    for sig in [
        libc::SIGINT,
        libc::SIGTERM,
        libc::SIGHUP,
        libc::SIGQUIT,
        libc::SIGPIPE,
    ] {
        libc::signal(sig, libc::SIG_IGN);
    }
    // Hold no other descriptor: not mclaunch's stdout (a reader waiting for
    // its end), not its sockets.
    let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
    if null >= 0 {
        for fd in 0..3 {
            libc::dup2(null, fd);
        }
    }
    let rx = if libc::dup2(rx, 3) == 3 { 3 } else { rx };
    if libc::syscall(libc::SYS_close_range, 4u32, u32::MAX, 0u32) != 0 {
        for fd in 4..4096 {
            if fd != rx {
                libc::close(fd);
            }
        }
    }
    let mut buf = [0u8; 512];
    let mut cur: libc::pid_t = 0;
    loop {
        let n = libc::read(rx, buf.as_mut_ptr().cast(), buf.len());
        if n < 0 && *libc::__errno_location() == libc::EINTR {
            continue;
        }
        if n <= 0 {
            break;
        }
        for &b in &buf[..n as usize] {
            match b {
                b'0'..=b'9' => {
                    cur = cur
                        .saturating_mul(10)
                        .saturating_add((b - b'0') as libc::pid_t)
                }
                b'\n' => {
                    if cur > 1 && list.len() < list.capacity() {
                        list.push(cur);
                    }
                    cur = 0;
                }
                b'd' => libc::_exit(0),
                _ => cur = 0,
            }
        }
    }
    for &pgid in list.iter() {
        libc::killpg(pgid, libc::SIGKILL);
    }
    libc::_exit(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader};
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    #[test]
    fn pgid_lines_are_decimal_with_a_newline() {
        for (pid, text) in [(1, "1\n"), (42, "42\n"), (4_194_304, "4194304\n")] {
            let (buf, len) = pgid_line(pid);
            assert_eq!(&buf[buf.len() - len..], text.as_bytes());
        }
        let (buf, len) = pgid_line(libc::pid_t::MAX);
        assert_eq!(&buf[buf.len() - len..], b"2147483647\n");
    }

    /// A wrapper (`sh`) that announced itself, and the program it runs
    /// as its child: the guardian's pid for the program.
    fn wrapped(guardian: &Guardian) -> (std::process::Child, libc::pid_t) {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "sleep 30 & echo $!; wait"])
            .stdout(Stdio::piped())
            .process_group(0);
        let announcer = guardian.announcer().unwrap();
        // SAFETY: announce_self is async-signal-safe.
        unsafe { cmd.pre_exec(move || announcer.announce_self()) };
        let mut sh = cmd.spawn().unwrap();
        let mut line = String::new();
        BufReader::new(sh.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        (sh, line.trim().parse().unwrap())
    }

    /// Whether `pid` has ended: a killed `sleep` is reparented and reaped
    /// by init, or is a zombie of ours until `sh` is waited for.
    fn gone(pid: libc::pid_t) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            Ok(s) => s
                .rsplit(')')
                .next()
                .is_some_and(|t| t.trim_start().starts_with('Z')),
        }
    }

    fn gone_within(pid: libc::pid_t, limit: Duration) -> bool {
        let end = Instant::now() + limit;
        while !gone(pid) {
            if Instant::now() >= end {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        true
    }

    #[test]
    fn an_announced_group_is_killed_when_the_guardian_is_not_disarmed() {
        let guardian = Guardian::start(4).unwrap();
        let (mut sh, sleep) = wrapped(&guardian);
        drop(guardian); // mclaunch gone without teardown
        assert!(
            gone_within(sleep, Duration::from_secs(10)),
            "sleep {sleep} lives"
        );
        sh.wait().unwrap();
    }

    #[test]
    fn a_disarmed_guardian_kills_nothing() {
        let guardian = Guardian::start(4).unwrap();
        let (mut sh, sleep) = wrapped(&guardian);
        guardian.disarm(); // returns once the guardian has exited
        assert!(!gone(sleep), "the disarmed guardian killed {sleep}");
        // SAFETY: kills the group this test started.
        unsafe { libc::killpg(sh.id() as libc::pid_t, libc::SIGKILL) };
        sh.wait().unwrap();
        assert!(gone_within(sleep, Duration::from_secs(10)));
    }
}
