//! Oracles that check a [`Plan`] (DESIGN.md, idea 1).
//!
//! [`check_delivery`] is the delivery oracle every planner must pass: every
//! destination receives exactly once, nobody else receives, the source never
//! receives, and every sender had received before it sends (the sends form a
//! tree rooted at the source). [`check_responsibility`] additionally checks the
//! header contract of DESIGN.md idea 3 for planners that delegate destination
//! sets.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use crate::plan::Plan;

/// A violated delivery or responsibility property.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OracleError {
    /// The plan's source is not the expected source.
    #[error("plan source is {plan} but the multicast source is {expected}")]
    SourceMismatch {
        /// The plan's source.
        plan: usize,
        /// The source passed to the oracle.
        expected: usize,
    },
    /// The destination set contains the source.
    #[error("the destination set contains the source {0}")]
    SourceIsDestination(usize),
    /// Some node sends to the source.
    #[error("the source {source_node} receives a copy from {from}")]
    SourceReceives {
        /// The source.
        source_node: usize,
        /// The node that sends to it.
        from: usize,
    },
    /// A destination receives more than one copy.
    #[error("node {node} receives {count} copies")]
    Duplicate {
        /// The node.
        node: usize,
        /// How many copies it receives.
        count: usize,
    },
    /// A node outside the destination set receives.
    #[error("node {node} is not a destination but receives from {from}")]
    Unexpected {
        /// The receiving node.
        node: usize,
        /// The first node that sends to it.
        from: usize,
    },
    /// A destination never receives.
    #[error("destination {0} never receives")]
    Missing(usize),
    /// A node sends without having received (it is not reachable from the
    /// source through the plan's sends).
    #[error("node {0} sends but never receives from a node reached by the source")]
    SenderNotReached(usize),
    /// A send delegates a node the sender is not responsible for (or the target
    /// itself is missing from its own responsibility set).
    #[error("node {sender} delegates {node}, which is not in its responsibility")]
    NotResponsible {
        /// The sending node.
        sender: usize,
        /// The delegated node.
        node: usize,
    },
    /// A sender delegates the same node twice.
    #[error("node {sender} delegates {node} more than once")]
    DelegatedTwice {
        /// The sending node.
        sender: usize,
        /// The node delegated twice.
        node: usize,
    },
    /// A sender neither delegates nor is a node of its responsibility set.
    #[error("node {sender} is responsible for {node} but delegates it to nobody")]
    NotCovered {
        /// The sending node.
        sender: usize,
        /// The forgotten node.
        node: usize,
    },
}

/// Check that `plan` delivers from `source` to exactly `dests`.
///
/// Properties, checked in this order (the first violation is returned):
/// the plan's source is `source`; `dests` does not contain `source`; the source
/// receives nothing; no node outside `dests` receives; no node receives more
/// than once; every destination receives; every node with sends is reachable
/// from the source through the plan's sends. Because every non-source receiver
/// has exactly one sender, the last property means the sends form a tree rooted
/// at the source, so a schedule in which each node sends after it received
/// exists (a sender "has already received before it sends").
///
/// `dests` is treated as a set (repeats are ignored).
pub fn check_delivery(plan: &Plan, source: usize, dests: &[usize]) -> Result<(), OracleError> {
    if plan.source() != source {
        return Err(OracleError::SourceMismatch {
            plan: plan.source(),
            expected: source,
        });
    }
    let dests: BTreeSet<usize> = dests.iter().copied().collect();
    if dests.contains(&source) {
        return Err(OracleError::SourceIsDestination(source));
    }
    // receiver -> (count, first sender)
    let mut received: BTreeMap<usize, (usize, usize)> = BTreeMap::new();
    for (from, sends) in plan.nodes() {
        for s in sends {
            if s.to == source {
                return Err(OracleError::SourceReceives {
                    source_node: source,
                    from,
                });
            }
            received.entry(s.to).or_insert((0, from)).0 += 1;
        }
    }
    for (&node, &(_, from)) in &received {
        if !dests.contains(&node) {
            return Err(OracleError::Unexpected { node, from });
        }
    }
    for (&node, &(count, _)) in &received {
        if count > 1 {
            return Err(OracleError::Duplicate { node, count });
        }
    }
    if let Some(&node) = dests.iter().find(|d| !received.contains_key(d)) {
        return Err(OracleError::Missing(node));
    }
    let reached = reach(plan, source);
    for (node, sends) in plan.nodes() {
        if !sends.is_empty() && !reached.contains(&node) {
            return Err(OracleError::SenderNotReached(node));
        }
    }
    Ok(())
}

/// Check the responsibility contract on top of [`check_delivery`] (which runs
/// first): the source is responsible for `dests`; a node reached by a send is
/// responsible for that send's `covers`. Every node with
/// responsibility R must split R \ {itself} among its sends: each send's
/// `covers` contains its target and lies inside R \ {sender}, no node
/// is delegated twice, and every node of R \ {sender} is delegated.
pub fn check_responsibility(
    plan: &Plan,
    source: usize,
    dests: &[usize],
) -> Result<(), OracleError> {
    check_delivery(plan, source, dests)?;
    let mut queue: VecDeque<(usize, BTreeSet<usize>)> = VecDeque::new();
    queue.push_back((source, dests.iter().copied().collect()));
    while let Some((sender, mut owned)) = queue.pop_front() {
        owned.remove(&sender);
        let mut delegated = BTreeSet::new();
        for s in plan.sends(sender) {
            if !s.covers.contains(&s.to) {
                return Err(OracleError::NotResponsible { sender, node: s.to });
            }
            for &node in &s.covers {
                if !owned.contains(&node) {
                    return Err(OracleError::NotResponsible { sender, node });
                }
                if !delegated.insert(node) {
                    return Err(OracleError::DelegatedTwice { sender, node });
                }
            }
            queue.push_back((s.to, s.covers.iter().copied().collect()));
        }
        if let Some(&node) = owned.difference(&delegated).next() {
            return Err(OracleError::NotCovered { sender, node });
        }
    }
    Ok(())
}

/// Nodes reachable from `source` through the plan's sends (source included).
fn reach(plan: &Plan, source: usize) -> BTreeSet<usize> {
    let mut seen = BTreeSet::from([source]);
    let mut queue = VecDeque::from([source]);
    while let Some(v) = queue.pop_front() {
        for s in plan.sends(v) {
            if seen.insert(s.to) {
                queue.push_back(s.to);
            }
        }
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::PlanSend;
    use crate::shape::Shape;

    fn send(to: usize, resp: &[usize]) -> PlanSend {
        PlanSend {
            to,
            covers: resp.to_vec(),
        }
    }

    fn parts(source: usize, nodes: Vec<(usize, Vec<PlanSend>)>) -> Plan {
        Plan::from_parts(source, nodes).unwrap()
    }

    #[test]
    fn chain_plans_pass() {
        let chain = [7, 3, 9, 1, 12, 4];
        for shape in [
            Shape::Flat,
            Shape::KBinomial { k: 1 },
            Shape::KBinomial { k: 2 },
        ] {
            let p = Plan::from_chain(&chain, shape).unwrap();
            check_delivery(&p, 7, &chain[1..]).unwrap();
            check_responsibility(&p, 7, &chain[1..]).unwrap();
        }
        let p = Plan::from_chain(&[5], Shape::Flat).unwrap();
        check_delivery(&p, 5, &[]).unwrap();
    }

    #[test]
    fn detects_each_violation() {
        let good = parts(
            0,
            vec![(0, vec![send(1, &[1, 2])]), (1, vec![send(2, &[2])])],
        );
        assert_eq!(check_delivery(&good, 0, &[1, 2]), Ok(()));
        assert_eq!(check_responsibility(&good, 0, &[1, 2]), Ok(()));
        assert_eq!(
            check_delivery(&good, 1, &[2]),
            Err(OracleError::SourceMismatch {
                plan: 0,
                expected: 1
            })
        );
        assert_eq!(
            check_delivery(&good, 0, &[0, 1, 2]),
            Err(OracleError::SourceIsDestination(0))
        );
        assert_eq!(
            check_delivery(&good, 0, &[1, 2, 3]),
            Err(OracleError::Missing(3))
        );
        assert_eq!(
            check_delivery(&good, 0, &[1]),
            Err(OracleError::Unexpected { node: 2, from: 1 })
        );

        let back = parts(0, vec![(0, vec![send(1, &[1])]), (1, vec![send(0, &[0])])]);
        assert_eq!(
            check_delivery(&back, 0, &[1]),
            Err(OracleError::SourceReceives {
                source_node: 0,
                from: 1
            })
        );

        let dup = parts(
            0,
            vec![
                (0, vec![send(1, &[1]), send(2, &[2])]),
                (2, vec![send(1, &[1])]),
            ],
        );
        assert_eq!(
            check_delivery(&dup, 0, &[1, 2]),
            Err(OracleError::Duplicate { node: 1, count: 2 })
        );

        // 2 and 3 feed each other; nobody reached by the source sends to them.
        let cycle = parts(
            0,
            vec![
                (0, vec![send(1, &[1])]),
                (2, vec![send(3, &[3])]),
                (3, vec![send(2, &[2])]),
            ],
        );
        assert_eq!(
            check_delivery(&cycle, 0, &[1, 2, 3]),
            Err(OracleError::SenderNotReached(2))
        );
        // A node sending to itself.
        let selfish = parts(0, vec![(0, vec![send(1, &[1])]), (2, vec![send(2, &[2])])]);
        assert_eq!(
            check_delivery(&selfish, 0, &[1, 2]),
            Err(OracleError::SenderNotReached(2))
        );
    }

    #[test]
    fn detects_responsibility_violations() {
        // Delivery is fine, but the source delegates 2 to both 1 and 2.
        let twice = parts(0, vec![(0, vec![send(1, &[1, 2]), send(2, &[2])])]);
        assert_eq!(check_delivery(&twice, 0, &[1, 2]), Ok(()));
        assert_eq!(
            check_responsibility(&twice, 0, &[1, 2]),
            Err(OracleError::DelegatedTwice { sender: 0, node: 2 })
        );
        // 1 is told to cover 2 but forwards nothing; 3 delivers 2 instead.
        let lazy = parts(
            0,
            vec![
                (0, vec![send(1, &[1, 2]), send(3, &[3])]),
                (3, vec![send(2, &[2])]),
            ],
        );
        assert_eq!(check_delivery(&lazy, 0, &[1, 2, 3]), Ok(()));
        assert_eq!(
            check_responsibility(&lazy, 0, &[1, 2, 3]),
            Err(OracleError::NotCovered { sender: 1, node: 2 })
        );
        // The source delegates a node that is not a destination.
        let outside = parts(0, vec![(0, vec![send(1, &[1, 2])])]);
        assert_eq!(
            check_responsibility(&outside, 0, &[1]),
            Err(OracleError::NotResponsible { sender: 0, node: 2 })
        );
        // A target missing from its own responsibility set.
        let target_outside = parts(0, vec![(0, vec![send(1, &[2]), send(2, &[])])]);
        assert_eq!(
            check_responsibility(&target_outside, 0, &[1, 2]),
            Err(OracleError::NotResponsible { sender: 0, node: 1 })
        );
        // 1 forwards to 3, which was delegated to 2.
        let poach = parts(
            0,
            vec![
                (0, vec![send(1, &[1]), send(2, &[2, 3])]),
                (1, vec![send(3, &[3])]),
            ],
        );
        assert_eq!(check_delivery(&poach, 0, &[1, 2, 3]), Ok(()));
        assert_eq!(
            check_responsibility(&poach, 0, &[1, 2, 3]),
            Err(OracleError::NotResponsible { sender: 1, node: 3 })
        );
        // Delivery failures surface first.
        let forgot = parts(0, vec![(0, vec![send(1, &[1, 2])])]);
        assert_eq!(
            check_responsibility(&forgot, 0, &[1, 2]),
            Err(OracleError::Missing(2))
        );
    }
}
