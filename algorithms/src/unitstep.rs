//! The unit-step model of packetised NI multicast
//! [Sivaram 1998, §4.2–4.3.2].
//!
//! Time is counted in steps; one step is one NI-to-NI packet transfer. Every
//! NI sends one packet copy per step. The source has every packet at time 0.
//! A node forwards packet j to its children in list order. The copy of packet
//! j that a node's NI starts at `max(NI_free, arrival_j)` occupies the NI for
//! that step and arrives at the child one step later, at the end of the step
//! (so "sent in step t" means started at t−1, arrived at t).
//!
//! * [`Forwarding::Fpfs`] loops packets outer, children inner (Fig 6(b)).
//! * [`Forwarding::Fcfs`] loops children outer, packets inner (Fig 6(a),
//!   reconstructed): packet i goes to the first child as soon as it arrives,
//!   and to the later children only after the whole message has gone to the
//!   earlier ones.
//!
//! Packets are indexed from 0 in this API (the paper counts from 1).
//!
//! # Holding packets
//! A packet is *held* by an NI from the time it is in NI memory until the NI
//! has injected its last copy: the half-open step interval
//! `[hold_start, last_copy_start + 1)`, where `hold_start` is
//! * the arrival step of the packet, at every position but the source;
//! * at the source, the start of its first copy of the packet (the source NI
//!   fetches a packet from host memory when it first needs it; the paper's
//!   buffer analysis is about intermediate NIs, and this choice makes the
//!   source obey the same pattern).
//!
//! A leaf (or any node without children) holds nothing: delivery to its host
//! is not NI buffering. The *peak held* of an NI is the largest number of
//! these intervals that overlap at one time; a packet whose interval ends at t
//! and one whose interval starts at t do not overlap. With this definition the
//! peak is 1 under FPFS on trees whose root has the most children (every
//! packet leaves an intermediate NI before the next arrives, Lemma 1–2), and m
//! under FCFS wherever a node has ≥ 2 children (packet 1 stays until the last
//! child gets it, after all m have arrived) — [Sivaram 1998, §4.2, Fig 6]. Trees whose root has
//! fewer children than a descendant (e.g. n = 16, k = 3) queue packets under
//! FPFS too. The hold time of a packet is the paper's T_p / T_c (§4.2.3) when
//! packets are read as they arrive.

use crate::chain_tree::ChainTree;

/// How an NI orders the copies it sends [Sivaram 1998, §4.2, Fig 6]: the
/// one forwarding type of the workspace (the runtime's engine and
/// `MCAST_FORWARDING` use it too, as `mcast::Forwarding`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Forwarding {
    /// First-Packet-First-Served: packets outer, children inner.
    #[default]
    Fpfs,
    /// First-Child-First-Served: children outer, packets inner.
    Fcfs,
}

impl std::fmt::Display for Forwarding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Forwarding::Fpfs => "fpfs",
            Forwarding::Fcfs => "fcfs",
        })
    }
}

/// A forwarding name that is neither `fpfs` nor `fcfs`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}: expected fpfs or fcfs")]
pub struct ForwardingParseError(pub String);

impl std::str::FromStr for Forwarding {
    type Err = ForwardingParseError;
    /// `fpfs` or `fcfs`, in any case.
    fn from_str(s: &str) -> Result<Self, ForwardingParseError> {
        match s.to_ascii_lowercase().as_str() {
            "fpfs" => Ok(Forwarding::Fpfs),
            "fcfs" => Ok(Forwarding::Fcfs),
            other => Err(ForwardingParseError(other.to_string())),
        }
    }
}

/// The outcome of a unit-step run: per-position arrival steps, completion
/// step, and NI packet holding (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    forwarding: Forwarding,
    m: usize,
    arrivals: Vec<Vec<usize>>,
    hold_start: Vec<Vec<usize>>,
    released: Vec<Vec<usize>>,
    peak_held_at: Vec<usize>,
    completion: usize,
}

/// Run the unit-step model on `tree` with `m` packets under `forwarding`.
///
/// `m = 0` yields an empty schedule (completion 0, nothing held).
pub fn simulate(tree: &ChainTree, m: usize, forwarding: Forwarding) -> Schedule {
    let n = tree.n();
    let mut arrivals = vec![vec![0usize; m]; n];
    let mut hold_start = vec![vec![0usize; m]; n];
    let mut released = vec![vec![0usize; m]; n];
    // Parents come before children in pre-order, so every node's arrivals are
    // final before it is processed.
    for &v in tree.preorder() {
        let children = tree.children(v);
        let mut free = 0usize;
        // Start of this node's first copy of each packet.
        let mut first_start: Vec<Option<usize>> = vec![None; m];
        let mut copy = |c: usize, j: usize, arrivals: &mut Vec<Vec<usize>>| {
            let start = free.max(arrivals[v][j]);
            free = start + 1;
            arrivals[c][j] = start + 1;
            first_start[j].get_or_insert(start);
            released[v][j] = start + 1;
        };
        match forwarding {
            Forwarding::Fpfs => {
                for j in 0..m {
                    for &c in children {
                        copy(c, j, &mut arrivals);
                    }
                }
            }
            Forwarding::Fcfs => {
                for &c in children {
                    for j in 0..m {
                        copy(c, j, &mut arrivals);
                    }
                }
            }
        }
        if children.is_empty() {
            // Nothing to forward: nothing held (empty interval).
            hold_start[v].clone_from(&arrivals[v]);
            released[v].clone_from(&arrivals[v]);
        } else if tree.parent(v).is_none() {
            // The source fetches a packet when it starts its first copy.
            for (h, f) in hold_start[v].iter_mut().zip(&first_start) {
                *h = f.unwrap_or(0);
            }
        } else {
            hold_start[v].clone_from(&arrivals[v]);
        }
    }
    let peak_held_at = (0..n)
        .map(|v| peak_overlap(&hold_start[v], &released[v]))
        .collect();
    let completion = arrivals
        .iter()
        .flat_map(|a| a.iter().copied())
        .max()
        .unwrap_or(0);
    Schedule {
        forwarding,
        m,
        arrivals,
        hold_start,
        released,
        peak_held_at,
        completion,
    }
}

/// The largest number of half-open intervals `[from[i], to[i])` that overlap.
fn peak_overlap(from: &[usize], to: &[usize]) -> usize {
    // (time, delta): ends (-1) sort before starts (+1) at equal times.
    let mut events: Vec<(usize, i8)> = Vec::with_capacity(2 * from.len());
    for (&a, &b) in from.iter().zip(to) {
        if b > a {
            events.push((a, 1));
            events.push((b, -1));
        }
    }
    events.sort_unstable();
    let (mut cur, mut peak) = (0i64, 0i64);
    for (_, d) in events {
        cur += i64::from(d);
        peak = peak.max(cur);
    }
    peak as usize
}

impl Schedule {
    /// The forwarding the schedule was computed with.
    pub fn forwarding(&self) -> Forwarding {
        self.forwarding
    }

    /// The number of packets m.
    pub fn packets(&self) -> usize {
        self.m
    }

    /// The step at which packet `packet` (0-based) arrives at position `pos`
    /// (0 for the source).
    ///
    /// # Panics
    /// If `pos` or `packet` is out of range.
    pub fn arrival(&self, pos: usize, packet: usize) -> usize {
        self.arrivals[pos][packet]
    }

    /// The arrival steps of every packet at `pos`, in packet order.
    ///
    /// # Panics
    /// If `pos` is out of range.
    pub fn arrivals(&self, pos: usize) -> &[usize] {
        &self.arrivals[pos]
    }

    /// The completion step: the last arrival of any packet anywhere
    /// (0 for a single node or m = 0).
    pub fn completion(&self) -> usize {
        self.completion
    }

    /// L_i of the paper: the step at which packet `packet` (0-based) has
    /// reached every position.
    ///
    /// # Panics
    /// If `packet >= self.packets()`.
    pub fn packet_completion(&self, packet: usize) -> usize {
        assert!(packet < self.m, "packet {packet} out of range");
        self.arrivals.iter().map(|a| a[packet]).max().unwrap_or(0)
    }

    /// The half-open step interval during which `pos`'s NI holds `packet`, or
    /// `None` if it never holds it (it forwards to nobody).
    ///
    /// # Panics
    /// If `pos` or `packet` is out of range.
    pub fn hold_interval(&self, pos: usize, packet: usize) -> Option<(usize, usize)> {
        let (a, b) = (self.hold_start[pos][packet], self.released[pos][packet]);
        (b > a).then_some((a, b))
    }

    /// The largest number of packets `pos`'s NI holds at once.
    ///
    /// # Panics
    /// If `pos` is out of range.
    pub fn peak_held_at(&self, pos: usize) -> usize {
        self.peak_held_at[pos]
    }

    /// The largest number of packets any NI (source included) holds at once.
    pub fn peak_held(&self) -> usize {
        self.peak_held_at.iter().copied().max().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shape::Shape;

    fn kb(n: usize, k: usize) -> ChainTree {
        ChainTree::new(Shape::KBinomial { k }, n).unwrap()
    }

    #[test]
    fn trivial_cases() {
        let t = kb(1, 2);
        let s = simulate(&t, 3, Forwarding::Fpfs);
        assert_eq!(s.completion(), 0);
        assert_eq!(s.peak_held(), 0);
        assert_eq!(s.arrivals(0), &[0, 0, 0]);
        let s = simulate(&kb(5, 2), 0, Forwarding::Fcfs);
        assert_eq!(s.completion(), 0);
        assert_eq!(s.peak_held(), 0);
        assert_eq!(s.packets(), 0);
    }

    #[test]
    fn linear_pipeline() {
        // S -> 1 -> 2 -> 3, 3 packets: 5 steps, every NI holds one packet.
        let t = kb(4, 1);
        for d in [Forwarding::Fpfs, Forwarding::Fcfs] {
            let s = simulate(&t, 3, d);
            assert_eq!(s.arrivals(1), &[1, 2, 3]);
            assert_eq!(s.arrivals(2), &[2, 3, 4]);
            assert_eq!(s.arrivals(3), &[3, 4, 5]);
            assert_eq!(s.completion(), 5);
            assert_eq!(s.peak_held(), 1);
            assert_eq!(s.hold_interval(1, 0), Some((1, 2)));
            assert_eq!(s.hold_interval(0, 2), Some((2, 3)));
            assert_eq!(s.hold_interval(3, 0), None);
            assert_eq!(s.packet_completion(0), 3);
            assert_eq!(s.packet_completion(2), 5);
        }
    }

    #[test]
    fn flat_source_sends_everything() {
        let t = ChainTree::new(Shape::Flat, 5).unwrap();
        let s = simulate(&t, 2, Forwarding::Fpfs);
        assert_eq!(s.completion(), 8);
        assert_eq!(s.arrivals(1), &[1, 5]);
        assert_eq!(s.arrivals(4), &[4, 8]);
        assert_eq!(s.peak_held(), 1);
        let s = simulate(&t, 2, Forwarding::Fcfs);
        assert_eq!(s.arrivals(1), &[1, 2]);
        assert_eq!(s.arrivals(4), &[7, 8]);
        assert_eq!(s.peak_held(), 2);
    }

    #[test]
    fn peak_overlap_half_open() {
        assert_eq!(peak_overlap(&[0, 1, 2], &[1, 2, 3]), 1);
        assert_eq!(peak_overlap(&[0, 1, 2], &[3, 3, 3]), 3);
        assert_eq!(peak_overlap(&[0, 0], &[0, 0]), 0);
    }
}
