//! What the inbox knows: packets and messages by key, reassembly of
//! multicasts, lost peers and this rank's recent calls (for mismatches).

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use bytes::Bytes;
use smallvec::SmallVec;

use super::flow::{packet_cost, Flow};
use crate::bufpool::POOL;
use crate::control::{Control, Fingerprint, OpKind};
use crate::error::Error;
use crate::fasthash::{HashMap, HashSet};
use crate::wire::{comm_base, comm_of, next_in, Packet, Route};
use crate::worms::Worm;

/// How many of this rank's past collective calls are kept for checking late
/// packets and probes.
pub(super) const CALL_HISTORY: usize = 1024;
/// Most probes kept for collectives this rank has not reached yet.
pub(super) const MAX_EARLY_PROBES: usize = 4096;

/// This rank's recent collective calls with their fingerprints, per
/// communicator in call order (a communicator's calls number up), the last
/// `CALL_HISTORY` numbers of each. A call adds at the back and drops from
/// the front; a lookup is usually the newest call. (A map keyed by the call
/// number did the same with a tree search, insert, range and remove per
/// call: about 30% of a receiver's instructions in a small bcast and
/// barrier, callgrind.)
#[derive(Debug, Default)]
pub(super) struct Calls {
    by_comm: BTreeMap<u32, VecDeque<(u64, Fingerprint)>>,
}

impl Calls {
    /// Record call `seq` (replacing an earlier record of the same number)
    /// and forget its communicator's calls numbered below `seq -
    /// CALL_HISTORY`.
    pub(super) fn insert(&mut self, seq: u64, fp: Fingerprint) {
        let comm = comm_of(seq);
        let q = self.by_comm.entry(comm).or_default();
        match q.back() {
            Some(&(last, _)) if last > seq => match q.binary_search_by_key(&seq, |&(s, _)| s) {
                Ok(i) => q[i].1 = fp,
                Err(i) => q.insert(i, (seq, fp)),
            },
            Some(&(last, _)) if last == seq => {
                if let Some(b) = q.back_mut() {
                    b.1 = fp;
                }
            }
            _ => q.push_back((seq, fp)),
        }
        let keep = seq.saturating_sub(CALL_HISTORY as u64).max(comm_base(comm));
        while q.front().is_some_and(|&(s, _)| s < keep) {
            q.pop_front();
        }
    }

    /// The fingerprint of call `seq`, if this rank made it (and still
    /// remembers it).
    pub(super) fn get(&self, seq: u64) -> Option<&Fingerprint> {
        let q = self.by_comm.get(&comm_of(seq))?;
        match q.back() {
            Some((last, fp)) if *last == seq => Some(fp),
            Some((last, _)) if *last < seq => None,
            _ => q
                .binary_search_by_key(&seq, |&(s, _)| s)
                .ok()
                .map(|i| &q[i].1),
        }
    }

    pub(super) fn contains(&self, seq: u64) -> bool {
        self.get(seq).is_some()
    }

    /// The newest call on communicator `comm`.
    pub(super) fn last(&self, comm: u32) -> Option<u64> {
        self.by_comm.get(&comm)?.back().map(|&(s, _)| s)
    }
}

/// A multicast being reassembled. Packets are kept as they come and copied
/// into one buffer only when all have arrived and exactly tile the message,
/// so memory never exceeds what the peer actually sent (a hostile `msg_len`
/// cannot make this rank allocate).
#[derive(Debug, Default)]
pub(super) struct Partial {
    pub(super) msg_len: u64,
    pub(super) pkt_count: u32,
    /// Packets seen (refused ones included).
    pub(super) got: u32,
    pub(super) ordinal: u32,
    /// The packets so far, (offset, payload); one inline, so a message of
    /// one packet allocates nothing here.
    pub(super) parts: SmallVec<[(u64, Bytes); 1]>,
    pub(super) bytes: u64,
    /// Set when the message is refused (too large, inconsistent): its packets
    /// are counted but dropped, and the receiver gets this error in its place.
    pub(super) refused: Option<Error>,
    /// Model time of the packets so far (fabric mode).
    pub(super) model: Option<Stamp>,
    /// Flow-control cost of the packets so far (refused ones included).
    pub(super) cost: u64,
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
    pub(super) fn merge(a: Option<Stamp>, b: Option<Stamp>) -> Option<Stamp> {
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
    pub(super) fn assemble(mut self, source: usize) -> Result<Bytes, Error> {
        if let Some(e) = self.refused {
            return Err(e);
        }
        if self.parts.len() == 1 && self.parts[0].0 == 0 && self.bytes == self.msg_len {
            return Ok(self.parts.pop().map(|p| p.1).unwrap_or_default());
        }
        self.parts.sort_by_key(|p| p.0);
        let mut at = 0u64;
        // A kept buffer when one fits: its pages are already mapped.
        let mut buf = POOL.take(self.bytes as usize);
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
        Ok(POOL.freeze(buf))
    }
}

/// A complete (or refused) multicast waiting for the host: its completion
/// number, the message, its model time and its flow-control cost.
pub(super) type Ready = (u64, Result<Bytes, Error>, Option<Stamp>, u64);

#[derive(Debug, Default)]
pub(super) struct State {
    pub(super) me: usize,
    pub(super) max_message: u64,
    pub(super) bcast: HashMap<u64, VecDeque<Packet>>,
    /// Point-to-point messages: collectives' internal ones and the user's.
    pub(super) p2p: super::p2p::P2p,
    pub(super) mcast_partial: HashMap<(usize, u64), Partial>,
    /// Complete multicasts per source, by ordinal, with their completion number.
    /// Complete multicasts per (source, communicator), by ordinal.
    pub(super) mcast_ready: HashMap<(usize, u32), BTreeMap<u32, Ready>>,
    pub(super) mcast_next: HashMap<(usize, u32), u32>,
    /// Model time of each bcast's packets so far, by sequence number.
    pub(super) bcast_model: HashMap<u64, Stamp>,
    pub(super) completions: u64,
    /// Packets delivered so far (progress, for timeouts).
    pub(super) deliveries: u64,
    pub(super) fatal: Option<Error>,
    /// Lost peers, in the order they were found, with the reason.
    pub(super) lost: Vec<(usize, String)>,
    /// Lost ranks already reported to the user by some call: `recv_multicast`
    /// does not report them again.
    pub(super) acked: HashSet<usize>,
    pub(super) byes: HashSet<usize>,
    /// Ranks that left without `finalize` (also in `lost`): per
    /// communicator, the first collective they did not complete (earlier
    /// ones are not failed; see `wire::next_in`), and how many
    /// multicasts they sent this rank.
    pub(super) departed: HashMap<usize, (Vec<u64>, u32)>,
    /// This rank's collective calls (current and recent) by sequence number.
    pub(super) calls: Calls,
    /// Probes for calls this rank has not made yet.
    pub(super) early_probes: HashMap<u64, Vec<(usize, Fingerprint)>>,
    pub(super) early_probe_count: usize,
    /// The first mismatch found per communicator, with the number of the
    /// call it was found in: poisons that communicator's later collectives
    /// (only its: the others go on).
    pub(super) mismatch: HashMap<u32, (u64, Error)>,
    /// Flow-control credits, as a source and as a destination.
    pub(super) flow: Flow,
    /// The members (world ranks) of each sub-communicator this rank is in.
    pub(super) groups: HashMap<u32, Arc<[usize]>>,
    /// Mismatch notices for a sub-communicator this rank has not joined yet
    /// (a member found the mismatch while this rank was still in `split`):
    /// (call number, sender, error), applied when it joins if the sender is
    /// a member. At most `MAX_EARLY_PROBES`.
    pub(super) early_mismatch: HashMap<u32, (u64, usize, Error)>,
}

impl State {
    /// What a take waits for: any delivery counts as progress.
    pub(super) fn progress(&self) -> u64 {
        self.deliveries
    }

    /// Whether world rank `rank` is a member of communicator `comm` (every
    /// rank is a member of the world, 0).
    pub(super) fn member(&self, comm: u32, rank: usize) -> bool {
        comm == 0 || self.groups.get(&comm).is_some_and(|m| m.contains(&rank))
    }

    /// The latest call this rank made on `seq`'s communicator.
    pub(super) fn last_call(&self, seq: u64) -> Option<u64> {
        self.calls.last(comm_of(seq))
    }

    /// The mismatch found on call `seq`'s communicator, if any (every call
    /// looks, and the table is almost always empty: no hashing then).
    pub(super) fn mismatch_of(&self, seq: u64) -> Option<&(u64, Error)> {
        if self.mismatch.is_empty() {
            return None;
        }
        self.mismatch.get(&comm_of(seq))
    }

    /// Why collective `seq` cannot go on, if it cannot: its communicator's
    /// mismatch, or the first lost member of its communicator (a departed
    /// one, for the world, only from the collective it left at; for a
    /// sub-communicator at once, since a goodbye counts world collectives
    /// only).
    pub(super) fn collective_blocked(&mut self, seq: u64) -> Option<Error> {
        if let Some(e) = &self.fatal {
            return Some(e.clone());
        }
        if let Some((_, e)) = self.mismatch_of(seq) {
            return Some(e.clone());
        }
        if self.lost.is_empty() {
            return None;
        }
        let departed = &self.departed;
        let comm = comm_of(seq);
        let (rank, reason) = self
            .lost
            .iter()
            .find(|(r, _)| {
                self.member(comm, *r)
                    && departed
                        .get(r)
                        .is_none_or(|(next, _)| seq >= next_in(next, comm))
            })?
            .clone();
        Some(self.report_lost(rank, reason))
    }

    /// Whether `rank` left in order with multicasts to this rank not yet
    /// taken (some may still be on the way, through other forwarders): a
    /// receiver takes them before it reports the departure.
    pub(super) fn departing_mcast(&self, rank: usize) -> bool {
        let taken = self.mcast_next.get(&(rank, 0)).copied().unwrap_or(0);
        self.departed
            .get(&rank)
            .is_some_and(|&(_, sent)| taken < sent)
    }

    /// The error for lost rank `rank`, which the user now knows about.
    pub(super) fn report_lost(&mut self, rank: usize, reason: String) -> Error {
        self.acked.insert(rank);
        Error::PeerLost { rank, reason }
    }

    /// Record a mismatch found here in collective `seq`; returns the notice
    /// to send to the communicator's other members (none if one was already
    /// recorded for it).
    pub(super) fn found_mismatch(
        &mut self,
        seq: u64,
        fp: &Fingerprint,
        detail: String,
    ) -> Option<Control> {
        if self.mismatch.contains_key(&comm_of(seq)) {
            return None;
        }
        let op = fp.op_name(seq);
        tracing::error!(%op, %detail, "mismatched collective");
        let e = Error::Mismatch {
            op: op.clone(),
            detail: detail.clone(),
        };
        self.mismatch.insert(comm_of(seq), (seq, e));
        Some(Control::Mismatch { seq, op, detail })
    }

    /// Check a peer's call of `seq` against this rank's, if this rank made it.
    pub(super) fn check(&mut self, seq: u64, theirs: &Fingerprint, them: usize) -> Option<Control> {
        let mine = *self.calls.get(seq)?;
        let detail = mine.differs(self.me, theirs, them)?;
        self.found_mismatch(seq, &mine, detail)
    }

    /// The call a bcast packet was sent for (the root's).
    pub(super) fn bcast_fp(p: &Packet) -> Fingerprint {
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

    /// A multicast packet: into its message's reassembly, and the message
    /// into the ready queue of its source once complete.
    pub(super) fn multicast_packet(st: &mut State, p: Packet, stamp: Option<Stamp>) {
        let h = p.header;
        let ordinal = match &p.route {
            Route::List {
                covers: members, ..
            } => members.first().map_or(0, |m| m.ordinal),
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
        part.cost += packet_cost(p.payload.len());
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
                part.parts = SmallVec::new();
            }
        }
        let done = part.got >= part.pkt_count;
        if done {
            let part = st.mcast_partial.remove(&key).unwrap_or_default();
            let ordinal = part.ordinal;
            let (model, cost) = (part.model, part.cost);
            let data = part.assemble(source);
            st.completions += 1;
            let n = st.completions;
            st.mcast_ready
                .entry((source, comm_of(h.seq)))
                .or_default()
                .insert(ordinal, (n, data, model, cost));
        }
    }
}
