//! The smart-NI engines of a whole job in unit-step virtual time, in lock
//! step: the driver that runs the real [`NiEngine`]s, where
//! [`mcast_algorithms::unitstep`] is the pure model they are checked against.
//!
//! Time model [Sivaram 1998, §4.3.2]: one step is one
//! NI-to-NI packet transfer; an NI sends one packet copy per step, in the order
//! its engine emitted them; a copy started at `max(NI free, time the engine
//! emitted it)` arrives one step later. The engine decides everything else —
//! children, their order, FPFS versus FCFS — exactly as it does over TCP.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use bytes::Bytes;
use mcast::algorithm::TreeKind;
use mcast::engine::{Action, NiEngine};
use mcast::wire::{Member, Packet};
use mcast::Forwarding;
use mcast_algorithms::{Shape, Topology};
use std::sync::Arc;

/// Pending arrivals: (arrival step, copy id, to, from), earliest first.
type Arrivals = BinaryHeap<Reverse<(u64, u64, usize, usize)>>;

/// What the source posts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Post {
    /// Broadcast from `root` to every rank.
    Bcast { root: usize },
    /// Multicast from `source` to `dests` (in chain order, without the source).
    Multicast { source: usize, dests: Vec<usize> },
}

/// Why a simulation could not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LockstepError {
    #[error("engine error: {0}")]
    Engine(#[from] mcast::engine::EngineError),
    #[error("invalid simulation: {0}")]
    Invalid(String),
}

/// What happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimResult {
    /// `arrivals[rank][i]`: step at which packet i reached that rank's NI
    /// (empty for ranks that received nothing).
    pub arrivals: Vec<Vec<u64>>,
    /// Step at which the last packet reached its last destination.
    pub completion: u64,
    /// Packet copies put on links.
    pub copies: u64,
    /// Per rank: the most packets its engine held at once for later children.
    pub peak_buffered: Vec<u64>,
    /// The tree the engines built: (from, to) of every copy of the first
    /// packet, in the order the copies were sent.
    pub edges: Vec<(usize, usize)>,
}

/// Run one `m`-packet message through the engines of `size` ranks, over a
/// chain tree of the given shape.
pub fn simulate(
    size: usize,
    post: &Post,
    shape: Shape,
    forwarding: Forwarding,
    m: usize,
) -> Result<SimResult, LockstepError> {
    simulate_tree(size, post, TreeKind::Chain(shape), None, forwarding, m)
}

/// Run one `m`-packet message through the engines of `size` ranks with any
/// tree, given the logical topology (rank i = node i) topology-aware trees need.
pub fn simulate_tree(
    size: usize,
    post: &Post,
    tree: TreeKind,
    topology: Option<Arc<Topology>>,
    forwarding: Forwarding,
    m: usize,
) -> Result<SimResult, LockstepError> {
    if size == 0 || m == 0 {
        return Err(LockstepError::Invalid(
            "need at least one rank and one packet".into(),
        ));
    }
    // One byte per packet: the engine cuts an m-byte message into m packets.
    let mut engines: Vec<NiEngine> = (0..size)
        .map(|r| NiEngine::new(r, size, 1, forwarding, 1).with_topology(topology.clone()))
        .collect();
    let data = Bytes::from(vec![0u8; m]);
    let src = match post {
        Post::Bcast { root } => {
            if *root >= size {
                return Err(LockstepError::Invalid(format!(
                    "root {root} >= size {size}"
                )));
            }
            engines[*root].post_bcast(0, data, tree)?;
            *root
        }
        Post::Multicast { source, dests } => {
            if *source >= size {
                return Err(LockstepError::Invalid(format!(
                    "source {source} >= size {size}"
                )));
            }
            let members: Vec<Member> = dests
                .iter()
                .map(|&d| Member {
                    rank: d as u32,
                    ordinal: 0,
                })
                .collect();
            engines[*source].post_multicast(0, &members, data, tree)?;
            *source
        }
    };
    let mut free = vec![0u64; size];
    let mut arrivals = vec![Vec::new(); size];
    let mut copies = 0u64;
    let mut edges = Vec::new();
    // (arrival step, tie-break sequence) -> (to, from, packet)
    let mut heap: Arrivals = BinaryHeap::new();
    let mut in_flight: Vec<Option<Packet>> = Vec::new();
    let mut drain = |at: usize,
                     now: u64,
                     eng: &mut NiEngine,
                     free: &mut Vec<u64>,
                     heap: &mut Arrivals,
                     in_flight: &mut Vec<Option<Packet>>| {
        while let Some(a) = eng.poll_action() {
            if let Action::Send { to, packet } = a {
                if packet.header.pkt_idx == 0 {
                    edges.push((at, to));
                }
                let start = free[at].max(now);
                free[at] = start + 1;
                copies += 1;
                in_flight.push(Some(packet));
                heap.push(Reverse((start + 1, in_flight.len() as u64 - 1, to, at)));
            }
        }
    };
    drain(
        src,
        0,
        &mut engines[src],
        &mut free,
        &mut heap,
        &mut in_flight,
    );
    while let Some(Reverse((t, id, to, from))) = heap.pop() {
        let packet = in_flight[id as usize]
            .take()
            .expect("each copy arrives once");
        arrivals[to].push(t);
        engines[to].packet_in(from, packet)?;
        drain(
            to,
            t,
            &mut engines[to],
            &mut free,
            &mut heap,
            &mut in_flight,
        );
    }
    let completion = arrivals.iter().flatten().copied().max().unwrap_or(0);
    Ok(SimResult {
        arrivals,
        completion,
        copies,
        peak_buffered: engines.iter().map(|e| e.stats().peak_buffered).collect(),
        edges,
    })
}

/// [Sivaram 1998, §4.3.2–4.3.3, derived]: (n, k, FPFS completion for m = 1..6, FCFS completion
/// where computed), in unit steps. Shared by the tests of this
/// driver and of the simulator's `unitstep` preset.
#[cfg(test)]
pub(crate) type FpfsVectorRow = (usize, usize, [u64; 6], Option<[u64; 6]>);

/// The rows of that table.
#[cfg(test)]
pub(crate) const FPFS_VECTORS: [FpfsVectorRow; 6] = [
    (8, 3, [3, 6, 9, 12, 15, 18], Some([3, 6, 9, 12, 15, 18])),
    (16, 4, [4, 8, 12, 16, 20, 24], Some([4, 8, 12, 16, 20, 24])),
    (16, 3, [5, 8, 11, 14, 17, 20], Some([5, 8, 11, 14, 17, 20])),
    (16, 2, [5, 7, 9, 11, 13, 15], Some([5, 8, 11, 14, 17, 20])),
    (4, 2, [2, 4, 6, 8, 10, 12], None),
    (4, 1, [3, 4, 5, 6, 7, 8], None),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn fpfs(n: usize, k: usize, m: usize) -> u64 {
        simulate(
            n,
            &Post::Bcast { root: 0 },
            Shape::KBinomial { k },
            Forwarding::Fpfs,
            m,
        )
        .unwrap()
        .completion
    }
    fn fcfs(n: usize, k: usize, m: usize) -> u64 {
        simulate(
            n,
            &Post::Bcast { root: 0 },
            Shape::KBinomial { k },
            Forwarding::Fcfs,
            m,
        )
        .unwrap()
        .completion
    }

    /// [Sivaram 1998, §4.3.2–4.3.3, derived]: FPFS and FCFS completion, m = 1..6, run on the real engine.
    #[test]
    fn engine_reproduces_fpfs_vectors() {
        for (n, k, want_fpfs, want_fcfs) in FPFS_VECTORS {
            for m in 1..=6 {
                assert_eq!(fpfs(n, k, m), want_fpfs[m - 1], "FPFS n={n} k={k} m={m}");
                if let Some(w) = want_fcfs {
                    assert_eq!(fcfs(n, k, m), w[m - 1], "FCFS n={n} k={k} m={m}");
                }
            }
        }
    }

    /// [Sivaram 1998, §4.3.1, Fig 7]: 3 packets to 3 destinations take 6 steps
    /// on the binomial tree and 5 on the linear one.
    #[test]
    fn binomial_is_not_optimal_for_three_packets() {
        assert_eq!(fpfs(4, 2, 3), 6);
        assert_eq!(fpfs(4, 1, 3), 5);
    }

    /// [Sivaram 1998, §4.3.2, Fig 8]: 3 packets to 7 destinations on the binomial tree
    /// take 9 steps, with these arrival steps per chain position.
    #[test]
    fn fig8_arrivals() {
        let r = simulate(
            8,
            &Post::Bcast { root: 0 },
            Shape::KBinomial { k: 3 },
            Forwarding::Fpfs,
            3,
        )
        .unwrap();
        assert_eq!(r.completion, 9);
        let want: [(usize, [u64; 3]); 7] = [
            (4, [1, 4, 7]),
            (2, [2, 5, 8]),
            (6, [2, 5, 8]),
            (1, [3, 6, 9]),
            (3, [3, 6, 9]),
            (5, [3, 6, 9]),
            (7, [3, 6, 9]),
        ];
        for (pos, steps) in want {
            assert_eq!(r.arrivals[pos], steps, "position {pos}");
        }
    }

    /// [Sivaram 1998, §4.3.2–4.3.3, derived]: single-packet arrival step per position, n = 16, k = 2.
    #[test]
    fn single_packet_arrivals_n16_k2() {
        let r = simulate(
            16,
            &Post::Bcast { root: 0 },
            Shape::KBinomial { k: 2 },
            Forwarding::Fpfs,
            1,
        )
        .unwrap();
        let want: [(u64, &[usize]); 5] = [
            (1, &[4]),
            (2, &[1, 9]),
            (3, &[2, 5, 12]),
            (4, &[3, 7, 10, 14]),
            (5, &[6, 8, 11, 13, 15]),
        ];
        for (step, positions) in want {
            for &p in positions {
                assert_eq!(r.arrivals[p], vec![step], "position {p}");
            }
        }
    }

    /// [Sivaram 1998, §4.2, Fig 6]: an FPFS NI never holds a packet for later children; an
    /// FCFS one holds the whole message (checked on n = 16, m = 8).
    #[test]
    fn buffer_claim() {
        for k in [2, 4] {
            let f = simulate(
                16,
                &Post::Bcast { root: 0 },
                Shape::KBinomial { k },
                Forwarding::Fpfs,
                8,
            )
            .unwrap();
            assert_eq!(f.peak_buffered.iter().max(), Some(&0));
            let c = simulate(
                16,
                &Post::Bcast { root: 0 },
                Shape::KBinomial { k },
                Forwarding::Fcfs,
                8,
            )
            .unwrap();
            assert_eq!(c.peak_buffered.iter().max(), Some(&8));
        }
    }

    /// A rotated root and a multicast to a subset behave like the same tree on
    /// chain positions.
    #[test]
    fn rotation_and_multicast_match_positions() {
        let base = simulate(
            8,
            &Post::Bcast { root: 0 },
            Shape::KBinomial { k: 2 },
            Forwarding::Fpfs,
            4,
        )
        .unwrap();
        let rot = simulate(
            8,
            &Post::Bcast { root: 5 },
            Shape::KBinomial { k: 2 },
            Forwarding::Fpfs,
            4,
        )
        .unwrap();
        for p in 0..8 {
            assert_eq!(base.arrivals[p], rot.arrivals[(p + 5) % 8]);
        }
        let dests = vec![9, 2, 7, 4, 11, 1, 3];
        let mc = simulate(
            12,
            &Post::Multicast {
                source: 6,
                dests: dests.clone(),
            },
            Shape::KBinomial { k: 2 },
            Forwarding::Fpfs,
            4,
        )
        .unwrap();
        for (i, d) in dests.iter().enumerate() {
            assert_eq!(mc.arrivals[*d], base.arrivals[i + 1]);
        }
        assert!(mc.arrivals[0].is_empty() && mc.arrivals[6].is_empty());
        assert_eq!(mc.completion, base.completion);
    }
}
