//! Oracles for planned multicasts on a topology
//! (DESIGN.md idea 1; the contention theory of [Robinson 1994, §3.2.3–3.2.4, §4.3]).
//!
//! * [`check_delivery`]: every destination receives exactly once, nobody else
//!   receives, every sender had received, and every address field D is the
//!   receiver's share of its sender's responsibility (the existing
//!   [`crate::oracle`] checks on [`Multicast::to_plan`]).
//! * [`check_steps`]: the steps are the ones the plan's [`PortModel`] gives
//!   (recomputed independently) and the step count.
//! * [`stepwise_conflicts`]: pairs of unicasts of the same step that share a
//!   virtual channel.
//! * [`depth_conflicts`]: pairs of unicasts that share a virtual channel and
//!   satisfy none of the four conditions of Theorems 3.3 / 4.1, i.e. that can
//!   contend for some startup latency and message length.
//! * [`link_sharing`]: physical-link sharing of [Robinson 1994, §4.5, Figs 4.16–4.17], Type 1 and Type 2.
//! * [`analyze`]: all counts at once, as a serialisable [`ContentionReport`].
//!
//! Sends are referred to by their index in [`Multicast::sends`].

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use crate::oracle::{self, OracleError};
use crate::plan::PlanError;
use crate::topo::{Channel, TopoError, Topology};
use crate::trees::{Multicast, PortModel, TreeSendRef};

/// Why an oracle could not run or found a broken plan.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContentionError {
    /// The plan does not deliver exactly once (or breaks responsibility).
    #[error(transparent)]
    Delivery(#[from] OracleError),
    /// The plan could not be turned into a [`crate::Plan`].
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// A node of the plan is not in the topology.
    #[error(transparent)]
    Topo(#[from] TopoError),
    /// A send's step is not the one the plan's port model gives.
    #[error("send {from} -> {to} is in step {got}, but the port model puts it in step {expected}")]
    Step {
        /// The sender.
        from: usize,
        /// The receiver.
        to: usize,
        /// The step the model gives.
        expected: usize,
        /// The step in the plan.
        got: usize,
    },
}

/// Two sends (indices into [`Multicast::sends`], `first` the earlier step)
/// and one virtual channel they both use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Conflict {
    /// The send with the smaller step (smaller index on a tie).
    pub first: usize,
    /// The other send.
    pub second: usize,
    /// A channel both use.
    pub channel: Channel,
}

/// Physical-link sharing between unicasts of the same step [Robinson 1994, §4.5, Figs 4.16–4.17].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct LinkSharing {
    /// Type 1: the number of unicasts that share a one-directional physical
    /// link (same-direction multiplexing: p and h of a unidirectional link;
    /// same-direction classes of a bidirectional one) with at least one other
    /// unicast of the same step.
    pub type1: usize,
    /// Type 2: the number of unicasts that share a physical link with at
    /// least two other unicasts of the same step when all classes of both
    /// directions are multiplexed on it (3-way).
    pub type2: usize,
}

/// All contention counts of a plan (the `contention` object of `mcsim plan`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct ContentionReport {
    /// Pairs of same-step unicasts sharing a virtual channel.
    pub stepwise: usize,
    /// Pairs of unicasts sharing a virtual channel with none of the
    /// conditions of Theorems 3.3 / 4.1 (includes the stepwise pairs of
    /// different senders).
    pub depth: usize,
    /// Type 1 link sharing (see [`LinkSharing`]).
    pub link_type1: usize,
    /// Type 2 link sharing (see [`LinkSharing`]).
    pub link_type2: usize,
}

/// Check delivery (exactly once, nobody else, senders reached) and the
/// address fields (every D lies in the sender's responsibility, is split
/// without overlap and completely).
///
/// # Errors
/// [`ContentionError::Delivery`] with the first violation.
pub fn check_delivery(m: &Multicast) -> Result<(), ContentionError> {
    let plan = m.to_plan()?;
    oracle::check_responsibility(&plan, m.source(), m.destinations())?;
    Ok(())
}

/// Recompute every step from the plan's tree, issue orders and port model
/// and compare; return the step count.
///
/// # Errors
/// [`ContentionError::Delivery`] if the plan is not a delivery tree;
/// [`ContentionError::Topo`] for nodes outside `topo`;
/// [`ContentionError::Step`] for the first send whose step differs.
pub fn check_steps(topo: &Topology, m: &Multicast) -> Result<usize, ContentionError> {
    let plan = m.to_plan()?;
    oracle::check_delivery(&plan, m.source(), m.destinations())?;
    let recv: HashMap<usize, usize> = m.sends().iter().map(|s| (s.to, s.step)).collect();
    let all = m.sends();
    let mut by_sender: HashMap<usize, Vec<&TreeSendRef<'_>>> = HashMap::new();
    for s in &all {
        topo.check_node(s.from)?;
        topo.check_node(s.to)?;
        by_sender.entry(s.from).or_default().push(s);
    }
    for (from, mut sends) in by_sender {
        sends.sort_by_key(|s| s.order);
        let t = if from == m.source() {
            0
        } else {
            recv.get(&from).copied().unwrap_or_default()
        };
        let mut last_on: HashMap<Option<(usize, crate::topo::Dir)>, (usize, usize)> =
            HashMap::new();
        let mut prev = t + 1;
        for (j, s) in sends.iter().enumerate() {
            let expected = match m.port_model() {
                PortModel::OnePort => t + j + 1,
                model => {
                    let port = topo.first_channel(from, s.to)?.map(|c| (c.dim, c.dir));
                    let (last, count) = last_on.entry(port).or_insert((t, 0));
                    *count += 1;
                    let e = if model == PortModel::AllPortA {
                        t + *count
                    } else {
                        prev.max(*last + 1)
                    };
                    *last = e;
                    prev = e;
                    e
                }
            };
            if expected != s.step {
                return Err(ContentionError::Step {
                    from,
                    to: s.to,
                    expected,
                    got: s.step,
                });
            }
        }
    }
    Ok(m.sends().iter().map(|s| s.step).max().unwrap_or(0))
}

fn routes(topo: &Topology, m: &Multicast) -> Result<Vec<Vec<Channel>>, ContentionError> {
    m.sends()
        .iter()
        .map(|s| topo.route(s.from, s.to).map_err(ContentionError::from))
        .collect()
}

/// Every pair of same-step unicasts that share a virtual channel (one
/// [`Conflict`] per pair, naming the first shared channel found).
///
/// # Errors
/// [`ContentionError::Topo`] for nodes outside `topo`.
pub fn stepwise_conflicts(
    topo: &Topology,
    m: &Multicast,
) -> Result<Vec<Conflict>, ContentionError> {
    let routes = routes(topo, m)?;
    let sends = m.sends();
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    let mut users: HashMap<(usize, Channel), Vec<usize>> = HashMap::new();
    for (i, r) in routes.iter().enumerate() {
        for c in r {
            users.entry((sends[i].step, *c)).or_default().push(i);
        }
    }
    let mut keys: Vec<_> = users.keys().copied().collect();
    keys.sort_unstable();
    for key in keys {
        let list = &users[&key];
        for (a, &i) in list.iter().enumerate() {
            for &j in &list[a + 1..] {
                if seen.insert((i, j)) {
                    out.push(Conflict {
                        first: i,
                        second: j,
                        channel: key.1,
                    });
                }
            }
        }
    }
    Ok(out)
}

/// The delivery tree of a plan, for the conditions of Theorem 3.3 / 4.1.
struct TreeIndex<'a> {
    sends: Vec<TreeSendRef<'a>>,
    /// node -> index of the send that reaches it.
    recv: HashMap<usize, usize>,
    /// node -> (entry, exit) of a depth-first walk.
    span: HashMap<usize, (usize, usize)>,
}

impl<'a> TreeIndex<'a> {
    fn new(m: &'a Multicast) -> TreeIndex<'a> {
        let sends = m.sends();
        let recv: HashMap<usize, usize> =
            sends.iter().enumerate().map(|(i, s)| (s.to, i)).collect();
        let mut kids: HashMap<usize, Vec<usize>> = HashMap::new();
        for s in &sends {
            kids.entry(s.from).or_default().push(s.to);
        }
        let mut span = HashMap::new();
        let mut clock = 0;
        // (node, exiting?)
        let mut stack = vec![(m.source(), false)];
        while let Some((v, exiting)) = stack.pop() {
            if exiting {
                if let Some(e) = span.get_mut(&v) {
                    let e: &mut (usize, usize) = e;
                    e.1 = clock;
                }
                clock += 1;
                continue;
            }
            span.insert(v, (clock, clock));
            clock += 1;
            stack.push((v, true));
            for &c in kids.get(&v).map(Vec::as_slice).unwrap_or(&[]) {
                stack.push((c, false));
            }
        }
        TreeIndex { sends, recv, span }
    }

    /// Whether `a` is `b` or an ancestor of `b` (`b` ∈ R_a).
    fn reaches(&self, a: usize, b: usize) -> bool {
        match (self.span.get(&a), self.span.get(&b)) {
            (Some(&(ia, oa)), Some(&(ib, ob))) => ia <= ib && ob <= oa,
            _ => false,
        }
    }

    /// One of the four conditions of Theorem 3.3 (Theorem 4.1) for the pair
    /// of sends `a` = (u, v, t) and `b` = (x, y, τ), t ≤ τ, other than
    /// arc-disjointness (the caller knows they share a channel).
    fn safe(&self, a: usize, b: usize) -> bool {
        let sa = &self.sends[a];
        let sb = &self.sends[b];
        let (u, v, t) = (sa.from, sa.to, sa.step);
        let x = sb.from;
        if x == u || self.reaches(v, x) {
            return true;
        }
        // Condition 4: x ∈ R_w for a child w of u that u sends to after t.
        if !self.reaches(u, x) {
            return false;
        }
        let mut w = x;
        loop {
            let Some(&i) = self.recv.get(&w) else {
                return false;
            };
            let s = &self.sends[i];
            if s.from == u {
                return s.step > t;
            }
            w = s.from;
        }
    }
}

/// Every pair of unicasts that share a virtual channel and satisfy none of
/// the conditions of Theorem 3.3 / 4.1 (same sender; the later sender is in
/// the subtree of the earlier receiver; the later sender is in the subtree of
/// a node the earlier sender serves in a later step). Pairs in the same step
/// are checked in both orders.
///
/// # Errors
/// [`ContentionError::Delivery`] if the plan is not a delivery tree;
/// [`ContentionError::Topo`] for nodes outside `topo`.
pub fn depth_conflicts(topo: &Topology, m: &Multicast) -> Result<Vec<Conflict>, ContentionError> {
    let plan = m.to_plan()?;
    oracle::check_delivery(&plan, m.source(), m.destinations())?;
    let routes = routes(topo, m)?;
    let tree = TreeIndex::new(m);
    let sends = m.sends();
    let mut users: HashMap<Channel, Vec<usize>> = HashMap::new();
    for (i, r) in routes.iter().enumerate() {
        for c in r {
            users.entry(*c).or_default().push(i);
        }
    }
    let mut keys: Vec<Channel> = users.keys().copied().collect();
    keys.sort_unstable();
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for c in keys {
        let list = &users[&c];
        for (k, &i) in list.iter().enumerate() {
            for &j in &list[k + 1..] {
                let (a, b) = if sends[i].step <= sends[j].step {
                    (i, j)
                } else {
                    (j, i)
                };
                let ok = tree.safe(a, b) || (sends[a].step == sends[b].step && tree.safe(b, a));
                if !ok && seen.insert((a, b)) {
                    out.push(Conflict {
                        first: a,
                        second: b,
                        channel: c,
                    });
                }
            }
        }
    }
    Ok(out)
}

/// Count physical-link sharing between unicasts of the same step ([Robinson 1994, §4.5, Figs 4.16–4.17]).
///
/// # Errors
/// [`ContentionError::Topo`] for nodes outside `topo`.
pub fn link_sharing(topo: &Topology, m: &Multicast) -> Result<LinkSharing, ContentionError> {
    let routes = routes(topo, m)?;
    let sends = m.sends();
    let mut directed: HashMap<(usize, crate::topo::DirectedLink), Vec<usize>> = HashMap::new();
    let mut undirected: HashMap<(usize, crate::topo::UndirectedLink), Vec<usize>> = HashMap::new();
    for (i, r) in routes.iter().enumerate() {
        let step = sends[i].step;
        for c in r {
            let d = directed.entry((step, topo.directed_link(c))).or_default();
            if d.last() != Some(&i) {
                d.push(i);
            }
            let u = undirected
                .entry((step, topo.undirected_link(c)))
                .or_default();
            if u.last() != Some(&i) {
                u.push(i);
            }
        }
    }
    Ok(LinkSharing {
        type1: count_sharers(directed.values(), 2),
        type2: count_sharers(undirected.values(), 3),
    })
}

/// The number of distinct sends that appear in some list of at least `min`
/// distinct sends.
fn count_sharers<'a>(lists: impl Iterator<Item = &'a Vec<usize>>, min: usize) -> usize {
    let mut hit = HashSet::new();
    for users in lists {
        let mut u = users.clone();
        u.sort_unstable();
        u.dedup();
        if u.len() >= min {
            hit.extend(u);
        }
    }
    hit.len()
}

/// Run every counting oracle; delivery is checked first.
///
/// # Errors
/// As [`check_delivery`] and [`depth_conflicts`].
pub fn analyze(topo: &Topology, m: &Multicast) -> Result<ContentionReport, ContentionError> {
    check_delivery(m)?;
    let sharing = link_sharing(topo, m)?;
    Ok(ContentionReport {
        stepwise: stepwise_conflicts(topo, m)?.len(),
        depth: depth_conflicts(topo, m)?.len(),
        link_type1: sharing.type1,
        link_type2: sharing.type2,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topo::Resolution;
    use crate::trees::{plan, Options, TreeAlgorithm, TreeSend};

    #[test]
    fn ucube_model_a_caveat() {
        // [Robinson 1994, §3.4, Fig 3.9, derived]: U-cube on an all-port 5-cube under Model A has
        // stepwise contention on arc 01000 -> 01010 in step 2; Model B has none.
        let h = Topology::hypercube(5, Resolution::HighToLow).unwrap();
        let dests = [
            0b00100, 0b01010, 0b01011, 0b01101, 0b01110, 0b01111, 0b10000, 0b10011, 0b10101,
            0b11011, 0b11100, 0b11111,
        ];
        let a = plan(
            &h,
            TreeAlgorithm::UCube,
            0,
            &dests,
            Options::with_port_model(PortModel::AllPortA),
        )
        .unwrap();
        let c = stepwise_conflicts(&h, &a).unwrap();
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].channel.node, 0b01000);
        assert_eq!(c[0].channel.dim, 1);
        assert_eq!(check_steps(&h, &a), Ok(a.steps()));
        let b = plan(
            &h,
            TreeAlgorithm::UCube,
            0,
            &dests,
            Options::with_port_model(PortModel::AllPortB),
        )
        .unwrap();
        assert!(stepwise_conflicts(&h, &b).unwrap().is_empty());
        assert_eq!(check_steps(&h, &b), Ok(b.steps()));
    }

    #[test]
    fn broken_plans_are_reported() {
        let h = Topology::hypercube(3, Resolution::HighToLow).unwrap();
        let t = |step, from, to: usize, order| TreeSend {
            step,
            from,
            to,
            covers: vec![to],
            order,
        };
        // Wrong step for one-port.
        let m = Multicast::from_sends(
            0,
            &[1, 2],
            PortModel::OnePort,
            vec![t(1, 0, 1, 0), t(1, 0, 2, 1)],
        );
        assert_eq!(check_delivery(&m), Ok(()));
        assert_eq!(
            check_steps(&h, &m),
            Err(ContentionError::Step {
                from: 0,
                to: 2,
                expected: 2,
                got: 1
            })
        );
        // Duplicate delivery.
        let m = Multicast::from_sends(
            0,
            &[1],
            PortModel::OnePort,
            vec![t(1, 0, 1, 0), t(2, 0, 1, 1)],
        );
        assert!(matches!(
            check_delivery(&m),
            Err(ContentionError::Delivery(_))
        ));
        assert!(depth_conflicts(&h, &m).is_err());
        assert!(analyze(&h, &m).is_err());
        // A node outside the topology.
        let m = Multicast::from_sends(0, &[9], PortModel::OnePort, vec![t(1, 0, 9, 0)]);
        assert!(matches!(
            stepwise_conflicts(&h, &m),
            Err(ContentionError::Topo(_))
        ));
        assert!(matches!(
            link_sharing(&h, &m),
            Err(ContentionError::Topo(_))
        ));
    }
}
