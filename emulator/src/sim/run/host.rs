//! Host store-and-forward trees (`host:<tree>`): software multicast over a
//! conventional NI, as on the SCI testbed of [Oral 2003, §3] and the
//! conventional NI of [Sivaram 1998, §4.1].
//!
//! Every copy is a unicast between hosts. A node forwards only once its
//! host has the whole message (t_hr included); it then sends to its
//! children one after the other in the planner's issue order, its host
//! paying t_hs per copy (the send overhead and the per-iteration work of
//! the algorithm: computing the next child), then DMA and t_ns per packet.
//! So a relay adds t_hr + t_hs (+ the network) per hop, and a root with c
//! children spends c·t_hs before its last copy leaves.
//!
//! Trees: on a direct topology every planner of
//! [`mcast_algorithms::trees`] (`separate`, `dochain`, `utorus`, `ucube`,
//! `maxport`, `combine`, `wsort`, `kbinomial:K`, `mdtorus`,
//! `mutorus:R[:count|:length]`) and `storus`, the S-torus worm run as a
//! relay chain in its delivery order [Oral 2003, §3, Fig 1c]; on other
//! fabrics the chain shapes of the runtime (`flat`, `chain`, `binomial`,
//! `kbinomial:K`) over the destinations by id.

use mcast_algorithms::trees::{plan as tree_plan, Options, TreeAlgorithm};

use super::*;

/// One copy of a host-relayed multicast and when it was in transit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Transfer {
    /// The sender.
    pub from: usize,
    /// The receiver.
    pub to: usize,
    /// When the sender's host started the copy (before its t_hs).
    pub start: Time,
    /// When the receiver's host had the whole message (t_hr included).
    pub end: Time,
}

/// The copies of `tree` from `source` to `dests`: (sender, receiver), by
/// step, each sender's in its issue order.
pub(super) fn host_sends(
    fabric: &SimFabric,
    tree: &str,
    source: usize,
    dests: &[usize],
    m: usize,
) -> Result<Vec<(usize, usize)>, SimulatorError> {
    let bad = |e: &dyn std::fmt::Display| SimulatorError::Input(format!("host:{tree}: {e}"));
    let t = tree.trim();
    if let Some(topo) = fabric.topology() {
        if t.eq_ignore_ascii_case("storus") || t.eq_ignore_ascii_case("s-torus") {
            let plan = mcast_algorithms::path::plan(topo, PathAlgorithm::STorus, source, dests)
                .map_err(|e| bad(&e))?;
            let mut chain = vec![source];
            for s in &plan.sends {
                chain.extend_from_slice(s.delivers());
            }
            return Ok(chain.windows(2).map(|w| (w[0], w[1])).collect());
        }
        let a: TreeAlgorithm = t.parse().map_err(|e| bad(&e))?;
        let opts = Options {
            packets: m,
            ..Options::default()
        };
        let mc = tree_plan(topo, a, source, dests, opts).map_err(|e| bad(&e))?;
        let mut sends: Vec<_> = mc.sends().into_iter().collect();
        sends.sort_by_key(|s| (s.step, s.order));
        return Ok(sends.into_iter().map(|s| (s.from, s.to)).collect());
    }
    let a: Algorithm = t.parse().map_err(|e| bad(&e))?;
    let mut chain = vec![source];
    chain.extend_from_slice(dests);
    let shape = match a.resolve(chain.len(), m, None).map_err(|e| bad(&e))? {
        TreeKind::Chain(shape) => shape,
        other => return Err(bad(&format!("{other:?} needs a direct topology"))),
    };
    let plan = mcast_algorithms::Plan::from_chain(&chain, shape).map_err(|e| bad(&e))?;
    // Breadth-first from the source: a node's copies follow its own receipt.
    let mut out = Vec::with_capacity(dests.len());
    let mut queue = std::collections::VecDeque::from([source]);
    while let Some(v) = queue.pop_front() {
        for s in plan.sends(v) {
            out.push((v, s.to));
            queue.push_back(s.to);
        }
    }
    Ok(out)
}
