//! The socket mesh's shared-memory rings (`crate::ring`) between the ranks
//! of one host: every packet to a peer of this host goes through the peer's
//! ring for this rank instead of the Unix socket (which then carries only
//! heartbeats, the goodbye, pokes, and by closing, the news of a death).
//! Peers on other hosts stay on TCP; with any, a rank sleeps in its runtime
//! (epoll) rather than on the futex, and its local peers poke it with a
//! heartbeat on its socket when they publish while it sleeps.
//!
//! Sending writes into the peer's ring on the sender's thread, whoever that
//! is (the host posting, or the NI forwarding), under a per-peer lock:
//! no writer task, no system call unless the peer sleeps. Receiving is
//! [`Rings::poll`], called by whoever drives the NI (`drive::Poller`): the
//! host polling while it waits, or the background thread while the host is
//! away. Each packet goes through the mesh's intake, as a socket's would.
//!
//! Order with the socket: a peer writes its last ring bytes before its
//! goodbye or its exit closes the socket, so the socket reader drains the
//! peer's ring ([`Rings::drain_from`]) before it acts on anything the
//! socket says.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use bytes::Bytes;

use super::intake::Intake;
use super::link::Ambient;
use crate::drive::Poller;
use crate::inbox::Inbox;
use crate::outq::Out;
use crate::ring::{Bell, Flag, Rx, Segment, Sent, Tx};
use crate::shm::Shm;
use crate::sync::lock;
use crate::wire::{Header, Kind, Packet, Route, FLAG_SHM};

/// The rings of this rank: its own segment (inbound) and its peers'.
pub(crate) struct Rings {
    me: usize,
    own: Arc<Segment>,
    /// Each peer's segment (`None` for this rank).
    segs: Vec<Option<Arc<Segment>>>,
    tx: Vec<Option<Mutex<Tx>>>,
    /// The inbound rings' read state, and where their packets go (set
    /// once the mesh is connected, let go when the NI stops).
    rx: Mutex<Inbound>,
    /// Peers whose rings are given up (lost, or broke the protocol).
    dead: Vec<AtomicBool>,
    /// Peers with bytes waiting for room in their ring.
    pending: AtomicUsize,
    /// The bell's value when the inbound rings were last drained.
    seen: AtomicU32,
    shm: Option<Arc<Shm>>,
    inbox: Arc<Inbox>,
    /// More ranks on this host than cores: yield the CPU at every poll.
    crowded: bool,
    /// Some peers are on other hosts: sleep in the runtime (epoll), where
    /// their sockets can wake this rank too, and have local peers poke it
    /// through its Unix socket, rather than sleep on the futex.
    in_runtime: bool,
    /// The socket writers to poke peers through, and the heartbeat packet
    /// that pokes (set once the mesh is connected).
    pokers: OnceLock<(Vec<Option<Arc<Out>>>, Bytes)>,
}

impl Rings {
    /// Rings over `own` (this rank's segment) and the peers' `segs`.
    pub(crate) fn new(
        me: usize,
        own: Arc<Segment>,
        segs: Vec<Option<Arc<Segment>>>,
        shm: Option<Arc<Shm>>,
        inbox: Arc<Inbox>,
    ) -> Result<Rings, String> {
        let n = segs.len();
        let mut tx = Vec::with_capacity(n);
        for s in &segs {
            tx.push(match s {
                Some(s) => Some(Mutex::new(Tx::new(me, s)?)),
                None => None,
            });
        }
        let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
        let local = segs.iter().filter(|s| s.is_some()).count() + 1;
        Ok(Rings {
            me,
            seen: AtomicU32::new(own.bell_now().wrapping_sub(1)),
            own,
            segs,
            tx,
            rx: Mutex::new(Inbound {
                rings: (0..n).map(|_| Rx::default()).collect(),
                intake: None,
            }),
            dead: (0..n).map(|_| AtomicBool::new(false)).collect(),
            pending: AtomicUsize::new(0),
            shm,
            inbox,
            crowded: local > cores,
            in_runtime: local < n,
            pokers: OnceLock::new(),
        })
    }

    /// Where packets go once the mesh is connected.
    pub(crate) fn set_intake(&self, intake: Intake) {
        lock(&self.rx).intake = Some(intake);
    }

    /// The NI stopped: the rings read nothing more and let go of the
    /// intake, which holds the NI's shared state, which holds the mesh
    /// that holds them (a cycle that kept a job's sockets and runtime
    /// after it ended).
    pub(crate) fn release(&self) {
        lock(&self.rx).intake = None;
    }

    /// How to poke a peer that sleeps in its runtime: a heartbeat on its
    /// socket.
    pub(crate) fn set_pokers(&self, writers: Vec<Option<Arc<Out>>>, heartbeat: Bytes) {
        let _ = self.pokers.set((writers, heartbeat));
    }

    fn poke(&self, peer: usize) {
        if let Some((writers, beat)) = self.pokers.get() {
            if let Some(Some(out)) = writers.get(peer) {
                out.send_raw(beat.clone());
            }
        }
    }

    /// Remove this rank's segment file (every peer has it mapped).
    pub(crate) fn unlink_own(&self) {
        self.own.unlink();
    }

    /// This rank's place among the ranks of its host (those it has rings
    /// to, and itself), in rank order, and how many they are.
    pub(crate) fn host_place(&self) -> (usize, usize) {
        let before = self.segs[..self.me].iter().filter(|s| s.is_some()).count();
        let all = self.segs.iter().filter(|s| s.is_some()).count() + 1;
        (before, all)
    }

    /// Whether `peer` is reached through a ring.
    pub(crate) fn has(&self, peer: usize) -> bool {
        self.tx.get(peer).is_some_and(|t| t.is_some())
    }

    /// Send `p` to `peer` through its ring. `Err`: the peer's ring index is
    /// impossible (it broke the protocol).
    pub(crate) fn send(&self, peer: usize, p: &Packet) -> Result<(), String> {
        let desc = self.shm.as_ref().and_then(|s| s.describe(&p.payload, peer));
        self.send_by(peer, |t, seg| t.send(seg, p, desc.as_ref()))
    }

    /// Send to `peer` the packet with `header`, `route` and `payload`
    /// (inline: a small payload, never a descriptor), straight from the
    /// caller's bytes.
    pub(crate) fn send_parts(
        &self,
        peer: usize,
        header: Header,
        route: &Route,
        payload: &[u8],
    ) -> Result<(), String> {
        self.send_by(peer, |t, seg| t.send_parts(seg, header, route, payload))
    }

    /// Write to `peer`'s ring with `write` (under its sender lock), then
    /// count what waits for room and poke the owner if it asked.
    fn send_by(
        &self,
        peer: usize,
        write: impl FnOnce(&mut Tx, &Segment) -> Result<Sent, String>,
    ) -> Result<(), String> {
        let (Some(Some(tx)), Some(Some(seg))) = (self.tx.get(peer), self.segs.get(peer)) else {
            return Ok(());
        };
        if self.dead[peer].load(Ordering::Relaxed) {
            return Ok(());
        }
        let mut t = lock(tx);
        let had = t.pending();
        let sent = write(&mut t, seg)?;
        if !had && sent == Sent::Pending {
            self.pending.fetch_add(1, Ordering::AcqRel);
        }
        if t.take_poke() {
            drop(t);
            self.poke(peer);
        }
        Ok(())
    }

    /// Set barrier flag `which` of communicator slot `slot` in `peer`'s
    /// segment to `value`, then ring its bell (its poll then wakes its
    /// waits, which look at their flags).
    pub(crate) fn signal(&self, peer: usize, slot: usize, which: Flag, value: u64) {
        let Some(Some(seg)) = self.segs.get(peer) else {
            return;
        };
        if self.is_dead(peer) {
            return;
        }
        if let Some(f) = seg.flag(self.me, slot, which) {
            f.store(value, Ordering::Release);
        }
        if seg.ring_bell() == Bell::Poke {
            self.poke(peer);
        }
    }

    /// The value `from` last stored in barrier flag `which` of slot `slot`
    /// in this rank's segment (0 if never, or out of range).
    pub(crate) fn flag(&self, from: usize, slot: usize, which: Flag) -> u64 {
        self.own
            .flag(from, slot, which)
            .map_or(0, |f| f.load(Ordering::Acquire))
    }

    /// Whether nothing waits for room (in the rings of living peers).
    pub(crate) fn flushed(&self) -> bool {
        if self.pending.load(Ordering::Acquire) == 0 {
            return true;
        }
        let lost = self.inbox.lost_ranks();
        self.tx.iter().enumerate().all(|(p, t)| {
            t.as_ref()
                .is_none_or(|t| !lock(t).pending() || lost.contains(&p) || self.is_dead(p))
        })
    }

    fn is_dead(&self, p: usize) -> bool {
        self.dead[p].load(Ordering::Relaxed)
    }

    /// Append what waits for room, where there is room now.
    fn flush(&self) -> bool {
        let mut moved = false;
        for (peer, t) in self.tx.iter().enumerate() {
            let (Some(t), Some(Some(seg))) = (t, self.segs.get(peer)) else {
                continue;
            };
            let mut t = lock(t);
            if !t.pending() {
                continue;
            }
            if self.is_dead(peer) {
                t.drop_pending();
                self.pending.fetch_sub(1, Ordering::AcqRel);
                continue;
            }
            let r = t.flush(seg);
            let poke = t.take_poke();
            drop(t);
            if poke {
                self.poke(peer);
            }
            match r {
                Ok(Sent::All) => {
                    moved = true;
                    self.pending.fetch_sub(1, Ordering::AcqRel);
                }
                Ok(Sent::Pending) => {}
                Err(e) => self.violation(peer, e),
            }
        }
        moved
    }

    /// `peer` is lost: give up its rings.
    pub(crate) fn lost(&self, peer: usize) {
        if let Some(d) = self.dead.get(peer) {
            d.store(true, Ordering::Relaxed);
        }
    }

    fn violation(&self, peer: usize, what: String) {
        self.lost(peer);
        if let Some(s) = &self.shm {
            s.holder_lost(peer);
        }
        self.inbox.lost(
            peer,
            format!("protocol violation in its shared-memory ring: {what}"),
        );
    }

    /// Take what `peer`'s ring holds (before acting on its socket), and
    /// append what waits for room: a poke on the socket may be a peer
    /// saying it freed room in its ring.
    pub(crate) fn drain_from(&self, peer: usize) {
        {
            let mut rx = lock(&self.rx);
            self.drain_one(&mut rx, peer);
        }
        // The poke may be for a barrier flag.
        self.inbox.wake();
        if self.pending.load(Ordering::Acquire) > 0 {
            self.flush();
        }
    }

    fn drain_one(&self, rx: &mut Inbound, from: usize) -> bool {
        let (Some(intake), Some(r)) = (rx.intake.as_ref(), rx.rings.get_mut(from)) else {
            return false;
        };
        if self.segs.get(from).is_none_or(|s| s.is_none()) || self.is_dead(from) {
            return false;
        }
        let shm = self.shm.as_ref();
        let mut check = |h: &_| intake.check(h, Some(from)).map(|_| ());
        let mut out = |(p, flags): (Packet, u8)| -> Result<(), String> {
            let data = |host: &dyn super::intake::Host, p: Packet| {
                let p = if flags == FLAG_SHM {
                    super::read::open_shm(p, shm)?
                } else {
                    p
                };
                host.engine_in(from, p, Ambient::Idle)
                    .map_err(|e| format!("bad packet: {e}"))
            };
            match intake.dispatch(from, p, data)? {
                Kind::Bye => Err("a goodbye in a ring (goodbyes go on the socket)".into()),
                _ => Ok(()),
            }
        };
        match r.drain(&self.own, from, &mut check, &mut out) {
            Ok((took, ask)) => {
                if ask {
                    if let Some(Some(seg)) = self.segs.get(from) {
                        if seg.ring_bell() == Bell::Poke {
                            self.poke(from);
                        }
                    }
                }
                took
            }
            Err(e) => {
                self.violation(from, e);
                true
            }
        }
    }
}

/// The inbound side of the rings: each peer's read state and the intake.
struct Inbound {
    rings: Vec<Rx>,
    intake: Option<Intake>,
}

impl Poller for Rings {
    fn poll(&self) -> bool {
        let mut progress = false;
        if self.pending.load(Ordering::Acquire) > 0 {
            progress |= self.flush();
        }
        let bell = self.own.bell_now();
        if bell == self.seen.load(Ordering::Acquire) {
            return progress;
        }
        let Ok(mut rx) = self.rx.try_lock() else {
            return progress;
        };
        self.seen.store(bell, Ordering::Release);
        for from in 0..rx.rings.len() {
            if from != self.me {
                self.drain_one(&mut rx, from);
            }
        }
        // The bell may have rung for a barrier flag rather than a packet:
        // let the waits look, and count it as progress, so that the caller
        // looks before it sleeps (the bell it would sleep on has been seen).
        self.inbox.wake();
        true
    }

    fn park(&self, max: Duration) {
        self.own.sleep(self.seen.load(Ordering::Acquire), max);
    }

    fn wake(&self) {
        // Asleep in the runtime, the owner is woken by the runtime itself.
        let _ = self.own.ring_bell();
    }

    fn crowded(&self) -> bool {
        self.crowded
    }

    fn in_runtime(&self) -> bool {
        self.in_runtime
    }

    fn sleep_begin(&self) -> bool {
        self.own.sleep_in_runtime(self.seen.load(Ordering::Acquire))
    }

    fn sleep_end(&self) {
        self.own.awake();
    }
}
