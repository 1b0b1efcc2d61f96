//! The two-phase (two-pass) multicast [Park 1996, §3.1]: pass 1
//! copies the packet with one region header to f consecutive relays
//! `s..s+f−1`; pass 2 has relay `s+l` recycle its copy as a unicast to the
//! l-th smallest destination. Relays receive in pass 1 without delivering to
//! their host (intermediate reception); hosts receive only in pass 2.

use serde::Serialize;

use super::header::RegionHeader;
use super::network::{Arbitration, Min, MinError, MinTrace, Wave};
use crate::irregular::SplitMix64;

/// How the first relay s is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// This s (must satisfy s + f ≤ 2^n).
    Fixed(u64),
    /// Uniform in `0..=2^n − f` from a seeded generator (the paper: "s is
    /// randomly selected"; a region cannot wrap, so s ≤ 2^n − f).
    Seeded(u64),
}

/// One packet of the two-pass multicast.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MinSend {
    /// The pass (1 or 2).
    pub pass: u32,
    /// The injecting node.
    pub from: u32,
    /// The header.
    pub header: RegionHeader,
    /// The packet's path (nodes reached, per-copy stage out-links).
    pub trace: MinTrace,
    /// The nodes whose host receives this packet (pass 2: its destination;
    /// pass 1: none).
    pub delivers: Vec<u32>,
}

/// A two-pass multicast plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TwoPassPlan {
    /// The source.
    pub source: u32,
    /// The destinations, ascending.
    pub destinations: Vec<u32>,
    /// The first relay s.
    pub start: u32,
    /// The packets: the pass-1 region packet, then the f pass-2 unicasts in
    /// relay order.
    pub sends: Vec<MinSend>,
}

impl TwoPassPlan {
    /// The number of passes (always 2).
    pub fn passes(&self) -> u32 {
        self.sends.iter().map(|s| s.pass).max().unwrap_or(0)
    }

    /// Links traversed over both passes (injection links included).
    pub fn link_visits(&self) -> usize {
        self.sends.iter().map(|s| s.trace.link_visits()).sum()
    }

    /// The relays `s..s+f−1`.
    pub fn relays(&self) -> Vec<u32> {
        (0..self.destinations.len() as u32)
            .map(|l| self.start + l)
            .collect()
    }
}

/// Plan the two-pass multicast from `source` to `dests`.
///
/// # Errors
/// [`MinError::NoDestinations`], [`MinError::NodeOutOfRange`],
/// [`MinError::DuplicateDestination`], [`MinError::SourceIsDestination`],
/// [`MinError::BadStart`].
pub fn two_pass(
    net: &Min,
    source: u64,
    dests: &[u64],
    start: Start,
) -> Result<TwoPassPlan, MinError> {
    let n = net.stages();
    let source = net.check_node(source)?;
    if dests.is_empty() {
        return Err(MinError::NoDestinations);
    }
    let mut d = dests
        .iter()
        .map(|&x| net.check_node(x))
        .collect::<Result<Vec<u32>, _>>()?;
    d.sort_unstable();
    for w in d.windows(2) {
        if w[0] == w[1] {
            return Err(MinError::DuplicateDestination(w[0]));
        }
    }
    if d.binary_search(&source).is_ok() {
        return Err(MinError::SourceIsDestination(source));
    }
    let f = d.len() as u64;
    let s = match start {
        Start::Fixed(s) => s,
        Start::Seeded(seed) => {
            let span = net.nodes() - f + 1;
            SplitMix64::new(seed).next_u64() % span
        }
    };
    let fits = matches!(s.checked_add(f), Some(e) if e <= net.nodes());
    if !fits {
        return Err(MinError::BadStart {
            start: s,
            f,
            nodes: net.nodes(),
        });
    }
    let s = s as u32;
    let last = s + (f as u32 - 1);
    let h1 = RegionHeader::new(n, s, last)?;
    let mut sends = vec![MinSend {
        pass: 1,
        from: source,
        header: h1,
        trace: net.trace(source, h1)?,
        delivers: Vec::new(),
    }];
    for (l, &dst) in d.iter().enumerate() {
        let relay = s + l as u32;
        let h = RegionHeader::unicast(n, dst)?;
        sends.push(MinSend {
            pass: 2,
            from: relay,
            header: h,
            trace: net.trace(relay, h)?,
            delivers: vec![dst],
        });
    }
    Ok(TwoPassPlan {
        source,
        destinations: d,
        start: s,
        sends,
    })
}

/// Why a two-pass plan fails its oracle.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TwoPassOracleError {
    /// Not exactly two passes.
    #[error("the plan takes {0} passes, not 2")]
    Passes(u32),
    /// Pass 1 does not reach exactly the relays.
    #[error("pass 1 reaches {got:?}, not the relays {want:?}")]
    Relays {
        /// Reached.
        got: Vec<u32>,
        /// The relays.
        want: Vec<u32>,
    },
    /// A pass-2 packet from a node that did not receive in pass 1.
    #[error("node {0} sends in pass 2 without having received in pass 1")]
    NotARelay(u32),
    /// A host delivery that is not the packet's own destination.
    #[error("a pass-2 packet from {from} reaches {got:?}")]
    Misrouted {
        /// The relay.
        from: u32,
        /// What it reached.
        got: Vec<u32>,
    },
    /// A destination delivered zero or several times, or a non-destination
    /// delivered.
    #[error("node {node} is delivered {count} times")]
    Delivery {
        /// The node.
        node: u32,
        /// Times delivered.
        count: usize,
    },
    /// Two copies of this multicast collide within one pass.
    #[error("copies of one multicast collide in pass {pass} ({blocked} blocked)")]
    Collision {
        /// The pass.
        pass: u32,
        /// Blocked copies.
        blocked: usize,
    },
    /// The MIN refused a packet of the plan.
    #[error(transparent)]
    Min(#[from] MinError),
}

/// The oracle: exactly two passes; pass 1 reaches exactly the relays; every
/// pass-2 packet leaves a relay and reaches only its destination; every
/// destination is delivered exactly once and nobody else; and within each
/// pass, run lock-step under upper-first arbitration, no copy of this
/// multicast blocks another (Theorem 1).
///
/// # Errors
/// The first violation found.
pub fn check_two_pass(net: &Min, plan: &TwoPassPlan) -> Result<(), TwoPassOracleError> {
    if plan.passes() != 2 {
        return Err(TwoPassOracleError::Passes(plan.passes()));
    }
    let relays = plan.relays();
    let mut received: Vec<u32> = Vec::new();
    let mut deliveries: std::collections::BTreeMap<u32, usize> = Default::default();
    for pass in [1, 2] {
        let packets: Vec<(u32, RegionHeader)> = plan
            .sends
            .iter()
            .filter(|s| s.pass == pass)
            .map(|s| (s.from, s.header))
            .collect();
        let wave: Wave = net.wave(&packets, Arbitration::UpperFirst)?;
        if !wave.blocked.is_empty() || wave.self_collisions != 0 {
            return Err(TwoPassOracleError::Collision {
                pass,
                blocked: wave.blocked.len(),
            });
        }
        for (s, got) in plan
            .sends
            .iter()
            .filter(|s| s.pass == pass)
            .zip(&wave.delivered)
        {
            if pass == 1 {
                if *got != relays {
                    return Err(TwoPassOracleError::Relays {
                        got: got.clone(),
                        want: relays.clone(),
                    });
                }
                received.extend(got);
            } else {
                if !received.contains(&s.from) {
                    return Err(TwoPassOracleError::NotARelay(s.from));
                }
                if *got != s.delivers {
                    return Err(TwoPassOracleError::Misrouted {
                        from: s.from,
                        got: got.clone(),
                    });
                }
                for &d in got {
                    *deliveries.entry(d).or_default() += 1;
                }
            }
        }
    }
    for &d in &plan.destinations {
        let c = deliveries.get(&d).copied().unwrap_or(0);
        if c != 1 {
            return Err(TwoPassOracleError::Delivery { node: d, count: c });
        }
    }
    if let Some((&node, &count)) = deliveries
        .iter()
        .find(|(n, _)| plan.destinations.binary_search(n).is_err())
    {
        return Err(TwoPassOracleError::Delivery { node, count });
    }
    Ok(())
}
