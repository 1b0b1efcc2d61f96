//! The host's blocking calls: wait for what they need, driving the NI
//! runtime meanwhile (see `drive`), with a progress timeout and a stall probe.

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::flow::{packet_cost, Class};
use super::{BcastPackets, Inbox, Stamp, State};
use crate::control::Fingerprint;
use crate::drive::{doze, Drive, Poller};
use crate::error::Error;

impl Inbox {
    /// Drive the NI (on the caller's thread) until the pulse moves from
    /// `pulse` or `dur` passes; poll for the first `spin` of it.
    async fn until_pulse(&self, d: &Drive, pulse: u64, dur: Duration, spin: Duration) {
        if let Some(p) = d.poller() {
            return self.until_pulse_polling(d, &**p, pulse, dur, spin).await;
        }
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
        d.host_sleeps(true);
        let _ = tokio::time::timeout(left, self.notify.notified()).await;
        d.host_sleeps(false);
    }

    /// `until_pulse` with packets to poll besides the sockets (the
    /// shared-memory rings): poll them in a tight loop for `spin` (yielding
    /// the CPU now and then, at every poll when ranks outnumber cores, and
    /// letting the runtime look at its sockets every few dozen polls), then
    /// sleep on their doorbell, a nap at a time.
    async fn until_pulse_polling(
        &self,
        d: &Drive,
        p: &dyn Poller,
        pulse: u64,
        dur: Duration,
        spin: Duration,
    ) {
        let moved = || self.pulse.load(Ordering::Acquire) != pulse;
        let start = Instant::now();
        let spin = spin.min(dur);
        let crowded = p.crowded();
        let in_runtime = p.in_runtime();
        let mut idle = 0u32;
        loop {
            if moved() {
                return;
            }
            if p.poll() {
                if d.turn_due() {
                    d.turn().await;
                }
                continue;
            }
            // The clock, a system call and the runtime's turn cost more
            // than a poll: look at them only every few polls.
            idle = idle.wrapping_add(1);
            if crowded || in_runtime {
                // Ranks outnumber cores: let the others run (they are
                // likely the ones this rank waits for). With peers on other
                // hosts, as on sockets alone: the cores may be shared with
                // more than this host's ranks (hosts in containers or
                // namespaces), and a hop over the network costs more than
                // the yield anyway.
                std::thread::yield_now();
            }
            if in_runtime {
                // Peers on other hosts: their sockets need the runtime as
                // often as the rings need polling.
                d.turn().await;
            } else if !crowded {
                std::hint::spin_loop();
                if !idle.is_multiple_of(32) {
                    continue;
                }
            }
            let now = Instant::now();
            let spent = now.saturating_duration_since(start);
            if spent >= dur {
                return;
            }
            if spent < spin {
                if d.turn_due_at(now) {
                    d.turn().await;
                }
                continue;
            }
            // In the runtime, a local peer that publishes now pokes this
            // rank's socket; the reader drains the ring and the delivery
            // notifies.
            d.host_sleeps(true);
            doze(p, dur - spent, self.notify.notified()).await;
            d.host_sleeps(false);
            d.turn().await;
        }
    }

    /// Wait until `ready` returns `Some`, or it fails, or `timeout` passes
    /// without progress (`progress`, a counter, not moving). `stall` runs
    /// once, `stall_after` into the wait if it has not finished by then.
    pub(super) fn wait<T>(
        &self,
        timeout: Duration,
        progress: fn(&State) -> u64,
        what: impl Fn() -> (String, String),
        stall: &mut Option<Stall<'_>>,
        mut ready: impl FnMut(&mut State) -> Result<Option<T>, Error>,
    ) -> Result<T, Error> {
        let mut st = self.lock();
        let mut seen = progress(&st);
        // Who drives the NI, and how long to poll after the last progress
        // before sleeping: fetched at the first look that finds nothing
        // (what is ready at once takes no lock and no reference more). It
        // is fetched under the state's lock, which is safe: nothing takes
        // the state's lock while it holds the driver's.
        let mut driving: Option<(Option<Arc<Drive>>, Duration)> = None;
        // The deadline and the end of polling, set at the first look that
        // found nothing (what is ready at once reads no clock) and again
        // at every progress.
        let mut limits: Option<(Instant, Instant)> = None;
        loop {
            // The pulse before `ready` looks: a wake after it (for the
            // inbox, or for a barrier flag outside it, which `ready` may
            // have missed) moves the pulse from this, so the drive below
            // returns at once instead of sleeping through it.
            let pulse = self.pulse.load(Ordering::Acquire);
            if let Some(v) = ready(&mut st)? {
                return Ok(v);
            }
            let (driver, spin) = driving.get_or_insert_with(|| {
                let d = self.driver();
                let spin = d.as_ref().map_or(Duration::ZERO, |d| d.spin());
                (d, spin)
            });
            let (driver, spin) = (&*driver, *spin);
            let now = Instant::now();
            if let Some(s) = stall.as_mut() {
                s.since.get_or_insert(now);
            }
            let now_at = progress(&st);
            let (deadline, spin_until) = match limits {
                Some(l) if now_at == seen => l,
                _ => {
                    seen = now_at;
                    *limits.insert((now + timeout, now + spin))
                }
            };
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
                let at = s.since.unwrap_or(now) + s.after;
                if now >= at {
                    // Not under the lock: sending drives the NI on this
                    // thread, and the NI delivers into this inbox.
                    drop(st);
                    s.probe.probe(s.seq, s.fp);
                    *stall = None;
                    st = self.lock();
                    continue;
                } else {
                    wake = wake.min(at);
                }
            }
            if let Some(d) = driver {
                let spin = spin_until.saturating_duration_since(now);
                drop(st);
                let moved = || self.pulse.load(Ordering::Acquire) != pulse;
                if d.poll_host(&moved, spin.min(wake - now), now) {
                    st = self.lock();
                    continue;
                }
                // The runtime gets what is left of the spin and of the
                // wait, not all of it again: the polling above spent it.
                let now = Instant::now();
                if now < wake {
                    let spin = spin_until.saturating_duration_since(now);
                    d.run(self.until_pulse(d, pulse, wake - now, spin));
                }
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

    /// Host side: wait until `done` holds (it looks at something outside
    /// the inbox, barrier flags in shared memory, whose writers ring this
    /// rank's bell: see [`Inbox::wake`]), or collective `seq` is blocked
    /// (a lost member, a mismatch), or `timeout` passes without progress.
    pub fn wait_until(
        &self,
        seq: u64,
        timeout: Duration,
        what: &dyn Fn() -> (String, String),
        stall: &mut Option<Stall<'_>>,
        done: &dyn Fn() -> bool,
    ) -> Result<(), Error> {
        self.wait(timeout, State::progress, what, stall, |st| {
            if done() {
                return Ok(Some(()));
            }
            match st.collective_blocked(seq) {
                Some(e) => Err(e),
                None => Ok(None),
            }
        })
    }

    /// Host side: take whatever bcast packets of `seq` have arrived, waiting for
    /// at least one. `waiting_for` names, for a timeout, whom this rank waits
    /// for (its parent in the tree, where the caller knows it).
    pub fn take_bcast(
        &self,
        seq: u64,
        timeout: Duration,
        waiting_for: &dyn Fn() -> String,
        stall: &mut Option<Stall<'_>>,
    ) -> Result<BcastPackets, Error> {
        self.wait(
            timeout,
            State::progress,
            || (crate::control::numbered("bcast", seq), waiting_for()),
            stall,
            |st| {
                // A loss fails the bcast even with its packets here: none
                // completes without one of its members.
                if let Some(e) = st.collective_blocked(seq) {
                    return Err(e);
                }
                let Some(q) = st.bcast.remove(&seq).filter(|q| !q.is_empty()) else {
                    return Ok(None);
                };
                for p in &q {
                    let root = p.header.root as usize;
                    st.flow
                        .took(Class::Coll, root, packet_cost(p.payload.len()));
                }
                Ok(Some(q))
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
        comm: u32,
        from: Option<usize>,
        timeout: Duration,
    ) -> Result<(usize, Bytes, Option<Stamp>), Error> {
        let mut none = None;
        self.wait(
            timeout,
            State::progress,
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
                for (&(src, c), ready) in &st.mcast_ready {
                    if c != comm || from.is_some_and(|f| f != src) {
                        continue;
                    }
                    let next = st.mcast_next.get(&(src, c)).copied().unwrap_or(0);
                    if let Some((n, ..)) = ready.get(&next) {
                        if best.is_none_or(|(bn, _, _)| *n < bn) {
                            best = Some((*n, src, next));
                        }
                    }
                }
                if let Some((_, src, ord)) = best {
                    let taken = st
                        .mcast_ready
                        .get_mut(&(src, comm))
                        .and_then(|r| r.remove(&ord));
                    let data = match taken {
                        Some((_, d, m, cost)) => {
                            st.flow.took(Class::Mcast, src, cost);
                            d.map(|d| (d, m))
                        }
                        None => Ok((Bytes::new(), None)),
                    };
                    st.mcast_next.insert((src, comm), ord.wrapping_add(1));
                    return data.map(|(d, m)| Some((src, d, m)));
                }
                if let Some(e) = &st.fatal {
                    return Err(e.clone());
                }
                let unreported = st.lost.iter().find(|(r, _)| {
                    from.map_or(!st.acked.contains(r) && st.member(comm, *r), |f| f == *r)
                        && !st.departing_mcast(*r)
                });
                if let Some((rank, reason)) = unreported.cloned() {
                    return Err(st.report_lost(rank, reason));
                }
                Ok(None)
            },
        )
    }
}

/// Who asks the peers what they called when a wait stalls (the
/// communicator: it sends a mismatch probe).
pub trait Probe {
    /// Collective `seq`, entered with call `fp`, has waited its stall bound.
    fn probe(&self, seq: u64, fp: Fingerprint);
}

/// Something to do once if a wait stalls (send a mismatch probe). Built per
/// collective call, so it holds references and numbers only (no
/// allocation, no clock reading).
pub struct Stall<'a> {
    /// When the collective began waiting: `None` until the first wait that
    /// carries it starts.
    pub since: Option<Instant>,
    pub after: Duration,
    pub probe: &'a dyn Probe,
    pub seq: u64,
    pub fp: Fingerprint,
}
