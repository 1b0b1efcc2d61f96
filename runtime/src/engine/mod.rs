//! The smart-NI engine: a sans-IO state machine, one per process.
//!
//! Events go in (the host posted a message, a packet arrived from a peer);
//! actions come out (send this packet to that rank, deliver this packet to the
//! host). The tokio driver in `net` runs it over TCP, and the discrete-event
//! driver in `mcast-emulator` runs the very same engine in virtual time.
//!
//! Forwarding follows [Sivaram 1998, §4.1–4.2, §4.3.4]:
//! the packet header carries the receiver's responsibility (a chain range for
//! bcast, an explicit member list for multicast), and the engine computes its
//! children from it with [`mcast_algorithms::split`] — the same function the
//! planners use — without asking its host.
//!
//! * **FPFS** (default): every arriving packet is sent to all children, in the
//!   tree's child order, *before* it is handed to the host.
//! * **FCFS**: each arriving packet goes to the first child at once and is kept;
//!   when the whole message is in, all of it goes to child 2, then child 3, ….
//!   A per-message counter tracks arrivals, as the paper describes.
//!
//! Files: this one (the engine, host posts, the source's sends), `tree.rs`
//! (children from a route header: chain splits and the thesis's
//! topology-aware hop), `forward.rs` (a packet arrives: checks, forwarding
//! state, FPFS/FCFS). The engine is sans-IO: it imports neither tokio nor
//! the configuration (ARCHITECTURE.md, "Layers").

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::Bytes;
use mcast_algorithms::{Shape, ShapeError, Topology};

use crate::fasthash::HashMap;
use crate::tree_kind::TreeKind;
use crate::wire::{Header, Kind, Member, Packet, Route};

mod forward;
#[cfg(test)]
mod tests;
mod tree;

use forward::{Forward, MsgKey};
use tree::{ListKey, Plan};

/// The NI forwarding discipline [Sivaram 1998, §4.2, Fig 6]; `MCAST_FORWARDING`.
/// The same type as the unit-step model's (`mcast_algorithms::Forwarding`).
pub use mcast_algorithms::unitstep::Forwarding;

/// A message cut into packets (inline for a message of one packet: a
/// small bcast allocates nothing for them).
type Packets = smallvec::SmallVec<[Packet; 1]>;

/// A node's children in send order, each with the route header it receives
/// (shared: a cached chain plan is handed out without a copy).
pub type Children = Arc<[(usize, Route)]>;

/// What the engine asks its driver to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Put `packet` on the connection to rank `to`.
    Send { to: usize, packet: Packet },
    /// Hand `packet` to the host (the "DMA to host memory" of the paper).
    Deliver(Packet),
}

/// Why the engine refused an event.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EngineError {
    #[error("packet from rank {from} does not address this rank: {detail}")]
    Misrouted { from: usize, detail: String },
    #[error("rank {0} is out of range")]
    BadRank(usize),
    #[error("bad tree shape: {0}")]
    Shape(#[from] ShapeError),
    #[error("invalid request: {0}")]
    Invalid(String),
}

/// Counters for tests and benchmarks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EngineStats {
    pub packets_in: u64,
    pub copies_out: u64,
    pub delivered: u64,
    /// Packets currently held for later children (FCFS only).
    pub buffered: u64,
    /// The most packets held at once.
    pub peak_buffered: u64,
}

/// The NI engine of one rank.
#[derive(Debug)]
pub struct NiEngine {
    rank: usize,
    size: usize,
    job: u32,
    forwarding: Forwarding,
    packets: PacketSize,
    /// The logical topology (rank i = node i) for topology-aware trees.
    topology: Option<Arc<Topology>>,
    /// The host of every rank (an index), for host-aware trees.
    hosts: Option<Arc<[u32]>>,
    forwards: HashMap<MsgKey, Forward>,
    /// The children of a chain tree's node, by (shape, root, lo, hi): the
    /// same few every call of a loop, split once (see `bcast_children`).
    chain_plans: HashMap<(Shape, u32, u32, u32), Children>,
    /// The children of a list-route tree's node (or source), by the tree
    /// and the list it plans over (see `NiEngine::list_plan`).
    list_plans: HashMap<ListKey, Children>,
    actions: VecDeque<Action>,
    stats: EngineStats,
}

/// Number of packets a message of `len` bytes is cut into (an empty message is
/// one empty packet, so that receivers learn of it).
pub fn packet_count(len: usize, packet_bytes: usize) -> usize {
    len.div_ceil(packet_bytes.max(1)).max(1)
}

/// How a job cuts its messages into packets: `base` payload bytes per
/// packet, except that a message of at least `large_from` bytes is cut into
/// packets of `large` bytes. Every rank derives the same from the job's
/// facts, and a message's packet size is a function of its length alone,
/// so every rank counts the same packets for it (trees are planned, and
/// flow control charged, by that count); headers carry it anyway.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketSize {
    base: usize,
    large: usize,
    large_from: usize,
}

impl PacketSize {
    /// `bytes` per packet whatever the message's length.
    pub fn uniform(bytes: usize) -> PacketSize {
        let b = bytes.max(1);
        PacketSize {
            base: b,
            large: b,
            large_from: usize::MAX,
        }
    }

    /// Messages of at least `from` bytes in packets of `large` bytes.
    pub fn with_large(self, large: usize, from: usize) -> PacketSize {
        PacketSize {
            large: large.max(1),
            large_from: from,
            ..self
        }
    }

    /// Payload bytes per packet of messages that are not large.
    pub fn base(&self) -> usize {
        self.base
    }

    /// The large packets' size and the length from which a message takes
    /// them, if messages are not all cut alike.
    pub fn large(&self) -> Option<(usize, usize)> {
        (self.large_from != usize::MAX).then_some((self.large, self.large_from))
    }

    /// The largest payload any packet carries.
    pub fn largest(&self) -> usize {
        self.base.max(self.large)
    }

    /// Payload bytes per packet of a message of `len` bytes.
    pub fn for_len(&self, len: usize) -> usize {
        if len >= self.large_from {
            self.large
        } else {
            self.base
        }
    }

    /// Number of packets a message of `len` bytes is cut into.
    pub fn count(&self, len: usize) -> usize {
        packet_count(len, self.for_len(len))
    }
}

impl NiEngine {
    /// An engine for `rank` of `size`, tagging packets with `job`.
    pub fn new(
        rank: usize,
        size: usize,
        job: u32,
        forwarding: Forwarding,
        packet_bytes: usize,
    ) -> NiEngine {
        NiEngine {
            rank,
            size,
            job,
            forwarding,
            packets: PacketSize::uniform(packet_bytes),
            topology: None,
            hosts: None,
            forwards: HashMap::default(),
            chain_plans: HashMap::default(),
            list_plans: HashMap::default(),
            actions: VecDeque::new(),
            stats: EngineStats::default(),
        }
    }

    /// Give the engine the job's logical topology (needed to forward
    /// topology-aware trees).
    pub fn with_topology(mut self, topology: Option<Arc<Topology>>) -> NiEngine {
        self.topology = topology;
        self
    }

    /// Give the engine the host of every rank (needed to forward
    /// host-aware trees); every rank of the job must be given the same table.
    pub fn with_hosts(mut self, hosts: Option<Arc<[u32]>>) -> NiEngine {
        self.hosts = hosts;
        self
    }

    /// Cut messages as `packets` says (by default, every message in
    /// packets of the `packet_bytes` given to [`NiEngine::new`]); every
    /// rank of the job must be given the same.
    pub fn with_packets(mut self, packets: PacketSize) -> NiEngine {
        self.packets = packets;
        self
    }

    pub fn rank(&self) -> usize {
        self.rank
    }
    pub fn stats(&self) -> EngineStats {
        self.stats
    }
    pub fn forwarding(&self) -> Forwarding {
        self.forwarding
    }

    /// The next action, if any.
    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// Whether actions are waiting.
    pub fn has_actions(&self) -> bool {
        !self.actions.is_empty()
    }

    fn header(&self, kind: Kind, seq: u64, root: usize, msg_len: usize) -> Header {
        // The world communicator (comm 0) is the only one.
        Header::new(
            kind,
            self.job,
            seq,
            self.rank as u32,
            root as u32,
            msg_len as u64,
        )
    }

    /// The packets of a message this rank sends as a switch-based worm (fabric
    /// mode): `kind` (bcast or multicast) number `seq` from `root`, every
    /// packet carrying `route`. The engine keeps no state for it: the
    /// switches replicate worms, and receivers deliver them without
    /// forwarding.
    pub fn worm_packets(
        &self,
        kind: Kind,
        seq: u64,
        root: usize,
        data: &Bytes,
        route: &Route,
    ) -> Vec<Packet> {
        let mut v = self.packetize(self.header(kind, seq, root, data.len()), data);
        for p in &mut v {
            p.route = route.clone();
        }
        v.into_vec()
    }

    /// Cut `data` into packets carrying `base`'s header fields.
    fn packetize(&self, base: Header, data: &Bytes) -> Packets {
        let bytes = self.packets.for_len(data.len());
        let count = packet_count(data.len(), bytes);
        (0..count)
            .map(|i| {
                let start = i * bytes;
                let end = (start + bytes).min(data.len());
                let mut h = base;
                h.offset = start as u64;
                h.pkt_idx = i as u32;
                h.pkt_count = count as u32;
                Packet {
                    header: h,
                    route: Route::None,
                    payload: data.slice(start.min(end)..end),
                }
            })
            .collect()
    }

    /// Emit the source's sends: FPFS = packets outer, children inner; FCFS =
    /// children outer, packets inner [Sivaram 1998, §4.2, Fig 6].
    fn emit_source(&mut self, packets: Packets, children: Children) {
        let copy = |p: &Packet, route: &Route| Packet {
            header: p.header,
            route: route.clone(),
            payload: p.payload.clone(),
        };
        match self.forwarding {
            Forwarding::Fpfs => {
                for p in &packets {
                    for (to, route) in children.iter() {
                        self.stats.copies_out += 1;
                        self.actions.push_back(Action::Send {
                            to: *to,
                            packet: copy(p, route),
                        });
                    }
                }
            }
            Forwarding::Fcfs => {
                for (to, route) in children.iter() {
                    for p in &packets {
                        self.stats.copies_out += 1;
                        self.actions.push_back(Action::Send {
                            to: *to,
                            packet: copy(p, route),
                        });
                    }
                }
            }
        }
    }

    /// The host of the root posts a bcast of `data` to every rank, with the
    /// chain rotated to the root (position p is rank (root + p) mod size).
    ///
    /// Chain trees travel with a range route; topology-aware and host-aware
    /// trees with a list route over every rank (the thesis's address field D).
    pub fn post_bcast(&mut self, seq: u64, data: Bytes, tree: TreeKind) -> Result<(), EngineError> {
        if self.size <= 1 {
            return Ok(());
        }
        let root = self.rank;
        let children = match tree {
            TreeKind::Chain(shape) => {
                shape.validate()?;
                self.bcast_children(shape, root, 0, self.size - 1)?
            }
            TreeKind::Topo(_) | TreeKind::Hosts { .. } => {
                let others: Vec<Member> = (1..self.size)
                    .map(|p| Member {
                        rank: ((root + p) % self.size) as u32,
                        ordinal: 0,
                    })
                    .collect();
                self.list_plan(tree, Plan::Source, &others)?
            }
        };
        let packets = self.packetize(self.header(Kind::Bcast, seq, root, data.len()), &data);
        self.emit_source(packets, children);
        Ok(())
    }

    /// The root's plan for a bcast of `len` bytes, number `seq`, down chain
    /// tree `shape`, when it is one packet: that packet's header (as
    /// [`NiEngine::post_bcast`] cuts it) and the children, each with the
    /// route it receives, in send order (for one packet FPFS and FCFS send
    /// the same). For a driver that writes the packet to each child itself
    /// from the caller's bytes; it then reports the copies with
    /// [`NiEngine::sent_copies`]. `None`: a lone rank, or more than one
    /// packet (post the message instead).
    pub fn bcast_source_plan(
        &mut self,
        seq: u64,
        len: usize,
        shape: Shape,
    ) -> Result<Option<(Header, Children)>, EngineError> {
        if self.size <= 1 || self.packets.count(len) != 1 {
            return Ok(None);
        }
        shape.validate()?;
        let children = self.bcast_children(shape, self.rank, 0, self.size - 1)?;
        let mut h = self.header(Kind::Bcast, seq, self.rank, len);
        h.offset = 0;
        h.pkt_idx = 0;
        h.pkt_count = 1;
        Ok(Some((h, children)))
    }

    /// A driver sent `n` packet copies of a plan from
    /// [`NiEngine::bcast_source_plan`] (counted as the engine's own sends).
    pub fn sent_copies(&mut self, n: usize) {
        self.stats.copies_out += n as u64;
    }

    /// The root of a sub-communicator's bcast posts `data` to the other
    /// members, `others` (in chain order: the communicator's ranks from the
    /// root's on, without it). The packets are bcast packets (the receivers
    /// key them by `seq`, which carries the communicator) with a list route
    /// over the members, as a multicast's.
    pub fn post_bcast_among(
        &mut self,
        seq: u64,
        others: &[Member],
        data: Bytes,
        tree: TreeKind,
    ) -> Result<(), EngineError> {
        self.post_list(Kind::Bcast, seq, others, data, tree)
    }

    /// The source posts a multicast of `data` to `dests` (in chain order, not
    /// containing the source, each with its per-destination ordinal).
    pub fn post_multicast(
        &mut self,
        seq: u64,
        dests: &[Member],
        data: Bytes,
        tree: TreeKind,
    ) -> Result<(), EngineError> {
        self.post_list(Kind::Multicast, seq, dests, data, tree)
    }

    /// Post `data` as `kind` from this rank down a tree over `dests`, with
    /// list routes.
    fn post_list(
        &mut self,
        kind: Kind,
        seq: u64,
        dests: &[Member],
        data: Bytes,
        tree: TreeKind,
    ) -> Result<(), EngineError> {
        if let TreeKind::Chain(shape) = tree {
            shape.validate()?;
        }
        if dests.is_empty() {
            return Ok(());
        }
        for d in dests {
            if d.rank as usize >= self.size || d.rank as usize == self.rank {
                return Err(EngineError::BadRank(d.rank as usize));
            }
        }
        let children = self.list_plan(tree, Plan::Source, dests)?;
        let packets = self.packetize(self.header(kind, seq, self.rank, data.len()), &data);
        self.emit_source(packets, children);
        Ok(())
    }

    /// Send a point-to-point message straight to `to` (no forwarding), in
    /// as many packets as it needs: `Kind::P2p` (a collective's internal
    /// message: `seq` is the collective's number, `index` its number among
    /// those this rank sends `to` in that collective) or `Kind::Msg` (the
    /// user's `send`: `seq` is its number among this rank's sends to `to`,
    /// `index` this rank). The header's root field carries `index`, so it
    /// must be below the communicator's size.
    pub fn post_p2p(
        &mut self,
        kind: Kind,
        to: usize,
        seq: u64,
        index: u32,
        data: Bytes,
    ) -> Result<(), EngineError> {
        self.check_p2p(kind, to, index)?;
        for p in self.packetize(self.header(kind, seq, index as usize, data.len()), &data) {
            self.stats.copies_out += 1;
            self.actions.push_back(Action::Send { to, packet: p });
        }
        Ok(())
    }

    /// [`NiEngine::post_p2p`] for a message of at most one packet, which
    /// the caller sends itself: the packet, with no action queued. Its
    /// checks, packet and count are `post_p2p`'s; `None` for a message of
    /// several packets (post it instead).
    pub fn p2p_packet(
        &mut self,
        kind: Kind,
        to: usize,
        seq: u64,
        index: u32,
        data: &Bytes,
    ) -> Result<Option<Packet>, EngineError> {
        self.check_p2p(kind, to, index)?;
        if self.packets.count(data.len()) != 1 {
            return Ok(None);
        }
        let mut header = self.header(kind, seq, index as usize, data.len());
        header.pkt_count = 1;
        self.stats.copies_out += 1;
        Ok(Some(Packet {
            header,
            route: Route::None,
            payload: data.clone(),
        }))
    }

    fn check_p2p(&self, kind: Kind, to: usize, index: u32) -> Result<(), EngineError> {
        if to >= self.size || to == self.rank {
            return Err(EngineError::BadRank(to));
        }
        if !matches!(kind, Kind::P2p | Kind::Msg) || index as usize >= self.size {
            return Err(EngineError::Invalid(format!(
                "point-to-point {kind:?} message with index {index}"
            )));
        }
        Ok(())
    }

    /// Messages whose forwarding is still in progress.
    pub fn in_flight(&self) -> usize {
        self.forwards.len()
    }
}
