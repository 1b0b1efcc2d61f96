//! What a waiting host polls besides the runtime: its rings and its TCP
//! links (`tcprx`), the mesh's [`Poller`].
//!
//! The TCP links are looked at through an epoll set of their own
//! (level-triggered, separate from the runtime's edge-triggered one): one
//! `epoll_wait` with no timeout per poll says which sockets hold bytes, and
//! only those are read. A rank has a TCP link to every rank of every other
//! host; reading each of them at every poll cost a `recvfrom` apiece (4 a
//! poll for each rank of 3 hosts of 2, 400 an iteration of the small
//! bcast + barrier loop).

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use super::rings::Rings;
use super::tcprx::TcpRx;
use crate::drive::Poller;

/// Ready links taken per poll (more wait for the next: level-triggered).
const EVENTS: usize = 8;

/// An epoll set of the TCP links' sockets, level-triggered; each entry's
/// data is the link's index.
struct Ready {
    ep: RawFd,
}

impl Ready {
    fn new(links: &[Arc<TcpRx>]) -> std::io::Result<Ready> {
        // SAFETY: plain system calls on descriptors this set owns (`ep`) or
        // that the links keep open while the poller holds them.
        let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if ep < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let set = Ready { ep };
        for (i, l) in links.iter().enumerate() {
            let mut ev = libc::epoll_event {
                events: (libc::EPOLLIN | libc::EPOLLRDHUP) as u32,
                u64: i as u64,
            };
            // SAFETY: as above; `ev` outlives the call.
            if unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, l.fd(), &mut ev) } < 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(set)
    }

    /// The indices of the links whose sockets hold something (or failed).
    /// The system call itself, not libc's `epoll_wait`: that is a
    /// cancellation point, which in a threaded process wraps the call in
    /// two more calls (to enable and disable asynchronous cancellation),
    /// and a wait with no timeout never needs it. A waiting host makes this
    /// call at every poll; the wrappers took 1.7% of the ranks' CPU time
    /// in the 3 × 2 namespace cluster's bcast + barrier loop (`perf
    /// record`), more than any function of mcast's own.
    fn ready(&self, out: &mut [libc::epoll_event; EVENTS]) -> usize {
        // SAFETY: `out` has room for `EVENTS` entries; a null signal mask
        // makes `epoll_pwait` an `epoll_wait` (every architecture has it).
        let n = unsafe {
            libc::syscall(
                libc::SYS_epoll_pwait,
                self.ep,
                out.as_mut_ptr(),
                EVENTS as libc::c_int,
                0 as libc::c_int,
                std::ptr::null::<libc::sigset_t>(),
                0usize,
            )
        };
        n.max(0) as usize
    }

    /// Stop watching a link (it failed, and its failure was reported).
    fn forget(&self, fd: RawFd) {
        // SAFETY: as above.
        unsafe { libc::epoll_ctl(self.ep, libc::EPOLL_CTL_DEL, fd, std::ptr::null_mut()) };
    }
}

impl Drop for Ready {
    fn drop(&mut self) {
        // SAFETY: the set owns `ep`.
        unsafe { libc::close(self.ep) };
    }
}

/// What a waiting host polls besides the runtime: the rings (if any) and
/// the TCP links' receive sides. With every peer on one of the two, the
/// host polls outside the runtime ([`Poller::polls_all`]); it still sleeps
/// in the runtime's epoll (the TCP links wake it there).
pub(crate) struct NetPoll {
    rings: Option<Arc<Rings>>,
    tcp: OnceLock<(Vec<Arc<TcpRx>>, Option<Ready>)>,
    /// Every peer is reached through a ring or a [`TcpRx`].
    all: AtomicBool,
    /// How many writers have bytes waiting (they need the runtime).
    waiting: Arc<AtomicUsize>,
}

impl NetPoll {
    pub(super) fn new(rings: Option<Arc<Rings>>, waiting: Arc<AtomicUsize>) -> NetPoll {
        NetPoll {
            rings,
            tcp: OnceLock::new(),
            all: AtomicBool::new(false),
            waiting,
        }
    }

    /// The NI stopped: the TCP links read nothing more and let go of what
    /// they hold (see [`TcpRx::release`]).
    pub(super) fn release(&self) {
        for t in self.tcp.get().map(|(t, _)| t.as_slice()).unwrap_or(&[]) {
            t.release();
        }
    }

    /// The TCP links, once connected; `all` if every peer is on a ring or
    /// one of them.
    pub(super) fn set_tcp(&self, tcp: Vec<Arc<TcpRx>>, all: bool) {
        // Without an epoll set of its own the poller reads every link.
        let ready = match tcp.is_empty() {
            true => None,
            false => Ready::new(&tcp)
                .inspect_err(|e| tracing::debug!("no epoll set for the TCP links: {e}"))
                .ok(),
        };
        let _ = self.tcp.set((tcp, ready));
        self.all.store(all, Ordering::Release);
    }
}

impl Poller for NetPoll {
    fn poll(&self) -> bool {
        let mut moved = self.rings.as_ref().is_some_and(|r| r.poll());
        match self.tcp.get() {
            Some((tcp, Some(ready))) => {
                let mut evs = [libc::epoll_event { events: 0, u64: 0 }; EVENTS];
                let n = ready.ready(&mut evs);
                for e in &evs[..n] {
                    let Some(t) = tcp.get(e.u64 as usize) else {
                        continue;
                    };
                    moved |= t.poll();
                    if t.is_done() {
                        ready.forget(t.fd());
                    }
                }
            }
            Some((tcp, None)) => {
                for t in tcp {
                    moved |= t.poll();
                }
            }
            None => {}
        }
        moved
    }

    fn park(&self, max: Duration) {
        match &self.rings {
            Some(r) => r.park(max),
            // Only the shutdown's flush parks here (a wait sleeps in the
            // runtime): a short nap, then the runtime runs again.
            None => std::thread::sleep(max.min(Duration::from_micros(200))),
        }
    }

    fn wake(&self) {
        if let Some(r) = &self.rings {
            r.wake();
        }
    }

    fn crowded(&self) -> bool {
        self.rings.as_ref().is_some_and(|r| r.crowded())
    }

    fn in_runtime(&self) -> bool {
        self.rings.as_ref().is_none_or(|r| r.in_runtime())
    }

    fn sleep_begin(&self) -> bool {
        self.rings.as_ref().is_none_or(|r| r.sleep_begin())
    }

    fn sleep_end(&self) {
        if let Some(r) = &self.rings {
            r.sleep_end();
        }
    }

    fn polls_all(&self) -> bool {
        self.all.load(Ordering::Acquire)
    }

    fn needs_runtime(&self) -> bool {
        self.waiting.load(Ordering::Acquire) > 0
    }
}
