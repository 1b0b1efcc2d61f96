//! The receive side of a TCP link, readable from any thread: the host's
//! own polling loop reads its sockets directly, as it reads its rings,
//! instead of waiting for the runtime's epoll to wake a reader task.
//!
//! A waiting rank with peers on other hosts used to drive the NI runtime
//! at every poll: a yield, then `epoll_wait`, the runtime's timers, and,
//! when a packet had come, the reader task woken, polled, reading, and the
//! host's future polled again. On the namespace cluster that path cost each
//! hop several microseconds beyond the kernel's own (README "Performance").
//! Now the bytes of a TCP link are parsed by a state machine
//! ([`TcpRx`]) that whoever holds its lock advances with non-blocking
//! reads until the socket has nothing more: the host, from its polling
//! loop (`netpoll::NetPoll`, outside the runtime, as with the rings), or the
//! link's task when the runtime's epoll says the socket is readable (the
//! host is asleep, computing, or away).
//!
//! The task's advance reads until the socket would block, so a socket is
//! never left holding bytes that no new edge will announce (tokio's epoll
//! is edge-triggered); the host's stops at a short read (`advance` says
//! why that is safe). The task's reads go through tokio's `try_io`, which
//! clears the readiness it saw when the socket is empty. The host's reads
//! do not touch tokio's readiness; a stale "readable" only costs the task
//! one read that would block. The host takes the lock with `try_lock`
//! (if the task holds it, the task reads everything); the task waits for
//! it, so bytes that come while the host is dispatching are read by one or
//! the other. Packets are dispatched under the lock, in the order their
//! bytes came.
//!
//! The silence bound (a quiet peer is lost) and the failures the host
//! meets (the peer's close, a protocol violation) go to the task, which
//! reports them as the other readers do (`read::reader`).

use std::io::Read;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::io::Interest;
use tokio::net::tcp::OwnedReadHalf;
use tokio::sync::Notify;

use super::intake::{Host, Intake};
use super::link::{Ambient, Links};
use super::mesh::Mesh;
use super::read::{lost_reason, open_shm, ReadFail, Stop, READ_BUFFER};
use super::rings::Rings;
use crate::bufpool::POOL;
use crate::outq::SHUTDOWN_FLUSH;
use crate::shm::{Shm, SlotFill};
use crate::sync::lock;
use crate::wire::{Header, Kind, Packet, Route, FLAG_SHM, HEADER_LEN};

/// "Nothing heard yet" in [`TcpRx::heard_us`].
const NEVER: u64 = u64::MAX;

/// Where a route or a payload is being read to.
enum Dest {
    /// A slot of this rank's arena (a large payload: forwarding it to the
    /// ranks of this host then costs a descriptor).
    Slot(SlotFill, usize),
    /// A buffer of `want` bytes (kept by the pool if large).
    Heap(Vec<u8>, usize),
}

impl Dest {
    /// Room for `n` bytes: an arena slot when there is one and it has room.
    fn for_payload(n: usize, arena: Option<&Arc<Shm>>) -> Dest {
        match arena.and_then(|a| a.slot(n)) {
            Some(slot) => Dest::Slot(slot, 0),
            None => Dest::Heap(POOL.take(n), n),
        }
    }

    fn missing(&self) -> usize {
        match self {
            Dest::Slot(s, filled) => s.len() - filled,
            Dest::Heap(v, want) => want - v.len(),
        }
    }

    /// Take what it still misses from the front of `src`; how much.
    fn take(&mut self, src: &[u8]) -> usize {
        let n = self.missing().min(src.len());
        match self {
            Dest::Slot(s, filled) => {
                s.buf()[*filled..*filled + n].copy_from_slice(&src[..n]);
                *filled += n;
            }
            Dest::Heap(v, _) => v.extend_from_slice(&src[..n]),
        }
        n
    }

    /// Read what it misses straight from `sock` (no copy through the link's
    /// buffer).
    fn read(&mut self, mut sock: &socket2::Socket) -> std::io::Result<usize> {
        match self {
            Dest::Slot(s, filled) => {
                let n = sock.read(&mut s.buf()[*filled..])?;
                *filled += n;
                Ok(n)
            }
            Dest::Heap(v, want) => {
                let room = *want - v.len();
                let spare = &mut v.spare_capacity_mut()[..room];
                let n = sock.recv(spare)?;
                // SAFETY: `recv` initialized the first `n` bytes of the
                // spare capacity.
                unsafe { v.set_len(v.len() + n) };
                Ok(n)
            }
        }
    }

    fn into_bytes(self) -> Bytes {
        match self {
            Dest::Slot(s, _) => s.into_bytes(),
            Dest::Heap(v, _) => POOL.freeze(v),
        }
    }
}

/// Where the next bytes of the stream belong.
enum Part {
    Header,
    Route {
        header: Header,
        flags: u8,
        route: Dest,
    },
    Payload {
        header: Header,
        flags: u8,
        route: Route,
        payload: Dest,
    },
}

struct RxState {
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    part: Part,
    /// Why reading stopped, for the task to report (then nothing more is
    /// read).
    failed: Option<Stop>,
    /// The task has taken `failed`, or the NI stopped: the link is done.
    done: bool,
    /// Where packets go; `None` once the NI stopped ([`TcpRx::release`]).
    intake: Option<Intake>,
}

/// The receive side of one TCP link (see the module doc).
pub(crate) struct TcpRx {
    peer: usize,
    half: OwnedReadHalf,
    st: Mutex<RxState>,
    arena: Option<Arc<Shm>>,
    rings: Option<Arc<Rings>>,
    base: Instant,
    /// When anything last came (µs since `base`), or `NEVER`.
    heard_us: AtomicU64,
    /// The peer said goodbye (its close comes soon: no more heartbeats).
    bye: AtomicBool,
    /// The host met a failure: the task is to report it.
    failed: Notify,
}

impl TcpRx {
    pub(super) fn new(
        peer: usize,
        half: OwnedReadHalf,
        intake: Intake,
        arena: Option<Arc<Shm>>,
        rings: Option<Arc<Rings>>,
    ) -> TcpRx {
        TcpRx {
            peer,
            half,
            st: Mutex::new(RxState {
                buf: vec![0u8; READ_BUFFER].into_boxed_slice(),
                start: 0,
                end: 0,
                part: Part::Header,
                failed: None,
                done: false,
                intake: Some(intake),
            }),
            arena,
            rings,
            base: Instant::now(),
            heard_us: AtomicU64::new(NEVER),
            bye: AtomicBool::new(false),
            failed: Notify::new(),
        }
    }

    /// The socket's descriptor (for the poller's readiness set).
    pub(crate) fn fd(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsRawFd;
        self.half.as_ref().as_raw_fd()
    }

    /// The link failed and its task has reported it: nothing more to read.
    pub(crate) fn is_done(&self) -> bool {
        self.st.try_lock().is_ok_and(|st| st.done)
    }

    /// Read and dispatch whatever the socket holds, if nobody else is
    /// (the host's poll); whether a packet was dispatched.
    pub(crate) fn poll(&self) -> bool {
        match self.st.try_lock() {
            Ok(mut st) => self.advance(&mut st, false),
            Err(_) => false,
        }
    }

    /// Read until the socket would block (`drain`, the task), or until a
    /// read comes back short (the host), dispatching every whole packet; a
    /// failure is kept for the task (and the task told). Whether a packet
    /// was dispatched. The host may leave bytes behind that a short read
    /// missed: its own epoll set is level-triggered and says so at its next
    /// poll, and the runtime's edge for them stays queued until the
    /// runtime's `epoll_wait` takes it, which looks again at the socket
    /// then (so the task reads them if the host is gone). That saves the
    /// host the read that would block, a system call on every hop.
    fn advance(&self, st: &mut RxState, drain: bool) -> bool {
        if st.failed.is_some() || st.done {
            return false;
        }
        let sock = socket2::SockRef::from(self.half.as_ref());
        let (mut moved, mut short) = (false, false);
        let out = loop {
            match self.parse(st) {
                Ok(m) => moved |= m,
                Err(stop) => break Err(stop),
            }
            if short {
                break Ok(());
            }
            let (read, asked) = match &mut st.part {
                Part::Route { route: d, .. } | Part::Payload { payload: d, .. }
                    if st.start == st.end && d.missing() > READ_BUFFER / 2 =>
                {
                    let asked = d.missing();
                    (d.read(&sock), asked)
                }
                _ => {
                    if st.start == st.end {
                        (st.start, st.end) = (0, 0);
                    } else if st.end == st.buf.len() {
                        st.buf.copy_within(st.start..st.end, 0);
                        (st.start, st.end) = (0, st.end - st.start);
                    }
                    let end = st.end;
                    let read = (&*sock).read(&mut st.buf[end..]);
                    (read.inspect(|&n| st.end += n), st.buf.len() - end)
                }
            };
            match read {
                Ok(0) => {
                    let eof = std::io::Error::from(std::io::ErrorKind::UnexpectedEof);
                    break Err(Stop::Read(ReadFail::Io(eof)));
                }
                Ok(n) => {
                    self.heard();
                    // A short read most likely emptied the socket: the host
                    // takes what it has and does not ask again (its epoll set
                    // is level-triggered; see `advance`).
                    short = !drain && n < asked;
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => break Err(Stop::Read(ReadFail::Io(e))),
            }
        };
        if let Err(stop) = out {
            st.failed = Some(stop);
            self.failed.notify_one();
            return true;
        }
        moved
    }

    fn heard(&self) {
        let us = self.base.elapsed().as_micros() as u64;
        self.heard_us.store(us.min(NEVER - 1), Ordering::Release);
    }

    /// When anything last came, if anything has.
    fn heard_at(&self) -> Option<Instant> {
        match self.heard_us.load(Ordering::Acquire) {
            NEVER => None,
            us => Some(self.base + Duration::from_micros(us)),
        }
    }

    /// Take the whole packets at the front of the buffer; whether any.
    fn parse(&self, st: &mut RxState) -> Result<bool, Stop> {
        let mut moved = false;
        let Some(intake) = st.intake.clone() else {
            return Ok(moved);
        };
        loop {
            // The route or payload being read takes what the buffer has.
            if let Part::Route { route: d, .. } | Part::Payload { payload: d, .. } = &mut st.part {
                st.start += d.take(&st.buf[st.start..st.end]);
                if d.missing() > 0 {
                    return Ok(moved);
                }
            }
            st.part = match std::mem::replace(&mut st.part, Part::Header) {
                Part::Header => {
                    if st.end - st.start < HEADER_LEN {
                        return Ok(moved);
                    }
                    let hb = &st.buf[st.start..st.start + HEADER_LEN];
                    let (header, flags) = Header::decode_flagged(hb)
                        .map_err(|e| Stop::Violation(format!("malformed header: {e}")))?;
                    intake
                        .check(&header, Some(self.peer))
                        .map_err(Stop::Violation)?;
                    st.start += HEADER_LEN;
                    let n = header.route_len as usize;
                    Part::Route {
                        header,
                        flags,
                        route: Dest::Heap(Vec::with_capacity(n), n),
                    }
                }
                Part::Route {
                    header,
                    flags,
                    route,
                } => {
                    let rb = route.into_bytes();
                    let route = Route::decode(header.route_kind, &rb)
                        .map_err(|e| Stop::Violation(format!("malformed route header: {e}")))?;
                    let n = header.payload_len as usize;
                    Part::Payload {
                        header,
                        flags,
                        route,
                        payload: Dest::for_payload(n, self.arena.as_ref()),
                    }
                }
                Part::Payload {
                    header,
                    flags,
                    route,
                    payload,
                } => {
                    let packet = Packet {
                        header,
                        route,
                        payload: payload.into_bytes(),
                    };
                    self.dispatch(&intake, packet, flags)?;
                    moved = true;
                    Part::Header
                }
            };
        }
    }

    /// Hand a whole packet on, as `read::reader` does.
    fn dispatch(&self, intake: &Intake, packet: Packet, flags: u8) -> Result<(), Stop> {
        // What the peer put in its ring came before anything its socket
        // says (a TCP peer has a ring only under unusual set-ups).
        if let Some(r) = self.rings.as_ref().filter(|r| r.has(self.peer)) {
            r.drain_from(self.peer);
        }
        let from = self.peer;
        let data = |host: &dyn Host, p: Packet| {
            let p = if flags == FLAG_SHM {
                open_shm(p, None)?
            } else {
                p
            };
            host.engine_in(from, p, Ambient::Idle)
                .map_err(|e| format!("bad packet: {e}"))
        };
        match intake.dispatch(from, packet, data) {
            Ok(Kind::Bye) => self.bye.store(true, Ordering::Release),
            Ok(_) => {}
            Err(e) => return Err(Stop::Violation(e)),
        }
        Ok(())
    }

    /// The NI stopped: read nothing more, and let go of the intake (it
    /// holds the driver, which holds the mesh, which holds this link: the
    /// socket would never close).
    pub(crate) fn release(&self) {
        let mut st = lock(&self.st);
        st.intake = None;
        st.done = true;
    }

    /// The failure the link met, once (later calls: `None`).
    fn take_failure(&self) -> Option<Stop> {
        let mut st = lock(&self.st);
        let f = st.failed.take();
        st.done |= f.is_some();
        f
    }
}

/// The link's task: read when the runtime says the socket is readable,
/// declare the peer lost when it has been silent too long, and report what
/// the host's reads met. `(failure_timeout, first)`: the silence bound,
/// and the bound before the peer's first packet.
pub(super) async fn run(
    rx: Arc<TcpRx>,
    links: Arc<Mesh>,
    (failure_timeout, first): (Duration, Duration),
) {
    let peer = rx.peer;
    loop {
        let within = match (rx.heard_at(), rx.bye.load(Ordering::Acquire)) {
            (None, _) => first,
            (Some(_), false) => failure_timeout,
            (Some(_), true) => SHUTDOWN_FLUSH.max(failure_timeout),
        };
        let due = rx.heard_at().unwrap_or(rx.base) + within;
        tokio::select! {
            biased;
            r = rx.half.readable() => {
                let read = match r {
                    Ok(()) => rx.half.as_ref().try_io(Interest::READABLE, || {
                        let mut st = lock(&rx.st);
                        rx.advance(&mut st, true);
                        match st.failed.is_some() || st.done {
                            true => Ok(()),
                            // Empty: tokio forgets the readiness it saw.
                            false => Err(std::io::ErrorKind::WouldBlock.into()),
                        }
                    }),
                    Err(e) => Err(e),
                };
                if let Err(e) = read.map_err(|e| (e.kind(), e)) {
                    match e {
                        (std::io::ErrorKind::WouldBlock, _) => {}
                        (_, e) => {
                            let mut st = lock(&rx.st);
                            st.failed.get_or_insert(Stop::Read(ReadFail::Io(e)));
                        }
                    }
                }
            }
            _ = rx.failed.notified() => {}
            _ = tokio::time::sleep_until(due.into()) => {
                let within_now = match rx.heard_at() {
                    None => first,
                    Some(_) => within,
                };
                let last = rx.heard_at().unwrap_or(rx.base);
                if Instant::now() >= last + within_now {
                    let mut st = lock(&rx.st);
                    st.failed.get_or_insert(Stop::Read(ReadFail::Silent));
                }
            }
        }
        let Some(stop) = rx.take_failure() else {
            if lock(&rx.st).done {
                // Released: the NI stopped, and a readable socket would
                // wake this task again and again.
                return;
            }
            continue;
        };
        let reason = match stop {
            Stop::Violation(what) => {
                let intake = lock(&rx.st).intake.clone();
                if let Some(i) = intake {
                    i.inbox().lost(peer, format!("protocol violation: {what}"));
                }
                return;
            }
            Stop::Read(f) => lost_reason(f, rx.heard_at().is_some(), (failure_timeout, first)),
        };
        return links.broken(peer, reason);
    }
}

#[cfg(test)]
#[path = "tcprx_tests.rs"]
mod tests;
