//! Plans over real node ids (DESIGN.md, idea 1: "plans are pure").
//!
//! A [`Plan`] lists, for every participating node, the ordered sends it makes:
//! the target and the set of destinations the target becomes responsible for
//! (what the packet header tells the receiving NI to forward, DESIGN.md idea 3).
//! [`Plan::from_chain`] builds one from an ordered chain of node ids and a
//! [`Shape`]; [`Plan::from_parts`] accepts a plan made by any other planner so
//! the same oracles ([`crate::oracle`]) can check it.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use crate::chain_tree::{ChainTree, ChainTreeError};
use crate::shape::Shape;

/// One send of a plan: a copy of every packet goes to `to`, which becomes
/// responsible for `covers`.
///
/// For chain plans `covers` is the receiver's chain range in chain
/// order, so it starts with `to` itself (the receiver is a destination too) and
/// continues with every node it must forward to, directly or indirectly.
///
/// Note: this type shares its name with `std::marker::Send`; it is deliberately
/// not re-exported at the crate root. Refer to it as `plan::PlanSend`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PlanSend {
    /// The receiving node id.
    pub to: usize,
    /// The node ids the receiver becomes responsible for (itself included).
    pub covers: Vec<usize>,
}

/// A plan that cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// The chain has no source.
    #[error("empty chain: a plan needs at least the source")]
    EmptyChain,
    /// A node id occurs twice in the chain.
    #[error("node {node} occurs twice in the chain, at positions {first} and {second}")]
    DuplicateNode {
        /// The repeated node id.
        node: usize,
        /// Its first chain position.
        first: usize,
        /// Its second chain position.
        second: usize,
    },
    /// A node has more than one send list in [`Plan::from_parts`].
    #[error("node {node} has more than one send list")]
    DuplicateEntry {
        /// The repeated node id.
        node: usize,
    },
    /// The tree passed to [`Plan::from_tree`] does not match the chain length.
    #[error("tree has {tree} positions but the chain has {chain} nodes")]
    LengthMismatch {
        /// Positions in the tree.
        tree: usize,
        /// Nodes in the chain.
        chain: usize,
    },
    /// The tree could not be built (e.g. k = 0).
    #[error(transparent)]
    ChainTree(#[from] ChainTreeError),
}

/// For every participating node, the ordered list of sends it makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    source: usize,
    nodes: Vec<(usize, Vec<PlanSend>)>,
    index: BTreeMap<usize, usize>,
}

impl Plan {
    /// Build the plan of `shape` over `chain` (`chain[0]` = source, all ids
    /// distinct): chain position `p` of the [`ChainTree`] is node `chain[p]`.
    ///
    /// Every chain node gets an entry, in chain order (leaves with no sends).
    ///
    /// Memory: the `covers` lists hold Σ_p depth(p) ids in all (each
    /// node appears once per edge on its path from the source): O(n) for `Flat`,
    /// O(n log n) for k-binomial trees with k ≥ 2, O(n²) for the linear chain
    /// (k = 1).
    ///
    /// # Errors
    /// [`PlanError::EmptyChain`], [`PlanError::DuplicateNode`], or
    /// [`PlanError::ChainTree`] for an invalid shape.
    pub fn from_chain(chain: &[usize], shape: Shape) -> Result<Plan, PlanError> {
        check_chain(chain)?;
        let tree = ChainTree::new(shape, chain.len())?;
        Ok(Self::build(chain, &tree))
    }

    /// Like [`Plan::from_chain`] for a tree that is already built.
    ///
    /// # Errors
    /// As [`Plan::from_chain`], plus [`PlanError::LengthMismatch`] when
    /// `tree.n() != chain.len()`.
    pub fn from_tree(chain: &[usize], tree: &ChainTree) -> Result<Plan, PlanError> {
        check_chain(chain)?;
        if tree.n() != chain.len() {
            return Err(PlanError::LengthMismatch {
                tree: tree.n(),
                chain: chain.len(),
            });
        }
        Ok(Self::build(chain, tree))
    }

    /// A plan made by some other planner: `nodes` lists (node, sends in order).
    /// Nothing but uniqueness of the node entries is checked here; use
    /// [`crate::oracle`] to check delivery.
    ///
    /// # Errors
    /// [`PlanError::DuplicateEntry`] if a node has two entries.
    pub fn from_parts(
        source: usize,
        nodes: Vec<(usize, Vec<PlanSend>)>,
    ) -> Result<Plan, PlanError> {
        let mut index = BTreeMap::new();
        for (i, (node, _)) in nodes.iter().enumerate() {
            if index.insert(*node, i).is_some() {
                return Err(PlanError::DuplicateEntry { node: *node });
            }
        }
        Ok(Plan {
            source,
            nodes,
            index,
        })
    }

    fn build(chain: &[usize], tree: &ChainTree) -> Plan {
        let nodes: Vec<(usize, Vec<PlanSend>)> = chain
            .iter()
            .enumerate()
            .map(|(pos, &node)| {
                let sends = tree
                    .children(pos)
                    .iter()
                    .map(|&c| {
                        let (lo, hi) = tree.range(c);
                        PlanSend {
                            to: chain[c],
                            covers: chain[lo..=hi].to_vec(),
                        }
                    })
                    .collect();
                (node, sends)
            })
            .collect();
        let index = nodes
            .iter()
            .enumerate()
            .map(|(i, (node, _))| (*node, i))
            .collect();
        Plan {
            source: chain[0],
            nodes,
            index,
        }
    }

    /// The source node id.
    pub fn source(&self) -> usize {
        self.source
    }

    /// The sends of `node` in order; empty if it sends nothing or does not
    /// take part.
    pub fn sends(&self, node: usize) -> &[PlanSend] {
        self.index
            .get(&node)
            .map(|&i| self.nodes[i].1.as_slice())
            .unwrap_or(&[])
    }

    /// Whether `node` has an entry in the plan.
    pub fn contains(&self, node: usize) -> bool {
        self.index.contains_key(&node)
    }

    /// Every participating node with its ordered sends (chain order for chain
    /// plans, the given order for [`Plan::from_parts`]).
    pub fn nodes(&self) -> impl Iterator<Item = (usize, &[PlanSend])> + '_ {
        self.nodes.iter().map(|(n, s)| (*n, s.as_slice()))
    }

    /// The number of participating nodes (entries).
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the plan has no entries (only possible via [`Plan::from_parts`]).
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The total number of sends (edges) in the plan.
    pub fn send_count(&self) -> usize {
        self.nodes.iter().map(|(_, s)| s.len()).sum()
    }
}

/// Check that a chain is non-empty and its ids are distinct.
fn check_chain(chain: &[usize]) -> Result<(), PlanError> {
    if chain.is_empty() {
        return Err(PlanError::EmptyChain);
    }
    let mut first: HashMap<usize, usize> = HashMap::with_capacity(chain.len());
    for (pos, &node) in chain.iter().enumerate() {
        if let Some(&f) = first.get(&node) {
            return Err(PlanError::DuplicateNode {
                node,
                first: f,
                second: pos,
            });
        }
        first.insert(node, pos);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chain_errors() {
        assert_eq!(
            Plan::from_chain(&[], Shape::Flat),
            Err(PlanError::EmptyChain)
        );
        assert_eq!(
            Plan::from_chain(&[5, 7, 9, 7], Shape::Flat),
            Err(PlanError::DuplicateNode {
                node: 7,
                first: 1,
                second: 3
            })
        );
        assert!(matches!(
            Plan::from_chain(&[1, 2], Shape::KBinomial { k: 0 }),
            Err(PlanError::ChainTree(_))
        ));
        let t = ChainTree::new(Shape::Flat, 3).unwrap();
        assert_eq!(
            Plan::from_tree(&[1, 2], &t),
            Err(PlanError::LengthMismatch { tree: 3, chain: 2 })
        );
        assert_eq!(
            Plan::from_parts(0, vec![(1, vec![]), (1, vec![])]),
            Err(PlanError::DuplicateEntry { node: 1 })
        );
    }

    #[test]
    fn binomial_over_real_ids() {
        // Positions 0..8 mapped to ids 100..108 in reverse-ish order.
        let chain = [40, 11, 22, 33, 44, 55, 66, 77];
        let p = Plan::from_chain(&chain, Shape::KBinomial { k: 3 }).unwrap();
        assert_eq!(p.source(), 40);
        assert_eq!(p.len(), 8);
        assert_eq!(p.send_count(), 7);
        let s = p.sends(40);
        assert_eq!(s.iter().map(|x| x.to).collect::<Vec<_>>(), vec![44, 22, 11]);
        assert_eq!(s[0].covers, vec![44, 55, 66, 77]);
        assert_eq!(s[1].covers, vec![22, 33]);
        assert_eq!(s[2].covers, vec![11]);
        assert_eq!(p.sends(44)[0].to, 66);
        assert!(p.sends(77).is_empty());
        assert!(p.contains(77));
        assert!(!p.contains(1000));
        assert!(p.sends(1000).is_empty());
        let order: Vec<usize> = p.nodes().map(|(n, _)| n).collect();
        assert_eq!(order, chain.to_vec());
    }

    #[test]
    fn single_node_plan() {
        let p = Plan::from_chain(&[9], Shape::KBinomial { k: 2 }).unwrap();
        assert_eq!(p.source(), 9);
        assert_eq!(p.send_count(), 0);
        assert_eq!(p.len(), 1);
    }
}
