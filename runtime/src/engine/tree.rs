//! A node's children, from the route header it received (or, at the source,
//! from the whole destination set).

use std::collections::HashMap;

use mcast_algorithms::hosts as host_tree;
use mcast_algorithms::trees;
use mcast_algorithms::{split, Shape, Topology};

use super::{Children, EngineError, NiEngine};
use crate::tree_kind::{TopoTree, TreeKind};
use crate::wire::{Member, Route};

/// Chain plans an engine keeps (see `NiEngine::bcast_children`), and list
/// plans (`NiEngine::list_plan`).
const PLANS_KEPT: usize = 256;

/// Longest list whose plan is kept: a plan's size grows with its list, and
/// a long list's message is rarely small enough for planning to show.
const LIST_KEPT: usize = 64;

/// What a list plan is made from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Plan {
    /// The source's destinations, in chain order, without the source.
    Source,
    /// The list route a node received (itself first).
    Received,
}

/// A kept list plan's key: the tree, what the list is, and the list.
pub(super) type ListKey = (TreeKind, Plan, Vec<Member>);

impl NiEngine {
    /// The children of the node at chain position `lo` (responsible for
    /// positions `lo..=hi`) of a chain tree rooted at `root`. Split once per
    /// (shape, root, lo, hi) and kept: a loop of calls asks for the same
    /// few plans every time (at most `PLANS_KEPT`; the table starts over
    /// when full).
    pub(super) fn bcast_children(
        &mut self,
        shape: Shape,
        root: usize,
        lo: usize,
        hi: usize,
    ) -> Result<Children, EngineError> {
        let key = (shape, root as u32, lo as u32, hi as u32);
        if let Some(c) = self.chain_plans.get(&key) {
            return Ok(c.clone());
        }
        let size = self.size;
        let children: Children = split(shape, lo, hi)?
            .into_iter()
            .map(|(a, b)| {
                (
                    (root + a) % size,
                    Route::Range {
                        shape,
                        size: size as u32,
                        lo: a as u32,
                        hi: b as u32,
                    },
                )
            })
            .collect();
        if self.chain_plans.len() >= PLANS_KEPT {
            self.chain_plans.clear();
        }
        self.chain_plans.insert(key, children.clone());
        Ok(children)
    }

    /// The children of this rank in `tree` over `list`: at the source
    /// (`Plan::Source`, `list` its destinations) or at a node that received
    /// `list` as its route. Planned once per (tree, list) and kept, as
    /// [`NiEngine::bcast_children`] keeps chain plans: a loop of calls
    /// plans over the same lists every time, and a host-aware tree's plan
    /// (the host chain, its k-binomial split) cost about 2 µs a call at
    /// the source of a 3 × 2 bcast, on the critical path. The plan is a
    /// function of the tree, the list and facts fixed for the engine's
    /// life (rank, host table, topology). Kept only for lists of at most
    /// `LIST_KEPT` whose ordinals are all 0 (a bcast's): a multicast's
    /// ordinals count the multicasts each destination has had, so its
    /// list is a new one every call.
    pub(super) fn list_plan(
        &mut self,
        tree: TreeKind,
        plan: Plan,
        list: &[Member],
    ) -> Result<Children, EngineError> {
        let keep = list.len() <= LIST_KEPT && list.iter().all(|m| m.ordinal == 0);
        let key = keep.then(|| (tree, plan, list.to_vec()));
        if let Some(c) = key.as_ref().and_then(|k| self.list_plans.get(k)) {
            return Ok(c.clone());
        }
        let children: Children = match plan {
            Plan::Source => {
                let chain = self.source_members(tree, list)?;
                self.list_children(tree, &chain)?.into()
            }
            Plan::Received => self.list_children(tree, list)?.into(),
        };
        if let Some(key) = key {
            if self.list_plans.len() >= PLANS_KEPT {
                self.list_plans.clear();
            }
            self.list_plans.insert(key, children.clone());
        }
        Ok(children)
    }

    /// The children of `members[0]`, responsible for all of `members`.
    pub(super) fn list_children(
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
                            covers: members[a..=b].to_vec(),
                        },
                    )
                })
                .collect()),
            TreeKind::Topo(t) => self.topo_children(t, members),
            TreeKind::Hosts { k } => {
                let hosts = self.hosts()?;
                let d: Vec<usize> = members.iter().map(|m| m.rank as usize).collect();
                let sends = host_tree::split_received(k, &d, host_tree::in_table(hosts))?;
                Ok(list_routes(tree, members, sends))
            }
        }
    }

    fn hosts(&self) -> Result<&[u32], EngineError> {
        self.hosts.as_deref().ok_or_else(|| {
            EngineError::Invalid("host-aware tree but this rank has no host table".into())
        })
    }

    pub(super) fn topology(&self, t: TopoTree) -> Result<&Topology, EngineError> {
        self.topology.as_deref().ok_or_else(|| {
            EngineError::Invalid(format!("{t:?} tree but this rank has no topology"))
        })
    }

    /// The thesis's hop: run the algorithm on the address field D
    /// (`members`, this node first) exactly as received, and send each part
    /// on with the part as its receiver's D.
    pub(super) fn topo_children(
        &self,
        t: TopoTree,
        members: &[Member],
    ) -> Result<Vec<(usize, Route)>, EngineError> {
        let topo = self.topology(t)?;
        let d: Vec<usize> = members.iter().map(|m| m.rank as usize).collect();
        let sends = trees::split_received(topo, t.planner(), &d).map_err(|e| {
            EngineError::Invalid(format!("{t:?} on the received address field: {e}"))
        })?;
        Ok(list_routes(TreeKind::Topo(t), members, sends))
    }

    /// The source's chain for `tree`: for topology-aware trees, the order the
    /// planner puts the destinations in (R-chain, relative chain, WeightedSort).
    pub(super) fn source_members(
        &self,
        tree: TreeKind,
        dests: &[Member],
    ) -> Result<Vec<Member>, EngineError> {
        let me = Member {
            rank: self.rank as u32,
            ordinal: 0,
        };
        match tree {
            TreeKind::Chain(_) => Ok(std::iter::once(me).chain(dests.iter().copied()).collect()),
            TreeKind::Topo(_) | TreeKind::Hosts { .. } => {
                let ranks: Vec<usize> = dests.iter().map(|m| m.rank as usize).collect();
                let chain = match tree {
                    TreeKind::Topo(t) => {
                        trees::source_chain(self.topology(t)?, t.planner(), self.rank, &ranks)
                            .map_err(|e| EngineError::Invalid(format!("{t:?}: {e}")))?
                    }
                    _ => {
                        let hosts = self.hosts()?;
                        host_tree::source_chain(self.rank, &ranks, host_tree::in_table(hosts))
                    }
                };
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
}

/// Each send of a list-route tree (a child and the ranks it covers) as a
/// route, the members keeping their per-destination ordinals.
fn list_routes(
    tree: TreeKind,
    members: &[Member],
    sends: Vec<(usize, Vec<usize>)>,
) -> Vec<(usize, Route)> {
    let ordinal: HashMap<u32, u32> = members.iter().map(|m| (m.rank, m.ordinal)).collect();
    sends
        .into_iter()
        .map(|(to, covers)| {
            let covers = covers
                .into_iter()
                .map(|r| Member {
                    rank: r as u32,
                    ordinal: ordinal.get(&(r as u32)).copied().unwrap_or(0),
                })
                .collect();
            (to, Route::List { tree, covers })
        })
        .collect()
}
