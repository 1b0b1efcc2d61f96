//! Host memory: where the NI task deposits delivered packets and where the
//! host's blocking calls wait for them.
//!
//! Packets can arrive before the host asks (the NI forwards and delivers without
//! asking its host), so everything is keyed: bcast packets by collective
//! sequence number, point-to-point packets by (sequence, sender), multicasts by
//! (source, source's multicast number). Waits are bounded: a wait fails with
//! [`Error::Timeout`] when no packet for it arrives within the configured bound.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::error::Error;
use crate::wire::{Packet, Route};

#[derive(Debug, Default)]
struct Partial {
    msg_len: usize,
    pkt_count: u32,
    got: u32,
    ordinal: u32,
    buf: Vec<u8>,
    single: Option<Bytes>,
}

#[derive(Debug, Default)]
struct State {
    bcast: HashMap<u64, VecDeque<Packet>>,
    p2p: HashMap<(u64, usize), VecDeque<Bytes>>,
    mcast_partial: HashMap<(usize, u64), Partial>,
    /// Complete multicasts per source, by ordinal, with their completion number.
    mcast_ready: HashMap<usize, BTreeMap<u32, (u64, Bytes)>>,
    mcast_next: HashMap<usize, u32>,
    completions: u64,
    /// Packets delivered so far (progress, for timeouts).
    deliveries: u64,
    failure: Option<Error>,
    byes: HashSet<usize>,
}

/// Shared between the NI task (producer) and the host (consumer).
#[derive(Debug, Default)]
pub struct Inbox {
    state: Mutex<State>,
    cv: Condvar,
}

/// What a bcast wait yields: packets for that sequence number.
pub type BcastPackets = Vec<Packet>;

impl Inbox {
    pub fn new() -> Inbox {
        Inbox::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A poisoned lock only means another thread panicked mid-update; the
        // state is still the best we have.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// NI side: deliver a batch of packets.
    pub fn deliver(&self, packets: impl IntoIterator<Item = Packet>) {
        let mut st = self.lock();
        for p in packets {
            st.deliveries += 1;
            let h = p.header;
            match h.kind {
                crate::wire::Kind::Bcast => st.bcast.entry(h.seq).or_default().push_back(p),
                crate::wire::Kind::P2p => st
                    .p2p
                    .entry((h.seq, h.source as usize))
                    .or_default()
                    .push_back(p.payload),
                crate::wire::Kind::Multicast => {
                    let ordinal = match &p.route {
                        Route::List { members, .. } => members[0].ordinal,
                        _ => 0,
                    };
                    let source = h.root as usize;
                    let key = (source, h.seq);
                    let part = st.mcast_partial.entry(key).or_insert_with(|| Partial {
                        msg_len: h.msg_len as usize,
                        pkt_count: h.pkt_count,
                        ordinal,
                        ..Partial::default()
                    });
                    if h.pkt_count == 1 {
                        part.single = Some(p.payload);
                    } else {
                        if part.buf.is_empty() && part.msg_len > 0 {
                            part.buf = vec![0u8; part.msg_len];
                        }
                        let off = h.offset as usize;
                        // The decoder guarantees offset + payload_len <= msg_len,
                        // but msg_len is the first packet's; guard anyway.
                        if let Some(dst) = part.buf.get_mut(off..off + p.payload.len()) {
                            dst.copy_from_slice(&p.payload);
                        }
                    }
                    part.got += 1;
                    if part.got >= part.pkt_count {
                        let part = st.mcast_partial.remove(&key).unwrap_or_default();
                        let data = part.single.unwrap_or_else(|| Bytes::from(part.buf));
                        st.completions += 1;
                        let n = st.completions;
                        st.mcast_ready
                            .entry(source)
                            .or_default()
                            .insert(part.ordinal, (n, data));
                    }
                }
                crate::wire::Kind::Bye => {}
            }
        }
        drop(st);
        self.cv.notify_all();
    }

    /// NI side: record a failure; every current and later wait returns it.
    pub fn fail(&self, err: Error) {
        let mut st = self.lock();
        if st.failure.is_none() {
            tracing::error!(%err, "runtime failure");
            st.failure = Some(err);
        }
        drop(st);
        self.cv.notify_all();
    }

    /// NI side: a peer said goodbye (an orderly close follows).
    pub fn mark_bye(&self, rank: usize) {
        self.lock().byes.insert(rank);
    }

    /// Whether `rank` closed in an orderly way.
    pub fn said_bye(&self, rank: usize) -> bool {
        self.lock().byes.contains(&rank)
    }

    /// The recorded failure, if any.
    pub fn failure(&self) -> Option<Error> {
        self.lock().failure.clone()
    }

    /// Wait until `ready` returns `Some`, failing on a recorded failure, or with
    /// a timeout when `timeout` passes without any delivery.
    fn wait<T>(
        &self,
        timeout: Duration,
        what: impl Fn() -> (String, String),
        mut ready: impl FnMut(&mut State) -> Result<Option<T>, Error>,
    ) -> Result<T, Error> {
        let mut st = self.lock();
        let mut deadline = Instant::now() + timeout;
        let mut seen = st.deliveries;
        loop {
            if let Some(e) = &st.failure {
                return Err(e.clone());
            }
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
            st = self
                .cv
                .wait_timeout(st, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Host side: take whatever bcast packets of `seq` have arrived, waiting for
    /// at least one. `conflict` detects a different collective at the same
    /// sequence number.
    pub fn take_bcast(
        &self,
        seq: u64,
        timeout: Duration,
        root: usize,
    ) -> Result<BcastPackets, Error> {
        self.wait(
            timeout,
            || {
                (
                    format!("bcast #{seq}"),
                    format!("waiting for packets from root {root}"),
                )
            },
            |st| {
                if st.p2p.keys().any(|(s, _)| *s == seq) {
                    return Err(Error::Mismatch {
                        op: format!("collective #{seq}"),
                        detail: "this rank is in bcast but a peer is in barrier".into(),
                    });
                }
                Ok(st
                    .bcast
                    .remove(&seq)
                    .filter(|q| !q.is_empty())
                    .map(|q| q.into_iter().collect()))
            },
        )
    }

    /// Host side: wait for a point-to-point message of `seq` from `from`.
    pub fn take_p2p(&self, seq: u64, from: usize, timeout: Duration) -> Result<Bytes, Error> {
        self.wait(
            timeout,
            || {
                (
                    format!("barrier #{seq}"),
                    format!("waiting for rank {from}"),
                )
            },
            |st| {
                if st.bcast.contains_key(&seq) {
                    return Err(Error::Mismatch {
                        op: format!("collective #{seq}"),
                        detail: "this rank is in barrier but a peer is in bcast".into(),
                    });
                }
                let key = (seq, from);
                let v = st.p2p.get_mut(&key).and_then(|q| q.pop_front());
                if st.p2p.get(&key).is_some_and(|q| q.is_empty()) {
                    st.p2p.remove(&key);
                }
                Ok(v)
            },
        )
    }

    /// Host side: wait for the next complete multicast. Each source's multicasts
    /// come out in the order that source sent them; among sources, the one that
    /// completed first.
    pub fn take_multicast(&self, timeout: Duration) -> Result<(usize, Bytes), Error> {
        self.wait(
            timeout,
            || ("recv_multicast".into(), "no multicast arrived".into()),
            |st| {
                let mut best: Option<(u64, usize, u32)> = None;
                for (src, ready) in &st.mcast_ready {
                    let next = st.mcast_next.get(src).copied().unwrap_or(0);
                    if let Some((n, _)) = ready.get(&next) {
                        if best.is_none_or(|(bn, _, _)| *n < bn) {
                            best = Some((*n, *src, next));
                        }
                    }
                }
                Ok(best.map(|(_, src, ord)| {
                    let data = st
                        .mcast_ready
                        .get_mut(&src)
                        .and_then(|r| r.remove(&ord))
                        .map(|(_, d)| d)
                        .unwrap_or_default();
                    st.mcast_next.insert(src, ord.wrapping_add(1));
                    (src, data)
                }))
            },
        )
    }
}
