//! Host memory: where the NI side deposits delivered packets and where the
//! host's blocking calls wait for them. It also keeps what this rank knows of
//! failures: lost peers, mismatched collectives, and a stopped NI.
//!
//! Packets can arrive before the host asks (the NI forwards and delivers without
//! asking its host), so everything is keyed: bcast packets by collective
//! sequence number, a collective's point-to-point messages by (sequence,
//! sender, index), the user's messages by (sender, its message number),
//! multicasts by (source, source's multicast number). Waits are bounded: a wait fails with
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
//!
//! Files: this one (the [`Inbox`] and what the NI side calls), `state.rs`
//! (what is known, by key: packets, reassembly, losses, calls), `wait.rs`
//! (the host's blocking `take_*` calls). The inbox knows no sockets: the
//! NI side calls it, and a waiting host drives the NI through `drive`.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use crate::control::{Control, Fingerprint};
use crate::drive::Drive;
use crate::error::Error;
use crate::sync::lock;
use crate::wire::{comm_base, comm_of, next_in, Kind, Packet};

mod flow;
mod p2p;
mod state;
#[cfg(test)]
mod tests;
mod wait;

pub use flow::{message_cost, pair_window, Class, Post};
pub use p2p::TAG_BYTES;
pub use state::Stamp;
use state::{State, MAX_EARLY_PROBES};
pub use wait::{Probe, Stall};

/// Shared between the NI side (producer: whichever thread drives the NI
/// runtime) and the host's calls (consumer).
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
pub type BcastPackets = std::collections::VecDeque<Packet>;

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

    /// Wake the host: bump the pulse and, only if it sleeps, the condvar.
    /// Also from outside the inbox, when something a wait looks at there
    /// (a barrier flag in shared memory) may have changed.
    pub(crate) fn wake(&self) {
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
                Kind::P2p => notices.extend(st.coll_packet(p)),
                Kind::Msg => st.msg_packet(p),
                Kind::Multicast => State::multicast_packet(&mut st, p, stamp),
                Kind::Bye | Kind::Control | Kind::Heartbeat => {}
            }
        }
        drop(st);
        self.wake();
        notices
    }

    /// NI side: a control message from rank `from`. Returns notices to send.
    pub fn control(&self, from: usize, msg: Control) -> Vec<Control> {
        let mut st = self.lock();
        let mut notices = Vec::new();
        match msg {
            Control::Probe { seq, fp } => {
                if st.calls.contains(seq) {
                    notices.extend(st.check(seq, &fp, from));
                } else if st.last_call(seq).is_none_or(|last| seq > last)
                    && st.early_probe_count < MAX_EARLY_PROBES
                {
                    st.early_probe_count += 1;
                    st.early_probes.entry(seq).or_default().push((from, fp));
                }
            }
            Control::Credit { class, bytes } => {
                if let Some(c) = Class::from_code(class) {
                    st.flow.returned(c, from, bytes);
                }
            }
            Control::Mismatch { seq, op, detail } => {
                // From a member of that communicator only: a rank of another
                // communicator with the same id (a disjoint one) is not.
                let comm = comm_of(seq);
                let e = Error::Mismatch { op, detail };
                if comm != 0
                    && !st.groups.contains_key(&comm)
                    && st.early_mismatch.len() < MAX_EARLY_PROBES
                {
                    st.early_mismatch.entry(comm).or_insert((seq, from, e));
                } else if !st.mismatch.contains_key(&comm) && st.member(comm, from) {
                    tracing::error!(%e, from, "a peer found a mismatched collective");
                    st.mismatch.insert(comm, (seq, e));
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
            // Heard of from a departing peer, now seen here: lost outright.
            if !st.byes.contains(&rank) && st.departed.remove(&rank).is_some() {
                drop(st);
                self.wake();
            }
            return;
        }
        tracing::error!(rank, %reason, "peer lost");
        crate::report::lost(rank, &reason);
        st.lost.push((rank, reason));
        st.flow.forget(rank);
        // Its unfinished multicasts will never finish.
        st.mcast_partial.retain(|(src, _), _| *src != rank);
        st.forget_p2p(rank);
        drop(st);
        self.wake();
    }

    /// NI side: rank `rank` left without `finalize` (its goodbye said so):
    /// it is lost from collectives `next` on, per communicator (the
    /// earlier ones it completed; see [`Goodbye::Departed`]), and
    /// multicasts to it fail. Unlike [`Inbox::lost`], its
    /// multicasts still on the way are kept (it left in order): the `sent`
    /// it sent this rank are taken before the departure is reported.
    pub fn departed(&self, rank: usize, next: &[u64], sent: u32, reason: String) {
        let mut st = self.lock();
        if let Some(d) = st.departed.get_mut(&rank) {
            // Heard of before (a peer's cause): the earliest collective of
            // each communicator holds (one listed once only: its first).
            d.0.retain_mut(|s| {
                let other = next_in(next, comm_of(*s));
                *s = (*s).min(other);
                *s > comm_base(comm_of(*s))
            });
            d.1 = d.1.max(sent);
            drop(st);
            return self.wake();
        }
        if st.byes.contains(&rank) || st.lost.iter().any(|(r, _)| *r == rank) {
            return;
        }
        tracing::error!(rank, %reason, ?next, "peer left without finalize");
        crate::report::lost(rank, &reason);
        st.departed.insert(rank, (next.to_vec(), sent));
        st.lost.push((rank, reason));
        drop(st);
        self.wake();
    }

    /// The mismatches that poisoned this rank's communicators, as the
    /// notices that announce them (a rank leaving after a mismatch repeats it before
    /// its goodbye, so a peer reads the mismatch first, not the departure).
    pub fn mismatch_notices(&self) -> Vec<Control> {
        let st = self.lock();
        let mut v: Vec<Control> = st
            .mismatch
            .values()
            .filter_map(|(seq, e)| match e {
                Error::Mismatch { op, detail } => Some(Control::Mismatch {
                    seq: *seq,
                    op: op.clone(),
                    detail: detail.clone(),
                }),
                _ => None,
            })
            .collect();
        v.sort_by_key(|c| match c {
            Control::Mismatch { seq, .. } => *seq,
            _ => 0,
        });
        v
    }

    /// The world ranks of sub-communicator `comm`'s members, if this rank
    /// is one (`None` for the world, or a communicator it is not in).
    pub fn members(&self, comm: u32) -> Option<Arc<[usize]>> {
        self.lock().groups.get(&comm).cloned()
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
        if let Some(e) = st.collective_blocked(seq) {
            return Err((e, None));
        }
        // History is kept per communicator (the last CALL_HISTORY numbers
        // of `seq`'s): a busy sub-communicator does not push the world's
        // current call out. A call or two leave per call: no scan.
        st.calls.insert(seq, fp);
        let mut notice = None;
        // The maps below are empty on almost every call: look at them only
        // when they hold something (each look hashes).
        if let Some(probes) = (!st.early_probes.is_empty())
            .then(|| st.early_probes.remove(&seq))
            .flatten()
        {
            st.early_probe_count -= probes.len();
            for (from, theirs) in probes {
                notice = notice.or(st.check(seq, &theirs, from));
            }
        }
        if let Some(p) = (!st.bcast.is_empty())
            .then(|| st.bcast.get(&seq))
            .flatten()
            .and_then(|q| q.front())
        {
            let (theirs, root) = (State::bcast_fp(p), p.header.root as usize);
            notice = notice.or(st.check(seq, &theirs, root));
        }
        for (from, theirs) in st.early_p2p_calls(seq) {
            notice = notice.or(st.check(seq, &theirs, from));
        }
        match st.mismatch_of(seq) {
            Some((_, e)) => Err((e.clone(), notice)),
            None => Ok(()),
        }
    }

    /// Host side: this rank is a member of sub-communicator `comm`, whose
    /// members are the world ranks `members`: a loss among them (and only
    /// among them) fails its collectives.
    pub fn add_group(&self, comm: u32, members: Arc<[usize]>) {
        let mut st = self.lock();
        if let Some((seq, from, e)) = st.early_mismatch.remove(&comm) {
            if members.contains(&from) && !st.mismatch.contains_key(&comm) {
                tracing::error!(%e, from, "a peer found a mismatched collective");
                st.mismatch.insert(comm, (seq, e));
            }
        }
        st.groups.insert(comm, members);
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

    /// Host side: the model time of bcast `seq`'s packets taken so far
    /// (fabric mode), forgetting it.
    pub fn take_bcast_model(&self, seq: u64) -> Option<Stamp> {
        let mut st = self.lock();
        // Empty outside a fabric: skip hashing the key.
        if st.bcast_model.is_empty() {
            return None;
        }
        st.bcast_model.remove(&seq)
    }
}
