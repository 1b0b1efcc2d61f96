//! Departure reports: what the ranks tell mclaunch about each other.
//!
//! Every rank inherits the write end of one pipe (its descriptor number in
//! `MCAST_REPORT_FD`); when a rank declares a peer lost it writes
//! `lost ME PEER REASON\n` there (`mcast::logging`), before it can act on
//! the loss. Lines are far below `PIPE_BUF`, so writers never interleave.
//!
//! Ordering is the point: a rank that fails because it lost a peer must not
//! be blamed for the failure. A rank writes its report before it exits, so
//! the report is in the pipe by the time its exit can be reaped; each rank's
//! waiter thread [`drain`](Reports::drain)s the pipe after reaping and
//! before it sends the exit event, and the reading thread drains under the
//! same lock, so on the event channel a rank's reports always come before
//! its exit.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::thread;

use crate::supervisor::Event;

/// How often the reading thread looks at its stop flag while the pipe is quiet.
const STOP_POLL_MS: i32 = 100;
/// Longest line kept; longer ones are cut.
const MAX_LINE: usize = 1024;

/// The report pipe and its reader.
pub(crate) struct Reports {
    read: OwnedFd,
    write: OwnedFd,
    /// Bytes of an incomplete line; held while reading, so reads and the
    /// events they produce are ordered.
    partial: Mutex<Vec<u8>>,
    tx: Sender<Event>,
    stop: AtomicBool,
}

/// One report: rank `by` declared rank `peer` lost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Lost {
    pub by: u32,
    pub peer: u32,
    pub reason: String,
}

impl Reports {
    /// Open the pipe (both ends close-on-exec; the ranks get the write end
    /// through [`Reports::inherit_in_child`]) and start the reading thread.
    pub(crate) fn start(tx: Sender<Event>) -> io::Result<(Arc<Reports>, thread::JoinHandle<()>)> {
        let mut fds = [0; 2];
        // SAFETY: pipe2 writes two descriptors into the array.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: pipe2 just returned these descriptors; we own them.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        let reports = Arc::new(Reports {
            read,
            write,
            partial: Mutex::new(Vec::new()),
            tx,
            stop: AtomicBool::new(false),
        });
        let r = reports.clone();
        let thread = thread::Builder::new()
            .name("reports".into())
            .spawn(move || r.read_loop())?;
        Ok((reports, thread))
    }

    /// The descriptor the ranks write to.
    pub(crate) fn write_fd(&self) -> RawFd {
        self.write.as_raw_fd()
    }

    /// In a forked child before exec: keep the write end open across exec.
    /// Only makes an async-signal-safe system call.
    pub(crate) fn inherit_in_child(fd: RawFd) -> io::Result<()> {
        // SAFETY: fcntl on a descriptor number; no memory is touched.
        if unsafe { libc::fcntl(fd, libc::F_SETFD, 0) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Stop the reading thread (it notices within [`STOP_POLL_MS`]).
    pub(crate) fn stop(&self) {
        self.stop.store(true, Ordering::Release);
    }

    fn read_loop(&self) {
        while !self.stop.load(Ordering::Acquire) {
            let mut pfd = libc::pollfd {
                fd: self.read.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: poll on one pollfd we own.
            let n = unsafe { libc::poll(&mut pfd, 1, STOP_POLL_MS) };
            if n > 0 {
                self.drain();
            }
        }
    }

    /// Read everything the pipe holds now and send a [`Event::Lost`] per
    /// complete line, in order.
    pub(crate) fn drain(&self) {
        let mut partial = self.partial.lock().unwrap_or_else(|e| e.into_inner());
        let mut buf = [0u8; 4096];
        loop {
            // SAFETY: reads into a buffer we own, at most its length.
            let n =
                unsafe { libc::read(self.read.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                break; // empty (EAGAIN), end of file or an error: nothing more now
            }
            partial.extend_from_slice(&buf[..n as usize]);
            while let Some(end) = partial.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = partial.drain(..=end).collect();
                if let Some(lost) = parse(&String::from_utf8_lossy(&line[..end])) {
                    let _ = self.tx.send(Event::Lost(lost));
                }
            }
            if partial.len() > MAX_LINE {
                partial.clear();
            }
        }
    }
}

/// Parse `lost BY PEER REASON`.
pub(crate) fn parse(line: &str) -> Option<Lost> {
    let mut it = line.splitn(4, ' ');
    if it.next()? != "lost" {
        return None;
    }
    let by = it.next()?.parse().ok()?;
    let peer = it.next()?.parse().ok()?;
    let reason = it.next().unwrap_or("").trim().to_string();
    Some(Lost { by, peer, reason })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn parses_report_lines() {
        assert_eq!(
            parse("lost 2 5 connection closed without goodbye"),
            Some(Lost {
                by: 2,
                peer: 5,
                reason: "connection closed without goodbye".into()
            })
        );
        assert_eq!(
            parse("lost 2 5"),
            Some(Lost {
                by: 2,
                peer: 5,
                reason: String::new()
            })
        );
        assert_eq!(parse("lost x 5 y"), None);
        assert_eq!(parse("hello"), None);
    }

    #[test]
    fn what_was_written_is_drained_in_order_even_in_pieces() {
        let (tx, rx) = mpsc::channel();
        let (r, t) = Reports::start(tx).unwrap();
        let w = |s: &[u8]| {
            // SAFETY: writes from a buffer we own to our pipe.
            let n = unsafe { libc::write(r.write_fd(), s.as_ptr().cast(), s.len()) };
            assert_eq!(n as usize, s.len());
        };
        w(b"lost 1 3 gone\nlost 2 ");
        w(b"3 gone too\n");
        r.drain();
        let got: Vec<_> = (0..2)
            .map(
                |_| match rx.recv_timeout(std::time::Duration::from_secs(10)) {
                    Ok(Event::Lost(l)) => (l.by, l.peer),
                    other => panic!("{other:?}"),
                },
            )
            .collect();
        assert_eq!(got, vec![(1, 3), (2, 3)]);
        r.stop();
        t.join().unwrap();
    }
}
