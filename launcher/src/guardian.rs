//! The guardian: a small process that kills the job's process groups when
//! mclaunch goes away without stopping them itself.
//!
//! Every rank leads its own process group, and everything it starts (a
//! wrapper's children: `sh -c 'prog; echo'`) is in that group unless it
//! leaves it. `PR_SET_PDEATHSIG` reaches only the rank's own process, so if
//! mclaunch is SIGKILLed, a wrapped program would be re-parented and run on.
//! The guardian is forked by mclaunch before anything else and holds the
//! read end of a pipe whose write end only mclaunch has (close-on-exec, and
//! the guardian closes every other descriptor). mclaunch writes each rank's
//! process group id into it as the rank starts. At end of file — mclaunch
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
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

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

    /// Tell the guardian about a rank's process group.
    pub(crate) fn watch(&self, pgid: libc::pid_t) {
        self.send(format!("{pgid}\n").as_bytes());
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
