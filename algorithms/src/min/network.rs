//! The wrap-around MIN of 2^n nodes built from 2×2 broadcast (replicating)
//! switching elements [Park 1996, §2.1]: wiring, the path of a
//! region packet, and one lock-step pass of several packets under an SE
//! arbitration rule [Park 1996, §3.2, Theorem 2].
//!
//! Stages are numbered n−1 (first) down to 0 (last). A link label at any
//! stage is n bits; the SE label is the link label without bit 0, and bit 0
//! is the port (0 = upper). Output link x of stage 0 is node x.

use std::collections::BTreeMap;

use serde::Serialize;

use super::header::{decide, MinHeaderError, RegionHeader, MAX_STAGES};
use crate::irregular::SplitMix64;

/// How the stages are wired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Wiring {
    /// The paper's Definition 1: a perfect shuffle (rotate left) from the
    /// nodes into stage n−1, and the butterfly IC_i (swap bit i with bit 0)
    /// from stage i to stage i−1. The default; the link vectors of the tests use
    /// it.
    #[default]
    Banyan,
    /// The omega network: a perfect shuffle before every stage. Topologically
    /// equivalent; a packet from s enters stage i on input port s_i here too,
    /// so the deadlock rule and the two-pass theorem carry over.
    Omega,
}

/// A request the MIN cannot serve.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MinError {
    /// A bad header or a header of another network size.
    #[error(transparent)]
    Header(#[from] MinHeaderError),
    /// A node outside `0..2^n`.
    #[error("node {node} is outside the {nodes}-node MIN")]
    NodeOutOfRange {
        /// The node.
        node: u64,
        /// 2^n.
        nodes: u64,
    },
    /// A header for a network with another number of stages.
    #[error("a {got}-stage header on a {n}-stage MIN")]
    HeaderStages {
        /// The network's stages.
        n: u32,
        /// The header's stages.
        got: u32,
    },
    /// Two packets of one lock-step pass from the same node (a node injects
    /// at most one packet per slot).
    #[error("node {0} injects two packets in one pass")]
    DuplicateSource(u32),
    /// No destinations.
    #[error("a multicast needs at least one destination")]
    NoDestinations,
    /// A destination listed twice.
    #[error("destination {0} is listed twice")]
    DuplicateDestination(u32),
    /// The source among its destinations (excluded by design,
    /// [Park 1996, §3.1, derived]).
    #[error("the source {0} is among the destinations")]
    SourceIsDestination(u32),
    /// A relay block `s..s+f−1` that does not fit in `0..2^n`.
    #[error("relays {start}..{start}+{f}-1 do not fit in the {nodes}-node MIN")]
    BadStart {
        /// The first relay.
        start: u64,
        /// The fanout.
        f: u64,
        /// 2^n.
        nodes: u64,
    },
}

/// An n-stage MIN.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Min {
    n: u32,
    wiring: Wiring,
}

/// One copy of a packet crossing one SE.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hop {
    /// The stage.
    pub stage: u32,
    /// The input link label.
    pub in_link: u32,
    /// The SE label (`in_link >> 1`).
    pub se: u32,
    /// The input port (`in_link & 1`).
    pub in_port: u32,
    /// The header that arrived.
    pub header: RegionHeader,
    /// The output link labels used, port 0 first.
    pub out_links: Vec<u32>,
}

/// The path of one packet through the MIN with no other traffic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MinTrace {
    /// The injecting node.
    pub source: u32,
    /// The header injected.
    pub header: RegionHeader,
    /// Every SE crossing, stage n−1 first; within a stage by input link.
    pub hops: Vec<Hop>,
    /// The nodes reached, ascending.
    pub delivered: Vec<u32>,
    /// For each node reached (same order): its output link at stages n−1..0.
    pub branches: Vec<Vec<u32>>,
    /// Replications at stage i, indexed by i.
    pub replications: Vec<u32>,
}

impl MinTrace {
    /// Links traversed: the injection link plus every SE output link.
    pub fn link_visits(&self) -> usize {
        1 + self.hops.iter().map(|h| h.out_links.len()).sum::<usize>()
    }
}

/// Who wins when two copies contend at one SE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arbitration {
    /// The paper's rule: the copy on input port 0 (upper) gets every output it
    /// asks for; the other gets its outputs only if they are disjoint from the
    /// winner's (all-or-nothing).
    UpperFirst,
    /// A seeded coin per contended SE (the deadlock-prone rule of Fig. 4).
    Random(u64),
}

/// One contention at an SE in a lock-step pass.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Contention {
    /// The stage.
    pub stage: u32,
    /// The SE label.
    pub se: u32,
    /// The packet index that won.
    pub winner: usize,
    /// The packet index that lost (its copy waits / is dropped).
    pub loser: usize,
}

/// The outcome of one lock-step pass of several packets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Wave {
    /// Per packet: the nodes it reached, ascending.
    pub delivered: Vec<Vec<u32>>,
    /// Every contention in which the requests overlapped (a copy blocked).
    pub blocked: Vec<Contention>,
    /// Contentions at SEs where both copies got their (disjoint) outputs.
    pub shared_se: usize,
    /// Contentions between two copies of the same packet (never expected).
    pub self_collisions: usize,
}

impl Wave {
    /// The wait-for edges (loser → winner), deduplicated.
    pub fn wait_for(&self) -> Vec<(usize, usize)> {
        let mut e: Vec<(usize, usize)> = self.blocked.iter().map(|c| (c.loser, c.winner)).collect();
        e.sort_unstable();
        e.dedup();
        e
    }

    /// Whether the wait-for graph has a cycle (a deadlock under wormhole
    /// blocking).
    pub fn has_wait_cycle(&self) -> bool {
        let edges = self.wait_for();
        let mut adj: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for &(a, b) in &edges {
            adj.entry(a).or_default().push(b);
        }
        // Iterative DFS with colours: 0 white, 1 grey, 2 black.
        let mut colour: BTreeMap<usize, u8> = BTreeMap::new();
        for &start in adj.keys() {
            if colour.get(&start).copied().unwrap_or(0) != 0 {
                continue;
            }
            let mut stack = vec![(start, 0usize)];
            colour.insert(start, 1);
            while let Some(&mut (v, ref mut i)) = stack.last_mut() {
                let next = adj.get(&v).and_then(|n| n.get(*i)).copied();
                *i += 1;
                match next {
                    Some(w) => match colour.get(&w).copied().unwrap_or(0) {
                        1 => return true,
                        0 => {
                            colour.insert(w, 1);
                            stack.push((w, 0));
                        }
                        _ => {}
                    },
                    None => {
                        colour.insert(v, 2);
                        stack.pop();
                    }
                }
            }
        }
        false
    }
}

/// A copy in flight: packet index, header, out-links so far.
struct Copy {
    packet: usize,
    header: RegionHeader,
    path: Vec<u32>,
}

impl Min {
    /// An n-stage MIN (2^n nodes), 1 ≤ n ≤ 31.
    ///
    /// # Errors
    /// [`MinError::Header`] with [`MinHeaderError::Stages`].
    pub fn new(n: u32, wiring: Wiring) -> Result<Min, MinError> {
        if !(1..=MAX_STAGES).contains(&n) {
            return Err(MinHeaderError::Stages(n).into());
        }
        Ok(Min { n, wiring })
    }

    /// The number of stages n.
    pub fn stages(&self) -> u32 {
        self.n
    }

    /// The wiring.
    pub fn wiring(&self) -> Wiring {
        self.wiring
    }

    /// The number of nodes 2^n.
    pub fn nodes(&self) -> u64 {
        1u64 << self.n
    }

    fn mask(&self) -> u32 {
        ((1u64 << self.n) - 1) as u32
    }

    fn rotl(&self, a: u32) -> u32 {
        ((a << 1) & self.mask()) | (a >> (self.n - 1))
    }

    /// The stage-(n−1) input link of node `node` (IC_n: rotate left).
    pub fn inject_link(&self, node: u32) -> u32 {
        self.rotl(node & self.mask())
    }

    /// The stage-(i−1) input link fed by output link `out` of stage i
    /// (1 ≤ i ≤ n−1): IC_i (swap bit i with bit 0) for the banyan, a rotate
    /// left for the omega. For i = 0 the output link is the node.
    pub fn next_link(&self, stage: u32, out: u32) -> u32 {
        if stage == 0 {
            return out;
        }
        match self.wiring {
            Wiring::Banyan => {
                let (bi, b0) = ((out >> stage) & 1, out & 1);
                if bi != b0 {
                    out ^ ((1 << stage) | 1)
                } else {
                    out
                }
            }
            Wiring::Omega => self.rotl(out),
        }
    }

    /// Check a node id.
    ///
    /// # Errors
    /// [`MinError::NodeOutOfRange`].
    pub fn check_node(&self, node: u64) -> Result<u32, MinError> {
        if node < self.nodes() {
            Ok(node as u32)
        } else {
            Err(MinError::NodeOutOfRange {
                node,
                nodes: self.nodes(),
            })
        }
    }

    fn check_header(&self, h: &RegionHeader) -> Result<(), MinError> {
        if h.stages() != self.n {
            return Err(MinError::HeaderStages {
                n: self.n,
                got: h.stages(),
            });
        }
        Ok(())
    }

    /// The path of one packet from `source` with header `header` and no
    /// other traffic.
    ///
    /// # Errors
    /// [`MinError::NodeOutOfRange`], [`MinError::HeaderStages`].
    pub fn trace(&self, source: u32, header: RegionHeader) -> Result<MinTrace, MinError> {
        self.check_node(u64::from(source))?;
        self.check_header(&header)?;
        let mut hops = Vec::new();
        let mut replications = vec![0u32; self.n as usize];
        let mut copies: Vec<(u32, RegionHeader, Vec<u32>)> =
            vec![(self.inject_link(source), header, Vec::new())];
        for stage in (0..self.n).rev() {
            let mut next = Vec::with_capacity(copies.len() * 2);
            copies.sort_by_key(|c| c.0);
            for (in_link, h, path) in copies {
                let d = decide(h, stage)?;
                if matches!(d, super::header::SeDecision::Replicate(..)) {
                    replications[stage as usize] += 1;
                }
                let mut outs = Vec::with_capacity(2);
                for (port, h2) in d.outputs() {
                    let out = (in_link & !1) | port;
                    outs.push(out);
                    let mut p = path.clone();
                    p.push(out);
                    next.push((self.next_link(stage, out), h2, p));
                }
                hops.push(Hop {
                    stage,
                    in_link,
                    se: in_link >> 1,
                    in_port: in_link & 1,
                    header: h,
                    out_links: outs,
                });
            }
            copies = next;
        }
        copies.sort_by_key(|c| c.0);
        Ok(MinTrace {
            source,
            header,
            hops,
            delivered: copies.iter().map(|c| c.0).collect(),
            branches: copies.into_iter().map(|c| c.2).collect(),
            replications,
        })
    }

    /// One lock-step pass: every packet is injected at the same slot
    /// boundary and the headers advance one stage at a time. A blocked copy
    /// is dropped (the unbuffered model) and the contention is recorded, so
    /// [`Wave::wait_for`] is the wait-for graph of wormhole blocking.
    ///
    /// # Errors
    /// [`MinError::NodeOutOfRange`], [`MinError::HeaderStages`],
    /// [`MinError::DuplicateSource`].
    pub fn wave(
        &self,
        packets: &[(u32, RegionHeader)],
        arbitration: Arbitration,
    ) -> Result<Wave, MinError> {
        let mut rng = match arbitration {
            Arbitration::Random(seed) => Some(SplitMix64::new(seed)),
            Arbitration::UpperFirst => None,
        };
        let mut seen = std::collections::HashSet::new();
        let mut links: BTreeMap<u32, Copy> = BTreeMap::new();
        for (i, &(s, h)) in packets.iter().enumerate() {
            self.check_node(u64::from(s))?;
            self.check_header(&h)?;
            if !seen.insert(s) {
                return Err(MinError::DuplicateSource(s));
            }
            links.insert(
                self.inject_link(s),
                Copy {
                    packet: i,
                    header: h,
                    path: Vec::new(),
                },
            );
        }
        let mut wave = Wave {
            delivered: vec![Vec::new(); packets.len()],
            blocked: Vec::new(),
            shared_se: 0,
            self_collisions: 0,
        };
        for stage in (0..self.n).rev() {
            // Group the copies by SE: (port 0 copy, port 1 copy).
            let mut ses: BTreeMap<u32, [Option<Copy>; 2]> = BTreeMap::new();
            for (link, c) in std::mem::take(&mut links) {
                ses.entry(link >> 1).or_default()[(link & 1) as usize] = Some(c);
            }
            for (se, [up, low]) in ses {
                let mut granted: Vec<Copy> = Vec::new();
                let mut decisions = Vec::new();
                for c in [up, low].into_iter().flatten() {
                    let d = decide(c.header, stage)?;
                    decisions.push((c, d));
                }
                if decisions.len() == 2 {
                    let upper_wins = match rng.as_mut() {
                        None => true,
                        Some(r) => r.next_u64() & 1 == 0,
                    };
                    let (w, l) = if upper_wins { (0, 1) } else { (1, 0) };
                    let (wp, lp) = (decisions[w].0.packet, decisions[l].0.packet);
                    if wp == lp {
                        wave.self_collisions += 1;
                    }
                    let overlap = decisions[w].1.ports() & decisions[l].1.ports() != 0;
                    if overlap {
                        wave.blocked.push(Contention {
                            stage,
                            se,
                            winner: wp,
                            loser: lp,
                        });
                        decisions.remove(l);
                    } else {
                        wave.shared_se += 1;
                    }
                }
                for (c, d) in decisions {
                    for (port, h2) in d.outputs() {
                        let out = (se << 1) | port;
                        let mut path = c.path.clone();
                        path.push(out);
                        granted.push(Copy {
                            packet: c.packet,
                            header: h2,
                            path,
                        });
                    }
                }
                for c in granted {
                    let out = *c.path.last().unwrap_or(&0);
                    links.insert(self.next_link(stage, out), c);
                }
            }
        }
        for (node, c) in links {
            wave.delivered[c.packet].push(node);
        }
        for d in &mut wave.delivered {
            d.sort_unstable();
        }
        Ok(wave)
    }
}

/// The bit reversal of the n-bit `x`: under upper-first arbitration the
/// packet whose source has the smaller bit-reversed address wins
/// [Park 1996, §3.2, Theorem 2] (the tie-break is ours).
pub fn bit_reverse(x: u32, n: u32) -> u32 {
    if n == 0 {
        return 0;
    }
    x.reverse_bits() >> (32 - n)
}
