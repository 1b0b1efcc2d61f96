//! The smart-NI engine: a sans-IO state machine, one per process.
//!
//! Events go in (the host posted a message, a packet arrived from a peer);
//! actions come out (send this packet to that rank, deliver this packet to the
//! host). The tokio driver in `net` runs it over TCP, and the discrete-event
//! driver in `mcast-emulator` runs the very same engine in virtual time.
//!
//! Forwarding follows the irregular-networks paper, §4 (digest §4.1–4.2, 4.6):
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

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use bytes::Bytes;
use mcast_algorithms::trees;
use mcast_algorithms::{split, Shape, ShapeError, Topology};

use crate::tree_kind::{TopoTree, TreeKind};
use crate::wire::{Header, Kind, Member, Packet, Route};

/// The NI forwarding discipline (digest §4.2); `MCAST_FORWARDING`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Forwarding {
    /// First-Packet-First-Served: each packet goes to every child as it arrives.
    #[default]
    Fpfs,
    /// First-Child-First-Served: the whole message goes to child 1, then child 2, …
    Fcfs,
}

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
    #[error("packet from rank {from} has job id {got:#x}, expected {want:#x}")]
    WrongJob { from: usize, got: u32, want: u32 },
    #[error("packet arrived from rank {from} but claims to come from rank {claimed}")]
    WrongSource { from: usize, claimed: u32 },
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct MsgKey {
    kind: Kind,
    root: u32,
    seq: u64,
}

/// Per-message forwarding state of an intermediate node.
#[derive(Debug)]
struct Forward {
    /// (child rank, the route header that child receives), in send order.
    children: Vec<(usize, Route)>,
    /// Packets still to arrive.
    remaining: u32,
    /// FCFS: packets kept for children 2.. until the message is complete.
    held: Vec<Packet>,
}

/// The NI engine of one rank.
#[derive(Debug)]
pub struct NiEngine {
    rank: usize,
    size: usize,
    job: u32,
    comm: u32,
    forwarding: Forwarding,
    packet_bytes: usize,
    /// The logical topology (rank i = node i) for topology-aware trees.
    topology: Option<Arc<Topology>>,
    forwards: HashMap<MsgKey, Forward>,
    actions: VecDeque<Action>,
    stats: EngineStats,
}

/// Number of packets a message of `len` bytes is cut into (an empty message is
/// one empty packet, so that receivers learn of it).
pub fn packet_count(len: usize, packet_bytes: usize) -> usize {
    len.div_ceil(packet_bytes.max(1)).max(1)
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
            comm: 0,
            forwarding,
            packet_bytes: packet_bytes.max(1),
            topology: None,
            forwards: HashMap::new(),
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
        let mut h = Header::new(
            kind,
            self.job,
            seq,
            self.rank as u32,
            root as u32,
            msg_len as u64,
        );
        h.comm = self.comm;
        h
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
        v
    }

    /// Cut `data` into packets carrying `base`'s header fields.
    fn packetize(&self, base: Header, data: &Bytes) -> Vec<Packet> {
        let count = packet_count(data.len(), self.packet_bytes);
        (0..count)
            .map(|i| {
                let start = i * self.packet_bytes;
                let end = (start + self.packet_bytes).min(data.len());
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
    /// children outer, packets inner (digest §4.2, Fig 6).
    fn emit_source(&mut self, packets: Vec<Packet>, children: Vec<(usize, Route)>) {
        let copy = |p: &Packet, route: &Route| Packet {
            header: p.header,
            route: route.clone(),
            payload: p.payload.clone(),
        };
        match self.forwarding {
            Forwarding::Fpfs => {
                for p in &packets {
                    for (to, route) in &children {
                        self.stats.copies_out += 1;
                        self.actions.push_back(Action::Send {
                            to: *to,
                            packet: copy(p, route),
                        });
                    }
                }
            }
            Forwarding::Fcfs => {
                for (to, route) in &children {
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

    fn bcast_children(
        &self,
        shape: Shape,
        root: usize,
        lo: usize,
        hi: usize,
    ) -> Result<Vec<(usize, Route)>, EngineError> {
        Ok(split(shape, lo, hi)?
            .into_iter()
            .map(|(a, b)| {
                (
                    (root + a) % self.size,
                    Route::Range {
                        shape,
                        size: self.size as u32,
                        lo: a as u32,
                        hi: b as u32,
                    },
                )
            })
            .collect())
    }

    /// The children of `members[0]`, responsible for all of `members`.
    fn list_children(
        &self,
        tree: TreeKind,
        members: &[Member],
    ) -> Result<Vec<(usize, Route)>, EngineError> {
        match tree {
            TreeKind::Chain(shape) => Ok(split(shape, 0, members.len() - 1)?
                .into_iter()
                .map(|(a, b)| {
                    (
                        members[a].rank as usize,
                        Route::List {
                            tree,
                            members: members[a..=b].to_vec(),
                        },
                    )
                })
                .collect()),
            TreeKind::Topo(t) => self.topo_children(t, members),
        }
    }

    fn topology(&self, t: TopoTree) -> Result<&Topology, EngineError> {
        self.topology.as_deref().ok_or_else(|| {
            EngineError::Invalid(format!("{t:?} tree but this rank has no topology"))
        })
    }

    /// The thesis's hop: run the algorithm on the address field D
    /// (`members`, this node first) exactly as received, and send each part
    /// on with the part as its receiver's D.
    fn topo_children(
        &self,
        t: TopoTree,
        members: &[Member],
    ) -> Result<Vec<(usize, Route)>, EngineError> {
        let topo = self.topology(t)?;
        let d: Vec<usize> = members.iter().map(|m| m.rank as usize).collect();
        let ordinal: HashMap<u32, u32> = members.iter().map(|m| (m.rank, m.ordinal)).collect();
        let sends = trees::split_received(topo, t.planner(), &d).map_err(|e| {
            EngineError::Invalid(format!("{t:?} on the received address field: {e}"))
        })?;
        Ok(sends
            .into_iter()
            .map(|(to, covers)| {
                let members = covers
                    .into_iter()
                    .map(|r| Member {
                        rank: r as u32,
                        ordinal: ordinal.get(&(r as u32)).copied().unwrap_or(0),
                    })
                    .collect();
                (
                    to,
                    Route::List {
                        tree: TreeKind::Topo(t),
                        members,
                    },
                )
            })
            .collect())
    }

    /// The source's chain for `tree`: for topology-aware trees, the order the
    /// planner puts the destinations in (R-chain, relative chain, WeightedSort).
    fn source_members(&self, tree: TreeKind, dests: &[Member]) -> Result<Vec<Member>, EngineError> {
        let me = Member {
            rank: self.rank as u32,
            ordinal: 0,
        };
        match tree {
            TreeKind::Chain(_) => Ok(std::iter::once(me).chain(dests.iter().copied()).collect()),
            TreeKind::Topo(t) => {
                let ranks: Vec<usize> = dests.iter().map(|m| m.rank as usize).collect();
                let chain = trees::source_chain(self.topology(t)?, t.planner(), self.rank, &ranks)
                    .map_err(|e| EngineError::Invalid(format!("{t:?}: {e}")))?;
                let ordinal: HashMap<u32, u32> =
                    dests.iter().map(|m| (m.rank, m.ordinal)).collect();
                Ok(chain
                    .into_iter()
                    .map(|r| Member {
                        rank: r as u32,
                        ordinal: ordinal.get(&(r as u32)).copied().unwrap_or(0),
                    })
                    .collect())
            }
        }
    }

    /// The host of the root posts a bcast of `data` to every rank, with the
    /// chain rotated to the root (position p is rank (root + p) mod size).
    ///
    /// Chain trees travel with a range route; topology-aware trees with a list
    /// route over every rank (the thesis's address field D).
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
            TreeKind::Topo(_) => {
                let others: Vec<Member> = (1..self.size)
                    .map(|p| Member {
                        rank: ((root + p) % self.size) as u32,
                        ordinal: 0,
                    })
                    .collect();
                let chain = self.source_members(tree, &others)?;
                self.list_children(tree, &chain)?
            }
        };
        let packets = self.packetize(self.header(Kind::Bcast, seq, root, data.len()), &data);
        self.emit_source(packets, children);
        Ok(())
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
        let chain = self.source_members(tree, dests)?;
        let children = self.list_children(tree, &chain)?;
        let packets = self.packetize(
            self.header(Kind::Multicast, seq, self.rank, data.len()),
            &data,
        );
        self.emit_source(packets, children);
        Ok(())
    }

    /// Send a small point-to-point message (used by barrier).
    pub fn post_p2p(&mut self, to: usize, seq: u64, data: Bytes) -> Result<(), EngineError> {
        if to >= self.size || to == self.rank {
            return Err(EngineError::BadRank(to));
        }
        if data.len() > self.packet_bytes {
            return Err(EngineError::Invalid(format!(
                "point-to-point message of {} bytes exceeds one packet",
                data.len()
            )));
        }
        let mut h = self.header(Kind::P2p, seq, self.rank, data.len());
        h.payload_len = data.len() as u32;
        self.stats.copies_out += 1;
        self.actions.push_back(Action::Send {
            to,
            packet: Packet {
                header: h,
                route: Route::None,
                payload: data,
            },
        });
        Ok(())
    }

    /// A packet arrived on the connection from rank `from`.
    pub fn packet_in(&mut self, from: usize, packet: Packet) -> Result<(), EngineError> {
        let h = packet.header;
        if h.job != self.job {
            return Err(EngineError::WrongJob {
                from,
                got: h.job,
                want: self.job,
            });
        }
        if h.source as usize != from {
            return Err(EngineError::WrongSource {
                from,
                claimed: h.source,
            });
        }
        if h.root as usize >= self.size {
            return Err(EngineError::BadRank(h.root as usize));
        }
        self.stats.packets_in += 1;
        let misrouted = |detail: String| EngineError::Misrouted { from, detail };
        let key = MsgKey {
            kind: h.kind,
            root: h.root,
            seq: h.seq,
        };
        match (&h.kind, &packet.route) {
            (
                Kind::Bcast,
                Route::Range {
                    shape,
                    size,
                    lo,
                    hi,
                },
            ) => {
                if *size as usize != self.size {
                    return Err(misrouted(format!(
                        "bcast chain of {size} ranks, communicator has {}",
                        self.size
                    )));
                }
                let me = (h.root as usize + *lo as usize) % self.size;
                if me != self.rank || *lo == 0 {
                    return Err(misrouted(format!(
                        "bcast position {lo} from root {} is rank {me}",
                        h.root
                    )));
                }
                if !self.forwards.contains_key(&key) {
                    let children =
                        self.bcast_children(*shape, h.root as usize, *lo as usize, *hi as usize)?;
                    self.start_forward(key, h.pkt_count, children);
                }
            }
            (Kind::Multicast | Kind::Bcast, Route::List { tree, members }) => {
                if members[0].rank as usize != self.rank {
                    return Err(misrouted(format!(
                        "multicast list starts with rank {}",
                        members[0].rank
                    )));
                }
                if let Some(bad) = members.iter().find(|m| m.rank as usize >= self.size) {
                    return Err(EngineError::BadRank(bad.rank as usize));
                }
                if !self.forwards.contains_key(&key) {
                    let children = self.list_children(*tree, members)?;
                    self.start_forward(key, h.pkt_count, children);
                }
            }
            (Kind::P2p, Route::None) => {}
            (kind, route) => {
                return Err(misrouted(format!(
                    "{kind:?} packet with route {:?}",
                    route.kind_byte()
                )))
            }
        }
        self.forward(key, &packet);
        self.stats.delivered += 1;
        self.actions.push_back(Action::Deliver(packet));
        Ok(())
    }

    fn start_forward(&mut self, key: MsgKey, pkt_count: u32, children: Vec<(usize, Route)>) {
        if children.is_empty() {
            return; // a leaf keeps no state
        }
        self.forwards.insert(
            key,
            Forward {
                children,
                remaining: pkt_count,
                held: Vec::new(),
            },
        );
    }

    fn forward(&mut self, key: MsgKey, packet: &Packet) {
        let Some(fwd) = self.forwards.get_mut(&key) else {
            return;
        };
        let me = self.rank as u32;
        let copy = |p: &Packet, route: &Route| {
            let mut h = p.header;
            h.source = me;
            Packet {
                header: h,
                route: route.clone(),
                payload: p.payload.clone(),
            }
        };
        fwd.remaining = fwd.remaining.saturating_sub(1);
        match self.forwarding {
            Forwarding::Fpfs => {
                for (to, route) in &fwd.children {
                    self.stats.copies_out += 1;
                    self.actions.push_back(Action::Send {
                        to: *to,
                        packet: copy(packet, route),
                    });
                }
            }
            Forwarding::Fcfs => {
                let (to, route) = &fwd.children[0];
                self.stats.copies_out += 1;
                self.actions.push_back(Action::Send {
                    to: *to,
                    packet: copy(packet, route),
                });
                if fwd.children.len() > 1 {
                    fwd.held.push(packet.clone());
                    self.stats.buffered += 1;
                    self.stats.peak_buffered = self.stats.peak_buffered.max(self.stats.buffered);
                    if fwd.remaining == 0 {
                        for (to, route) in &fwd.children[1..] {
                            for p in &fwd.held {
                                self.stats.copies_out += 1;
                                self.actions.push_back(Action::Send {
                                    to: *to,
                                    packet: copy(p, route),
                                });
                            }
                        }
                        self.stats.buffered -= fwd.held.len() as u64;
                    }
                }
            }
        }
        if fwd.remaining == 0 {
            self.forwards.remove(&key);
        }
    }

    /// Messages whose forwarding is still in progress.
    pub fn in_flight(&self) -> usize {
        self.forwards.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Run a bcast through a set of engines with instantaneous delivery, in
    /// action order, and return (deliveries per rank, copies sent).
    fn run(
        size: usize,
        root: usize,
        shape: Shape,
        fw: Forwarding,
        len: usize,
        pkt: usize,
    ) -> Vec<Vec<Packet>> {
        let mut engines: Vec<NiEngine> = (0..size)
            .map(|r| NiEngine::new(r, size, 9, fw, pkt))
            .collect();
        let data: Bytes = (0..len).map(|i| (i % 251) as u8).collect::<Vec<_>>().into();
        engines[root]
            .post_bcast(5, data, TreeKind::Chain(shape))
            .unwrap();
        let mut got = vec![Vec::new(); size];
        let mut queue: VecDeque<(usize, Action)> = VecDeque::new();
        while let Some(a) = engines[root].poll_action() {
            queue.push_back((root, a));
        }
        while let Some((at, a)) = queue.pop_front() {
            match a {
                Action::Send { to, packet } => {
                    engines[to].packet_in(at, packet).unwrap();
                    while let Some(b) = engines[to].poll_action() {
                        queue.push_back((to, b));
                    }
                }
                Action::Deliver(p) => got[at].push(p),
            }
        }
        got
    }

    #[test]
    fn bcast_reaches_everyone_once() {
        for fw in [Forwarding::Fpfs, Forwarding::Fcfs] {
            for shape in [
                Shape::Flat,
                Shape::KBinomial { k: 1 },
                Shape::KBinomial { k: 2 },
                Shape::KBinomial { k: 3 },
            ] {
                for root in 0..7 {
                    let got = run(7, root, shape, fw, 1000, 300);
                    for (r, ps) in got.iter().enumerate() {
                        if r == root {
                            assert!(ps.is_empty());
                        } else {
                            let idx: Vec<u32> = ps.iter().map(|p| p.header.pkt_idx).collect();
                            assert_eq!(
                                idx,
                                vec![0, 1, 2, 3],
                                "{fw:?} {shape:?} root {root} rank {r}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn fpfs_forwards_before_delivering() {
        let mut e = NiEngine::new(1, 4, 0, Forwarding::Fpfs, 10);
        let p = Packet {
            header: Header {
                kind: Kind::Bcast,
                job: 0,
                comm: 0,
                seq: 0,
                source: 0,
                root: 0,
                msg_len: 20,
                offset: 0,
                pkt_idx: 0,
                pkt_count: 2,
                payload_len: 10,
                route_kind: 1,
                route_len: 16,
            },
            route: Route::Range {
                shape: Shape::KBinomial { k: 1 },
                size: 4,
                lo: 1,
                hi: 3,
            },
            payload: Bytes::from_static(&[0; 10]),
        };
        e.packet_in(0, p).unwrap();
        assert!(matches!(e.poll_action(), Some(Action::Send { to: 2, .. })));
        assert!(matches!(e.poll_action(), Some(Action::Deliver(_))));
        assert_eq!(e.in_flight(), 1);
    }

    #[test]
    fn rejects_foreign_and_misrouted_packets() {
        let mut e = NiEngine::new(1, 4, 7, Forwarding::Fpfs, 10);
        let mut h = Header {
            kind: Kind::P2p,
            job: 8,
            comm: 0,
            seq: 0,
            source: 0,
            root: 0,
            msg_len: 0,
            offset: 0,
            pkt_idx: 0,
            pkt_count: 1,
            payload_len: 0,
            route_kind: 0,
            route_len: 0,
        };
        let pk = |h: Header, route: Route| Packet {
            header: h,
            route,
            payload: Bytes::new(),
        };
        assert!(matches!(
            e.packet_in(0, pk(h, Route::None)),
            Err(EngineError::WrongJob { .. })
        ));
        h.job = 7;
        assert!(matches!(
            e.packet_in(2, pk(h, Route::None)),
            Err(EngineError::WrongSource { .. })
        ));
        h.kind = Kind::Bcast;
        let r = Route::Range {
            shape: Shape::Flat,
            size: 4,
            lo: 2,
            hi: 2,
        };
        assert!(matches!(
            e.packet_in(0, pk(h, r)),
            Err(EngineError::Misrouted { .. })
        ));
        h.kind = Kind::Multicast;
        let r = Route::List {
            tree: TreeKind::Chain(Shape::Flat),
            members: vec![
                Member {
                    rank: 1,
                    ordinal: 0,
                },
                Member {
                    rank: 9,
                    ordinal: 0,
                },
            ],
        };
        assert!(matches!(
            e.packet_in(0, pk(h, r)),
            Err(EngineError::BadRank(9))
        ));
        assert!(e.post_p2p(1, 0, Bytes::new()).is_err());
        assert!(e
            .post_multicast(
                0,
                &[Member {
                    rank: 1,
                    ordinal: 0
                }],
                Bytes::new(),
                TreeKind::Chain(Shape::Flat)
            )
            .is_err());
    }
}
