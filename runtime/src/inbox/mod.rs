//! Host memory: where the NI task deposits delivered packets and where the
//! host's blocking calls wait for them. It also keeps what this rank knows of
//! failures: lost peers, mismatched collectives, and a stopped NI.
//!
//! Packets can arrive before the host asks (the NI forwards and delivers without
//! asking its host), so everything is keyed: bcast packets by collective
//! sequence number, point-to-point packets by (sequence, sender), multicasts by
//! (source, source's multicast number). Waits are bounded: a wait fails with
//! [`Error::Timeout`] when no packet arrives within the configured bound.
//!
//! # Failure bookkeeping (README "Failure semantics")
//! * **Lost peers** ([`Inbox::lost`]): a world collective that starts after a
//!   loss, or is waiting when it happens, fails with `PeerLost` naming the
//!   first lost rank; a multicast to a set containing a lost rank fails the
//!   same way; `recv_multicast` (any source) first returns what has completed,
//!   then reports each lost rank once, then goes on receiving from the living.
//! * **Mismatches** (see [`crate::control`]): this rank's recent collective
//!   calls are kept with their fingerprints; packets, probes and notices are
//!   checked against them. The first mismatch poisons the communicator's
//!   collectives: that call and every later one return the same
//!   `Error::Mismatch`. Multicast keeps working.
//! * **Fatal** ([`Inbox::fatal`]): the NI itself stopped or was refused a
//!   request; everything fails.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::control::{Control, Fingerprint, OpKind};
use crate::drive::Drive;
use crate::error::Error;
use crate::sync::lock;
use crate::wire::{Kind, Packet, Route};
use crate::worms::Worm;

/// How many of this rank's past collective calls are kept for checking late
/// packets and probes.
const CALL_HISTORY: usize = 1024;
/// Most probes kept for collectives this rank has not reached yet.
const MAX_EARLY_PROBES: usize = 4096;

/// A multicast being reassembled. Packets are kept as they come and copied
/// into one buffer only when all have arrived and exactly tile the message,
/// so memory never exceeds what the peer actually sent (a hostile `msg_len`
/// cannot make this rank allocate).
#[derive(Debug, Default)]
struct Partial {
    msg_len: u64,
    pkt_count: u32,
    /// Packets seen (refused ones included).
    got: u32,
    ordinal: u32,
    parts: Vec<(u64, Bytes)>,
    bytes: u64,
    /// Set when the message is refused (too large, inconsistent): its packets
    /// are counted but dropped, and the receiver gets this error in its place.
    refused: Option<Error>,
    /// Model time of the packets so far (fabric mode).
    model: Option<Stamp>,
}

/// A delivered packet's place in model time (fabric mode only): when it was
/// in host memory plus the host's receive overhead, and when its message
/// was posted at the source. Both in cycles of the fabric's cost model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stamp {
    /// Earliest completion of the message at this host, given this packet.
    pub done: u64,
    /// When the message was posted at its source.
    pub post: u64,
}

impl Stamp {
    /// Fold in another packet of the same message.
    fn merge(a: Option<Stamp>, b: Option<Stamp>) -> Option<Stamp> {
        match (a, b) {
            (Some(a), Some(b)) => Some(Stamp {
                done: a.done.max(b.done),
                post: a.post.min(b.post),
            }),
            (a, b) => a.or(b),
        }
    }

    /// Model latency in cycles: completion here minus the post at the source.
    pub fn latency(&self) -> u64 {
        self.done.saturating_sub(self.post)
    }
}

impl Partial {
    fn assemble(mut self, source: usize) -> Result<Bytes, Error> {
        if let Some(e) = self.refused {
            return Err(e);
        }
        if self.parts.len() == 1 && self.parts[0].0 == 0 && self.bytes == self.msg_len {
            return Ok(self.parts.pop().map(|p| p.1).unwrap_or_default());
        }
        self.parts.sort_by_key(|p| p.0);
        let mut at = 0u64;
        let mut buf = Vec::with_capacity(self.bytes as usize);
        for (off, data) in &self.parts {
            if *off != at {
                return Err(Error::Protocol(format!(
                    "multicast from rank {source}: packets do not tile the message \
                     (byte {at} expected, {off} found)"
                )));
            }
            buf.extend_from_slice(data);
            at += data.len() as u64;
        }
        if at != self.msg_len {
            return Err(Error::Protocol(format!(
                "multicast from rank {source}: {at} of {} bytes arrived",
                self.msg_len
            )));
        }
        Ok(Bytes::from(buf))
    }
}

/// A complete (or refused) multicast waiting for the host.
type Ready = (u64, Result<Bytes, Error>, Option<Stamp>);

#[derive(Debug, Default)]
struct State {
    me: usize,
    max_message: u64,
    bcast: HashMap<u64, VecDeque<Packet>>,
    p2p: HashMap<(u64, usize), VecDeque<Bytes>>,
    mcast_partial: HashMap<(usize, u64), Partial>,
    /// Complete multicasts per source, by ordinal, with their completion number.
    mcast_ready: HashMap<usize, BTreeMap<u32, Ready>>,
    mcast_next: HashMap<usize, u32>,
    /// Model time of each bcast's packets so far, by sequence number.
    bcast_model: HashMap<u64, Stamp>,
    completions: u64,
    /// Packets delivered so far (progress, for timeouts).
    deliveries: u64,
    fatal: Option<Error>,
    /// Lost peers, in the order they were found, with the reason.
    lost: Vec<(usize, String)>,
    /// Lost ranks already reported to the user by some call: `recv_multicast`
    /// does not report them again.
    acked: HashSet<usize>,
    byes: HashSet<usize>,
    /// This rank's collective calls (current and recent) by sequence number.
    calls: BTreeMap<u64, Fingerprint>,
    /// Probes for calls this rank has not made yet.
    early_probes: HashMap<u64, Vec<(usize, Fingerprint)>>,
    early_probe_count: usize,
    /// The first mismatch found: poisons every later collective.
    mismatch: Option<Error>,
}

impl State {
    /// Why a world collective cannot go on, if it cannot.
    fn collective_blocked(&mut self) -> Option<Error> {
        if let Some(e) = &self.fatal {
            return Some(e.clone());
        }
        if let Some(e) = &self.mismatch {
            return Some(e.clone());
        }
        let (rank, reason) = self.lost.first()?.clone();
        Some(self.report_lost(rank, reason))
    }

    /// The error for lost rank `rank`, which the user now knows about.
    fn report_lost(&mut self, rank: usize, reason: String) -> Error {
        self.acked.insert(rank);
        Error::PeerLost { rank, reason }
    }

    /// Record a mismatch found here in collective `seq`; returns the notice
    /// to send to every peer (none if one was already recorded).
    fn found_mismatch(&mut self, seq: u64, fp: &Fingerprint, detail: String) -> Option<Control> {
        if self.mismatch.is_some() {
            return None;
        }
        let op = fp.op_name(seq);
        tracing::error!(%op, %detail, "mismatched collective");
        self.mismatch = Some(Error::Mismatch {
            op: op.clone(),
            detail: detail.clone(),
        });
        Some(Control::Mismatch { seq, op, detail })
    }

    /// Check a peer's call of `seq` against this rank's, if this rank made it.
    fn check(&mut self, seq: u64, theirs: &Fingerprint, them: usize) -> Option<Control> {
        let mine = *self.calls.get(&seq)?;
        let detail = mine.differs(self.me, theirs, them)?;
        self.found_mismatch(seq, &mine, detail)
    }

    /// The call a bcast packet was sent for (the root's).
    fn bcast_fp(p: &Packet) -> Fingerprint {
        let tree = match Worm::of_route(&p.route) {
            Some(Ok(w)) => w.tree_code(),
            _ => p.route.tree_code().unwrap_or((u8::MAX, 0)),
        };
        Fingerprint {
            op: OpKind::Bcast,
            root: p.header.root,
            len: p.header.msg_len,
            tree,
        }
    }
}

/// Shared between the NI task (producer) and the host (consumer).
#[derive(Debug, Default)]
pub struct Inbox {
    state: Mutex<State>,
    cv: Condvar,
    /// Bumped on every change a waiter may care about; a host driving the
    /// NI polls it without taking the lock.
    pulse: AtomicU64,
    /// Host threads blocked on `cv`: the NI skips the futex wake when none is.
    sleepers: AtomicUsize,
    /// Wakes a host that waits while driving the NI runtime.
    notify: tokio::sync::Notify,
    /// The NI runtime, which a waiting host drives itself (see `drive`).
    driver: Mutex<Option<Arc<Drive>>>,
}

/// What a bcast wait yields: packets for that sequence number.
pub type BcastPackets = Vec<Packet>;

impl Inbox {
    /// The inbox of rank `me`, accepting multicasts up to `max_message` bytes.
    pub fn new(me: usize, max_message: u64) -> Inbox {
        Inbox {
            state: Mutex::new(State {
                me,
                max_message,
                ..State::default()
            }),
            cv: Condvar::new(),
            pulse: AtomicU64::new(0),
            sleepers: AtomicUsize::new(0),
            notify: tokio::sync::Notify::new(),
            driver: Mutex::new(None),
        }
    }

    /// From now on a waiting host drives the NI runtime itself (`None`:
    /// it sleeps on the condvar while the NI runs elsewhere).
    pub(crate) fn set_driver(&self, d: Option<Arc<Drive>>) {
        *lock(&self.driver) = d;
    }

    fn driver(&self) -> Option<Arc<Drive>> {
        lock(&self.driver).clone()
    }

    /// Drive the NI (on the caller's thread) until the pulse moves from
    /// `pulse` or `dur` passes; poll for the first `spin` of it.
    async fn until_pulse(&self, pulse: u64, dur: Duration, spin: Duration) {
        let start = Instant::now();
        let spin = spin.min(dur);
        while start.elapsed() < spin {
            if self.pulse.load(Ordering::Acquire) != pulse {
                return;
            }
            std::thread::yield_now();
            tokio::task::yield_now().await;
        }
        // A wake between this check and the wait leaves a permit in
        // `notify`, so it is not lost.
        if self.pulse.load(Ordering::Acquire) != pulse {
            return;
        }
        let left = dur.saturating_sub(start.elapsed());
        let _ = tokio::time::timeout(left, self.notify.notified()).await;
    }

    /// Wake the host: bump the pulse and, only if it sleeps, the condvar.
    fn wake(&self) {
        self.pulse.fetch_add(1, Ordering::Release);
        self.notify.notify_one();
        if self.sleepers.load(Ordering::Acquire) > 0 {
            self.cv.notify_all();
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A poisoned lock only means another thread panicked mid-update; the
        // state is still the best we have.
        lock(&self.state)
    }

    /// [`Inbox::deliver_stamped`] without model time (the tests' shorthand).
    #[cfg(test)]
    pub fn deliver(&self, packets: impl IntoIterator<Item = Packet>) -> Vec<Control> {
        self.deliver_stamped(packets.into_iter().map(|p| (p, None)))
    }

    /// NI side: deliver a batch of packets, each with its model time in
    /// fabric mode. Returns the mismatch notices to send to every peer.
    pub fn deliver_stamped(
        &self,
        packets: impl IntoIterator<Item = (Packet, Option<Stamp>)>,
    ) -> Vec<Control> {
        let mut notices = Vec::new();
        let mut st = self.lock();
        for (p, stamp) in packets {
            st.deliveries += 1;
            let h = p.header;
            match h.kind {
                Kind::Bcast => {
                    let theirs = State::bcast_fp(&p);
                    notices.extend(st.check(h.seq, &theirs, h.root as usize));
                    st.bcast.entry(h.seq).or_default().push_back(p);
                    if let Some(s) = stamp {
                        let m = st.bcast_model.entry(h.seq).or_insert(s);
                        *m = Stamp::merge(Some(*m), Some(s)).unwrap_or(s);
                    }
                }
                Kind::P2p => {
                    let from = h.source as usize;
                    notices.extend(st.check(h.seq, &Fingerprint::barrier(), from));
                    st.p2p
                        .entry((h.seq, from))
                        .or_default()
                        .push_back(p.payload);
                }
                Kind::Multicast => Self::multicast_packet(&mut st, p, stamp),
                Kind::Bye | Kind::Control | Kind::Heartbeat => {}
            }
        }
        drop(st);
        self.wake();
        notices
    }

    fn multicast_packet(st: &mut State, p: Packet, stamp: Option<Stamp>) {
        let h = p.header;
        let ordinal = match &p.route {
            Route::List { members, .. } => members.first().map_or(0, |m| m.ordinal),
            _ => 0,
        };
        let source = h.root as usize;
        let key = (source, h.seq);
        let max = st.max_message;
        let part = st.mcast_partial.entry(key).or_insert_with(|| Partial {
            msg_len: h.msg_len,
            pkt_count: h.pkt_count,
            ordinal,
            refused: (h.msg_len > max).then(|| {
                Error::InvalidArgument(format!(
                    "rank {source} multicast {} bytes, more than this rank accepts \
                     (MCAST_MAX_MESSAGE_BYTES={max})",
                    h.msg_len
                ))
            }),
            ..Partial::default()
        });
        part.got += 1;
        part.model = Stamp::merge(part.model, stamp);
        if part.refused.is_none() {
            if h.msg_len != part.msg_len || h.pkt_count != part.pkt_count {
                part.refused = Some(Error::Protocol(format!(
                    "multicast from rank {source}: packets disagree on its length"
                )));
            } else if part.bytes + p.payload.len() as u64 > part.msg_len {
                part.refused = Some(Error::Protocol(format!(
                    "multicast from rank {source}: more than its {} bytes arrived",
                    part.msg_len
                )));
            } else {
                part.bytes += p.payload.len() as u64;
                part.parts.push((h.offset, p.payload));
            }
            if part.refused.is_some() {
                part.parts = Vec::new();
            }
        }
        let done = part.got >= part.pkt_count;
        if done {
            let part = st.mcast_partial.remove(&key).unwrap_or_default();
            let ordinal = part.ordinal;
            let model = part.model;
            let data = part.assemble(source);
            st.completions += 1;
            let n = st.completions;
            st.mcast_ready
                .entry(source)
                .or_default()
                .insert(ordinal, (n, data, model));
        }
    }

    /// NI side: a control message from rank `from`. Returns notices to send.
    pub fn control(&self, from: usize, msg: Control) -> Vec<Control> {
        let mut st = self.lock();
        let mut notices = Vec::new();
        match msg {
            Control::Probe { seq, fp } => {
                if st.calls.contains_key(&seq) {
                    notices.extend(st.check(seq, &fp, from));
                } else if st.calls.keys().next_back().is_none_or(|&last| seq > last)
                    && st.early_probe_count < MAX_EARLY_PROBES
                {
                    st.early_probe_count += 1;
                    st.early_probes.entry(seq).or_default().push((from, fp));
                }
            }
            Control::Mismatch { seq: _, op, detail } => {
                if st.mismatch.is_none() {
                    tracing::error!(%op, %detail, from, "a peer found a mismatched collective");
                    st.mismatch = Some(Error::Mismatch { op, detail });
                }
            }
        }
        drop(st);
        self.wake();
        notices
    }

    /// NI side: the NI cannot go on; every current and later call fails.
    pub fn fatal(&self, err: Error) {
        let mut st = self.lock();
        if st.fatal.is_none() {
            tracing::error!(%err, "runtime failure");
            st.fatal = Some(err);
        }
        drop(st);
        self.wake();
    }

    /// NI side: rank `rank` is gone (its connection broke without a goodbye,
    /// it fell silent, or it broke the protocol).
    pub fn lost(&self, rank: usize, reason: String) {
        let mut st = self.lock();
        if st.byes.contains(&rank) || st.lost.iter().any(|(r, _)| *r == rank) {
            return;
        }
        tracing::error!(rank, %reason, "peer lost");
        st.lost.push((rank, reason));
        // Its unfinished multicasts will never finish.
        st.mcast_partial.retain(|(src, _), _| *src != rank);
        drop(st);
        self.wake();
    }

    /// The ranks lost so far, in the order they were found.
    pub fn lost_ranks(&self) -> Vec<usize> {
        self.lock().lost.iter().map(|(r, _)| *r).collect()
    }

    /// NI side: a peer said goodbye (an orderly close follows).
    pub fn mark_bye(&self, rank: usize) {
        self.lock().byes.insert(rank);
    }

    /// Whether `rank` closed in an orderly way.
    pub fn said_bye(&self, rank: usize) -> bool {
        self.lock().byes.contains(&rank)
    }

    /// Host side: this rank enters collective `seq` with call `fp`. Fails if
    /// collectives cannot run (a lost peer, an earlier mismatch, a stopped
    /// NI), or if what already arrived for `seq` disagrees with `fp`; in the
    /// latter case the returned notice must be sent to every peer.
    pub fn begin(&self, seq: u64, fp: Fingerprint) -> Result<(), (Error, Option<Control>)> {
        let mut st = self.lock();
        if let Some(e) = st.collective_blocked() {
            return Err((e, None));
        }
        st.calls.insert(seq, fp);
        while st.calls.len() > CALL_HISTORY {
            st.calls.pop_first();
        }
        let mut notice = None;
        if let Some(probes) = st.early_probes.remove(&seq) {
            st.early_probe_count -= probes.len();
            for (from, theirs) in probes {
                notice = notice.or(st.check(seq, &theirs, from));
            }
        }
        if let Some(p) = st.bcast.get(&seq).and_then(|q| q.front()) {
            let (theirs, root) = (State::bcast_fp(p), p.header.root as usize);
            notice = notice.or(st.check(seq, &theirs, root));
        }
        if let Some(&(_, from)) = st.p2p.keys().find(|(s, _)| *s == seq) {
            notice = notice.or(st.check(seq, &Fingerprint::barrier(), from));
        }
        match &st.mismatch {
            Some(e) => Err((e.clone(), notice)),
            None => Ok(()),
        }
    }

    /// Host side: a multicast to `dests` may go out (none of them is lost).
    pub fn check_dests(&self, dests: &[usize]) -> Result<(), Error> {
        let mut st = self.lock();
        if let Some(e) = &st.fatal {
            return Err(e.clone());
        }
        match st.lost.iter().find(|(r, _)| dests.contains(r)).cloned() {
            Some((rank, reason)) => Err(st.report_lost(rank, reason)),
            None => Ok(()),
        }
    }

    /// Wait until `ready` returns `Some`, or it fails, or `timeout` passes
    /// without any delivery. `stall` runs once, `stall_after` into the wait
    /// if it has not finished by then.
    fn wait<T>(
        &self,
        timeout: Duration,
        what: impl Fn() -> (String, String),
        stall: &mut Option<Stall<'_>>,
        mut ready: impl FnMut(&mut State) -> Result<Option<T>, Error>,
    ) -> Result<T, Error> {
        let driver = self.driver();
        let mut st = self.lock();
        let start = Instant::now();
        let mut deadline = start + timeout;
        let mut seen = st.deliveries;
        let mut spun_at = None;
        loop {
            if let Some(v) = ready(&mut st)? {
                return Ok(v);
            }
            let now = Instant::now();
            // Any delivery counts as progress and restarts the clock.
            let progress = st.deliveries;
            if progress != seen {
                seen = progress;
                deadline = now + timeout;
            }
            if now >= deadline {
                let (op, detail) = what();
                return Err(Error::Timeout {
                    op,
                    after: timeout,
                    detail,
                });
            }
            let mut wake = deadline;
            if let Some(s) = stall.as_mut() {
                let at = s.since + s.after;
                if now >= at {
                    // Not under the lock: sending drives the NI on this
                    // thread, and the NI delivers into this inbox.
                    drop(st);
                    (s.run)();
                    *stall = None;
                    st = self.lock();
                    continue;
                } else {
                    wake = wake.min(at);
                }
            }
            if let Some(d) = &driver {
                let spin = if spun_at != Some(seen) {
                    spun_at = Some(seen);
                    d.spin()
                } else {
                    Duration::ZERO
                };
                let pulse = self.pulse.load(Ordering::Acquire);
                drop(st);
                d.run(self.until_pulse(pulse, wake - now, spin));
                st = self.lock();
                continue;
            }
            // No NI to drive (a lone rank, or after shutdown): sleep.
            // The sleeper count is raised under the lock, so a waker that
            // changed the state after `ready` looked sees it and notifies.
            self.sleepers.fetch_add(1, Ordering::AcqRel);
            st = self
                .cv
                .wait_timeout(st, wake - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
            self.sleepers.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// Host side: take whatever bcast packets of `seq` have arrived, waiting for
    /// at least one.
    pub fn take_bcast(
        &self,
        seq: u64,
        timeout: Duration,
        root: usize,
        stall: &mut Option<Stall<'_>>,
    ) -> Result<BcastPackets, Error> {
        self.wait(
            timeout,
            || {
                (
                    format!("bcast #{seq}"),
                    format!("waiting for packets from root {root}"),
                )
            },
            stall,
            |st| {
                if let Some(e) = &st.mismatch {
                    return Err(e.clone());
                }
                if let Some(q) = st.bcast.remove(&seq).filter(|q| !q.is_empty()) {
                    return Ok(Some(q.into_iter().collect()));
                }
                st.collective_blocked().map_or(Ok(None), Err)
            },
        )
    }

    /// Host side: the model time of bcast `seq`'s packets taken so far
    /// (fabric mode), forgetting it.
    pub fn take_bcast_model(&self, seq: u64) -> Option<Stamp> {
        self.lock().bcast_model.remove(&seq)
    }

    /// Host side: wait for a point-to-point message of `seq` from `from`.
    pub fn take_p2p(
        &self,
        seq: u64,
        from: usize,
        timeout: Duration,
        stall: &mut Option<Stall<'_>>,
    ) -> Result<Bytes, Error> {
        self.wait(
            timeout,
            || {
                (
                    format!("barrier #{seq}"),
                    format!("waiting for rank {from}"),
                )
            },
            stall,
            |st| {
                if let Some(e) = &st.mismatch {
                    return Err(e.clone());
                }
                let key = (seq, from);
                let v = st.p2p.get_mut(&key).and_then(|q| q.pop_front());
                if st.p2p.get(&key).is_some_and(|q| q.is_empty()) {
                    st.p2p.remove(&key);
                }
                match v {
                    Some(v) => Ok(Some(v)),
                    None => st.collective_blocked().map_or(Ok(None), Err),
                }
            },
        )
    }

    /// Host side: wait for the next complete multicast, from `from` or (with
    /// `None`) from any source. Each source's multicasts come out in the
    /// order that source sent them; among sources, the one that completed
    /// first. When nothing is ready: waiting on a lost source fails with its
    /// `PeerLost`; waiting on any source reports each lost peer once (unless
    /// another call already reported it), then goes on for the living.
    pub fn take_multicast(
        &self,
        from: Option<usize>,
        timeout: Duration,
    ) -> Result<(usize, Bytes, Option<Stamp>), Error> {
        let mut none = None;
        self.wait(
            timeout,
            || match from {
                Some(src) => (
                    "recv_multicast_from".into(),
                    format!("no multicast arrived from rank {src}"),
                ),
                None => ("recv_multicast".into(), "no multicast arrived".into()),
            },
            &mut none,
            |st| {
                let mut best: Option<(u64, usize, u32)> = None;
                for (src, ready) in &st.mcast_ready {
                    if from.is_some_and(|f| f != *src) {
                        continue;
                    }
                    let next = st.mcast_next.get(src).copied().unwrap_or(0);
                    if let Some((n, _, _)) = ready.get(&next) {
                        if best.is_none_or(|(bn, _, _)| *n < bn) {
                            best = Some((*n, *src, next));
                        }
                    }
                }
                if let Some((_, src, ord)) = best {
                    let data = st
                        .mcast_ready
                        .get_mut(&src)
                        .and_then(|r| r.remove(&ord))
                        .map_or(Ok((Bytes::new(), None)), |(_, d, m)| d.map(|d| (d, m)));
                    st.mcast_next.insert(src, ord.wrapping_add(1));
                    return data.map(|(d, m)| Some((src, d, m)));
                }
                if let Some(e) = &st.fatal {
                    return Err(e.clone());
                }
                let unreported = st
                    .lost
                    .iter()
                    .find(|(r, _)| from.map_or(!st.acked.contains(r), |f| f == *r));
                if let Some((rank, reason)) = unreported.cloned() {
                    return Err(st.report_lost(rank, reason));
                }
                Ok(None)
            },
        )
    }
}

/// Something to do once if a wait stalls (send a mismatch probe).
pub struct Stall<'a> {
    pub since: Instant,
    pub after: Duration,
    pub run: Box<dyn FnMut() + 'a>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree_kind::TreeKind;
    use crate::wire::Header;
    use mcast_algorithms::Shape;

    fn mpkt(
        seq: u64,
        msg_len: u64,
        offset: u64,
        pkt_idx: u32,
        pkt_count: u32,
        data: &[u8],
    ) -> Packet {
        let mut header = Header::new(Kind::Multicast, 1, seq, 0, 0, msg_len);
        header.offset = offset;
        header.pkt_idx = pkt_idx;
        header.pkt_count = pkt_count;
        header.payload_len = data.len() as u32;
        Packet {
            header,
            route: Route::List {
                tree: TreeKind::Chain(Shape::Flat),
                members: vec![crate::wire::Member {
                    rank: 1,
                    ordinal: seq as u32,
                }],
            },
            payload: Bytes::copy_from_slice(data),
        }
    }

    #[test]
    fn multicast_reassembles_out_of_order() {
        let ib = Inbox::new(1, 1 << 20);
        ib.deliver([mpkt(0, 6, 3, 1, 2, b"def"), mpkt(0, 6, 0, 0, 2, b"abc")]);
        let (src, data, _) = ib.take_multicast(None, Duration::from_secs(1)).unwrap();
        assert_eq!((src, &data[..]), (0, &b"abcdef"[..]));
    }

    #[test]
    fn a_huge_length_is_refused_without_allocating() {
        let ib = Inbox::new(1, 1 << 20);
        // Claims 2^60 bytes in two packets; only 3 bytes ever arrive.
        ib.deliver([
            mpkt(0, 1 << 60, 0, 0, 2, b"abc"),
            mpkt(0, 1 << 60, 3, 1, 2, b"d"),
        ]);
        let err = ib.take_multicast(None, Duration::from_secs(1)).unwrap_err();
        assert!(
            matches!(err, Error::InvalidArgument(ref m) if m.contains("MCAST_MAX_MESSAGE_BYTES")),
            "{err}"
        );
        // The next multicast from the same source still comes through.
        ib.deliver([mpkt(1, 2, 0, 0, 1, b"ok")]);
        assert_eq!(
            &ib.take_multicast(None, Duration::from_secs(1)).unwrap().1[..],
            b"ok"
        );
    }

    #[test]
    fn one_source_can_be_waited_for_while_others_wait() {
        let ib = Inbox::new(1, 1 << 20);
        let from = |src: u32, data: &[u8]| {
            let mut p = mpkt(0, data.len() as u64, 0, 0, 1, data);
            p.header.root = src;
            p.header.source = src;
            p
        };
        ib.deliver([from(2, b"two"), from(3, b"three")]);
        let (src, d, _) = ib.take_multicast(Some(3), Duration::from_secs(1)).unwrap();
        assert_eq!((src, &d[..]), (3, &b"three"[..]));
        assert!(matches!(
            ib.take_multicast(Some(3), Duration::from_millis(10)),
            Err(Error::Timeout { .. })
        ));
        assert_eq!(
            &ib.take_multicast(None, Duration::from_secs(1)).unwrap().1[..],
            b"two"
        );
    }

    #[test]
    fn gaps_are_refused() {
        let ib = Inbox::new(1, 1 << 20);
        ib.deliver([mpkt(0, 6, 0, 0, 2, b"abc"), mpkt(0, 6, 0, 1, 2, b"abc")]);
        assert!(matches!(
            ib.take_multicast(None, Duration::from_secs(1)),
            Err(Error::Protocol(_))
        ));
    }

    #[test]
    fn lost_peers_are_reported_once_to_recv_multicast() {
        let ib = Inbox::new(1, 1 << 20);
        ib.deliver([mpkt(0, 2, 0, 0, 1, b"hi")]);
        ib.lost(3, "gone".into());
        // What completed comes first, then the loss, then a timeout.
        assert_eq!(
            &ib.take_multicast(None, Duration::from_millis(10))
                .unwrap()
                .1[..],
            b"hi"
        );
        assert!(matches!(
            ib.take_multicast(None, Duration::from_millis(10)),
            Err(Error::PeerLost { rank: 3, .. })
        ));
        assert!(matches!(
            ib.take_multicast(None, Duration::from_millis(10)),
            Err(Error::Timeout { .. })
        ));
        assert!(ib.check_dests(&[2, 4]).is_ok());
        // Waiting on the lost source itself always names it.
        assert!(matches!(
            ib.take_multicast(Some(3), Duration::from_millis(10)),
            Err(Error::PeerLost { rank: 3, .. })
        ));
        // A loss another call reported is not reported again.
        ib.lost(5, "gone too".into());
        assert!(matches!(
            ib.check_dests(&[5]),
            Err(Error::PeerLost { rank: 5, .. })
        ));
        assert!(matches!(
            ib.take_multicast(None, Duration::from_millis(10)),
            Err(Error::Timeout { .. })
        ));
        assert!(matches!(
            ib.check_dests(&[3]),
            Err(Error::PeerLost { rank: 3, .. })
        ));
        assert!(matches!(
            ib.begin(0, Fingerprint::barrier()),
            Err((Error::PeerLost { rank: 3, .. }, None))
        ));
    }

    #[test]
    fn probes_find_mismatches_before_and_after_the_call() {
        let a = Fingerprint::bcast(0, 8, TreeKind::Chain(Shape::Flat));
        let b = Fingerprint::bcast(1, 8, TreeKind::Chain(Shape::Flat));
        // Probe first, call later.
        let ib = Inbox::new(2, 1 << 20);
        assert!(ib.control(1, Control::Probe { seq: 0, fp: b }).is_empty());
        let (err, notice) = ib.begin(0, a).unwrap_err();
        assert!(matches!(err, Error::Mismatch { .. }), "{err}");
        assert!(matches!(notice, Some(Control::Mismatch { seq: 0, .. })));
        // Call first, probe later; then every collective is poisoned.
        let ib = Inbox::new(2, 1 << 20);
        ib.begin(0, a).unwrap();
        assert!(ib.control(1, Control::Probe { seq: 0, fp: a }).is_empty());
        let notices = ib.control(1, Control::Probe { seq: 0, fp: b });
        assert_eq!(notices.len(), 1);
        assert!(ib.begin(1, Fingerprint::barrier()).is_err());
    }

    #[test]
    fn notices_poison_collectives() {
        let ib = Inbox::new(0, 1 << 20);
        ib.begin(0, Fingerprint::barrier()).unwrap();
        ib.control(
            2,
            Control::Mismatch {
                seq: 0,
                op: "barrier #0".into(),
                detail: "x".into(),
            },
        );
        let mut none = None;
        assert!(matches!(
            ib.take_p2p(0, 1, Duration::from_secs(5), &mut none),
            Err(Error::Mismatch { .. })
        ));
    }
}
