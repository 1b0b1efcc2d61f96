//! Point-to-point messages in host memory, reassembled from their packets:
//!
//! * a collective's internal messages (`Kind::P2p`), by (collective number,
//!   source, index): each starts with the sender's call's fingerprint
//!   (`control::FP_BYTES` bytes), checked against this rank's call as soon
//!   as its first packet arrives;
//! * the user's messages (`Kind::Msg`, `Comm::send`), each starting with its
//!   tag (4 bytes): released to the host in the order their source sent
//!   them, so messages of one source (and so of one source and tag) are
//!   received in order.
//!
//! Both are under flow control (`Class::Coll`, `Class::P2p`): their cost is
//! given back when the host takes them.

use std::collections::{BTreeMap, VecDeque};
use std::hash::Hash;
use std::time::Duration;

use bytes::Bytes;

use super::flow::{packet_cost, Class};
use super::state::Partial;
use super::{Inbox, Stall, State};
use crate::control::{Control, Fingerprint, FP_BYTES};
use crate::error::Error;
use crate::fasthash::HashMap;
use crate::wire::{comm_base, comm_of, Header, Packet};

/// Bytes of the tag at the head of a user message.
pub const TAG_BYTES: usize = 4;

/// A complete message and its flow-control cost.
type Done = (Result<Bytes, Error>, u64);

#[derive(Debug, Default)]
pub(super) struct P2p {
    coll_partial: HashMap<(u64, usize, u32), Partial>,
    coll_ready: HashMap<(u64, usize, u32), Done>,
    /// Collectives this rank has not entered yet: each distinct call seen
    /// from a peer (the first peer that made it), all checked when this rank
    /// gets there. Not only the first: with peers that disagree among
    /// themselves, the first may agree with this rank and a later one not,
    /// and its data would then be taken unchecked.
    early: BTreeMap<u64, Vec<(usize, Fingerprint)>>,
    msg_partial: HashMap<(usize, u64), Partial>,
    /// Complete messages per (source, communicator), by number, not yet
    /// released in order.
    msg_done: HashMap<(usize, u32), BTreeMap<u64, Done>>,
    msg_next: HashMap<(usize, u32), u64>,
    /// Released messages, in order.
    ready: VecDeque<Released>,
}

/// A user message released to the host: (source, communicator, tag, data,
/// flow-control cost).
type Released = (usize, u32, u32, Result<Bytes, Error>, u64);

/// A user message's tag and data, split from its bytes (the tag first).
fn tagged(from: usize, data: Result<Bytes, Error>) -> (u32, Result<Bytes, Error>) {
    match data {
        Ok(b) if b.len() >= TAG_BYTES => {
            let tag = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            (tag, Ok(b.slice(TAG_BYTES..)))
        }
        Ok(_) => (
            0,
            Err(Error::Protocol(format!(
                "a message from rank {from} without its tag"
            ))),
        ),
        Err(e) => (0, Err(e)),
    }
}

/// Add packet `p` to the message `key` of `parts`; the message if complete.
fn add<K: Hash + Eq + Copy>(
    parts: &mut HashMap<K, Partial>,
    key: K,
    p: Packet,
    max: u64,
) -> Option<(Partial, u64)> {
    let h = p.header;
    // A message of one packet (most of them) never enters the table.
    if h.pkt_count == 1 && !parts.contains_key(&key) {
        let mut part = opened(&h, max);
        take_packet(&mut part, p);
        let cost = part.cost;
        return Some((part, cost));
    }
    let part = parts.entry(key).or_insert_with(|| opened(&h, max));
    take_packet(part, p);
    if part.got < part.pkt_count {
        return None;
    }
    let part = parts.remove(&key)?;
    let cost = part.cost;
    Some((part, cost))
}

/// A new message, from the header of its first packet; refused if longer
/// than `max`.
fn opened(h: &Header, max: u64) -> Partial {
    Partial {
        msg_len: h.msg_len,
        pkt_count: h.pkt_count,
        refused: (h.msg_len > max).then(|| {
            Error::InvalidArgument(format!(
                "rank {} sent a message of {} bytes, more than this rank accepts \
                 (MCAST_MAX_MESSAGE_BYTES={max})",
                h.source, h.msg_len
            ))
        }),
        ..Partial::default()
    }
}

/// Count packet `p` into `part`, keeping its payload unless the message
/// is refused (or now turns out inconsistent).
fn take_packet(part: &mut Partial, p: Packet) {
    let h = p.header;
    part.got += 1;
    part.cost += packet_cost(p.payload.len());
    if part.refused.is_none() {
        if h.msg_len != part.msg_len
            || h.pkt_count != part.pkt_count
            || part.bytes + p.payload.len() as u64 > part.msg_len
        {
            part.refused = Some(Error::Protocol(format!(
                "point-to-point message from rank {}: inconsistent packets",
                h.source
            )));
            part.parts = smallvec::SmallVec::new();
        } else {
            part.bytes += p.payload.len() as u64;
            part.parts.push((h.offset, p.payload));
        }
    }
}

impl State {
    /// A collective's point-to-point packet arrived; returns a mismatch
    /// notice if its sender's call differs from this rank's.
    pub(super) fn coll_packet(&mut self, p: Packet) -> Option<Control> {
        let h = p.header;
        let (from, seq) = (h.source as usize, h.seq);
        let mut notice = None;
        if h.offset == 0 {
            if let Some(fp) = Fingerprint::from_bytes(&p.payload) {
                if self.calls.contains(seq) {
                    notice = self.check(seq, &fp, from);
                } else if self.last_call(seq).is_none_or(|l| seq > l) {
                    let calls = self.p2p.early.entry(seq).or_default();
                    if !calls.iter().any(|(_, seen)| *seen == fp) {
                        calls.push((from, fp));
                    }
                }
            }
        }
        let key = (seq, from, h.root);
        if let Some((part, cost)) = add(&mut self.p2p.coll_partial, key, p, u64::MAX) {
            let data = part.assemble(from).and_then(|b| {
                if b.len() < FP_BYTES {
                    return Err(Error::Protocol(format!(
                        "collective #{seq}: a message of {} bytes from rank {from}",
                        b.len()
                    )));
                }
                Ok(b.slice(FP_BYTES..))
            });
            self.p2p.coll_ready.insert(key, (data, cost));
        }
        notice
    }

    /// This rank enters collective `seq`: the distinct calls peers made of
    /// it, each with the first peer that made it, if any arrived before
    /// (earlier collectives' are forgotten).
    pub(super) fn early_p2p_calls(&mut self, seq: u64) -> Vec<(usize, Fingerprint)> {
        // Almost always: nothing came early (every call looks).
        if self.p2p.early.is_empty() {
            return Vec::new();
        }
        let lo = comm_base(comm_of(seq));
        let old: Vec<u64> = self.p2p.early.range(lo..=seq).map(|(&k, _)| k).collect();
        let mut mine = Vec::new();
        for k in old {
            let calls = self.p2p.early.remove(&k);
            if k == seq {
                mine = calls.unwrap_or_default();
            }
        }
        mine
    }

    /// A user message's packet arrived.
    pub(super) fn msg_packet(&mut self, p: Packet) {
        let h = p.header;
        let (from, n) = (h.source as usize, h.seq);
        let Some((part, cost)) = add(&mut self.p2p.msg_partial, (from, n), p, self.max_message)
        else {
            return;
        };
        let data = part.assemble(from);
        let comm = comm_of(n);
        let key = (from, comm);
        let next = self.p2p.msg_next.entry(key).or_insert(comm_base(comm));
        // The next one in order with none waiting behind it (most of
        // them): released at once, without the reorder table.
        if *next == n && self.p2p.msg_done.get(&key).is_none_or(|d| d.is_empty()) {
            *next += 1;
            let (tag, data) = tagged(from, data);
            self.p2p.ready.push_back((from, comm, tag, data, cost));
            return;
        }
        let done = self.p2p.msg_done.entry(key).or_default();
        done.insert(n, (data, cost));
        while let Some((data, cost)) = done.remove(next) {
            *next += 1;
            let (tag, data) = tagged(from, data);
            self.p2p.ready.push_back((from, comm, tag, data, cost));
        }
    }

    /// Rank `rank` is lost: its unfinished messages will never finish.
    pub(super) fn forget_p2p(&mut self, rank: usize) {
        self.p2p.coll_partial.retain(|(_, src, _), _| *src != rank);
        self.p2p.msg_partial.retain(|(src, _), _| *src != rank);
    }
}

impl Inbox {
    /// Host side: wait for message `index` from `from` in collective `seq`
    /// (its fingerprint stripped). `what` names the call and whom it waits
    /// for, for a timeout.
    pub fn take_coll(
        &self,
        seq: u64,
        from: usize,
        index: u32,
        timeout: Duration,
        what: &dyn Fn() -> (String, String),
        stall: &mut Option<Stall<'_>>,
    ) -> Result<Bytes, Error> {
        self.wait(timeout, State::progress, what, stall, |st| {
            if let Some(e) = st.collective_blocked(seq) {
                return Err(e);
            }
            let Some((data, cost)) = st.p2p.coll_ready.remove(&(seq, from, index)) else {
                return Ok(None);
            };
            st.flow.took(Class::Coll, from, cost);
            data.map(Some)
        })
    }

    /// Host side: a message this rank sends itself (`Comm::send` to its
    /// own rank, number `me`): released at once, after this rank's earlier
    /// ones to itself, at no flow-control cost (it never leaves the process).
    pub fn own_msg(&self, comm: u32, me: usize, tag: u32, data: Bytes) {
        self.lock()
            .p2p
            .ready
            .push_back((me, comm, tag, Ok(data), 0));
        self.wake();
    }

    /// Host side: wait for the next user message from `source` (any with
    /// `None`) with tag `tag` (any with `None`): (source, tag, data). A lost
    /// source with nothing left from it fails with `PeerLost`; waiting on
    /// any source reports each lost rank once, as `recv_multicast` does.
    pub fn take_msg(
        &self,
        comm: u32,
        source: Option<usize>,
        tag: Option<u32>,
        timeout: Duration,
    ) -> Result<(usize, u32, Bytes), Error> {
        let what = || {
            let from = source.map_or("any rank".into(), |s| format!("rank {s}"));
            let tag = tag.map_or("any tag".into(), |t| format!("tag {t}"));
            (
                "recv".to_string(),
                format!("no message from {from} with {tag} arrived"),
            )
        };
        self.wait(timeout, State::progress, what, &mut None, |st| {
            let hit = st.p2p.ready.iter().position(|(s, c, t, ..)| {
                *c == comm && source.is_none_or(|x| x == *s) && tag.is_none_or(|x| x == *t)
            });
            if let Some((src, _, t, data, cost)) = hit.and_then(|i| st.p2p.ready.remove(i)) {
                st.flow.took(Class::P2p, src, cost);
                return data.map(|d| Some((src, t, d)));
            }
            if let Some(e) = &st.fatal {
                return Err(e.clone());
            }
            let lost = st.lost.iter().find(|(r, _)| {
                source.map_or(!st.acked.contains(r) && st.member(comm, *r), |s| s == *r)
                    && !st.p2p.msg_partial.keys().any(|(src, _)| src == r)
            });
            if let Some((rank, reason)) = lost.cloned() {
                return Err(st.report_lost(rank, reason));
            }
            Ok(None)
        })
    }
}
